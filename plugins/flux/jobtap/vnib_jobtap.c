/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib-jobtap.so: vnibroker as the VNI and multicast authority of a Flux
 * system instance, loaded by its job-manager.
 *
 * At job.state.run the plugin holds the job (a prolog action,
 * "vnibroker"), asks the broker for the job's reservation from one of the
 * worker's threads (fjt_worker.h: the reactor never waits on HTTP), then
 * posts the job event flux-coral2's node side reads, cray-slingshot with
 * {"vnis":[...]} or {"vnis":[],"empty-reason":"..."}, then its own event,
 * vnibroker, which vnibroker's node side waits for: the broker's job id,
 * the VNIs, the reservation id, the hardware collectives' state and the
 * lease, or the empty-reason; then it ends the hold.  The reserve asks for
 * a lease (docs/node-path.md): the broker's signed launch data, which the
 * nodes start from without asking the broker, and which holds no secret
 * (never the FM's session token: job eventlogs are the user's to read).
 * A broker that signs no leases (400 lease_disabled) is asked as before,
 * and the plugin says so once and asks for a lease again only every
 * LEASE_PROBE_MS (or after a configuration change or its next load), so
 * that such a broker costs one request per job.  A reserve that fails
 * raises a fatal
 * exception of type vnibroker, or, with reserve-fatal = false, lets the job run
 * without isolation (an empty cray-slingshot event saying why).  A reserve
 * that finds the pool short (503 vni_pool_exhausted) does neither at
 * first: the job stays held and its reserve is made again as VNIs come
 * back, for up to pool-wait-ms (vnib_jobtap_wait.c).
 *
 * At job.state.cleanup (any job that had resources) it releases the job's
 * reservation; the broker keeps the VNIs quarantined until every node
 * reported its services destroyed.  A release the broker cannot take is
 * spooled on disk (fjt_spool.h) and sent again every retry-ms.
 *
 * The plugin keeps nothing a restart must remember: the reservations are
 * the broker's, the releases the spool's.  And every reconcile-s it lists
 * the active reservations its token made and releases those whose job
 * this instance does not have active (a release lost with a job-manager
 * killed while it was in memory, or with a KVS that lost the job).  When it is
 * loaded into a running instance (flux jobtap load, a job-manager restart) it
 * looks at every job: one in RUN whose hold it had started, or that no prolog
 * holds yet, is reserved again (the broker's reserve is idempotent per
 * job) and its hold ended; one in CLEANUP is released.
 *
 * The broker's job id is the Flux job id in decimal.  Settings:
 * fjt_conf.h and plugins/flux/README.md.  `flux jobtap query
 * vnib-jobtap.so` shows the plugin's view.
 *
 * This file holds the job callbacks, the recovery of a plugin loaded into
 * a running instance, and the configuration, query, load and unload;
 * vnib_jobtap_calls.c the broker calls and their outcomes;
 * vnib_jobtap_wait.c the jobs waiting for VNIs.
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
#include "vnib/secfile.h"

/* ---- job callbacks ---------------------------------------------------- */

static int run_cb(flux_plugin_t *p,
                  const char *topic,
                  flux_plugin_arg_t *args,
                  void *arg)
{
    struct plugin_ctx *ctx = arg;
    flux_jobid_t id;
    struct pending *q;

    (void)topic;
    if (flux_plugin_arg_unpack(args, FLUX_PLUGIN_ARG_IN, "{s:I}", "id", &id)
        < 0)
        return -1;
    if (!(q = vnib_jobtap_pending_add(ctx, id))) {
        flux_jobtap_raise_exception(
            p, FLUX_JOBTAP_CURRENT_JOB, EXCEPTION_TYPE, 0, "out of memory");
        return -1;
    }
    if (flux_jobtap_prolog_start(p, HOLD) < 0) {
        flux_log_error(
            ctx->h, "vnibroker: job %ju: cannot hold the job", (uintmax_t)id);
        vnib_jobtap_fail_job(
            ctx, id, "cannot hold the job for its reservation");
        vnib_jobtap_pending_remove(ctx, id);
        return -1;
    }
    q->holds = 1;
    vnib_jobtap_queue_reserve(ctx, q, args);
    return 0;
}

static bool had_resources(flux_plugin_arg_t *args)
{
    json_t *R = NULL;
    return flux_plugin_arg_unpack(args, FLUX_PLUGIN_ARG_IN, "{s:o}", "R", &R)
               == 0
           && R != NULL;
}

