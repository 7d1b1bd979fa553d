/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /v1/fabric-manager: how the broker's Fabric Manager connection fares.
 *
 * Monitors may read it: it names the Fabric Manager and its auth mode but
 * never a credential or a session token.  Only admins see the text of
 * the last FM error; every role its reason, the failure's class and HTTP
 * status ("Fabric Manager unavailable (HTTP 503)").
 */
#include "server/api/fabric.h"
#include "server/http/http.h"
#include "server/hwcoll/hwcoll.h"

int fabric_object(struct request *req, json_t **out, vnib_error_t *errp)
{
    return hwcoll_status(
        req->broker->hwcoll, req->who.role == ROLE_ADMIN, out, errp);
}

int fabric_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    if (fabric_object(req, out, errp) < 0)
        return -1;
    return 200;
}
