/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hardware collectives in the store (store_fm.c): the Fabric Manager's
 * answers to reserves, the deferred reserves, the queue of FM operations
 * (schema/0003), reconciliation with the FM's jobs, and the leader.
 */
#ifndef VNIB_SERVER_STORE_FM_H
#define VNIB_SERVER_STORE_FM_H

#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"
#include "server/hwstate.h"
#include "server/store/store.h"
#include "server/store/store_steps.h"

/* What recording a Fabric Manager answer did. */
enum store_hwset_outcome {
    STORE_HWSET_OK,         /* recorded */
    STORE_HWSET_NOT_ACTIVE, /* the job ended: delete the FM job */
    STORE_HWSET_UNCHANGED,  /* nothing to record (already moved on) */
    STORE_HWSET_NOT_FOUND,  /* no such reservation */
};

/* Record the Fabric Manager's answer (see vnib_hwcoll_set in schema/0016):
 * state reserved (sealed_hex: the sealed token), unavailable (with its
 * cause, and reason: the text clients read), released or lost; cause is
 * HWSTATE_CAUSE_NONE but for unavailable.  *outcomep says what it did.  resp
 * (may be NULL) receives the reservation.  Answers recorded at the same time
 * commit together (database.group_max).
 */
int store_hwcoll_set(struct store *s,
                     long long id,
                     enum hwstate state,
                     enum hwstate_cause cause,
                     const char *reason,
                     const char *sealed_hex,
                     const char *actor,
                     json_t **resp,
                     enum store_hwset_outcome *outcomep,
                     vnib_error_t *errp) VNIB_MUST_CHECK;

/* Up to `limit` reservations with Fabric Manager work, oldest first, each
 * {"id", "fm_job_id", "hwcoll_state", "active"}.  Several brokers may pick
 * the same item: deleting an FM job is idempotent and vnib_hwcoll_set only
 * moves forward, so doing it twice is harmless.
 */
int store_hwcoll_work(struct store *s,
                      int limit,
                      json_t **workp,
                      vnib_error_t *errp) VNIB_MUST_CHECK;

/* Defer pending reservation id's FM reserve to the background workers
 * (schema/0005), with reason; *resp receives the reservation.  -1 with
 * EEXIST when it is no longer pending.
 */
int store_hwcoll_defer(struct store *s,
                       long long id,
                       const char *reason,
                       const char *actor,
                       json_t **resp,
                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* Claim up to `limit` deferred reserves that are due, for lease_s seconds
 * (another worker may take one whose lease ended), each {"id",
 * "fm_job_id", "active", "attempts"}; attempts counts earlier claims.
 */
int store_hwcoll_claim(struct store *s,
                       int limit,
                       int lease_s,
                       json_t **workp,
                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* Live reservations by hwcoll state: {"reserved": N, ...}. */
int store_hwcoll_counts(struct store *s,
                        json_t **countsp,
                        vnib_error_t *errp) VNIB_MUST_CHECK;

/* Confirm what the FM did and claim what is next, in one transaction.
 * done[0..ndone-1] (ndone <= STORE_FM_DONE_MAX) are operations the FM
 * confirmed: each is forgotten, and a deleted job's reservation becomes
 * hwcoll released.  Then up to `limit` (0: none) due operations are
 * claimed for lease_s seconds into *opsp, each {"id", "reservation_id",
 * "fm_job_id", "op" (delete_job, release_step), "step_id", "attempts"};
 * another worker may claim one again only after the lease.
 */
#define STORE_FM_DONE_MAX 64
int store_fm_next(struct store *s,
                  const long long *done,
                  size_t ndone,
                  const char *actor,
                  int limit,
                  int lease_s,
                  json_t **opsp,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

/* Operation id failed: due again after delay_s. */
int store_fm_retry(struct store *s,
                   long long id,
                   const char *error,
                   double delay_s,
                   vnib_error_t *errp) VNIB_MUST_CHECK;

/* Queue the release of one job step's trees; *outcomep says what it did.
 */
int store_step_release(struct store *s,
                       const char *job_id,
                       const char *step_id,
                       const char *actor,
                       enum store_step_outcome *outcomep,
                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* The database's clock, as text (reconciliation compares with it). */
int store_db_now(struct store *s, char *buf, size_t size, vnib_error_t *errp)
    VNIB_MUST_CHECK;

/* Reconcile with the FM's job ids of our prefix, listed at listed_at:
 * [{"kind": "release"|"lost", "job_id", "fm_job_id"}].
 */
int store_reconcile(struct store *s,
                    char *const *ids,
                    size_t n,
                    const char *listed_at,
                    const char *actor,
                    json_t **resultp,
                    vnib_error_t *errp) VNIB_MUST_CHECK;

/* Queued operations and the age of the oldest, in seconds. */
int store_fm_queue_stats(struct store *s,
                         long long *depthp,
                         double *oldest_sp,
                         vnib_error_t *errp) VNIB_MUST_CHECK;

/* The replica that leads: {"replica", "since"} or null. */
int store_leader_get(struct store *s,
                     json_t **leaderp,
                     vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_FM_H */
