/* The Fabric Manager collectives client (see fmclient.h).
 *
 * A client holds the FM's base URL, the credentials read at creation
 * (wiped when it is destroyed), a small pool of CURL easy handles and the
 * cached OAuth access token.  A call borrows a handle for each HTTP
 * request it makes and gives it back, so several broker threads can talk
 * to the FM at once while connections stay alive between calls.  Every
 * handle is set up once with the safety options (TLS verification unless
 * configured off, http/https only, no redirects, no environment proxy, no
 * signals); a request only sets its URL, method, headers, body and the
 * time left before the call's deadline.
 *
 * Two locks: pool_lock guards the idle handles and is never held across a
 * transfer; token_lock serialises OAuth token fetches, so that threads
 * that see an expired token or a 401 at the same time fetch one new token
 * between them.  A thread never waits for token_lock while it holds a
 * handle, so the two cannot deadlock.
 *
 * Secrets (password, client secret, access token, the session tokens in
 * replies) live only in buffers that are wiped before they are freed, and
 * every text quoted from a server is scrubbed of every form of them the
 * client sends (see scrub_setup) before it goes into an error message: a
 * server or proxy that echoes the request in its error must not put a
 * credential into the broker's log or a reservation.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "vnib/fmclient.h"
#include "vnib/secfile.h"

enum {
    POOL_SIZE = 32,               /* concurrent requests per client */
    DEFAULT_CONNECT_MS = 2000,    /* connect timeout when 0 is given */
    DEFAULT_TIMEOUT_MS = 10000,   /* total per call when 0 is given */
    DETAIL_MAX = 96,              /* server text quoted in a message */
    LABEL_MAX = 160,              /* "FM METHOD /path" in messages */
    TOKEN_MARGIN_MS = 30000,      /* refresh this long before expiry... */
    TOKEN_MAX_LIFETIME = 2592000, /* seconds; longer expires_in is capped */
    SCRUB_FORMS = 6,              /* encoded secrets scrubbed from text */
};

#define DEFAULT_MAX_RESPONSE ((size_t)1024 * 1024)

static const char jobs_path[] = "/fabric/collectives/jobs";
/* The multicast collection, which a job's processes call themselves
 * (fmc_multicasts_url).
 */
static const char multicasts_path[] = "/fabric/collectives/multicasts";

enum auth_mode { AUTH_NONE, AUTH_BASIC, AUTH_OAUTH };

/* One pooled CURL handle and the buffer libcurl explains failures in. */
struct handle {
    CURL *curl;
    char errbuf[CURL_ERROR_SIZE];
};

struct fmc {
    char *url;                /* base URL without trailing '/' */
    enum auth_mode auth;      /* how requests are authorised */
    char *basic_header;       /* basic: "Authorization: Basic ..." */
    char *password;           /* basic: kept only to scrub messages */
    size_t password_len;      /* its buffer size */
    char *token_url;          /* oauth: the token endpoint */
    char *client_id;          /* oauth */
    char *secret;             /* oauth: the client secret */
    size_t secret_len;        /* its buffer size */
    char *ca_file;            /* CA bundle or NULL: the system store */
    char *cert;               /* mTLS certificate (PEM) or NULL */
    size_t cert_len;          /* its length */
    char *key;                /* mTLS key (PEM), read with permission checks */
    size_t key_len;           /* its length */
    bool tls_verify;          /* verify the peer and host name */
    long connect_ms;          /* connect timeout */
    long timeout_ms;          /* total per call */
    size_t max_response;      /* largest reply body accepted */
    char *forms[SCRUB_FORMS]; /* each encoding of a secret (scrub_setup) */

    pthread_mutex_t pool_lock;      /* guards idle, nidle, ncreated */
    pthread_cond_t pool_cond;       /* a handle was given back */
    bool pool_lock_ok;              /* initialised (for destroy) */
    bool pool_cond_ok;              /* initialised (for destroy) */
    struct handle *idle[POOL_SIZE]; /* handles not in use */
    int nidle;                      /* entries in idle */
    int ncreated;                   /* handles in existence */

    pthread_mutex_t token_lock;       /* guards the token fields */
    bool token_lock_ok;               /* initialised (for destroy) */
    char *token;                      /* oauth: the access token or NULL */
    char *old_token;                  /* the one before (still scrubbed) */
    pthread_mutex_t scrub_lock;       /* token writers hold it too */
    bool scrub_lock_ok;               /* initialised (for destroy) */
    unsigned token_gen;               /* bumped at each new token */
    bool token_expires;               /* the endpoint gave expires_in */
    struct timespec token_refresh_at; /* refresh from then (monotonic) */
};

/* A reply body being received. */
struct reply {
    char *buf;
    size_t len;
    size_t cap;
    size_t max;     /* the client's cap */
    bool too_large; /* the cap was hit: the transfer was aborted */
    bool nomem;     /* growing the buffer failed */
};

/* One HTTP request as http_do() sends it. */
struct request {
    const char *label;        /* "FM GET /path", for messages */
    const char *method;       /* GET, POST, PATCH or DELETE */
    const char *url;          /* full URL */
    const char *body;         /* request body or NULL */
    const char *content_type; /* of the body */
    const char *auth;         /* Authorization header line or NULL */
};

/* libcurl must be initialised once per process before any handle.  These
 * two are written exactly once under pthread_once, read-only afterwards.
 */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers ------------------------------------------------------- */

