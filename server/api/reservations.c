/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /v1/reservations: reserve, read, list, release, and node reports.
 *
 * Handlers validate everything they are given (fields, types, ranges,
 * hostlist size), decide what the caller's role may see, and hand a
 * validated request to the store, which does the work in one committed
 * transaction.  The reply is the reservation as the store read it back
 * after the commit, so what a client sees is what is durable.  A reserve's
 * reply alone, to the scheduler or admin that made it, carries the job
 * token of the reservation (when node keys are configured): the
 * credential Slurm's step manager uses for the job's steps.  No other
 * reply, log line or event holds it.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"
#include "vnib/hostlist.h"
#include "vnib/logger.h"
#include "server/api/cache.h"
#include "server/api/leases.h"
#include "server/config.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/hwcoll/hwcoll.h"
#include "server/inventory.h"
#include "server/http/params.h"
#include "server/http/ratelimit.h"
#include "server/api/reservations.h"
#include "server/store/store_nodes.h"
#include "server/store/store_reservations.h"

/* Largest number of service entries a node report may carry. */
#define REPORT_MAX_SERVICES 64

static bool user_valid(const char *s)
{
    size_t n = strspn(s,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._@$-");
    return n > 0 && n <= 64 && s[n] == '\0';
}

/* Pull and check the reserve body's fields. */
static int parse_reserve(struct request *req,
                         json_t *body,
                         struct store_reserve *a,
                         vnib_error_t *errp)
{
    static const char *const allowed[] = {
        "job_id", "uid", "user", "nodes", "vni_count", "hwcoll", "lease", NULL};
    json_t *v;

    if (params_known_fields(req, body, allowed, errp) < 0)
        return -1;
    v = json_object_get(body, "job_id");
    if (!json_is_string(v))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "job_id must be a string");
    a->job_id = json_string_value(v);
    if (params_job_id(req, a->job_id, errp) < 0)
        return -1;
    v = json_object_get(body, "uid");
    if (!json_is_integer(v) || json_integer_value(v) < 0
        || json_integer_value(v) > 4294967294LL)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "uid must be an integer in 0-4294967294");
    a->uid = json_integer_value(v);
    v = json_object_get(body, "user");
    if (!json_is_string(v) || !user_valid(json_string_value(v)))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "user must be 1-64 characters from "
                            "[A-Za-z0-9._@$-]");
    a->user = json_string_value(v);
    a->vni_count = (int)req->broker->cfg->vni.per_job_default;
    if (params_body_nodes(req, body, &a->nodes, errp) < 0
        || params_body_vni_count(req, body, &a->vni_count, errp) < 0)
        return -1;
    a->hwcoll_mode = "auto";
    if ((v = json_object_get(body, "hwcoll"))) {
        const char *m = json_string_value(v);
        if (!m || (strcmp(m, "auto") && strcmp(m, "on") && strcmp(m, "off")))
            return request_fail(req,
                                EINVAL,
                                ERRCODE_INVALID_FIELD,
                                errp,
                                "hwcoll must be \"auto\", \"on\" or \"off\"");
        a->hwcoll_mode = m;
    }
    return 0;
}

/* Add "job_token", the job token of the reservation res (a reserve's
 * reply), when the broker has a node key; nothing without one.
 */
static int add_job_token(struct request *req,
                         json_t *res,
                         const char *job_id,
                         vnib_error_t *errp)
{
    char token[TOKEN_JOB_SIZE];
    long long id = json_integer_value(json_object_get(res, "id"));
    int rc = -1;

    if (!auth_nodes_enabled(req->broker->auth))
        return 0;
    if (auth_job_token(
            req->broker->auth, id, job_id, token, sizeof(token), errp)
        < 0)
        return -1;
    if (json_object_set_new(res, "job_token", json_string(token)) < 0) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 0;
done:
    vnib_memburn(token, sizeof(token));
    return rc;
}

/* Append ", NAME (OLD -> NEW)" to buf[*len..size): one field a reserve
 * asked differently from the reservation it found.
 */
static void differs_put(char *buf,
                        size_t size,
                        size_t *len,
                        const char *name,
                        const char *was,
                        const char *now)
{
    if (*len >= size)
        return;
    int n = snprintf(buf + *len,
                     size - *len,
                     "%s%s (%s -> %s)",
                     *len ? ", " : "",
                     name,
                     was ? was : "?",
                     now ? now : "?");
    *len = n < 0 ? size : *len + (size_t)n;
}

/* Log what a reserve of job a->job_id asked differently from its active
 * reservation res, which it was answered (differs: the field names): a
 * recovering scheduler whose settings changed, worth an operator's look.
 */
