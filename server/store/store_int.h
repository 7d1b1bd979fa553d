/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The store's private interface, shared by its files (server/store/
 * store*.c) and by no one else: the statement table, the connection
 * pool's structs, running a statement, reading a row, the array literals
 * that carry a group's parameters, and the group commit of reserves,
 * releases and FM answers.  The rest of the server sees only the public
 * headers, server/store/store.h and one per resource (store_*.h, listed
 * in store.h), each of which a caller includes when it uses it; this
 * header includes them all.
 *
 * store.c         the pool, bounded-time statements, errors, statistics,
 *                 sessions (LISTEN and the leader's lock)
 * store_sql.c     every SQL statement, by enum stmt_id
 * store_migrate.c schema versions, migration digests, migrate, the SQL
 *                 functions, readiness
 * store_batch.c   rows, array literals and the group machinery
 * store_reservations.c  reserve, get, list, release
 * store_nodes.c   node reports (in groups of their own), the node view,
 *                 undrain
 * store_pool.c    the pool, VNIs, events, sweep, purge
 * store_fm.c      hardware collectives and the Fabric Manager queue
 * store_steps.c   job steps' reservations (schema/0017)
 * store_status.c  the figures and lists of GET /v1/status
 */
#ifndef VNIB_SERVER_STORE_INT_H
#define VNIB_SERVER_STORE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "vnib/token.h"
#include "server/store/group.h"
#include "server/store/render.h"
#include "server/store/store.h"
#include "server/store/store_fm.h"
#include "server/store/store_migrate.h"
#include "server/store/store_nodes.h"
#include "server/store/store_pool.h"
#include "server/store/store_reservations.h"
#include "server/store/store_status.h"
#include "server/store/store_steps.h"

/* ---- statements (store_sql.c) -------------------------------------------- */

enum stmt_id {
    STMT_SCHEMA_TABLE_EXISTS,
    STMT_SCHEMA_VERSION,
    STMT_SCHEMA_RECORD,
    STMT_MIGRATE_LOCK,
    STMT_SCHEMA_DIGESTS,
    STMT_SCHEMA_DIGEST_SET,
    STMT_FUNCTIONS_STATE,
    STMT_FUNCTIONS_RECORD,
    STMT_SET_TIMEOUT,
    STMT_RESERVE,
    STMT_RES_GET,
    STMT_RES_LIST,
    STMT_RELEASE,
    STMT_REPORT_BATCH,
    STMT_NODE_VIEW,
    STMT_NODE_GET,
    STMT_UNDRAIN,
    STMT_POOL,
    STMT_POOL_SYNC,
    STMT_VNI,
    STMT_EVENTS,
    STMT_EVENTS_DESC,
    STMT_SWEEP,
    STMT_PURGE,
    STMT_HWCOLL_SET_MANY,
    STMT_HWCOLL_WORK,
    STMT_HWCOLL_DEFER,
    STMT_HWCOLL_CLAIM,
    STMT_HWCOLL_COUNTS,
    STMT_FM_NEXT,
    STMT_FM_RETRY,
    STMT_STEP_RELEASE,
    STMT_RECONCILE,
    STMT_FM_QUEUE_STATS,
    STMT_DB_NOW,
    STMT_LEADER_TRY,
    STMT_LEADER_SET,
    STMT_LEADER_GET,
    STMT_PING,
    STMT_WRITE_PROBE,
    STMT_STEP_RESERVE,
    STMT_STEP_GET,
    STMT_STEP_FREE,
    STMT_STATUS_FIGURES,
    STMT_QUARANTINE_ITEMS,
    STMT_DRAINED,
    STMT_JOB_ACTIVE_IS,
    STMT_JOB_REPORTS,
    STMT_COUNT
};

_Static_assert(STMT_COUNT <= 64, "prepared-statement bitmask is 64 bits");

/* A statement: its prepared name, its text, its number of parameters. */
struct store_stmt {
    const char *name;
    const char *sql;
    int nparams;
};

extern const struct store_stmt store_stmts[STMT_COUNT];

/* A reservation leaves the database as a vnib_row (schema/0002): column 0
 * the outcome of a transition, then the reservation, then the cleanup
 * counts.  ROW_* name the columns store_row_fields() reads.
 */
enum {
    ROW_OUTCOME = 0,
    ROW_ID,
    ROW_JOB_ID,
    ROW_STATE,
    ROW_UID,
    ROW_USER,
    ROW_NODES,
    ROW_NODE_COUNT,
    ROW_VNI_COUNT,
    ROW_VNIS,
    ROW_EMPTY_REASON,
    ROW_TCS_MASK,
    ROW_CREATED_AT,
    ROW_CREATED_BY,
    ROW_RELEASE_REQUESTED_AT,
    ROW_RELEASED_AT,
    ROW_RELEASED_BY,
    ROW_FORCED,
    ROW_COUNTS,
    ROW_HWCOLL_MODE,
    ROW_HWCOLL_STATE,
    ROW_HWCOLL_REASON,
    ROW_FM_JOB_ID,
    ROW_ADDRS_PER_JOB,
    ROW_SESSION_TOKEN, /* sealed, hex */
    ROW_NCOLS          /* the first column a query adds after the row */
};

/* ---- the pool (store.c) -------------------------------------------------- */

struct conn {
    PGconn *pg;        /* NULL when not connected */
    bool busy;         /* lent out */
    uint64_t prepared; /* bit per enum stmt_id prepared on this connection */
    bool fresh;        /* opened by the current borrower */
    unsigned *count;   /* the open counter in stats; NULL: stats.open */
    /* Its last statement was rolled back by a deadlock or a serialization
     * failure (SQLSTATE 40P01, 40001): nothing of it stayed. */
    bool conflict;
};

struct store {
    const struct config *cfg;
    struct logger *log;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* signalled when a connection is returned */
    struct conn *conns;
    size_t nconns;
    struct store_stats stats; /* under lock */
    struct group *reserves;   /* NULL: database.group_max is 1 */
    struct group *releases;
    struct group *hwsets;  /* FM outcomes of reserves */
    struct group *reports; /* node reports, with threads of its own (group_
                              start); NULL: database.report_group_max is 1 */
    /* A write failed for lack of a resource (disk full) and none has
     * succeeded since: /readyz is not ready.  Under lock. */
    bool writes_failing;
    /* /readyz is public: concurrent checks share the one running (under
     * lock), so that a flood of probes holds one pooled connection, not
     * the pool.  ready_gen counts the checks finished.
     */
    pthread_cond_t ready_cond;
    bool ready_running;
    unsigned long ready_gen;
    int ready_errno; /* of the last check; 0: ready */
    vnib_error_t ready_why;
    /* The SHA-256 of the other build's SQL functions that replaced this
     * binary's, once warned about (store_migrate.c).  Under lock. */
    char functions_warned[65];
};

/* Borrow a connection, connected.  Waits up to acquire_timeout_ms for a
 * free one.  Returns NULL with errno EAGAIN on failure.
 */
struct conn *store_conn_acquire(struct store *s, vnib_error_t *errp);

/* Return a connection.  One left inside a transaction (a failure path that
 * could not roll back) is dropped rather than handed to the next request.
 */
void store_conn_release(struct store *s, struct conn *c);

/* Drop a connection (see store.c for why nothing is cancelled). */
void store_conn_drop(struct store *s, struct conn *c);

/* Run a prepared statement on c, preparing it first if needed: the last
 * PGresult (caller clears), or NULL with errno and errp.
 */
PGresult *store_conn_exec(struct store *s,
                          struct conn *c,
                          enum stmt_id id,
                          const char *const *params,
                          int64_t timeout_ms,
                          vnib_error_t *errp);

/* Run a fixed script (migrations, BEGIN/COMMIT) with the simple protocol. */
int store_conn_exec_script(struct store *s,
                           struct conn *c,
                           const char *sql,
                           const char *what,
                           int64_t timeout_ms,
                           vnib_error_t *errp);

/* The server stops a statement on c at ms, the time the client gives up. */
int store_conn_set_timeout(struct store *s,
                           struct conn *c,
                           int64_t ms,
                           vnib_error_t *errp);

/* Run statement id on a pooled connection, run again whenever the pooled
 * connection it got had lost its server (each such one dropped), until it
 * runs on a live or fresh one.  The result (caller clears), or NULL with
 * errno and errp.
 */
PGresult *store_run(struct store *s,
                    enum stmt_id id,
                    const char *const *params,
                    vnib_error_t *errp);

/* Run and expect exactly one row; ENOENT with `missing` otherwise. */
PGresult *store_run_one(struct store *s,
                        enum stmt_id id,
                        const char *const *params,
                        const char *missing,
                        vnib_error_t *errp);

/* The fixed texts a client reads in place of a message in the database's
 * own words (see store.h), which begins with one of them and a colon.
 */
#define STORE_MSG_ERROR "database error"
#define STORE_MSG_UNAVAILABLE "database unavailable"
#define STORE_MSG_FULL                                                  \
    "the database cannot write: out of disk space or another resource " \
    "(see the broker log)"

/* A failure in the database's words, or one that says only that the
 * database failed: "<what>: <detail>" into errp, marked so that a client
 * reads `what` (a STORE_MSG_*) alone.  errno is preserved; returns -1,
 * also through a macro, as errprintf does (vnib/error.h says why).
 */
int store_db_error(vnib_error_t *errp, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define store_db_error(...) vnib_error_ret(store_db_error(__VA_ARGS__))

/* The message of an exhausted pool, from DETAIL "<wanted> <free> <being
 * taken by concurrent reserves> [<cooling down>]" (the fourth from
 * schema 21 on); errno ENOSPC, returns -1.
 */
int store_exhausted_error(vnib_error_t *errp, const char *detail);

/* ---- rows (store_batch.c) ------------------------------------------------ */

/* A number as a statement parameter. */
struct store_num {
    char text[24]; /* a long long's digits, sign and NUL */
};

/* Write v into *n as text; returns n->text. */
const char *store_num(struct store_num *n, long long v);

/* A column's text, NULL for SQL NULL; as a number (0 for NULL). */
const char *store_col(const PGresult *r, int row, int c);
long long store_col_ll(const PGresult *r, int row, int c);

/* The reservation of the vnib_row at `row`, as render_reservation() takes
 * it (pointers into r).
 */
void store_row_fields(const PGresult *r, int row, struct render_row *f);

/* The reservation of the vnib_row at `row` in the API's shape, or NULL
 * with errno.
 */
json_t *store_row_json(const struct config *cfg, const PGresult *r, int row);

/* The reservation of row `row` of a result, or -1 with errp. */
int store_result_row(
    struct store *s, PGresult *r, int row, json_t **resp, vnib_error_t *errp);

/* Add the sealed session token of the row, for the callers that may reveal
 * it (see STORE_SEALED_TOKEN).
 */
int store_add_sealed(PGresult *r, int row, json_t *res, vnib_error_t *errp);

/* A column of a row as a member of a JSON object (store_row_object). */
struct store_field {
    const char *key; /* the member's name */
    int col;         /* the column */
    enum {
        STORE_FIELD_INT,          /* an integer (0 for NULL) */
        STORE_FIELD_INT_OR_NULL,  /* an integer, or null */
        STORE_FIELD_TEXT,         /* a string; NULL fails */
        STORE_FIELD_TEXT_OR_NULL, /* a string, or null */
        STORE_FIELD_BOOL,         /* true for 't' */
        STORE_FIELD_REAL,         /* a number with a fraction */
    } type;
};

/* Row `row` of r as a new object of the n fields, in their order; NULL
 * when memory ran out or a STORE_FIELD_TEXT column was NULL.
 */
json_t *store_row_object(const PGresult *r,
                         int row,
                         const struct store_field *fields,
                         size_t n);

/* Makes row `row` of r into a JSON value, or NULL with errno ENOMEM. */
typedef json_t *(*store_row_fn)(const struct config *cfg,
                                const PGresult *r,
                                int row);

/* Run statement id and make each row of the result, with fn, an element
 * of a new array *listp.  0, or -1 with errno and errp.
 */
int store_run_list(struct store *s,
                   enum stmt_id id,
                   const char *const *params,
                   store_row_fn fn,
                   json_t **listp,
                   vnib_error_t *errp);

/* The same as a page of at most limit rows: {key: [...], "next": the
 * column next_col of the last row when the page is full, else null}.
 */
int store_run_page(struct store *s,
                   enum stmt_id id,
                   const char *const *params,
                   store_row_fn fn,
                   const char *key,
                   int limit,
                   int next_col,
                   json_t **pagep,
                   vnib_error_t *errp);

/* Parameters naming a node for the membership test, from its key. */
struct store_node_params {
    char prefix[TOKEN_NODE_MAX];
    const char *suffix;
    char width[8];
    char num[24];
};

void store_node_params(struct store_node_params *np, const char *node);

/* The same as four consecutive statement parameters params[0..3]: prefix,
 * suffix, width, number (pointers into np).
 */
void store_node_param_list(struct store_node_params *np,
                           const char *node,
                           const char **params);

/* ---- array literals (store_batch.c) -------------------------------------- */

/* A growing string for array literals; `failed` is sticky, as pgbouncer's
 * PktBuf is, so callers check once at the end.
 */
struct sbuf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
};

void store_sb_putc(struct sbuf *b, char c);
void store_sb_puts(struct sbuf *b, const char *s, size_t n);
/* An element of a text[] literal: quoted, with " and \ escaped. */
void store_sb_quoted(struct sbuf *b, const char *s, size_t n);
void store_sb_num(struct sbuf *b, long long v);
/* Append element i to a text[] literal ("NULL" for none). */
void store_sb_elem(struct sbuf *b, size_t i, const char *v);
/* Append element i to a numeric array literal. */
void store_sb_elem_num(struct sbuf *b, size_t i, long long v);

/* Node lists as ranges of trailing numbers (see reservation_ranges in
 * schema/0002), of the items of a group: six parallel array literals, the
 * item of each range in `item` (store_reservations.c).
 */
struct store_ranges {
    struct sbuf item, prefix, suffix, width, lo, hi;
    size_t count;
};

void store_ranges_open(struct store_ranges *g);
/* Append the ranges of item `item` (1-based); hosts must be sorted
 * (hostlist_uniq) so that runs are adjacent.
 */
void store_ranges_add(struct store_ranges *g,
                      const struct hostlist *hosts,
                      int item);
/* Close the literals: 0, or -1 with ENOMEM. */
int store_ranges_close(struct store_ranges *g);
void store_ranges_free(struct store_ranges *g);

/* The pool as two array literals of range bounds (-1 with ENOMEM). */
int store_pool_arrays(const struct idset *pool,
                      struct sbuf *lo,
                      struct sbuf *hi);

/* ---- groups (store_batch.c) ----------------------------------------------
 *
 * A reserve (or release, or FM answer) joins the group being gathered and
 * is written with it in one call of vnib_reserve_batch (vnib_release_batch,
 * vnib_hwcoll_set_many): see schema/0008 for what a group keeps of each
 * request's promises.  Each item carries its own outcome.  A group that
 * fails as a whole is run again item by item, so that one item cannot fail
 * the others.  An item whose job lock was held elsewhere ("busy") is run
 * alone after its group, waiting for the lock, on its own request's thread.
 */

/* What items share: the group's link, and the answer (0 with resp, or -1
 * with err and error); busy: the job's lock was held elsewhere and nothing
 * was done.
 */
struct item_result {
    struct group_item gi; /* first: the group sees this */
    bool busy;
    int rc;
    int err;
    vnib_error_t error;
    json_t *resp;
};

/* Runs items[0..n-1] as one group; wait: take job locks waiting. */
typedef void (*store_group_fn)(struct store *s,
                               struct item_result **items,
                               size_t n,
                               bool wait);

/* Close a group's array literals all[0..nall-1].  When one of them (or
 * the caller, with failed) ran out of memory every item fails, and false
 * is returned.
 */
bool store_arrays_close(struct sbuf *const *all,
                        size_t nall,
                        bool failed,
                        struct item_result **base,
                        size_t n);

/* Run a group's statement: its result, one row per item in order, or
 * NULL when it failed and every item has its answer.
 */
PGresult *store_group_exec(struct store *s,
                           enum stmt_id id,
                           const char *const *params,
                           struct item_result **base,
                           size_t n,
                           bool wait,
                           store_group_fn fn);

/* Submit an item to group g (or run it alone when grouping is off); a
 * busy item runs again alone, waiting for its lock.  0, or -1 with errno
 * and errp.
 */
int store_item_submit(struct store *s,
                      struct group *g,
                      struct item_result *it,
                      store_group_fn fn,
                      vnib_error_t *errp);

/* The groups' callbacks, for store_create (store_reservations.c,
 * store_fm.c and store_nodes.c).
 */
bool store_reserve_fits(void *arg,
                        struct group_item *const *items,
                        size_t n,
                        const struct group_item *gi);
void store_reserve_run(void *arg, struct group_item **items, size_t n);
bool store_release_fits(void *arg,
                        struct group_item *const *items,
                        size_t n,
                        const struct group_item *gi);
void store_release_run(void *arg, struct group_item **items, size_t n);
bool store_hwset_fits(void *arg,
                      struct group_item *const *items,
                      size_t n,
                      const struct group_item *gi);
void store_hwset_run(void *arg, struct group_item **items, size_t n);
bool store_report_fits(void *arg,
                       struct group_item *const *items,
                       size_t n,
                       const struct group_item *gi);
void store_report_run(void *arg, struct group_item **items, size_t n);

#endif /* !VNIB_SERVER_STORE_INT_H */
