/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /v1/reservations/{job_id}/steps/{step_id}: a job step's own VNIs.
 *
 * A step is reserved only while its job's reservation is active, on nodes
 * of the job, and with no more VNIs than a CXI service holds beside the
 * job's (a step's service holds the step's VNIs and then the job's).  The
 * handler checks these against the job's reservation, and the store
 * makes the step's reservation only if that reservation is still the
 * job's active one (schema/0017); otherwise it looks again.  Replies are
 * read back after the commit, as the job routes' are.
 *
 * A job token (ROLE_JOB: Slurm's step manager on the job's batch host)
 * may use these routes for its own job only, and only while the
 * reservation it was given with is the job's active one: a job released,
 * or reserved again under the same id (requeued, ids reused), leaves its
 * old tokens behind.  The reserve pins the step to that reservation and
 * the release checks it under the job's lock, so neither acts on a newer
 * reservation of the job made meanwhile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/hostset.h"
#include "vnib/tclass.h"
#include "vnib/logger.h"
#include "server/api/cache.h"
#include "server/api/leases.h"
#include "server/config.h"
#include "server/http/http.h"
#include "server/hwcoll/hwcoll.h"
#include "server/http/params.h"
#include "server/api/steps.h"
#include "server/http/auth.h"
#include "server/store/store_reservations.h"
#include "server/store/store_steps.h"

/* Times a step reserve looks at the job again when the job was reserved
 * anew under it.
 */
#define STEP_RESERVE_TRIES 3

/* The job's reservation as a step reserve needs it: its id, and refusals
 * for a job that is not active, a step on other nodes, or too many VNIs.
 */
static int step_check_job(struct request *req,
                          const char *job_id,
                          const struct hostlist *hosts,
                          int vni_count,
                          long long *parentp,
                          vnib_error_t *errp)
{
    const struct config *cfg = req->broker->cfg;
    struct hostset *job_hosts = NULL;
    vnib_error_t why = {0};
    json_t *job = NULL;
    bool member = false;
    int rc = -1;

    if (store_get(req->broker->store, job_id, NULL, false, &job, &member, errp)
        < 0)
        return request_code_if(req, ENOENT, ERRCODE_RESERVATION_NOT_FOUND);
    const char *state = json_string_value(json_object_get(job, "state"));
    long long job_vnis = json_integer_value(json_object_get(job, "vni_count"));
    if (!state || strcmp(state, "active")) {
        request_fail(req,
                     EEXIST,
                     ERRCODE_JOB_NOT_ACTIVE,
                     errp,
                     "job %s is not active (its reservation is %s); a step "
                     "is reserved only while its job runs",
                     job_id,
                     state ? state : "unknown");
        goto done;
    }
    if (vni_count + job_vnis > VNIB_SERVICE_VNIS_MAX) {
        request_fail(req,
                     EINVAL,
                     ERRCODE_INVALID_FIELD,
                     errp,
                     "vni_count: the step's %d VNIs and job %s's %lld exceed "
                     "the %d a CXI service holds",
                     vni_count,
                     job_id,
                     job_vnis,
                     VNIB_SERVICE_VNIS_MAX);
        goto done;
    }
    /* The job's node list as ranges, not expanded: a step on a few nodes
     * of a large fragmented job costs what its own nodes cost.
     */
    job_hosts = hostset_decode(json_string_value(json_object_get(job, "nodes")),
                               (size_t)cfg->limits.hostlist_max_names,
                               &why);
    if (!job_hosts) {
        errno = EIO;
        errprintf(errp, "job %s's node list: %s", job_id, why.text);
        goto done;
    }
    for (size_t i = 0; i < hostlist_count(hosts); i++) {
        const char *name = hostlist_nth(hosts, i);
        if (!hostset_contains(job_hosts, name)) {
            request_fail(req,
                         EINVAL,
                         ERRCODE_INVALID_FIELD,
                         errp,
                         "nodes: node %s is not in job %s's node list",
                         name,
                         job_id);
            goto done;
        }
    }
    *parentp = json_integer_value(json_object_get(job, "id"));
    rc = 0;
done:
    hostset_destroy(job_hosts);
    json_decref(job);
    return rc;
}

/* A job token's refusal: 403 forbidden, saying why. */
static int job_token_refused(struct request *req,
                             const char *job_id,
                             vnib_error_t *errp)
{
    if (strcmp(req->who.job_id, job_id))
        return request_fail(req,
                            EPERM,
                            ERRCODE_FORBIDDEN,
                            errp,
                            "a job token of job %s may not use job %s's steps",
                            req->who.job_id,
                            job_id);
    return request_fail(req,
                        EPERM,
                        ERRCODE_FORBIDDEN,
                        errp,
                        "this job token is of reservation %lld of job %s, "
                        "which is not the job's active reservation (released, "
                        "or the job reserved again)",
                        req->who.resv_id,
                        job_id);
}

