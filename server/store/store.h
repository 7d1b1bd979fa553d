/* The broker's PostgreSQL store: every SQL statement, the connection pool,
 * and the migrations; the one interface the rest of the server uses (its
 * files, server/store*.c, share server/store/store_int.h).
 *
 * This is the only module that includes libpq-fe.h.  Its API speaks in
 * domain terms; callers never see SQL or a PGresult.  Every call is
 * bounded in time: waiting for a pooled connection, connecting, and each
 * statement have their own timeout from [database], and a call that runs
 * out of time fails with EAGAIN so that the HTTP layer answers 503 instead
 * of hanging while the database is away.  A connection that fails is
 * dropped and opened again on next use, so the broker recovers by itself
 * when PostgreSQL restarts.
 *
 * Errors: EAGAIN (database unreachable, timed out, or busy), ESTALE
 * (schema older than this binary), EEXIST (unique or exclusion
 * constraint), EINVAL (rejected input), EIO (anything else); errp gets a
 * short message and the log gets the details.
 */
#ifndef VNIB_SERVER_STORE_H
#define VNIB_SERVER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"
#include "vnib/logger.h"
#include "server/config.h"
#include "server/store/group.h"
#include "server/hwstate.h"

struct store;
struct hostlist;
struct idset;

/* Pool counters, for /metrics. */
struct store_stats {
    unsigned size;               /* configured pool size */
    unsigned open;               /* pool connections currently open */
    unsigned busy;               /* pool connections lent to a request now */
    unsigned idle;               /* open pool connections not lent: <= size */
    unsigned listen_sessions;    /* open sessions outside the pool: LISTEN */
    unsigned leader_sessions;    /* and the leader's advisory lock */
    uint64_t acquires;           /* connections lent out, ever */
    uint64_t waits;              /* acquires that had to wait for a free one */
    uint64_t acquire_timeouts;   /* acquires that gave up */
    uint64_t connects;           /* successful connection attempts */
    uint64_t connect_failures;   /* failed connection attempts */
    uint64_t query_timeouts;     /* statements cancelled for time */
    uint64_t errors;             /* statements that failed otherwise */
    struct group_stats reserves; /* reserve groups (group commit) */
    struct group_stats releases; /* release groups */
    struct group_stats hwsets;   /* groups of FM outcomes (hwcoll_set) */
};

/* Create the pool (connections are opened on demand).  cfg and log are
 * borrowed and must outlive the store.
 */
struct store *store_create(const struct config *cfg,
                           struct logger *log,
                           vnib_error_t *errp) VNIB_MUST_CHECK;

/* Close every connection and free the store (NULL accepted). */
void store_destroy(struct store *s);

/* The schema version this binary needs (its newest migration). */
int store_required_version(void);

/* The database's schema version: 0 when no migration was ever applied.
 * Returns 0 or -1 (EAGAIN when the database cannot be reached).
 */
int store_schema_version(struct store *s,
                         int *versionp,
                         vnib_error_t *errp) VNIB_MUST_CHECK;

/* Apply the missing migrations in one transaction under an advisory lock,
 * so that concurrent callers (two replicas starting) serialise and the
 * later ones find nothing to do; then, in the same transaction, the SQL
 * functions (schema/functions/) unless they are recorded as applied
 * already, and never to a schema newer than this binary's.  *fromp and
 * *top receive the versions before and after.  Returns 0 or -1.
 */
int store_migrate(struct store *s, int *fromp, int *top, vnib_error_t *errp)
    VNIB_MUST_CHECK;

/* Readiness: the database answers within the timeouts, its schema is the
 * one this binary needs (with this binary's SQL functions applied, or
 * replaced since by another build's), and, after a write failed for lack
 * of a resource, a write succeeds again (a probe row in write_probe).
 * Returns 0, or -1 with EAGAIN (unreachable), ESTALE (schema missing or
 * older, or this binary's functions never applied; the message says how
 * to migrate) or EDQUOT (writes still fail).  A
 * call made while another's check runs takes that check's verdict.
 */
int store_check_ready(struct store *s, vnib_error_t *errp) VNIB_MUST_CHECK;

/* Compare the applied migrations' recorded SHA-256 (schema/0013) with the
 * texts this binary carries: -1 with ESTALE, errp naming the file, when
 * one differs; 0 also for a schema too old to record them.  At this
 * binary's version, also -1 with ESTALE when its SQL functions were never
 * applied (schema/0020).
 */
int store_check_migrations(struct store *s, vnib_error_t *errp) VNIB_MUST_CHECK;

/* Messages that carry the database's own words (libpq's connection
 * errors: socket paths, host names, ports, login failures; the server's
 * error text: tables, constraints, values) begin with one of these
 * prefixes and a colon.  They are for the log, never for a client.
 */
