/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /v1/events: every state change, who made it and when, oldest first (or
 * newest first), filtered by job, action or node.
 *
 * The trail is written by the store in the same transaction as the change
 * it records, so it can be trusted to be complete.  Every reader role may
 * read it: the status page shows it to monitors.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "server/api/events.h"
#include "server/http/http.h"
#include "server/http/params.h"
#include "server/store/store_pool.h"

/* The actions the store records (schema/): the `action` filter's values. */
static const char *const actions[] = {
    "reserve",
    "release",
    "report",
    "quarantine_end",
    "force",
    "drain",
    "undrain",
    "hwcoll",
    "step_release",
};

static int check_action(struct request *req,
                        const char *action,
                        vnib_error_t *errp)
{
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
        if (strcmp(action, actions[i]) == 0)
            return 0;
    return request_fail(req,
                        EINVAL,
                        ERRCODE_INVALID_FIELD,
                        errp,
                        "query argument 'action' must be one of reserve, "
                        "release, report, quarantine_end, force, drain, "
                        "undrain, hwcoll, step_release");
}

/* order=asc|desc into *descp. */
static int check_order(struct request *req, bool *descp, vnib_error_t *errp)
{
    const char *order = request_query(req, "order");

    *descp = false;
    if (!order || strcmp(order, "asc") == 0)
        return 0;
    if (strcmp(order, "desc") == 0) {
        *descp = true;
        return 0;
    }
    return request_fail(req,
                        EINVAL,
                        ERRCODE_INVALID_FIELD,
                        errp,
                        "query argument 'order' must be asc or desc");
}

int events_list(struct request *req, json_t **out, vnib_error_t *errp)
{
    struct store_events_query q = {
        .job_id = request_query(req, "job_id"),
        .action = request_query(req, "action"),
        .node = request_query(req, "node"),
    };
    long long after = 0, limit = 100;

    if (q.job_id && params_job_id(req, q.job_id, errp) < 0)
        return -1;
    if (q.action && check_action(req, q.action, errp) < 0)
        return -1;
    if (q.node && params_node(req, "query argument 'node'", q.node, errp) < 0)
        return -1;
    if (check_order(req, &q.desc, errp) < 0
        || params_query_ll(req, "after", 0, INT64_MAX, &after, errp) < 0
        || params_query_ll(req, "limit", 1, 1000, &limit, errp) < 0)
        return -1;
    q.after = after;
    q.limit = (int)limit;
    if (store_events(req->broker->store, &q, out, errp) < 0)
        return -1;
    return 200;
}
