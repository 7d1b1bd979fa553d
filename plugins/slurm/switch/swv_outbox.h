/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_outbox: slurmctld's releases, sent by a thread of their own.
 *
 * slurmctld ends a step (switch_p_job_step_complete) and a job
 * (switch_p_job_complete) under its job write lock, and a synchronous
 * DELETE there holds every other RPC for a round trip and a commit.  So
 * a release is written to the outbox, a folder of the release spool
 * (vnib_release_spool/outbox/, one empty file per release, its name
 * saying what: "job.JOB.RESERVATION" or "step.JOB.STEP"), and a thread
 * sends it, in order, and removes the file once the broker answered.
 * Writing the file is all the lock path does: it survives a kill or a
 * restart of slurmctld, whose next start sends what is left; the thread
 * fsyncs the folder before each batch it sends, so a crash of the host
 * loses at most the releases of the last few milliseconds, which the
 * reconcile (vnib-slurm-hook reconcile) then makes, as for a slurmctld
 * killed between a job's end and its release.
 *
 * A job's release names the reservation it ends when it is known, so a
 * late one never ends a requeued job's next reservation; a job's release
 * makes its steps' pending ones needless (releasing a job releases its
 * steps), so they are dropped.  Before a job is reserved again, its
 * pending releases are sent first (swv_outbox_drain), whatever the
 * thread is doing.
 *
 * The thread retries a release the broker did not answer (or answered
 * 429 or 5xx) with back-off, 100 ms doubling to 5 s, for as long as it
 * takes; a refusal (any other 4xx) ends it: the outbox's caller says what
 * then (a job's release goes to the reconcile's spool).
 */
#ifndef SWV_OUTBOX_H
#define SWV_OUTBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "vnib/error.h"

/* What a release is. */
struct swv_release {
    bool step;        /* a step's, else the job's */
    uint32_t job_id;  /* digits only in the broker */
    uint32_t step_id; /* a step's */
    long long resv;   /* a job's reservation; 0 unknown (the newest) */
};

/* Send one release: the HTTP status, or -1 when no answer came (errp). */
typedef int (*swv_outbox_send_fn)(void *arg,
                                  const struct swv_release *r,
                                  vnib_error_t *errp);

/* What came of a release the thread sent (status as send's), for the
 * caller's log and for refusals; ms is how long the request took. */
typedef void (*swv_outbox_done_fn)(void *arg,
                                   const struct swv_release *r,
                                   int status,
                                   double ms,
                                   const char *error);

struct swv_outbox;

/* The outbox in dir (made 0700 when missing; one that others may write
 * is refused), with what a previous slurmctld left in it queued, and its
 * thread started.  NULL with errno and errp. */
struct swv_outbox *swv_outbox_create(const char *dir,
                                     swv_outbox_send_fn send,
                                     swv_outbox_done_fn done,
                                     void *arg,
                                     vnib_error_t *errp);

/* Stop the thread (after the release it is sending) and free; what is
 * left stays in the folder for the next start.  NULL accepted. */
void swv_outbox_destroy(struct swv_outbox *ob);

/* Queue r: its file written, the thread woken.  0, or -1 with errno and
 * errp (the file could not be written: the caller releases it itself). */
int swv_outbox_add(struct swv_outbox *ob,
                   const struct swv_release *r,
                   vnib_error_t *errp);

/* Send job_id's pending releases now, from the caller's thread with
 * send (waiting for one the thread is sending).  0 when none is left, -1
 * with errp when one got no answer (it stays queued). */
int swv_outbox_drain(struct swv_outbox *ob,
                     uint32_t job_id,
                     swv_outbox_send_fn send,
                     void *arg,
                     vnib_error_t *errp);

/* How many releases wait (tests, logs). */
int swv_outbox_pending(struct swv_outbox *ob);

#endif /* !SWV_OUTBOX_H */