static bool released_off(flux_plugin_arg_t *args)
{
    json_t *jobspec = NULL;
    struct fjt_jobopts o;
    vnib_error_t error;

    if (flux_plugin_arg_unpack(
            args, FLUX_PLUGIN_ARG_IN, "{s:o}", "jobspec", &jobspec)
            < 0
        || fjt_jobopts_parse(&o, jobspec, &error) < 0)
        return false;
    return o.off || o.vni_count == 0;
}

static int cleanup_cb(flux_plugin_t *p,
                      const char *topic,
                      flux_plugin_arg_t *args,
                      void *arg)
{
    struct plugin_ctx *ctx = arg;
    flux_jobid_t id;
    struct pending *q;

    (void)p;
    (void)topic;
    if (flux_plugin_arg_unpack(args, FLUX_PLUGIN_ARG_IN, "{s:I}", "id", &id)
        < 0)
        return -1;
    /* An exception while the reserve was out: end the hold so the job can
     * clean up; the reserve's answer is then only released. */
    if ((q = vnib_jobtap_pending_find(ctx, id))) {
        vnib_jobtap_end_holds(ctx, q, 1);
        q->ended = true;
        /* One that waited for VNIs: its wait ends here.  Its reserve,
         * held between retries, reserved nothing and is dropped; one in
         * flight is released by the release queued below, after it. */
        if (q->wait_since_ms > 0)
            flux_log(ctx->h,
                     LOG_INFO,
                     "vnibroker: job %ju ended while it waited for VNIs "
                     "(%" PRId64 " ms)",
                     (uintmax_t)id,
                     monotime_ms() - q->wait_since_ms);
        if (!q->queued && !q->busy)
            vnib_jobtap_pending_remove(ctx, id);
    }
    if (!had_resources(args) || released_off(args))
        return 0;
    if (vnib_jobtap_queue_release(ctx, id) < 0)
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot queue its release",
                       (uintmax_t)id);
    return 0;
}

/* ---- a plugin loaded into a running instance -------------------------- */

struct recover {
    struct plugin_ctx *ctx;
    flux_plugin_arg_t *args;
    flux_future_t *f;
    uint64_t id;
    struct recover *next;
};

/* Unlink rc from ctx->recovering and free it with its lookup. */
static void recover_destroy(struct plugin_ctx *ctx, struct recover *rc)
{
    for (struct recover **pp = &ctx->recovering; *pp; pp = &(*pp)->next) {
        if (*pp == rc) {
            *pp = rc->next;
            break;
        }
    }
    flux_future_destroy(rc->f);
    flux_plugin_arg_destroy(rc->args);
    free(rc);
}

/* The job's state now, or -1 when the job-manager no longer has it. */
static int job_state(struct plugin_ctx *ctx, uint64_t id)
{
    flux_plugin_arg_t *job = flux_jobtap_job_lookup(ctx->p, id);
    int state = -1;

    if (job) {
        if (flux_plugin_arg_unpack(
                job, FLUX_PLUGIN_ARG_IN, "{s:i}", "state", &state)
            < 0)
            state = -1;
        flux_plugin_arg_destroy(job);
    }
    return state;
}

/* The number of our holds the job's eventlog shows still open. */
static int open_holds(const char *eventlog)
{
    int opens = 0;
    const char *line = eventlog;

    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        json_t *e = json_loadb(line, len, 0, NULL);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *desc = json_string_value(
            json_object_get(json_object_get(e, "context"), "description"));
        if (name && desc && !strcmp(desc, HOLD)) {
            if (!strcmp(name, "prolog-start"))
                opens++;
            else if (!strcmp(name, "prolog-finish") && opens > 0)
                opens--;
        }
        json_decref(e);
        line = nl ? nl + 1 : NULL;
    }
    return opens;
}

static void recover_cb(flux_future_t *f, void *arg)
{
    struct recover *rc = arg;
    struct plugin_ctx *ctx = rc->ctx;
    const char *eventlog = NULL;
    int opens = 0;
    struct pending *q;

    if (flux_kvs_lookup_get(f, &eventlog) < 0)
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot read its eventlog",
                       (uintmax_t)rc->id);
    else
        opens = open_holds(eventlog);
    /* The job may have moved on during the lookup: what it is now counts
     * (in CLEANUP its release is queued already, by cleanup_cb). */
    if (job_state(ctx, rc->id) == FLUX_JOB_STATE_RUN
        && !flux_jobtap_job_event_posted(ctx->p, rc->id, EVENT_CORAL2)) {
        if ((q = vnib_jobtap_pending_add(ctx, rc->id))) {
            q->holds += opens;
            ctx->n.recovered++;
            vnib_jobtap_queue_reserve(ctx, q, rc->args);
        }
    } else if (opens > 0) {
        struct pending tmp = {.id = rc->id, .holds = opens};
        vnib_jobtap_end_holds(ctx, &tmp, 1);
    }
    recover_destroy(ctx, rc);
}

