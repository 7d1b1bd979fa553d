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
 * less what started jobs have claimed and the broker does not count yet.
 *
 * A job's need is its own VNIs and, when it asks for per-step VNIs, its
 * first step's: a step reserves its own VNIs besides the job's, and a
 * job admitted for its own alone would see its first step fail when the
 * pool ran dry in between.  Only the first step is counted: steps that
 * run one after another need no more at once, and a job that runs
 * several at a time takes the rest from the pool like any job (counting
 * them all would hold a job for steps it may never run together).  A
 * job that needs nothing is always admitted, whatever the count.
 *
 * The test claims nothing: slurmctld also asks it for jobs it does not
 * start then (a submission's test, a pass that fails later); a job
 * claims when it really starts (swv_free_claim), under its id.  A claim
 * ends when the broker's count shows the job: once the plugin has
 * reserved it (swv_free_reserved) and a poll begun after that reserve
 * has answered.  It also ends when the job ends before reserving
 * (swv_free_ended), and in any case after claim_ms (a job that never
 * reaches a step).  So a job is never counted twice, in a claim and in
 * the broker's count, past the poll that shows its reservation.
 *
 * A job told to wait is tried again at slurmctld's next scheduling
 * pass, which nothing in Slurm triggers when VNIs come back: when a
 * poll finds more VNIs free than a refused job saw, the thread calls
 * the nudge given at creation (slurmctld's queue_job_scheduler).
 *
 * The count exists before the first job is admitted: creation waits up
 * to first_ms for the first poll's answer.  The answer is advice: the
 * real reserve still fails closed.  While the broker does not answer (a
 * poll failed, or the count is unknown: the first poll failed or took
 * longer than first_ms), a job that needs VNIs waits for it, up to the
 * hold (swv_free_set_hold) counted from the start of the last poll it
 * answered, or from the hold's start while it has answered none: a
 * short outage (a switchover, a restart) delays jobs instead of failing
 * them at their reserve.  Jobs held are nudged when the broker answers
 * again and when the hold runs out.  Past the hold, or with a hold of 0,
 * the count is used while fresh and, once stale (no answer for 3
 * intervals) or unknown, every job is admitted and the reserve decides
 * (the outage policy), so a long outage never holds the whole queue.
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

/* What the poll thread tells the log. */
enum swv_free_event {
    SWV_FREE_FAILING,   /* a fetch failed after one that answered;
                           text: why */
    SWV_FREE_BACK,      /* a fetch answered after one that failed */
    SWV_FREE_HOLD_OVER, /* the hold ran out: jobs start without the
                           broker; text: its last error */
};

/* Called on the poll thread at each event, once per change. */
typedef void (*swv_free_log_fn)(void *arg,
                                enum swv_free_event event,
                                const char *text);

struct swv_free;

/* Called on the poll thread when VNIs came back for a refused job. */
typedef void (*swv_free_nudge_fn)(void);

/* A count refreshed every interval_ms by a thread started here, which
 * returns once the first fetch answered or after first_ms; NULL with
 * errno and errp.  arg is passed to fetch and log; nudge may be NULL.
 * Without fetch no thread runs (tests feed it with swv_free_update_at).
 */
struct swv_free *swv_free_create(long interval_ms,
                                 long claim_ms,
                                 long first_ms,
                                 swv_free_fetch_fn fetch,
                                 swv_free_log_fn log,
                                 swv_free_nudge_fn nudge,
                                 void *arg,
                                 vnib_error_t *errp);

/* Hold jobs that need VNIs up to hold_ms while the count is unknown or
 * stale, counted from the start of the broker's last answer, or from
 * since_ms while it has not answered yet (0, the default: no hold). */
void swv_free_set_hold(struct swv_free *f, long hold_ms, int64_t since_ms);

/* Stop the thread and free (NULL accepted). */
void swv_free_destroy(struct swv_free *f);

/* May a job needing `need` VNIs of its own (-1: the broker's default)
 * and `step_need` for its first step start now?  true or false; *freep
 * receives the count it was compared with, -1 when unknown: false with
 * -1 means that it waits for the broker (the hold), false with a count
 * that it waits for VNIs.  Never blocks on I/O. */
bool swv_free_admit(struct swv_free *f, int need, int step_need, long *freep);

/* May a step of job job_id, whose job holds job_need VNIs (-1: the
 * broker's default), take step_need VNIs of its own from the pool now,
 * without taking what jobs admitted before it were promised?  The
 * VNIs free and unclaimed count, and the job's own claim for its first
 * step.  true also when the count is unknown or stale, and when its job
 * holds none (the step has nothing else to run on: the broker decides);
 * *availp receives what it was compared with, -1 then.  A step that does
 * not fit runs on its job's VNIs (vnib_step_fallback=job) instead of
 * taking a VNI another job's first step needs.  Never blocks on I/O. */
bool swv_free_step_fits(struct swv_free *f,
                        uint32_t job_id,
                        int job_need,
                        int step_need,
                        long *availp);
/* Job job_id starts with that need: claim it (a claim of the same job
 * replaces its older one). */
void swv_free_claim(struct swv_free *f,
                    uint32_t job_id,
                    int need,
                    int step_need);

/* The plugin reserved job job_id at the broker, with its first step's
 * VNIs too when with_step: those parts of its claim end at the next
 * poll's answer.  Nothing when it holds no claim; f may be NULL. */
void swv_free_reserved(struct swv_free *f, uint32_t job_id, bool with_step);

/* Job job_id ended: what it claimed and did not reserve ends now. */
void swv_free_ended(struct swv_free *f, uint32_t job_id);

/* The same at monotonic time now_ms (tests). */
bool swv_free_admit_at(
    struct swv_free *f, int need, int step_need, int64_t now_ms, long *freep);
bool swv_free_step_fits_at(struct swv_free *f,
                           uint32_t job_id,
                           int job_need,
                           int step_need,
                           int64_t now_ms,
                           long *availp);
void swv_free_claim_at(struct swv_free *f,
                       uint32_t job_id,
                       int need,
                       int step_need,
                       int64_t now_ms);
void swv_free_reserved_at(struct swv_free *f,
                          uint32_t job_id,
                          bool with_step,
                          int64_t now_ms);

/* The last fetch's error into errp ("" when it answered). */
void swv_free_last_error(struct swv_free *f, vnib_error_t *errp);

/* True once when VNIs came back for a refused job since the last call:
 * more are free and unclaimed than the last refused job saw; or when a
 * job waited for the broker and it answered again or the hold ran out. */
bool swv_free_should_nudge(struct swv_free *f, int64_t now_ms);

/* Set the count as a fetch begun at begun_ms would (tests; the thread
 * uses it): the claims of jobs reserved before begun_ms end. */
void swv_free_update_at(struct swv_free *f,
                        long free_vnis,
                        long per_job_default,
                        int64_t begun_ms);

/* A fetch failed at now_ms with err (tests; the thread uses it): while
 * the hold lasts, jobs that need VNIs wait for the broker from now on,
 * not only once the count is stale.  True once per outage when the hold
 * has run out. */
bool swv_free_failed_at(struct swv_free *f,
                        const vnib_error_t *err,
                        int64_t now_ms);

#endif /* !SWV_FREE_H */