/* Wipe and free a NUL-terminated secret (NULL accepted). */
static void secret_free(char *s)
{
    if (s) {
        vnib_memburn(s, strlen(s));
        free(s);
    }
}

static void reply_free(struct reply *r)
{
    if (r->buf) {
        vnib_memburn(r->buf, r->cap);
        free(r->buf);
    }
    r->buf = NULL;
    r->len = r->cap = 0;
}

/* Wipe the strings of a header list (one holds a credential), free it. */
static void headers_free(struct curl_slist *list)
{
    for (struct curl_slist *l = list; l; l = l->next)
        vnib_memburn(l->data, strlen(l->data));
    curl_slist_free_all(list);
}

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

/* True when s can be sent in a header as is: printable, no spaces. */
static bool token_printable(const char *s)
{
    if (!s || !s[0])
        return false;
    for (const char *p = s; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f)
            return false;
    }
    return true;
}

/* Percent-encode everything but RFC 3986's unreserved characters.  "."
 * and ".." are dot-segments a server may resolve, so they are encoded in
 * full.  Serves both path components and form values.
 */
static char *escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    bool dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
    char *out = malloc(3 * strlen(s) + 1);
    size_t o = 0;

    if (!out) {
        errno = ENOMEM;
        return NULL;
    }
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

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

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
        int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
        int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
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

/* Standard base64 with padding (for the Basic header). */
static char *base64(const unsigned char *in, size_t n)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    size_t o = 0;

    if (!out) {
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* ---- time ---------------------------------------------------------------- */

static struct timespec deadline_after(long ms)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Milliseconds until t (negative when past). */
static long ms_until(const struct timespec *t)
{
    struct timespec now;
    long long ms;

    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (long long)(t->tv_sec - now.tv_sec) * 1000
         + (t->tv_nsec - now.tv_nsec) / 1000000;
    if (ms > LONG_MAX)
        return LONG_MAX;
    if (ms < LONG_MIN)
        return LONG_MIN;
    return (long)ms;
}

/* ---- messages ------------------------------------------------------------ */

/* The longest of the n forms that starts at p (0 when none does). */
static size_t scrub_match(const char *p, const char *const *forms, size_t n)
{
    size_t best = 0;

    for (size_t i = 0; i < n; i++) {
        size_t len = forms[i] ? strlen(forms[i]) : 0;
        if (len > best && strncmp(p, forms[i], len) == 0)
            best = len;
    }
    return best;
}

/* A copy of text with every occurrence of every form replaced by "***"
 * (longest first, so that a base64 form is not half masked by a shorter
 * one it contains).  NULL when out of memory; the caller wipes it.
 */
static char *scrub_text(const char *text, const char *const *forms, size_t n)
{
    size_t len = strlen(text);
    char *out = malloc(3 * len + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        size_t m = scrub_match(p, forms, n);
        if (m) {
            memcpy(out + o, "***", 3);
            o += 3;
            p += m;
        } else
            out[o++] = *p++;
    }
    out[o] = '\0';
    return out;
}

/* Copy server text into out (DETAIL_MAX + 1 bytes): secrets scrubbed
 * first, so a truncation cannot leave part of one, then control
 * characters replaced by spaces.  "" when text is NULL or out of memory.
 */
static void detail_copy(struct fmc *c, const char *text, char *out)
{
    const char *forms[SCRUB_FORMS + 2];
    size_t n = 0;
    char *dup;
    size_t i;

    out[0] = '\0';
    if (!text)
        return;
    for (i = 0; i < SCRUB_FORMS; i++)
        forms[n++] = c->forms[i];
    pthread_mutex_lock(&c->scrub_lock);
    forms[n++] = c->token;
    forms[n++] = c->old_token;
    dup = scrub_text(text, forms, n);
    pthread_mutex_unlock(&c->scrub_lock);
    if (!dup)
        return;
    for (i = 0; dup[i] && i < DETAIL_MAX; i++) {
        unsigned char ch = (unsigned char)dup[i];
        out[i] = ch < ' ' || ch == 0x7f ? ' ' : (char)ch;
    }
    out[i] = '\0';
    secret_free(dup);
}

/* The explanation in an error body: the FM's "detail" (what Slurm reads)
 * or "message" (what libfabric reads), or an OAuth server's
 * "error_description" or "error".  NULL when there is none.
 */
static const char *detail_of(const json_t *body)
{
    static const char *const keys[] = {
        "detail", "message", "error_description", "error"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *s = json_string_value(json_object_get(body, keys[i]));
        if (s && s[0])
            return s;
    }
    return NULL;
}

/* Set errno for an HTTP status and write "<label>: HTTP <status>[: detail]".
 * Always returns -1.
 */
static int status_error(struct fmc *c,
                        const char *label,
                        long status,
                        const json_t *body,
                        vnib_error_t *errp)
{
    char detail[DETAIL_MAX + 1];

    switch (status) {
        case 401:
        case 403:
            errno = EACCES;
            break;
        case 404:
            errno = ENOENT;
            break;
        case 507:
            errno = ENOSPC;
            break;
        default:
            errno = EIO;
            break;
    }
    detail_copy(c, detail_of(body), detail);
    if (detail[0])
        return errprintf(errp, "%s: HTTP %ld: %s", label, status, detail);
    return errprintf(errp, "%s: HTTP %ld", label, status);
}

/* Map a failed transfer to errno and a message.  Always returns -1. */
static int transfer_error(const struct handle *h,
                          const char *label,
                          CURLcode res,
                          const struct reply *r,
                          vnib_error_t *errp)
{
    const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(res);

    if (r->too_large) {
        errno = EMSGSIZE;
        return errprintf(
            errp, "%s: reply larger than %zu bytes", label, r->max);
    }
    if (r->nomem || res == CURLE_OUT_OF_MEMORY) {
        errno = ENOMEM;
        return errprintf(errp, "%s: out of memory", label);
    }
    switch (res) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_GOT_NOTHING:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_PARTIAL_FILE:
            errno = ECONNREFUSED;
            return errprintf(
                errp, "%s: cannot reach the server: %s", label, why);
        case CURLE_OPERATION_TIMEDOUT:
            errno = ETIMEDOUT;
            return errprintf(errp, "%s: timed out: %s", label, why);
        case CURLE_PEER_FAILED_VERIFICATION:
            errno = EPROTO;
            return errprintf(errp,
                             "%s: TLS verification of the server failed: %s",
                             label,
                             why);
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
            errno = EPROTO;
            return errprintf(errp, "%s: TLS failure: %s", label, why);
        default:
            errno = EIO;
            return errprintf(errp, "%s: %s", label, why);
    }
}

