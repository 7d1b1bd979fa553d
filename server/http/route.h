/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a route is, and path matching.
 *
 * Every endpoint of vnibrokerd is one row of a route table: method, path
 * pattern, handler, the roles that may call it, and the largest body it
 * accepts.  The one table is the API's (server/api/routes.c); main.c
 * hands it to the pipeline (http.c), which matches each request here,
 * enforces the body limit and roles, and calls the handler, and to the
 * request metrics, which label their series with its rows.  Handlers
 * never call libmicrohttpd, and return a status or fail with errno (see
 * http.h).
 */
#ifndef VNIB_SERVER_HTTP_ROUTE_H
#define VNIB_SERVER_HTTP_ROUTE_H

#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* A handler fills *out with the JSON reply (or sets a text body on the
 * request) and returns an HTTP status, or returns -1 with errno set and
 * errp filled; http.c turns that into the error reply.
 */
typedef int (*route_handler_f)(struct request *req,
                               json_t **out,
                               vnib_error_t *errp);

/* A route with roles == ROUTE_PUBLIC needs no credentials (liveness and
 * readiness probes and metrics scrapes).
 */
#define ROUTE_PUBLIC 0u

#define ROUTE_MAX_PARAMS 4

/* Where a route's handler runs.  A handler that may wait (on PostgreSQL,
 * the Fabric Manager, a lock) runs on a request worker, so that it never
 * holds a libmicrohttpd thread and the connections it polls; one that
 * only reads memory runs inline, on the libmicrohttpd thread, and keeps
 * answering while every worker is busy.
 */
enum route_runs {
    ROUTE_WORKER = 0, /* may block: queued for a request worker */
    ROUTE_INLINE = 1, /* never blocks: runs on the libmicrohttpd thread */
};

/* What a route's first try (route.first) returns besides a handler's
 * status or -1: ROUTE_PASS, the handler answers as usual (on a request
 * worker, for a ROUTE_WORKER route); ROUTE_DEFERRED, the request was
 * handed on (request_defer()) and is answered later (request_finish()).
 */
#define ROUTE_PASS (-2)
#define ROUTE_DEFERRED (-3)

struct route {
    const char *method;  /* "GET", "POST", ... */
    const char *pattern; /* "/v1/reservations/{job_id}" */
    route_handler_f handler;
    unsigned roles;       /* ROLE_* bits allowed, or ROUTE_PUBLIC */
    size_t max_body;      /* bytes; 0 means the route takes no body */
    enum route_runs runs; /* ROUTE_WORKER or ROUTE_INLINE */
    /* A first try on the libmicrohttpd thread, before any request worker
     * (NULL: none).  It never blocks: it answers what memory can (a node's
     * fetch the node-fetch cache holds), or hands the request on to be
     * finished elsewhere (a node report, to its group), or passes
     * (ROUTE_PASS) to the handler.  So a request it can serve never waits
     * in the workers' queue behind database writes.
     */
    route_handler_f first;
};

/* Path parameters captured by a match, borrowed from `buf`. */
struct route_params {
    int count;
    const char *names[ROUTE_MAX_PARAMS]; /* borrowed from the pattern */
    size_t name_lens[ROUTE_MAX_PARAMS];
    const char *values[ROUTE_MAX_PARAMS]; /* NUL-terminated, in buf */
    char buf[512];
};

/* A route table: rows, matched in order. */
struct route_table {
    const struct route *rows;
    size_t count;
};

/* Find the route for method and path.  Returns its index in t->rows, or
 * -1 with errno ENOENT (no pattern matches the path) or EOPNOTSUPP (the
 * path matches but not the method; `allow` then lists the methods that do,
 * comma-separated).  Paths longer than the params buffer do not match.
 */
int route_match(const struct route_table *t,
                const char *method,
                const char *path,
                struct route_params *params,
                char *allow,
                size_t allow_size);

/* The value of path parameter `name`, or NULL. */
const char *route_param(const struct route_params *params, const char *name);

#endif /* !VNIB_SERVER_HTTP_ROUTE_H */