/* Read the job's eventlog, then recover it (recover_cb).  The lookup is
 * kept in ctx->recovering, so that a plugin unloaded meanwhile cancels
 * it rather than be called back. */
static void recover_lookup(struct plugin_ctx *ctx,
                           flux_plugin_arg_t *args,
                           uint64_t id)
{
    char key[128];
    struct recover *rc = calloc(1, sizeof(*rc));
    json_t *in = NULL;

    if (!rc)
        return;
    rc->ctx = ctx;
    rc->id = id;
    rc->next = ctx->recovering;
    ctx->recovering = rc;
    /* A copy of the job's arguments: the callback's are gone by then. */
    if (flux_plugin_arg_unpack(args, FLUX_PLUGIN_ARG_IN, "o", &in) < 0
        || !(rc->args = flux_plugin_arg_create())
        || flux_plugin_arg_pack(rc->args, FLUX_PLUGIN_ARG_IN, "O", in) < 0
        || flux_job_kvs_key(key, sizeof(key), id, "eventlog") < 0
        || !(rc->f = flux_kvs_lookup(ctx->h, NULL, 0, key))
        || flux_future_then(rc->f, -1., recover_cb, rc) < 0) {
        flux_log_error(
            ctx->h, "vnibroker: job %ju: cannot recover it", (uintmax_t)id);
        recover_destroy(ctx, rc);
    }
}

static int new_cb(flux_plugin_t *p,
                  const char *topic,
                  flux_plugin_arg_t *args,
                  void *arg)
{
    struct plugin_ctx *ctx = arg;
    flux_jobid_t id;
    int state;
    struct pending *q;

    (void)topic;
    if (flux_plugin_arg_unpack(
            args, FLUX_PLUGIN_ARG_IN, "{s:I s:i}", "id", &id, "state", &state)
        < 0)
        return -1;
    if (state == FLUX_JOB_STATE_RUN) {
        if (flux_jobtap_job_event_posted(p, id, EVENT_CORAL2) > 0
            || flux_jobtap_job_event_posted(p, id, "start") > 0)
            return 0;
        if (flux_jobtap_job_event_posted(p, id, "prolog-start") <= 0) {
            /* Nobody holds it yet: hold it now, then reserve. */
            if (!(q = vnib_jobtap_pending_add(ctx, id)))
                return -1;
            if (flux_jobtap_prolog_start(p, HOLD) == 0)
                q->holds = 1;
            ctx->n.recovered++;
            vnib_jobtap_queue_reserve(ctx, q, args);
            return 0;
        }
        recover_lookup(ctx, args, id);
    } else if (state == FLUX_JOB_STATE_CLEANUP) {
        if (flux_jobtap_job_event_posted(p, id, EVENT_CORAL2) <= 0
            && flux_jobtap_job_event_posted(p, id, "prolog-start") > 0)
            recover_lookup(ctx, args, id);
        if (had_resources(args) && !released_off(args))
            (void)vnib_jobtap_queue_release(ctx, id);
    }
    return 0;
}

/* ---- configuration, query, load and unload ---------------------------- */

static void ctx_stop(struct plugin_ctx *ctx)
{
    flux_watcher_destroy(ctx->done_w);
    flux_watcher_destroy(ctx->retry_w);
    flux_watcher_destroy(ctx->reconcile_w);
    ctx->done_w = ctx->retry_w = ctx->reconcile_w = NULL;
    fjt_worker_destroy(ctx->worker);
    ctx->worker = NULL;
    fjt_spool_destroy(ctx->spool);
    ctx->spool = NULL;
}

static void ctx_destroy(void *arg)
{
    struct plugin_ctx *ctx = arg;

    if (ctx) {
        ctx_stop(ctx);
        while (ctx->recovering)
            recover_destroy(ctx, ctx->recovering);
        while (ctx->pending)
            vnib_jobtap_pending_remove(ctx, ctx->pending->id);
        free(ctx);
    }
}

