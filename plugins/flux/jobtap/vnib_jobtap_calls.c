/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib-jobtap.so's calls of the broker, in the reactor (see
 * vnib_jobtap.c): the jobs it holds until their reserve comes back, the
 * reserves and releases it queues with the worker (fjt_worker.h), what it
 * does with their results (the job events cray-slingshot and vnibroker,
 * a fatal exception, the hold's end), and the timers that send spooled
 * releases again and reconcile the broker's reservations with the jobs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <flux/core.h>
#include <flux/jobtap.h>
#include <jansson.h>

#include "plugins/flux/jobtap/vnib_jobtap.h"
#include "vnib/monotime.h"

/* ---- pending jobs ---------------------------------------------------- */

struct pending *vnib_jobtap_pending_find(struct plugin_ctx *ctx, uint64_t id)
{
    for (struct pending *q = ctx->pending; q; q = q->next)
        if (q->id == id)
            return q;
    return NULL;
}

struct pending *vnib_jobtap_pending_add(struct plugin_ctx *ctx, uint64_t id)
{
    struct pending *q = vnib_jobtap_pending_find(ctx, id);
    if (q)
        return q;
    if (!(q = calloc(1, sizeof(*q))))
        return NULL;
    q->id = id;
    q->next = ctx->pending;
    ctx->pending = q;
    return q;
}

void vnib_jobtap_pending_remove(struct plugin_ctx *ctx, uint64_t id)
{
    for (struct pending **pp = &ctx->pending; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            struct pending *q = *pp;
            *pp = q->next;
            /* A held reserve reserved nothing: dropped with its timer. */
            flux_watcher_destroy(q->timer);
            fjt_call_destroy(q->call);
            free(q);
            return;
        }
    }
}

void vnib_jobtap_end_holds(struct plugin_ctx *ctx,
                           struct pending *q,
                           int status)
{
    while (q->holds > 0) {
        if (flux_jobtap_prolog_finish(ctx->p, q->id, HOLD, status) < 0)
            flux_log_error(ctx->h,
                           "vnibroker: job %ju: cannot end the prolog hold",
                           (uintmax_t)q->id);
        q->holds--;
    }
}

/* ---- posting a job's outcome ------------------------------------------ */

static void post_empty(struct plugin_ctx *ctx, uint64_t id, const char *reason)
{
    char job_id[24];

    snprintf(job_id, sizeof(job_id), "%ju", (uintmax_t)id);
    if (flux_jobtap_event_post_pack(ctx->p,
                                    id,
                                    EVENT_CORAL2,
                                    "{s:[] s:s}",
                                    "vnis",
                                    "empty-reason",
                                    reason)
            < 0
        || flux_jobtap_event_post_pack(ctx->p,
                                       id,
                                       EVENT_OURS,
                                       "{s:s s:[] s:s}",
                                       "job_id",
                                       job_id,
                                       "vnis",
                                       "empty-reason",
                                       reason)
               < 0)
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot post its events",
                       (uintmax_t)id);
}

int vnib_jobtap_fail_job(struct plugin_ctx *ctx, uint64_t id, const char *why)
{
    snprintf(ctx->last_error, sizeof(ctx->last_error), "%s", why);
    if (ctx->conf.reserve_fatal) {
        /* Ours first, so that the node side's wait ends now: perilog
         * does not cancel a prolog whose processes have not started yet,
         * which is the case when the exception comes in the job's RUN
         * callback (a bad option). */
        char job_id[24];
        snprintf(job_id, sizeof(job_id), "%ju", (uintmax_t)id);
        if (flux_jobtap_event_post_pack(ctx->p,
                                        id,
                                        EVENT_OURS,
                                        "{s:s s:[] s:s}",
                                        "job_id",
                                        job_id,
                                        "vnis",
                                        "error",
                                        why)
            < 0)
            flux_log_error(ctx->h,
                           "vnibroker: job %ju: cannot post %s",
                           (uintmax_t)id,
                           EVENT_OURS);
        if (flux_jobtap_raise_exception(
                ctx->p, id, EXCEPTION_TYPE, 0, "vnibroker: %s", why)
            < 0)
            flux_log_error(ctx->h,
                           "vnibroker: job %ju: cannot raise an exception",
                           (uintmax_t)id);
        return 1;
    }
    flux_log(ctx->h,
             LOG_WARNING,
             "vnibroker: job %ju runs without VNI isolation: %s",
             (uintmax_t)id,
             why);
    post_empty(ctx, id, why);
    return 0;
}

