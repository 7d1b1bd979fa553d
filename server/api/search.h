/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Handler for GET /v1/search (see server/api/openapi.yaml): the status
 * page's search box, one name looked up as a job id and as a node name in
 * one call, so that a name that is only one of them is no error.
 */
#ifndef VNIB_SERVER_SEARCH_H
#define VNIB_SERVER_SEARCH_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/search?q=NAME&limit=N */
int search_get(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_SEARCH_H */