/* Start the spool, the worker and the watchers from ctx->conf. */
static int ctx_start(struct plugin_ctx *ctx, vnib_error_t *errp)
{
    char *token = NULL;
    size_t len = 0;
    flux_reactor_t *r = flux_get_reactor(ctx->h);
    int rc = -1;

    if (secfile_read(ctx->conf.token_file, &token, &len, errp) < 0)
        return -1;
    while (len > 0 && (token[len - 1] == '\n' || token[len - 1] == '\r'))
        token[--len] = '\0';
    struct fjt_worker_cfg wc = {
        .url = ctx->conf.url,
        .token = token,
        .cacert = ctx->conf.cacert[0] ? ctx->conf.cacert : NULL,
        .timeout_ms = ctx->conf.timeout_ms,
        .reserve_timeout_ms = ctx->conf.reserve_timeout_ms,
        .threads = ctx->conf.threads,
    };
    if (!(ctx->spool = fjt_spool_create(ctx->conf.spool_dir, errp))
        || !(ctx->worker = fjt_worker_create(&wc, ctx->spool, errp)))
        goto cleanup;
    if (!(ctx->done_w = flux_fd_watcher_create(r,
                                               fjt_worker_fd(ctx->worker),
                                               FLUX_POLLIN,
                                               vnib_jobtap_done_cb,
                                               ctx))
        || !(ctx->retry_w = flux_timer_watcher_create(
                 r, 0., ctx->conf.retry_ms / 1e3, vnib_jobtap_retry_cb, ctx))) {
        errprintf(errp, "cannot create watchers: %s", strerror(errno));
        goto cleanup;
    }
    flux_watcher_start(ctx->done_w);
    flux_watcher_start(ctx->retry_w);
    /* The first pass soon after a load, then every reconcile-s. */
    if (ctx->conf.reconcile_s > 0) {
        double every = (double)ctx->conf.reconcile_s;
        if (!(ctx->reconcile_w =
                  flux_timer_watcher_create(r,
                                            every < 10. ? every : 10.,
                                            every,
                                            vnib_jobtap_reconcile_cb,
                                            ctx))) {
            errprintf(errp, "cannot create watchers: %s", strerror(errno));
            goto cleanup;
        }
        flux_watcher_start(ctx->reconcile_w);
    }
    snprintf(
        ctx->token_name, sizeof(ctx->token_name), "%s", ctx->conf.token_name);
    rc = 0;
cleanup:
    secfile_free(token, len);
    if (rc < 0)
        ctx_stop(ctx);
    return rc;
}

static int conf_update_cb(flux_plugin_t *p,
                          const char *topic,
                          flux_plugin_arg_t *args,
                          void *arg)
{
    struct plugin_ctx *ctx = arg;
    json_t *conf = NULL;
    json_t *load = NULL;
    const char *load_s = flux_plugin_get_conf(p);
    struct fjt_conf c;
    vnib_error_t error;
    int rc = -1;

    (void)topic;
    if (flux_plugin_arg_unpack(args, FLUX_PLUGIN_ARG_IN, "{s?o}", "conf", &conf)
        < 0)
        return flux_jobtap_error(p, args, "vnibroker: cannot read the config");
    if (load_s && !(load = json_loads(load_s, 0, NULL)))
        return flux_jobtap_error(p, args, "vnibroker: bad plugin arguments");
    if (fjt_conf_parse(&c, json_object_get(conf, "vnibroker"), load, &error)
        < 0) {
        flux_jobtap_error(p, args, "%s", error.text);
        goto cleanup;
    }
    if (!ctx->worker) {
        ctx->conf = c;
        if (ctx_start(ctx, &error) < 0) {
            flux_jobtap_error(p, args, "vnibroker: %s", error.text);
            goto cleanup;
        }
        flux_log(ctx->h,
                 LOG_INFO,
                 "vnibroker: broker %s, %d threads, spool %s",
                 ctx->conf.url,
                 ctx->conf.threads,
                 ctx->conf.spool_dir);
    } else {
        /* The connection's settings hold until the plugin is loaded
         * again; the jobs' are taken now. */
        if (strcmp(c.url, ctx->conf.url)
            || strcmp(c.token_file, ctx->conf.token_file)
            || strcmp(c.cacert, ctx->conf.cacert)
            || strcmp(c.spool_dir, ctx->conf.spool_dir)
            || c.threads != ctx->conf.threads
            || c.timeout_ms != ctx->conf.timeout_ms
            || c.reserve_timeout_ms != ctx->conf.reserve_timeout_ms
            || c.retry_ms != ctx->conf.retry_ms
            || c.reconcile_s != ctx->conf.reconcile_s)
            flux_log(ctx->h,
                     LOG_WARNING,
                     "vnibroker: url, token-file, cacert, spool-dir, threads, "
                     "reconcile-s and the timeouts change when the plugin "
                     "is loaded again (flux jobtap remove/load)");
        if (c.token_name[0])
            snprintf(
                ctx->token_name, sizeof(ctx->token_name), "%s", c.token_name);
        /* The broker may sign leases now: the next reserve asks. */
        ctx->lease_probe_ms = 0;
        ctx->conf.reserve_fatal = c.reserve_fatal;
        ctx->conf.vnis_per_job = c.vnis_per_job;
        ctx->conf.pool_wait_ms = c.pool_wait_ms;
        memcpy(ctx->conf.hwcoll, c.hwcoll, sizeof(c.hwcoll));
    }
    rc = 0;
cleanup:
    json_decref(load);
    return rc;
}