/* The reservation's VNIs as the cray-slingshot event, and ours. */
static int post_reserved(struct plugin_ctx *ctx,
                         uint64_t id,
                         json_t *resv,
                         int ncores)
{
    json_t *vnis = json_object_get(resv, "vnis");
    json_t *hw = json_object_get(resv, "hwcoll");
    json_t *ours = NULL;
    char job_id[24];
    int rc = -1;

    if (!json_is_array(vnis) || json_array_size(vnis) > 4) {
        vnib_jobtap_fail_job(ctx, id, "the broker's reply has no usable vnis");
        return 1;
    }
    if (json_array_size(vnis) > 0)
        rc = flux_jobtap_event_post_pack(
            ctx->p, id, EVENT_CORAL2, "{s:O}", "vnis", vnis);
    else {
        const char *why =
            json_string_value(json_object_get(resv, "empty_reason"));
        rc = flux_jobtap_event_post_pack(ctx->p,
                                         id,
                                         EVENT_CORAL2,
                                         "{s:[] s:s}",
                                         "vnis",
                                         "empty-reason",
                                         why ? why : "none reserved");
    }
    if (rc < 0)
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot post %s",
                       (uintmax_t)id,
                       EVENT_CORAL2);
    /* Ours: never the session token.  The job id is the one asked for
     * (the node side needs it whatever the reply holds). */
    snprintf(job_id, sizeof(job_id), "%ju", (uintmax_t)id);
    if (!(ours = json_pack("{s:O s:s s:O}",
                           "reservation",
                           json_object_get(resv, "id")
                               ? json_object_get(resv, "id")
                               : json_null(),
                           "job_id",
                           job_id,
                           "vnis",
                           vnis))) {
        flux_log(ctx->h,
                 LOG_ERR,
                 "vnibroker: job %ju: out of memory for its event",
                 (uintmax_t)id);
        return vnib_jobtap_fail_job(ctx, id, "out of memory");
    }
    /* The node side sizes the services by it without reading R. */
    if (ncores > 0)
        json_object_set_new(ours, "ncores", json_integer(ncores));
    /* What the nodes start from; signed, and without the session token. */
    if (json_is_string(json_object_get(resv, "lease")))
        json_object_set(ours, "lease", json_object_get(resv, "lease"));
    if (json_is_object(hw)) {
        json_t *h = json_object();
        const char *keys[] = {"state", "mode", "reason", "fm_job_id"};
        for (size_t i = 0; h && i < sizeof(keys) / sizeof(keys[0]); i++) {
            json_t *v = json_object_get(hw, keys[i]);
            if (v)
                json_object_set(h, keys[i], v);
        }
        if (h)
            json_object_set_new(ours, "hwcoll", h);
    }
    if (flux_jobtap_event_post_pack(ctx->p, id, EVENT_OURS, "O", ours) < 0)
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot post %s",
                       (uintmax_t)id,
                       EVENT_OURS);
    json_decref(ours);
    return 0;
}

/* ---- the worker's results, in the reactor ----------------------------- */

