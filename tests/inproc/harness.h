/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A broker without its listener, for calling the handlers in-process.
 *
 * harness_create() builds a struct broker the way server/main.c does (the
 * configuration from TOML text, the store against the PostgreSQL that
 * VNIB_TEST_CONNINFO names, the migrations applied, the pool synced, the
 * node cache, hwcoll as configured: disabled unless the TOML enables it),
 * but starts no HTTP listener.  harness_call() builds a struct request by
 * hand, as the pipeline in server/http/http.c would (the route found with
 * routes_match, the path parameters, the caller's identity, the body, the
 * query arguments through the request's own table), calls the route's
 * handler and returns the HTTP status of its reply.  Roles are checked by
 * the pipeline, not by handlers: harness_call() calls the handler whatever
 * the route allows, so tests read the route table for those.
 */
#ifndef VNIB_TESTS_INPROC_HARNESS_H
#define VNIB_TESTS_INPROC_HARNESS_H

#include <jansson.h>

#include "server/broker.h"

struct harness;

/* The caller of a request: a role bit (ROLE_*) and a token name; a node
 * caller's name is its node name (the identity becomes "node:<node>").
 */
struct harness_caller {
    unsigned role;
    const char *name;
};

/* A broker on the test database, configured by toml (appended to the
 * [database] table harness_create writes; may open tables of its own).
 * Returns NULL with a message on stderr (no VNIB_TEST_CONNINFO, a bad
 * configuration, the database unreachable).
 */
struct harness *harness_create(const char *toml);

/* Stop and free everything (NULL accepted). */
void harness_destroy(struct harness *h);

/* The broker the handlers see. */
struct broker *harness_broker(struct harness *h);

/* A request: `method` `target` (a path, with an optional
 * "?name=value&..." query, not percent-decoded) as `who`, with body (or
 * NULL).
 */
struct harness_req {
    const char *method;
    const char *target;
    struct harness_caller who;
    const char *body;
};

/* Call the route's handler for rq.  Returns the HTTP status: the
 * handler's, or the error reply's (request_error_status: the errno table
 * and the handler's error code), or 404/405 when no route matches.  *outp
 * gets the JSON reply, owned by the caller (also when the handler gave
 * it as rendered text, as for a node's fetch of a job); an error's is
 * {"error": {"code", "message"}} as the pipeline renders it, without
 * request_id.
 */
int harness_call(struct harness *h, struct harness_req rq, json_t **outp);

#endif /* !VNIB_TESTS_INPROC_HARNESS_H */
