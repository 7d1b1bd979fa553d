/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handlers for /v1/nodes (see server/api/openapi.yaml). */
#ifndef VNIB_SERVER_NODES_H
#define VNIB_SERVER_NODES_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/nodes/{node}: the node's live reservations and drain state. */
int nodes_get(struct request *req, json_t **out, vnib_error_t *errp);

/* The view GET /v1/nodes/{node} answers, of a valid node name, for
 * GET /v1/search too.  0, or -1 with errno and errp set.
 */
int nodes_view(struct request *req,
               const char *node,
               json_t **out,
               vnib_error_t *errp);

/* DELETE /v1/nodes/{node}/drain: clear the drained mark (admin). */
int nodes_undrain(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_NODES_H */
