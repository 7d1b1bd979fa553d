/* Handler for /v1/fabric-manager (see server/openapi.yaml). */
#ifndef VNIB_SERVER_FABRIC_H
#define VNIB_SERVER_FABRIC_H

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* GET /v1/fabric-manager: configuration (no secrets), connection state,
 * last success and error, live reservations by hwcoll state.
 */
int fabric_get(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_FABRIC_H */
