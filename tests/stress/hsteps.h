/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's steps as Slurm's step manager handles them (history --steps).
 *
 * The step manager runs with the job: it holds the job token that the
 * job's reserve answered with (ROLE_JOB, good only for that job's steps
 * while that reservation is the job's active one), never the scheduler's
 * token, and reserves each step's own VNIs (PUT
 * /v1/reservations/{job}/steps/{step}), reads them (GET) and ends the step
 * (DELETE) with it.  hsteps does that for one job of a client thread,
 * retrying a request that got no reply or a 5xx (but 503
 * vni_pool_exhausted) on the next replica as every request of the client
 * is (history_request), and records every attempt and one struct hstep
 * per step in the thread's log (hrec.h).
 *
 * A retried step reserve whose earlier attempt committed unseen (a
 * replica killed after its commit) gets that step back: the API answers
 * 200 with the step's active reservation when nodes and vni_count are the
 * same, and a late orphan of a step already answered and ended is 409
 * reservation_superseded (never seen by the client, whose replica died).
 * The checker holds the run to that (hstepcheck.h).
 */
#ifndef VNIB_TESTS_HSTEPS_H
#define VNIB_TESTS_HSTEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/stress/history.h"

/* Room for a job token ("vnibjob.<id>.<job_id>.<mac>"). */
#define HSTEPS_TOKEN_SIZE 256

/* Job ji (an index into c's jobs) was acknowledged on the nodes hostlist,
 * with job token token: reserve 1-2 steps of it, each with 1-2 VNIs of
 * its own (at most what a CXI service holds beside the job's) on all its
 * nodes (step 0) or its first (step 1), read each acknowledged one back,
 * then end each; all with the job token.  A step reserve that failed
 * after an attempt that may have committed is ended all the same.
 * Returns -1 only when the client broke (out of memory).
 */
int hsteps_run(struct client *c, uint64_t ji, const char *hostlist,
               const char *token);

/* Job ji's release was first sent at t_send, and answered (acked) or not.
 * Releasing a job releases its active steps in the same transaction, so
 * a step of it not ended before is held until t_send at the latest, and
 * abandoned when the release was not answered either.
 */
void hsteps_job_released(struct client *c, uint64_t ji, int64_t t_send,
                         bool acked);

#endif /* !VNIB_TESTS_HSTEPS_H */