/* ---- the handle pool ----------------------------------------------------- */

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct reply *r = arg;
    size_t n = size * nmemb;

    if (n > r->max - r->len) {
        r->too_large = true;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        /* Not realloc: the old buffer may hold a token and is wiped. */
        char *buf = malloc(cap);
        if (!buf) {
            r->nomem = true;
            return 0;
        }
        size_t len = r->len;
        if (r->buf)
            memcpy(buf, r->buf, len);
        reply_free(r); /* wipes and forgets the old buffer, length too */
        r->buf = buf;
        r->cap = cap;
        r->len = len;
    }
    memcpy(r->buf + r->len, ptr, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return n;
}

static void handle_destroy(struct handle *h)
{
    if (h) {
        if (h->curl)
            curl_easy_cleanup(h->curl);
        free(h);
    }
}

/* Options that never change for the life of a handle. */
static int handle_setup(const struct fmc *c, struct handle *h)
{
    CURL *e = h->curl;
    long verify = c->tls_verify ? 1L : 0L;

    if (curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK
#if LIBCURL_VERSION_NUM >= 0x075500
        || curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
               != CURLE_OK
#else
        || curl_easy_setopt(
               e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS))
               != CURLE_OK
        || curl_easy_setopt(e,
                            CURLOPT_REDIR_PROTOCOLS,
                            (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS))
               != CURLE_OK
#endif
        || curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, verify) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, verify * 2) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2)
               != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED)
               != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_USERAGENT, "vnib-fmclient/1") != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb) != CURLE_OK)
        return -1;
    if (c->ca_file
        && curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file) != CURLE_OK)
        return -1;
    if (c->cert) {
        /* NOCOPY: libcurl reads our buffers, which outlive every handle
         * and are wiped at destroy.
         */
        struct curl_blob cert = {
            .data = c->cert, .len = c->cert_len, .flags = CURL_BLOB_NOCOPY};
        struct curl_blob key = {
            .data = c->key, .len = c->key_len, .flags = CURL_BLOB_NOCOPY};
        if (curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK
            || curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK)
            return -1;
    }
    return 0;
}

static struct handle *handle_create(const struct fmc *c)
{
    struct handle *h = calloc(1, sizeof(*h));

    if (!h) {
        errno = ENOMEM;
        return NULL;
    }
    if (!(h->curl = curl_easy_init()) || handle_setup(c, h) < 0) {
        handle_destroy(h);
        errno = EIO;
        return NULL;
    }
    return h;
}

/* Borrow an idle handle, create one while fewer than POOL_SIZE exist, or
 * wait for one until the deadline (ETIMEDOUT).
 */
static struct handle *handle_borrow(struct fmc *c,
                                    const struct timespec *deadline,
                                    const char *label,
                                    vnib_error_t *errp)
{
    struct handle *h = NULL;
    int rc = 0;

    pthread_mutex_lock(&c->pool_lock);
    while (c->nidle == 0 && c->ncreated >= POOL_SIZE && rc == 0)
        rc = pthread_cond_timedwait(&c->pool_cond, &c->pool_lock, deadline);
    if (c->nidle > 0) {
        h = c->idle[--c->nidle];
        pthread_mutex_unlock(&c->pool_lock);
        return h;
    }
    if (c->ncreated >= POOL_SIZE) {
        pthread_mutex_unlock(&c->pool_lock);
        errno = ETIMEDOUT;
        errprintf(errp,
                  "%s: timed out waiting for one of the %d connections",
                  label,
                  POOL_SIZE);
        return NULL;
    }
    c->ncreated++;
    pthread_mutex_unlock(&c->pool_lock);
    if (!(h = handle_create(c))) {
        int e = errno;
        pthread_mutex_lock(&c->pool_lock);
        c->ncreated--;
        pthread_cond_signal(&c->pool_cond);
        pthread_mutex_unlock(&c->pool_lock);
        errno = e;
        errprintf(errp, "%s: cannot set up a libcurl handle", label);
    }
    return h;
}

/* Forget the request's pointers (body, headers, reply) and give the
 * handle back; its connection stays open for the next request.
 */
