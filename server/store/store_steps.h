/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job step's reservation in the store (store_steps.c, schema/0017).
 *
 * A step reservation is a reservation row keyed "<job>#<step>" whose parent
 * is the job's reservation; its JSON carries "step_id", the job's VNIs
 * ("job_vnis") and an environment with the step's VNIs first (render.c).
 * The job's sealed session token, when there is one, is in
 * STORE_SEALED_TOKEN with the id it was sealed under in STORE_SEALED_ID.
 */
#ifndef VNIB_SERVER_STORE_STEPS_H
#define VNIB_SERVER_STORE_STEPS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"
#include "server/store/store.h"

struct hostlist;
struct idset;

#define STORE_SEALED_ID "_sealed_id"

/* A validated step reserve request. */
struct store_step_reserve {
    const char *job_id;
    const char *step_id;
    long long parent_id; /* the job's active reservation, as checked */
    const char *nodes;   /* compressed, canonical hostlist */
    size_t node_count;
    const struct hostlist *hosts; /* the same nodes, sorted (hostlist_uniq) */
    int vni_count;                /* 0-VNIB_SERVICE_VNIS_MAX */
    const char *empty_reason;     /* when vni_count is 0, else NULL */
    const char *actor;
    const struct idset *pool;
    /* As store_reserve's (store_reservations.h): presumed, the expiry of
     * the lease the caller signs (0: none) and the skew it allows; the
     * step's lease names its job's VNIs too, which cool down with it.
     */
    bool presumed;
    long long lease_until;
    long lease_skew_s;
};

/* Why a step request was refused. */
enum store_step_refusal {
    STORE_STEP_ACCEPTED,       /* not refused (or failed otherwise) */
    STORE_STEP_JOB_NOT_FOUND,  /* the job has no reservation (ENOENT) */
    STORE_STEP_JOB_NOT_ACTIVE, /* the job's newest is released(ing) */
    STORE_STEP_PARENT_CHANGED, /* the job's active one is another now */
    STORE_STEP_CONFLICT,       /* active with other parameters, presumed
                                  or not among them (EEXIST) */
    STORE_STEP_SUPERSEDED,     /* a retry was answered first (EALREADY) */
};

/* What a step release did. */
enum store_step_outcome {
    STORE_STEP_QUEUED,      /* the FM release is queued */
    STORE_STEP_NO_HWCOLL,   /* the job has no FM reservation */
    STORE_STEP_NOT_FOUND,   /* no reservation for the job */
    STORE_STEP_NOT_CURRENT, /* parent_id is not the job's active one */
};

/* Reserve for a step, or find its identical active reservation (*createdp
 * false).  On refusal -1 with *refusalp saying why; ENOSPC (refusal
 * STORE_STEP_ACCEPTED) when the pool has too few free VNIs.
 */
int store_step_reserve(struct store *s,
                       const struct store_step_reserve *a,
                       json_t **resp,
                       bool *createdp,
                       enum store_step_refusal *refusalp,
                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* The newest reservation of a step of the job's current reservation
 * (ENOENT if none); node and *memberp as store_get's, of the step's nodes.
 */
int store_step_get(struct store *s,
                   const char *job_id,
                   const char *step_id,
                   const char *node,
                   json_t **resp,
                   bool *memberp,
                   vnib_error_t *errp) VNIB_MUST_CHECK;

/* End a step: queue the release of its multicast trees (*outcomep) and
 * release its reservation when it has one (*resp, else NULL): quarantined
 * until its nodes confirm, released now when none holds anything or
 * force.  ENOENT when the job has no reservation.  With parent_id > 0
 * (a job token's reservation), nothing is done unless that is the job's
 * active reservation, checked under the job's lock: EPERM and
 * STORE_STEP_NOT_CURRENT otherwise.
 */
int store_step_free(struct store *s,
                    const char *job_id,
                    const char *step_id,
                    long long parent_id,
                    const char *actor,
                    bool force,
                    enum store_step_outcome *outcomep,
                    json_t **resp,
                    vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_STEPS_H */
