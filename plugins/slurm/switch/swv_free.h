/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_free: slurmctld's in-memory count of the broker's free VNIs, so
 * that a job waits for VNIs instead of starting and failing.
 *
 * Slurm 25.11 and later ask a switch plugin, for every job they are
 * about to start, whether it can (switch_p_job_start(job, test_only)).
 * The question comes under slurmctld's job and node write locks, once
 * per job per scheduling pass, so it must be answered from memory: a
 * background thread polls the broker's free count (GET /v1/pool) every
 * interval, and swv_free_admit compares a job's need with that count
 * less what jobs started recently have claimed and may not have reserved
 * yet (a job reserves at its first step, which may come seconds later).
 * The test claims nothing: slurmctld also asks it for jobs it does not
 * start then (a submission's test, a pass that fails later); a job
 * claims when it really starts (swv_free_claim).  A claim lasts
 * claim_ms, so a job's VNIs are not counted twice for long once the
 * broker counts them.
 *
 * A job told to wait is tried again at slurmctld's next scheduling
 * pass, which nothing in Slurm triggers when VNIs come back: when a
 * poll finds more VNIs free than a refused job saw, the thread calls
 * the nudge given at creation (slurmctld's queue_job_scheduler).
 *
 * The answer is advice: the real reserve still fails closed.  When the
 * count is unknown or stale (the broker unreachable for 3 intervals),
 * every job is admitted and the reserve decides, so a broker outage
 * never holds the whole queue.
 */
#ifndef SWV_FREE_H
#define SWV_FREE_H

#include <stdbool.h>
#include <stdint.h>

#include "vnib/error.h"

/* Fetch the free count and the broker's default VNIs per job; 0 or -1
 * with errp.  Runs on the poll thread. */
typedef int (*swv_free_fetch_fn)(void *arg,
                                 long *freep,
                                 long *per_job_defaultp,
                                 vnib_error_t *errp);

/* Called on the poll thread when a fetch fails or recovers (for logs). */
typedef void (*swv_free_log_fn)(void *arg, bool ok, const char *text);

struct swv_free;

/* Called on the poll thread when VNIs came back for a refused job. */
typedef void (*swv_free_nudge_fn)(void);

/* A count refreshed every interval_ms by a thread started here; NULL
 * with errno and errp.  arg is passed to fetch and log; nudge may be
 * NULL. */
struct swv_free *swv_free_create(long interval_ms,
                                 long claim_ms,
                                 swv_free_fetch_fn fetch,
                                 swv_free_log_fn log,
                                 swv_free_nudge_fn nudge,
                                 void *arg,
                                 vnib_error_t *errp);

/* Stop the thread and free (NULL accepted). */
void swv_free_destroy(struct swv_free *f);

/* May a job needing `need` VNIs (-1: the broker's default) start now?
 * true or false; *freep receives the count it was compared with, -1 when
 * unknown.  O(1), never blocks on I/O. */
bool swv_free_admit(struct swv_free *f, int need, long *freep);

/* The job needing `need` VNIs starts: claim them. */
void swv_free_claim(struct swv_free *f, int need);

/* The same at monotonic time now_ms (tests). */
bool swv_free_admit_at(struct swv_free *f,
                       int need,
                       int64_t now_ms,
                       long *freep);
void swv_free_claim_at(struct swv_free *f, int need, int64_t now_ms);

/* True once when VNIs came back for a refused job since the last call:
 * more are free and unclaimed than the last refused job saw. */
bool swv_free_should_nudge(struct swv_free *f, int64_t now_ms);

/* Set the count as a fetch at now_ms would (tests; the thread uses it). */
void swv_free_update_at(struct swv_free *f,
                        long free_vnis,
                        long per_job_default,
                        int64_t now_ms);

#endif /* !SWV_FREE_H */