static void handle_return(struct fmc *c, struct handle *h)
{
    CURL *e = h->curl;

    curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(e, CURLOPT_URL, NULL);
    pthread_mutex_lock(&c->pool_lock);
    c->idle[c->nidle++] = h;
    pthread_cond_signal(&c->pool_cond);
    pthread_mutex_unlock(&c->pool_lock);
}

/* ---- one HTTP exchange --------------------------------------------------- */

static int request_headers(const struct request *rq, struct curl_slist **hdrsp)
{
    if (headers_add(hdrsp, "Accept: application/json") < 0
        || headers_add(hdrsp, "Expect:") < 0)
        return -1;
    if (rq->body) {
        char line[128];
        snprintf(line, sizeof(line), "Content-Type: %s", rq->content_type);
        if (headers_add(hdrsp, line) < 0)
            return -1;
    }
    if (rq->auth && headers_add(hdrsp, rq->auth) < 0)
        return -1;
    return 0;
}

static CURLcode request_setup(struct handle *h,
                              const struct request *rq,
                              struct curl_slist *hdrs,
                              long timeout_ms,
                              long connect_ms,
                              struct reply *r)
{
    CURL *e = h->curl;
    CURLcode res;

    if ((res = curl_easy_setopt(e, CURLOPT_HTTPGET, 1L)) != CURLE_OK
        || (res = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL)) != CURLE_OK
        || (res = curl_easy_setopt(e, CURLOPT_URL, rq->url)) != CURLE_OK
        || (res = curl_easy_setopt(e, CURLOPT_WRITEDATA, r)) != CURLE_OK
        || (res = curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs)) != CURLE_OK
        || (res = curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms))
               != CURLE_OK
        || (res = curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms))
               != CURLE_OK)
        return res;
    if (rq->body) {
        if ((res = curl_easy_setopt(
                 e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(rq->body)))
                != CURLE_OK
            || (res = curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body))
                   != CURLE_OK)
            return res;
    }
    if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "POST") != 0)
        res = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method);
    return res;
}

/* Send one request and receive the reply before the deadline.  Returns 0
 * with *statusp and the body in r (the caller frees it with reply_free),
 * or -1 when no HTTP answer came.
 */
static int http_do(struct fmc *c,
                   const struct request *rq,
                   const struct timespec *deadline,
                   long *statusp,
                   struct reply *r,
                   vnib_error_t *errp)
{
    struct handle *h = NULL;
    struct curl_slist *hdrs = NULL;
    long left;
    CURLcode res;
    int rc = -1;

    r->max = c->max_response;
    if (ms_until(deadline) <= 0) {
        errno = ETIMEDOUT;
        errprintf(errp, "%s: timed out before the request was sent", rq->label);
        goto done;
    }
    if (request_headers(rq, &hdrs) < 0) {
        errprintf(errp, "%s: out of memory", rq->label);
        goto done;
    }
    if (!(h = handle_borrow(c, deadline, rq->label, errp)))
        goto done;
    if ((left = ms_until(deadline)) <= 0) {
        errno = ETIMEDOUT;
        errprintf(errp, "%s: timed out before the request was sent", rq->label);
        goto done;
    }
    h->errbuf[0] = '\0';
    res = request_setup(
        h, rq, hdrs, left, left < c->connect_ms ? left : c->connect_ms, r);
    if (res != CURLE_OK) {
        errno = EIO;
        errprintf(errp, "%s: %s", rq->label, curl_easy_strerror(res));
        goto done;
    }
    if ((res = curl_easy_perform(h->curl)) != CURLE_OK) {
        transfer_error(h, rq->label, res, r, errp);
        goto done;
    }
    if (curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, statusp) != CURLE_OK
        || *statusp < 100) {
        errno = EPROTO;
        errprintf(errp, "%s: the reply has no HTTP status", rq->label);
        goto done;
    }
    rc = 0;
done:
    if (h) {
        int e = errno;
        handle_return(c, h);
        errno = e;
    }
    headers_free(hdrs);
    return rc;
}

/* ---- OAuth --------------------------------------------------------------- */

/* The form that asks for a token; the caller wipes it (secret_free). */
static char *token_form(const struct fmc *c)
{
    char *id = escape(c->client_id);
    char *secret = escape(c->secret);
    char *form = NULL;

    if (id && secret) {
        size_t len = strlen(id) + strlen(secret) + 128;
        if ((form = malloc(len)))
            snprintf(form,
                     len,
                     "grant_type=client_credentials&client_id=%s"
                     "&client_secret=%s&scope=openid",
                     id,
                     secret);
    }
    free(id);
    secret_free(secret);
    if (!form)
        errno = ENOMEM;
    return form;
}

/* Remember a new token and when to refresh it: when less than a tenth of
 * its lifetime or 30 s remains, whichever is more, but never later than
 * half-way, so that short-lived tokens are still reused.  Without
 * expires_in the token is kept until the FM refuses it.
 */
static void token_store(struct fmc *c, char *token, json_int_t lifetime)
{
    pthread_mutex_lock(&c->scrub_lock);
    secret_free(c->old_token);
    c->old_token = c->token;
    c->token = token;
    pthread_mutex_unlock(&c->scrub_lock);
    c->token_gen++;
    c->token_expires = lifetime > 0;
    if (c->token_expires) {
        long long life_ms =
            (long long)(lifetime > TOKEN_MAX_LIFETIME ? TOKEN_MAX_LIFETIME
                                                      : lifetime)
            * 1000;
        long long margin = life_ms / 10;
        if (margin < TOKEN_MARGIN_MS)
            margin = TOKEN_MARGIN_MS;
        if (margin > life_ms / 2)
            margin = life_ms / 2;
        c->token_refresh_at = deadline_after((long)(life_ms - margin));
    }
}