/* A job token's caller may use job_id's steps only when it is the
 * token's job and the token's reservation is the job's active one; any
 * other caller passes (the route's roles admitted it).
 */
static int step_job_allowed(struct request *req,
                            const char *job_id,
                            vnib_error_t *errp)
{
    bool active = false;

    if (req->who.role != ROLE_JOB)
        return 0;
    if (strcmp(req->who.job_id, job_id))
        return job_token_refused(req, job_id, errp);
    if (store_job_active_is(
            req->broker->store, job_id, req->who.resv_id, &active, errp)
        < 0)
        return -1;
    if (!active)
        return job_token_refused(req, job_id, errp);
    return 0;
}

/* The route's job and step ids, checked, and whether a job token may use
 * them.
 */
static int step_ids(struct request *req,
                    const char **jobp,
                    const char **stepp,
                    vnib_error_t *errp)
{
    *jobp = route_param(&req->params, "job_id");
    *stepp = route_param(&req->params, "step_id");
    if (params_job_id(req, *jobp, errp) < 0
        || params_step_id(req, *stepp, errp) < 0
        || step_job_allowed(req, *jobp, errp) < 0)
        return -1;
    return 0;
}

/* The step reserve body: nodes (required) and vni_count (default 0). */
static int parse_step_reserve(struct request *req,
                              json_t *body,
                              struct store_step_reserve *a,
                              vnib_error_t *errp)
{
    static const char *const allowed[] = {"nodes", "vni_count", "lease", NULL};

    a->vni_count = 0;
    if (params_known_fields(req, body, allowed, errp) < 0
        || params_body_nodes(req, body, &a->nodes, errp) < 0
        || params_body_vni_count(req, body, &a->vni_count, errp) < 0)
        return -1;
    return 0;
}

/* The error code of each refused step reserve. */
static const enum errcode step_refusal_codes[] = {
    [STORE_STEP_ACCEPTED] = ERRCODE_NONE,
    [STORE_STEP_JOB_NOT_FOUND] = ERRCODE_RESERVATION_NOT_FOUND,
    [STORE_STEP_JOB_NOT_ACTIVE] = ERRCODE_JOB_NOT_ACTIVE,
    [STORE_STEP_PARENT_CHANGED] = ERRCODE_NONE,
    [STORE_STEP_CONFLICT] = ERRCODE_RESERVATION_CONFLICT,
    [STORE_STEP_SUPERSEDED] = ERRCODE_RESERVATION_SUPERSEDED,
};

int steps_reserve(struct request *req, json_t **out, vnib_error_t *errp)
{
    const struct config *cfg = req->broker->cfg;
    struct store_step_reserve a = {0};
    struct leases_ask lease;
    enum store_step_refusal refusal = STORE_STEP_ACCEPTED;
    struct hostlist *hosts = NULL;
    json_t *body = NULL, *differs = NULL;
    char *nodes = NULL;
    bool created = false;
    int status = -1;

    if (step_ids(req, &a.job_id, &a.step_id, errp) < 0
        || request_json(req, &body, errp) < 0)
        return -1;
    if (parse_step_reserve(req, body, &a, errp) < 0
        || leases_ask(req, body, &lease, errp) < 0)
        goto done;
    if (params_nodes(req, a.nodes, &hosts, &nodes, errp) < 0)
        goto done;
    a.nodes = nodes;
    a.hosts = hosts;
    a.node_count = hostlist_count(hosts);
    a.empty_reason =
        a.vni_count == 0 ? "vni_count is 0: no VNI requested" : NULL;
    a.actor = req->who.name;
    a.pool = cfg->vni_pool;
    a.presumed = lease.want;
    a.lease_until = lease.until;
    a.lease_skew_s = lease.skew_s;
    for (int tries = 1;; tries++) {
        if (step_check_job(
                req, a.job_id, hosts, a.vni_count, &a.parent_id, errp)
            < 0)
            goto done;
        /* A job token reserves under its own reservation only, which the
         * store checks is still the job's active one as it writes.
         */
        if (req->who.role == ROLE_JOB && a.parent_id != req->who.resv_id) {
            job_token_refused(req, a.job_id, errp);
            goto done;
        }
        if (store_step_reserve(
                req->broker->store, &a, out, &created, &refusal, errp)
            == 0)
            break;
        if (refusal == STORE_STEP_PARENT_CHANGED && tries < STEP_RESERVE_TRIES)
            continue;
        req->error_code = step_refusal_codes[refusal];
        request_code_if(req, ENOSPC, ERRCODE_VNI_POOL_EXHAUSTED);
        goto done;
    }
    status = created ? 201 : 200;
    /* A retry whose lease differed (a plugin reloaded with other
     * settings): logged, and put back in the reply after the lease, which
     * holds the step alone (as a job's reserve does).
     */
    if ((differs = json_incref(json_object_get(*out, STORE_DIFFERS)))) {
        json_object_del(*out, STORE_DIFFERS);
        logger_printf(
            req->broker->log,
            LOG_WARNING,
            req->id,
            "reservation %s step %s: a reserve by %s found the "
            "step's active reservation %lld (same nodes and VNI "
            "count) and is answered with it; the request differs "
            "in lease (asked %s, the step is presumed now)",
            a.job_id,
            a.step_id,
            a.actor,
            (long long)json_integer_value(json_object_get(*out, "id")),
            a.presumed ? "one" : "none");
    }
    cache_forget(req->broker->cache, a.job_id, a.step_id);
    /* Only schedulers, admins and the job's own job token reserve: they
     * may see the job's session token (never in the lease, made after).
     */
    hwcoll_reveal(req->broker->hwcoll, *out, true);
    if (leases_add(req, *out, &lease, errp) < 0
        || (differs && json_object_set(*out, STORE_DIFFERS, differs) < 0
            && (errno = ENOMEM, errprintf(errp, "out of memory")))) {
        json_decref(*out);
        *out = NULL;
        status = -1;
    }
done:
    json_decref(differs);
    free(nodes);
    hostlist_destroy(hosts);
    json_decref(body);
    return status;
}

