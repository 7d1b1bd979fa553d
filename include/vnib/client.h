/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small libcurl client for the vnibroker REST API.
 *
 * Used by vnibctl, the node agent and scheduler plugins.  One client holds
 * one broker URL, an optional bearer token and one CURL easy handle that is
 * reused for every request, so consecutive requests share a kept-alive
 * connection.  A client is therefore NOT thread-safe: use one per thread.
 *
 * Every call returns the HTTP status (>= 100), also for refusals (>= 400),
 * or -1 with errno set when no HTTP answer was obtained:
 *
 *   ECONNREFUSED  the host refused, could not be resolved or reached
 *   ETIMEDOUT     the connection or the whole request timed out
 *   EPROTO        the reply was not JSON or was larger than 16 MiB
 *   EIO           any other transport failure (TLS, reset connection...)
 *   EINVAL        an invalid argument (bad path, unencodable body)
 *   ENOMEM        out of memory
 *
 * The vnib_error_t then names the URL and the cause.  For statuses >= 400
 * it holds "<code>: <message>" from the broker's error body.  The token is
 * only ever sent in the Authorization header; no message ever contains it.
 *
 * TLS peers are always verified (CURLOPT_CAINFO via
 * vnib_client_set_cacert, else the system store), only http and https are
 * spoken, redirects are not followed, and proxies from the environment are
 * ignored: the broker is cluster-internal, and a proxy would read the token
 * of a plain-http request.
 */
#ifndef VNIB_CLIENT_H
#define VNIB_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"

/* Largest reply body accepted, in bytes. */
#define VNIB_CLIENT_MAX_REPLY (16u * 1024 * 1024)

/* Default total timeout of a request, and the cap on the connect phase. */
#define VNIB_CLIENT_TIMEOUT_MS 10000L
#define VNIB_CLIENT_CONNECT_TIMEOUT_MS 5000L

/* The request header that tells the broker how long the client waits for
 * its answer, in whole milliseconds (1 to VNIB_DEADLINE_MAX_MS): a request
 * still queued when that time has passed since it arrived is answered
 * 503 deadline_exceeded and not run.  Every request sends it, with the
 * client's timeout less VNIB_DEADLINE_MARGIN (see vnib_client_deadline_ms),
 * so that work the broker begins before the deadline has that margin to
 * finish before the client gives up.
 */
#define VNIB_DEADLINE_HEADER "Vnib-Deadline-Ms"
#define VNIB_DEADLINE_MAX_MS 3600000
#define VNIB_DEADLINE_MARGIN_MS 2000

/* The deadline a client with this total timeout sends: the timeout less
 * a quarter of it, at most VNIB_DEADLINE_MARGIN_MS less (10 s: 8 s;
 * 1 s: 750 ms), and at least 1.
 */
long vnib_client_deadline_ms(long timeout_ms);

struct vnib_client;

/* Initialise libcurl for the whole process.  Safe to call any number of
 * times from any thread (it runs curl_global_init once, under
 * pthread_once); vnib_client_create calls it too, so a program need not.
 * A program that uses libcurl itself should still call this (or
 * curl_global_init) once at start, before it creates threads.  Returns 0,
 * or -1 with errno set (EIO) when libcurl cannot be initialised.
 */
int vnib_client_global_init(void);

/* Create a client for the broker at url ("http://host:port" or
 * "https://host:port", optionally followed by a path prefix; no user
 * information, query or fragment).  token may be NULL (only the probes
 * answer without one); it is copied, and must be 1-TOKEN_MAX_LEN bytes of
 * printable ASCII without spaces.  Returns NULL with errno (EINVAL, ENOMEM,
 * EIO) and errp set. Free with vnib_client_destroy.
 */
