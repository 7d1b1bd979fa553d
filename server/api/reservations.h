/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handlers for /v1/reservations (see server/api/openapi.yaml). */
#ifndef VNIB_SERVER_RESERVATIONS_H
#define VNIB_SERVER_RESERVATIONS_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* POST /v1/reservations: 201 created, 200 the same one existed. */
int reservations_create(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /v1/reservations/{job_id}: the job's newest reservation. */
int reservations_get(struct request *req, json_t **out, vnib_error_t *errp);

/* Its first try (route.first): a node's fetch the node-fetch cache
 * holds, answered on the libmicrohttpd thread; anything else passes.
 */
int reservations_get_first(struct request *req,
                           json_t **out,
                           vnib_error_t *errp);

/* GET /v1/reservations: a page, filtered by state, node and uid. */
int reservations_list(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /v1/reservations/{job_id}/nodes: the job's nodes by their last
 * report (pending, creating, created, destroyed, failed), and the reports,
 * failed first, at most ?limit= (1-10000, default 1000) of them.
 */
int reservations_nodes(struct request *req, json_t **out, vnib_error_t *errp);

/* DELETE /v1/reservations/{job_id}: 202 quarantined, 200 released. */
int reservations_release(struct request *req, json_t **out, vnib_error_t *errp);

/* PUT /v1/reservations/{job_id}/nodes/{node}, and
 * /v1/reservations/{job_id}/steps/{step_id}/nodes/{node} for a step's
 * services: a node's CXI report.
 */
int reservations_report(struct request *req, json_t **out, vnib_error_t *errp);

/* Its first try (route.first): with report groups (database.
 * report_group_max > 1), the report checked on the libmicrohttpd thread
 * and posted to its group (store_report_post), the request finished from
 * the group's thread; otherwise it passes to reservations_report.
 */
int reservations_report_first(struct request *req,
                              json_t **out,
                              vnib_error_t *errp);

#endif /* !VNIB_SERVER_RESERVATIONS_H */
