/* PostgreSQL store: pool, bounded-time statements, migrations (see store.h).
 *
 * Every statement is a named constant below, prepared lazily on each
 * connection the first time that connection runs it (a statement that
 * names a table cannot be prepared before the migration that creates the
 * table, so preparing everything at connect time would not work), and run
 * with PQsendQueryPrepared.  Waiting is done with poll() on the
 * connection's socket against a deadline: libpq's blocking calls have no
 * timeout of their own, and a request must never hang on a database that
 * stopped answering.  When a deadline passes the running statement is
 * cancelled and the connection dropped; the next user reconnects.
 */
#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <openssl/sha.h>

#include "vnib/hostlist.h"
#include "vnib/idset.h"
#include "vnib/tclass.h"
#include "vnib/token.h"
#include "server/schema.h"
#include "server/store.h"

/* ---- statements ---------------------------------------------------------- */

enum stmt_id {
    STMT_SCHEMA_TABLE_EXISTS,
    STMT_SCHEMA_VERSION,
    STMT_SCHEMA_RECORD,
    STMT_MIGRATE_LOCK,
    STMT_SCHEMA_DIGESTS,
    STMT_SCHEMA_DIGEST_SET,
    STMT_SET_TIMEOUT,
    STMT_RESERVE,
    STMT_RES_GET,
    STMT_RES_LIST,
    STMT_RELEASE,
    STMT_REPORT,
    STMT_NODE_VIEW,
    STMT_NODE_GET,
    STMT_UNDRAIN,
    STMT_POOL,
    STMT_POOL_SYNC,
    STMT_VNI,
    STMT_EVENTS,
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
    STMT_COUNT
};

/* Key of the advisory lock that serialises migrations ("vnibmigr"). */
#define MIGRATE_LOCK_KEY "8534447410148076146"

static const char sql_schema_table_exists[] =
    "SELECT to_regclass('schema_version') IS NOT NULL";
static const char sql_schema_version[] =
    "SELECT coalesce(max(version), 0) FROM schema_version";
static const char sql_schema_record[] =
    "INSERT INTO schema_version (version, name) VALUES ($1::integer, $2)";
static const char sql_migrate_lock[] =
    "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")";
/* Migration digests (schema/0013). */
static const char sql_schema_digests[] =
    "SELECT version, name, sha256 FROM schema_version "
    "WHERE sha256 IS NOT NULL ORDER BY version";
static const char sql_schema_digest_set[] =
    "UPDATE schema_version SET sha256 = $2 "
    "WHERE version = $1::integer AND sha256 IS NULL";
/* The first schema that records digests. */
#define SCHEMA_DIGESTS_VERSION 13

/* The server ends a statement at the timeout the client gives up at, and
 * (PostgreSQL 14 and later) checks every second whether the client is
 * still there while a statement runs: a broker killed in the middle of a
 * reserve must not leave its transaction to commit behind the retry.
 */
static const char sql_set_timeout[] =
    "SELECT set_config('statement_timeout', $1, false), "
    "CASE WHEN current_setting('server_version_num')::integer >= 140000 "
    "THEN set_config('client_connection_check_interval', '1000', false) END";

/* A reservation leaves the database as a vnib_row (schema/0002): column 0
 * the outcome of a transition, then the reservation, then the cleanup
 * counts.  ROW_* name the columns row_reservation() reads.
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

/* Reserves and releases run in groups (schema/0008): one row per item, in
 * item order, a vnib_row with the item's detail at ROW_NCOLS.
 */
static const char sql_reserve[] =
    "SELECT * FROM vnib_reserve_batch($1::text[], $2::bigint[], $3::text[], "
    "$4::text[], $5::integer[], $6::integer[], $7::smallint[], $8::text[], "
    "$9::text[], $10::integer[], $11::integer[], $12::integer[], "
    "$13::text[], $14::text[], $15::smallint[], $16::bigint[], "
    "$17::bigint[], $18::text[], $19::text[], $20::text[], $21::text[], "
    "$22::integer[], $23::bigint[], $24::boolean)";
static const char sql_hwcoll_set_many[] =
    "SELECT * FROM vnib_hwcoll_set_many($1::bigint[], $2::text[], "
    "$3::text[], $4::text[], $5::text[])";
/* Fabric Manager work: releases to make, and reserves that timed out,
 * which the Fabric Manager may have completed late.  Deferred reserves
 * (hwcoll_due set) are the claim's (schema/0005), not this check's.
 */
static const char sql_hwcoll_work[] =
    "SELECT id, fm_job_id, hwcoll_state, state = 'active', "
    "coalesce(extract(epoch FROM now() - hwcoll_updated_at), 1e9) "
    "FROM reservations "
    "WHERE ((hwcoll_state = 'unavailable' "
    "AND hwcoll_reason LIKE 'timed out%') OR (hwcoll_state = 'pending' "
    "AND hwcoll_due IS NULL AND created_at < now() - interval '1 minute')) "
    "ORDER BY id LIMIT $1::integer";
static const char sql_hwcoll_defer[] =
    "SELECT * FROM vnib_hwcoll_defer($1::bigint, $2, $3)";
static const char sql_hwcoll_claim[] =
    "SELECT id, fm_job_id, active, attempts "
    "FROM vnib_hwcoll_claim($1::integer, $2::integer)";
static const char sql_fm_next[] =
    "SELECT * FROM vnib_fm_next($1::bigint[], $2, $3::integer, $4::integer)";
static const char sql_fm_retry[] =
    "SELECT vnib_fm_retry($1::bigint, $2, $3::double precision)";
static const char sql_step_release[] = "SELECT vnib_step_release($1, $2, $3)";
static const char sql_reconcile[] =
    "SELECT * FROM vnib_reconcile($1::text[], $2::timestamptz, $3)";
static const char sql_fm_queue_stats[] =
    "SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) "
    "FROM fm_queue";
static const char sql_db_now[] = "SELECT now()";
/* /readyz's write while writes are failing for lack of a resource. */
static const char sql_write_probe[] = "SELECT vnib_write_probe()";
/* Key of the advisory lock whose holder leads ("vnibfmld"). */
static const char sql_leader_try[] =
    "SELECT pg_try_advisory_lock(8534447410148076652)";
static const char sql_leader_set[] =
    "INSERT INTO fm_leader (id, replica) VALUES (1, $1) "
    "ON CONFLICT (id) DO UPDATE SET replica = excluded.replica, since = now()";
static const char sql_leader_get[] =
    "SELECT replica, vnib_ts(since) FROM fm_leader WHERE id = 1";
static const char sql_ping[] = "SELECT 1";
static const char sql_hwcoll_counts[] =
    "SELECT hwcoll_state, count(*) FROM reservations "
    "WHERE state <> 'released' OR hwcoll_state IN ('releasing', 'pending') "
    "GROUP BY hwcoll_state";
/* The job's current reservation (its active one, else its newest: see
 * vnib_job_current in schema/0004); counts only when $6, and whether node
 * $2-$5 is in it (ROW_NCOLS).  Membership is a LATERAL probe of the job's
 * own ranges: written as EXISTS, the planner may hash the whole ranges
 * table instead, on every request.
 */
static const char sql_res_get[] =
    "SELECT v.*, $2::text IS NULL OR m.hit IS NOT NULL "
    "FROM (SELECT id FROM reservations WHERE job_id = $1 "
    "ORDER BY state = 'active' DESC, id DESC LIMIT 1) r "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, $6::boolean) v "
    "LEFT JOIN LATERAL (SELECT 1 AS hit FROM reservation_ranges g "
    "WHERE g.reservation_id = r.id AND g.prefix = $2 AND g.suffix = $3 "
    "AND g.width = $4::smallint AND $5::bigint BETWEEN g.lo AND g.hi "
    "LIMIT 1) m ON true";
/* Filtered pages; a node filter finds the node's ranges through the GiST
 * index once, not per reservation.
 */
static const char sql_res_list[] =
    "SELECT v.* FROM (SELECT id FROM reservations r "
    "WHERE ($1::text IS NULL OR r.state = $1) "
    "AND ($2::bigint IS NULL OR r.uid = $2) AND r.id > $3::bigint "
    "AND ($4::text IS NULL OR r.id IN (SELECT g.reservation_id "
    "FROM reservation_ranges g WHERE int8range(g.lo, g.hi, '[]') @> "
    "$7::bigint AND g.prefix = $4 AND g.suffix = $5 "
    "AND g.width = $6::smallint)) "
    "ORDER BY r.id LIMIT $8::integer) r "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, true) v ORDER BY v.id";
static const char sql_release[] =
    "SELECT * FROM vnib_release_batch($1::text[], $2::bigint[], $3, "
    "$4::boolean, $5::boolean)";
static const char sql_report[] =
    "SELECT * FROM vnib_report($1, $2, $3, $4::jsonb, $5, $6, $7, $8, "
    "$9::smallint, $10::bigint, $11::bigint)";
/* The live reservations that include node $1 (key $2-$5), with the node's
 * own report (ROW_NCOLS, +1).
 */
static const char sql_node_view[] =
    "SELECT v.*, coalesce(nr.cxi, 'none'), "
    "coalesce(nr.services::text, '[]') "
    "FROM (SELECT DISTINCT g.reservation_id AS id FROM reservation_ranges g "
    "WHERE int8range(g.lo, g.hi, '[]') @> $5::bigint AND g.prefix = $2 "
    "AND g.suffix = $3 AND g.width = $4::smallint) m "
    "JOIN reservations r ON r.id = m.id AND r.state <> 'released' "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, false) v "
    "LEFT JOIN node_reports nr ON nr.reservation_id = r.id AND nr.node = $1 "
    "ORDER BY r.id";
static const char sql_node_get[] =
    "SELECT drained, drained_reason, vnib_ts(drained_at) FROM nodes "
    "WHERE name = $1";
static const char sql_undrain[] =
    "WITH u AS (UPDATE nodes SET drained = false, drained_reason = NULL, "
    "drained_at = NULL, updated_by = $2 WHERE name = $1 AND drained "
    "RETURNING name) INSERT INTO events (node, actor, action) "
    "SELECT name, $2, 'undrain' FROM u RETURNING id";
/* The held VNIs by their reservation's state, those outside the pool (all
 * held less those in its ranges, which an idset keeps disjoint), and the
 * last VNI handed out.  Each hold finds its reservation by primary key
 * (the LIMIT keeps the planner from making it a join over the whole
 * table), so the cost follows the VNIs held, not the history kept: as a
 * hash join it read every reservation, a million of them in the bench's
 * history scenario, for every /metrics refresh and GET /v1/pool.
 */
static const char sql_pool[] =
    "SELECT count(*) FILTER (WHERE r.state = 'active'), "
    "count(*) FILTER (WHERE r.state = 'releasing'), "
    "count(*) - (SELECT coalesce(sum((SELECT count(*) FROM vni_holds x "
    "WHERE x.vni BETWEEN p.lo AND p.hi)), 0) "
    "FROM unnest($1::integer[], $2::integer[]) p(lo, hi)), "
    "(SELECT vnis[cardinality(vnis)] FROM reservations "
    "WHERE cardinality(vnis) > 0 ORDER BY id DESC LIMIT 1) "
    "FROM vni_holds h JOIN LATERAL (SELECT state FROM reservations "
    "WHERE id = h.reservation_id LIMIT 1) r ON true";
static const char sql_pool_sync[] =
    "SELECT * FROM vnib_pool_sync($1::integer[], $2::integer[])";
/* The reservation holding VNI $1, or the last one that did (see
 * vnib_vni_reservation in schema/0007); whether it still holds it
 * (ROW_NCOLS).
 */
static const char sql_vni[] =
    "SELECT v.*, EXISTS (SELECT 1 FROM vni_holds WHERE vni = $1::integer "
    "AND reservation_id = r.id) "
    "FROM (SELECT vnib_vni_reservation($1::integer) AS id OFFSET 0) r "
    "CROSS JOIN LATERAL vnib_row(NULL, r.id, true) v WHERE r.id IS NOT NULL";
/* Events in id order, each with the time it was recorded.  Two
 * transactions recording at once may take their ids in one order and
 * read the clock in the other; the time shown is therefore the latest
 * recorded at or before the event, over the page and the 64 events
 * before it, so that time never goes backwards along the order.
 */
static const char sql_events[] =
    "WITH page AS (SELECT * FROM events WHERE ($1::text IS NULL "
    "OR job_id = $1) AND id > $2::bigint ORDER BY id LIMIT $3::integer), "
    "prior AS (SELECT max(at) AS at FROM (SELECT at FROM events "
    "WHERE ($1::text IS NULL OR job_id = $1) AND id <= $2::bigint "
    "ORDER BY id DESC LIMIT 64) p) "
    "SELECT id, vnib_ts(greatest(max(at) OVER (ORDER BY id), "
    "(SELECT at FROM prior))), reservation_id, job_id, node, actor, action, "
    "detail::text FROM page ORDER BY id";
static const char sql_sweep[] = "SELECT vnib_sweep($1)";
static const char sql_purge[] = "SELECT vnib_purge($1::integer, $2::integer)";

