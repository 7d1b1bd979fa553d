/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Fabric Manager collectives client (see fmclient.h): the client
 * object and the jobs/multicast API.
 *
 * A client holds the FM's base URL, the credentials read at creation
 * (fmauth.c; wiped when it is destroyed), a small pool of CURL handles
 * (fmhttp.c) and the cached OAuth access token.  Each API call builds its
 * path and body, sends them through fm_request (which authorises the
 * request and, with OAuth, fetches a new token once on a 401 or 403), and
 * reads the FM's reply.  fmc_internal.h says which file does what.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/hex.h"
#include "fmclient/fmc_internal.h"
#include "vnib/secfile.h"

enum {
    DEFAULT_CONNECT_MS = 2000,  /* connect timeout when 0 is given */
    DEFAULT_TIMEOUT_MS = 10000, /* total per call when 0 is given */
};

#define DEFAULT_MAX_RESPONSE ((size_t)1024 * 1024)

static const char jobs_path[] = "/fabric/collectives/jobs";
/* The multicast collection, which a job's processes call themselves
 * (fmc_multicasts_url).
 */
static const char multicasts_path[] = "/fabric/collectives/multicasts";

/* Decode n bytes of a percent-encoded path component; NULL (EINVAL) when
 * a '%' is not followed by two hex digits or the result holds a NUL.
 */
