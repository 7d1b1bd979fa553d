/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The schema: the version a database is at, the migrations this binary
 * carries (applied in one transaction under an advisory lock), the SHA-256
 * of each applied migration checked against its text, the SQL functions
 * (schema/functions/, applied after the migrations and recorded by their
 * SHA-256), and readiness (/readyz).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "vnib/hex.h"
#include "server/store/schema.h"
#include "server/store/store_int.h"

/* The first schema that records digests. */
#define SCHEMA_DIGESTS_VERSION 13

/* The first schema that records the SQL functions applied. */
#define SCHEMA_FUNCTIONS_VERSION 20

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

/* ---- the SQL functions (schema/0020) ------------------------------------ */

/* The SHA-256 of the SQL functions this binary carries, in hex: of their
 * files' texts, one after the other in the order they are applied (so
 * sha256sum of the files of schema/functions/ concatenated in name order).
 */
static int functions_digest(char hex[65], vnib_error_t *errp)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;

    for (size_t i = 0; ok && i < schema_functions_count; i++)
        ok = EVP_DigestUpdate(
                 ctx, schema_functions[i].sql, strlen(schema_functions[i].sql))
             == 1;
    ok = ok && EVP_DigestFinal_ex(ctx, md, &len) == 1
         && len == SHA256_DIGEST_LENGTH;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        errno = ENOMEM;
        return errprintf(errp, "cannot compute the SQL functions' SHA-256");
    }
    hex_encode(md, len, hex);
    return 0;
}

/* What schema_functions says of this binary's functions at a version. */
struct functions_state {
    bool any;            /* functions were ever recorded */
    int version;         /* the newest record's schema version */
    char sha256[65];     /* its SHA-256 */
    char applied_at[32]; /* and when, UTC */
    bool known;          /* this binary's were applied at the version */
};

/* From a row of STMT_FUNCTIONS_STATE. */
static void functions_state_read(const PGresult *r, struct functions_state *st)
{
    memset(st, 0, sizeof(*st));
    if (PQntuples(r) != 1)
        return;
    st->any = !PQgetisnull(r, 0, 1);
    st->version = atoi(PQgetvalue(r, 0, 0));
    snprintf(st->sha256, sizeof(st->sha256), "%s", PQgetvalue(r, 0, 1));
    snprintf(st->applied_at, sizeof(st->applied_at), "%s", PQgetvalue(r, 0, 2));
    st->known = PQgetvalue(r, 0, 3)[0] == 't';
}

/* The newest functions recorded are this binary's, at this version. */
static bool functions_current(const struct functions_state *st,
                              int version,
                              const char *mine)
{
    return st->any && st->version == version && !strcmp(st->sha256, mine);
}

/* Whether a database at this binary's schema version (version) has this
 * binary's SQL functions: 0 when they are the newest applied, and also
 * when another build's replaced them after they were applied (a rolling
 * upgrade: the newer ones keep what older builds call), warned about
 * once per replacement; -1 with ESTALE when they never were applied
 * (as for an older schema: the admin runs --migrate), or with errno and
 * errp when the database cannot say.
 */
static int functions_check(struct store *s, int version, vnib_error_t *errp)
{
    char mine[65], vbuf[16];
    const char *params[2] = {vbuf, mine};
    struct functions_state st;

    if (functions_digest(mine, errp) < 0)
        return -1;
    snprintf(vbuf, sizeof(vbuf), "%d", version);
    PGresult *r = store_run(s, STMT_FUNCTIONS_STATE, params, errp);
    if (!r)
        return -1;
    functions_state_read(r, &st);
    PQclear(r);
    if (functions_current(&st, version, mine))
        return 0;
    if (!st.known) {
        errno = ESTALE;
        return errprintf(errp,
                         "database schema %d lacks this vnibrokerd's SQL "
                         "functions (SHA-256 %.12s...): run 'vnibrokerd "
                         "--migrate'",
                         version,
                         mine);
    }
    pthread_mutex_lock(&s->lock);
    bool warn = strcmp(s->functions_warned, st.sha256) != 0;
    if (warn)
        snprintf(
            s->functions_warned, sizeof(s->functions_warned), "%s", st.sha256);
    pthread_mutex_unlock(&s->lock);
    if (warn)
        logger_printf(s->log,
                      LOG_WARNING,
                      NULL,
                      "database SQL functions are another build's (SHA-256 "
                      "%.12s..., applied %s at schema %d); this "
                      "vnibrokerd's (%.12s...) were applied before: "
                      "serving; upgrade this one soon",
                      st.sha256,
                      st.applied_at,
                      st.version,
                      mine);
    return 0;
}

/* Apply this binary's SQL functions on c, inside the migration's
 * transaction, to a database at this binary's schema version, and record
 * them; nothing when they are the newest recorded at this version
 * already.
 */
static int functions_apply(struct store *s,
                           struct conn *c,
                           int version,
                           vnib_error_t *errp)
{
    char mine[65], vbuf[16], had[32];
    const char *params[2] = {vbuf, mine};
    struct functions_state st;
    PGresult *r;

    if (functions_digest(mine, errp) < 0)
        return -1;
    snprintf(vbuf, sizeof(vbuf), "%d", version);
    if (!(r = store_conn_exec(
              s, c, STMT_FUNCTIONS_STATE, params, MIGRATE_TIMEOUT_MS, errp)))
        return -1;
    functions_state_read(r, &st);
    PQclear(r);
    if (functions_current(&st, version, mine)) {
        logger_printf(s->log,
                      LOG_NOTICE,
                      NULL,
                      "migrate: SQL functions are current (SHA-256 %.12s...)",
                      mine);
        return 0;
    }
    if (st.any)
        snprintf(had, sizeof(had), "%.12s...", st.sha256);
    else
        snprintf(had, sizeof(had), "none recorded");
    logger_printf(s->log,
                  LOG_NOTICE,
                  NULL,
                  "migrate: applying SQL functions (SHA-256 %.12s...; the "
                  "database had %s)",
                  mine,
                  had);
    for (size_t i = 0; i < schema_functions_count; i++) {
        const struct schema_function_file *f = &schema_functions[i];

        if (store_conn_exec_script(
                s, c, f->sql, f->name, MIGRATE_TIMEOUT_MS, errp)
            < 0) {
            char why[sizeof(errp->text)];
            snprintf(why, sizeof(why), "%s", errp ? errp->text : "error");
            return errprintf(
                errp, "SQL functions functions/%s failed: %s", f->name, why);
        }
    }
    if (!(r = store_conn_exec(
              s, c, STMT_FUNCTIONS_RECORD, params, MIGRATE_TIMEOUT_MS, errp)))
        return -1;
    PQclear(r);
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
    /* The functions of another schema are its binary's to check. */
    if (rc == 0 && version == store_required_version()
        && version >= SCHEMA_FUNCTIONS_VERSION)
        rc = functions_check(s, version, errp);
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
    if (version == need && version >= SCHEMA_FUNCTIONS_VERSION
        && functions_check(s, version, errp) < 0)
        return -1;
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
    vnib_error_t why = {0};
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
                      "vnibrokerd knows (%d); nothing to do, its SQL "
                      "functions included",
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
    /* The SQL functions, only to a schema at this binary's version: a
     * newer one has its own binary's.
     */
    if (version == store_required_version()
        && version >= SCHEMA_FUNCTIONS_VERSION
        && functions_apply(s, c, version, errp) < 0)
        goto done;
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