/* The access token (copied into *tokenp) and its lifetime in seconds (0
 * when not given) of a token endpoint's 2xx reply body, NULL when it is
 * not JSON.
 */
static int token_parse(const json_t *body,
                       const char *label,
                       long status,
                       char **tokenp,
                       json_int_t *lifetimep,
                       vnib_error_t *errp)
{
    const char *value;
    json_t *exp;

    *tokenp = NULL;
    *lifetimep = 0;
    if (!body) {
        errno = EPROTO;
        return errprintf(errp, "%s: HTTP %ld reply is not JSON", label, status);
    }
    value = json_string_value(json_object_get(body, "access_token"));
    if (!token_printable(value)) {
        errno = EPROTO;
        return errprintf(
            errp, "%s: the reply has no valid access_token", label);
    }
    exp = json_object_get(body, "expires_in");
    if (json_is_integer(exp))
        *lifetimep = json_integer_value(exp);
    else if (json_is_real(exp) && json_real_value(exp) >= 1)
        *lifetimep = json_real_value(exp) < TOKEN_MAX_LIFETIME
                         ? (json_int_t)json_real_value(exp)
                         : TOKEN_MAX_LIFETIME;
    else if (json_is_string(exp))
        *lifetimep = strtol(json_string_value(exp), NULL, 10);
    if (!(*tokenp = strdup(value))) {
        errno = ENOMEM;
        return errprintf(errp, "%s: out of memory", label);
    }
    return 0;
}

/* Fetch a new access token from the token endpoint (token_lock held). */
static int token_fetch(struct fmc *c,
                       const struct timespec *deadline,
                       vnib_error_t *errp)
{
    char label[LABEL_MAX];
    struct reply r = {0};
    json_t *body = NULL;
    json_error_t jerr;
    char *form = NULL;
    char *token = NULL;
    long status = 0;
    int rc = -1;

    snprintf(label, sizeof(label), "OAuth POST %s", c->token_url);
    if (!(form = token_form(c))) {
        errprintf(errp, "%s: out of memory", label);
        goto done;
    }
    struct request rq = {
        .label = label,
        .method = "POST",
        .url = c->token_url,
        .body = form,
        .content_type = "application/x-www-form-urlencoded",
    };
    if (http_do(c, &rq, deadline, &status, &r, errp) < 0)
        goto done;
    body = r.len ? json_loadb(r.buf, r.len, 0, &jerr) : NULL;
    if (status < 200 || status > 299) {
        status_error(c, label, status, body, errp);
        /* The endpoint refusing the client's credentials is an access
         * problem whatever status it picked for it; any other status
         * says nothing about the FM job (not ENOENT, not ENOSPC).
         */
        if (status == 400 || status == 401 || status == 403)
            errno = EACCES;
        else
            errno = EIO;
        goto done;
    }
    json_int_t lifetime = 0;
    if (token_parse(body, label, status, &token, &lifetime, errp) < 0)
        goto done;
    token_store(c, token, lifetime);
    rc = 0;
done:
    json_decref(body);
    reply_free(&r);
    secret_free(form);
    return rc;
}

/* The Authorization header line for a request, or NULL for none, in
 * *hdrp (the caller wipes it with secret_free).  For OAuth, the token is
 * fetched when there is none or it is due for refresh, or when
 * refresh_gen is non-zero and still the current token's generation (the
 * FM refused that token; another thread may have replaced it already).
 */