static char *unescape(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t o = 0;

    if (!out) {
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
        int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
        if (lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            errno = EINVAL;
            return NULL;
        }
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    return out;
}

/* ---- FM requests --------------------------------------------------------- */

/* Send one request to the FM within call: path is already escaped and
 * starts with '/', body is JSON or NULL.  With OAuth, a 401 or 403 makes
 * it fetch a new token and try once more.  Returns 0 with any HTTP status
 * other than a final 401/403 in *statusp and the body, when it is JSON, in
 * *jsonp (else NULL; *emptyp tells whether there was a body at all).
 * Returns -1 on a transport failure or a refusal (EACCES).
 */
static int fm_request(struct fmc *c,
                      const char *method,
                      const char *path,
                      const char *body,
                      struct fmc_call *call,
                      long *statusp,
                      json_t **jsonp,
                      bool *emptyp,
                      vnib_error_t *errp)
{
    char label[FMC_LABEL_MAX];
    struct httpc_reply r = {0};
    char *url = NULL;
    char *auth = NULL;
    unsigned gen = 0;
    json_error_t jerr;
    int rc = -1;

    *jsonp = NULL;
    *emptyp = true;
    snprintf(label, sizeof(label), "FM %s %s", method, path);
    size_t len = strlen(c->url) + strlen(path) + 1;
    if (!(url = malloc(len))) {
        errno = ENOMEM;
        errprintf(errp, "%s: out of memory", label);
        goto done;
    }
    snprintf(url, len, "%s%s", c->url, path);
    for (int attempt = 0;; attempt++) {
        httpc_secret_free(auth);
        httpc_reply_free(&r);
        if (fmauth_header(c, call, attempt ? gen : 0, &auth, &gen, errp) < 0)
            goto done;
        struct fmc_request rq = {
            .label = label,
            .method = method,
            .url = url,
            .body = body,
            .content_type = "application/json",
            .auth = auth,
        };
        if (fmhttp_do(c, &rq, call, statusp, &r, errp) < 0)
            goto done;
        if (c->auth == FMC_AUTH_OAUTH && attempt == 0
            && (*statusp == 401 || *statusp == 403))
            continue;
        break;
    }
    if (r.len) {
        *emptyp = false;
        *jsonp = json_loadb(r.buf, r.len, 0, &jerr);
    }
    if (*statusp == 401 || *statusp == 403) {
        fmhttp_status_error(c, call, FMHTTP_FM, label, *statusp, *jsonp, errp);
        json_decref(*jsonp);
        *jsonp = NULL;
        goto done;
    }
    rc = 0;
done:
    httpc_reply_free(&r);
    httpc_secret_free(auth);
    free(url);
    return rc;
}

/* "/fabric/collectives/jobs/<escaped id>" or NULL (EINVAL, ENOMEM). */
static char *job_path(const char *job_id, vnib_error_t *errp)
{
    char *id;
    char *path;

    if (!job_id || !job_id[0]) {
        errno = EINVAL;
        errprintf(errp, "no FM job id given");
        return NULL;
    }
    if (!(id = httpc_escape(job_id))) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    size_t len = sizeof(jobs_path) + 1 + strlen(id);
    if ((path = malloc(len)))
        snprintf(path, len, "%s/%s", jobs_path, id);
    else
        errprintf(errp, "out of memory");
    free(id);
    return path;
}

/* The sessionToken of a job object, copied into *tokenp. */
static int session_token(const json_t *job,
                         const char *label,
                         long status,
                         bool empty,
                         char **tokenp,
                         vnib_error_t *errp)
{
    const char *t;

    if (!job) {
        errno = EPROTO;
        if (empty)
            return errprintf(
                errp, "%s: HTTP %ld reply is empty", label, status);
        return errprintf(errp, "%s: HTTP %ld reply is not JSON", label, status);
    }
    t = json_string_value(json_object_get(job, "sessionToken"));
    if (!httpc_token_printable(t)) {
        errno = EPROTO;
        return errprintf(errp,
                         "%s: HTTP %ld reply has no valid sessionToken",
                         label,
                         status);
    }
    if (!(*tokenp = strdup(t))) {
        errno = ENOMEM;
        return errprintf(errp, "%s: out of memory", label);
    }
    return 0;
}

/* GET a job's session token (ENOENT on 404). */
static int job_get(struct fmc *c,
                   const char *path,
                   struct fmc_call *call,
                   char **tokenp,
                   vnib_error_t *errp)
{
    char label[FMC_LABEL_MAX];
    json_t *job = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    snprintf(label, sizeof(label), "FM GET %s", path);
    if (fm_request(c, "GET", path, NULL, call, &status, &job, &empty, errp) < 0)
        goto done;
    if (status < 200 || status > 299) {
        fmhttp_status_error(c, call, FMHTTP_FM, label, status, job, errp);
        goto done;
    }
    rc = session_token(job, label, status, empty, tokenp, errp);
done:
    json_decref(job);
    return rc;
}

/* ---- the client object -------------------------------------------------- */

int fmc_url_check(const char *what, const char *url, vnib_error_t *errp)
{
    enum httpc_url_fault fault = httpc_url_check(url, NULL, 0);

    if (fault == HTTPC_URL_OK)
        return 0;
    errno = fault == HTTPC_URL_NOMEM ? ENOMEM : EINVAL;
    switch (fault) {
        case HTTPC_URL_EMPTY:
            return errprintf(errp, "no %s given", what);
        case HTTPC_URL_CHARS:
            return errprintf(errp,
                             "the %s contains a space, control or non-ASCII "
                             "character",
                             what);
        case HTTPC_URL_NOMEM:
            return errprintf(errp, "out of memory");
        case HTTPC_URL_USER:
            return errprintf(errp,
                             "the %s must not contain user information (use "
                             "the credential files)",
                             what);
        case HTTPC_URL_NOHOST:
            return errprintf(errp, "the %s names no host: '%s'", what, url);
        case HTTPC_URL_QUERY:
            return errprintf(
                errp, "the %s must not have a query or fragment", what);
        case HTTPC_URL_SYNTAX:
        case HTTPC_URL_SCHEME:
        default:
            return errprintf(errp,
                             "the %s is not an http:// or https:// URL: '%s'",
                             what,
                             url);
    }
}

static int tls_setup(struct fmc *c,
                     const struct fmc_config *cfg,
                     vnib_error_t *errp)
{
    bool cert = cfg->cert_file && cfg->cert_file[0];
    bool key = cfg->key_file && cfg->key_file[0];
    char *buf = NULL;
    size_t len = 0;

    if (cfg->ca_file && cfg->ca_file[0]) {
        if (secfile_read_public(cfg->ca_file, &buf, &len, errp) < 0)
            return -1;
        secfile_free(buf, len);
        if (!(c->ca_file = strdup(cfg->ca_file))) {
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
    }
    if (cert != key) {
        errno = EINVAL;
        return errprintf(errp,
                         "FM mTLS needs both a client certificate and its "
                         "key");
    }
    if (cert
        && (secfile_read_public(cfg->cert_file, &c->cert, &c->cert_len, errp)
                < 0
            || secfile_read_owned(cfg->key_file, &c->key, &c->key_len, errp)
                   < 0))
        return -1;
    return 0;
}

/* base64("a:b"), or NULL (ENOMEM). */

struct fmc *fmc_create(const struct fmc_config *cfg, vnib_error_t *errp)
{
    struct fmc *c = NULL;
    pthread_condattr_t attr;

    if (!cfg) {
        errno = EINVAL;
        errprintf(errp, "no FM configuration given");
        return NULL;
    }
    if (fmc_url_check("FM URL", cfg->url, errp) < 0)
        return NULL;
    if (httpc_global_init() < 0) {
        errprintf(errp, "cannot initialise libcurl");
        return NULL;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    c->tls_verify = cfg->tls_verify;
    c->connect_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms
                                                : DEFAULT_CONNECT_MS;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->max_response =
        cfg->max_response > 0 ? cfg->max_response : DEFAULT_MAX_RESPONSE;
    if (!(c->url = strdup(cfg->url))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto error;
    }
    for (size_t n = strlen(c->url); n > 0 && c->url[n - 1] == '/'; n--)
        c->url[n - 1] = '\0';
    if (!cfg->auth || strcmp(cfg->auth, "none") == 0)
        c->auth = FMC_AUTH_NONE;
    else if (strcmp(cfg->auth, "basic") == 0)
        c->auth = FMC_AUTH_BASIC;
    else if (strcmp(cfg->auth, "oauth") == 0)
        c->auth = FMC_AUTH_OAUTH;
    else {
        errno = EINVAL;
        errprintf(errp,
                  "unknown FM auth '%s' (want none, basic or oauth)",
                  cfg->auth);
        goto error;
    }
    if (fmauth_setup(c, cfg, errp) < 0 || tls_setup(c, cfg, errp) < 0)
        goto error;
    if (pthread_mutex_init(&c->scrub_lock, NULL) != 0)
        goto nomem;
    c->scrub_lock_ok = true;
    if (pthread_mutex_init(&c->pool_lock, NULL) != 0)
        goto nomem;
    c->pool_lock_ok = true;
    if (pthread_mutex_init(&c->token_lock, NULL) != 0)
        goto nomem;
    c->token_lock_ok = true;
    /* Deadlines are on the monotonic clock, so is the wait for a handle. */
    if (pthread_condattr_init(&attr) != 0)
        goto nomem;
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&c->pool_cond, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        goto nomem;
    c->pool_cond_ok = true;
    return c;
nomem:
    errno = ENOMEM;
    errprintf(errp, "cannot initialise the FM client's locks");
error:
    fmc_destroy(c);
    return NULL;
}

void fmc_destroy(struct fmc *c)
{
    int saved_errno = errno;

    if (c) {
        /* Handles first: they refer to the certificate and key buffers. */
        fmhttp_pool_free(c);
        if (c->pool_cond_ok)
            pthread_cond_destroy(&c->pool_cond);
        if (c->pool_lock_ok)
            pthread_mutex_destroy(&c->pool_lock);
        if (c->token_lock_ok)
            pthread_mutex_destroy(&c->token_lock);
        if (c->scrub_lock_ok)
            pthread_mutex_destroy(&c->scrub_lock);
        httpc_secret_free(c->token);
        httpc_secret_free(c->old_token);
        for (int i = 0; i < FMC_SCRUB_FORMS; i++)
            httpc_secret_free(c->forms[i]);
        secfile_free(c->key, c->key_len);
        secfile_free(c->cert, c->cert_len);
        free(c->ca_file);
        secfile_free(c->secret, c->secret_len);
        free(c->client_id);
        free(c->token_url);
        secfile_free(c->password, c->password_len);
        httpc_secret_free(c->basic_header);
        free(c->url);
        free(c);
    }
    errno = saved_errno;
}

/* errp's message, or NULL. */
static vnib_error_t *msg_of(struct fmc_error *errp)
{
    return errp ? &errp->msg : NULL;
}

/* fmc_job_get within call. */
static int job_get_call(struct fmc *c,
                        const char *fm_job_id,
                        struct fmc_call *call,
                        char **tokenp,
                        vnib_error_t *errp)
{
    char *path = NULL;
    int rc = -1;

    if (!c || !tokenp) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments");
    }
    *tokenp = NULL;
    if (!(path = job_path(fm_job_id, errp)))
        goto done;
    rc = job_get(c, path, call, tokenp, errp);
done:
    free(path);
    return rc;
}

int fmc_job_get(struct fmc *c,
                const char *fm_job_id,
                char **tokenp,
                struct fmc_error *errp)
{
    struct fmc_call call = fmhttp_call_begin(c ? c->timeout_ms : 0);

    return fmhttp_call_end(
        &call, job_get_call(c, fm_job_id, &call, tokenp, msg_of(errp)), errp);
}

int fmc_job_create(struct fmc *c,
                   const char *fm_job_id,
                   int mcast_limit,
                   long timeout_ms,
                   char **tokenp,
                   struct fmc_error *fe)
{
    struct fmc_call call =
        fmhttp_call_begin(timeout_ms != 0 || !c ? timeout_ms : c->timeout_ms);
    vnib_error_t *errp = msg_of(fe);
    char label[FMC_LABEL_MAX];
    vnib_error_t e = {0};
    char *path = NULL;
    char *payload = NULL;
    json_t *body = NULL;
    json_t *reply = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    if (!c || !tokenp || call.timeout_ms <= 0) {
        errno = EINVAL;
        errprintf(errp, "invalid arguments");
        goto done;
    }
    *tokenp = NULL;
    if (mcast_limit < 1) {
        errno = EINVAL;
        errprintf(errp, "mcastLimit %d is not positive", mcast_limit);
        goto done;
    }
    if (!(path = job_path(fm_job_id, errp)))
        goto done;
    if (!(body = json_pack(
              "{s:s, s:i}", "jobID", fm_job_id, "mcastLimit", mcast_limit))
        || !(payload = json_dumps(body, JSON_COMPACT))) {
        errno = EINVAL;
        errprintf(errp, "FM job id '%s' is not valid UTF-8", fm_job_id);
        goto done;
    }
    snprintf(label, sizeof(label), "FM POST %s", jobs_path);
    if (fm_request(
            c, "POST", jobs_path, payload, &call, &status, &reply, &empty, errp)
        < 0)
        goto done;
    if (status >= 200 && status <= 299) {
        rc = session_token(reply, label, status, empty, tokenp, errp);
        goto done;
    }
    if (status != 409) {
        fmhttp_status_error(c, &call, FMHTTP_FM, label, status, reply, errp);
        goto done;
    }
    /* It exists (a retry after a reply that was lost, a broker restart,
     * or a create that raced another): its token is the answer, and no
     * second FM object was made.
     */
    if (job_get(c, path, &call, tokenp, &e) == 0) {
        rc = 0;
        goto done;
    }
    if (errno == ENOENT) {
        /* The FM contradicts itself: its 409 is the refusal. */
        call.fault = FMC_FAULT_REQUEST;
        call.status = 409;
        errno = EIO;
        errprintf(
            errp, "%s: HTTP 409, yet the job is not found: %s", label, e.text);
    } else
        errprintf(errp, "%s", e.text);
done:
    json_decref(reply);
    free(payload);
    json_decref(body);
    free(path);
    return fmhttp_call_end(&call, rc, fe);
}

/* PATCH or DELETE where 2xx and 404 both mean done. */
static int job_change(struct fmc *c,
                      const char *method,
                      const char *path,
                      const char *payload,
                      struct fmc_call *call,
                      vnib_error_t *errp)
{
    char label[FMC_LABEL_MAX];
    json_t *reply = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    snprintf(label, sizeof(label), "FM %s %s", method, path);
    if (fm_request(
            c, method, path, payload, call, &status, &reply, &empty, errp)
        < 0)
        goto done;
    if ((status < 200 || status > 299) && status != 404) {
        fmhttp_status_error(c, call, FMHTTP_FM, label, status, reply, errp);
        goto done;
    }
    rc = 0;
done:
    json_decref(reply);
    return rc;
}

/* fmc_job_release_step within call. */
static int release_step_call(struct fmc *c,
                             const char *fm_job_id,
                             const char *step_id,
                             struct fmc_call *call,
                             vnib_error_t *errp)
{
    char *path = NULL;
    char *payload = NULL;
    json_t *body = NULL;
    int rc = -1;

    if (!c || !step_id || !step_id[0]) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments: no job step id given");
    }
    if (!(path = job_path(fm_job_id, errp)))
        goto done;
    if (!(body = json_pack("{s:{s:n}}", "jobSteps", step_id))
        || !(payload = json_dumps(body, JSON_COMPACT))) {
        errno = EINVAL;
        errprintf(errp, "job step id '%s' is not valid UTF-8", step_id);
        goto done;
    }
    rc = job_change(c, "PATCH", path, payload, call, errp);
done:
    free(payload);
    json_decref(body);
    free(path);
    return rc;
}

int fmc_job_release_step(struct fmc *c,
                         const char *fm_job_id,
                         const char *step_id,
                         struct fmc_error *errp)
{
    struct fmc_call call = fmhttp_call_begin(c ? c->timeout_ms : 0);

    return fmhttp_call_end(
        &call,
        release_step_call(c, fm_job_id, step_id, &call, msg_of(errp)),
        errp);
}

/* fmc_job_delete within call. */
static int delete_call(struct fmc *c,
                       const char *fm_job_id,
                       struct fmc_call *call,
                       vnib_error_t *errp)
{
    char *path = NULL;
    int rc;

    if (!c) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments");
    }
    if (!(path = job_path(fm_job_id, errp)))
        return -1;
    rc = job_change(c, "DELETE", path, NULL, call, errp);
    free(path);
    return rc;
}

