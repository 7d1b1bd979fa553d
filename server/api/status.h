/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handler for GET /v1/status (see server/api/openapi.yaml): everything the
 * status page at /ui/ shows but the events, in one call.
 */
#ifndef VNIB_SERVER_STATUS_H
#define VNIB_SERVER_STATUS_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/status?history_s=&quarantine_limit=&drained_limit= */
int status_get(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_STATUS_H */