static const struct {
    const char *name;
    const char *sql;
    int nparams;
} stmts[STMT_COUNT] = {
    [STMT_SCHEMA_TABLE_EXISTS] = {"schema_table_exists",
                                  sql_schema_table_exists,
                                  0},
    [STMT_SCHEMA_VERSION] = {"schema_version", sql_schema_version, 0},
    [STMT_SCHEMA_RECORD] = {"schema_record", sql_schema_record, 2},
    [STMT_MIGRATE_LOCK] = {"migrate_lock", sql_migrate_lock, 0},
    [STMT_SCHEMA_DIGESTS] = {"schema_digests", sql_schema_digests, 0},
    [STMT_SCHEMA_DIGEST_SET] = {"schema_digest_set", sql_schema_digest_set, 2},
    [STMT_SET_TIMEOUT] = {"set_timeout", sql_set_timeout, 1},
    [STMT_RESERVE] = {"reserve", sql_reserve, 24},
    [STMT_RES_GET] = {"res_get", sql_res_get, 6},
    [STMT_RES_LIST] = {"res_list", sql_res_list, 8},
    [STMT_RELEASE] = {"release", sql_release, 5},
    [STMT_REPORT] = {"report", sql_report, 11},
    [STMT_NODE_VIEW] = {"node_view", sql_node_view, 5},
    [STMT_NODE_GET] = {"node_get", sql_node_get, 1},
    [STMT_UNDRAIN] = {"undrain", sql_undrain, 2},
    [STMT_POOL] = {"pool", sql_pool, 2},
    [STMT_POOL_SYNC] = {"pool_sync", sql_pool_sync, 2},
    [STMT_VNI] = {"vni", sql_vni, 1},
    [STMT_EVENTS] = {"events", sql_events, 3},
    [STMT_SWEEP] = {"sweep", sql_sweep, 1},
    [STMT_PURGE] = {"purge", sql_purge, 2},
    [STMT_HWCOLL_SET_MANY] = {"hwcoll_set_many", sql_hwcoll_set_many, 5},
    [STMT_HWCOLL_WORK] = {"hwcoll_work", sql_hwcoll_work, 1},
    [STMT_HWCOLL_DEFER] = {"hwcoll_defer", sql_hwcoll_defer, 3},
    [STMT_HWCOLL_CLAIM] = {"hwcoll_claim", sql_hwcoll_claim, 2},
    [STMT_HWCOLL_COUNTS] = {"hwcoll_counts", sql_hwcoll_counts, 0},
    [STMT_FM_NEXT] = {"fm_next", sql_fm_next, 4},
    [STMT_FM_RETRY] = {"fm_retry", sql_fm_retry, 3},
    [STMT_STEP_RELEASE] = {"step_release", sql_step_release, 3},
    [STMT_RECONCILE] = {"reconcile", sql_reconcile, 3},
    [STMT_FM_QUEUE_STATS] = {"fm_queue_stats", sql_fm_queue_stats, 0},
    [STMT_DB_NOW] = {"db_now", sql_db_now, 0},
    [STMT_LEADER_TRY] = {"leader_try", sql_leader_try, 0},
    [STMT_LEADER_SET] = {"leader_set", sql_leader_set, 1},
    [STMT_LEADER_GET] = {"leader_get", sql_leader_get, 0},
    [STMT_PING] = {"ping", sql_ping, 0},
    [STMT_WRITE_PROBE] = {"write_probe", sql_write_probe, 0},
};

_Static_assert(STMT_COUNT <= 64, "prepared-statement bitmask is 64 bits");

/* ---- the pool ------------------------------------------------------------ */

struct conn {
    PGconn *pg;        /* NULL when not connected */
    bool busy;         /* lent out */
    uint64_t prepared; /* bit per enum stmt_id prepared on this connection */
    bool fresh;        /* opened by the current borrower */
    unsigned *count;   /* the open counter in stats; NULL: stats.open */
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
    struct group *hwsets; /* FM outcomes of reserves */
    /* A write failed for lack of a resource (disk full) and none has
     * succeeded since: /readyz is not ready.  Under lock. */
    bool writes_failing;
};

/* The groups' callbacks (below, with reserves and releases). */
static bool reserve_fits(void *arg,
                         struct group_item *const *items,
                         size_t n,
                         const struct group_item *gi);
static void reserve_run(void *arg, struct group_item **items, size_t n);
static bool release_fits(void *arg,
                         struct group_item *const *items,
                         size_t n,
                         const struct group_item *gi);
static void release_run(void *arg, struct group_item **items, size_t n);
static bool hwset_fits(void *arg,
                       struct group_item *const *items,
                       size_t n,
                       const struct group_item *gi);
static void hwset_run(void *arg, struct group_item **items, size_t n);

/* Migrations may rebuild tables; give them far longer than a request. */
#define MIGRATE_TIMEOUT_MS (30 * 60 * 1000)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void stat_add(struct store *s, uint64_t *counter)
{
    pthread_mutex_lock(&s->lock);
    (*counter)++;
    pthread_mutex_unlock(&s->lock);
}

int store_required_version(void)
{
    return (int)schema_migrations_count;
}

struct store *store_create(const struct config *cfg,
                           struct logger *log,
                           vnib_error_t *errp)
{
    struct store *s = calloc(1, sizeof(*s));
    pthread_condattr_t attr;

    if (!s)
        goto nomem;
    s->cfg = cfg;
    s->log = log;
    s->nconns = (size_t)cfg->database.pool_size;
    if (!(s->conns = calloc(s->nconns, sizeof(s->conns[0]))))
        goto nomem;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &attr);
    pthread_condattr_destroy(&attr);
    s->stats.size = (unsigned)s->nconns;
    if (cfg->database.group_max > 1) {
        size_t max = (size_t)cfg->database.group_max;
        unsigned leaders = (unsigned)cfg->database.group_leaders;
        if (!(s->reserves =
                  group_create(max, leaders, reserve_fits, reserve_run, s))
            || !(s->releases =
                     group_create(max, leaders, release_fits, release_run, s))
            /* One leader more: an FM answer waits on the request's
             * thread with the scheduler's reply, and at a moderate rate
             * must not queue behind a group already being written. */
            || !(s->hwsets = group_create(
                     max, leaders + 1, hwset_fits, hwset_run, s))) {
            group_destroy(s->reserves);
            group_destroy(s->releases);
            pthread_cond_destroy(&s->cond);
            pthread_mutex_destroy(&s->lock);
            goto nomem;
        }
    }
    return s;
nomem:
    if (s)
        free(s->conns);
    free(s);
    errprintf(errp, "out of memory");
    errno = ENOMEM;
    return NULL;
}

void store_destroy(struct store *s)
{
    int saved_errno = errno;
    if (s) {
        for (size_t i = 0; i < s->nconns; i++)
            if (s->conns[i].pg)
                PQfinish(s->conns[i].pg);
        free(s->conns);
        group_destroy(s->reserves);
        group_destroy(s->releases);
        group_destroy(s->hwsets);
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    errno = saved_errno;
}

/* Wait until the socket is ready for `events` or the deadline passes;
 * what it is ready for in *reventsp.  Returns 0 when ready, -1 with
 * ETIMEDOUT or the poll errno.
 */
static int wait_socket_ev(PGconn *pg,
                          short events,
                          int64_t deadline,
                          short *reventsp)
{
    struct pollfd pfd = {.fd = PQsocket(pg), .events = events};
    if (pfd.fd < 0) {
        errno = EBADF;
        return -1;
    }
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        int n = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
        if (n > 0) {
            if (reventsp)
                *reventsp = pfd.revents;
            return 0;
        }
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static int wait_socket(PGconn *pg, short events, int64_t deadline)
{
    return wait_socket_ev(pg, events, deadline, NULL);
}

/* Drop a connection.  A statement still running on it is not cancelled
 * with PQcancel(), which blocks on a server that stopped answering (the
 * very case that brings us here); the server-side statement_timeout set at
 * connect time ends it instead.
 */
static void conn_drop(struct store *s, struct conn *c)
{
    if (!c->pg)
        return;
    PQfinish(c->pg);
    c->pg = NULL;
    c->prepared = 0;
    pthread_mutex_lock(&s->lock);
    (*(c->count ? c->count : &s->stats.open))--;
    pthread_mutex_unlock(&s->lock);
}

/* First line of a libpq message, without the trailing newline. */
static void pq_message(PGconn *pg, char *buf, size_t size)
{
    const char *m = pg ? PQerrorMessage(pg) : "out of memory";
    size_t n = strcspn(m, "\n");
    snprintf(buf, size, "%.*s", (int)n, m);
}

/* What the server says besides results (NOTICE, WARNING) goes to our log,
 * in our format, not raw to stderr as libpq's default does: warnings as
 * warnings, notices as notices, the rest (INFO, LOG, DEBUG) as debug.
 */
static void conn_notice(void *arg, const PGresult *r)
{
    struct store *s = arg;
    const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    int level = LOG_DEBUG;

    if (sev && !strcmp(sev, "WARNING"))
        level = LOG_WARNING;
    else if (!sev || !strcmp(sev, "NOTICE"))
        level = LOG_NOTICE;
    logger_printf(s->log,
                  level,
                  NULL,
                  "database: %s: %s",
                  sev ? sev : "NOTICE",
                  msg ? msg : "");
}

/* One connection attempt to what keys/vals name, within connect_timeout_ms.
 * Returns the connection, or NULL with the reason in msg.
 */
static PGconn *conn_try(struct store *s,
                        const char *const *keys,
                        const char *const *vals,
                        int expand,
                        char *msg,
                        size_t size)
{
    int64_t deadline = now_ms() + s->cfg->database.connect_timeout_ms;
    PGconn *pg = PQconnectStartParams(keys, vals, expand);
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;

    if (!pg || PQstatus(pg) == CONNECTION_BAD) {
        pq_message(pg, msg, size);
        goto cleanup;
    }
    /* Before the first poll: a notice sent during the handshake would
     * otherwise go raw to stderr.
     */
    (void)PQsetNoticeReceiver(pg, conn_notice, s);
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED) {
            pq_message(pg, msg, size);
            goto cleanup;
        }
        short ev = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
        if (wait_socket(pg, ev, deadline) < 0) {
            snprintf(msg,
                     size,
                     "connection attempt timed out after %ld ms",
                     s->cfg->database.connect_timeout_ms);
            goto cleanup;
        }
        st = PQconnectPoll(pg);
    }
cleanup:
    if (pg && st != PGRES_POLLING_OK) {
        PQfinish(pg);
        pg = NULL;
    }
    return pg;
}

/* Entries in a libpq comma-separated list ("" or NULL: none). */
static size_t list_count(const char *list)
{
    size_t n = 1;
    if (!list || !*list)
        return 0;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    return n;
}

/* Entry i of a comma-separated list, in a new string (NULL: no memory). */
static char *list_item(const char *list, size_t i)
{
    while (i-- > 0)
        list = strchr(list, ',') + 1;
    size_t len = strcspn(list, ",");
    char *item = malloc(len + 1);
    if (item) {
        memcpy(item, list, len);
        item[len] = '\0';
    }
    return item;
}

/* What names one host of a list in messages. */
static const char *host_name(const char *host, const char *hostaddr)
{
    if (host && *host)
        return host;
    return hostaddr && *hostaddr ? hostaddr : "(default)";
}

/* The hosts a conninfo lists, each tried alone with a deadline of its own
 * (libpq's non-blocking connect ignores connect_timeout, so one deadline
 * over a host list lets a host that never answers use up the time of the
 * hosts after it).  Host i goes with port i (or the only port), and every
 * other keyword, target_session_attrs included, goes with each; a standby
 * refused for a read-write session passes to the next host, as libpq
 * does.  Returns the connection, or NULL with each host's reason in msg.
 */
static PGconn *conn_try_hosts(struct store *s, char *msg, size_t size)
{
    static const char *const list_keys[] = {"host", "hostaddr", "port"};
    enum { HOST, HOSTADDR, PORT, NLISTS };
    const char *lists[NLISTS] = {NULL, NULL, NULL};
    char *item[NLISTS] = {NULL, NULL, NULL};
    const char **keys = NULL;
    const char **vals = NULL;
    PQconninfoOption *opts = NULL;
    char *perr = NULL;
    char one[256];
    const char *skeys[] = {"dbname", "fallback_application_name", NULL};
    const char *svals[] = {s->cfg->database.conninfo, "vnibrokerd", NULL};
    PGconn *pg = NULL;
    size_t nopts = 0, nhosts = 0, used = 0, k = 0;
    bool fallback = true;

    opts = PQconninfoParse(s->cfg->database.conninfo, &perr);
    PQfreemem(perr); /* the single attempt below reports it */
    if (!opts)
        goto single;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        nopts++;
        for (size_t l = 0; l < NLISTS; l++)
            if (o->val && !strcmp(o->keyword, list_keys[l]))
                lists[l] = o->val;
        if (o->val && !strcmp(o->keyword, "fallback_application_name"))
            fallback = false;
    }
    nhosts = list_count(lists[HOST]);
    if (list_count(lists[HOSTADDR]) > nhosts)
        nhosts = list_count(lists[HOSTADDR]);
    /* One host, or lists libpq itself would refuse: one attempt, as
     * written, so that libpq's own message names the fault.
     */
    if (nhosts < 2 || (lists[HOST] && list_count(lists[HOST]) != nhosts)
        || (lists[HOSTADDR] && list_count(lists[HOSTADDR]) != nhosts)
        || (lists[PORT] && list_count(lists[PORT]) != 1
            && list_count(lists[PORT]) != nhosts))
        goto single;
    if (!(keys = calloc(nopts + 2, sizeof(*keys)))
        || !(vals = calloc(nopts + 2, sizeof(*vals)))) {
        snprintf(msg, size, "out of memory");
        goto cleanup;
    }
    msg[0] = '\0';
    for (size_t i = 0; i < nhosts && !pg; i++) {
        k = 0;
        for (size_t l = 0; l < NLISTS; l++) {
            free(item[l]);
            item[l] = NULL;
            if (!lists[l])
                continue;
            size_t at = list_count(lists[l]) == 1 ? 0 : i;
            if (!(item[l] = list_item(lists[l], at))) {
                snprintf(msg, size, "out of memory");
                goto cleanup;
            }
        }
        if (fallback) {
            keys[k] = "fallback_application_name";
            vals[k++] = "vnibrokerd";
        }
        for (PQconninfoOption *o = opts; o->keyword; o++) {
            if (!o->val)
                continue;
            size_t l = 0;
            while (l < NLISTS && strcmp(o->keyword, list_keys[l]))
                l++;
            keys[k] = o->keyword;
            vals[k++] = l < NLISTS ? item[l] : o->val;
        }
        keys[k] = vals[k] = NULL;
        pg = conn_try(s, keys, vals, 0, one, sizeof(one));
        if (!pg) {
            int n = snprintf(msg + used,
                             size - used,
                             "%shost %s: %s",
                             used ? "; " : "",
                             host_name(item[HOST], item[HOSTADDR]),
                             one);
            if (n > 0)
                used += (size_t)n < size - used ? (size_t)n : size - used - 1;
        }
    }
    /* A host passed over is worth knowing even when a later one answers:
     * a hung host costs every new connection its timeout.
     */
    if (pg && used)
        logger_printf(s->log,
                      LOG_NOTICE,
                      NULL,
                      "database: connected to host %s after %s",
                      host_name(item[HOST], item[HOSTADDR]),
                      msg);
    goto cleanup;