struct vnib_client *vnib_client_create(const char *url,
                                       const char *token,
                                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free a client, wiping its copy of the token (NULL is accepted).  errno
 * is preserved.
 */
void vnib_client_destroy(struct vnib_client *c);

/* Verify the broker's certificate against the PEM bundle at path instead
 * of the system store (path is copied by libcurl and read at the next
 * TLS handshake).  Returns 0, or -1 with errno set (EINVAL for a NULL
 * path, ENOMEM).
 */
int vnib_client_set_cacert(struct vnib_client *c, const char *path);

/* Set the total timeout of each request in milliseconds (default
 * VNIB_CLIENT_TIMEOUT_MS).  The connect phase is limited to the smaller of
 * ms and VNIB_CLIENT_CONNECT_TIMEOUT_MS.  Returns 0, or -1 with errno
 * EINVAL when ms <= 0.
 */
int vnib_client_set_timeout_ms(struct vnib_client *c, long ms);

/* The base URL the client talks to (borrowed; valid until destroy). */
const char *vnib_client_url(const struct vnib_client *c);

/* Send one request.  method is "GET", "POST", "PUT" or "DELETE"; path
 * starts with '/' and is appended to the base URL as is, so its variable
 * components must already be escaped (vnib_client_escape); it may carry a
 * query string.  body (borrowed, may be NULL) is sent as JSON.
 *
 * Returns the HTTP status, or -1 (see the top of this file).  When a
 * status is returned and replyp is not NULL, *replyp receives a new
 * reference to the parsed reply (the caller must json_decref it); on -1 it
 * is set to NULL.  For a status >= 400 errp holds "<code>: <message>".
 */
int vnib_client_request(struct vnib_client *c,
                        const char *method,
                        const char *path,
                        json_t *body,
                        json_t **replyp,
                        vnib_error_t *errp);

/* Percent-encode s for use as one path component or query value: every
 * byte except A-Z a-z 0-9 - . _ ~ becomes %XX, and "." and ".." are
 * encoded in full ("%2E", "%2E%2E") so that no path normalisation on the
 * way can turn them into dot-segments.  Returns a new string the
 * caller must free, or NULL with errno set (EINVAL when s is NULL, ENOMEM).
 */
char *vnib_client_escape(const char *s) VNIB_MUST_CHECK;

/* The wrappers below return like vnib_client_request; replyp may be NULL.
 */

/* A reservation request. */
struct vnib_reserve {
    const char *job_id;
    uint32_t uid;
    const char *user;
    const char *nodes;  /* a hostlist expression */
    int vni_count;      /* < 0 leaves the count to the broker's default */
    const char *hwcoll; /* "on", "off", "auto"; NULL: the broker's default */
    bool lease;         /* "lease": true: presumed, the reply has a lease */
};

/* POST /v1/reservations: reserve VNIs for a job.  201 created, 200 the
 * same reservation existed.
 */
int vnib_client_reserve(struct vnib_client *c,
                        const struct vnib_reserve *r,
                        json_t **replyp,
                        vnib_error_t *errp);

/* GET /v1/reservations/JOB_ID: the newest reservation of a job. */
int vnib_client_get_reservation(struct vnib_client *c,
                                const char *job_id,
                                json_t **replyp,
                                vnib_error_t *errp);

/* DELETE /v1/reservations/JOB_ID[?force=true][&reservation_id=N]: release
 * a job's VNIs: its reservation N when N > 0 (and no other), else the one
 * the job id means.  202 releasing, 200 released; force needs the admin
 * role.
 */
int vnib_client_release(struct vnib_client *c,
                        const char *job_id,
                        long long reservation_id,
                        bool force,
                        json_t **replyp,
                        vnib_error_t *errp);

/* A node's report about a job's CXI services. */
struct vnib_report {
    const char *job_id;
    const char *node;
    const char *cxi;       /* "creating", "created", "destroyed", "failed" */
    json_t *services;      /* borrowed, may be NULL: [{"device", "svc_id"}] */
    const char *message;   /* may be NULL */
    long long reservation; /* the reservation acted on; <= 0 omits it */
    const char *step_id;   /* a step's services; NULL: the job's */
};

/* PUT /v1/reservations/JOB_ID/nodes/NODE (or, with step_id,
 * /v1/reservations/JOB_ID/steps/STEP_ID/nodes/NODE): report a node's CXI
 * state.  Agents always send the reservation they acted on, so that a
 * report about a requeued job's old services is never filed under its new
 * reservation (the broker answers 409 stale_reservation instead).
 */
int vnib_client_report(struct vnib_client *c,
                       const struct vnib_report *r,
                       json_t **replyp,
                       vnib_error_t *errp);

/* A step reservation request: a job step's own VNIs (0-4; with the
 * job's at most 4), on nodes of the job.
 */
struct vnib_step_reserve {
    const char *job_id;
    const char *step_id;
    const char *nodes; /* a hostlist expression */
    int vni_count;     /* < 0 leaves it to the broker's default, 0 */
    bool lease;        /* "lease": true, as vnib_reserve's */
};

/* PUT /v1/reservations/JOB_ID/steps/STEP_ID: reserve for a step of an
 * active job.  201 created, 200 the same reservation existed.
 */
int vnib_client_step_reserve(struct vnib_client *c,
                             const struct vnib_step_reserve *r,
                             json_t **replyp,
                             vnib_error_t *errp);

/* GET /v1/reservations/JOB_ID/steps/STEP_ID: the step's newest
 * reservation.
 */
int vnib_client_get_step(struct vnib_client *c,
                         const char *job_id,
                         const char *step_id,
                         json_t **replyp,
                         vnib_error_t *errp);

/* DELETE /v1/reservations/JOB_ID/steps/STEP_ID[?force=true]: end a step
 * (its multicast trees, and its reservation if it has one); 202.  force
 * needs the admin role.
 */
int vnib_client_step_release(struct vnib_client *c,
                             const char *job_id,
                             const char *step_id,
                             bool force,
                             json_t **replyp,
                             vnib_error_t *errp);

#endif /* !VNIB_CLIENT_H */
