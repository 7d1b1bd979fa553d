/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /v1/pool and /v1/vnis: the VNI pool as the database sees it.
 *
 * Occupancy is counted from vni_holds against the pool configured now, so
 * that after a pool change the VNIs still held outside it show up as
 * outside_pool until their reservations are released.
 */
#include <errno.h>
#include <stdlib.h>

#include "server/config.h"
#include "server/http/http.h"
#include "server/http/params.h"
#include "server/api/pool.h"
#include "server/store/store_pool.h"

int pool_object(struct request *req, json_t **out, vnib_error_t *errp)
{
    const struct config *cfg = req->broker->cfg;
    if (store_pool(req->broker->store, cfg->vni_pool, out, errp) < 0)
        return -1;
    json_object_set_new(
        *out, "per_job_default", json_integer(cfg->vni.per_job_default));
    return 0;
}

int pool_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    if (pool_object(req, out, errp) < 0)
        return -1;
    return 200;
}

int pool_vni(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *v = route_param(&req->params, "vni");
    char *end;
    long vni = v ? strtol(v, &end, 10) : -1;

    if (!v || *v == '\0' || *end || vni < 0 || vni > 65535)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "vni must be an integer in 0-65535");
    if (store_vni(
            req->broker->store, (int)vni, req->broker->cfg->vni_pool, out, errp)
        < 0)
        return -1;
    return 200;
}
