/* The vnibroker REST client (see client.h).
 *
 * Each client owns one CURL easy handle configured once at creation with
 * the safety options (verified TLS, http/https only, no redirects, no
 * environment proxy, no signals) and the header lists.  A request only
 * sets its URL, method and body, so libcurl keeps the connection alive
 * between requests.  The header lists are the only place the token lives;
 * they are wiped before they are freed.
 *
 * Replies are collected in a growing buffer capped in the write callback,
 * then parsed with jansson: the broker always answers JSON, so anything
 * else is a protocol error rather than a status.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "vnib/client.h"
#include "vnib/token.h"

struct vnib_client {
    CURL *curl;                   /* reused for every request */
    char *url;                    /* base URL without trailing '/' */
    struct curl_slist *hdr_plain; /* Accept, Expect, Authorization */
    struct curl_slist *hdr_json;  /* the same plus Content-Type */
    long timeout_ms;              /* total per request */
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's detail of a failure */
};

/* A reply body being received. */
struct reply {
    char *buf;
    size_t len;
    size_t cap;
    bool too_large; /* the cap was hit: the transfer was aborted */
    bool nomem;     /* growing the buffer failed */
};

/* libcurl must be initialised once per process, before any handle.  These
 * two are the module's only process-wide state, written exactly once under
 * pthread_once and read-only afterwards.
 */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int vnib_client_global_init(void)
{
    if (pthread_once(&global_once, global_init_once) != 0
        || global_rc != CURLE_OK) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* Wipe the strings of a header list (one holds the token), then free it. */
static void headers_free(struct curl_slist *list)
{
    for (struct curl_slist *l = list; l; l = l->next)
        vnib_memburn(l->data, strlen(l->data));
    curl_slist_free_all(list);
}

/* Append to *listp; on failure the list is left as it was. */
static int headers_add(struct curl_slist **listp, const char *line)
{
    struct curl_slist *l = curl_slist_append(*listp, line);
    if (!l) {
        errno = ENOMEM;
        return -1;
    }
    *listp = l;
    return 0;
}

/* True when the token can be sent in a header as is. */
static bool token_printable(const char *token)
{
    if (!token[0])
        return false;
    for (const char *p = token; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f)
            return false;
    }
    return true;
}

/* Build both header lists; the token is never copied anywhere else. */
static int headers_build(struct vnib_client *c,
                         const char *token,
                         vnib_error_t *errp)
{
    static const char *const common[] = {"Accept: application/json", "Expect:"};
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
    for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++) {
        if (headers_add(&c->hdr_plain, common[i]) < 0
            || headers_add(&c->hdr_json, common[i]) < 0) {
            errprintf(errp, "out of memory");
            goto done;
        }
    }
    if ((auth && headers_add(&c->hdr_plain, auth) < 0)
        || (auth && headers_add(&c->hdr_json, auth) < 0)
        || headers_add(&c->hdr_json, "Content-Type: application/json") < 0) {
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
    CURLU *u = NULL;
    char *scheme = NULL;
    char *host = NULL;
    char *part = NULL;
    int rc = -1;

    errno = EINVAL;
    if (!url || !url[0])
        return errprintf(errp, "no broker URL given");
    /* errno is set to EINVAL at done: for every refusal below. */
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return errprintf(errp,
                             "broker URL contains a space, control or "
                             "non-ASCII character");
    }
    if (!(u = curl_url())) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK
        || curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        errprintf(errp,
                  "'%s' is not a valid broker URL (want http://HOST:PORT "
                  "or https://HOST:PORT)",
                  url);
        goto done;
    }
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        errprintf(errp,
                  "'%s': unsupported scheme '%s' (want http or https)",
                  url,
                  scheme);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
        errprintf(errp, "'%s': the broker URL names no host", url);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK) {
        errprintf(errp,
                  "the broker URL must not contain user information "
                  "(pass the token in a file)");
        goto done;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK
        || curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK) {
        errprintf(errp, "'%s': the broker URL must not have a query", url);
        goto done;
    }
    rc = 0;
