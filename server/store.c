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
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "server/schema.h"
#include "server/store.h"

/* ---- statements ---------------------------------------------------------- */

enum stmt_id {
    STMT_SCHEMA_TABLE_EXISTS,
    STMT_SCHEMA_VERSION,
    STMT_SCHEMA_RECORD,
    STMT_MIGRATE_LOCK,
    STMT_SET_TIMEOUT,
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

static const char sql_set_timeout[] =
    "SELECT set_config('statement_timeout', $1, false)";

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
    [STMT_SET_TIMEOUT] = {"set_timeout", sql_set_timeout, 1},
};

_Static_assert(STMT_COUNT <= 64, "prepared-statement bitmask is 64 bits");

/* ---- the pool ------------------------------------------------------------ */

struct conn {
    PGconn *pg;        /* NULL when not connected */
    bool busy;         /* lent out */
    uint64_t prepared; /* bit per enum stmt_id prepared on this connection */
    bool fresh;        /* opened by the current borrower */
};

struct store {
    const struct config *cfg;
    struct logger *log;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* signalled when a connection is returned */
    struct conn *conns;
    size_t nconns;
    struct store_stats stats; /* under lock */
};

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
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    errno = saved_errno;
}

/* Wait until the socket is ready for `events` or the deadline passes.
 * Returns 0 when ready, -1 with ETIMEDOUT or the poll errno.
 */
static int wait_socket(PGconn *pg, short events, int64_t deadline)
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
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
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
    s->stats.open--;
    pthread_mutex_unlock(&s->lock);
}

/* First line of a libpq message, without the trailing newline. */
static void pq_message(PGconn *pg, char *buf, size_t size)
{
    const char *m = pg ? PQerrorMessage(pg) : "out of memory";
    size_t n = strcspn(m, "\n");
    snprintf(buf, size, "%.*s", (int)n, m);
}

static int conn_open(struct store *s, struct conn *c, vnib_error_t *errp)
{
    const char *keys[] = {"dbname", "fallback_application_name", NULL};
    const char *vals[] = {s->cfg->database.conninfo, "vnibrokerd", NULL};
    int64_t deadline = now_ms() + s->cfg->database.connect_timeout_ms;
    char msg[256];

    c->pg = PQconnectStartParams(keys, vals, 1);
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD)
        goto fail;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED)
            goto fail;
        short ev = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
        if (wait_socket(c->pg, ev, deadline) < 0) {
            snprintf(msg,
                     sizeof(msg),
                     "connection attempt timed out after %ld ms",
                     s->cfg->database.connect_timeout_ms);
            goto fail_msg;
        }
        st = PQconnectPoll(c->pg);
    }
    if (PQsetnonblocking(c->pg, 1) < 0)
        goto fail;
    pthread_mutex_lock(&s->lock);
    s->stats.open++;
    s->stats.connects++;
    pthread_mutex_unlock(&s->lock);
    c->prepared = 0;
    return 0;
fail:
    pq_message(c->pg, msg, sizeof(msg));
fail_msg:
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    stat_add(s, &s->stats.connect_failures);
    logger_printf(
        s->log, LOG_WARNING, NULL, "database: cannot connect: %s", msg);
    errno = EAGAIN;
    return errprintf(errp, "database unavailable: %s", msg);
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
    if (!strcmp(state, "42P01"))
        return ESTALE; /* a table this binary needs is missing */
    return EIO;
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

    for (;;) {
        while (PQisBusy(c->pg)) {
            if (PQflush(c->pg) < 0)
                goto lost;
            if (wait_socket(c->pg, POLLIN, deadline) < 0) {
                PQclear(last);
                stat_add(s, &s->stats.query_timeouts);
                logger_printf(s->log,
                              LOG_WARNING,
                              NULL,
                              "database: %s: no answer within the timeout; "
                              "cancelled",
                              what);
                conn_drop(s, c);
                errno = EAGAIN;
                errprintf(errp, "database did not answer in time");
                return NULL;
            }
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
    logger_printf(s->log,
                  LOG_ERR,
                  NULL,
                  "database: %s: %s (SQLSTATE %s)",
                  what,
                  primary ? primary : "error",
                  state ? state : "none");
    stat_add(s, &s->stats.errors);
    PQclear(last);
    if (PQstatus(c->pg) == CONNECTION_BAD)
        conn_drop(s, c);
    errno = e;
    errprintf(errp, "database error: %s", primary ? primary : "unknown");
    return NULL;
lost:
    PQclear(last);
    pq_message(c->pg, msg, sizeof(msg));
    logger_printf(s->log, LOG_WARNING, NULL, "database: %s: %s", what, msg);
    stat_add(s, &s->stats.errors);
    conn_drop(s, c);
    errno = EAGAIN;
    errprintf(errp, "database unavailable: %s", msg);
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
    errprintf(errp, "database unavailable: %s", msg);
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
        return errprintf(errp, "database unavailable: %s", msg);
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
static int query_int(struct store *s,
                     enum stmt_id id,
                     long *valp,
                     vnib_error_t *errp)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct conn *c = conn_acquire(s, errp);
        if (!c)
            return -1;
        bool was_open = !c->fresh;
        PGresult *r =
            conn_exec(s, c, id, NULL, s->cfg->database.query_timeout_ms, errp);
        if (!r) {
            int e = errno;
            bool retry = e == EAGAIN && was_open && !c->pg && attempt == 0;
            conn_release(s, c);
            errno = e;
            if (retry)
                continue;
            return -1;
        }
        const char *v = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : NULL;
        if (!v) {
            PQclear(r);
            conn_release(s, c);
            errno = EIO;
            return errprintf(errp, "database error: unexpected result");
        }
        *valp = *v == 't' ? 1 : *v == 'f' ? 0 : strtol(v, NULL, 10);
        PQclear(r);
        conn_release(s, c);
        vnib_error_clear(errp);
        return 0;
    }
    return -1;
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
    pthread_mutex_unlock(&s->lock);
}