single:
    pg = conn_try(s, skeys, svals, 1, msg, size);
cleanup:
    for (size_t l = 0; l < NLISTS; l++)
        free(item[l]);
    free(keys);
    free(vals);
    if (opts) {
        for (PQconninfoOption *o = opts; o->keyword; o++)
            if (o->val && o->dispchar[0] == '*')
                vnib_memburn(o->val, strlen(o->val));
        PQconninfoFree(opts);
    }
    return pg;
}

static int conn_open(struct store *s, struct conn *c, vnib_error_t *errp)
{
    char msg[768];

    c->pg = conn_try_hosts(s, msg, sizeof(msg));
    if (!c->pg)
        goto fail;
    if (PQsetnonblocking(c->pg, 1) < 0) {
        pq_message(c->pg, msg, sizeof(msg));
        PQfinish(c->pg);
        c->pg = NULL;
        goto fail;
    }
    pthread_mutex_lock(&s->lock);
    (*(c->count ? c->count : &s->stats.open))++;
    s->stats.connects++;
    pthread_mutex_unlock(&s->lock);
    c->prepared = 0;
    return 0;
fail:
    stat_add(s, &s->stats.connect_failures);
    logger_printf(
        s->log, LOG_WARNING, NULL, "database: cannot connect: %s", msg);
    errno = EAGAIN;
    return errprintf(errp, STORE_MSG_UNAVAILABLE ": %s", msg);
}

static PGresult *conn_exec(struct store *s,
                           struct conn *c,
                           enum stmt_id id,
                           const char *const *params,
                           int64_t timeout_ms,
                           vnib_error_t *errp);

/* Session settings for a new connection: the server stops a statement at
 * the same timeout the client gives up at, so that nothing the broker
 * abandoned keeps running.
 */
static int conn_set_timeout(struct store *s,
                            struct conn *c,
                            int64_t ms,
                            vnib_error_t *errp)
{
    char val[32];
    const char *params[1] = {val};
    snprintf(val, sizeof(val), "%lld", (long long)ms);
    PGresult *r = conn_exec(s,
                            c,
                            STMT_SET_TIMEOUT,
                            params,
                            s->cfg->database.query_timeout_ms,
                            errp);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

static void conn_release(struct store *s, struct conn *c);

/* Borrow a connection, connected.  Waits up to acquire_timeout_ms for a
 * free one.  Returns NULL with errno EAGAIN on failure.
 */
static struct conn *conn_acquire(struct store *s, vnib_error_t *errp)
{
    int64_t deadline = now_ms() + s->cfg->database.acquire_timeout_ms;
    struct timespec abs = {.tv_sec = (time_t)(deadline / 1000),
                           .tv_nsec = (long)(deadline % 1000) * 1000000};
    struct conn *c = NULL;
    bool waited = false;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        /* Prefer an open connection; fall back to an empty slot. */
        for (size_t i = 0; i < s->nconns; i++) {
            if (!s->conns[i].busy && (s->conns[i].pg || !c))
                c = &s->conns[i];
            if (c && c->pg)
                break;
        }
        if (c || pthread_cond_timedwait(&s->cond, &s->lock, &abs) == ETIMEDOUT)
            break;
        waited = true;
    }
    if (!c) {
        s->stats.acquire_timeouts++;
        pthread_mutex_unlock(&s->lock);
        errno = EAGAIN;
        errprintf(errp,
                  "database busy: no connection free within %ld ms",
                  s->cfg->database.acquire_timeout_ms);
        return NULL;
    }
    c->busy = true;
    s->stats.acquires++;
    s->stats.busy++;
    if (waited)
        s->stats.waits++;
    pthread_mutex_unlock(&s->lock);

    if (c->pg && PQstatus(c->pg) == CONNECTION_BAD)
        conn_drop(s, c);
    c->fresh = !c->pg;
    if (!c->pg
        && (conn_open(s, c, errp) < 0
            || conn_set_timeout(s, c, s->cfg->database.query_timeout_ms, errp)
                   < 0)) {
        conn_release(s, c);
        return NULL;
    }
    return c;
}

/* Return a connection.  One left inside a transaction (a failure path that
 * could not roll back) is dropped rather than handed to the next request.
 */
static void conn_release(struct store *s, struct conn *c)
{
    if (c->pg && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        conn_drop(s, c);
    pthread_mutex_lock(&s->lock);
    c->busy = false;
    s->stats.busy--;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

const char *store_public_message(const char *message)
{
    static const char *const fixed[] = {
        STORE_MSG_ERROR, STORE_MSG_UNAVAILABLE, STORE_MSG_FULL};

    if (!message)
        return NULL;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        size_t n = strlen(fixed[i]);
        if (!strncmp(message, fixed[i], n)
            && (message[n] == ':' || message[n] == '\0'))
            return fixed[i];
    }
    return NULL;
}

/* SQLSTATE to errno, as the store's callers expect. */
static int sqlstate_errno(const char *state)
{
    if (!state)
        return EIO;
    if (!strcmp(state, "23505") || !strcmp(state, "23P01"))
        return EEXIST;
    if (!strcmp(state, "40001") || !strcmp(state, "40P01")
        || !strcmp(state, "55P03") || !strcmp(state, "57014"))
        return EAGAIN;
    if (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3))
        return EAGAIN;
    if (!strncmp(state, "22", 2) || !strncmp(state, "23", 2))
        return EINVAL;
    if (!strcmp(state, "42P01") || !strcmp(state, "42883"))
        return ESTALE; /* a table or function this binary needs is missing */
    if (!strcmp(state, "VN001"))
        return ENOSPC; /* vnib_alloc: the VNI pool is exhausted */
    if (!strncmp(state, "53", 2) || !strcmp(state, "58030"))
        return EDQUOT; /* disk full, or another resource, or I/O error */
    return EIO;
}

/* The message of an exhausted pool, from DETAIL "<wanted> <free>
 * <being taken by concurrent reserves>".
 */
static int exhausted_error(vnib_error_t *errp, const char *detail)
{
    long want = 0, avail = 0, busy = 0;
    if (!detail || sscanf(detail, "%ld %ld %ld", &want, &avail, &busy) != 3)
        want = avail = busy = -1;
    errno = ENOSPC;
    if (busy > 0)
        return errprintf(errp,
                         "VNI pool exhausted: %ld VNIs requested, %ld free, "
                         "of which %ld are being handed out to concurrent "
                         "reserves",
                         want,
                         avail,
                         busy);
    return errprintf(
        errp, "VNI pool exhausted: %ld VNIs requested, %ld free", want, avail);
}

/* Collect the result of the query just sent, waiting until deadline.
 * Returns the last PGresult (caller clears) or NULL with errno and errp.
 * On timeout or connection loss the connection is dropped.
 */
static PGresult *conn_wait_result(struct store *s,
                                  struct conn *c,
                                  int64_t deadline,
                                  const char *what,
                                  vnib_error_t *errp)
{
    PGresult *last = NULL;
    char msg[256];

    /* In non-blocking mode a query larger than the socket buffer is sent
     * in pieces: flush until libpq has nothing left, waiting for the
     * socket to take more, and read meanwhile, as libpq's documentation
     * asks, so that a server busy sending to us is not left blocked.
     */
    for (;;) {
        int f = PQflush(c->pg);
        if (f < 0)
            goto lost;
        if (f == 0)
            break;
        short ev = 0;
        if (wait_socket_ev(c->pg, POLLIN | POLLOUT, deadline, &ev) < 0)
            goto timed_out;
        if ((ev & POLLIN) && !PQconsumeInput(c->pg))
            goto lost;
    }
    for (;;) {
        while (PQisBusy(c->pg)) {
            if (wait_socket(c->pg, POLLIN, deadline) < 0)
                goto timed_out;
            if (!PQconsumeInput(c->pg))
                goto lost;
        }
        PGresult *r = PQgetResult(c->pg);
        if (!r)
            break;
        PQclear(last);
        last = r;
    }
    if (!last)
        goto lost;
    ExecStatusType st = PQresultStatus(last);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return last;
    const char *state = PQresultErrorField(last, PG_DIAG_SQLSTATE);
    const char *primary = PQresultErrorField(last, PG_DIAG_MESSAGE_PRIMARY);
    int e = sqlstate_errno(state);
    if (e == ENOSPC) {
        /* Expected under load, not a database fault (vnib_reserve of
         * schema 7, kept for brokers of that schema).
         */
        exhausted_error(errp, PQresultErrorField(last, PG_DIAG_MESSAGE_DETAIL));
        PQclear(last);
        errno = e;
        return NULL;
    }
    logger_printf(s->log,
                  LOG_ERR,
                  NULL,
                  "database: %s: %s (SQLSTATE %s)",
                  what,
                  primary ? primary : "error",
                  state ? state : "none");
    stat_add(s, &s->stats.errors);
    if (e == EDQUOT) {
        pthread_mutex_lock(&s->lock);
        s->writes_failing = true;
        pthread_mutex_unlock(&s->lock);
    }
    errprintf(errp,
              "%s: %s",
              e == EDQUOT ? STORE_MSG_FULL : STORE_MSG_ERROR,
              primary ? primary : "unknown");
    PQclear(last); /* primary pointed into it */
    if (PQstatus(c->pg) == CONNECTION_BAD)
        conn_drop(s, c);
    errno = e;
    return NULL;
timed_out:
    PQclear(last);
    stat_add(s, &s->stats.query_timeouts);
    logger_printf(s->log,
                  LOG_WARNING,
                  NULL,
                  "database: %s: no answer within the timeout; cancelled",
                  what);
    conn_drop(s, c);
    errno = ETIMEDOUT;
    errprintf(errp, "database did not answer in time");
    return NULL;
lost:
    PQclear(last);
    pq_message(c->pg, msg, sizeof(msg));
    logger_printf(s->log, LOG_WARNING, NULL, "database: %s: %s", what, msg);
    stat_add(s, &s->stats.errors);
    conn_drop(s, c);
    errno = EAGAIN;
    errprintf(errp, STORE_MSG_UNAVAILABLE ": %s", msg);
    return NULL;
}

/* Run a prepared statement on c, preparing it first if needed. */
static PGresult *conn_exec(struct store *s,
                           struct conn *c,
                           enum stmt_id id,
                           const char *const *params,
                           int64_t timeout_ms,
                           vnib_error_t *errp)
{
    int64_t deadline = now_ms() + timeout_ms;
    PGresult *r;

    if (!(c->prepared & (UINT64_C(1) << id))) {
        if (!PQsendPrepare(
                c->pg, stmts[id].name, stmts[id].sql, stmts[id].nparams, NULL))
            goto send_failed;
        if (!(r = conn_wait_result(s, c, deadline, stmts[id].name, errp)))
            return NULL;
        PQclear(r);
        c->prepared |= UINT64_C(1) << id;
    }
    if (!PQsendQueryPrepared(
            c->pg, stmts[id].name, stmts[id].nparams, params, NULL, NULL, 0))
        goto send_failed;
    return conn_wait_result(s, c, deadline, stmts[id].name, errp);
send_failed : {
    char msg[256];
    pq_message(c->pg, msg, sizeof(msg));
    conn_drop(s, c);
    errno = EAGAIN;
    errprintf(errp, STORE_MSG_UNAVAILABLE ": %s", msg);
}
    return NULL;
}

/* Run a fixed script (migrations, BEGIN/COMMIT) with the simple protocol. */
static int conn_exec_script(struct store *s,
                            struct conn *c,
                            const char *sql,
                            const char *what,
                            int64_t timeout_ms,
                            vnib_error_t *errp)
{
    int64_t deadline = now_ms() + timeout_ms;
    if (!PQsendQuery(c->pg, sql)) {
        char msg[256];
        pq_message(c->pg, msg, sizeof(msg));
        conn_drop(s, c);
        errno = EAGAIN;
        return errprintf(errp, STORE_MSG_UNAVAILABLE ": %s", msg);
    }
    PGresult *r = conn_wait_result(s, c, deadline, what, errp);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* Run a one-row, one-integer query.  A connection that had been idle
 * while the server restarted fails on first use: that is retried once on
 * a fresh connection, since these queries are read-only.
 */
/* Statements whose success shows that the database takes writes again. */
static bool stmt_writes(enum stmt_id id)
{
    return id == STMT_RESERVE || id == STMT_RELEASE || id == STMT_REPORT
           || id == STMT_HWCOLL_SET_MANY || id == STMT_WRITE_PROBE;
}

static PGresult *run(struct store *s,
                     enum stmt_id id,
                     const char *const *params,
                     vnib_error_t *errp)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct conn *c = conn_acquire(s, errp);
        if (!c)
            return NULL;
        bool was_open = !c->fresh;
        PGresult *r = conn_exec(
            s, c, id, params, s->cfg->database.query_timeout_ms, errp);
        int e = errno;
        /* A pooled connection whose server restarted fails on first use
         * (EAGAIN, connection dropped): try once more on a fresh one.
         * Every store operation is idempotent, so a retry is safe even
         * if the first attempt committed before the connection died.
         */
        bool retry = !r && e == EAGAIN && was_open && !c->pg && attempt == 0;
        conn_release(s, c);
        errno = e;
        if (retry)
            continue;
        if (r) {
            vnib_error_clear(errp);
            if (stmt_writes(id)) {
                pthread_mutex_lock(&s->lock);
                s->writes_failing = false;
                pthread_mutex_unlock(&s->lock);
            }
        }
        return r;
    }
    return NULL;
}

