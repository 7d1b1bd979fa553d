/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The HTTP listener: the broker's request pipeline and error replies.
 *
 * The pipeline is lib/httpd.c's (vnib/httpd.h), which drives
 * libmicrohttpd; this module adds the broker's part.  Each request runs
 * through the same stages: match a route (404, or 405 with Allow), check
 * the body size as it arrives (413), authenticate (401) and authorise the
 * route's role (403, server/http/auth.h), call the handler, and render its
 * JSON, or its error as
 * {"error": {"code": "...", "message": "...", "request_id": "..."}}: the
 * code the handler chose (request_fail), else the errno's, and the HTTP
 * status that goes with it, both from the one table of server/http/
 * errcode.h.  A message marked for the operator alone (vnib_error_t's
 * public_text: the database's own words) is logged, and the client reads
 * its fixed text.  Every request gets an id (returned in X-Request-Id and
 * written on every log line about it).
 */
#ifndef VNIB_SERVER_HTTP_H
#define VNIB_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"
#include "vnib/httpd.h"
#include "server/http/auth.h"
#include "server/broker.h"
#include "server/http/errcode.h"
#include "server/http/route.h"

/* The most header pairs a handler adds (request.extra_headers). */
#define REQUEST_EXTRA_HEADERS 12

/* One request as handlers see it. */
struct request {
    struct broker *broker;      /* the broker context */
    const struct route *route;  /* matched row; NULL when none */
    int route_index;            /* index in the route table; its count
                                   if none matched */
    const char *method;         /* borrowed from libmicrohttpd */
    const char *path;           /* decoded path, borrowed */
    char id[17];                /* request id, hex */
    struct route_params params; /* {name} values from the path */
    struct identity who;        /* the caller (public routes: role 0) */

    char *body; /* request body, NUL-terminated, or NULL (borrowed) */
    size_t body_len;

    enum errcode error_code; /* the error reply's code; ERRCODE_NONE: the
                                errno's */
    int retry_after;         /* seconds for Retry-After; 0 for none */

    char *text; /* a reply body as sent (handler allocates): text, or
                   JSON rendered once for the reply and the node-fetch
                   cache (a node's fetch of a job) */
    size_t text_len;
    const char *content_type; /* of text */

    /* Headers the handler adds to its reply, error replies included
     * (name, value, ..., NULL; borrowed, usually static), at most
     * REQUEST_EXTRA_HEADERS pairs: the status page's security headers, a
     * redirect's Location.  A Cache-Control here replaces the default
     * no-store.
     */
    const char *const *extra_headers;

    /* A request made without libmicrohttpd (hr NULL: the in-process tests
     * in tests/inproc/ call handlers directly) takes its headers and query
     * arguments from these tables instead: name, value, name, value, ...,
     * NULL, or NULL for none.  Names match without regard to case, as in
     * libmicrohttpd.  The pipeline never sets them.
     */
    const char *const *headers;
    const char *const *query;

    /* When the client no longer waits (monotonic ns; 0: no deadline):
     * work not begun by then is not begun (store_reserve's deadline).
     * Set by the pipeline from server.queue_deadline_ms and the client's
     * VNIB_DEADLINE_HEADER.
     */
    int64_t deadline_ns;

    /* Internal to http.c. */
    struct http *http;        /* the pipeline, NULL in-process */
    struct httpd_req *hr;     /* the pipeline's request */
    int64_t start_ns;         /* monotonic arrival time */
    int64_t handler_start_ns; /* when the handler was called */
    int64_t handler_ns;       /* its duration (Server-Timing) */

    /* The handler's outcome, kept from the worker that ran it to the
     * libmicrohttpd thread that sends it (see http.c, "Suspension").
     */
    int queued;         /* REQ_* state of the hand-off to a worker */
    int result;         /* handler's status, or -1 */
    int result_errno;   /* errno of a failure */
    json_t *out;        /* JSON reply (owned), or NULL */
    vnib_error_t error; /* message of a failure */
};

struct http;

/* What main.c hands the pipeline besides the broker. */
struct http_setup {
    const struct route_table *routes; /* the API's; outlives the listener */
    int fm_workers; /* request workers added, by default, for reserves that
                       may wait on the Fabric Manager (hwcoll's
                       request_concurrency; 0 without hardware collectives) */
};

/* Start listening with cfg's [server] settings; requests are dispatched to
 * setup->routes with `broker` as context.  Returns NULL with errp set
 * (bind failure, unsafe TLS key, ...).
 */
struct http *http_create(struct broker *broker,
                         const struct http_setup *setup,
                         vnib_error_t *errp) VNIB_MUST_CHECK;

/* The bound TCP port (useful with server.port = 0). */
uint16_t http_port(const struct http *h);

/* Stop accepting connections, wait up to timeout_s for in-flight requests
 * to finish, then stop and free everything (NULL accepted).
 */
void http_destroy(struct http *h, int timeout_s);

/* Requests being handled now. */
long http_inflight(const struct http *h);

/* Request worker threads running. */
int http_worker_count(const struct http *h);

/* Write the connection budget's and the deadlines' metrics. */
void http_write_metrics(struct http *h, FILE *f);

/* Requests waiting for a request worker now. */
long http_queue_depth(const struct http *h);

/* Fail the request with a stable error code: sets errno = errnum and
 * req->error_code = code (the reply's status is the code's), and formats
 * errp with errprintf.  Always returns -1.
 *
 * The message replaces whatever errp held: request_fail is where a
 * failure starts, not where one is passed on (errprintf_first's case),
 * and the code it sets must go with its own message.  A handler never
 * refuses after a helper's failure it let pass, so nothing is lost.
 */
int request_fail(struct request *req,
                 int errnum,
                 enum errcode code,
                 vnib_error_t *errp,
                 const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));

