/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The store's schema (store_migrate.c): the version this binary needs and
 * the one the database is at, the migrations and SQL functions (schema/),
 * the digests that say an applied migration is the text this binary
 * carries, and readiness.
 */
#ifndef VNIB_SERVER_STORE_MIGRATE_H
#define VNIB_SERVER_STORE_MIGRATE_H

#include "vnib/error.h"
#include "server/store/store.h"

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
 * to migrate) or EDQUOT (writes still fail).  A call made while another's
 * check runs takes that check's verdict.
 */
int store_check_ready(struct store *s, vnib_error_t *errp) VNIB_MUST_CHECK;

/* Compare the applied migrations' recorded SHA-256 (schema/0013) with the
 * texts this binary carries: -1 with ESTALE, errp naming the file, when
 * one differs; 0 also for a schema too old to record them.  At this
 * binary's version, also -1 with ESTALE when its SQL functions were never
 * applied (schema/0020).
 */
int store_check_migrations(struct store *s, vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_MIGRATE_H */