static void differs_log(struct request *req,
                        const struct store_reserve *a,
                        const json_t *res,
                        const json_t *differs)
{
    char buf[768] = "", was[32], now[32];
    size_t len = 0, i;
    json_t *v;

    json_array_foreach (differs, i, v) {
        const char *name = json_string_value(v);
        if (!name)
            continue;
        if (!strcmp(name, "user"))
            differs_put(buf,
                        sizeof(buf),
                        &len,
                        name,
                        json_string_value(json_object_get(res, "user")),
                        a->user);
        else if (!strcmp(name, "vni_count")) {
            snprintf(was,
                     sizeof(was),
                     "%lld",
                     (long long)json_integer_value(
                         json_object_get(res, "vni_count")));
            snprintf(now, sizeof(now), "%d", a->vni_count);
            differs_put(buf, sizeof(buf), &len, name, was, now);
        } else if (!strcmp(name, "hwcoll"))
            differs_put(buf,
                        sizeof(buf),
                        &len,
                        name,
                        json_string_value(json_object_get(
                            json_object_get(res, "hwcoll"), "mode")),
                        a->hwcoll_mode);
        else if (!strcmp(name, "lease"))
            differs_put(
                buf,
                sizeof(buf),
                &len,
                name,
                a->presumed ? "false" : "true",
                a->presumed ? "true, now presumed" : "false, stays presumed");
        else if (!strcmp(name, "tcs_mask")) {
            snprintf(now, sizeof(now), "0x%x", a->tcs_mask);
            differs_put(buf,
                        sizeof(buf),
                        &len,
                        name,
                        json_string_value(json_object_get(res, "tcs_mask")),
                        now);
        } else
            differs_put(buf, sizeof(buf), &len, name, NULL, NULL);
    }
    logger_printf(req->broker->log,
                  LOG_WARNING,
                  req->id,
                  "reservation %s: a reserve by %s found the job's active "
                  "reservation %lld (same scheduler, uid and nodes) and is "
                  "answered with it as it is; the request differs in %s",
                  a->job_id,
                  a->actor,
                  (long long)json_integer_value(json_object_get(res, "id")),
                  buf);
}

