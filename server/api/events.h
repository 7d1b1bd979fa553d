/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handler for /v1/events, the audit trail (see server/api/openapi.yaml). */
#ifndef VNIB_SERVER_EVENTS_H
#define VNIB_SERVER_EVENTS_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/events?job_id=&after=&limit= (admin). */
int events_list(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_EVENTS_H */
