/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The broker's PostgreSQL store: the store object, its connection pool,
 * the errors every store call shares, and the database sessions kept
 * outside the pool.  Its calls are declared one header per resource, each
 * included by the callers that use it (the store's own files share them
 * all through their private header, server/store/store_int.h):
 *
 *   store_migrate.h       schema versions, migrations, readiness
 *   store_reservations.h  reserve, read, list, release a job's reservation
 *   store_steps.h         a job step's reservation
 *   store_nodes.h         node reports, the node view, undrain
 *   store_pool.h          the pool, VNIs, the audit trail, sweep, purge
 *   store_status.h        the figures and lists of GET /v1/status
 *   store_fm.h            hardware collectives and the Fabric Manager queue
 *
 * This is the only module that includes libpq-fe.h.  Its API speaks in
 * domain terms; callers never see SQL or a PGresult.  Reservations and
 * the other objects come back as JSON in the API's shape (see
 * server/api/openapi.yaml, built by server/store/render.c), new
 * references the caller owns, and every write is one committed
 * transaction before the call returns.  Every call is bounded in time:
 * waiting for a pooled connection, connecting, and each statement have
 * their own timeout from [database], and a call that runs out of time
 * fails with EAGAIN so that the HTTP layer answers 503 instead of hanging
 * while the database is away.  A connection that fails is dropped and
 * opened again on next use, so the broker recovers by itself when
 * PostgreSQL restarts.
 *
 * Errors: EAGAIN (database unreachable, timed out, or busy), ESTALE
 * (schema older than this binary), EEXIST (unique or exclusion
 * constraint), EINVAL (rejected input), EIO (anything else); errp gets a
 * short message and the log gets the details.  A message in the
 * database's own words (libpq's: socket paths, host names, ports, logins;
 * the server's: tables, constraints, values) is marked for the operator
 * alone (vnib_error_t.public_text: "database error", "database
 * unavailable", or that the database cannot write), and a client reads
 * only that fixed text.
 */
#ifndef VNIB_SERVER_STORE_H
#define VNIB_SERVER_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "vnib/error.h"
#include "vnib/logger.h"
#include "server/config.h"
#include "server/store/group.h"

struct store;

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
    struct group_stats reports;  /* groups of node reports */
};

/* Create the pool (connections are opened on demand).  cfg and log are
 * borrowed and must outlive the store.
 */
struct store *store_create(const struct config *cfg,
                           struct logger *log,
                           vnib_error_t *errp) VNIB_MUST_CHECK;

/* Close every connection and free the store (NULL accepted). */
void store_destroy(struct store *s);

/* Snapshot of the pool counters. */
void store_get_stats(struct store *s, struct store_stats *st);

/* A database session of its own, outside the pool, for LISTEN (channel
 * non-NULL) and for holding the leader's advisory lock.  It reconnects by
 * itself after the database restarts.
 */
struct store_session;
struct store_session *store_session_create(struct store *s,
                                           const char *channel) VNIB_MUST_CHECK;
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