/* Name a failure a callee reported with errno more precisely: when errno
 * is errnum, the reply's code is code (a not_found that is a
 * reservation's).  errno is kept; always returns -1.
 */
int request_code_if(struct request *req, int errnum, enum errcode code);

/* Whether req may be handed on to be finished later (request_defer()):
 * only in the pipeline, not a request made in-process (tests/inproc),
 * and not once the listener is stopping.
 */
bool request_can_defer(const struct request *req);

/* Hand req on: its connection is suspended until request_finish(), which
 * another thread calls (exactly once).  Call it before the request is
 * handed to that thread, which may finish it at once; return ROUTE_DEFERRED
 * from the route's first try.  From here on, until request_finish(), the
 * request is that thread's, as a worker's.  -1 with ESHUTDOWN when it
 * cannot be (request_can_defer() is false): the request is then still the
 * caller's, to answer now.
 */
int request_defer(struct request *req);

/* Finish a deferred request, from any thread: its outcome as a handler
 * returns it (status and out, owned by the request from here; or -1,
 * with errnum, req->error and req->error_code set by the caller), and its
 * reply is sent.  req must not be touched afterwards.
 */
void request_finish(struct request *req, int status, json_t *out, int errnum);

/* Parse the request body as a JSON object (duplicate keys refused).
 * Returns 0 with *objp a new reference, or -1 with errno EPROTO (code
 * invalid_json) and errp naming the line and column.
 */
int request_json(struct request *req, json_t **objp, vnib_error_t *errp);

/* The code of the error reply to a failed request (*codep:
 * req->error_code if the handler chose one, else errno errnum's; an errno
 * the table does not name is internal_error), and the HTTP status that
 * goes with it, returned.
 */
int request_error_status(const struct request *req,
                         int errnum,
                         enum errcode *codep);

/* A request header (case-insensitive name), or NULL. */
const char *request_header(const struct request *req, const char *name);

/* A query-string argument, or NULL. */
const char *request_query(const struct request *req, const char *name);

#endif /* !VNIB_SERVER_HTTP_H */