/* A node's fetch of a step that does not include it: 403. */
static int step_not_member(struct request *req,
                           const char *job_id,
                           const char *step_id,
                           vnib_error_t *errp)
{
    return request_fail(req,
                        EPERM,
                        ERRCODE_FORBIDDEN,
                        errp,
                        "node %s is not in step %s of job %s's node list",
                        req->who.node,
                        step_id,
                        job_id);
}

int steps_get_first(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id = route_param(&req->params, "job_id");
    const char *step_id = route_param(&req->params, "step_id");
    bool member = false;

    (void)out;
    /* Nodes only (a job token's check reads the database); the cache
     * holds only keys of valid ids, and only active steps.
     */
    if (req->who.role != ROLE_NODE
        || !cache_answer_now(req->broker->cache, req, job_id, step_id, &member))
        return ROUTE_PASS;
    return member ? 200 : step_not_member(req, job_id, step_id, errp);
}

int steps_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id, *step_id;
    bool is_node = req->who.role == ROLE_NODE;
    struct cache_fill fill = {0};
    bool member = false;

    if (step_ids(req, &job_id, &step_id, errp) < 0)
        return -1;
    /* A step's nodes fetch it at its start, thousands at once: as a job's
     * (reservations_get), from the cache when it can answer, by the
     * step's own node list.
     */
    if (is_node
        && cache_answer(
            req->broker->cache, req, job_id, step_id, &member, &fill)) {
        if (member)
            return 200;
    } else {
        int got = store_step_get(req->broker->store,
                                 job_id,
                                 step_id,
                                 is_node ? req->who.node : NULL,
                                 out,
                                 &member,
                                 errp);
        /* Monitors never see secrets; nodes only as the step's, job
         * tokens as the job's own (step_ids checked them). */
        if (got == 0)
            hwcoll_reveal(
                req->broker->hwcoll,
                *out,
                req->who.role != ROLE_MONITOR && (!is_node || member));
        if (is_node)
            cache_keep(req->broker->cache,
                       req,
                       job_id,
                       step_id,
                       out,
                       got == 0 && member,
                       &fill);
        if (got < 0)
            return request_code_if(req, ENOENT, ERRCODE_RESERVATION_NOT_FOUND);
    }
    if (is_node && !member) {
        json_decref(*out);
        *out = NULL;
        return step_not_member(req, job_id, step_id, errp);
    }
    return 200;
}

int steps_release(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id, *step_id;
    enum store_step_outcome outcome = STORE_STEP_NOT_FOUND;
    json_t *res = NULL;
    bool force = false;

    if (step_ids(req, &job_id, &step_id, errp) < 0
        || params_query_bool(req, "force", &force, errp) < 0
        || params_force(req, force, errp) < 0)
        return -1;
    if (store_step_free(req->broker->store,
                        job_id,
                        step_id,
                        req->who.role == ROLE_JOB ? req->who.resv_id : 0,
                        req->who.name,
                        force,
                        &outcome,
                        &res,
                        errp)
        < 0) {
        if (outcome == STORE_STEP_NOT_CURRENT)
            return job_token_refused(req, job_id, errp);
        return request_code_if(req, ENOENT, ERRCODE_RESERVATION_NOT_FOUND);
    }
    cache_forget(req->broker->cache, job_id, step_id);
    /* An unknown step, or a job without hardware collectives, is not an
     * error: there is simply nothing for the Fabric Manager to free.
     */
    if (!(*out =
              json_pack("{s:s, s:s, s:s, s:o}",
                        "job_id",
                        job_id,
                        "step_id",
                        step_id,
                        "outcome",
                        outcome == STORE_STEP_QUEUED ? "queued" : "no_hwcoll",
                        "reservation",
                        res ? res : json_null())))
        return errprintf(errp, "out of memory");
    return 202;
}