/* Run a one-row, one-integer (or boolean) query. */
static int query_int(struct store *s,
                     enum stmt_id id,
                     long *valp,
                     vnib_error_t *errp)
{
    PGresult *r = run(s, id, NULL, errp);
    if (!r)
        return -1;
    const char *v = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : NULL;
    if (!v) {
        PQclear(r);
        errno = EIO;
        return errprintf(errp, STORE_MSG_ERROR ": unexpected result");
    }
    *valp = *v == 't' ? 1 : *v == 'f' ? 0 : strtol(v, NULL, 10);
    PQclear(r);
    return 0;
}

int store_schema_version(struct store *s, int *versionp, vnib_error_t *errp)
{
    long exists, version = 0;
    if (query_int(s, STMT_SCHEMA_TABLE_EXISTS, &exists, errp) < 0)
        return -1;
    if (exists && query_int(s, STMT_SCHEMA_VERSION, &version, errp) < 0)
        return -1;
    *versionp = (int)version;
    return 0;
}

/* The SHA-256 of migration m's text, in hex. */
static void migration_digest(const struct schema_migration *m, char hex[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];

    SHA256((const unsigned char *)m->sql, strlen(m->sql), md);
    for (size_t i = 0; i < sizeof(md); i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* r holds (version, name, sha256) of applied migrations: -1 with ESTALE
 * and errp naming the file when one of those this binary carries differs
 * from the text it carries.  Versions newer than the binary's are another
 * binary's to check.
 */
static int digests_match(const PGresult *r, vnib_error_t *errp)
{
    for (int i = 0; i < PQntuples(r); i++) {
        long v = strtol(PQgetvalue(r, i, 0), NULL, 10);
        const char *name = PQgetvalue(r, i, 1);
        const char *recorded = PQgetvalue(r, i, 2);
        char hex[65];

        if (v < 1 || (size_t)v > schema_migrations_count)
            continue;
        const struct schema_migration *m = &schema_migrations[v - 1];
        migration_digest(m, hex);
        if (strcmp(name, m->name) != 0) {
            errno = ESTALE;
            return errprintf(errp,
                             "migration %ld was applied as %s, but this "
                             "vnibrokerd carries %s under that number: "
                             "applied migrations must never be renamed",
                             v,
                             name,
                             m->name);
        }
        if (strcmp(recorded, hex) != 0) {
            errno = ESTALE;
            return errprintf(errp,
                             "migration %s differs from the one applied to "
                             "this database (SHA-256 recorded %.12s..., this "
                             "vnibrokerd's %.12s...): an applied migration "
                             "must never change; restore the file as it was "
                             "and put the change in a new migration",
                             m->name,
                             recorded,
                             hex);
        }
    }
    return 0;
}

int store_check_migrations(struct store *s, vnib_error_t *errp)
{
    int version;
    int rc;

    if (store_schema_version(s, &version, errp) < 0)
        return -1;
    if (version < SCHEMA_DIGESTS_VERSION)
        return 0;
    PGresult *r = run(s, STMT_SCHEMA_DIGESTS, NULL, errp);
    if (!r)
        return -1;
    rc = digests_match(r, errp);
    PQclear(r);
    return rc;
}

int store_check_ready(struct store *s, vnib_error_t *errp)
{
    int version;
    int need = store_required_version();

    if (store_schema_version(s, &version, errp) < 0)
        return -1;
    if (version < need) {
        errno = ESTALE;
        return errprintf(errp,
                         "database schema is at version %d, this vnibrokerd "
                         "needs %d: run 'vnibrokerd --migrate'",
                         version,
                         need);
    }
    /* Writes failed for lack of a resource: ready again only once one
     * succeeds, this probe's or a request's. */
    pthread_mutex_lock(&s->lock);
    bool failing = s->writes_failing;
    pthread_mutex_unlock(&s->lock);
    if (failing) {
        PGresult *r = run(s, STMT_WRITE_PROBE, NULL, errp);
        if (!r)
            return -1; /* EDQUOT still, or unavailable: errno says */
        PQclear(r);
    }
    return 0;
}

int store_migrate(struct store *s, int *fromp, int *top, vnib_error_t *errp)
{
    struct conn *c = NULL;
    PGresult *r = NULL;
    int version = 0;
    int rc = -1;

    if (!(c = conn_acquire(s, errp)))
        return -1;
    if (conn_set_timeout(s, c, MIGRATE_TIMEOUT_MS, errp) < 0)
        goto done;
    if (conn_exec_script(s, c, "BEGIN", "begin", MIGRATE_TIMEOUT_MS, errp) < 0)
        goto done;
    /* Serialise with any other migrating process before looking. */
    if (!(r = conn_exec(
              s, c, STMT_MIGRATE_LOCK, NULL, MIGRATE_TIMEOUT_MS, errp)))
        goto done;
    PQclear(r);
    if (!(r = conn_exec(
              s, c, STMT_SCHEMA_TABLE_EXISTS, NULL, MIGRATE_TIMEOUT_MS, errp)))
        goto done;
    bool exists = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (exists) {
        if (!(r = conn_exec(
                  s, c, STMT_SCHEMA_VERSION, NULL, MIGRATE_TIMEOUT_MS, errp)))
            goto done;
        version = atoi(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    *fromp = version;
    if (version >= SCHEMA_DIGESTS_VERSION) {
        /* Never build on a migration that changed after it was applied. */
        if (!(r = conn_exec(
                  s, c, STMT_SCHEMA_DIGESTS, NULL, MIGRATE_TIMEOUT_MS, errp)))
            goto done;
        int match = digests_match(r, errp);
        PQclear(r);
        r = NULL;
        if (match < 0)
            goto done;
    }
    if (version > store_required_version()) {
        logger_printf(s->log,
                      LOG_WARNING,
                      NULL,
                      "migrate: database schema %d is newer than this "
                      "vnibrokerd knows (%d); nothing to do",
                      version,
                      store_required_version());
    }
    for (size_t i = 0; i < schema_migrations_count; i++) {
        const struct schema_migration *m = &schema_migrations[i];
        char vbuf[16];
        const char *params[2] = {vbuf, m->name};

        if (m->version <= version)
            continue;
        logger_printf(
            s->log, LOG_NOTICE, NULL, "migrate: applying %s", m->name);
        if (conn_exec_script(s, c, m->sql, m->name, MIGRATE_TIMEOUT_MS, errp)
            < 0) {
            char why[sizeof(errp->text)];
            snprintf(why, sizeof(why), "%s", errp ? errp->text : "error");
            errprintf(errp, "migration %s failed: %s", m->name, why);
            goto done;
        }
        snprintf(vbuf, sizeof(vbuf), "%d", m->version);
        if (!(r = conn_exec(
                  s, c, STMT_SCHEMA_RECORD, params, MIGRATE_TIMEOUT_MS, errp)))
            goto done;
        PQclear(r);
        version = m->version;
    }
    /* Record the digests of what was applied now, and once of what was
     * applied before digests were kept. */
    for (size_t i = 0;
         version >= SCHEMA_DIGESTS_VERSION && i < schema_migrations_count;
         i++) {
        const struct schema_migration *m = &schema_migrations[i];
        char vbuf[16], hex[65];
        const char *params[2] = {vbuf, hex};

        if (m->version > version)
            break;
        snprintf(vbuf, sizeof(vbuf), "%d", m->version);
        migration_digest(m, hex);
        if (!(r = conn_exec(s,
                            c,
                            STMT_SCHEMA_DIGEST_SET,
                            params,
                            MIGRATE_TIMEOUT_MS,
                            errp)))
            goto done;
        PQclear(r);
    }
    r = NULL;
    if (conn_exec_script(s, c, "COMMIT", "commit", MIGRATE_TIMEOUT_MS, errp)
        < 0)
        goto done;
    *top = version > *fromp ? version : *fromp;
    rc = 0;
done:
    if (rc < 0 && c->pg) {
        int e = errno;
        vnib_error_t ignore;
        (void)conn_exec_script(s, c, "ROLLBACK", "rollback", 5000, &ignore);
        errno = e;
    }
    /* Back to the request timeout before the pool lends it out again. */
    if (c->pg) {
        vnib_error_t ignore;
        if (conn_set_timeout(s, c, s->cfg->database.query_timeout_ms, &ignore)
            < 0)
            conn_drop(s, c);
    }
    conn_release(s, c);
    return rc;
}

void store_get_stats(struct store *s, struct store_stats *st)
{
    pthread_mutex_lock(&s->lock);
    *st = s->stats;
    /* A slot not lent out is touched by no one while the lock is held. */
    st->idle = 0;
    for (size_t i = 0; i < s->nconns; i++)
        if (!s->conns[i].busy && s->conns[i].pg)
            st->idle++;
    pthread_mutex_unlock(&s->lock);
    if (s->reserves)
        group_get_stats(s->reserves, &st->reserves);
    if (s->releases)
        group_get_stats(s->releases, &st->releases);
    if (s->hwsets)
        group_get_stats(s->hwsets, &st->hwsets);
}

/* ---- text buffers for parameters ------------------------------------------
 */

/* A growing string for array literals; `failed` is sticky, as pgbouncer's
 * PktBuf is, so callers check once at the end.
 */
struct sbuf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
};

static void sb_putc(struct sbuf *b, char c)
{
    if (b->failed)
        return;
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb_putc(b, s[i]);
}

/* An element of a text[] literal: quoted, with " and \ escaped. */
static void sb_quoted(struct sbuf *b, const char *s, size_t n)
{
    sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            sb_putc(b, '\\');
        sb_putc(b, s[i]);
    }
    sb_putc(b, '"');
}

static void sb_num(struct sbuf *b, long long v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "%lld", v);
    sb_puts(b, tmp, (size_t)n);
}

/* ---- rows to JSON ---------------------------------------------------------
 */

static const char *col(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? NULL : PQgetvalue(r, row, c);
}

static long long col_ll(const PGresult *r, int row, int c)
{
    const char *v = col(r, row, c);
    return v ? strtoll(v, NULL, 10) : 0;
}

static json_t *str_or_null(const char *v)
{
    return v ? json_string(v) : json_null();
}

/* Traffic class names of a mask, in enum order. */
static json_t *tclass_names(unsigned mask)
{
    json_t *a = json_array();
    for (unsigned bit = 1; a && bit <= TCLASS_ALL; bit <<= 1)
        if ((mask & bit) && tclass_name(bit))
            json_array_append_new(a, json_string(tclass_name(bit)));
    return a;
}

/* The "hwcoll" and "environment" objects of a reservation.  The session
 * token is never part of them here: only callers allowed to see it add it
 * (from STORE_SEALED_TOKEN).
 */
static int row_hwcoll(const struct config *cfg,
                      const PGresult *r,
                      int row,
                      json_t *o,
                      const char *vnis,
                      const char *tcs)
{
    const char *state = col(r, row, ROW_HWCOLL_STATE);
    const char *reason = col(r, row, ROW_HWCOLL_REASON);
    const char *fm_job_id = col(r, row, ROW_FM_JOB_ID);
    const char *addrs = col(r, row, ROW_ADDRS_PER_JOB);
    char url[1024] = "";
    json_t *h, *env;

    if (cfg->hwcoll.fm_url[0])
        snprintf(url,
                 sizeof(url),
                 "%s/fabric/collectives/multicasts",
                 cfg->hwcoll.fm_url);
    if (!(h = json_pack("{s:s, s:s, s:I}",
                        "state",
                        state ? state : "disabled",
                        "mode",
                        col(r, row, ROW_HWCOLL_MODE),
                        "min_nodes",
                        (json_int_t)cfg->hwcoll.min_nodes)))
        return -1;
    /* json_object_set_new() takes its value even when it fails, so only h
     * is ours to drop here, and only until o has taken it.
     */
    if ((reason && json_object_set_new(h, "reason", json_string(reason)) < 0)
        || (fm_job_id
            && json_object_set_new(h, "fm_job_id", json_string(fm_job_id)) < 0)
        || (addrs
            && json_object_set_new(
                   h, "addrs_per_job", json_integer(strtol(addrs, NULL, 10)))
                   < 0)
        || (url[0]
            && json_object_set_new(h, "fabric_manager_url", json_string(url))
                   < 0)) {
        json_decref(h);
        return -1;
    }
    if (json_object_set_new(o, "hwcoll", h) < 0)
        return -1;
    if (!(env = json_pack("{s:s, s:s}",
                          "SLINGSHOT_VNIS",
                          vnis ? vnis : "",
                          "SLINGSHOT_TCS",
                          tcs)))
        return -1;
    if (state && !strcmp(state, "reserved") && fm_job_id && addrs) {
        char n[24];
        snprintf(n, sizeof(n), "%ld", cfg->hwcoll.min_nodes);
        if (json_object_set_new(
                env, "FI_CXI_COLL_JOB_ID", json_string(fm_job_id))
                < 0
            || json_object_set_new(
                   env, "FI_CXI_COLL_FABRIC_MGR_URL", json_string(url))
                   < 0
            || json_object_set_new(
                   env, "FI_CXI_HWCOLL_ADDRS_PER_JOB", json_string(addrs))
                   < 0
            || json_object_set_new(
                   env, "FI_CXI_HWCOLL_MIN_NODES", json_string(n))
                   < 0) {
            json_decref(env);
            return -1;
        }
    }
    return json_object_set_new(o, "environment", env);
}

/* Build the reservation in the vnib_row at `row` (see ROW_*).  The cleanup
 * counts are included when the row carries them.
 */
static json_t *row_reservation(const struct config *cfg,
                               const PGresult *r,
                               int row)
{
    json_t *o = json_object();
    json_t *vnis = json_array();
    char tcs[16];
    const char *v;

    if (!o || !vnis)
        goto nomem;
    /* array_to_string gives "1024,1025". */
    if ((v = col(r, row, ROW_VNIS)) && *v) {
        for (const char *p = v; *p;) {
            char *end;
            long n = strtol(p, &end, 10);
            json_array_append_new(vnis, json_integer(n));
            p = *end == ',' ? end + 1 : end + strlen(end);
        }
    }
    unsigned mask = (unsigned)col_ll(r, row, ROW_TCS_MASK);
    tclass_mask_hex(mask, tcs, sizeof(tcs));
    const char *state = col(r, row, ROW_STATE);
    if (!state)
        goto nomem; /* not a reservation row */
    /* clang-format off */
    if (json_object_set_new(o, "id", json_integer(col_ll(r, row, ROW_ID))) < 0
        || json_object_set_new(o, "job_id", json_string(col(r, row, ROW_JOB_ID))) < 0
        || json_object_set_new(o, "state", json_string(state)) < 0
        || json_object_set_new(o, "uid", json_integer(col_ll(r, row, ROW_UID))) < 0
        || json_object_set_new(o, "user", json_string(col(r, row, ROW_USER))) < 0
        || json_object_set_new(o, "nodes", json_string(col(r, row, ROW_NODES))) < 0
        || json_object_set_new(o, "node_count",
                               json_integer(col_ll(r, row, ROW_NODE_COUNT))) < 0
        || json_object_set_new(o, "vni_count",
                               json_integer(col_ll(r, row, ROW_VNI_COUNT))) < 0
        || json_object_set_new(o, "vnis", json_incref(vnis)) < 0
        || json_object_set_new(o, "traffic_classes", tclass_names(mask)) < 0
        || json_object_set_new(o, "tcs_mask", json_string(tcs)) < 0
        || json_object_set_new(o, "quarantined",
                               json_boolean(!strcmp(state, "releasing"))) < 0
        || json_object_set_new(o, "created_at",
                               str_or_null(col(r, row, ROW_CREATED_AT))) < 0
        || json_object_set_new(o, "created_by",
                               str_or_null(col(r, row, ROW_CREATED_BY))) < 0
        || json_object_set_new(o, "release_requested_at",
                               str_or_null(col(r, row, ROW_RELEASE_REQUESTED_AT))) < 0
        || json_object_set_new(o, "released_at",
                               str_or_null(col(r, row, ROW_RELEASED_AT))) < 0
        || json_object_set_new(o, "released_by",
                               str_or_null(col(r, row, ROW_RELEASED_BY))) < 0
        || json_object_set_new(o, "forced",
                               json_boolean(*col(r, row, ROW_FORCED) == 't')) < 0)
        goto nomem;
    /* clang-format on */
    if (json_array_size(vnis) == 0
        && json_object_set_new(
               o, "empty_reason", str_or_null(col(r, row, ROW_EMPTY_REASON)))
               < 0)
        goto nomem;
    if (row_hwcoll(cfg, r, row, o, col(r, row, ROW_VNIS), tcs) < 0)
        goto nomem;
    if ((v = col(r, row, ROW_COUNTS))) {
        long long creating, created, destroyed, failed;
        if (sscanf(v,
                   "%lld,%lld,%lld,%lld",
                   &creating,
                   &created,
                   &destroyed,
                   &failed)
            == 4) {
            long long pending = col_ll(r, row, ROW_NODE_COUNT) - creating
                                - created - destroyed - failed;
            json_t *c = json_pack("{s:I, s:I, s:I, s:I, s:I}",
                                  "pending",
                                  (json_int_t)(pending > 0 ? pending : 0),
                                  "creating",
                                  (json_int_t)creating,
                                  "created",
                                  (json_int_t)created,
                                  "destroyed",
                                  (json_int_t)destroyed,
                                  "failed",
                                  (json_int_t)failed);
            if (!c || json_object_set_new(o, "cleanup", c) < 0)
                goto nomem;
        }
    }
    json_decref(vnis);
    return o;
nomem:
    json_decref(vnis);
    json_decref(o);
    errno = ENOMEM;
    return NULL;
}

/* The reservation of row `row` of a result, or -1 with errp. */
static int result_row(
    struct store *s, PGresult *r, int row, json_t **resp, vnib_error_t *errp)
{
    if (!(*resp = row_reservation(s->cfg, r, row))) {
        errno = EIO;
        return errprintf(errp, STORE_MSG_ERROR ": no reservation in the reply");
    }
    return 0;
}

/* The reservation of a one-row result, or -1 with errp. */
static int result_reservation(struct store *s,
                              PGresult *r,
                              json_t **resp,
                              vnib_error_t *errp)
{
    return result_row(s, r, 0, resp, errp);
}

/* Run and expect exactly one row; ENOENT with `missing` otherwise. */
static PGresult *run_one(struct store *s,
                         enum stmt_id id,
                         const char *const *params,
                         const char *missing,
                         vnib_error_t *errp)
{
    PGresult *r = run(s, id, params, errp);
    if (r && PQntuples(r) != 1) {
        PQclear(r);
        errno = ENOENT;
        errprintf(errp, "%s", missing);
        return NULL;
    }
    return r;
}

/* Add the sealed session token of the row, for the callers that may reveal
 * it (see STORE_SEALED_TOKEN).
 */
static int add_sealed(PGresult *r, int row, json_t *res, vnib_error_t *errp)
{
    const char *sealed = col(r, row, ROW_SESSION_TOKEN);
    if (sealed
        && json_object_set_new(res, STORE_SEALED_TOKEN, json_string(sealed))
               < 0)
        return errprintf(errp, "out of memory");
    return 0;
}

/* ---- reservations ----------------------------------------------------------
 */

/* Node lists as ranges of trailing numbers (see reservation_ranges in
 * schema/0002), of the items of a group: six parallel array literals, the
 * item of each range in `item`.  hosts must be sorted (hostlist_uniq) so
 * that runs are adjacent.
 */
struct ranges {
    struct sbuf item, prefix, suffix, width, lo, hi;
    size_t count;
};

static void ranges_free(struct ranges *g)
{
    free(g->item.data);
    free(g->prefix.data);
    free(g->suffix.data);
    free(g->width.data);
    free(g->lo.data);
    free(g->hi.data);
}

static void ranges_open(struct ranges *g)
{
    memset(g, 0, sizeof(*g));
    sb_putc(&g->item, '{');
    sb_putc(&g->prefix, '{');
    sb_putc(&g->suffix, '{');
    sb_putc(&g->width, '{');
    sb_putc(&g->lo, '{');
    sb_putc(&g->hi, '{');
}

/* Append the ranges of item `item` (1-based). */
static void ranges_add(struct ranges *g, const struct hostlist *hosts, int item)
{
    size_t n = hostlist_count(hosts);
    struct hostlist_key cur = {0}, k;
    const char *curname = NULL;
    uint64_t hi = 0;

    for (size_t i = 0; i <= n; i++) {
        const char *name = i < n ? hostlist_nth(hosts, i) : NULL;
        if (name) {
            hostlist_name_key(name, &k);
            if (curname && k.width >= 0 && k.width == cur.width
                && k.prefix_len == cur.prefix_len
                && !strncmp(name, curname, k.prefix_len)
                && !strcmp(k.suffix, cur.suffix) && k.num == hi + 1) {
                hi = k.num;
                continue;
            }
        }
        if (curname) {
            const char *sep = g->count++ ? "," : "";
            sb_puts(&g->item, sep, strlen(sep));
            sb_num(&g->item, item);
            sb_puts(&g->prefix, sep, strlen(sep));
            sb_quoted(&g->prefix, curname, cur.prefix_len);
            sb_puts(&g->suffix, sep, strlen(sep));
            sb_quoted(&g->suffix, cur.suffix, strlen(cur.suffix));
            sb_puts(&g->width, sep, strlen(sep));
            sb_num(&g->width, cur.width);
            sb_puts(&g->lo, sep, strlen(sep));
            sb_num(&g->lo, (long long)cur.num);
            sb_puts(&g->hi, sep, strlen(sep));
            sb_num(&g->hi, (long long)hi);
        }
        if (name) {
            cur = k;
            curname = name;
            hi = k.num;
        }
    }
}

static int ranges_close(struct ranges *g)
{
    sb_putc(&g->item, '}');
    sb_putc(&g->prefix, '}');
    sb_putc(&g->suffix, '}');
    sb_putc(&g->width, '}');
    sb_putc(&g->lo, '}');
    sb_putc(&g->hi, '}');
    if (g->item.failed || g->prefix.failed || g->suffix.failed
        || g->width.failed || g->lo.failed || g->hi.failed) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* The pool as two array literals of range bounds. */
static int pool_arrays(const struct idset *pool,
                       struct sbuf *lo,
                       struct sbuf *hi)
{
    size_t n = idset_range_count(pool);
    memset(lo, 0, sizeof(*lo));
    memset(hi, 0, sizeof(*hi));
    sb_putc(lo, '{');
    sb_putc(hi, '{');
    for (size_t i = 0; i < n; i++) {
        uint32_t l, h;
        (void)idset_range(pool, i, &l, &h);
        if (i > 0) {
            sb_putc(lo, ',');
            sb_putc(hi, ',');
        }
        sb_num(lo, l);
        sb_num(hi, h);
    }
    sb_putc(lo, '}');
    sb_putc(hi, '}');
    if (lo->failed || hi->failed) {
        free(lo->data);
        free(hi->data);
        lo->data = hi->data = NULL;
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* ---- reserves and releases, in groups (server/group.h) ---------------------
 *
 * A reserve (or release) joins the group being gathered and is written
 * with it in one call of vnib_reserve_batch (vnib_release_batch): see
 * schema/0008 for what a group keeps of each request's promises.  Each
 * item carries its own outcome.  A group that fails as a whole is run
 * again item by item, so that one item cannot fail the others.  An item
 * whose job lock was held elsewhere ("busy") is run alone after its group,
 * waiting for the lock, on its own request's thread.
 */

/* Append one element to a text[] literal ("NULL" for none). */
static void sb_elem(struct sbuf *b, size_t i, const char *v)
{
    if (i > 0)
        sb_putc(b, ',');
    if (v)
        sb_quoted(b, v, strlen(v));
    else
        sb_puts(b, "NULL", 4);
}

/* Append one element to a numeric array literal. */
static void sb_elem_num(struct sbuf *b, size_t i, long long v)
{
    if (i > 0)
        sb_putc(b, ',');
    sb_num(b, v);
}

/* May one item have failed its whole group with this errno?  A bad value
 * or an unexpected database error may; a database that is down, slow or
 * gone (EAGAIN, ETIMEDOUT, ESTALE) fails every item alike, and running
 * them again one by one would only make each wait its own timeout.
 */
static bool item_may_fail_group(int e)
{
    return e != EAGAIN && e != ETIMEDOUT && e != ESTALE && e != EDQUOT;
}

/* What reserve and release items share: the group's link, and the
 * answer (0 with resp, or -1 with err and error); busy: the job's lock was
 * held elsewhere and nothing was done.
 */
struct item_result {
    struct group_item gi; /* first: the group sees this */
    bool busy;
    int rc;
    int err;
    vnib_error_t error;
    json_t *resp;
};

static void item_fail(struct item_result *ir, int err, const char *text)
{
    ir->rc = -1;
    ir->err = err;
    snprintf(ir->error.text, sizeof(ir->error.text), "%s", text);
}

/* Runs items[0..n-1] as one group (reserve_group, release_group). */
typedef void (*group_fn)(struct store *s,
                         struct item_result **items,
                         size_t n,
                         bool wait);

/* A group's statement failed with errno e and message text: run each item
 * alone when one of them may be the cause, else fail them all.
 */
static void group_failed(struct store *s,
                         struct item_result **items,
                         size_t n,
                         bool wait,
                         int e,
                         const char *text,
                         group_fn fn)
{
    if (n > 1 && item_may_fail_group(e)) {
        for (size_t i = 0; i < n; i++)
            fn(s, &items[i], 1, wait);
    } else {
        for (size_t i = 0; i < n; i++)
            item_fail(items[i], e, text);
    }
}

/* Close a group's array literals all[0..nall-1].  When one of them (or
 * the caller, with failed) ran out of memory every item fails, and false
 * is returned.
 */
static bool arrays_close(struct sbuf *const *all,
                         size_t nall,
                         bool failed,
                         struct item_result **base,
                         size_t n)
{
    for (size_t i = 0; i < nall; i++) {
        sb_putc(all[i], '}');
        failed = failed || all[i]->failed;
    }
    for (size_t i = 0; failed && i < n; i++)
        item_fail(base[i], ENOMEM, "out of memory");
    return !failed;
}

/* Run a group's statement: its result, one row per item in order, or
 * NULL when it failed and every item has its answer (group_failed).
 */
static PGresult *group_exec(struct store *s,
                            enum stmt_id id,
                            const char *const *params,
                            struct item_result **base,
                            size_t n,
                            bool wait,
                            group_fn fn)
{
    vnib_error_t err = {{0}};
    PGresult *r = run(s, id, params, &err);

    if (r && PQntuples(r) != (int)n) {
        PQclear(r);
        r = NULL;
        errno = EIO;
        errprintf(&err, STORE_MSG_ERROR ": unexpected reply");
    }
    if (!r)
        group_failed(s, base, n, wait, errno, err.text, fn);
    return r;
}

/* Submit an item to group g (or run it alone when grouping is off); a
 * busy item runs again alone, waiting for its lock.  0, or -1 with errno
 * and errp.
 */
static int item_submit(struct store *s,
                       struct group *g,
                       struct item_result *it,
                       group_fn fn,
                       vnib_error_t *errp)
{
    struct item_result *one = it;

    if (g)
        group_submit(g, &it->gi);
    else
        fn(s, &one, 1, true);
    if (it->busy) {
        it->busy = false;
        fn(s, &one, 1, true);
    }
    if (it->rc < 0 || it->busy) {
        errno = it->busy ? EIO : it->err;
        return errprintf(errp, "%s", it->error.text);
    }
    return 0;
}

struct reserve_item {
    struct item_result res; /* first */
    const struct store_reserve *a;
    long long ticket; /* kept from a busy first try, else 0 */
    bool created;
};

/* The outcome of one row for its item. */
static void reserve_finish(struct store *s,
                           PGresult *r,
                           int row,
                           struct reserve_item *it)
{
    const char *outcome = col(r, row, ROW_OUTCOME);
    const char *detail = col(r, row, ROW_NCOLS);
    const struct store_reserve *a = it->a;
    vnib_error_t *errp = &it->res.error;

    it->res.rc = -1;
    if (!strcmp(outcome, "busy")) {
        it->res.busy = true;
        it->ticket = detail ? strtoll(detail, NULL, 10) : 0;
        return;
    }
    if (!strcmp(outcome, "exhausted")) {
        exhausted_error(errp, detail);
        it->res.err = ENOSPC;
        return;
    }
    if (!strcmp(outcome, "conflict")) {
        it->res.err = EEXIST;
        errprintf(errp,
                  "job %s already has an active reservation with different "
                  "parameters (uid, user, nodes, vni_count or hwcoll)",
                  a->job_id);
        return;
    }
    if (!strcmp(outcome, "superseded")) {
        /* A retry of this request was answered while it waited, and the
         * job has a newer reservation (maybe released already): this one
         * must not make another.
         */
        it->res.err = EALREADY;
        errprintf(errp,
                  "job %s has a newer reservation (%s, %s) made while this "
                  "request waited; nothing was reserved",
                  a->job_id,
                  col(r, row, ROW_ID),
                  col(r, row, ROW_STATE));
        return;
    }
    it->created = !strcmp(outcome, "created");
    if (result_row(s, r, row, &it->res.resp, errp) < 0
        || add_sealed(r, row, it->res.resp, errp) < 0) {
        it->res.err = errno ? errno : EIO;
        json_decref(it->res.resp);
        it->res.resp = NULL;
        return;
    }
    it->res.rc = 0;
}

/* Run items[0..n-1] (reserve_items) as one group; wait: take job locks
 * waiting.  A group_fn.
 */
static void reserve_group(struct store *s,
                          struct item_result **base,
                          size_t n,
                          bool wait)
{
    struct reserve_item **items = (struct reserve_item **)base;
    struct sbuf job = {0}, uid = {0}, user = {0}, nodes = {0}, ncount = {0},
                vcount = {0}, tcs = {0}, empty = {0}, actor = {0}, hmode = {0},
                hstate = {0}, hreason = {0}, fm = {0}, addrs = {0},
                ticket = {0}, plo = {0}, phi = {0};
    struct sbuf *all[] = {&job,
                          &uid,
                          &user,
                          &nodes,
                          &ncount,
                          &vcount,
                          &tcs,
                          &empty,
                          &actor,
                          &hmode,
                          &hstate,
                          &hreason,
                          &fm,
                          &addrs,
                          &ticket};
    const size_t nall = sizeof(all) / sizeof(all[0]);
    struct ranges g;
    bool tickets = false;
    PGresult *r = NULL;

    ranges_open(&g);
    for (size_t i = 0; i < nall; i++)
        sb_putc(all[i], '{');
    for (size_t i = 0; i < n; i++) {
        const struct store_reserve *a = items[i]->a;
        sb_elem(&job, i, a->job_id);
        sb_elem_num(&uid, i, a->uid);
        sb_elem(&user, i, a->user);
        sb_elem(&nodes, i, a->nodes);
        sb_elem_num(&ncount, i, (long long)a->node_count);
        sb_elem_num(&vcount, i, a->vni_count);
        sb_elem_num(&tcs, i, a->tcs_mask);
        sb_elem(&empty, i, a->empty_reason);
        sb_elem(&actor, i, a->actor);
        sb_elem(&hmode, i, a->hwcoll_mode);
        sb_elem(&hstate, i, a->hwcoll_state);
        sb_elem(&hreason, i, a->hwcoll_reason);
        sb_elem(&fm, i, a->fm_job_id);
        if (a->addrs_per_job > 0)
            sb_elem_num(&addrs, i, a->addrs_per_job);
        else
            sb_elem(&addrs, i, NULL);
        if (items[i]->ticket > 0) {
            sb_elem_num(&ticket, i, items[i]->ticket);
            tickets = true;
        } else
            sb_elem(&ticket, i, NULL);
        ranges_add(&g, a->hosts, (int)i + 1);
    }
    bool failed =
        ranges_close(&g) < 0 || pool_arrays(items[0]->a->pool, &plo, &phi) < 0;
    if (!arrays_close(all, nall, failed, base, n))
        goto done;
    const char *params[24] = {
        job.data,
        uid.data,
        user.data,
        nodes.data,
        ncount.data,
        vcount.data,
        tcs.data,
        empty.data,
        actor.data,
        plo.data,
        phi.data,
        g.item.data,
        g.prefix.data,
        g.suffix.data,
        g.width.data,
        g.lo.data,
        g.hi.data,
        hmode.data,
        hstate.data,
        hreason.data,
        fm.data,
        addrs.data,
        tickets ? ticket.data : NULL,
        wait ? "true" : "false",
    };
    if (!(r = group_exec(
              s, STMT_RESERVE, params, base, n, wait, reserve_group)))
        goto done;
    for (size_t i = 0; i < n; i++)
        reserve_finish(s, r, (int)i, items[i]);
done:
    PQclear(r);
    ranges_free(&g);
    for (size_t i = 0; i < nall; i++)
        free(all[i]->data);
    free(plo.data);
    free(phi.data);
}

/* group_fits_f: one pool per group, each job once. */
static bool reserve_fits(void *arg,
                         struct group_item *const *items,
                         size_t n,
                         const struct group_item *gi)
{
    const struct reserve_item *it = (const struct reserve_item *)gi;
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        const struct reserve_item *o = (const struct reserve_item *)items[i];
        if (o->a->pool != it->a->pool || !strcmp(o->a->job_id, it->a->job_id))
            return false;
    }
    return true;
}

static void reserve_run(void *arg, struct group_item **items, size_t n)
{
    reserve_group(arg, (struct item_result **)items, n, false);
}

int store_reserve(struct store *s,
                  const struct store_reserve *a,
                  json_t **resp,
                  bool *createdp,
                  vnib_error_t *errp)
{
    struct reserve_item it = {.a = a};

    if (item_submit(s, s->reserves, &it.res, reserve_group, errp) < 0)
        return -1;
    *createdp = it.created;
    *resp = it.res.resp;
    return 0;
}

/* Parameters naming a node for the membership test, from its key. */
struct node_params {
    char prefix[TOKEN_NODE_MAX];
    const char *suffix;
    char width[8];
    char num[24];
};

static void node_params_init(struct node_params *np, const char *node)
{
    struct hostlist_key k;
    hostlist_name_key(node, &k);
    snprintf(np->prefix, sizeof(np->prefix), "%.*s", (int)k.prefix_len, node);
    np->suffix = k.suffix;
    snprintf(np->width, sizeof(np->width), "%d", k.width);
    snprintf(np->num, sizeof(np->num), "%llu", (unsigned long long)k.num);
}

int store_get(struct store *s,
              const char *job_id,
              const char *node,
              bool counts,
              json_t **resp,
              bool *memberp,
              vnib_error_t *errp)
{
    struct node_params np;
    const char *params[6] = {
        job_id, NULL, NULL, NULL, NULL, counts ? "true" : "false"};
    if (node) {
        node_params_init(&np, node);
        params[1] = np.prefix;
        params[2] = np.suffix;
        params[3] = np.width;
        params[4] = np.num;
    }
    PGresult *r = run(s, STMT_RES_GET, params, errp);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        errno = ENOENT;
        return errprintf(errp, "no reservation for job %s", job_id);
    }
    *memberp = *col(r, 0, ROW_NCOLS) == 't';
    int rc = result_reservation(s, r, resp, errp);
    const char *sealed = col(r, 0, ROW_SESSION_TOKEN);
    if (rc == 0 && sealed
        && json_object_set_new(*resp, STORE_SEALED_TOKEN, json_string(sealed))
               < 0)
        rc = errprintf(errp, "out of memory");
    PQclear(r);
    return rc;
}

int store_list(struct store *s,
               const struct store_list *q,
               json_t **pagep,
               vnib_error_t *errp)
{
    struct node_params np;
    char uid[24], after[24], limit[16];
    const char *params[8] = {
        q->state, NULL, after, NULL, NULL, NULL, NULL, limit};
    json_t *list = NULL;

    if (q->uid >= 0) {
        snprintf(uid, sizeof(uid), "%lld", q->uid);
        params[1] = uid;
    }
    if (q->node) {
        node_params_init(&np, q->node);
        params[3] = np.prefix;
        params[4] = np.suffix;
        params[5] = np.width;
        params[6] = np.num;
    }
    snprintf(after, sizeof(after), "%lld", q->after);
    snprintf(limit, sizeof(limit), "%d", q->limit);
    PGresult *r = run(s, STMT_RES_LIST, params, errp);
    if (!r)
        return -1;
    int n = PQntuples(r);
    if (!(list = json_array()))
        goto nomem;
    for (int i = 0; i < n; i++) {
        json_t *o = row_reservation(s->cfg, r, i);
        if (!o || json_array_append_new(list, o) < 0)
            goto nomem;
    }
    /* A full page may have more behind it. */
    json_t *next =
        n == q->limit ? json_string(col(r, n - 1, ROW_ID)) : json_null();
    PQclear(r);
    if (!(*pagep = json_pack("{s:o, s:o}", "reservations", list, "next", next)))
        return errprintf(errp, "out of memory");
    return 0;
nomem:
    PQclear(r);
    json_decref(list);
    errno = ENOMEM;
    return errprintf(errp, "out of memory");
}

struct release_item {
    struct item_result res; /* first */
    const char *job_id;
    long long reservation_id; /* 0: the one the job id means */
    const char *actor;
    bool force;
    bool done;
};

static void release_finish(struct store *s,
                           PGresult *r,
                           int row,
                           struct release_item *it)
{
    const char *outcome = col(r, row, ROW_OUTCOME);
    vnib_error_t *errp = &it->res.error;

    it->res.rc = -1;
    if (!strcmp(outcome, "busy")) {
        it->res.busy = true;
        return;
    }
    if (!strcmp(outcome, "not_found")) {
        it->res.err = ENOENT;
        if (it->reservation_id > 0)
            errprintf(errp,
                      "job %s has no reservation %lld",
                      it->job_id,
                      it->reservation_id);
        else
            errprintf(errp, "no reservation for job %s", it->job_id);
        return;
    }
    it->done =
        !strcmp(outcome, "released") || !strcmp(outcome, "already_released");
    if (result_row(s, r, row, &it->res.resp, errp) < 0) {
        it->res.err = errno ? errno : EIO;
        return;
    }
    it->res.rc = 0;
}

/* Run items[0..n-1] (release_items, sharing actor and force) as one
 * group.  A group_fn.
 */
static void release_group(struct store *s,
                          struct item_result **base,
                          size_t n,
                          bool wait)
{
    struct release_item **items = (struct release_item **)base;
    struct sbuf job = {0}, res = {0};
    PGresult *r = NULL;

    sb_putc(&job, '{');
    sb_putc(&res, '{');
    for (size_t i = 0; i < n; i++) {
        sb_elem(&job, i, items[i]->job_id);
        if (items[i]->reservation_id > 0)
            sb_elem_num(&res, i, items[i]->reservation_id);
        else
            sb_elem(&res, i, NULL);
    }
    struct sbuf *all[] = {&job, &res};
    if (!arrays_close(all, 2, false, base, n))
        goto done;
    const char *params[5] = {job.data,
                             res.data,
                             items[0]->actor,
                             items[0]->force ? "true" : "false",
                             wait ? "true" : "false"};
    if (!(r = group_exec(
              s, STMT_RELEASE, params, base, n, wait, release_group)))
        goto done;
    for (size_t i = 0; i < n; i++)
        release_finish(s, r, (int)i, items[i]);
done:
    PQclear(r);
    free(job.data);
    free(res.data);
}

/* group_fits_f: one actor and force per group, each job once. */
static bool release_fits(void *arg,
                         struct group_item *const *items,
                         size_t n,
                         const struct group_item *gi)
{
    const struct release_item *it = (const struct release_item *)gi;
    const struct release_item *first = (const struct release_item *)items[0];
    (void)arg;
    if (first->force != it->force || strcmp(first->actor, it->actor))
        return false;
    for (size_t i = 0; i < n; i++) {
        const struct release_item *o = (const struct release_item *)items[i];
        if (!strcmp(o->job_id, it->job_id))
            return false;
    }
    return true;
}

static void release_run(void *arg, struct group_item **items, size_t n)
{
    release_group(arg, (struct item_result **)items, n, false);
}

int store_release(struct store *s,
                  const char *job_id,
                  long long reservation_id,
                  const char *actor,
                  bool force,
                  json_t **resp,
                  bool *donep,
                  vnib_error_t *errp)
{
    struct release_item it = {.job_id = job_id,
                              .reservation_id = reservation_id,
                              .actor = actor,
                              .force = force};

    if (item_submit(s, s->releases, &it.res, release_group, errp) < 0)
        return -1;
    *donep = it.done;
    *resp = it.res.resp;
    return 0;
}

int store_report(struct store *s,
                 const struct store_report *a,
                 json_t **resp,
                 const char **codep,
                 vnib_error_t *errp)
{
    struct node_params np;
    node_params_init(&np, a->node);
    char res[24];
    if (a->reservation_id > 0)
        snprintf(res, sizeof(res), "%lld", a->reservation_id);
    const char *params[11] = {a->job_id,
                              a->node,
                              a->cxi,
                              a->services,
                              a->message,
                              a->actor,
                              np.prefix,
                              np.suffix,
                              np.width,
                              np.num,
                              a->reservation_id > 0 ? res : NULL};
    PGresult *r = run_one(s, STMT_REPORT, params, "no answer", errp);
    if (!r)
        return -1;
    const char *outcome = col(r, 0, ROW_OUTCOME);
    const char *prev = col(r, 0, ROW_COUNTS); /* for invalid_transition */
    int rc = -1;
    *codep = NULL;
    if (!strcmp(outcome, "not_found")) {
        errno = ENOENT;
        *codep = "reservation_not_found";
        errprintf(errp, "no reservation for job %s", a->job_id);
    } else if (!strcmp(outcome, "not_member")) {
        errno = EPERM;
        *codep = "forbidden";
        errprintf(
            errp, "node %s is not in job %s's node list", a->node, a->job_id);
    } else if (!strcmp(outcome, "stale_reservation")) {
        errno = EEXIST;
        *codep = "stale_reservation";
        errprintf(errp,
                  "reservation %lld is not job %s's current one; fetch the "
                  "job again",
                  a->reservation_id,
                  a->job_id);
    } else if (!strcmp(outcome, "invalid_transition")) {
        errno = EEXIST;
        *codep = "invalid_transition";
        errprintf(errp,
                  "node %s already reported %s for job %s; %s would go "
                  "backwards",
                  a->node,
                  prev ? prev : "?",
                  a->job_id,
                  a->cxi);
    } else if (!strcmp(outcome, "job_not_active")) {
        errno = EEXIST;
        *codep = "job_not_active";
        errprintf(errp,
                  "job %s is being released; '%s' is no longer "
                  "accepted",
                  a->job_id,
                  a->cxi);
    } else
        rc = result_reservation(s, r, resp, errp);
    PQclear(r);
    return rc;
}

/* The node view of GET /v1/nodes/{node}: the reservations of the node's
 * view query r (rows as ROW_*, then the cxi state and the services) and
 * its drain record d.  Returns a new object, or NULL with errno ENOMEM.
 *
 * Every value handed to json_object_set_new(), json_array_append_new() or
 * json_pack()'s "o" is the container's from then on, even when the call
 * fails, so each is dropped here only while it is still ours.
 */
static json_t *node_view(const struct config *cfg,
                         const char *node,
                         const PGresult *r,
                         const PGresult *d)
{
    json_t *list = json_array(), *o;
    int holding = 0;

    if (!list)
        goto nomem;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *res = row_reservation(cfg, r, i);
        const char *cxi = col(r, i, ROW_NCOLS);
        json_t *services = json_loads(col(r, i, ROW_NCOLS + 1), 0, NULL);
        /* Anything but a confirmed destroy may leave a service behind. */
        bool needed = strcmp(cxi, "destroyed") != 0 && strcmp(cxi, "none") != 0;
        if (!res) {
            json_decref(services);
            goto nomem;
        }
        int set_cxi = json_object_set_new(res, "cxi", json_string(cxi));
        int set_services = json_object_set_new(
            res, "services", services ? services : json_array());
        if (set_cxi < 0 || set_services < 0
            || json_object_set_new(res, "cleanup_needed", json_boolean(needed))
                   < 0) {
            json_decref(res);
            goto nomem;
        }
        if (json_array_append_new(list, res) < 0)
            goto nomem;
        holding += needed;
    }
    bool drained = PQntuples(d) == 1 && *col(d, 0, 0) == 't';
    o = json_pack("{s:s, s:b, s:o, s:o, s:i, s:o}",
                  "node",
                  node,
                  "drained",
                  drained,
                  "drained_reason",
                  str_or_null(drained ? col(d, 0, 1) : NULL),
                  "drained_at",
                  str_or_null(drained ? col(d, 0, 2) : NULL),
                  "cleanup_needed",
                  holding,
                  "reservations",
                  list);
    list = NULL; /* json_pack()'s "o" took it, even on failure */
    if (!o)
        goto nomem;
    return o;
nomem:
    json_decref(list);
    errno = ENOMEM;
    return NULL;
}

int store_node(struct store *s,
               const char *node,
               json_t **resp,
               vnib_error_t *errp)
{
    struct node_params np;
    PGresult *r = NULL, *d = NULL;
    int rc = -1;

    node_params_init(&np, node);
    const char *params[5] = {node, np.prefix, np.suffix, np.width, np.num};
    if (!(r = run(s, STMT_NODE_VIEW, params, errp)))
        return -1;
    if (!(d = run(s, STMT_NODE_GET, params, errp)))
        goto cleanup;
    if (!(*resp = node_view(s->cfg, node, r, d))) {
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    rc = 0;
cleanup:
    PQclear(r);
    PQclear(d);
    return rc;
}

int store_undrain(struct store *s,
                  const char *node,
                  const char *actor,
                  json_t **resp,
                  vnib_error_t *errp)
{
    const char *params[2] = {node, actor};
    PGresult *r = run(s, STMT_UNDRAIN, params, errp);
    if (!r)
        return -1;
    PQclear(r);
    return store_node(s, node, resp, errp);
}

int store_pool(struct store *s,
               const struct idset *pool,
               json_t **resp,
               vnib_error_t *errp)
{
    struct sbuf lo, hi;
    char *ranges = NULL;

    if (pool_arrays(pool, &lo, &hi) < 0)
        return errprintf(errp, "out of memory");
    const char *params[2] = {lo.data, hi.data};
    PGresult *r = run_one(s, STMT_POOL, params, "no answer", errp);
    free(lo.data);
    free(hi.data);
    if (!r)
        return -1;
    long long active = col_ll(r, 0, 0);
    long long releasing = col_ll(r, 0, 1);
    long long outside = col_ll(r, 0, 2);
    const char *cursor = col(r, 0, 3);
    long long total = (long long)idset_count(pool);
    long long in_pool = active + releasing - outside;
    if (!(ranges = idset_encode(pool))) {
        PQclear(r);
        return errprintf(errp, "out of memory");
    }
    *resp = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:o}",
        "ranges",
        ranges,
        "total",
        (json_int_t)total,
        "free",
        (json_int_t)(total - in_pool),
        "active",
        (json_int_t)active,
        "quarantined",
        (json_int_t)releasing,
        "outside_pool",
        (json_int_t)outside,
        "cursor",
        cursor ? json_integer(strtoll(cursor, NULL, 10)) : json_null());
    free(ranges);
    PQclear(r);
    if (!*resp)
        return errprintf(errp, "out of memory");
    return 0;
}

