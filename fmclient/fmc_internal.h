/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the Fabric Manager client's files share and nothing else includes:
 * the client object, one request, and the functions each file offers the
 * others.
 *
 *   fmclient.c  the client object (create, destroy, TLS files) and the
 *               jobs/multicast API on top of one authorised FM request
 *   fmauth.c    the auth schemes: HTTP Basic (password file) and OAuth
 *               client credentials (token fetch, cache, expiry), and the
 *               forms of every secret scrubbed from messages
 *   fmhttp.c    one HTTP exchange: the pool of CURL handles, deadlines,
 *               and the errors of transfers and statuses (the one map of
 *               statuses to failure classes), with server text scrubbed of
 *               secrets
 *
 * Secrets (password, client secret, access token, the session tokens in
 * replies) live only in buffers that are wiped before they are freed.
 */
#ifndef VNIB_FMC_INTERNAL_H
#define VNIB_FMC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "vnib/fmclient.h"
#include "vnib/httpc.h"

enum {
    FMC_POOL_SIZE = 32,  /* concurrent requests per client */
    FMC_DETAIL_MAX = 96, /* server text quoted in a message */
    FMC_LABEL_MAX = 160, /* "FM METHOD /path" in messages */
    FMC_SCRUB_FORMS = 6, /* encoded secrets scrubbed from text */
};

enum fmc_auth_mode { FMC_AUTH_NONE, FMC_AUTH_BASIC, FMC_AUTH_OAUTH };

/* One pooled CURL handle and the buffer libcurl explains failures in. */
struct fmc_handle {
    CURL *curl;
    char errbuf[CURL_ERROR_SIZE];
};

struct fmc {
    char *url;               /* base URL without trailing '/' */
    enum fmc_auth_mode auth; /* how requests are authorised */
    char *basic_header;      /* basic: "Authorization: Basic ..." */
    char *password;          /* basic: kept only to scrub messages */
    size_t password_len;     /* its buffer size */
    char *token_url;         /* oauth: the token endpoint */
    char *client_id;         /* oauth */
    char *secret;            /* oauth: the client secret */
    size_t secret_len;       /* its buffer size */
    char *ca_file;           /* CA bundle or NULL: the system store */
    char *cert;              /* mTLS certificate (PEM) or NULL */
    size_t cert_len;         /* its length */
    char *key;               /* mTLS key (PEM), read with permission checks */
    size_t key_len;          /* its length */
    bool tls_verify;         /* verify the peer and host name */
    long connect_ms;         /* connect timeout */
    long timeout_ms;         /* total per call */
    size_t max_response;     /* largest reply body accepted */
    char *forms[FMC_SCRUB_FORMS]; /* each encoding of a secret (fmauth) */

    pthread_mutex_t pool_lock;              /* guards idle, nidle, ncreated */
    pthread_cond_t pool_cond;               /* a handle was given back */
    bool pool_lock_ok;                      /* initialised (for destroy) */
    bool pool_cond_ok;                      /* initialised (for destroy) */
    struct fmc_handle *idle[FMC_POOL_SIZE]; /* handles not in use */
    int nidle;                              /* entries in idle */
    int ncreated;                           /* handles in existence */

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

/* One job call, as its exchanges share it: the deadline, and what
 * failed it.  fmhttp_do and fmhttp_status_error record the class of a
 * failed transfer or status; fmhttp_call_end gives the caller's struct
 * fmc_error the class (from errno when none was recorded) and status.
 */
struct fmc_call {
    struct timespec deadline; /* of the whole call (monotonic) */
    long timeout_ms;          /* the limit it was given */
    long status;              /* the last answer's status; 0: none yet */
    enum fmc_fault fault;     /* recorded by an exchange, else NONE */
};

/* Who answered a status (fmhttp_status_error): the FM, or the OAuth
 * token endpoint, whose 400 refuses the client's credentials too.
 */
enum fmhttp_endpoint { FMHTTP_FM, FMHTTP_TOKEN };

/* One HTTP request as fmhttp_do sends it. */
struct fmc_request {
    const char *label;        /* "FM GET /path", for messages */
    const char *method;       /* GET, POST, PATCH or DELETE */
    const char *url;          /* full URL */
    const char *body;         /* request body or NULL */
    const char *content_type; /* of the body */
    const char *auth;         /* Authorization header line or NULL */
};

/* ---- fmclient.c ---------------------------------------------------------- */

/* Check a URL of the configuration ("FM URL", "OAuth token URL"):
 * 0, or -1 with EINVAL (ENOMEM) and a message naming what.
 */
int fmc_url_check(const char *what, const char *url, vnib_error_t *errp);

/* ---- fmauth.c ------------------------------------------------------------ */

/* Set up c->auth's scheme from cfg (read the password or client secret
 * file, build the Basic header) and the forms of the secrets scrubbed
 * from messages.  c->auth is set already.
 */
int fmauth_setup(struct fmc *c,
                 const struct fmc_config *cfg,
                 vnib_error_t *errp);

/* The Authorization header line for a request, or NULL for none, in
 * *hdrp (the caller wipes it with httpc_secret_free); *genp is the OAuth
 * token's generation.  A non-zero refresh_gen that is still the current
 * generation fetches a new token (the FM refused that one).
 */
int fmauth_header(struct fmc *c,
                  struct fmc_call *call,
                  unsigned refresh_gen,
                  char **hdrp,
                  unsigned *genp,
                  vnib_error_t *errp);

/* ---- fmhttp.c ------------------------------------------------------------ */

/* The monotonic time ms from now, and the milliseconds until t (negative
 * when past).
 */
struct timespec fmhttp_deadline_after(long ms);
long fmhttp_ms_until(const struct timespec *t);

/* A call of at most timeout_ms from now. */
struct fmc_call fmhttp_call_begin(long timeout_ms);

/* Fill errp (may be NULL) for a call that returned rc: its class and
 * status, FMC_FAULT_NONE when rc is 0.  Returns rc; errno is kept.
 */
int fmhttp_call_end(const struct fmc_call *call,
                    int rc,
                    struct fmc_error *errp);

/* Send one request and receive the reply before the call's deadline.
 * Returns 0 with *statusp (also call->status) and the body in r (the
 * caller frees it with httpc_reply_free), or -1 when no HTTP answer came
 * (the transfer's class recorded in call).
 */
int fmhttp_do(struct fmc *c,
              const struct fmc_request *rq,
              struct fmc_call *call,
              long *statusp,
              struct httpc_reply *r,
              vnib_error_t *errp);

/* An HTTP status that fails the call: record its class in call (the one
 * map of statuses: 401 and 403, and the token endpoint's 400, are
 * credentials; 404 not found; 507 out of addresses; 5xx unavailable; any
 * other the request refused), set errno to match (EACCES, ENOENT, ENOSPC,
 * else EIO) and write "<label>: HTTP <status>[: detail]", the detail
 * scrubbed of secrets.  Always returns -1.
 */
int fmhttp_status_error(struct fmc *c,
                        struct fmc_call *call,
                        enum fmhttp_endpoint from,
                        const char *label,
                        long status,
                        const json_t *body,
                        vnib_error_t *errp);

/* Free the handles in the pool (at destroy, none borrowed). */
void fmhttp_pool_free(struct fmc *c);

#endif /* !VNIB_FMC_INTERNAL_H */
