/* The broker's PostgreSQL store: every SQL statement, the connection pool,
 * and the migrations.
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

#include <stdint.h>

#include "vnib/error.h"
#include "vnib/logger.h"
#include "server/config.h"

struct store;

/* Pool counters, for /metrics. */
struct store_stats {
    unsigned size;             /* configured pool size */
    unsigned open;             /* connections currently open */
    unsigned busy;             /* connections lent to a request now */
    uint64_t acquires;         /* connections lent out, ever */
    uint64_t waits;            /* acquires that had to wait for a free one */
    uint64_t acquire_timeouts; /* acquires that gave up */
    uint64_t connects;         /* successful connection attempts */
    uint64_t connect_failures; /* failed connection attempts */
    uint64_t query_timeouts;   /* statements cancelled for time */
    uint64_t errors;           /* statements that failed otherwise */
};

/* Create the pool (connections are opened on demand).  cfg and log are
 * borrowed and must outlive the store.
 */
struct store *store_create(const struct config *cfg,
                           struct logger *log,
                           vnib_error_t *errp)
    __attribute__((warn_unused_result));

/* Close every connection and free the store (NULL accepted). */
void store_destroy(struct store *s);

/* The schema version this binary needs (its newest migration). */
int store_required_version(void);

/* The database's schema version: 0 when no migration was ever applied.
 * Returns 0 or -1 (EAGAIN when the database cannot be reached).
 */
int store_schema_version(struct store *s, int *versionp, vnib_error_t *errp);

/* Apply the missing migrations in one transaction under an advisory lock,
 * so that concurrent callers (two replicas starting) serialise and the
 * later ones find nothing to do.  *fromp and *top receive the versions
 * before and after.  Returns 0 or -1.
 */
int store_migrate(struct store *s, int *fromp, int *top, vnib_error_t *errp);

/* Readiness: the database answers within the timeouts and its schema is
 * the one this binary needs.  Returns 0, or -1 with EAGAIN (unreachable)
 * or ESTALE (schema missing or older; the message says how to migrate).
 */
int store_check_ready(struct store *s, vnib_error_t *errp);

/* Snapshot of the pool counters. */
void store_get_stats(struct store *s, struct store_stats *st);

#endif /* !VNIB_SERVER_STORE_H */
