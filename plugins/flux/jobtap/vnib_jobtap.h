/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What vnib-jobtap.so's own files (vnib_jobtap.c, vnib_jobtap_calls.c)
 * share: the plugin's state and the functions one defines and the other
 * calls.  Hidden: the plugin exports flux_plugin_init and its fjt_
 * modules' functions only, as before they were two files.
 */
#ifndef VNIB_JOBTAP_H
#define VNIB_JOBTAP_H

#include <stdbool.h>
#include <stdint.h>

#include <flux/core.h>
#include <flux/jobtap.h>

#include "plugins/flux/jobtap/fjt_conf.h"
#include "plugins/flux/jobtap/fjt_spool.h"
#include "plugins/flux/jobtap/fjt_worker.h"

#pragma GCC visibility push(hidden)

#define PLUGIN_NAME "vnibroker"
#define HOLD "vnibroker" /* the prolog action's description */
#define EVENT_CORAL2 "cray-slingshot"
#define EVENT_OURS "vnibroker"
#define EXCEPTION_TYPE "vnibroker"
/* How often reserves ask a broker that signs no leases for one again. */
#define LEASE_PROBE_MS (5 * 60 * 1000)

/* The job event that says a job waits for VNIs (once per job). */
#define EVENT_WAIT "vnibroker-wait"
/* A job waiting for VNIs retries after this, doubled each time up to
 * POOL_RETRY_MAX_MS; after a release of ours ends, at once, then from
 * POOL_RETRY_WAKE_MS (the VNIs leave quarantine when the nodes'
 * housekeeping reports, a little after the release). */
#define POOL_RETRY_FIRST_MS 250
#define POOL_RETRY_WAKE_MS 100
#define POOL_RETRY_MAX_MS 2000

/* A job the plugin holds (or will hold) until its reserve comes back. */
struct pending {
    uint64_t id;
    int holds;   /* prolog actions of ours to end: 0 or 1 */
    bool queued; /* its reserve is with the worker */
    bool ended;  /* the job reached CLEANUP meanwhile */
    /* A reserve's answer is being applied (reserve_done): an exception
     * raised there moves the job to CLEANUP at once, inside that call, and
     * cleanup_cb then leaves the entry for reserve_done to drop. */
    bool busy;
    /* A job whose reserve found the pool short (vnib_jobtap_wait). */
    struct fjt_call *call;  /* its reserve, held until it is queued again */
    flux_watcher_t *timer;  /* queues it again */
    int64_t wait_since_ms;  /* monotonic, the first 503; 0: not waiting */
    long backoff_ms;        /* the next retry's delay */
    struct plugin_ctx *ctx; /* for the timer's callback */
    struct pending *next;
};

struct counters {
    unsigned long reserved;
    unsigned long reserve_failed;
    unsigned long released;
    unsigned long release_spooled;
    unsigned long release_failed;
    unsigned long recovered;
    unsigned long reconciled;
    unsigned long pool_waited; /* jobs that waited for VNIs */
};

struct plugin_ctx {
    flux_plugin_t *p;
    flux_t *h;
    struct fjt_conf conf;
    struct fjt_spool *spool;
    struct fjt_worker *worker;
    flux_watcher_t *done_w;
    flux_watcher_t *retry_w;
    flux_watcher_t *reconcile_w;
    char token_name[128];   /* the broker's name for our token, once known */
    bool lease_disabled;    /* the broker answered lease_disabled: reserves
                             * ask for no lease, but one at lease_probe_ms */
    int64_t lease_probe_ms; /* monotonic: when a reserve asks again */
    struct pending *pending;
    struct recover *recovering; /* eventlog lookups outstanding */
    struct counters n;
    char last_error[160];
};

/* The pending entry of job id, or NULL. */
struct pending *vnib_jobtap_pending_find(struct plugin_ctx *ctx, uint64_t id);

/* The pending entry of job id, made if there is none; NULL if out of
 * memory. */
struct pending *vnib_jobtap_pending_add(struct plugin_ctx *ctx, uint64_t id);

/* Forget job id's pending entry, if it has one. */
void vnib_jobtap_pending_remove(struct plugin_ctx *ctx, uint64_t id);

/* End the holds of ours a job still has. */
void vnib_jobtap_end_holds(struct plugin_ctx *ctx,
                           struct pending *q,
                           int status);

/* A job the plugin cannot reserve for: a fatal exception, or with
 * reserve-fatal = false an empty reservation and the job runs without
 * isolation.  Returns the hold's status. */
int vnib_jobtap_fail_job(struct plugin_ctx *ctx, uint64_t id, const char *why);

/* The worker's pipe is readable: take the finished calls and act on
 * each in the reactor. */
void vnib_jobtap_done_cb(flux_reactor_t *r,
                         flux_watcher_t *w,
                         int revents,
                         void *arg);

/* Every retry-ms: send the spooled releases again. */
void vnib_jobtap_retry_cb(flux_reactor_t *r,
                          flux_watcher_t *w,
                          int revents,
                          void *arg);

/* Every reconcile-s, once our token's name is known: list its active
 * reservations (its result releases the lost ones). */
void vnib_jobtap_reconcile_cb(flux_reactor_t *r,
                              flux_watcher_t *w,
                              int revents,
                              void *arg);

/* Queue the release of job id's reservation with the worker: 0, or -1
 * when out of memory. */
int vnib_jobtap_queue_release(struct plugin_ctx *ctx, uint64_t id);

/* A reserve c of job q came back FJT_POOL_SHORT.  Returns 0 when the
 * job waits on for VNIs (q keeps c and queues it again later: a timer
 * with back-off, or vnib_jobtap_wake); -1 when it must not wait
 * (pool-wait-ms is 0, or its wait is over): the caller refuses it. */
int vnib_jobtap_wait(struct plugin_ctx *ctx,
                     struct pending *q,
                     struct fjt_call *c);

/* A release of ours ended: VNIs may come back.  Queue the reserves of
 * the jobs that have waited longest (as many as there are threads) now,
 * and retry them soon after. */
void vnib_jobtap_wake(struct plugin_ctx *ctx);

/* The number of jobs waiting for VNIs now. */
int vnib_jobtap_waiting(const struct plugin_ctx *ctx);

/* Queue the reserve of the job in args for the pending entry q.  On
 * failure the job is failed (vnib_jobtap_fail_job) and q's holds ended. */
void vnib_jobtap_queue_reserve(struct plugin_ctx *ctx,
                               struct pending *q,
                               flux_plugin_arg_t *args);

#pragma GCC visibility pop

#endif /* VNIB_JOBTAP_H */
