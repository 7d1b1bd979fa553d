/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib-jobtap.so's jobs that wait for VNIs (see vnib_jobtap.c): a reserve
 * answered 503 vni_pool_exhausted does not fail its job.  The job stays
 * held in its prolog, holding its nodes, and its reserve is made again as
 * VNIs come back, for up to pool-wait-ms; then the refusal applies as
 * before (a fatal exception, or with reserve-fatal = false no isolation).
 *
 * Why the prolog, not before the job holds nodes (a dependency, a
 * scheduler's own means): the broker's free count is the whole machine's,
 * shared with Slurm and other Flux instances, so a job let through on a
 * count could still find the VNIs taken when it reserves; only the
 * reserve itself, retried, guarantees the VNIs.
 *
 * Why the wait is the reactor's, not a worker thread's: a thread that
 * slept until VNIs came back would hold one of the `threads` broker calls,
 * and with as many jobs waiting as there are threads the releases that
 * free the VNIs would queue behind them for ever.  So the worker hands a
 * pool-short reserve back at once (FJT_POOL_SHORT); the job's pending
 * entry keeps the call and a timer queues it again after a back-off
 * (POOL_RETRY_FIRST_MS doubling to POOL_RETRY_MAX_MS), and the end of
 * each release of ours queues the oldest waiters' calls at once
 * (vnib_jobtap_wake), since a release is when VNIs come back.  While the
 * call is held no call of the job is queued or running: a job canceled
 * meanwhile has its entry dropped at CLEANUP (nothing was reserved) and
 * its release runs at once; one canceled while its retry is in flight is
 * released after the retry, as any reserve.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

#include <flux/core.h>
#include <flux/jobtap.h>

#include "plugins/flux/jobtap/vnib_jobtap.h"
#include "vnib/monotime.h"

/* Give the held call back to the worker. */
static void requeue(struct plugin_ctx *ctx, struct pending *q)
{
    struct fjt_call *c = q->call;

    if (!c)
        return;
    q->call = NULL;
    if (q->timer)
        flux_watcher_stop(q->timer);
    c->lease_disabled = false;
    q->queued = true;
    fjt_worker_queue(ctx->worker, c);
}

static void retry_cb(flux_reactor_t *r,
                     flux_watcher_t *w,
                     int revents,
                     void *arg)
{
    struct pending *q = arg;

    (void)r;
    (void)w;
    (void)revents;
    requeue(q->ctx, q);
}

/* The wait's first 503: say so once, in the log and the job's eventlog. */
static void wait_start(struct plugin_ctx *ctx,
                       struct pending *q,
                       const struct fjt_call *c)
{
    char job_id[24];

    q->wait_since_ms = monotime_ms();
    q->backoff_ms = POOL_RETRY_FIRST_MS;
    ctx->n.pool_waited++;
    flux_log(ctx->h,
             LOG_NOTICE,
             "vnibroker: job %ju waits for VNIs, held in its prolog for up "
             "to %ld s (pool-wait-ms): %s",
             (uintmax_t)q->id,
             ctx->conf.pool_wait_ms / 1000,
             c->error.text);
    snprintf(job_id, sizeof(job_id), "%ju", (uintmax_t)q->id);
    if (flux_jobtap_event_post_pack(ctx->p,
                                    q->id,
                                    EVENT_WAIT,
                                    "{s:s s:s s:I}",
                                    "job_id",
                                    job_id,
                                    "reason",
                                    c->error.text,
                                    "pool-wait-ms",
                                    (json_int_t)ctx->conf.pool_wait_ms)
        < 0)
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot post %s",
                       (uintmax_t)q->id,
                       EVENT_WAIT);
}

int vnib_jobtap_wait(struct plugin_ctx *ctx,
                     struct pending *q,
                     struct fjt_call *c)
{
    int64_t now = monotime_ms();
    int64_t left;
    long delay;

    if (ctx->conf.pool_wait_ms <= 0)
        return -1;
    if (q->wait_since_ms == 0)
        wait_start(ctx, q, c);
    /* A configuration reload's pool-wait-ms applies to waits under way. */
    left = q->wait_since_ms + ctx->conf.pool_wait_ms - now;
    if (left <= 0)
        return -1;
    if (!q->timer
        && !(q->timer = flux_timer_watcher_create(
                 flux_get_reactor(ctx->h), 0., 0., retry_cb, q))) {
        flux_log_error(ctx->h,
                       "vnibroker: job %ju: cannot create its retry timer",
                       (uintmax_t)q->id);
        return -1;
    }
    delay = q->backoff_ms < left ? q->backoff_ms : (long)left;
    q->backoff_ms = q->backoff_ms * 2 > POOL_RETRY_MAX_MS ? POOL_RETRY_MAX_MS
                                                          : q->backoff_ms * 2;
    json_decref(c->reply);
    c->reply = NULL;
    q->ctx = ctx;
    q->call = c;
    q->queued = false;
    flux_timer_watcher_reset(q->timer, delay / 1e3, 0.);
    flux_watcher_start(q->timer);
    return 0;
}

void vnib_jobtap_wake(struct plugin_ctx *ctx)
{
    /* Oldest first: the worker runs queued calls in order. */
    for (int n = 0; n < ctx->conf.threads; n++) {
        struct pending *oldest = NULL;
        for (struct pending *q = ctx->pending; q; q = q->next)
            if (q->call && !q->ended
                && (!oldest || q->wait_since_ms < oldest->wait_since_ms))
                oldest = q;
        if (!oldest)
            break;
        oldest->backoff_ms = POOL_RETRY_WAKE_MS;
        requeue(ctx, oldest);
    }
}

int vnib_jobtap_waiting(const struct plugin_ctx *ctx)
{
    int n = 0;

    for (const struct pending *q = ctx->pending; q; q = q->next)
        if (q->wait_since_ms > 0 && !q->ended)
            n++;
    return n;
}