int fmc_job_delete(struct fmc *c, const char *fm_job_id, struct fmc_error *errp)
{
    struct fmc_call call = fmhttp_call_begin(c ? c->timeout_ms : 0);

    return fmhttp_call_end(
        &call, delete_call(c, fm_job_id, &call, msg_of(errp)), errp);
}

/* The job id at the end of a document link, percent-decoded; NULL when
 * it has none or cannot be decoded.
 */
static char *link_id(const char *link)
{
    size_t end = strlen(link);
    size_t start;

    while (end > 0 && link[end - 1] == '/')
        end--;
    start = end;
    while (start > 0 && link[start - 1] != '/')
        start--;
    if (start == end)
        return NULL;
    return unescape(link + start, end - start);
}

/* The ids of our jobs ("<prefix>-...") in a job list reply's
 * documentLinks, into *idsp (fmc_free_ids) and *countp.
 */
static int list_ids(const json_t *reply,
                    const char *prefix,
                    const char *label,
                    char ***idsp,
                    size_t *countp,
                    vnib_error_t *errp)
{
    json_t *links = json_object_get(reply, "documentLinks");
    size_t plen = strlen(prefix);
    char **ids;
    size_t count = 0;

    if (!json_is_array(links)) {
        errno = EPROTO;
        return errprintf(
            errp, "%s: the reply has no documentLinks list", label);
    }
    size_t n = json_array_size(links);
    if (!(ids = calloc(n ? n : 1, sizeof(*ids)))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const char *link = json_string_value(json_array_get(links, i));
        char *id = link ? link_id(link) : NULL;
        /* "<prefix>-" and at least one character: not "<prefix>x-...",
         * not a prefix that merely starts like ours.
         */
        if (!id || strncmp(id, prefix, plen) != 0 || id[plen] != '-'
            || id[plen + 1] == '\0') {
            free(id);
            continue;
        }
        ids[count++] = id;
    }
    *idsp = ids;
    *countp = count;
    return 0;
}