int reservations_create(struct request *req, json_t **out, vnib_error_t *errp)
{
    const struct config *cfg = req->broker->cfg;
    struct store_reserve a = {0};
    struct leases_ask lease;
    struct inventory_verdict known;
    struct hostlist *hosts = NULL;
    json_t *body = NULL, *differs = NULL;
    char *nodes = NULL;
    bool created = false;
    int status = -1;

    if (request_json(req, &body, errp) < 0)
        return -1;
    if (parse_reserve(req, body, &a, errp) < 0
        || leases_ask(req, body, &lease, errp) < 0)
        goto done;
    if (params_nodes(req, a.nodes, &hosts, &nodes, errp) < 0)
        goto done;
    if (inventory_check(req->broker->inv, hosts, &known, errp) < 0) {
        req->error_code = ERRCODE_INVALID_FIELD;
        goto done;
    }
    a.nodes = nodes;
    a.hosts = hosts;
    a.node_count = hostlist_count(hosts);
    a.tcs_mask = cfg->tcs_mask;
    a.empty_reason =
        a.vni_count == 0 ? "vni_count is 0: no VNI requested" : NULL;
    a.actor = req->who.name;
    a.pool = cfg->vni_pool;
    a.deadline_ns = req->deadline_ns;
    /* The lease's expiry is written with the reservation, before the
     * lease is signed: its VNIs never leave the cool-down before it.
     */
    a.presumed = lease.want;
    a.lease_until = lease.until;
    a.lease_skew_s = lease.skew_s;
    char fm_job_id[300];
    hwcoll_plan(
        req->broker->hwcoll, a.hwcoll_mode, &a, fm_job_id, sizeof(fm_job_id));
    if (store_reserve(req->broker->store, &a, out, &created, errp) < 0) {
        request_code_if(req, EEXIST, ERRCODE_RESERVATION_CONFLICT);
        request_code_if(req, EALREADY, ERRCODE_RESERVATION_SUPERSEDED);
        request_code_if(req, ENOSPC, ERRCODE_VNI_POOL_EXHAUSTED);
        goto done;
    }
    status = created ? 201 : 200;
    if (created)
        inventory_warn(req->broker->log, req->id, a.job_id, &known);
    /* A recovery that asked differently: logged, and put back in the
     * reply after the lease, which holds the reservation alone.
     */
    if ((differs = json_incref(json_object_get(*out, STORE_DIFFERS)))) {
        json_object_del(*out, STORE_DIFFERS);
        differs_log(req, &a, *out, differs);
    }
    /* A requeue: this broker's next answers are the new reservation's,
     * and the steps of the old one are gone with it.
     */
    cache_forget(req->broker->cache, a.job_id, NULL);
    /* The VNIs are committed; now the Fabric Manager, which may fail or
     * be slow without failing the reservation.  Only schedulers and
     * admins reserve, and they may see the session token.
     */
    if (created)
        hwcoll_reserve(req->broker->hwcoll, req->who.name, out);
    hwcoll_reveal(req->broker->hwcoll, *out, true);
    /* The reservation is committed: a failure here (out of memory) is a
     * 500, and the scheduler's retry finds the same reservation (and
     * signs another lease).  The lease is made from the reply as the
     * Fabric Manager left it, before the job token joins it.
     */
    if (leases_add(req, *out, &lease, errp) < 0
        || add_job_token(req, *out, a.job_id, errp) < 0
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

/* A node's fetch of a job that does not include it: 403. */
static int not_member(struct request *req,
                      const char *job_id,
                      vnib_error_t *errp)
{
    return request_fail(req,
                        EPERM,
                        ERRCODE_FORBIDDEN,
                        errp,
                        "node %s is not in job %s's node list",
                        req->who.node,
                        job_id);
}

int reservations_get_first(struct request *req,
                           json_t **out,
                           vnib_error_t *errp)
{
    const char *job_id = route_param(&req->params, "job_id");
    bool member = false;

    (void)out;
    /* The cache holds only keys of valid ids, and only active jobs. */
    if (req->who.role != ROLE_NODE
        || !cache_answer_now(req->broker->cache, req, job_id, NULL, &member))
        return ROUTE_PASS;
    return member ? 200 : not_member(req, job_id, errp);
}

int reservations_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id = route_param(&req->params, "job_id");
    bool is_node = req->who.role == ROLE_NODE;
    struct cache_fill fill = {0};
    bool member = false;

    if (params_job_id(req, job_id, errp) < 0)
        return -1;
    /* Nodes fetch at job start, thousands at once: they are answered from
     * the cache when they can be (the reply as rendered once, membership
     * by the job's node ranges), get no cleanup counts (which cost a scan
     * of the job's reports) and only see jobs that include them.
     */
    if (is_node
        && cache_answer(
            req->broker->cache, req, job_id, NULL, &member, &fill)) {
        if (member)
            return 200;
    } else {
        int got = store_get(req->broker->store,
                            job_id,
                            is_node ? req->who.node : NULL,
                            !is_node,
                            out,
                            &member,
                            errp);
        /* Monitors never see secrets; nodes only get here as members. */
        if (got == 0)
            hwcoll_reveal(
                req->broker->hwcoll, *out, req->who.role != ROLE_MONITOR);
        /* A node's reply is rendered once, for this reply and the cache,
         * and the fetches of the job that wait for this read go on.
         */
        if (is_node)
            cache_keep(req->broker->cache,
                       req,
                       job_id,
                       NULL,
                       out,
                       got == 0 && member,
                       &fill);
        if (got < 0)
            return request_code_if(req, ENOENT, ERRCODE_RESERVATION_NOT_FOUND);
    }
    if (is_node && !member) {
        json_decref(*out);
        *out = NULL;
        return not_member(req, job_id, errp);
    }
    return 200;
}

int reservations_nodes(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id = route_param(&req->params, "job_id");
    long long limit = 1000;

    if (params_job_id(req, job_id, errp) < 0
        || params_query_ll(req, "limit", 1, 10000, &limit, errp) < 0)
        return -1;
    if (store_job_nodes(req->broker->store, job_id, (size_t)limit, out, errp)
        < 0)
        return request_code_if(req, ENOENT, ERRCODE_RESERVATION_NOT_FOUND);
    return 200;
}

int reservations_list(struct request *req, json_t **out, vnib_error_t *errp)
{
    struct store_list q = {.uid = -1, .after = 0, .limit = 100};
    long long limit = 100;
    const char *state = request_query(req, "state");
    const char *node = request_query(req, "node");

    if (state && strcmp(state, "active") && strcmp(state, "releasing")
        && strcmp(state, "released"))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "state must be active, releasing or released");
    if (node && params_node(req, "node", node, errp) < 0)
        return -1;
    if (params_query_ll(req, "uid", 0, 4294967294LL, &q.uid, errp) < 0
        || params_query_ll(req, "after", 0, INT64_MAX, &q.after, errp) < 0
        || params_query_ll(req, "limit", 1, 1000, &limit, errp) < 0)
        return -1;
    q.state = state;
    q.node = node;
    q.limit = (int)limit;
    if (store_list(req->broker->store, &q, out, errp) < 0)
        return -1;
    return 200;
}

