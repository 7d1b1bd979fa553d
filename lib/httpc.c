/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one libcurl client (see httpc.h): handle set-up, the capped write
 * callback, per-request options, URL checks, header lists and the wiping
 * of what may hold a credential.  lib/client.c and fmclient/ build their
 * requests and messages on it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/httpc.h"

enum { FIRST_REPLY_BUF = 4096 };

/* libcurl must be initialised once per process before any handle.  These
 * two are the module's only process-wide state, written exactly once under
 * pthread_once and read-only afterwards.
 */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int httpc_global_init(void)
{
    if (pthread_once(&global_once, global_init_once) != 0
        || global_rc != CURLE_OK) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* ---- handles ------------------------------------------------------------- */

/* The options every handle gets, whoever asks. */
static int handle_safety(CURL *h, const char *user_agent, char *errbuf)
{
    if (curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK
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
        || curl_easy_setopt(h, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2)
               != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_PROXY, "") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED)
               != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, httpc_write_cb)
               != CURLE_OK)
        return -1;
    return 0;
}

static int handle_tls(CURL *h, const struct httpc_tls *tls)
{
    long verify = tls && tls->insecure_skip_verify ? 0L : 1L;

    if (curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, verify) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, verify * 2) != CURLE_OK)
        return -1;
    if (!tls)
        return 0;
    if (tls->ca_file
        && curl_easy_setopt(h, CURLOPT_CAINFO, tls->ca_file) != CURLE_OK)
        return -1;
    if (tls->cert) {
        /* NOCOPY: libcurl reads the caller's buffers, which outlive the
         * handle and are wiped by their owner.
         */
        struct curl_blob cert = {
            .data = tls->cert, .len = tls->cert_len, .flags = CURL_BLOB_NOCOPY};
        struct curl_blob key = {
            .data = tls->key, .len = tls->key_len, .flags = CURL_BLOB_NOCOPY};
        if (curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK
            || curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK)
            return -1;
    }
    return 0;
}

CURL *httpc_handle_new(const char *user_agent,
                       const struct httpc_tls *tls,
                       char *errbuf)
{
    CURL *h = NULL;

    if (httpc_global_init() < 0 || !(h = curl_easy_init())
        || handle_safety(h, user_agent, errbuf) < 0 || handle_tls(h, tls) < 0) {
        if (h)
            curl_easy_cleanup(h);
        errno = EIO;
        return NULL;
    }
    return h;
}

CURLcode httpc_request_setup(CURL *h,
                             const struct httpc_request *rq,
                             struct curl_slist *headers,
                             long timeout_ms,
                             long connect_ms,
                             struct httpc_reply *r)
{
    CURLcode res;

    /* HTTPGET resets whatever method and body the previous request had. */
    if ((res = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_URL, rq->url)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_WRITEDATA, r)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers)) != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms))
               != CURLE_OK
        || (res = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms))
               != CURLE_OK)
        return res;
    if (rq->body || strcmp(rq->method, "POST") == 0) {
        const char *data = rq->body ? rq->body : "";
        if ((res = curl_easy_setopt(
                 h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(data)))
                != CURLE_OK
            || (res = curl_easy_setopt(h, CURLOPT_POSTFIELDS, data))
                   != CURLE_OK)
            return res;
    }
    if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "POST") != 0)
        res = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    return res;
}

void httpc_request_reset(CURL *h)
{
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(h, CURLOPT_URL, NULL);
}

/* ---- replies ------------------------------------------------------------- */

void httpc_reply_free(struct httpc_reply *r)
{
    if (r->buf) {
        vnib_memburn(r->buf, r->cap);
        free(r->buf);
        r->wipes++;
    }
    r->buf = NULL;
    r->len = r->cap = 0;
}

size_t httpc_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct httpc_reply *r = arg;
    size_t n = size * nmemb;

    if (n > r->max - r->len) {
        r->too_large = true;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : FIRST_REPLY_BUF;
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
        httpc_reply_free(r); /* wipes and forgets the old buffer */
        r->buf = buf;
        r->cap = cap;
        r->len = len;
    }
    memcpy(r->buf + r->len, ptr, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return n;
}

enum httpc_fault httpc_fault_of(CURLcode res, const struct httpc_reply *r)
{
    if (r && r->too_large)
        return HTTPC_TOO_LARGE;
    if ((r && r->nomem) || res == CURLE_OUT_OF_MEMORY)
        return HTTPC_NOMEM;
    switch (res) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPC_UNREACHABLE;
        case CURLE_GOT_NOTHING:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_PARTIAL_FILE:
            return HTTPC_DROPPED;
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPC_TIMEOUT;
        case CURLE_PEER_FAILED_VERIFICATION:
            return HTTPC_TLS_VERIFY;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
            return HTTPC_TLS;
        default:
            return HTTPC_OTHER;
    }
}

/* ---- URLs and headers ---------------------------------------------------- */

enum httpc_url_fault httpc_url_check(const char *url, char *scheme, size_t n)
{
    enum httpc_url_fault fault = HTTPC_URL_SYNTAX;
    CURLU *u = NULL;
    char *sch = NULL;
    char *host = NULL;
    char *part = NULL;

    if (!url || !url[0])
        return HTTPC_URL_EMPTY;
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return HTTPC_URL_CHARS;
    }
    if (!(u = curl_url()))
        return HTTPC_URL_NOMEM;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK
        || curl_url_get(u, CURLUPART_SCHEME, &sch, 0) != CURLUE_OK)
        goto done;
    if (strcmp(sch, "http") != 0 && strcmp(sch, "https") != 0) {
        if (scheme && n > 0)
            snprintf(scheme, n, "%s", sch);
        fault = HTTPC_URL_SCHEME;
        goto done;
    }
    /* User information first: the messages of the faults after it quote
     * the URL.
     */
    if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK)
        fault = HTTPC_URL_USER;
    else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0])
        fault = HTTPC_URL_NOHOST;
    else if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK
             || curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK)
        fault = HTTPC_URL_QUERY;
    else
        fault = HTTPC_URL_OK;
done:
    curl_free(part);
    curl_free(host);
    curl_free(sch);
    curl_url_cleanup(u);
    return fault;
}

int httpc_headers_add(struct curl_slist **listp, const char *line)
{
    struct curl_slist *l = curl_slist_append(*listp, line);
    if (!l) {
        errno = ENOMEM;
        return -1;
    }
    *listp = l;
    return 0;
}

int httpc_headers_json(struct curl_slist **listp,
                       const char *content_type,
                       const char *auth)
{
    if (httpc_headers_add(listp, "Accept: application/json") < 0
        || httpc_headers_add(listp, "Expect:") < 0)
        return -1;
    if (content_type) {
        char line[128];
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        if (httpc_headers_add(listp, line) < 0)
            return -1;
    }
    if (auth && httpc_headers_add(listp, auth) < 0)
        return -1;
    return 0;
}

void httpc_headers_free(struct curl_slist *list)
{
    for (struct curl_slist *l = list; l; l = l->next)
        vnib_memburn(l->data, strlen(l->data));
    curl_slist_free_all(list);
}

bool httpc_token_printable(const char *s)
{
    if (!s || !s[0])
        return false;
    for (const char *p = s; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f)
            return false;
    }
    return true;
}

char *httpc_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out;
    size_t o = 0;

    if (!s) {
        errno = EINVAL;
        return NULL;
    }
    bool dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
    if (!(out = malloc(3 * strlen(s) + 1))) {
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

void httpc_secret_free(char *s)
{
    if (s) {
        vnib_memburn(s, strlen(s));
        free(s);
    }
}