done:
    if (rc < 0)
        errno = EINVAL;
    curl_free(part);
    curl_free(host);
    curl_free(scheme);
    curl_url_cleanup(u);
    return rc;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct reply *r = arg;
    size_t n = size * nmemb;

    if (n > VNIB_CLIENT_MAX_REPLY - r->len) {
        r->too_large = true;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *buf = realloc(r->buf, cap);
        if (!buf) {
            r->nomem = true;
            return 0;
        }
        r->buf = buf;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, ptr, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return n;
}

/* Options of the handle that never change. */
static int handle_setup(struct vnib_client *c)
{
    CURL *h = c->curl;
    long connect_ms = c->timeout_ms < VNIB_CLIENT_CONNECT_TIMEOUT_MS
                          ? c->timeout_ms
                          : VNIB_CLIENT_CONNECT_TIMEOUT_MS;

    if (curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf) != CURLE_OK
#if LIBCURL_VERSION_NUM >= 0x075500
        || curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
               != CURLE_OK
#else
        || curl_easy_setopt(
               h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS))
               != CURLE_OK
        || curl_easy_setopt(h,
                            CURLOPT_REDIR_PROTOCOLS,
                            (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS))
               != CURLE_OK
#endif
        || curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2)
               != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_PROXY, "") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED)
               != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_USERAGENT, "vnib-client/1") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms)
               != CURLE_OK) {
        errno = EIO;
        return -1;
    }
    return 0;
}

struct vnib_client *vnib_client_create(const char *url,
                                       const char *token,
                                       vnib_error_t *errp)
{
    struct vnib_client *c = NULL;

    if (url_check(url, errp) < 0)
        return NULL;
    if (token && (!token_printable(token) || strlen(token) > TOKEN_MAX_LEN)) {
        errno = EINVAL;
        errprintf(errp,
                  "the token is empty, too long, or contains spaces or "
                  "control characters");
        return NULL;
    }
    if (vnib_client_global_init() < 0) {
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
    if (!(c->curl = curl_easy_init()) || handle_setup(c) < 0) {
        errno = EIO;
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
        headers_free(c->hdr_plain);
        headers_free(c->hdr_json);
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

int vnib_client_set_timeout_ms(struct vnib_client *c, long ms)
{
    long connect_ms = ms < VNIB_CLIENT_CONNECT_TIMEOUT_MS
                          ? ms
                          : VNIB_CLIENT_CONNECT_TIMEOUT_MS;

    if (!c || ms <= 0) {
        errno = EINVAL;
        return -1;
    }
    if (curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, ms) != CURLE_OK
        || curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms)
               != CURLE_OK) {
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
    static const char hex[] = "0123456789ABCDEF";
    char *out;
    size_t o = 0;

    if (!s) {
        errno = EINVAL;
        return NULL;
    }
    /* "." and ".." are dot-segments that servers and proxies may resolve:
     * as a component they are encoded in full.
     */
    bool dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
    if (!(out = malloc(3 * strlen(s) + 1)))
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if (!dots
            && ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')
                || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'
                || ch == '_' || ch == '~')) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
    return out;
}

/* Map a transfer failure to errno and a message naming the broker. */
static int transport_error(struct vnib_client *c,
                           CURLcode res,
                           const struct reply *r,
                           vnib_error_t *errp)
{
    const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(res);

    if (r->too_large) {
        errno = EPROTO;
        return errprintf(errp,
                         "%s: reply larger than %u MiB",
                         c->url,
                         VNIB_CLIENT_MAX_REPLY / (1024 * 1024));
    }
    if (r->nomem || res == CURLE_OUT_OF_MEMORY) {
        errno = ENOMEM;
        return errprintf(errp, "%s: out of memory", c->url);
    }
    switch (res) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            errno = ECONNREFUSED;
            return errprintf(
                errp, "cannot reach the broker at %s: %s", c->url, detail);
        case CURLE_OPERATION_TIMEDOUT:
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

/* Set the per-request options: URL, method, headers, body. */
static CURLcode request_setup(struct vnib_client *c,
                              const char *method,
                              const char *url,
                              const char *payload,
                              struct reply *r)
{
    CURL *h = c->curl;
    CURLcode res;

    /* HTTPGET resets whatever method and body the previous request had. */
    if ((res = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_URL, url)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_WRITEDATA, r)) != CURLE_OK
        || (res = curl_easy_setopt(
                h, CURLOPT_HTTPHEADER, payload ? c->hdr_json : c->hdr_plain))
               != CURLE_OK)
        return res;
    if (payload || strcmp(method, "POST") == 0) {
        const char *data = payload ? payload : "";
        if ((res = curl_easy_setopt(
                 h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(data)))
                != CURLE_OK
            || (res = curl_easy_setopt(h, CURLOPT_POSTFIELDS, data))
                   != CURLE_OK)
            return res;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
        res = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    return res;
}

/* Forget the body pointer so that the handle never refers to freed
 * memory between requests.
 */
static void request_reset(struct vnib_client *c)
{
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, NULL);
}

