/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Short deadlines in the history client (history --deadline-ms MIN-MAX).
 *
 * Some jobs (--deadline-pct of them) send each reserve attempt with a
 * Vnib-Deadline-Ms drawn from MIN-MAX, a few milliseconds to tens, so
 * that under load some expire while queued for a group commit (or for a
 * request worker).  The broker promises (openapi.yaml, "Deadlines") that
 * a request so answered, 503 deadline_exceeded, has done nothing.  The
 * client therefore counts such a reply as certain, not as an attempt
 * that may have committed unseen: half of those jobs are given up at
 * their first one, as a scheduler whose job start timed out (no release
 * follows: there is nothing to release), the others are retried as any
 * 5xx, a fresh deadline drawn for each attempt.
 *
 * hdeadline_check() then holds the broker to its promise, for every job
 * that got a deadline_exceeded and no attempt that may have committed
 * unseen (no reply, or another 5xx):
 *
 *   - a job given up (or whose every attempt expired) has no
 *     reservation: no reserve event in the audit trail, none in the
 *     database (GET /v1/reservations/{job} is 404), none live at the end
 *     (hcheck.c's end state counts it as leaked, since such a job is not
 *     abandoned);
 *   - a job acknowledged after an expired attempt was created by the
 *     acknowledging attempt (201, not the 200 of a reservation that
 *     existed), with exactly one reserve event, the acknowledged one;
 *
 * and that the run tested something: some reserve attempts carrying a
 * deadline were answered deadline_exceeded.  It prints how many expired
 * queued for a group commit and how many waiting for a worker.
 */
#ifndef VNIB_TESTS_HDEADLINE_H
#define VNIB_TESTS_HDEADLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/stress/hcheck.h"
#include "tests/stress/history.h"

/* Decide whether job j (a new job of c) sends short deadlines, and
 * whether it is given up at its first deadline_exceeded.
 */
void hdeadline_job(struct client *c, struct hjob *j);

/* The Vnib-Deadline-Ms of a reserve attempt of job j (0: none). */
int hdeadline_ms(struct client *c, const struct hjob *j);

/* Attempt r of a request for job ji (an index into c's jobs) was
 * answered 503 deadline_exceeded: counts it for a reserve, and returns
 * true when the job gives up now (no further attempt).
 */
bool hdeadline_expired(struct client *c, uint64_t ji, const struct hrec *r);

/* Print the deadline invariants (above) of a run with --deadline-ms.
 * Returns the number that failed, or -1 (errno ENOMEM) when the check
 * itself could not run.
 */
int hdeadline_check(const struct hcheck_input *in);

#endif /* !VNIB_TESTS_HDEADLINE_H */