#define STORE_MSG_ERROR "database error"
#define STORE_MSG_UNAVAILABLE "database unavailable"
#define STORE_MSG_FULL                                                  \
    "the database cannot write: out of disk space or another resource " \
    "(see the broker log)"

/* The fixed text a client may see in place of message when message
 * carries database text (STORE_MSG_ERROR, STORE_MSG_UNAVAILABLE or
 * STORE_MSG_FULL); NULL
 * when message is the broker's own (pool exhausted, timeouts, conflicts).
 */
const char *store_public_message(const char *message);

/* Snapshot of the pool counters. */
void store_get_stats(struct store *s, struct store_stats *st);

/* ---- reservations ------------------------------------------------------
 *
 * Reservations come back as JSON objects in the API's shape (see
 * server/api/openapi.yaml, built by server/store/render.c), new references the
 * caller owns.  Every write is
 * one committed transaction before the function returns.
 */

/* A validated reserve request. */
struct store_reserve {
    const char *job_id;
    long long uid;
    const char *user;
    const char *nodes; /* compressed, canonical hostlist */
    size_t node_count;
    const struct hostlist *hosts; /* the same nodes, sorted (hostlist_uniq) */
    int vni_count;                /* 0-4 */
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
};

/* Reserve, or find the job's identical active reservation (*createdp
 * false); the reply carries STORE_SEALED_TOKEN like store_get's.  Fails with
 * EEXIST when the job has an active reservation with other parameters, ENOSPC
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

/* A node's report about a job's CXI services. */
struct store_report {
    const char *job_id;
    const char *node;
    const char *cxi;      /* creating, created, destroyed, failed */
    const char *services; /* JSON array text */
    const char *message;  /* may be NULL */
    const char *actor;
    long long reservation_id; /* the reservation the agent acted on; 0 =
                                 whichever the job's report lands on */
    const char *step_id;      /* a step's services; NULL: the job's */
};

/* Why a report was refused. */
enum store_report_refusal {
    STORE_REPORT_ACCEPTED,           /* not refused (or failed otherwise) */
    STORE_REPORT_NOT_FOUND,          /* no reservation (ENOENT) */
    STORE_REPORT_NOT_MEMBER,         /* not in the node list (EPERM) */
    STORE_REPORT_STALE_RESERVATION,  /* not the job's current one (EEXIST) */
    STORE_REPORT_INVALID_TRANSITION, /* the node's state would go back */
    STORE_REPORT_JOB_NOT_ACTIVE,     /* the job is being released (EEXIST) */
};

/* Record a report.  On refusal returns -1 with *refusalp saying why;
 * STORE_REPORT_ACCEPTED when it failed for another reason.
 */
int store_report(struct store *s,
                 const struct store_report *a,
                 json_t **resp,
                 enum store_report_refusal *refusalp,
                 vnib_error_t *errp) VNIB_MUST_CHECK;