/* Returns true when it kept c (the job waits for VNIs with it). */
static bool reserve_done(struct plugin_ctx *ctx, struct fjt_call *c)
{
    struct pending *q = vnib_jobtap_pending_find(ctx, c->id);
    int status = 0;
    char why[320];
    char waited[96] = "";

    if (q)
        q->queued = false;
    if (c->lease_disabled) {
        if (!ctx->lease_disabled)
            flux_log(ctx->h,
                     LOG_WARNING,
                     "vnibroker: the broker signs no leases (lease_disabled): "
                     "jobs start as before, each node asking the broker; "
                     "a reserve asks again every %d s",
                     LEASE_PROBE_MS / 1000);
        ctx->lease_disabled = true;
        ctx->lease_probe_ms = monotime_ms() + LEASE_PROBE_MS;
    } else if (c->result == FJT_OK && c->lease && ctx->lease_disabled) {
        ctx->lease_disabled = false;
        flux_log(ctx->h,
                 LOG_INFO,
                 "vnibroker: the broker signs leases again: jobs start from "
                 "them");
    }
    if (c->result == FJT_POOL_SHORT && q && !q->ended
        && vnib_jobtap_wait(ctx, q, c) == 0)
        return true;
    if (q && q->wait_since_ms > 0)
        snprintf(waited,
                 sizeof(waited),
                 " (after %" PRId64 " ms waiting for VNIs, %d attempts)",
                 monotime_ms() - q->wait_since_ms,
                 c->attempts);
    if (c->result == FJT_OK) {
        const char *by =
            json_string_value(json_object_get(c->reply, "created_by"));
        ctx->n.reserved++;
        if (!ctx->token_name[0] && by)
            snprintf(ctx->token_name, sizeof(ctx->token_name), "%s", by);
    } else if (c->result != FJT_POOL_SHORT || (q && !q->ended)) {
        /* (Not a wait that the job's end cut short.) */
        ctx->n.reserve_failed++;
    }
    if (!q || q->ended) {
        /* The job ended meanwhile: its cleanup queued the release,
         * which runs after this reserve. */
        if (q)
            vnib_jobtap_pending_remove(ctx, c->id);
        return false;
    }
    /* Failing the job (or posting its events) runs its CLEANUP callback
     * before returning: q stays ours until the end. */
    q->busy = true;
    if (c->result == FJT_OK) {
        if (waited[0])
            flux_log(ctx->h,
                     LOG_INFO,
                     "vnibroker: job %ju got its VNIs%s",
                     (uintmax_t)c->id,
                     waited);
        status = post_reserved(ctx, c->id, c->reply, c->ncores);
        flux_log(ctx->h,
                 LOG_DEBUG,
                 "vnibroker: job %ju reserved in %" PRId64 " ms (%d attempts)",
                 (uintmax_t)c->id,
                 c->finished_ms - c->started_ms,
                 c->attempts);
    } else {
        snprintf(why,
                 sizeof(why),
                 "%s: %s%s",
                 c->result == FJT_UNREACHABLE
                     ? "the broker is unreachable"
                     : "the broker refused the reservation",
                 c->error.text,
                 waited);
        flux_log(
            ctx->h, LOG_ERR, "vnibroker: job %ju: %s", (uintmax_t)c->id, why);
        status = vnib_jobtap_fail_job(ctx, c->id, why);
    }
    vnib_jobtap_end_holds(ctx, q, status);
    vnib_jobtap_pending_remove(ctx, c->id);
    return false;
}

static void release_done(struct plugin_ctx *ctx, struct fjt_call *c)
{
    switch (c->result) {
        case FJT_OK:
            ctx->n.released++;
            /* VNIs come back (once the nodes report): the jobs waiting
             * for them try now. */
            if (c->status != 404)
                vnib_jobtap_wake(ctx);
            break;
        case FJT_SPOOLED:
            ctx->n.release_spooled++;
            flux_log(ctx->h,
                     LOG_WARNING,
                     "vnibroker: job %s: release spooled in %s (sent again "
                     "every %ld ms): %s",
                     c->job_id,
                     fjt_spool_path(ctx->spool),
                     ctx->conf.retry_ms,
                     c->error.text);
            break;
        default:
            ctx->n.release_failed++;
            snprintf(ctx->last_error,
                     sizeof(ctx->last_error),
                     "job %s: release: %.100s",
                     c->job_id,
                     c->error.text);
            flux_log(ctx->h,
                     LOG_ERR,
                     "vnibroker: job %s: release failed: %s",
                     c->job_id,
                     c->error.text);
            break;
    }
}

