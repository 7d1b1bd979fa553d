/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hardware collectives: Fabric Manager multicast reservations per job.
 *
 * For each eligible job the broker asks the Fabric Manager (FM) for a
 * multicast reservation and keeps the session token it answers, sealed,
 * in the database.  The FM is never allowed to fail a job: if it is down,
 * slow past hwcoll.reserve_timeout_ms, or refuses, the VNI reservation
 * stands and the job's hwcoll state says "unavailable" and why.
 *
 * The work that must not be lost lives in the database, not here: a
 * released job's FM reservation is marked "releasing" in the same
 * transaction as the release, and a background worker deletes it in the
 * FM and records "released".  The same worker checks each reserve that
 * timed out, because the FM may still have completed it: the late
 * reservation is adopted while the job is active and deleted otherwise,
 * so no orphan is left behind.
 *
 * At most hwcoll.request_concurrency reserves wait on the FM in request
 * threads at once; past that a reserve is deferred: marked in the
 * database and answered at once with "pending", and a worker makes the
 * FM call (schema/0005).
 */
#ifndef VNIB_SERVER_HWCOLL_H
#define VNIB_SERVER_HWCOLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "vnib/error.h"
#include "server/store/store_reservations.h"

struct broker;
struct store_reserve;
struct hwcoll;

/* When hwcoll.enabled, create the FM client and start the threads: the
 * release-queue workers and the NOTIFY listener (fmqueue.c), the leader
 * (fmleader.c).
 * The FM is not contacted: the broker starts and serves VNIs while the FM
 * is unreachable.
 */
struct hwcoll *hwcoll_create(struct broker *b,
                             vnib_error_t *errp) VNIB_MUST_CHECK;

/* Stop those threads and free (NULL accepted). */
void hwcoll_destroy(struct hwcoll *h);

/* Decide what a new reservation gets, from the request's mode ("auto",
 * "on", "off") and its node count: fills a's hwcoll fields (state
 * HWSTATE_DISABLED, _NOT_ELIGIBLE or _PENDING, the reason, the FM job id and
 * addresses).  fm_job_id is storage for the id, at least 300 bytes.
 */
void hwcoll_plan(struct hwcoll *h,
                 const char *mode,
                 struct store_reserve *a,
                 char *fm_job_id,
                 size_t size);

/* After a reservation with hwcoll state "pending" was committed: reserve
 * in the FM (bounded by hwcoll.reserve_timeout_ms), record the outcome,
 * and replace *resp with the reservation as recorded, session token
 * included; or, when hwcoll.request_concurrency calls are under way
 * already, defer it to the workers and leave it pending.  Never fails the
 * request and never waits for a slot.
 */
void hwcoll_reserve(struct hwcoll *h, const char *actor, json_t **resp);

/* Prepare a reservation for a reply: remove the sealed token, and when
 * the caller may see it (scheduler, admin, a node of the job) add the
 * opened session token to "hwcoll" and "environment".
 */
void hwcoll_reveal(struct hwcoll *h, json_t *res, bool allowed);

/* Wake every worker thread (work may be due: a deferred reserve, a
 * reserve that timed out, the FM back).  Committed queue work also
 * wakes one worker per NOTIFY vnib_fm, on every replica.
 */
void hwcoll_kick(struct hwcoll *h);

/* GET /v1/fabric-manager: configuration, connection state, counts.
 * The last error's reason (the failure's class and HTTP status) is for
 * every caller; its message, the FM's text, only with detail (admins),
 * since it may quote anything; other callers get the reason there too.
 */
int hwcoll_status(struct hwcoll *h,
                  bool detail,
                  json_t **out,
                  vnib_error_t *errp);

/* The hwcoll series for /metrics. */
void hwcoll_write_metrics(struct hwcoll *h, FILE *f);

/* hwcoll.request_concurrency as resolved at start: reserves that may wait
 * on the Fabric Manager inside a request at once.
 */
int hwcoll_request_concurrency(const struct hwcoll *h);

#endif /* !VNIB_SERVER_HWCOLL_H */