/* fmc_job_list within call. */
static int list_call(struct fmc *c,
                     const char *prefix,
                     struct fmc_call *call,
                     char ***idsp,
                     size_t *countp,
                     vnib_error_t *errp)
{
    char label[FMC_LABEL_MAX];
    char path[sizeof(jobs_path) + 1];
    json_t *reply = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    if (!c || !prefix || !prefix[0] || !idsp || !countp) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments: no job id prefix given");
    }
    *idsp = NULL;
    *countp = 0;
    snprintf(path, sizeof(path), "%s/", jobs_path);
    snprintf(label, sizeof(label), "FM GET %s", path);
    if (fm_request(c, "GET", path, NULL, call, &status, &reply, &empty, errp)
        < 0)
        goto done;
    if (status < 200 || status > 299) {
        fmhttp_status_error(c, call, FMHTTP_FM, label, status, reply, errp);
        goto done;
    }
    if (!reply) {
        errno = EPROTO;
        errprintf(errp,
                  "%s: HTTP %ld reply is %s",
                  label,
                  status,
                  empty ? "empty" : "not JSON");
        goto done;
    }
    rc = list_ids(reply, prefix, label, idsp, countp, errp);
done:
    json_decref(reply);
    return rc;
}

int fmc_job_list(struct fmc *c,
                 const char *prefix,
                 char ***idsp,
                 size_t *countp,
                 struct fmc_error *errp)
{
    struct fmc_call call = fmhttp_call_begin(c ? c->timeout_ms : 0);

    return fmhttp_call_end(
        &call, list_call(c, prefix, &call, idsp, countp, msg_of(errp)), errp);
}

void fmc_free_ids(char **ids, size_t count)
{
    int saved_errno = errno;

    if (ids) {
        for (size_t i = 0; i < count; i++)
            free(ids[i]);
        free(ids);
    }
    errno = saved_errno;
}

void fmc_free_secret(char *token)
{
    int saved_errno = errno;

    httpc_secret_free(token);
    errno = saved_errno;
}

int fmc_addrs_per_job(int total_addrs,
                      int system_size,
                      int min_job_size,
                      int jobs_per_node)
{
    int jobs;
    int per_job;

    if (total_addrs < 1)
        return 1;
    /* How many of the smallest collective jobs fit at once. */
    jobs = min_job_size > 0 ? system_size / min_job_size : system_size;
    if (jobs < 1)
        jobs = 1;
    per_job = total_addrs / jobs;
    if (jobs_per_node > 1)
        per_job /= jobs_per_node;
    return per_job > 1 ? per_job : 1;
}

void fmc_multicasts_url(const char *base, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", base, multicasts_path);
}