int store_pool_sync(struct store *s,
                    const struct idset *pool,
                    char *previous,
                    size_t size,
                    long long *addedp,
                    long long *removedp,
                    vnib_error_t *errp)
{
    struct sbuf lo, hi;

    if (pool_arrays(pool, &lo, &hi) < 0)
        return errprintf(errp, "out of memory");
    const char *params[2] = {lo.data, hi.data};
    PGresult *r = run_one(s, STMT_POOL_SYNC, params, "no answer", errp);
    free(lo.data);
    free(hi.data);
    if (!r)
        return -1;
    snprintf(previous, size, "%s", col(r, 0, 0) ? col(r, 0, 0) : "");
    *addedp = col_ll(r, 0, 1);
    *removedp = col_ll(r, 0, 2);
    PQclear(r);
    return 0;
}

int store_vni(struct store *s,
              int vni,
              const struct idset *pool,
              json_t **resp,
              vnib_error_t *errp)
{
    char v[16];
    snprintf(v, sizeof(v), "%d", vni);
    const char *params[1] = {v};
    PGresult *r = run(s, STMT_VNI, params, errp);
    if (!r)
        return -1;
    json_t *res = NULL;
    const char *state = "free";
    const char *last_released = NULL;
    if (PQntuples(r) == 1) {
        if (!(res = row_reservation(s->cfg, r, 0))) {
            PQclear(r);
            return errprintf(errp, "out of memory");
        }
        if (*col(r, 0, ROW_NCOLS) == 't')
            state = strcmp(col(r, 0, ROW_STATE), "active") ? "quarantined"
                                                           : "active";
        else
            last_released = col(r, 0, ROW_RELEASED_AT);
    }
    *resp = json_pack("{s:i, s:b, s:s, s:o, s:o}",
                      "vni",
                      vni,
                      "in_pool",
                      idset_contains(pool, (uint32_t)vni),
                      "state",
                      state,
                      "reservation",
                      res ? res : json_null(),
                      "last_released_at",
                      str_or_null(last_released));
    PQclear(r);
    if (!*resp)
        return errprintf(errp, "out of memory");
    return 0;
}