static int auth_header(struct fmc *c,
                       const struct timespec *deadline,
                       unsigned refresh_gen,
                       char **hdrp,
                       unsigned *genp,
                       vnib_error_t *errp)
{
    static const char bearer[] = "Authorization: Bearer ";
    int rc = -1;

    *hdrp = NULL;
    *genp = 0;
    if (c->auth == AUTH_NONE)
        return 0;
    if (c->auth == AUTH_BASIC) {
        if (!(*hdrp = strdup(c->basic_header))) {
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
        return 0;
    }
    pthread_mutex_lock(&c->token_lock);
    if (!c->token || (refresh_gen && refresh_gen == c->token_gen)
        || (c->token_expires && ms_until(&c->token_refresh_at) <= 0)) {
        if (token_fetch(c, deadline, errp) < 0)
            goto done;
    }
    size_t len = sizeof(bearer) + strlen(c->token);
    if (!(*hdrp = malloc(len))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(*hdrp, len, "%s%s", bearer, c->token);
    *genp = c->token_gen;
    rc = 0;
done:
    pthread_mutex_unlock(&c->token_lock);
    return rc;
}

/* ---- FM requests --------------------------------------------------------- */

/* Send one request to the FM: path is already escaped and starts with
 * '/', body is JSON or NULL.  With OAuth, a 401 or 403 makes it fetch a
 * new token and try once more.  Returns 0 with any HTTP status other
 * than a final 401/403 in *statusp and the body, when it is JSON, in
 * *jsonp (else NULL; *emptyp tells whether there was a body at all).
 * Returns -1 on a transport failure or a refusal (EACCES).
 */
static int fm_request(struct fmc *c,
                      const char *method,
                      const char *path,
                      const char *body,
                      const struct timespec *deadline,
                      long *statusp,
                      json_t **jsonp,
                      bool *emptyp,
                      vnib_error_t *errp)
{
    char label[LABEL_MAX];
    struct reply r = {0};
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
        secret_free(auth);
        reply_free(&r);
        if (auth_header(c, deadline, attempt ? gen : 0, &auth, &gen, errp) < 0)
            goto done;
        struct request rq = {
            .label = label,
            .method = method,
            .url = url,
            .body = body,
            .content_type = "application/json",
            .auth = auth,
        };
        if (http_do(c, &rq, deadline, statusp, &r, errp) < 0)
            goto done;
        if (c->auth == AUTH_OAUTH && attempt == 0
            && (*statusp == 401 || *statusp == 403))
            continue;
        break;
    }
    if (r.len) {
        *emptyp = false;
        *jsonp = json_loadb(r.buf, r.len, 0, &jerr);
    }
    if (*statusp == 401 || *statusp == 403) {
        status_error(c, label, *statusp, *jsonp, errp);
        json_decref(*jsonp);
        *jsonp = NULL;
        goto done;
    }
    rc = 0;
done:
    reply_free(&r);
    secret_free(auth);
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
    if (!(id = escape(job_id))) {
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
    if (!token_printable(t)) {
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
                   const struct timespec *deadline,
                   char **tokenp,
                   vnib_error_t *errp)
{
    char label[LABEL_MAX];
    json_t *job = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    snprintf(label, sizeof(label), "FM GET %s", path);
    if (fm_request(c, "GET", path, NULL, deadline, &status, &job, &empty, errp)
        < 0)
        goto done;
    if (status < 200 || status > 299) {
        status_error(c, label, status, job, errp);
        goto done;
    }
    rc = session_token(job, label, status, empty, tokenp, errp);
done:
    json_decref(job);
    return rc;
}

/* ---- the API ------------------------------------------------------------- */

/* Accept http(s)://host[:port][/prefix] and nothing that could carry a
 * secret into a message or change the request (user information, query,
 * fragment, spaces).
 */
static int url_check(const char *what, const char *url, vnib_error_t *errp)
{
    CURLU *u = NULL;
    char *scheme = NULL;
    char *host = NULL;
    char *part = NULL;
    int rc = -1;

    if (!url || !url[0]) {
        errno = EINVAL;
        return errprintf(errp, "no %s given", what);
    }
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
            errno = EINVAL;
            return errprintf(errp,
                             "the %s contains a space, control or non-ASCII "
                             "character",
                             what);
        }
    }
    if (!(u = curl_url())) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK
        || curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK
        || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        errprintf(
            errp, "the %s is not an http:// or https:// URL: '%s'", what, url);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK) {
        errprintf(errp,
                  "the %s must not contain user information (use the "
                  "credential files)",
                  what);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
        errprintf(errp, "the %s names no host: '%s'", what, url);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK
        || curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK) {
        errprintf(errp, "the %s must not have a query or fragment", what);
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

/* Read a one-line secret file: one trailing newline ("\n" or "\r\n") is
 * dropped; an empty secret or one with a NUL byte is refused.  *lenp is
 * the buffer size to wipe.
 */
static int secret_read(const char *what,
                       const char *path,
                       char **bufp,
                       size_t *lenp,
                       vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;

    if (!path || !path[0]) {
        errno = EINVAL;
        return errprintf(errp, "no %s file given", what);
    }
    if (secfile_read(path, &buf, &len, errp) < 0)
        return -1;
    *bufp = buf;
    *lenp = len + 1;
    if (len > 0 && buf[len - 1] == '\n') {
        buf[--len] = '\0';
        if (len > 0 && buf[len - 1] == '\r')
            buf[--len] = '\0';
    }
    if (len == 0 || strlen(buf) != len) {
        errno = EINVAL;
        return errprintf(
            errp, "%s: the %s is empty or contains a NUL byte", path, what);
    }
    return 0;
}

/* "Authorization: Basic base64(user:password)". */
static int basic_setup(struct fmc *c,
                       const struct fmc_config *cfg,
                       vnib_error_t *errp)
{
    static const char prefix[] = "Authorization: Basic ";
    char *pair = NULL;
    char *b64 = NULL;
    size_t pairlen = 0;
    int rc = -1;

    if (!token_printable(cfg->user) || strchr(cfg->user, ':')) {
        errno = EINVAL;
        return errprintf(errp,
                         "FM basic auth needs a user without spaces, ':' or "
                         "control characters");
    }
    if (secret_read("FM password",
                    cfg->password_file,
                    &c->password,
                    &c->password_len,
                    errp)
        < 0)
        return -1;
    pairlen = strlen(cfg->user) + 1 + strlen(c->password) + 1;
    if (!(pair = malloc(pairlen))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(pair, pairlen, "%s:%s", cfg->user, c->password);
    if (!(b64 = base64((const unsigned char *)pair, pairlen - 1))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    size_t len = sizeof(prefix) + strlen(b64);
    if (!(c->basic_header = malloc(len))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(c->basic_header, len, "%s%s", prefix, b64);
    rc = 0;
done:
    if (rc < 0)
        errno = ENOMEM;
    secret_free(b64);
    secret_free(pair);
    return rc;
}

static int oauth_setup(struct fmc *c,
                       const struct fmc_config *cfg,
                       vnib_error_t *errp)
{
    if (url_check("OAuth token URL", cfg->token_url, errp) < 0)
        return -1;
    if (!cfg->client_id || !cfg->client_id[0]) {
        errno = EINVAL;
        return errprintf(errp, "FM OAuth needs a client id");
    }
    if (!(c->token_url = strdup(cfg->token_url))
        || !(c->client_id = strdup(cfg->client_id))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return secret_read("OAuth client secret",
                       cfg->client_secret_file,
                       &c->secret,
                       &c->secret_len,
                       errp);
}

/* CA bundle, client certificate and key: read now, so that a missing or
 * unsafe file stops the broker at start rather than at the first call.
 */
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
            || secfile_read(cfg->key_file, &c->key, &c->key_len, errp) < 0))
        return -1;
    return 0;
}

/* base64("a:b"), or NULL (ENOMEM). */
static char *base64_pair(const char *a, const char *b)
{
    size_t len = strlen(a) + 1 + strlen(b) + 1;
    char *pair = malloc(len);
    char *b64;

    if (!pair) {
        errno = ENOMEM;
        return NULL;
    }
    snprintf(pair, len, "%s:%s", a, b);
    b64 = base64((const unsigned char *)pair, len - 1);
    secret_free(pair);
    return b64;
}

/* A copy of s with the hex digits of its %XX escapes in lower case. */
static char *lower_escapes(const char *s)
{
    char *out = strdup(s);

    for (char *p = out; p && *p; p++)
        if (*p == '%' && p[1] && p[2]) {
            p[1] = (char)(p[1] >= 'A' && p[1] <= 'F' ? p[1] + 32 : p[1]);
            p[2] = (char)(p[2] >= 'A' && p[2] <= 'F' ? p[2] + 32 : p[2]);
        }
    return out;
}

/* Every form in which the client sends a fixed secret, for detail_copy:
 * the password, user:password's base64 (the Basic header), the client
 * secret raw and percent-encoded (the token form; either case of hex),
 * and client_id:secret's base64 (what a Basic client authentication
 * would carry).  user:password needs no entry of its own: it contains
 * the password.  The access token is scrubbed from c->token.
 */
static int scrub_setup(struct fmc *c, const struct fmc_config *cfg)
{
    char **f = c->forms;

    if (c->auth == AUTH_BASIC
        && (!(f[0] = strdup(c->password))
            || !(f[1] = base64_pair(cfg->user, c->password))))
        return -1;
    if (c->auth == AUTH_OAUTH
        && (!(f[0] = strdup(c->secret)) || !(f[1] = escape(c->secret))
            || !(f[2] = lower_escapes(f[1]))
            || !(f[3] = base64_pair(c->client_id, c->secret))))
        return -1;
    return 0;
}

struct fmc *fmc_create(const struct fmc_config *cfg, vnib_error_t *errp)
{
    struct fmc *c = NULL;
    pthread_condattr_t attr;

    if (!cfg) {
        errno = EINVAL;
        errprintf(errp, "no FM configuration given");
        return NULL;
    }
    if (url_check("FM URL", cfg->url, errp) < 0)
        return NULL;
    if (pthread_once(&global_once, global_init_once) != 0
        || global_rc != CURLE_OK) {
        errno = EIO;
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
        c->auth = AUTH_NONE;
    else if (strcmp(cfg->auth, "basic") == 0)
        c->auth = AUTH_BASIC;
    else if (strcmp(cfg->auth, "oauth") == 0)
        c->auth = AUTH_OAUTH;
    else {
        errno = EINVAL;
        errprintf(errp,
                  "unknown FM auth '%s' (want none, basic or oauth)",
                  cfg->auth);
        goto error;
    }
    if ((c->auth == AUTH_BASIC && basic_setup(c, cfg, errp) < 0)
        || (c->auth == AUTH_OAUTH && oauth_setup(c, cfg, errp) < 0)
        || tls_setup(c, cfg, errp) < 0)
        goto error;
    if (scrub_setup(c, cfg) < 0) {
        errprintf(errp, "out of memory");
        goto error;
    }
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
        for (int i = 0; i < c->nidle; i++)
            handle_destroy(c->idle[i]);
        if (c->pool_cond_ok)
            pthread_cond_destroy(&c->pool_cond);
        if (c->pool_lock_ok)
            pthread_mutex_destroy(&c->pool_lock);
        if (c->token_lock_ok)
            pthread_mutex_destroy(&c->token_lock);
        if (c->scrub_lock_ok)
            pthread_mutex_destroy(&c->scrub_lock);
        secret_free(c->token);
        secret_free(c->old_token);
        for (int i = 0; i < SCRUB_FORMS; i++)
            secret_free(c->forms[i]);
        secfile_free(c->key, c->key_len);
        secfile_free(c->cert, c->cert_len);
        free(c->ca_file);
        secfile_free(c->secret, c->secret_len);
        free(c->client_id);
        free(c->token_url);
        secfile_free(c->password, c->password_len);
        secret_free(c->basic_header);
        free(c->url);
        free(c);
    }
    errno = saved_errno;
}

int fmc_job_get(struct fmc *c,
                const char *fm_job_id,
                char **tokenp,
                vnib_error_t *errp)
{
    struct timespec deadline;
    char *path = NULL;
    int rc = -1;

    if (!c || !tokenp) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments");
    }
    *tokenp = NULL;
    deadline = deadline_after(c->timeout_ms);
    if (!(path = job_path(fm_job_id, errp)))
        goto done;
    rc = job_get(c, path, &deadline, tokenp, errp);
done:
    free(path);
    return rc;
}

/* fmc_job_reserve (get_first) and fmc_job_create (not): POST the job,
 * and on 409 take the existing one's token.  With get_first, GET it
 * first and POST only on 404.
 */
static int job_reserve(struct fmc *c,
                       const char *fm_job_id,
                       int mcast_limit,
                       long timeout_ms,
                       bool get_first,
                       char **tokenp,
                       vnib_error_t *errp)
{
    char label[LABEL_MAX];
    struct timespec deadline;
    vnib_error_t e = {""};
    char *path = NULL;
    char *payload = NULL;
    json_t *body = NULL;
    json_t *reply = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    if (!c || !tokenp || timeout_ms < 0) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments");
    }
    *tokenp = NULL;
    deadline = deadline_after(timeout_ms > 0 ? timeout_ms : c->timeout_ms);
    if (mcast_limit < 1) {
        errno = EINVAL;
        errprintf(errp, "mcastLimit %d is not positive", mcast_limit);
        goto done;
    }
    if (!(path = job_path(fm_job_id, errp)))
        goto done;
    /* The job may exist already (a retry, a broker restart): then its
     * token is the answer, and a POST would make a second FM object.
     */
    if (get_first) {
        if (job_get(c, path, &deadline, tokenp, &e) == 0) {
            rc = 0;
            goto done;
        }
        if (errno != ENOENT) {
            errprintf(errp, "%s", e.text);
            goto done;
        }
    }
    if (!(body = json_pack(
              "{s:s, s:i}", "jobID", fm_job_id, "mcastLimit", mcast_limit))
        || !(payload = json_dumps(body, JSON_COMPACT))) {
        errno = EINVAL;
        errprintf(errp, "FM job id '%s' is not valid UTF-8", fm_job_id);
        goto done;
    }
    snprintf(label, sizeof(label), "FM POST %s", jobs_path);
    if (fm_request(c,
                   "POST",
                   jobs_path,
                   payload,
                   &deadline,
                   &status,
                   &reply,
                   &empty,
                   errp)
        < 0)
        goto done;
    if (status >= 200 && status <= 299) {
        rc = session_token(reply, label, status, empty, tokenp, errp);
        goto done;
    }
    if (status != 409) {
        status_error(c, label, status, reply, errp);
        goto done;
    }
    /* It exists (someone created it between our GET and POST, or a
     * create raced another): take its token.
     */
    if (job_get(c, path, &deadline, tokenp, &e) == 0) {
        rc = 0;
        goto done;
    }
    if (errno == ENOENT) {
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
    return rc;
}

int fmc_job_reserve(struct fmc *c,
                    const char *fm_job_id,
                    int mcast_limit,
                    long timeout_ms,
                    char **tokenp,
                    vnib_error_t *errp)
{
    return job_reserve(
        c, fm_job_id, mcast_limit, timeout_ms, true, tokenp, errp);
}

int fmc_job_create(struct fmc *c,
                   const char *fm_job_id,
                   int mcast_limit,
                   long timeout_ms,
                   char **tokenp,
                   vnib_error_t *errp)
{
    return job_reserve(
        c, fm_job_id, mcast_limit, timeout_ms, false, tokenp, errp);
}

/* PATCH or DELETE where 2xx and 404 both mean done. */
static int job_change(struct fmc *c,
                      const char *method,
                      const char *path,
                      const char *payload,
                      vnib_error_t *errp)
{
    char label[LABEL_MAX];
    struct timespec deadline = deadline_after(c->timeout_ms);
    json_t *reply = NULL;
    long status = 0;
    bool empty;
    int rc = -1;

    snprintf(label, sizeof(label), "FM %s %s", method, path);
    if (fm_request(
            c, method, path, payload, &deadline, &status, &reply, &empty, errp)
        < 0)
        goto done;
    if ((status < 200 || status > 299) && status != 404) {
        status_error(c, label, status, reply, errp);
        goto done;
    }
    rc = 0;
done:
    json_decref(reply);
    return rc;
}

int fmc_job_release_step(struct fmc *c,
                         const char *fm_job_id,
                         const char *step_id,
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
    rc = job_change(c, "PATCH", path, payload, errp);
done:
    free(payload);
    json_decref(body);
    free(path);
    return rc;
}

int fmc_job_delete(struct fmc *c, const char *fm_job_id, vnib_error_t *errp)
{
    char *path = NULL;
    int rc;

    if (!c) {
        errno = EINVAL;
        return errprintf(errp, "invalid arguments");
    }
    if (!(path = job_path(fm_job_id, errp)))
        return -1;
    rc = job_change(c, "DELETE", path, NULL, errp);
    free(path);
    return rc;
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

int fmc_job_list(struct fmc *c,
                 const char *prefix,
                 char ***idsp,
                 size_t *countp,
                 vnib_error_t *errp)
{
    char label[LABEL_MAX];
    char path[sizeof(jobs_path) + 1];
    struct timespec deadline;
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
    deadline = deadline_after(c->timeout_ms);
    snprintf(path, sizeof(path), "%s/", jobs_path);
    snprintf(label, sizeof(label), "FM GET %s", path);
    if (fm_request(
            c, "GET", path, NULL, &deadline, &status, &reply, &empty, errp)
        < 0)
        goto done;
    if (status < 200 || status > 299) {
        status_error(c, label, status, reply, errp);
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

    secret_free(token);
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