int reservations_release(struct request *req, json_t **out, vnib_error_t *errp)
{
    const char *job_id = route_param(&req->params, "job_id");
    bool force = false;
    bool done = false;
    long long res = 0;

    if (params_job_id(req, job_id, errp) < 0
        || params_query_bool(req, "force", &force, errp) < 0
        || params_query_ll(req, "reservation_id", 1, INT64_MAX, &res, errp) < 0
        || params_force(req, force, errp) < 0)
        return -1;
    if (store_release(req->broker->store,
                      job_id,
                      res,
                      req->who.name,
                      force,
                      out,
                      &done,
                      errp)
        < 0)
        return request_code_if(req, ENOENT, ERRCODE_RESERVATION_NOT_FOUND);
    /* A release that queued Fabric Manager work committed a NOTIFY
     * vnib_fm, which wakes a queue worker on every replica: no kick here,
     * which would wake every worker for every release, FM work or not.
     */
    /* The job, and its steps, which are released with it. */
    cache_forget(req->broker->cache, job_id, NULL);
    return done ? 200 : 202;
}

/* Check a report's services array and return it as compact JSON text. */
static char *report_services(struct request *req,
                             json_t *services,
                             vnib_error_t *errp)
{
    static const char *const allowed[] = {"device", "svc_id", NULL};
    size_t i;
    json_t *svc;

    if (!services)
        return strdup("[]");
    if (!json_is_array(services)
        || json_array_size(services) > REPORT_MAX_SERVICES) {
        request_fail(req,
                     EINVAL,
                     ERRCODE_INVALID_FIELD,
                     errp,
                     "services must be an array of at most %d objects",
                     REPORT_MAX_SERVICES);
        return NULL;
    }
    json_array_foreach (services, i, svc) {
        json_t *dev = json_object_get(svc, "device");
        json_t *id = json_object_get(svc, "svc_id");
        if (!json_is_object(svc)) {
            request_fail(req,
                         EINVAL,
                         ERRCODE_INVALID_FIELD,
                         errp,
                         "services[%zu] must be an object with device and "
                         "svc_id",
                         i);
            return NULL;
        }
        if (params_known_fields(req, svc, allowed, errp) < 0)
            return NULL;
        if (!json_is_string(dev) || json_string_length(dev) == 0
            || json_string_length(dev) > 32
            || strspn(json_string_value(dev),
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789_.-")
                   != json_string_length(dev)
            || !json_is_integer(id) || json_integer_value(id) < 0
            || json_integer_value(id) > 65535) {
            request_fail(req,
                         EINVAL,
                         ERRCODE_INVALID_FIELD,
                         errp,
                         "services[%zu] must be {\"device\": \"cxi0\", "
                         "\"svc_id\": 0-65535}",
                         i);
            return NULL;
        }
    }
    return json_dumps(services, JSON_COMPACT);
}

/* The error code a client sees for each refused report. */
static const enum errcode report_refusal_codes[] = {
    [STORE_REPORT_ACCEPTED] = ERRCODE_NONE,
    [STORE_REPORT_NOT_FOUND] = ERRCODE_RESERVATION_NOT_FOUND,
    [STORE_REPORT_NOT_MEMBER] = ERRCODE_FORBIDDEN,
    [STORE_REPORT_STALE_RESERVATION] = ERRCODE_STALE_RESERVATION,
    [STORE_REPORT_INVALID_TRANSITION] = ERRCODE_INVALID_TRANSITION,
    [STORE_REPORT_JOB_NOT_ACTIVE] = ERRCODE_JOB_NOT_ACTIVE,
};

/* A report request's fields, checked, into *a: the route's ids and node,
 * the body's (kept in *bodyp, services as JSON text in *servicesp, both
 * the caller's to free), the caller as actor; the node's rate limit
 * taken.  0, or -1 with the refusal in errno and errp.
 */
static int report_parse(struct request *req,
                        struct store_report *a,
                        json_t **bodyp,
                        char **servicesp,
                        vnib_error_t *errp)
{
    static const char *const allowed[] = {
        "cxi", "services", "message", "reservation_id", NULL};
    static const char *const states[] = {
        "creating", "created", "destroyed", "failed", NULL};
    json_t *body = NULL;

    a->job_id = route_param(&req->params, "job_id");
    a->node = route_param(&req->params, "node");
    a->step_id = route_param(&req->params, "step_id"); /* a step's route */
    if (params_job_id(req, a->job_id, errp) < 0
        || (a->step_id && params_step_id(req, a->step_id, errp) < 0)
        || params_node(req, "node", a->node, errp) < 0)
        return -1;
    if (req->who.role == ROLE_NODE && strcmp(req->who.node, a->node) != 0)
        return request_fail(req,
                            EPERM,
                            ERRCODE_FORBIDDEN,
                            errp,
                            "a node may report only for itself");
    if (req->broker->rl
        && !ratelimit_take(
            req->broker->rl, a->node, monotime_ms(), &req->retry_after)) {
        /* 429 has no errno of its own: the code's status is sent, and
         * errno says what the caller should do (try again later).
         */
        return request_fail(req,
                            EAGAIN,
                            ERRCODE_RATE_LIMITED,
                            errp,
                            "too many reports from this node; retry after "
                            "the time Retry-After gives");
    }
    if (request_json(req, &body, errp) < 0)
        return -1;
    *bodyp = body;
    if (params_known_fields(req, body, allowed, errp) < 0)
        return -1;
    a->cxi = json_string_value(json_object_get(body, "cxi"));
    size_t i = 0;
    while (a->cxi && states[i] && strcmp(states[i], a->cxi) != 0)
        i++;
    if (!a->cxi || !states[i])
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "cxi must be creating, created, destroyed or "
                            "failed");
    json_t *msg = json_object_get(body, "message");
    if (msg && (!json_is_string(msg) || json_string_length(msg) > 1024))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "message must be a string of at most 1024 bytes");
    a->message = msg ? json_string_value(msg) : NULL;
    json_t *rid = json_object_get(body, "reservation_id");
    if (rid && (!json_is_integer(rid) || json_integer_value(rid) < 1))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "reservation_id must be the positive id of a "
                            "reservation");
    a->reservation_id = rid ? json_integer_value(rid) : 0;
    if (!(*servicesp =
              report_services(req, json_object_get(body, "services"), errp)))
        return -1;
    a->services = *servicesp;
    a->actor = req->who.name;
    return 0;
}