int store_events(struct store *s,
                 const char *job_id,
                 long long after,
                 int limit,
                 json_t **resp,
                 vnib_error_t *errp)
{
    char a[24], l[16];
    json_t *list = NULL;
    snprintf(a, sizeof(a), "%lld", after);
    snprintf(l, sizeof(l), "%d", limit);
    const char *params[3] = {job_id, a, l};
    PGresult *r = run(s, STMT_EVENTS, params, errp);
    if (!r)
        return -1;
    int n = PQntuples(r);
    if (!(list = json_array()))
        goto nomem;
    for (int i = 0; i < n; i++) {
        json_t *detail = json_loads(col(r, i, 7), 0, NULL);
        const char *rid = col(r, i, 2);
        json_t *e =
            json_pack("{s:I, s:s, s:o, s:o, s:o, s:s, s:s, s:o}",
                      "id",
                      (json_int_t)col_ll(r, i, 0),
                      "time",
                      col(r, i, 1),
                      "reservation_id",
                      rid ? json_integer(strtoll(rid, NULL, 10)) : json_null(),
                      "job_id",
                      str_or_null(col(r, i, 3)),
                      "node",
                      str_or_null(col(r, i, 4)),
                      "actor",
                      col(r, i, 5),
                      "action",
                      col(r, i, 6),
                      "detail",
                      detail ? detail : json_object());
        if (!e || json_array_append_new(list, e) < 0)
            goto nomem;
    }
    json_t *next = n == limit ? json_string(col(r, n - 1, 0)) : json_null();
    PQclear(r);
    if (!(*resp = json_pack("{s:o, s:o}", "events", list, "next", next)))
        return errprintf(errp, "out of memory");
    return 0;
nomem:
    PQclear(r);
    json_decref(list);
    errno = ENOMEM;
    return errprintf(errp, "out of memory");
}

