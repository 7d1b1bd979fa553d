/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handler for /v1/fabric-manager (see server/api/openapi.yaml). */
#ifndef VNIB_SERVER_FABRIC_H
#define VNIB_SERVER_FABRIC_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/fabric-manager: configuration (no secrets), connection state,
 * last success and error, live reservations by hwcoll state.
 */
int fabric_get(struct request *req, json_t **out, vnib_error_t *errp);

/* The same object, for the caller's role (GET /v1/status embeds it):
 * 0 with *out a new reference, or -1.
 */
int fabric_object(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_FABRIC_H */
