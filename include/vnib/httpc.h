/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one libcurl client under the REST client (lib/client.c) and the
 * Fabric Manager client (fmclient/).
 *
 * It owns what both must get right the same way: libcurl's one-time
 * initialisation, the easy-handle safety options (TLS verification on
 * unless a caller says otherwise in so many words, TLS 1.2 at least,
 * http/https only, no redirects, no environment proxy or .netrc, no
 * signals), the write callback that caps a reply's size, URL checks,
 * header lists, the per-request options with their timeouts, and the
 * classification of a failed transfer.  Every buffer that may hold a
 * credential (a header line, a reply carrying a token) is wiped before it
 * is freed; a reply buffer that grows is copied, never realloc'd, so the
 * old one can be wiped too.
 *
 * The callers keep their own messages: httpc says what went wrong
 * (enum values), each client says it in its own words.
 */
#ifndef VNIB_HTTPC_H
#define VNIB_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "vnib/error.h"

/* The TLS side of a handle.  A zero-initialised struct verifies the peer
 * and host name against the system store: turning verification off takes
 * setting insecure_skip_verify, which only an explicit configuration
 * key should do.
 */
struct httpc_tls {
    const char *ca_file;       /* CA bundle; NULL: the system store */
    char *cert;                /* mTLS certificate (PEM) or NULL */
    size_t cert_len;           /* its length */
    char *key;                 /* mTLS key (PEM); with cert */
    size_t key_len;            /* its length */
    bool insecure_skip_verify; /* true: peer and host are NOT verified */
};

/* A reply body being received by httpc_write_cb.  Zero-initialise it and
 * set max; free it with httpc_reply_free.
 */
struct httpc_reply {
    char *buf;      /* NUL-terminated body, or NULL when none came */
    size_t len;     /* bytes in buf */
    size_t cap;     /* buf's size */
    size_t max;     /* the cap on len */
    bool too_large; /* the cap was hit: the transfer was aborted */
    bool nomem;     /* growing the buffer failed */
    unsigned wipes; /* buffers wiped so far (growth and free) */
};

/* One request as httpc_request_setup sets it on a handle. */
struct httpc_request {
    const char *method; /* GET, POST, PUT, PATCH or DELETE */
    const char *url;    /* full URL */
    const char *body;   /* request body or NULL (POST sends "") */
};

/* What a failed transfer was, for the caller's message and errno. */
enum httpc_fault {
    HTTPC_TOO_LARGE,   /* the reply passed the cap */
    HTTPC_NOMEM,       /* out of memory */
    HTTPC_UNREACHABLE, /* no connection: refused, host or proxy unknown */
    HTTPC_DROPPED,     /* connected, then nothing, or a send/recv error */
    HTTPC_TIMEOUT,     /* the connect or total timeout passed */
    HTTPC_TLS_VERIFY,  /* the peer's certificate or name did not verify */
    HTTPC_TLS,         /* any other TLS failure (handshake, files) */
    HTTPC_OTHER,
};

/* What is wrong with a URL (httpc_url_check). */
enum httpc_url_fault {
    HTTPC_URL_OK,
    HTTPC_URL_EMPTY,  /* NULL or "" */
    HTTPC_URL_CHARS,  /* a space, control or non-ASCII character */
    HTTPC_URL_NOMEM,  /* out of memory */
    HTTPC_URL_SYNTAX, /* libcurl cannot parse it */
    HTTPC_URL_SCHEME, /* neither http nor https */
    HTTPC_URL_USER,   /* it carries user information */
    HTTPC_URL_NOHOST, /* it names no host */
    HTTPC_URL_QUERY,  /* it has a query or fragment */
};

/* libcurl's process-wide initialisation, once (pthread_once).  Returns 0,
 * or -1 with errno EIO.
 */
int httpc_global_init(void);

/* A new easy handle with the safety options above, user_agent, tls and
 * errbuf (CURL_ERROR_SIZE bytes, which must outlive the handle), and
 * httpc_write_cb as its write function.  tls->cert and tls->key are not
 * copied: they must outlive the handle.  NULL with errno EIO on failure.
 */
CURL *httpc_handle_new(const char *user_agent,
                       const struct httpc_tls *tls,
                       char *errbuf) VNIB_MUST_CHECK;

/* Set one request on a handle: URL, method, headers, body, the reply to
 * fill, the total and connect timeouts (ms).  Whatever the previous
 * request set is reset first.
 */
CURLcode httpc_request_setup(CURL *h,
                             const struct httpc_request *rq,
                             struct curl_slist *headers,
                             long timeout_ms,
                             long connect_ms,
                             struct httpc_reply *r);

/* Make the handle forget the request's pointers (body, headers, reply,
 * URL) so that it never refers to freed memory between requests; its
 * connection stays open.
 */
void httpc_request_reset(CURL *h);

/* The libcurl write callback: appends to the struct httpc_reply it is
 * given, aborts the transfer past r->max (too_large) or when out of
 * memory (nomem).
 */
size_t httpc_write_cb(char *ptr, size_t size, size_t nmemb, void *arg);

/* Wipe and free a reply's buffer; the struct can be used again. */
void httpc_reply_free(struct httpc_reply *r);

/* Classify a transfer that failed with res, having filled r. */
enum httpc_fault httpc_fault_of(CURLcode res, const struct httpc_reply *r);

/* Check url is http(s)://host[:port][/prefix] with nothing that could
 * carry a secret or change the request: no user information, query,
 * fragment or spaces.  On HTTPC_URL_SCHEME the scheme is copied into
 * scheme (size n, may be NULL).
 */
enum httpc_url_fault httpc_url_check(const char *url, char *scheme, size_t n);

/* Append a line to *listp (errno ENOMEM; the list is left as it was). */
int httpc_headers_add(struct curl_slist **listp, const char *line);

/* Append "Accept: application/json", "Expect:", "Content-Type: <type>"
 * when content_type is not NULL, and the auth line when not NULL.
 * Returns 0, or -1 (ENOMEM) leaving what was appended in the list.
 */
int httpc_headers_json(struct curl_slist **listp,
                       const char *content_type,
                       const char *auth);

/* Wipe every line of a header list (one may hold a credential), free it
 * (NULL accepted).
 */
void httpc_headers_free(struct curl_slist *list);

/* True when s is non-empty printable ASCII without spaces, so that it can
 * go into a header as it is (NULL: false).
 */
bool httpc_token_printable(const char *s);

/* Percent-encode everything but RFC 3986's unreserved characters; "."
 * and ".." (dot-segments) are encoded in full.  For path components and
 * form values.  NULL with errno (EINVAL, ENOMEM).  The caller frees it.
 */
char *httpc_escape(const char *s) VNIB_MUST_CHECK;

/* Wipe and free a NUL-terminated secret (NULL accepted). */
void httpc_secret_free(char *s);

#endif /* !VNIB_HTTPC_H */