int store_sweep(struct store *s,
                const char *actor,
                int *closedp,
                vnib_error_t *errp)
{
    long n;
    const char *params[1] = {actor};
    PGresult *r = run_one(s, STMT_SWEEP, params, "no answer", errp);
    if (!r)
        return -1;
    n = col_ll(r, 0, 0);
    PQclear(r);
    *closedp = (int)n;
    return 0;
}

int store_purge(
    struct store *s, int days, int batch, int *purgedp, vnib_error_t *errp)
{
    char d[16], b[16];
    snprintf(d, sizeof(d), "%d", days);
    snprintf(b, sizeof(b), "%d", batch);
    const char *params[2] = {d, b};
    PGresult *r = run_one(s, STMT_PURGE, params, "no answer", errp);
    if (!r)
        return -1;
    *purgedp = (int)col_ll(r, 0, 0);
    PQclear(r);
    return 0;
}

/* A reservation's FM outcome, grouped with those of concurrent reserves
 * (schema/0012 vnib_hwcoll_set_many): outcome ok, not_active or unchanged.
 */
struct hwset_item {
    struct item_result res; /* first */
    long long id;
    const char *state;
    const char *reason;
    const char *sealed_hex;
    const char *actor;
    bool want_resp;
    char outcome[32];
};

/* Run items[0..n-1] (hwset_items) as one group.  A group_fn; there are no
 * job locks to wait for.
 */
