/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GET /v1/search: what the broker knows of one name, as a job id (the
 * job's current reservation, never its session token, and its nodes by
 * their last report) and as a node name (the node's view: drain, the live
 * reservations whose services it may hold, whether the inventory lists
 * it).  A name is looked up only as what it is valid as; one valid as
 * neither finds nothing, and the reply says which it could be.  The job's
 * and the node's events are GET /v1/events's.
 */
#include <errno.h>
#include <stdbool.h>

#include "vnib/token.h"
#include "server/http/http.h"
#include "server/http/params.h"
#include "server/hwcoll/hwcoll.h"
#include "server/api/nodes.h"
#include "server/api/search.h"
#include "server/store/store_reservations.h"

/* params_job_id()'s rule, as a question. */
static bool job_id_ok(const char *q)
{
    return token_job_id_valid(q) && q[0] != '-';
}

/* The job's reservation and its nodes, or both NULL when it has none. */
static int find_job(struct request *req,
                    const char *q,
                    long long limit,
                    json_t **jobp,
                    json_t **nodesp,
                    vnib_error_t *errp)
{
    bool member = false;

    if (store_get(req->broker->store, q, NULL, true, jobp, &member, errp) < 0)
        return errno == ENOENT ? 0 : -1;
    /* Not even an admin's search shows a session token. */
    hwcoll_reveal(req->broker->hwcoll, *jobp, false);
    if (store_job_nodes(req->broker->store, q, (size_t)limit, nodesp, errp) < 0
        && errno != ENOENT)
        return -1;
    return 0;
}

int search_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *q = request_query(req, "q");
    long long limit = 200;
    json_t *qs = NULL, *job = NULL, *nodes = NULL, *node = NULL;
    int status = -1;

    if (params_query_ll(req, "limit", 1, 10000, &limit, errp) < 0)
        return -1;
    if (!q || !*q)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "q is required: a job id or a node name");
    /* Echoed in the reply, so it must be text JSON can carry (%ff is not);
     * neither a job id nor a node name can be anything but ASCII.
     */
    if (!(qs = json_string(q)))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "q must be UTF-8 text: a job id or a node name");
    bool as_job = job_id_ok(q);
    bool as_node = token_node_name_valid(q);
    if ((as_job && find_job(req, q, limit, &job, &nodes, errp) < 0)
        || (as_node && nodes_view(req, q, &node, errp) < 0))
        goto cleanup;
    *out = json_pack("{s:o, s:b, s:b, s:o, s:o, s:o}",
                     "q",
                     qs,
                     "job_id_valid",
                     as_job,
                     "node_name_valid",
                     as_node,
                     "job",
                     job ? job : json_null(),
                     "job_nodes",
                     nodes ? nodes : json_null(),
                     "node",
                     node ? node : json_null());
    /* json_pack()'s "o" took them, even on failure */
    qs = NULL;
    job = NULL;
    nodes = NULL;
    node = NULL;
    if (!*out) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    status = 200;
cleanup:
    json_decref(qs);
    json_decref(job);
    json_decref(nodes);
    json_decref(node);
    return status;
}
