/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handlers for /v1/pool and /v1/vnis (see server/api/openapi.yaml). */
#ifndef VNIB_SERVER_POOL_H
#define VNIB_SERVER_POOL_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/pool: configured ranges and occupancy. */
int pool_get(struct request *req, json_t **out, vnib_error_t *errp);

/* The same object (GET /v1/status embeds it): 0 with *out a new
 * reference, or -1.
 */
int pool_object(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /v1/vnis/{vni}: who holds a VNI or last held it (admin). */
int pool_vni(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_POOL_H */
