/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Client of the Slingshot Fabric Manager's collectives API (libcurl).
 *
 * The broker is the one place that logs in to the Fabric Manager (FM) and
 * holds each job's multicast reservation.  This client speaks the API as
 * its public clients use it (see the reference notes, section 2):
 *
 *   GET    {url}/fabric/collectives/jobs/{jobID}   200 job (sessionToken) | 404
 *   POST   {url}/fabric/collectives/jobs           {"jobID", "mcastLimit"}
 *   PATCH  {url}/fabric/collectives/jobs/{jobID}   {"jobSteps": {"<step>":
 * null}} DELETE {url}/fabric/collectives/jobs/{jobID} GET
 * {url}/fabric/collectives/jobs/          {"documentLinks": [...]}
 *
 * Authentication is none, HTTP Basic (user and password file), or OAuth2
 * client credentials (token endpoint, client id and secret file; the
 * access token is cached, refreshed before expires_in runs out and once
 * on a 401 or 403), optionally with a client certificate (mTLS).  TLS
 * peer and host verification are on unless tls_verify is false.  Secret
 * files (password, client secret, mTLS key) must not be accessible by
 * group or others and must belong to the effective user or root, whatever
 * the effective user (secfile_read_owned: the broker's own credentials).
 * No secret ever appears in an error message.
 *
 * Connections are reused (keep-alive).  A client may be used from several
 * threads: each call borrows one of a small set of CURL handles under a
 * lock.  Every call is bounded by the connect and total timeouts, and
 * responses are capped in size.
 *
 * Errors (errno): ENOENT (404), EACCES (401/403 after one token refresh),
 * ECONNREFUSED (host unreachable, connection refused or dropped),
 * ETIMEDOUT, EPROTO (a reply that is not the JSON expected, or TLS
 * verification failure: the message says which), EMSGSIZE (reply larger
 * than the cap), ENOSPC (507: out of multicast addresses), EIO (any other
 * status; the message carries the status and the FM's "detail" or
 * "message").  A failed job call also fills a struct fmc_error: the
 * message, the failure's class (enum fmc_fault) and the HTTP status that
 * failed it, so that a caller can say what went wrong without the FM's
 * text.
 */
#ifndef VNIB_FMCLIENT_H
#define VNIB_FMCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "vnib/error.h"

struct fmc_config {
    const char *url;           /* base URL, e.g. https://fm.example/apis/fm */
    const char *auth;          /* "none", "basic" or "oauth" */
    const char *user;          /* basic */
    const char *password_file; /* basic: the password (mode 0600) */
    const char *token_url;     /* oauth: the token endpoint */
    const char *client_id;     /* oauth */
    const char *client_secret_file; /* oauth (mode 0600) */
    const char *ca_file;     /* CA bundle; NULL or "": the system store */
    const char *cert_file;   /* mTLS client certificate; NULL or "": none */
    const char *key_file;    /* mTLS key (mode 0600) */
    bool tls_verify;         /* false only by explicit configuration */
    long connect_timeout_ms; /* default 2000 when 0 */
    long timeout_ms;         /* default 10000 when 0 */
    size_t max_response;     /* default 1 MiB when 0 */
};

struct fmc;

/* The class of an FM call's failure: what an admin would act on.  One
 * function in fmhttp.c maps HTTP statuses to these (and to errno).
 */
enum fmc_fault {
    FMC_FAULT_NONE,         /* the call succeeded */
    FMC_FAULT_CREDENTIALS,  /* 401 or 403 (after one OAuth token refresh),
                             * or the OAuth token endpoint's 400, 401 or
                             * 403: credentials or permission (EACCES) */
    FMC_FAULT_REQUEST,      /* another status the FM refused with: 4xx, or
                             * 1xx and 3xx (redirects are not followed) */
    FMC_FAULT_NOT_FOUND,    /* 404 where it is an error (ENOENT) */
    FMC_FAULT_NO_ADDRESSES, /* 507: out of multicast addresses (ENOSPC) */
    FMC_FAULT_UNAVAILABLE,  /* 5xx: the FM or a proxy before it failed */
    FMC_FAULT_REPLY,        /* an answer the client cannot use: not the
                             * JSON expected, no status, too large */
    FMC_FAULT_TIMEOUT,      /* no answer within the call's time limit */
    FMC_FAULT_CONN_REFUSED, /* the connection was refused */
    FMC_FAULT_HOST_UNKNOWN, /* the host name does not resolve */
    FMC_FAULT_UNREACHABLE,  /* no connection for another reason (route) */
    FMC_FAULT_DROPPED,      /* connected, then closed without an answer */
    FMC_FAULT_TLS_VERIFY,   /* the FM's certificate or name did not verify */
    FMC_FAULT_TLS,          /* any other TLS failure */
    FMC_FAULT_OTHER,        /* in this process: memory, arguments, libcurl */
};

/* Why a job call failed.  fault and status never carry the FM's text;
 * msg may (scrubbed of every form of the client's secrets), so it is for
 * the log and for admins.
 */
struct fmc_error {
    vnib_error_t msg;     /* "FM POST /...: HTTP 503: <the FM's detail>" */
    enum fmc_fault fault; /* FMC_FAULT_NONE after a success */
    long status;          /* the HTTP status of the answer that failed the
                           * call (a refusal, or a reply not as expected);
                           * 0 when no answer did (timeout, connection,
                           * TLS, local) */
    long timeout_ms;      /* with FMC_FAULT_TIMEOUT: the call's limit */
};

/* Create a client; reads and checks the secret files now.  Does not
 * contact the FM.  Returns NULL with errp set.
 */
struct fmc *fmc_create(const struct fmc_config *cfg,
                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free, wiping secrets (NULL accepted). */
void fmc_destroy(struct fmc *c);

/* The session token of an existing FM job: 0 and *tokenp (caller frees
 * with fmc_free_secret), or -1 (ENOENT when the FM has no such job).
 */
int fmc_job_get(struct fmc *c,
                const char *fm_job_id,
                char **tokenp,
                struct fmc_error *errp) VNIB_MUST_CHECK;

/* Reserve multicast addresses for a job: POST it, and on 409 (it exists:
 * a retry after a reply that was lost, a broker restart) take the
 * existing job's token with a GET, so that a retry never makes a second
 * FM object.  timeout_ms bounds the whole call (0: the client's timeout).
 * Returns 0 with *tokenp (caller frees with fmc_free_secret), or -1.
 */
int fmc_job_create(struct fmc *c,
                   const char *fm_job_id,
                   int mcast_limit,
                   long timeout_ms,
                   char **tokenp,
                   struct fmc_error *errp) VNIB_MUST_CHECK;

/* Free one job step's multicast trees (PATCH jobSteps.<step> = null).
 * 404 counts as done.
 */
int fmc_job_release_step(struct fmc *c,
                         const char *fm_job_id,
                         const char *step_id,
                         struct fmc_error *errp) VNIB_MUST_CHECK;

/* Delete a job's reservation and its trees.  404 counts as done (0). */
int fmc_job_delete(struct fmc *c,
                   const char *fm_job_id,
                   struct fmc_error *errp) VNIB_MUST_CHECK;

/* The FM's job ids that start with exactly "<prefix>-": *idsp is an array
 * of *countp strings (free with fmc_free_ids).  Entries of other prefixes
 * are never returned.
 */
int fmc_job_list(struct fmc *c,
                 const char *prefix,
                 char ***idsp,
                 size_t *countp,
                 struct fmc_error *errp) VNIB_MUST_CHECK;

void fmc_free_ids(char **ids, size_t count);

/* Wipe and free a token returned above (NULL accepted). */
void fmc_free_secret(char *token);

/* Multicast addresses per job by HPE's rule (M / (S / s)) / j, where M is
 * the fabric's usable addresses (4086), S the system size in nodes, s the
 * smallest job that gets collectives, j jobs per node.  At least 1.
 * Example: M=4086, S=11136, s=64, j=1 gives 23.
 */
int fmc_addrs_per_job(int total_addrs,
                      int system_size,
                      int min_job_size,
                      int jobs_per_node);

/* The FM's multicast collection under base URL base,
 * "{base}/fabric/collectives/multicasts", into buf (truncated to size):
 * the URL a job's libfabric is given (FI_CXI_COLL_FABRIC_MGR_URL), beside
 * the jobs URLs this client calls.
 */
void fmc_multicasts_url(const char *base, char *buf, size_t size);

#endif /* !VNIB_FMCLIENT_H */
