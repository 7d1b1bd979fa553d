/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The vnibroker REST client (see client.h).
 *
 * Each client owns one CURL easy handle that httpc (httpc.h) sets up once
 * at creation with the safety options (verified TLS, http/https only, no
 * redirects, no environment proxy, no signals), and the header lists.  A
 * request only sets its URL, method and body, so libcurl keeps the connection
 * alive between requests.  The header lists are the only place the token lives;
 * they are wiped before they are freed.
 *
 * Replies are collected by httpc's write callback, capped and wiped before
 * they are freed, then parsed with jansson: the broker always answers JSON, so
 * anything else is a protocol error rather than a status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "vnib/client.h"
#include "vnib/httpc.h"
#include "vnib/token.h"

struct vnib_client {
    CURL *curl;                   /* reused for every request */
    char *url;                    /* base URL without trailing '/' */
    struct curl_slist *hdr_plain; /* Accept, Expect, Authorization */
    struct curl_slist *hdr_json;  /* the same plus Content-Type */
    long timeout_ms;              /* total per request */
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's detail of a failure */
};

int vnib_client_global_init(void)
{
    return httpc_global_init();
}

/* Build both header lists; the token is never copied anywhere else. */
static int headers_build(struct vnib_client *c,
                         const char *token,
                         vnib_error_t *errp)
{
    char *auth = NULL;
    size_t authlen = 0;
    int rc = -1;

    if (token) {
        authlen = strlen("Authorization: Bearer ") + strlen(token) + 1;
        if (!(auth = malloc(authlen))) {
            errprintf(errp, "out of memory");
            goto done;
        }
        snprintf(auth, authlen, "Authorization: Bearer %s", token);
    }
    if (httpc_headers_json(&c->hdr_plain, NULL, auth) < 0
        || httpc_headers_json(&c->hdr_json, "application/json", auth) < 0) {
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 0;
done:
    if (auth) {
        vnib_memburn(auth, authlen);
        free(auth);
    }
    return rc;
}

/* Accept http(s)://host[:port][/prefix] and nothing that could carry a
 * secret or change the request (user information, query, fragment).
 */
static int url_check(const char *url, vnib_error_t *errp)
{
    char scheme[32] = "";
    enum httpc_url_fault fault = httpc_url_check(url, scheme, sizeof(scheme));

    if (fault == HTTPC_URL_OK)
        return 0;
    errno = fault == HTTPC_URL_NOMEM ? ENOMEM : EINVAL;
    switch (fault) {
        case HTTPC_URL_EMPTY:
            return errprintf(errp, "no broker URL given");
        case HTTPC_URL_CHARS:
            return errprintf(errp,
                             "broker URL contains a space, control or "
                             "non-ASCII character");
        case HTTPC_URL_NOMEM:
            return errprintf(errp, "out of memory");
        case HTTPC_URL_SCHEME:
            return errprintf(errp,
                             "'%s': unsupported scheme '%s' (want http or "
                             "https)",
                             url,
                             scheme);
        case HTTPC_URL_USER:
            return errprintf(errp,
                             "the broker URL must not contain user "
                             "information (pass the token in a file)");
        case HTTPC_URL_NOHOST:
            return errprintf(errp, "'%s': the broker URL names no host", url);
        case HTTPC_URL_QUERY:
            return errprintf(
                errp, "'%s': the broker URL must not have a query", url);
        case HTTPC_URL_SYNTAX:
        default:
            return errprintf(errp,
                             "'%s' is not a valid broker URL (want "
                             "http://HOST:PORT or https://HOST:PORT)",
                             url);
    }
}

struct vnib_client *vnib_client_create(const char *url,
                                       const char *token,
                                       vnib_error_t *errp)
{
    struct vnib_client *c = NULL;

    if (url_check(url, errp) < 0)
        return NULL;
    if (token
        && (!httpc_token_printable(token) || strlen(token) > TOKEN_MAX_LEN)) {
        errno = EINVAL;
        errprintf(errp,
                  "the token is empty, too long, or contains spaces or "
                  "control characters");
        return NULL;
    }
    if (httpc_global_init() < 0) {
        errprintf(errp, "cannot initialise libcurl");
        return NULL;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    c->timeout_ms = VNIB_CLIENT_TIMEOUT_MS;
    if (!(c->url = strdup(url))) {
        errprintf(errp, "out of memory");
        goto error;
    }
    for (size_t n = strlen(c->url); n > 0 && c->url[n - 1] == '/'; n--)
        c->url[n - 1] = '\0';
    if (headers_build(c, token, errp) < 0)
        goto error;
    /* No struct httpc_tls: the peer is always verified. */
    if (!(c->curl = httpc_handle_new("vnib-client/1", NULL, c->errbuf))) {
        errprintf(errp, "cannot set up a libcurl handle");
        goto error;
    }
    return c;
error:
    vnib_client_destroy(c);
    return NULL;
}

void vnib_client_destroy(struct vnib_client *c)
{
    int saved_errno = errno;
    if (c) {
        if (c->curl)
            curl_easy_cleanup(c->curl);
        httpc_headers_free(c->hdr_plain);
        httpc_headers_free(c->hdr_json);
        free(c->url);
        free(c);
    }
    errno = saved_errno;
}

int vnib_client_set_cacert(struct vnib_client *c, const char *path)
{
    if (!c || !path) {
        errno = EINVAL;
        return -1;
    }
    /* libcurl copies the string. */
    if (curl_easy_setopt(c->curl, CURLOPT_CAINFO, path) != CURLE_OK) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

long vnib_client_deadline_ms(long timeout_ms)
{
    long margin = timeout_ms / 4;

    if (margin > VNIB_DEADLINE_MARGIN_MS)
        margin = VNIB_DEADLINE_MARGIN_MS;
    long ms = timeout_ms - margin;
    if (ms < 1)
        ms = 1;
    return ms > VNIB_DEADLINE_MAX_MS ? VNIB_DEADLINE_MAX_MS : ms;
}

/* A copy of base with the deadline header for timeout_ms, or NULL when
 * memory is short.  Freed (and wiped: it holds the token) with
 * httpc_headers_free().
 */
static struct curl_slist *headers_with_deadline(const struct curl_slist *base,
                                                long timeout_ms)
{
    struct curl_slist *list = NULL;
    char line[64];

    snprintf(line,
             sizeof(line),
             "%s: %ld",
             VNIB_DEADLINE_HEADER,
             vnib_client_deadline_ms(timeout_ms));
    if (httpc_headers_add(&list, line) < 0)
        goto nomem;
    for (const struct curl_slist *l = base; l; l = l->next)
        if (httpc_headers_add(&list, l->data) < 0)
            goto nomem;
    return list;
nomem:
    httpc_headers_free(list);
    return NULL;
}

int vnib_client_set_timeout_ms(struct vnib_client *c, long ms)
{
    if (!c || ms <= 0) {
        errno = EINVAL;
        return -1;
    }
    c->timeout_ms = ms;
    return 0;
}

const char *vnib_client_url(const struct vnib_client *c)
{
    return c->url;
}

char *vnib_client_escape(const char *s)
{
    return httpc_escape(s);
}

/* Map a transfer failure to errno and a message naming the broker. */
static int transport_error(struct vnib_client *c,
                           CURLcode res,
                           const struct httpc_reply *r,
                           vnib_error_t *errp)
{
    const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(res);

    switch (httpc_fault_of(res, r)) {
        case HTTPC_TOO_LARGE:
            errno = EPROTO;
            return errprintf(errp,
                             "%s: reply larger than %u MiB",
                             c->url,
                             VNIB_CLIENT_MAX_REPLY / (1024 * 1024));
        case HTTPC_NOMEM:
            errno = ENOMEM;
            return errprintf(errp, "%s: out of memory", c->url);
        case HTTPC_UNREACHABLE:
            errno = ECONNREFUSED;
            return errprintf(
                errp, "cannot reach the broker at %s: %s", c->url, detail);
        case HTTPC_TIMEOUT:
            errno = ETIMEDOUT;
            return errprintf(errp,
                             "broker at %s did not answer in time: %s",
                             c->url,
                             detail);
        default:
            errno = EIO;
            return errprintf(errp, "broker at %s: %s", c->url, detail);
    }
}

/* "<code>: <message>" from an error body, or a generic text. */
static void error_from_reply(const json_t *reply,
                             long status,
                             vnib_error_t *errp)
{
    json_t *err = json_object_get(reply, "error");
    const char *code = json_string_value(json_object_get(err, "code"));
    const char *message = json_string_value(json_object_get(err, "message"));

    if (code && message)
        errprintf(errp, "%s: %s", code, message);
    else if (code)
        errprintf(errp, "%s: HTTP %ld", code, status);
    else
        errprintf(
            errp, "http_%ld: the broker's reply has no error code", status);
}

static bool method_valid(const char *method)
{
    return strcmp(method, "GET") == 0 || strcmp(method, "POST") == 0
           || strcmp(method, "PUT") == 0 || strcmp(method, "DELETE") == 0;
}

static bool path_valid(const char *path)
{
    if (path[0] != '/')
        return false;
    for (const char *p = path; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '#')
            return false;
    }
    return true;
}

int vnib_client_request(struct vnib_client *c,
                        const char *method,
                        const char *path,
                        json_t *body,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    struct httpc_reply r = {.max = VNIB_CLIENT_MAX_REPLY};
    char *url = NULL;
    char *payload = NULL;
    json_t *reply = NULL;
    struct curl_slist *hdrs = NULL;
    json_error_t jerr;
    long status = 0;
    CURLcode res;
    int saved_errno;
    int rc = -1;

    if (replyp)
        *replyp = NULL;
    if (!c || !method || !path || !method_valid(method) || !path_valid(path)) {
        errno = EINVAL;
        errprintf(errp, "invalid request method or path");
        goto done;
    }
    size_t len = strlen(c->url) + strlen(path) + 1;
    if (!(url = malloc(len))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(url, len, "%s%s", c->url, path);
    if (body && !(payload = json_dumps(body, JSON_COMPACT))) {
        errno = EINVAL;
        errprintf(errp, "%s %s: cannot encode the request body", method, path);
        goto done;
    }
    c->errbuf[0] = '\0';
    if (!(hdrs = headers_with_deadline(payload ? c->hdr_json : c->hdr_plain,
                                       c->timeout_ms))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    struct httpc_request rq = {.method = method, .url = url, .body = payload};
    long connect_ms = c->timeout_ms < VNIB_CLIENT_CONNECT_TIMEOUT_MS
                          ? c->timeout_ms
                          : VNIB_CLIENT_CONNECT_TIMEOUT_MS;
    res =
        httpc_request_setup(c->curl, &rq, hdrs, c->timeout_ms, connect_ms, &r);
    if (res != CURLE_OK) {
        errno = EIO;
        errprintf(errp, "%s: %s", c->url, curl_easy_strerror(res));
        goto done;
    }
    if ((res = curl_easy_perform(c->curl)) != CURLE_OK) {
        transport_error(c, res, &r, errp);
        goto done;
    }
    if (curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK
        || status < 100) {
        errno = EPROTO;
        errprintf(errp, "%s: the reply has no HTTP status", c->url);
        goto done;
    }
    if (!(reply = json_loadb(r.buf ? r.buf : "", r.len, 0, &jerr))) {
        errno = EPROTO;
        errprintf(errp,
                  "%s %s: HTTP %ld reply is not JSON (%s)",
                  method,
                  url,
                  status,
                  r.len ? jerr.text : "empty body");
        goto done;
    }
    if (status >= 400)
        error_from_reply(reply, status, errp);
    if (replyp) {
        *replyp = reply;
        reply = NULL;
    }
    rc = (int)status;
done:
    saved_errno = errno;
    if (c && c->curl)
        httpc_request_reset(c->curl);
    json_decref(reply);
    free(payload);
    free(url);
    httpc_headers_free(hdrs);
    httpc_reply_free(&r);
    errno = saved_errno;
    return rc;
}

int vnib_client_reserve(struct vnib_client *c,
                        const struct vnib_reserve *r,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    json_t *body = NULL;
    int rc = -1;

    if (replyp)
        *replyp = NULL;
    if (!r || !r->job_id || !r->user || !r->nodes) {
        errno = EINVAL;
        return errprintf(errp, "reserve: job id, user and nodes are needed");
    }
    if (!(body = json_pack("{s:s, s:I, s:s, s:s}",
                           "job_id",
                           r->job_id,
                           "uid",
                           (json_int_t)r->uid,
                           "user",
                           r->user,
                           "nodes",
                           r->nodes))) {
        errno = EINVAL;
        return errprintf(errp, "reserve: arguments are not valid UTF-8");
    }
    if ((r->vni_count >= 0
         && json_object_set_new(body, "vni_count", json_integer(r->vni_count))
                < 0)
        || (r->hwcoll
            && json_object_set_new(body, "hwcoll", json_string(r->hwcoll)) < 0)
        || (r->lease && json_object_set_new(body, "lease", json_true()) < 0)) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = vnib_client_request(c, "POST", "/v1/reservations", body, replyp, errp);
done:
    json_decref(body);
    return rc;
}

/* "PREFIX" + escaped(a) [+ "MIDDLE" + escaped(b)] [+ "SUFFIX"]. */
static char *path_build(const char *prefix,
                        const char *a,
                        const char *middle,
                        const char *b,
                        const char *suffix)
{
    char *ea = NULL;
    char *eb = NULL;
    char *path = NULL;

    if (!(ea = vnib_client_escape(a)) || (b && !(eb = vnib_client_escape(b))))
        goto done;
    size_t len = strlen(prefix) + strlen(ea) + (b ? strlen(middle) : 0)
                 + (eb ? strlen(eb) : 0) + strlen(suffix) + 1;
    if (!(path = malloc(len)))
        goto done;
    snprintf(path,
             len,
             "%s%s%s%s%s",
             prefix,
             ea,
             b ? middle : "",
             eb ? eb : "",
             suffix);
done:
    free(eb);
    free(ea);
    return path;
}

/* "/v1/reservations/JOB/steps/STEP" [+ "/nodes/NODE"] + suffix. */
static char *step_path(const char *job_id,
                       const char *step_id,
                       const char *node,
                       const char *suffix)
{
    char *head = NULL;
    char *path = NULL;

    if (!(head =
              path_build("/v1/reservations/", job_id, "/steps/", step_id, "")))
        return NULL;
    path = path_build(head, "", "/nodes/", node, suffix);
    free(head);
    return path;
}

/* Send a request to path with body (NULL: none); this frees both (path
 * NULL: it could not be built, errno says why).
 */
static int request_path(struct vnib_client *c,
                        const char *method,
                        char *path,
                        json_t *body,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    int rc;

    if (replyp)
        *replyp = NULL;
    if (!path)
        rc = errprintf(errp, "%s", strerror(errno));
    else
        rc = vnib_client_request(c, method, path, body, replyp, errp);
    free(path);
    json_decref(body);
    return rc;
}

int vnib_client_get_reservation(struct vnib_client *c,
                                const char *job_id,
                                json_t **replyp,
                                vnib_error_t *errp)
{
    return request_path(c,
                        "GET",
                        path_build("/v1/reservations/", job_id, NULL, NULL, ""),
                        NULL,
                        replyp,
                        errp);
}

int vnib_client_release(struct vnib_client *c,
                        const char *job_id,
                        long long reservation_id,
                        bool force,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    char query[64] = "";

    if (reservation_id > 0)
        snprintf(query,
                 sizeof(query),
                 "?reservation_id=%lld%s",
                 reservation_id,
                 force ? "&force=true" : "");
    else if (force)
        snprintf(query, sizeof(query), "?force=true");
    return request_path(
        c,
        "DELETE",
        path_build("/v1/reservations/", job_id, NULL, NULL, query),
        NULL,
        replyp,
        errp);
}

int vnib_client_report(struct vnib_client *c,
                       const struct vnib_report *r,
                       json_t **replyp,
                       vnib_error_t *errp)
{
    json_t *body = NULL;
    char *path = NULL;

    if (replyp)
        *replyp = NULL;
    if (!r || !r->node || !r->cxi) {
        errno = EINVAL;
        return errprintf(errp, "report: node and cxi state are needed");
    }
    path = r->step_id
               ? step_path(r->job_id, r->step_id, r->node, "")
               : path_build(
                   "/v1/reservations/", r->job_id, "/nodes/", r->node, "");
    if (!path)
        return errprintf(errp, "%s", strerror(errno));
    if (!(body = json_pack("{s:s}", "cxi", r->cxi))
        || (r->services && json_object_set(body, "services", r->services) < 0)
        || (r->reservation > 0
            && json_object_set_new(
                   body, "reservation_id", json_integer(r->reservation))
                   < 0)) {
        errno = EINVAL;
        errprintf(errp, "report: invalid cxi state or services");
        goto fail;
    }
    if (r->message) {
        json_t *m = json_string(r->message);
        if (!m || json_object_set_new(body, "message", m) < 0) {
            errno = EINVAL;
            errprintf(errp, "report: the message is not valid UTF-8");
            goto fail;
        }
    }
    return request_path(c, "PUT", path, body, replyp, errp);
fail:
    json_decref(body);
    free(path);
    return -1;
}

int vnib_client_step_reserve(struct vnib_client *c,
                             const struct vnib_step_reserve *r,
                             json_t **replyp,
                             vnib_error_t *errp)
{
    json_t *body = NULL;

    if (replyp)
        *replyp = NULL;
    if (!r || !r->job_id || !r->step_id || !r->nodes) {
        errno = EINVAL;
        return errprintf(errp,
                         "step reserve: job id, step id and nodes are needed");
    }
    if (!(body = json_pack("{s:s}", "nodes", r->nodes))) {
        errno = EINVAL;
        return errprintf(errp, "step reserve: nodes are not valid UTF-8");
    }
    if ((r->vni_count >= 0
         && json_object_set_new(body, "vni_count", json_integer(r->vni_count))
                < 0)
        || (r->lease && json_object_set_new(body, "lease", json_true()) < 0)) {
        json_decref(body);
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return request_path(c,
                        "PUT",
                        step_path(r->job_id, r->step_id, NULL, ""),
                        body,
                        replyp,
                        errp);
}

int vnib_client_get_step(struct vnib_client *c,
                         const char *job_id,
                         const char *step_id,
                         json_t **replyp,
                         vnib_error_t *errp)
{
    return request_path(
        c, "GET", step_path(job_id, step_id, NULL, ""), NULL, replyp, errp);
}

int vnib_client_step_release(struct vnib_client *c,
                             const char *job_id,
                             const char *step_id,
                             bool force,
                             json_t **replyp,
                             vnib_error_t *errp)
{
    return request_path(
        c,
        "DELETE",
        step_path(job_id, step_id, NULL, force ? "?force=true" : ""),
        NULL,
        replyp,
        errp);
}