/* The active reservations our token made: release those whose job this
 * instance no longer has active (its release was lost: a job-manager
 * killed with releases in memory, a KVS that lost the job). */
static void list_done(struct plugin_ctx *ctx, struct fjt_call *c)
{
    size_t i;
    json_t *v;

    if (!ctx->token_name[0] && c->created_by) {
        snprintf(ctx->token_name, sizeof(ctx->token_name), "%s", c->created_by);
        flux_log(ctx->h,
                 LOG_INFO,
                 "vnibroker: reconcile: the broker names our token '%s'",
                 ctx->token_name);
    }
    if (c->result != FJT_OK) {
        flux_log(ctx->h,
                 LOG_WARNING,
                 "vnibroker: reconcile: cannot list the broker's "
                 "reservations: %s",
                 c->error.text);
        return;
    }
    json_array_foreach (c->reply, i, v) {
        const char *s = json_string_value(v);
        char *end;
        uint64_t id;
        flux_plugin_arg_t *job;

        errno = 0;
        id = strtoull(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-')
            continue; /* not a Flux job id: not ours */
        /* The job-manager also knows inactive jobs it has not purged. */
        if ((job = flux_jobtap_job_lookup(ctx->p, id))) {
            int state = 0;
            (void)flux_plugin_arg_unpack(
                job, FLUX_PLUGIN_ARG_IN, "{s:i}", "state", &state);
            flux_plugin_arg_destroy(job);
            if (state != FLUX_JOB_STATE_INACTIVE)
                continue;
        } else if (errno != ENOENT) {
            continue;
        }
        if (vnib_jobtap_pending_find(ctx, id)
            || fjt_worker_busy(ctx->worker, id))
            continue;
        flux_log(ctx->h,
                 LOG_WARNING,
                 "vnibroker: reconcile: job %s is not active here but its "
                 "reservation is; releasing it",
                 s);
        if (vnib_jobtap_queue_release(ctx, id) == 0)
            ctx->n.reconciled++;
    }
}

void vnib_jobtap_done_cb(flux_reactor_t *r,
                         flux_watcher_t *w,
                         int revents,
                         void *arg)
{
    struct plugin_ctx *ctx = arg;
    struct fjt_call *list = fjt_worker_take(ctx->worker);

    (void)r;
    (void)w;
    (void)revents;
    while (list) {
        struct fjt_call *c = list;
        list = c->next;
        if (c->op == FJT_RESERVE) {
            if (reserve_done(ctx, c))
                continue;
        } else if (c->op == FJT_RELEASE)
            release_done(ctx, c);
        else if (c->op == FJT_LIST)
            list_done(ctx, c);
        else if (c->result != FJT_OK)
            flux_log(ctx->h,
                     LOG_WARNING,
                     "vnibroker: spooled releases kept for later: %s",
                     c->error.text);
        else if (c->attempts > 0)
            vnib_jobtap_wake(ctx); /* spooled releases sent */
        fjt_call_destroy(c);
    }
}

/* Queue a background call (FJT_FLUSH, FJT_LIST: "job" 0) unless one is
 * queued or running already. */
static void queue_background(struct plugin_ctx *ctx,
                             enum fjt_op op,
                             const char *created_by)
{
    struct fjt_call *c;

    if (fjt_worker_busy(ctx->worker, 0) || !(c = fjt_call_create(op, 0, NULL)))
        return;
    if (created_by && !(c->created_by = strdup(created_by))) {
        fjt_call_destroy(c);
        return;
    }
    fjt_worker_queue(ctx->worker, c);
}

void vnib_jobtap_retry_cb(flux_reactor_t *r,
                          flux_watcher_t *w,
                          int revents,
                          void *arg)
{
    (void)r;
    (void)w;
    (void)revents;
    queue_background(arg, FJT_FLUSH, NULL);
}

void vnib_jobtap_reconcile_cb(flux_reactor_t *r,
                              flux_watcher_t *w,
                              int revents,
                              void *arg)
{
    struct plugin_ctx *ctx = arg;

    (void)r;
    (void)w;
    (void)revents;
    /* Without a name yet (no token-name, no reserve since the load), the
     * worker asks the broker's /v1/whoami first. */
    queue_background(
        ctx, FJT_LIST, ctx->token_name[0] ? ctx->token_name : NULL);
}

/* ---- queueing calls ------------------------------------------------ */

int vnib_jobtap_queue_release(struct plugin_ctx *ctx, uint64_t id)
{
    struct fjt_call *c = fjt_call_create(FJT_RELEASE, id, NULL);
    if (!c)
        return -1;
    fjt_worker_queue(ctx->worker, c);
    return 0;
}

/* Fail q's job, end its holds and drop q.  Outside a jobtap callback (a
 * recovery's lookup) the exception runs the job's CLEANUP callback at
 * once, inside fail_job: q is kept for us there (busy) and freed here. */
static void fail_and_drop(struct plugin_ctx *ctx,
                          struct pending *q,
                          const char *why)
{
    uint64_t id = q->id;

    q->busy = true;
    vnib_jobtap_end_holds(ctx, q, vnib_jobtap_fail_job(ctx, id, why));
    vnib_jobtap_pending_remove(ctx, id);
}

void vnib_jobtap_queue_reserve(struct plugin_ctx *ctx,
                               struct pending *q,
                               flux_plugin_arg_t *args)
{
    json_t *jobspec = NULL;
    json_t *R = NULL;
    int userid = 0;
    struct fjt_jobopts o;
    vnib_error_t error;
    char *nodes = NULL;
    struct fjt_call *c = NULL;
    uint64_t id = q->id;

    if (flux_plugin_arg_unpack(args,
                               FLUX_PLUGIN_ARG_IN,
                               "{s:o s:i s?o}",
                               "jobspec",
                               &jobspec,
                               "userid",
                               &userid,
                               "R",
                               &R)
        < 0) {
        fail_and_drop(ctx, q, "cannot read the job's data");
        return;
    }
    if (fjt_jobopts_parse(&o, jobspec, &error) < 0) {
        fail_and_drop(ctx, q, error.text);
        return;
    }
    if (o.off || o.vni_count == 0
        || (o.vni_count < 0 && ctx->conf.vnis_per_job == 0)) {
        q->busy = true;
        post_empty(
            ctx, id, o.off ? "disabled by user request" : "none requested");
        vnib_jobtap_end_holds(ctx, q, 0);
        vnib_jobtap_pending_remove(ctx, id);
        return;
    }
    if (!(nodes = fjt_R_nodes(R, &error))) {
        fail_and_drop(ctx, q, error.text);
        return;
    }
    if (!(c = fjt_call_create(FJT_RESERVE, q->id, nodes))) {
        free(nodes);
        fail_and_drop(ctx, q, "out of memory");
        return;
    }
    free(nodes);
    c->uid = (uint32_t)userid;
    c->ncores = fjt_R_ncores(R);
    /* A broker that signs no leases is asked again now and then. */
    c->lease = !ctx->lease_disabled || monotime_ms() >= ctx->lease_probe_ms;
    if (ctx->lease_disabled && c->lease)
        ctx->lease_probe_ms = monotime_ms() + LEASE_PROBE_MS;
    c->vni_count = o.vni_count >= 0 ? o.vni_count : ctx->conf.vnis_per_job;
    snprintf(c->hwcoll,
             sizeof(c->hwcoll),
             "%s",
             o.hwcoll[0] ? o.hwcoll : ctx->conf.hwcoll);
    q->queued = true;
    fjt_worker_queue(ctx->worker, c);
}
