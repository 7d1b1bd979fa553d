/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's reservation in the store (store_reservations.c): reserve, read,
 * list, release.  Reserves and releases arriving together are written in
 * one transaction each kind (database.group_max, server/store/group.h).
 */
#ifndef VNIB_SERVER_STORE_RESERVATIONS_H
#define VNIB_SERVER_STORE_RESERVATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"
#include "server/hwstate.h"
#include "server/store/store.h"

struct hostlist;
struct idset;

/* A validated reserve request. */
struct store_reserve {
    const char *job_id;
    long long uid;
    const char *user;
    const char *nodes; /* compressed, canonical hostlist */
    size_t node_count;
    const struct hostlist *hosts; /* the same nodes, sorted (hostlist_uniq) */
    int vni_count;                /* 0-VNIB_SERVICE_VNIS_MAX */
    unsigned tcs_mask;            /* TCLASS_* bits */
    const char *empty_reason;     /* when vni_count is 0, else NULL */
    const char *actor;            /* token name, for the audit trail */
    const struct idset *pool;     /* vni.pool */
    const char *hwcoll_mode;      /* auto, on, off (as requested) */
    enum hwstate hwcoll_state;    /* disabled, not_eligible or pending */
    const char *hwcoll_reason;    /* why not, or NULL */
    const char *fm_job_id;        /* when pending */
    int addrs_per_job;            /* when pending */
    int64_t deadline_ns; /* not written after this (monotonic); 0: none */
    /* A lease (schema/0021): the reservation is presumed (an existing
     * one becomes so: store_reserve); lease_until (Unix seconds, 0: no
     * lease signed)
     * the expiry of the lease the caller signs once this returns, and
     * lease_skew_s the clock skew it allows: its VNIs cool down until
     * then, after a retry's too.
     */
    bool presumed;
    long long lease_until;
    long lease_skew_s;
};

/* Reserve, or find the job's active reservation (*createdp false) when
 * the same actor made it for the same uid and nodes: the reply is that
 * reservation as it is, whatever else the request asks, and then
 * STORE_DIFFERS names what else differs (user, vni_count, hwcoll, lease,
 * tcs_mask), when anything does.  A request with a lease makes a
 * reservation that was not presumed presumed; one without leaves a
 * presumed one so.  The reply carries STORE_SEALED_TOKEN like store_get's.
 * Fails with EEXIST when the job has an active reservation of another
 * actor, uid or nodes (errp names which differ), ENOSPC
 * when the pool has too few free VNIs (errp says how many were asked for and
 * how many are free), ECANCELED when a->deadline_ns passed before the
 * reserve was written (nothing was).
 */
int store_reserve(struct store *s,
                  const struct store_reserve *a,
                  json_t **resp,
                  bool *createdp,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

/* The newest reservation of a job (ENOENT if none).  With node non-NULL,
 * *memberp says whether that node is in the job's node list; counts adds
 * the per-node cleanup counts (costly for very large jobs).  The sealed
 * session token, when there is one, is in the internal key
 * STORE_SEALED_TOKEN (hex), which callers must remove before replying.
 */
int store_get(struct store *s,
              const char *job_id,
              const char *node,
              bool counts,
              json_t **resp,
              bool *memberp,
              vnib_error_t *errp) VNIB_MUST_CHECK;

#define STORE_SEALED_TOKEN "_sealed_token"

/* The key of a reserve's reply that lists, as an array of field names,
 * what the request asked differently from the existing reservation it
 * found (absent when nothing differs, or the reservation is new).
 */
#define STORE_DIFFERS "differs"

/* Whether reservation resv_id is job_id's active reservation (*activep),
 * which a job token's caller must hold (server/api/steps.c): a job
 * released, or reserved again under the same id, leaves it.  Returns 0,
 * or -1 with errno and errp when the database fails.
 */
int store_job_active_is(struct store *s,
                        const char *job_id,
                        long long resv_id,
                        bool *activep,
                        vnib_error_t *errp) VNIB_MUST_CHECK;

/* A page of reservations, oldest first: {"reservations": [...], "next"}. */
struct store_list {
    const char *state; /* NULL: any */
    long long uid;     /* -1: any */
    const char *node;  /* NULL: any */
    long long after;   /* reservation id cursor (0: from the start) */
    int limit;         /* 1-1000 */
};
int store_list(struct store *s,
               const struct store_list *q,
               json_t **pagep,
               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Release the job's newest reservation (ENOENT if none).  *donep is true
 * when it is released (now or before), false while its VNIs stay
 * quarantined for nodes to confirm.  force ends the quarantine now.
 */
int store_release(struct store *s,
                  const char *job_id,
                  long long reservation_id,
                  const char *actor,
                  bool force,
                  json_t **resp,
                  bool *donep,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

/* GET /v1/reservations/{job_id}/nodes: the job's current reservation's
 * nodes by their last report, and at most `limit` of the reports
 * (render_job_nodes).  -1 with errno ENOENT when the job has none.
 */
int store_job_nodes(struct store *s,
                    const char *job_id,
                    size_t limit,
                    json_t **resp,
                    vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_RESERVATIONS_H */
