/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handlers for /v1/reservations/{job_id}/steps/{step_id} (see
 * server/api/openapi.yaml): a job step's own VNIs.  A step's node reports go
 * to reservations_report (server/api/reservations.h).
 */
#ifndef VNIB_SERVER_STEPS_H
#define VNIB_SERVER_STEPS_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* PUT: reserve for a step of an active job; 201 created, 200 the same
 * one existed.
 */
int steps_reserve(struct request *req, json_t **out, vnib_error_t *errp);

/* GET: the step's newest reservation. */
int steps_get(struct request *req, json_t **out, vnib_error_t *errp);

/* Its first try (route.first): a node's fetch the node-fetch cache holds,
 * answered on the libmicrohttpd thread; anything else passes.
 */
int steps_get_first(struct request *req, json_t **out, vnib_error_t *errp);

/* DELETE: queue the release of the step's multicast trees and release
 * its reservation, if it has one; 202.
 */
int steps_release(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_STEPS_H */
