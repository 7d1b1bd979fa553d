/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The request workers: a fixed set of threads that run blocking work
 * taken from a bounded queue.
 *
 * http.c hands each request whose route may wait (on PostgreSQL or the
 * Fabric Manager) to these threads, so that libmicrohttpd's own threads
 * only ever parse, queue and send and a slow request never delays the
 * other connections a libmicrohttpd thread polls.  The queue is a ring of
 * fixed size: submitting never allocates and never blocks; when the ring
 * is full the caller is told at once (EAGAIN) and answers 503.
 */
#ifndef VNIB_SERVER_WORKERS_H
#define VNIB_SERVER_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

#include "vnib/error.h"

struct workers;

/* A job.  Called once per submitted job, on a worker thread, with the
 * time it waited in the queue; or, when the pool is destroyed before a
 * worker took it, on the destroying thread with cancelled = true (the
 * job must then give up quickly without doing its work).
 */
typedef void (*workers_run_f)(void *arg, int64_t wait_ns, bool cancelled);

/* Start nthreads threads (>= 1) behind a queue of at most queue_limit
 * (>= 1) waiting jobs.  Returns NULL with errno and errp set.
 */
struct workers *workers_create(int nthreads,
                               int queue_limit,
                               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Queue run(arg).  Returns 0, or -1 with errno EAGAIN (the queue is full)
 * or ESHUTDOWN (the pool is being destroyed); run is then never called.
 * Never blocks.  Thread-safe.
 */
int workers_submit(struct workers *w,
                   workers_run_f run,
                   void *arg) VNIB_MUST_CHECK;

/* Jobs waiting in the queue now (not those running). */
long workers_depth(struct workers *w);

/* Stop: refuse new jobs (ESHUTDOWN), let the running ones finish, call
 * each job still queued with cancelled = true, and join the threads.
 * Idempotent; the object stays valid for workers_submit() and
 * workers_depth() until workers_destroy().
 */
void workers_stop(struct workers *w);

/* Stop if not yet stopped, and free (NULL accepted).  Preserves errno. */
void workers_destroy(struct workers *w);

#endif /* !VNIB_SERVER_WORKERS_H */
