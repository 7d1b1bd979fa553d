/* The schema: the version a database is at, the migrations this binary
 * carries (applied in one transaction under an advisory lock), the SHA-256
 * of each applied migration checked against its text, and readiness
 * (/readyz).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "vnib/hex.h"
#include "server/schema.h"
#include "server/store_int.h"

/* The first schema that records digests. */
#define SCHEMA_DIGESTS_VERSION 13

/* Migrations may rebuild tables; give them far longer than a request. */
#define MIGRATE_TIMEOUT_MS (30 * 60 * 1000)

int store_required_version(void)
{
    return (int)schema_migrations_count;
}

/* Run a one-row, one-integer (or boolean) query. */
static int query_int(struct store *s,
                     enum stmt_id id,
                     long *valp,
                     vnib_error_t *errp)
{
    PGresult *r = store_run(s, id, NULL, errp);
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
    hex_encode(md, sizeof(md), hex);
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
    PGresult *r = store_run(s, STMT_SCHEMA_DIGESTS, NULL, errp);
    if (!r)
        return -1;
    rc = digests_match(r, errp);
    PQclear(r);
    return rc;
}

static int check_ready(struct store *s, vnib_error_t *errp)
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
        PGresult *r = store_run(s, STMT_WRITE_PROBE, NULL, errp);
        if (!r)
            return -1; /* EDQUOT still, or unavailable: errno says */
        PQclear(r);
    }
    return 0;
}

int store_check_ready(struct store *s, vnib_error_t *errp)
{
    vnib_error_t why = {""};
    int e = 0;

    pthread_mutex_lock(&s->lock);
    if (s->ready_running) {
        /* Take the verdict of the check under way. */
        unsigned long gen = s->ready_gen;
        while (s->ready_running && s->ready_gen == gen)
            pthread_cond_wait(&s->ready_cond, &s->lock);
        e = s->ready_errno;
        why = s->ready_why;
        pthread_mutex_unlock(&s->lock);
        if (e == 0)
            return 0;
        errno = e;
        return errprintf(errp, "%s", why.text);
    }
    s->ready_running = true;
    pthread_mutex_unlock(&s->lock);
    int rc = check_ready(s, &why);
    e = rc < 0 ? (errno ? errno : EIO) : 0;
    pthread_mutex_lock(&s->lock);
    s->ready_errno = e;
    s->ready_why = why;
    s->ready_gen++;
    s->ready_running = false;
    pthread_cond_broadcast(&s->ready_cond);
    pthread_mutex_unlock(&s->lock);
    if (rc == 0)
        return 0;
    errno = e;
    return errprintf(errp, "%s", why.text);
}

int store_migrate(struct store *s, int *fromp, int *top, vnib_error_t *errp)
{
    struct conn *c = NULL;
    PGresult *r = NULL;
    int version = 0;
    int rc = -1;

    if (!(c = store_conn_acquire(s, errp)))
        return -1;
    if (store_conn_set_timeout(s, c, MIGRATE_TIMEOUT_MS, errp) < 0)
        goto done;
    if (store_conn_exec_script(s, c, "BEGIN", "begin", MIGRATE_TIMEOUT_MS, errp)
        < 0)
        goto done;
    /* Serialise with any other migrating process before looking. */
    if (!(r = store_conn_exec(
              s, c, STMT_MIGRATE_LOCK, NULL, MIGRATE_TIMEOUT_MS, errp)))
        goto done;
    PQclear(r);
    if (!(r = store_conn_exec(
              s, c, STMT_SCHEMA_TABLE_EXISTS, NULL, MIGRATE_TIMEOUT_MS, errp)))
        goto done;
    bool exists = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (exists) {
        if (!(r = store_conn_exec(
                  s, c, STMT_SCHEMA_VERSION, NULL, MIGRATE_TIMEOUT_MS, errp)))
            goto done;
        version = atoi(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    *fromp = version;
    if (version >= SCHEMA_DIGESTS_VERSION) {
        /* Never build on a migration that changed after it was applied. */
        if (!(r = store_conn_exec(
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
        if (store_conn_exec_script(
                s, c, m->sql, m->name, MIGRATE_TIMEOUT_MS, errp)
            < 0) {
            char why[sizeof(errp->text)];
            snprintf(why, sizeof(why), "%s", errp ? errp->text : "error");
            errprintf(errp, "migration %s failed: %s", m->name, why);
            goto done;
        }
        snprintf(vbuf, sizeof(vbuf), "%d", m->version);
        if (!(r = store_conn_exec(
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
        if (!(r = store_conn_exec(s,
                                  c,
                                  STMT_SCHEMA_DIGEST_SET,
                                  params,
                                  MIGRATE_TIMEOUT_MS,
                                  errp)))
            goto done;
        PQclear(r);
    }
    r = NULL;
    if (store_conn_exec_script(
            s, c, "COMMIT", "commit", MIGRATE_TIMEOUT_MS, errp)
        < 0)
        goto done;
    *top = version > *fromp ? version : *fromp;
    rc = 0;
done:
    if (rc < 0 && c->pg) {
        int e = errno;
        vnib_error_t ignore;
        (void)store_conn_exec_script(
            s, c, "ROLLBACK", "rollback", 5000, &ignore);
        errno = e;
    }
    /* Back to the request timeout before the pool lends it out again. */
    if (c->pg) {
        vnib_error_t ignore;
        if (store_conn_set_timeout(
                s, c, s->cfg->database.query_timeout_ms, &ignore)
            < 0)
            store_conn_drop(s, c);
    }
    store_conn_release(s, c);
    return rc;
}
