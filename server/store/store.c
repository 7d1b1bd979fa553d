/* SPDX-License-Identifier: GPL-2.0-or-later */
/* PostgreSQL store: the connection pool and bounded-time statements (see
 * store.h; the other store_*.c files are listed in store_int.h).
 *
 * Every statement is a named constant (store_sql.c), prepared lazily on
 * each connection the first time that connection runs it, and run with
 * PQsendQueryPrepared.  Waiting is done with poll() on the connection's
 * socket against a deadline: libpq's blocking calls have no timeout of
 * their own, and a request must never hang on a database that stopped
 * answering.  When a deadline passes the running statement is cancelled
 * and the connection dropped; the next user reconnects.  Here too: the
 * pool's statistics, and the sessions outside the pool (LISTEN and the
 * leader's advisory lock).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"
#include "server/store/store_int.h"

static void stat_add(struct store *s, uint64_t *counter)
{
    pthread_mutex_lock(&s->lock);
    (*counter)++;
    pthread_mutex_unlock(&s->lock);
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
    pthread_cond_init(&s->ready_cond, &attr);
    pthread_condattr_destroy(&attr);
    s->stats.size = (unsigned)s->nconns;
    if (cfg->database.group_max > 1) {
        size_t max = (size_t)cfg->database.group_max;
        unsigned leaders = (unsigned)cfg->database.group_leaders;
        if (!(s->reserves = group_create(
                  max, leaders, store_reserve_fits, store_reserve_run, s))
            || !(s->releases = group_create(
                     max, leaders, store_release_fits, store_release_run, s))
            /* One leader more: an FM answer waits on the request's
             * thread with the scheduler's reply, and at a moderate rate
             * must not queue behind a group already being written. */
            || !(s->hwsets = group_create(
                     max, leaders + 1, store_hwset_fits, store_hwset_run, s))) {
            group_destroy(s->reserves);
            group_destroy(s->releases);
            pthread_cond_destroy(&s->cond);
            pthread_cond_destroy(&s->ready_cond);
            pthread_mutex_destroy(&s->lock);
            goto nomem;
        }
    }
    /* Node reports come back through their callbacks, from threads of
     * their own: a report waits for its group on no request's thread.
     */
    if (cfg->database.report_group_max > 1
        && (!(s->reports =
                  group_create((size_t)cfg->database.report_group_max,
                               (unsigned)cfg->database.report_group_leaders,
                               store_report_fits,
                               store_report_run,
                               s))
            || group_start(s->reports) < 0)) {
        int e = errno;
        group_destroy(s->reports);
        s->reports = NULL;
        store_destroy(s);
        errno = e;
        errprintf(errp, "cannot start the node report groups");
        return NULL;
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
        /* The report groups' threads first: they serve what is queued,
         * on the pool's connections, before those close.
         */
        group_destroy(s->reports);
        for (size_t i = 0; i < s->nconns; i++)
            if (s->conns[i].pg)
                PQfinish(s->conns[i].pg);
        free(s->conns);
        group_destroy(s->reserves);
        group_destroy(s->releases);
        group_destroy(s->hwsets);
        pthread_cond_destroy(&s->cond);
        pthread_cond_destroy(&s->ready_cond);
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
        int64_t left = deadline - monotime_ms();
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
void store_conn_drop(struct store *s, struct conn *c)
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
    int64_t deadline = monotime_ms() + s->cfg->database.connect_timeout_ms;
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
    return store_db_error(errp, STORE_MSG_UNAVAILABLE, "%s", msg);
}

/* Session settings for a new connection: the server stops a statement at
 * the same timeout the client gives up at, so that nothing the broker
 * abandoned keeps running.
 */