int vnib_client_request(struct vnib_client *c,
                        const char *method,
                        const char *path,
                        json_t *body,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    struct reply r = {0};
    char *url = NULL;
    char *payload = NULL;
    json_t *reply = NULL;
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
    if ((res = request_setup(c, method, url, payload, &r)) != CURLE_OK) {
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
        request_reset(c);
    json_decref(reply);
    free(payload);
    free(url);
    free(r.buf);
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
            && json_object_set_new(body, "hwcoll", json_string(r->hwcoll))
                   < 0)) {
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

int vnib_client_get_reservation(struct vnib_client *c,
                                const char *job_id,
                                json_t **replyp,
                                vnib_error_t *errp)
{
    char *path;
    int rc;

    if (replyp)
        *replyp = NULL;
    if (!(path = path_build("/v1/reservations/", job_id, NULL, NULL, "")))
        return errprintf(errp, "%s", strerror(errno));
    rc = vnib_client_request(c, "GET", path, NULL, replyp, errp);
    free(path);
    return rc;
}

int vnib_client_release(struct vnib_client *c,
                        const char *job_id,
                        long long reservation_id,
                        bool force,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    char query[64] = "";
    char *path;
    int rc;

    if (replyp)
        *replyp = NULL;
    if (reservation_id > 0)
        snprintf(query,
                 sizeof(query),
                 "?reservation_id=%lld%s",
                 reservation_id,
                 force ? "&force=true" : "");
    else if (force)
        snprintf(query, sizeof(query), "?force=true");
    if (!(path = path_build("/v1/reservations/", job_id, NULL, NULL, query)))
        return errprintf(errp, "%s", strerror(errno));
    rc = vnib_client_request(c, "DELETE", path, NULL, replyp, errp);
    free(path);
    return rc;
}

int vnib_client_report(struct vnib_client *c,
                       const struct vnib_report *r,
                       json_t **replyp,
                       vnib_error_t *errp)
{
    json_t *body = NULL;
    char *path = NULL;
    int rc = -1;

    if (replyp)
        *replyp = NULL;
    if (!r || !r->node || !r->cxi) {
        errno = EINVAL;
        return errprintf(errp, "report: node and cxi state are needed");
    }
    if (!(path = path_build(
              "/v1/reservations/", r->job_id, "/nodes/", r->node, ""))) {
        errprintf(errp, "%s", strerror(errno));
        goto done;
    }
    if (!(body = json_pack("{s:s}", "cxi", r->cxi))
        || (r->services && json_object_set(body, "services", r->services) < 0)
        || (r->reservation > 0
            && json_object_set_new(
                   body, "reservation_id", json_integer(r->reservation))
                   < 0)) {
        errno = EINVAL;
        errprintf(errp, "report: invalid cxi state or services");
        goto done;
    }
    if (r->message) {
        json_t *m = json_string(r->message);
        if (!m || json_object_set_new(body, "message", m) < 0) {
            errno = EINVAL;
            errprintf(errp, "report: the message is not valid UTF-8");
            goto done;
        }
    }
    rc = vnib_client_request(c, "PUT", path, body, replyp, errp);
done:
    json_decref(body);
    free(path);
    return rc;
}
