/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Operational endpoints: liveness, readiness and metrics, and the
 * caller's own identity.
 *
 * The first three are public (no token) so that load balancers, systemd
 * watchdogs and Prometheus can reach them; they reveal no reservation
 * data.  /v1/whoami needs a token and tells its holder only what its own
 * token is.
 */
#ifndef VNIB_SERVER_OPS_H
#define VNIB_SERVER_OPS_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /healthz: 200 while the process serves requests. */
int ops_healthz(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /readyz: 200 when the database answers and the schema is current,
 * else 503 with the reason.
 */
int ops_readyz(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /metrics: Prometheus text exposition. */
int ops_metrics(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /v1/whoami: the caller's token name and role, from memory (a
 * scheduler plugin learns the name its reservations are made under
 * before it has made any, for its reconcile; an admin checks a token). */
int ops_whoami(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_OPS_H */