int store_conn_set_timeout(struct store *s,
                           struct conn *c,
                           int64_t ms,
                           vnib_error_t *errp)
{
    struct store_num val;
    const char *params[1] = {store_num(&val, ms)};
    PGresult *r = store_conn_exec(s,
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

struct conn *store_conn_acquire(struct store *s, vnib_error_t *errp)
{
    int64_t deadline = monotime_ms() + s->cfg->database.acquire_timeout_ms;
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
        store_conn_drop(s, c);
    c->fresh = !c->pg;
    if (!c->pg
        && (conn_open(s, c, errp) < 0
            || store_conn_set_timeout(
                   s, c, s->cfg->database.query_timeout_ms, errp)
                   < 0)) {
        store_conn_release(s, c);
        return NULL;
    }
    return c;
}

void store_conn_release(struct store *s, struct conn *c)
{
    if (c->pg && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        store_conn_drop(s, c);
    pthread_mutex_lock(&s->lock);
    c->busy = false;
    s->stats.busy--;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* The name is in parentheses, as store_int.h also defines it as a macro. */
int(store_db_error)(vnib_error_t *errp, const char *what, const char *fmt, ...)
{
    int saved_errno = errno;
    char detail[sizeof(errp->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    errno = saved_errno;
    return errprintf_private(errp, what, "%s: %s", what, detail);
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

int store_exhausted_error(vnib_error_t *errp, const char *detail)
{
    long want = 0, avail = 0, busy = 0, cooling = 0;
    char more[160] = "";
    /* The cooling count is schema 21's; a detail of three numbers has none. */
    int n = detail ? sscanf(
                detail, "%ld %ld %ld %ld", &want, &avail, &busy, &cooling)
                   : 0;
    if (n < 3)
        want = avail = busy = -1;
    if (n < 4)
        cooling = 0;
    if (cooling > 0)
        snprintf(more,
                 sizeof(more),
                 "; %ld more are cooling down until the leases that named "
                 "them expire",
                 cooling);
    errno = ENOSPC;
    if (busy > 0)
        return errprintf(errp,
                         "VNI pool exhausted: %ld VNIs requested, %ld free, "
                         "of which %ld are being handed out to concurrent "
                         "reserves%s",
                         want,
                         avail,
                         busy,
                         more);
    return errprintf(errp,
                     "VNI pool exhausted: %ld VNIs requested, %ld free%s",
                     want,
                     avail,
                     more);
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
    c->conflict = state && (!strcmp(state, "40P01") || !strcmp(state, "40001"));
    if (e == ENOSPC) {
        /* Expected under load, not a database fault (vnib_reserve of
         * schema 7, kept for brokers of that schema).
         */
        store_exhausted_error(errp,
                              PQresultErrorField(last, PG_DIAG_MESSAGE_DETAIL));
        PQclear(last);
        errno = e;
        return NULL;
    }
    logger_printf(s->log,
                  c->conflict ? LOG_WARNING : LOG_ERR,
                  NULL,
                  "database: %s: %s (SQLSTATE %s)%s",
                  what,
                  primary ? primary : "error",
                  state ? state : "none",
                  c->conflict ? "; rolled back, run again" : "");
    stat_add(s, &s->stats.errors);
    if (e == EDQUOT) {
        pthread_mutex_lock(&s->lock);
        s->writes_failing = true;
        pthread_mutex_unlock(&s->lock);
    }
    store_db_error(errp,
                   e == EDQUOT ? STORE_MSG_FULL : STORE_MSG_ERROR,
                   "%s",
                   primary ? primary : "unknown");
    PQclear(last); /* primary pointed into it */
    if (PQstatus(c->pg) == CONNECTION_BAD)
        store_conn_drop(s, c);
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
    store_conn_drop(s, c);
    errno = ETIMEDOUT;
    errprintf(errp, "database did not answer in time");
    return NULL;
lost:
    PQclear(last);
    pq_message(c->pg, msg, sizeof(msg));
    logger_printf(s->log, LOG_WARNING, NULL, "database: %s: %s", what, msg);
    stat_add(s, &s->stats.errors);
    store_conn_drop(s, c);
    errno = EAGAIN;
    store_db_error(errp, STORE_MSG_UNAVAILABLE, "%s", msg);
    return NULL;
}

/* A query could not be sent on c: the connection is dropped, errno is
 * EAGAIN and errp has libpq's reason.  Returns -1.
 */
static int send_failed(struct store *s, struct conn *c, vnib_error_t *errp)
{
    char msg[256];

    pq_message(c->pg, msg, sizeof(msg));
    store_conn_drop(s, c);
    errno = EAGAIN;
    return store_db_error(errp, STORE_MSG_UNAVAILABLE, "%s", msg);
}

PGresult *store_conn_exec(struct store *s,
                          struct conn *c,
                          enum stmt_id id,
                          const char *const *params,
                          int64_t timeout_ms,
                          vnib_error_t *errp)
{
    int64_t deadline = monotime_ms() + timeout_ms;
    PGresult *r;

    c->conflict = false;
    if (!(c->prepared & (UINT64_C(1) << id))) {
        if (!PQsendPrepare(c->pg,
                           store_stmts[id].name,
                           store_stmts[id].sql,
                           store_stmts[id].nparams,
                           NULL))
            goto unsent;
        if (!(r = conn_wait_result(s, c, deadline, store_stmts[id].name, errp)))
            return NULL;
        PQclear(r);
        c->prepared |= UINT64_C(1) << id;
    }
    if (!PQsendQueryPrepared(c->pg,
                             store_stmts[id].name,
                             store_stmts[id].nparams,
                             params,
                             NULL,
                             NULL,
                             0))
        goto unsent;
    return conn_wait_result(s, c, deadline, store_stmts[id].name, errp);
unsent:
    send_failed(s, c, errp);
    return NULL;
}

int store_conn_exec_script(struct store *s,
                           struct conn *c,
                           const char *sql,
                           const char *what,
                           int64_t timeout_ms,
                           vnib_error_t *errp)
{
    int64_t deadline = monotime_ms() + timeout_ms;
    if (!PQsendQuery(c->pg, sql))
        return send_failed(s, c, errp);
    PGresult *r = conn_wait_result(s, c, deadline, what, errp);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* Statements whose success shows that the database takes writes again. */
static bool stmt_writes(enum stmt_id id)
{
    return id == STMT_RESERVE || id == STMT_RELEASE || id == STMT_REPORT_BATCH
           || id == STMT_HWCOLL_SET_MANY || id == STMT_WRITE_PROBE;
}

/* Pooled connections whose server went away (a restart, a Patroni
 * switchover or failover: all of them at once) fail on first use, each
 * then dropped.  The statement is run again until it fails on a
 * connection opened for it, not on one more of those: each retry removes
 * an open connection from the pool, so there are at most nconns of them.
 * A statement that PostgreSQL rolled back to break a deadlock, or for a
 * serialization failure, is run again too, up to STORE_CONFLICT_RUNS
 * times in all: the transaction it lost to has gone on, so the next run
 * normally passes, and a client is not told 503 for the database's own
 * lock order.  Every store operation is idempotent, so a retry is safe
 * even if an attempt committed before its connection died.
 */
#define STORE_CONFLICT_RUNS 4
PGresult *store_run(struct store *s,
                    enum stmt_id id,
                    const char *const *params,
                    vnib_error_t *errp)
{
    size_t dead = 0; /* pooled connections found dead so far */
    int conflicts = 0;

    for (;;) {
        struct conn *c = store_conn_acquire(s, errp);
        if (!c)
            return NULL;
        bool was_open = !c->fresh;
        PGresult *r = store_conn_exec(
            s, c, id, params, s->cfg->database.query_timeout_ms, errp);
        int e = errno;
        /* A pooled connection found dead (EAGAIN, connection dropped):
         * try again, on the next open one or a fresh one.  A statement
         * rolled back for a conflict: run it again.
         */
        bool retry =
            !r
            && ((e == EAGAIN && was_open && !c->pg && dead++ < s->nconns)
                || (c->pg && c->conflict && ++conflicts < STORE_CONFLICT_RUNS));
        store_conn_release(s, c);
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
}

PGresult *store_run_one(struct store *s,
                        enum stmt_id id,
                        const char *const *params,
                        const char *missing,
                        vnib_error_t *errp)
{
    PGresult *r = store_run(s, id, params, errp);
    if (r && PQntuples(r) != 1) {
        PQclear(r);
        errno = ENOENT;
        errprintf(errp, "%s", missing);
        return NULL;
    }
    return r;
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
    if (s->reports)
        group_get_stats(s->reports, &st->reports);
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
        store_conn_drop(ss->s, &ss->c);
        free(ss);
    }
    errno = saved_errno;
}

/* Connect (again) when needed, and LISTEN when asked to. */
static int session_open(struct store_session *ss, vnib_error_t *errp)
{
    if (ss->c.pg && PQstatus(ss->c.pg) == CONNECTION_OK)
        return 0;
    store_conn_drop(ss->s, &ss->c);
    ss->leading = false;
    if (conn_open(ss->s, &ss->c, errp) < 0)
        return -1;
    if (ss->channel[0]) {
        char sql[96];
        snprintf(sql, sizeof(sql), "LISTEN %s", ss->channel);
        if (store_conn_exec_script(ss->s, &ss->c, sql, "listen", 5000, errp)
            < 0)
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
        store_conn_drop(ss->s, &ss->c);
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
        if ((r = store_conn_exec(
                 ss->s, &ss->c, STMT_PING, NULL, 5000, &error))) {
            PQclear(r);
            return true;
        }
        ss->leading = false;
        return false;
    }
    if (!(r = store_conn_exec(
              ss->s, &ss->c, STMT_LEADER_TRY, NULL, 5000, &error)))
        return false;
    ss->leading = PQntuples(r) == 1 && *PQgetvalue(r, 0, 0) == 't';
    PQclear(r);
    if (ss->leading) {
        const char *params[1] = {replica};
        if ((r = store_conn_exec(
                 ss->s, &ss->c, STMT_LEADER_SET, params, 5000, &error)))
            PQclear(r);
    }
    return ss->leading;
}
