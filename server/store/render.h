/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The client's JSON for what the store reads: a reservation in the API's
 * shape (server/api/openapi.yaml) with its "hwcoll" object and the job
 * environment (SLINGSHOT_*, FI_CXI_*), a node's view, the pool, a VNI's
 * holder, an audit event and a page of a list.
 *
 * The store hands over plain text, as the database wrote it (NULL for SQL
 * NULL); nothing here knows SQL or libpq.  Every function returns a new
 * reference, or NULL with errno ENOMEM.  A value handed to a builder that
 * takes references ("o" below) is the builder's, even when it fails.
 */
#ifndef VNIB_SERVER_RENDER_H
#define VNIB_SERVER_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "server/config.h"

struct idset;

/* A reservation as the database gives it, every field text. */
struct render_row {
    const char *id;
    const char *job_id;
    const char *state; /* NULL: not a reservation row */
    const char *uid;
    const char *user;
    const char *nodes;
    const char *node_count;
    const char *vni_count;
    const char *vnis; /* "1024,1025" */
    const char *empty_reason;
    const char *tcs_mask; /* decimal */
    const char *created_at;
    const char *created_by;
    const char *release_requested_at;
    const char *released_at;
    const char *released_by;
    const char *forced; /* "t" or "f" */
    const char *counts; /* "creating,created,destroyed,failed", or NULL */
    const char *hwcoll_mode;
    const char *hwcoll_state;
    const char *hwcoll_reason;
    const char *fm_job_id;
    const char *addrs_per_job;
    /* "t" when every node of the list holds services until it reports
     * destroyed (schema/0021: a lease was asked for); "f" or NULL not.
     */
    const char *presumed;
    /* A step's row (job_id "<job>#<step>", schema/0017): its job's
     * reservation, NULL when unknown (and for a job's row).
     */
    const char *parent_vnis;
    const char *parent_hwcoll_mode;
    const char *parent_hwcoll_state;
    const char *parent_hwcoll_reason;
    const char *parent_fm_job_id;
    const char *parent_addrs_per_job;
};

/* A reservation; the cleanup counts are included when f carries them.
 * The session token is never part of it: only callers allowed to see it
 * add it.  A step's (job_id "<job>#<step>") shows "job_id" and "step_id"
 * apart, "job_vnis", its job's "hwcoll", and an environment whose
 * SLINGSHOT_VNIS are the step's VNIs and then the job's, with the job's
 * FI_CXI_* variables and FI_CXI_COLL_JOB_STEP_ID; a job's has no step_id.
 */
json_t *render_reservation(const struct config *cfg,
                           const struct render_row *f);

/* One of a node's reservations, with the node's own report. */
struct render_node_entry {
    struct render_row res;
    /* creating, created, destroyed, failed; none when the node sent no
     * report, pending when it sent none to a presumed reservation (which
     * it holds until it reports destroyed)
     */
    const char *cxi;
    const char *services; /* JSON array text */
};

/* The node view of GET /v1/nodes/{node}: entries e[0..n-1], and its drain
 * record (reason and time are shown only when drained).
 */
json_t *render_node_view(const struct config *cfg,
                         const char *node,
                         const struct render_node_entry *e,
                         size_t n,
                         bool drained,
                         const char *drained_reason,
                         const char *drained_at);

/* One node's last report on a reservation, every field text. */
struct render_report {
    const char *node;
    const char *cxi;        /* creating, created, destroyed, failed */
    const char *services;   /* JSON array text */
    const char *message;    /* may be NULL */
    const char *updated_at; /* ISO 8601 */
};

/* GET /v1/reservations/{job_id}/nodes: the reservation's node list (the
 * hostlist `nodes`, decoded with at most max_names names: its stored
 * node count) split by each
 * node's last report, "pending" for a node that has sent none, as a
 * hostlist and a count per state; "holding", the nodes that may still
 * hold its services (creating, created, failed, and pending too when the
 * reservation is presumed); and the reports r[0..n-1] themselves,
 * at most `limit` of them, in the order given, with "reports_total" n.
 * Returns NULL with errno ENOMEM, or EINVAL when nodes does not decode.
 */
json_t *render_job_nodes(const char *job_id,
                         long long reservation_id,
                         const char *state,
                         bool presumed,
                         const char *nodes,
                         const struct render_report *r,
                         size_t n,
                         size_t limit,
                         size_t max_names);

/* GET /v1/pool: occupancy against the configured pool; cursor is the last
 * VNI handed out (NULL: none yet); cooling the VNIs of the pool neither
 * held nor free yet, waiting for the leases that named them to expire.
 */
json_t *render_pool(const struct idset *pool,
                    long long active,
                    long long releasing,
                    long long outside,
                    long long cooling,
                    const char *cursor);

/* GET /v1/vnis/{vni}: state free, active, quarantined or cooling; res
 * ("o") the reservation that holds or held it, or NULL; usable_at, a
 * cooling VNI's, when a reserve may take it (NULL: null).
 */
json_t *render_vni(int vni,
                   bool in_pool,
                   const char *state,
                   json_t *res,
                   const char *last_released_at,
                   const char *usable_at);

/* One audit event; detail is JSON object text.  A step's event (job_id
 * "<job>#<step>") shows "job_id" and "step_id" apart.
 */
struct render_event {
    const char *id;
    const char *time;
    const char *reservation_id;
    const char *job_id;
    const char *node;
    const char *actor;
    const char *action;
    const char *detail;
};
json_t *render_event(const struct render_event *ev);

/* A page: {key: list ("o"), "next": next or null}. */
json_t *render_page(const char *key, json_t *list, const char *next);

#endif /* !VNIB_SERVER_RENDER_H */