/* A node's view: live reservations including it, its reports, drain. */
int store_node(struct store *s,
               const char *node,
               json_t **resp,
               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Clear a node's drained mark; returns the node's view. */
int store_undrain(struct store *s,
                  const char *node,
                  const char *actor,
                  json_t **resp,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

/* Pool occupancy against the configured pool. */
int store_pool(struct store *s,
               const struct idset *pool,
               json_t **resp,
               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Record `pool` as the pool in force and make the free-VNI queue match it
 * (schema/0004): VNIs outside it leave the queue, VNIs of it neither held
 * nor queued join its tail.  The pool recorded before goes to previous
 * ("" if none), the counts to *addedp and *removedp.
 */
int store_pool_sync(struct store *s,
                    const struct idset *pool,
                    char *previous,
                    size_t size,
                    long long *addedp,
                    long long *removedp,
                    vnib_error_t *errp) VNIB_MUST_CHECK;

/* Who holds a VNI, or who held it last. */
int store_vni(struct store *s,
              int vni,
              const struct idset *pool,
              json_t **resp,
              vnib_error_t *errp) VNIB_MUST_CHECK;

/* Which events, in which order. */
struct store_events_query {
    const char *job_id; /* the job's and its steps'; NULL: any */
    const char *action; /* NULL: any */
    const char *node;   /* NULL: any */
    bool desc;          /* newest first */
    long long after;    /* the cursor: an id (0: from the start) */
    int limit;          /* 1-1000 */
};

/* A page of the audit trail: {"events": [...], "next"}; next continues in
 * the same order.
 */
int store_events(struct store *s,
                 const struct store_events_query *q,
                 json_t **resp,
                 vnib_error_t *errp) VNIB_MUST_CHECK;

/* ---- GET /v1/status (store_status.c) ----------------------------------- */

/* The figures /metrics and GET /v1/status share (one statement). */
struct store_status_figures {
    long long quarantine_reservations; /* releasing, VNIs still held */
    long long quarantine_vnis;         /* the VNIs they hold */
    char oldest_since[40];             /* RFC 3339; "" when none */
    double oldest_age_s;               /* 0 when none */
    long long drained;                 /* drained nodes */
};

int store_status_figures(struct store *s,
                         struct store_status_figures *f,
                         vnib_error_t *errp) VNIB_MUST_CHECK;

/* The `limit` oldest quarantined reservations as GET /v1/status lists
 * them: a new array of {"job_id", "step_id" (a step's), "reservation_id",
 * "vnis", "since", "waiting": {"count", "nodes" (compressed hostlist)}}.
 */
int store_quarantine_items(struct store *s,
                           int limit,
                           json_t **itemsp,
                           vnib_error_t *errp) VNIB_MUST_CHECK;

/* The drained nodes: a new {"count", "nodes" (all, compressed), "items":
 * the `limit` newest [{"node", "reason", "since"}]}.
 */
int store_drained(struct store *s,
                  int limit,
                  json_t **drainedp,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

/* Close the quarantines whose nodes have all confirmed; *closedp counts
 * them.
 */
int store_sweep(struct store *s,
                const char *actor,
                int *closedp,
                vnib_error_t *errp) VNIB_MUST_CHECK;

/* Delete released reservations (with their ranges and reports) and audit
 * events older than `days`, at most `batch` reservations; *purgedp counts
 * them.
 */
int store_purge(struct store *s,
                int days,
                int batch,
                int *purgedp,
                vnib_error_t *errp) VNIB_MUST_CHECK;

/* ---- the Fabric Manager queue (schema/0003) ----------------------------- */

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

/* What a step release did. */
enum store_step_outcome {
    STORE_STEP_QUEUED,    /* the FM release is queued */
    STORE_STEP_NO_HWCOLL, /* the job has no FM reservation */
    STORE_STEP_NOT_FOUND, /* no reservation for the job */
};

/* Queue the release of one job step's trees; *outcomep says what it did.
 */
int store_step_release(struct store *s,
                       const char *job_id,
                       const char *step_id,
                       const char *actor,
                       enum store_step_outcome *outcomep,
                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* ---- job steps (store_steps.c, schema/0017) ----------------------------
 *
 * A step reservation is a reservation row keyed "<job>#<step>" whose parent
 * is the job's reservation; its JSON carries "step_id", the job's VNIs
 * ("job_vnis") and an environment with the step's VNIs first (render.c).
 * The job's sealed session token, when there is one, is in
 * STORE_SEALED_TOKEN with the id it was sealed under in STORE_SEALED_ID.
 */
#define STORE_SEALED_ID "_sealed_id"

/* A validated step reserve request. */
struct store_step_reserve {
    const char *job_id;
    const char *step_id;
    long long parent_id; /* the job's active reservation, as checked */
    const char *nodes;   /* compressed, canonical hostlist */
    size_t node_count;
    const struct hostlist *hosts; /* the same nodes, sorted (hostlist_uniq) */
    int vni_count;                /* 0-4 */
    const char *empty_reason;     /* when vni_count is 0, else NULL */
    const char *actor;
    const struct idset *pool;
};

/* Why a step request was refused. */
enum store_step_refusal {
    STORE_STEP_ACCEPTED,       /* not refused (or failed otherwise) */
    STORE_STEP_JOB_NOT_FOUND,  /* the job has no reservation (ENOENT) */
    STORE_STEP_JOB_NOT_ACTIVE, /* the job's newest is released(ing) */
    STORE_STEP_PARENT_CHANGED, /* the job's active one is another now */
    STORE_STEP_CONFLICT,       /* active with other parameters (EEXIST) */
    STORE_STEP_SUPERSEDED,     /* a retry was answered first (EALREADY) */
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
 * force.  ENOENT when the job has no reservation.
 */
int store_step_free(struct store *s,
                    const char *job_id,
                    const char *step_id,
                    const char *actor,
                    bool force,
                    enum store_step_outcome *outcomep,
                    json_t **resp,
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

/* A database session of its own, outside the pool, for LISTEN (channel
 * non-NULL) and for holding the leader's advisory lock.  It reconnects by
 * itself after the database restarts.
 */
struct store_session;
struct store_session *store_session_create(struct store *s,
                                           const char *channel);
void store_session_destroy(struct store_session *ss);

/* Wait up to timeout_ms for notifications: how many arrived (> 0), 0
 * none, -1 the session is down (it reconnects on the next call).
 */
int store_session_wait(struct store_session *ss,
                       int timeout_ms) VNIB_MUST_CHECK;

/* Hold (or keep holding) the leader's advisory lock on this session, and
 * record replica as the leader when it is newly taken.  True while held.
 */
bool store_session_lead(struct store_session *ss, const char *replica);

#endif /* !VNIB_SERVER_STORE_H */
