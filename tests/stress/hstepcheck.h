/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The invariants of a run's job steps (history --steps), reserved and
 * ended by each job's step manager with its job token (hsteps.h).
 *
 * hstepcheck_run() reads the per-thread histories' steps and what the
 * broker said at the end (hcheck.h's input: the audit trail, the live
 * reservations) and prints one PASS or FAIL line per invariant:
 *
 *   - the run did step work: some step reservation was acknowledged;
 *   - every acknowledged step reservation is recorded with its VNIs: its
 *     reserve event (or, failing that, GET of the step) has the id and
 *     the VNIs it was acknowledged with;
 *   - a retried step reserve gets the same step back: a step has at most
 *     one reserve event, an acknowledged step exactly the one it was
 *     answered with, and a 200 (the step existed already) comes only after
 *     an attempt that may have committed unseen;
 *   - every step event is the job token's: the actor of each reserve,
 *     release, quarantine_end and force event of a step is "job:JOB",
 *     never the scheduler's, but for the end of a step the client did not
 *     end itself (its end unanswered, or a reserve that was never
 *     acknowledged), which its job's release ends;
 *   - the step manager reads each acknowledged step back, with the job
 *     token, as it was acknowledged;
 *   - no step is left live after the run, but those of jobs whose release
 *     went unanswered.
 *
 * A step's VNIs are held from its acknowledged reserve until its end (or
 * its job's release): hcheck.c checks them with the jobs' (no VNI in two
 * live reservations, from the replies and from the events).
 */
#ifndef VNIB_TESTS_HSTEPCHECK_H
#define VNIB_TESTS_HSTEPCHECK_H

#include "tests/stress/hcheck.h"

/* Print the step invariants.  Returns the number that failed, or -1
 * (errno ENOMEM) when the check itself could not run.
 */
int hstepcheck_run(const struct hcheck_input *in);

#endif /* !VNIB_TESTS_HSTEPCHECK_H */