static void hwset_group(struct store *s,
                        struct item_result **base,
                        size_t n,
                        bool wait)
{
    struct hwset_item **items = (struct hwset_item **)base;
    struct sbuf ids = {0}, states = {0}, reasons = {0}, tokens = {0},
                actors = {0};
    struct sbuf *all[] = {&ids, &states, &reasons, &tokens, &actors};
    const size_t nall = sizeof(all) / sizeof(all[0]);
    PGresult *r = NULL;

    for (size_t i = 0; i < nall; i++)
        sb_putc(all[i], '{');
    for (size_t i = 0; i < n; i++) {
        sb_elem_num(&ids, i, items[i]->id);
        sb_elem(&states, i, items[i]->state);
        sb_elem(&reasons, i, items[i]->reason);
        sb_elem(&tokens, i, items[i]->sealed_hex);
        sb_elem(&actors, i, items[i]->actor);
    }
    if (!arrays_close(all, nall, false, base, n))
        goto done;
    const char *params[5] = {
        ids.data, states.data, reasons.data, tokens.data, actors.data};
    if (!(r = group_exec(
              s, STMT_HWCOLL_SET_MANY, params, base, n, wait, hwset_group)))
        goto done;
    for (size_t i = 0; i < n; i++) {
        struct hwset_item *it = items[i];
        snprintf(it->outcome, sizeof(it->outcome), "%s", col(r, (int)i, 0));
        it->res.rc = 0;
        if (it->want_resp
            && result_row(s, r, (int)i, &it->res.resp, &it->res.error) < 0) {
            it->res.rc = -1;
            it->res.err = errno ? errno : EIO;
        }
    }
done:
    PQclear(r);
    for (size_t i = 0; i < nall; i++)
        free(all[i]->data);
}

/* group_fits_f: each reservation once. */
static bool hwset_fits(void *arg,
                       struct group_item *const *items,
                       size_t n,
                       const struct group_item *gi)
{
    const struct hwset_item *it = (const struct hwset_item *)gi;
    (void)arg;
    for (size_t i = 0; i < n; i++)
        if (((const struct hwset_item *)items[i])->id == it->id)
            return false;
    return true;
}

static void hwset_run(void *arg, struct group_item **items, size_t n)
{
    hwset_group(arg, (struct item_result **)items, n, false);
}

int store_hwcoll_set(struct store *s,
                     long long id,
                     const char *state,
                     const char *reason,
                     const char *sealed_hex,
                     const char *actor,
                     json_t **resp,
                     char *outcome,
                     size_t outcome_size,
                     vnib_error_t *errp)
{
    struct hwset_item it = {.id = id,
                            .state = state,
                            .reason = reason,
                            .sealed_hex = sealed_hex,
                            .actor = actor,
                            .want_resp = resp != NULL};

    if (item_submit(s, s->hwsets, &it.res, hwset_group, errp) < 0)
        return -1;
    snprintf(outcome, outcome_size, "%s", it.outcome);
    if (resp)
        *resp = it.res.resp;
    return 0;
}

int store_hwcoll_defer(struct store *s,
                       long long id,
                       const char *reason,
                       const char *actor,
                       json_t **resp,
                       vnib_error_t *errp)
{
    char idbuf[24];
    snprintf(idbuf, sizeof(idbuf), "%lld", id);
    const char *params[3] = {idbuf, reason, actor};
    PGresult *r = run_one(s, STMT_HWCOLL_DEFER, params, "no answer", errp);
    int rc = -1;
    if (!r)
        return -1;
    if (strcmp(col(r, 0, ROW_OUTCOME), "ok") != 0) {
        errno = EEXIST;
        errprintf(errp, "reservation %lld is no longer pending", id);
    } else
        rc = result_reservation(s, r, resp, errp);
    PQclear(r);
    return rc;
}

int store_hwcoll_claim(
    struct store *s, int limit, int lease_s, json_t **workp, vnib_error_t *errp)
{
    char l[16], ls[16];
    json_t *list = json_array();
    snprintf(l, sizeof(l), "%d", limit);
    snprintf(ls, sizeof(ls), "%d", lease_s);
    const char *params[2] = {l, ls};
    PGresult *r = list ? run(s, STMT_HWCOLL_CLAIM, params, errp) : NULL;
    if (!r) {
        json_decref(list);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *w = json_pack("{s:I, s:s?, s:b, s:i}",
                              "id",
                              (json_int_t)col_ll(r, i, 0),
                              "fm_job_id",
                              col(r, i, 1),
                              "active",
                              *col(r, i, 2) == 't',
                              "attempts",
                              (int)col_ll(r, i, 3));
        if (!w || json_array_append_new(list, w) < 0) {
            PQclear(r);
            json_decref(list);
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
    }
    PQclear(r);
    *workp = list;
    return 0;
}

int store_hwcoll_work(struct store *s,
                      int limit,
                      json_t **workp,
                      vnib_error_t *errp)
{
    char l[16];
    json_t *list = json_array();
    snprintf(l, sizeof(l), "%d", limit);
    const char *params[1] = {l};
    PGresult *r = list ? run(s, STMT_HWCOLL_WORK, params, errp) : NULL;
    if (!r) {
        json_decref(list);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *w = json_pack("{s:I, s:s?, s:s, s:b, s:f}",
                              "id",
                              (json_int_t)col_ll(r, i, 0),
                              "fm_job_id",
                              col(r, i, 1),
                              "hwcoll_state",
                              col(r, i, 2),
                              "active",
                              *col(r, i, 3) == 't',
                              "age_s",
                              strtod(col(r, i, 4), NULL));
        if (!w || json_array_append_new(list, w) < 0) {
            PQclear(r);
            json_decref(list);
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
    }
    PQclear(r);
    *workp = list;
    return 0;
}

int store_hwcoll_counts(struct store *s, json_t **countsp, vnib_error_t *errp)
{
    PGresult *r = run(s, STMT_HWCOLL_COUNTS, NULL, errp);
    json_t *o = json_object();
    if (!r || !o) {
        PQclear(r);
        json_decref(o);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++)
        json_object_set_new(o, col(r, i, 0), json_integer(col_ll(r, i, 1)));
    PQclear(r);
    *countsp = o;
    return 0;
}

/* ---- the Fabric Manager queue and leadership ------------------------------
 */

int store_fm_next(struct store *s,
                  const long long *done,
                  size_t ndone,
                  const char *actor,
                  int limit,
                  int lease_s,
                  json_t **opsp,
                  vnib_error_t *errp)
{
    char list[STORE_FM_DONE_MAX * 22 + 3];
    char l[16], t[16];
    size_t used = 0;
    json_t *ops = NULL;

    if (ndone > STORE_FM_DONE_MAX) {
        errno = EINVAL;
        return errprintf(
            errp, "at most %d operations at once", STORE_FM_DONE_MAX);
    }
    list[used++] = '{';
    for (size_t k = 0; k < ndone; k++)
        used += (size_t)snprintf(
            list + used, sizeof(list) - used, "%s%lld", k ? "," : "", done[k]);
    snprintf(list + used, sizeof(list) - used, "}");
    snprintf(l, sizeof(l), "%d", limit);
    snprintf(t, sizeof(t), "%d", lease_s);
    const char *params[4] = {list, actor, l, t};
    if (!(ops = json_array())) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    PGresult *r = run(s, STMT_FM_NEXT, params, errp);
    if (!r) {
        json_decref(ops);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *res = col(r, i, 1);
        json_t *op =
            json_pack("{s:I, s:o, s:s, s:s, s:s?, s:i}",
                      "id",
                      (json_int_t)col_ll(r, i, 0),
                      "reservation_id",
                      res ? json_integer(strtoll(res, NULL, 10)) : json_null(),
                      "fm_job_id",
                      col(r, i, 2),
                      "op",
                      col(r, i, 3),
                      "step_id",
                      col(r, i, 4),
                      "attempts",
                      (int)col_ll(r, i, 5));
        if (!op || json_array_append_new(ops, op) < 0) {
            PQclear(r);
            json_decref(ops);
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
    }
    PQclear(r);
    *opsp = ops;
    return 0;
}

int store_fm_retry(struct store *s,
                   long long id,
                   const char *error,
                   double delay_s,
                   vnib_error_t *errp)
{
    char i[24], d[32];
    snprintf(i, sizeof(i), "%lld", id);
    snprintf(d, sizeof(d), "%.3f", delay_s);
    const char *params[3] = {i, error, d};
    PGresult *r = run(s, STMT_FM_RETRY, params, errp);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int store_step_release(struct store *s,
                       const char *job_id,
                       const char *step_id,
                       const char *actor,
                       char *outcome,
                       size_t size,
                       vnib_error_t *errp)
{
    const char *params[3] = {job_id, step_id, actor};
    PGresult *r = run_one(s, STMT_STEP_RELEASE, params, "no answer", errp);
    if (!r)
        return -1;
    snprintf(outcome, size, "%s", col(r, 0, 0));
    PQclear(r);
    return 0;
}

int store_db_now(struct store *s, char *buf, size_t size, vnib_error_t *errp)
{
    PGresult *r = run_one(s, STMT_DB_NOW, NULL, "no answer", errp);
    if (!r)
        return -1;
    snprintf(buf, size, "%s", col(r, 0, 0));
    PQclear(r);
    return 0;
}

int store_reconcile(struct store *s,
                    char *const *ids,
                    size_t n,
                    const char *listed_at,
                    const char *actor,
                    json_t **resultp,
                    vnib_error_t *errp)
{
    struct sbuf a = {0};
    json_t *list = json_array();
    PGresult *r = NULL;
    int rc = -1;

    sb_putc(&a, '{');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sb_putc(&a, ',');
        sb_quoted(&a, ids[i], strlen(ids[i]));
    }
    sb_putc(&a, '}');
    if (a.failed || !list) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    const char *params[3] = {a.data, listed_at, actor};
    if (!(r = run(s, STMT_RECONCILE, params, errp)))
        goto done;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *o = json_pack("{s:s, s:s?, s:s}",
                              "kind",
                              col(r, i, 0),
                              "job_id",
                              col(r, i, 1),
                              "fm_job_id",
                              col(r, i, 2));
        if (!o || json_array_append_new(list, o) < 0) {
            errno = ENOMEM;
            errprintf(errp, "out of memory");
            goto done;
        }
    }
    *resultp = list;
    list = NULL;
    rc = 0;
done:
    PQclear(r);
    json_decref(list);
    free(a.data);
    return rc;
}

int store_fm_queue_stats(struct store *s,
                         long long *depthp,
                         double *oldest_sp,
                         vnib_error_t *errp)
{
    PGresult *r = run_one(s, STMT_FM_QUEUE_STATS, NULL, "no answer", errp);
    if (!r)
        return -1;
    *depthp = col_ll(r, 0, 0);
    *oldest_sp = strtod(col(r, 0, 1), NULL);
    PQclear(r);
    return 0;
}

int store_leader_get(struct store *s, json_t **leaderp, vnib_error_t *errp)
{
    PGresult *r = run(s, STMT_LEADER_GET, NULL, errp);
    if (!r)
        return -1;
    *leaderp = PQntuples(r) == 1 ? json_pack(
                   "{s:s, s:s}", "replica", col(r, 0, 0), "since", col(r, 0, 1))
                                 : json_null();
    PQclear(r);
    return 0;
}

/* A connection of its own, outside the pool: LISTEN and the leader's
 * advisory lock live as long as their session.
 */
struct store_session {
    struct store *s;
    struct conn c;
    char channel[64]; /* LISTEN channel, "" for none */
    bool leading;     /* the advisory lock is held on c */
};

struct store_session *store_session_create(struct store *s, const char *channel)
{
    struct store_session *ss = calloc(1, sizeof(*ss));
    if (!ss)
        return NULL;
    ss->s = s;
    snprintf(ss->channel, sizeof(ss->channel), "%s", channel ? channel : "");
    /* Counted apart from the pool, whose size it is not part of. */
    ss->c.count =
        channel ? &s->stats.listen_sessions : &s->stats.leader_sessions;
    return ss;
}

void store_session_destroy(struct store_session *ss)
{
    int saved_errno = errno;
    if (ss) {
        conn_drop(ss->s, &ss->c);
        free(ss);
    }
    errno = saved_errno;
}

/* Connect (again) when needed, and LISTEN when asked to. */
static int session_open(struct store_session *ss, vnib_error_t *errp)
{
    if (ss->c.pg && PQstatus(ss->c.pg) == CONNECTION_OK)
        return 0;
    conn_drop(ss->s, &ss->c);
    ss->leading = false;
    if (conn_open(ss->s, &ss->c, errp) < 0)
        return -1;
    if (ss->channel[0]) {
        char sql[96];
        snprintf(sql, sizeof(sql), "LISTEN %s", ss->channel);
        if (conn_exec_script(ss->s, &ss->c, sql, "listen", 5000, errp) < 0)
            return -1;
    }
    return 0;
}

int store_session_wait(struct store_session *ss, int timeout_ms)
{
    vnib_error_t ignore;
    if (session_open(ss, &ignore) < 0)
        return -1;
    struct pollfd pfd = {.fd = PQsocket(ss->c.pg), .events = POLLIN};
    int n = poll(&pfd, 1, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    if (n == 0)
        return 0;
    if (!PQconsumeInput(ss->c.pg)) {
        conn_drop(ss->s, &ss->c);
        return -1;
    }
    int got = 0;
    PGnotify *nf;
    while ((nf = PQnotifies(ss->c.pg))) {
        got++;
        PQfreemem(nf);
    }
    return got;
}

bool store_session_lead(struct store_session *ss, const char *replica)
{
    vnib_error_t error;
    PGresult *r;

    if (session_open(ss, &error) < 0)
        return false;
    if (ss->leading) {
        /* Still leading while the session lives. */
        if ((r = conn_exec(ss->s, &ss->c, STMT_PING, NULL, 5000, &error))) {
            PQclear(r);
            return true;
        }
        ss->leading = false;
        return false;
    }
    if (!(r = conn_exec(ss->s, &ss->c, STMT_LEADER_TRY, NULL, 5000, &error)))
        return false;
    ss->leading = PQntuples(r) == 1 && *PQgetvalue(r, 0, 0) == 't';
    PQclear(r);
    if (ss->leading) {
        const char *params[1] = {replica};
        if ((r = conn_exec(
                 ss->s, &ss->c, STMT_LEADER_SET, params, 5000, &error)))
            PQclear(r);
    }
    return ss->leading;
}