int reservations_report(struct request *req, json_t **out, vnib_error_t *errp)
{
    struct store_report a = {0};
    enum store_report_refusal refusal = STORE_REPORT_ACCEPTED;
    json_t *body = NULL;
    char *services = NULL;
    int status = -1;

    if (report_parse(req, &a, &body, &services, errp) < 0)
        goto done;
    if (store_report(req->broker->store, &a, out, &refusal, errp) < 0) {
        req->error_code = report_refusal_codes[refusal];
        goto done;
    }
    status = 200;
done:
    free(services);
    json_decref(body);
    return status;
}

/* A posted report's outcome (store_report_done_f): the reply. */
static void report_done(void *arg,
                        int rc,
                        json_t *resp,
                        enum store_report_refusal refusal,
                        int errnum,
                        const vnib_error_t *error)
{
    struct request *req = arg;

    if (rc < 0) {
        vnib_error_copy(&req->error, error);
        req->error_code = report_refusal_codes[refusal];
        request_finish(req, -1, NULL, errnum);
        return;
    }
    request_finish(req, 200, resp, 0);
}

int reservations_report_first(struct request *req,
                              json_t **out,
                              vnib_error_t *errp)
{
    struct store_report a = {0};
    json_t *body = NULL;
    char *services = NULL;
    int status = -1;

    (void)out;
    if (!store_reports_grouped(req->broker->store) || !request_can_defer(req))
        return ROUTE_PASS;
    if (report_parse(req, &a, &body, &services, errp) < 0)
        goto done;
    /* Suspended first: the group may be written, and the request
     * finished, before store_report_post() returns.
     */
    if (request_defer(req) < 0) {
        request_fail(req,
                     EAGAIN,
                     ERRCODE_UNAVAILABLE,
                     errp,
                     "the broker is shutting down");
        goto done;
    }
    status = ROUTE_DEFERRED;
    vnib_error_t why = {0};
    if (store_report_post(
            req->broker->store, &a, req->deadline_ns, report_done, req, &why)
        < 0) {
        int e = errno;
        vnib_error_copy(&req->error, &why);
        request_finish(req, -1, NULL, e == ESHUTDOWN ? EAGAIN : e);
    }
done:
    free(services);
    json_decref(body);
    return status;
}