static int query_cb(flux_plugin_t *p,
                    const char *topic,
                    flux_plugin_arg_t *args,
                    void *arg)
{
    struct plugin_ctx *ctx = arg;
    int queued = 0;
    int running = 0;
    json_t *held = json_array();

    (void)p;
    (void)topic;
    if (ctx->worker)
        fjt_worker_counts(ctx->worker, &queued, &running);
    for (struct pending *q = ctx->pending; q && held; q = q->next)
        json_array_append_new(held, json_integer((json_int_t)q->id));
    if (flux_plugin_arg_pack(
            args,
            FLUX_PLUGIN_ARG_OUT,
            "{s:s s:s s:s s:i s:b s:i s:s s:b s:{s:s s:i s:I} "
            "s:I s:{s:i s:i s:o s:i} s:{s:I s:I s:I s:I s:I s:I s:I s:I} "
            "s:{s:I s:s} s:s}",
            "url",
            ctx->conf.url,
            "token-file",
            ctx->conf.token_file,
            "cacert",
            ctx->conf.cacert,
            "threads",
            ctx->conf.threads,
            "reserve-fatal",
            ctx->conf.reserve_fatal,
            "vnis-per-job",
            ctx->conf.vnis_per_job,
            "hwcoll",
            ctx->conf.hwcoll,
            "leases",
            !ctx->lease_disabled,
            "spool",
            "dir",
            ctx->conf.spool_dir,
            "count",
            ctx->spool ? fjt_spool_count(ctx->spool) : -1,
            "retry-ms",
            (json_int_t)ctx->conf.retry_ms,
            "pool-wait-ms",
            (json_int_t)ctx->conf.pool_wait_ms,
            "calls",
            "queued",
            queued,
            "running",
            running,
            "held",
            held ? held : json_array(),
            "waiting",
            vnib_jobtap_waiting(ctx),
            "counts",
            "reserved",
            (json_int_t)ctx->n.reserved,
            "reserve-failed",
            (json_int_t)ctx->n.reserve_failed,
            "released",
            (json_int_t)ctx->n.released,
            "release-spooled",
            (json_int_t)ctx->n.release_spooled,
            "release-failed",
            (json_int_t)ctx->n.release_failed,
            "recovered",
            (json_int_t)ctx->n.recovered,
            "reconciled",
            (json_int_t)ctx->n.reconciled,
            "pool-waited",
            (json_int_t)ctx->n.pool_waited,
            "reconcile",
            "every-s",
            (json_int_t)ctx->conf.reconcile_s,
            "token-name",
            ctx->token_name,
            "last-error",
            ctx->last_error)
        < 0)
        return -1;
    return 0;
}

static const struct flux_plugin_handler handlers[] = {
    {"conf.update", conf_update_cb, NULL},
    {"job.state.run", run_cb, NULL},
    {"job.state.cleanup", cleanup_cb, NULL},
    {"job.new", new_cb, NULL},
    {"plugin.query", query_cb, NULL},
    {NULL, NULL, NULL},
};

int flux_plugin_init(flux_plugin_t *p);

int flux_plugin_init(flux_plugin_t *p)
{
    struct plugin_ctx *ctx = calloc(1, sizeof(*ctx));

    if (!ctx)
        return -1;
    ctx->p = p;
    ctx->h = flux_jobtap_get_flux(p);
    if (flux_plugin_aux_set(p, NULL, ctx, ctx_destroy) < 0) {
        free(ctx);
        return -1;
    }
    if (flux_plugin_set_name(p, PLUGIN_NAME) < 0)
        return -1;
    for (int i = 0; handlers[i].topic; i++)
        if (flux_plugin_add_handler(p, handlers[i].topic, handlers[i].cb, ctx)
            < 0)
            return -1;
    return 0;
}
