/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fjt_worker: the jobtap plugin's broker calls, off the job-manager's
 * reactor.
 *
 * A job-manager that waited on HTTP would stall every job of the machine,
 * so the plugin never calls the broker itself.  It queues calls here; a
 * few threads, each with its own vnib_client, make them; finished calls
 * come back through a pipe whose read end the plugin watches with a Flux
 * fd watcher (fjt_worker_fd), and fjt_worker_take hands them over in the
 * reactor.  Calls of one job run in the order they were queued and never
 * two at once (a release queued behind its job's reserve waits for it);
 * calls of different jobs run in parallel.
 *
 * A reserve that asks for a lease (the reservation is then presumed and
 * the reply carries the lease the nodes start from) is made again at
 * once without one when the broker signs none (400 lease_disabled), or
 * when a broker older than the recovery rule answers 409
 * reservation_conflict (it wanted a retry to ask as the first did; a
 * newer one answers the job's reservation, made presumed, with a lease).
 *
 * A reserve answered 503 vni_pool_exhausted comes back at once as
 * FJT_POOL_SHORT, after one request: no thread ever waits for VNIs (a
 * thread that did could stand in front of the releases that free them).
 * The plugin holds such a call and queues it again (the same call, its
 * attempts counted on) when VNIs may be free.
 *
 * Releases the broker cannot take (unreachable, 5xx) are kept in the
 * spool (fjt_spool.h) before the call comes back, so a release is never
 * only in memory: FJT_FLUSH calls send them again.  Calls still queued
 * when the worker is destroyed are dropped, releases among them spooled
 * first; a reserve that is dropped is redone by the plugin when it is
 * loaded again (the broker's reserve is idempotent per job).
 *
 * Nothing here knows Flux; the unit tests drive it against a real broker.
 */
#ifndef FJT_WORKER_H
#define FJT_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"

struct fjt_spool;

enum fjt_op {
    FJT_RESERVE,
    FJT_RELEASE,
    FJT_FLUSH, /* send the spooled releases again */
    FJT_LIST,  /* the job ids of the active reservations a token made */
};

/* How a call ended, for the plugin's decision. */
enum fjt_result {
    FJT_OK,          /* reserved (reply set), released, or flushed all */
    FJT_REFUSED,     /* the broker answered no (4xx) */
    FJT_POOL_SHORT,  /* reserve: 503 vni_pool_exhausted, nothing reserved;
                      * the plugin may queue the call again later */
    FJT_UNREACHABLE, /* no answer before the deadline (or 5xx throughout) */
    FJT_SPOOLED,     /* release: kept in the spool, sent again later */
    FJT_FAILED,      /* release: the broker refused it and the spool too */
};

struct fjt_call {
    enum fjt_op op;
    uint64_t id;      /* the Flux job id; 0 for FJT_FLUSH and FJT_LIST */
    char job_id[24];  /* its decimal form, the broker's job_id */
    uint32_t uid;     /* reserve: the job's owner */
    char *nodes;      /* reserve: a hostlist expression (owned) */
    int vni_count;    /* reserve: -1 for the broker's default */
    char hwcoll[8];   /* reserve: "", "on", "off" or "auto" */
    int ncores;       /* reserve: the nodes\' cores (0: they differ) */
    bool lease;       /* reserve: ask for a lease ("lease": true); the
                       * worker clears it when the reservation came
                       * without one */
    char *created_by; /* list: the token's name (owned; NULL: the worker
                         asks the broker, GET /v1/whoami, and sets it) */
    /* Filled in by the worker. */
    enum fjt_result result;
    bool lease_disabled; /* reserve: the broker answered 400
                          * lease_disabled, so it was asked again
                          * without a lease */
    int status;          /* the last HTTP status, or -1 */
    json_t *reply;       /* reserve: the reservation; list: job ids (owned) */
    vnib_error_t error;
    int attempts;
    int64_t started_ms; /* monotonic, when a thread took it */
    int64_t finished_ms;
    struct fjt_call *next;
};

struct fjt_worker_cfg {
    const char *url;
    const char *token;       /* copied */
    const char *cacert;      /* may be NULL */
    long timeout_ms;         /* one HTTP request */
    long reserve_timeout_ms; /* all attempts of one reserve */
    int threads;
};

struct fjt_worker;

/* Start the threads.  spool (borrowed, outlives the worker) keeps the
 * releases.  Returns NULL with errno and errp set.
 */
struct fjt_worker *fjt_worker_create(const struct fjt_worker_cfg *cfg,
                                     struct fjt_spool *spool,
                                     vnib_error_t *errp);

/* Stop: wait for the calls in flight (bounded by the HTTP timeout), spool
 * the releases still queued, drop the rest, join the threads.  Calls not
 * yet taken are freed.  errno is preserved.  NULL is accepted.
 */
void fjt_worker_destroy(struct fjt_worker *w);

/* A new call of op for job id (nodes copied when not NULL).  Free with
 * fjt_call_destroy unless given to fjt_worker_queue.
 */
struct fjt_call *fjt_call_create(enum fjt_op op,
                                 uint64_t id,
                                 const char *nodes);
void fjt_call_destroy(struct fjt_call *c);

/* Queue a call (the worker owns it until fjt_worker_take returns it). */
void fjt_worker_queue(struct fjt_worker *w, struct fjt_call *c);

/* The pipe's read end: readable while finished calls wait. */
int fjt_worker_fd(const struct fjt_worker *w);

/* The finished calls, oldest first, as a list through ->next (the caller
 * owns them); NULL when none.  Drains the pipe.
 */
struct fjt_call *fjt_worker_take(struct fjt_worker *w);

/* Counts for the plugin's query: calls queued, calls in flight. */
void fjt_worker_counts(struct fjt_worker *w, int *queued, int *running);

/* True when a call of job id is queued or in flight. */
bool fjt_worker_busy(struct fjt_worker *w, uint64_t id);

#endif /* !FJT_WORKER_H */
