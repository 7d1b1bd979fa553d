/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hardware collectives in the store: the Fabric Manager's answers for
 * reserves (grouped, store_batch.c), deferred reserves and the work the
 * workers check, the FM release queue (schema/0003) with step releases,
 * reconciliation with the FM's job list, and who leads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/store_int.h"

/* A reservation's FM outcome, grouped with those of concurrent reserves
 * (schema/0016 vnib_hwcoll_set_many), with what it did.
 */
struct hwset_item {
    struct item_result res; /* first */
    long long id;
    enum hwstate state;
    enum hwstate_cause cause;
    const char *reason;
    const char *sealed_hex;
    const char *actor;
    bool want_resp;
    enum store_hwset_outcome outcome;
};

/* The outcome vnib_hwcoll_set_many wrote: ok, not_active, not_found or
 * unchanged (what this binary does not know is nothing to act on).
 */
static enum store_hwset_outcome hwset_outcome(const char *text)
{
    if (!strcmp(text, "ok"))
        return STORE_HWSET_OK;
    if (!strcmp(text, "not_active"))
        return STORE_HWSET_NOT_ACTIVE;
    if (!strcmp(text, "not_found"))
        return STORE_HWSET_NOT_FOUND;
    return STORE_HWSET_UNCHANGED;
}

/* Run items[0..n-1] (hwset_items) as one group.  A store_group_fn;
 * there are no job locks to wait for.
 */
static void hwset_group(struct store *s,
                        struct item_result **base,
                        size_t n,
                        bool wait)
{
    struct hwset_item **items = (struct hwset_item **)base;
    struct sbuf ids = {0}, states = {0}, causes = {0}, reasons = {0},
                tokens = {0}, actors = {0};
    struct sbuf *all[] = {&ids, &states, &causes, &reasons, &tokens, &actors};
    const size_t nall = sizeof(all) / sizeof(all[0]);
    PGresult *r = NULL;

    for (size_t i = 0; i < nall; i++)
        store_sb_putc(all[i], '{');
    for (size_t i = 0; i < n; i++) {
        store_sb_elem_num(&ids, i, items[i]->id);
        store_sb_elem(&states, i, hwstate_name(items[i]->state));
        store_sb_elem(&causes, i, hwstate_cause_code(items[i]->cause));
        store_sb_elem(&reasons, i, items[i]->reason);
        store_sb_elem(&tokens, i, items[i]->sealed_hex);
        store_sb_elem(&actors, i, items[i]->actor);
    }
    if (!store_arrays_close(all, nall, false, base, n))
        goto done;
    const char *params[6] = {ids.data,
                             states.data,
                             causes.data,
                             reasons.data,
                             tokens.data,
                             actors.data};
    if (!(r = store_group_exec(
              s, STMT_HWCOLL_SET_MANY, params, base, n, wait, hwset_group)))
        goto done;
    for (size_t i = 0; i < n; i++) {
        struct hwset_item *it = items[i];
        it->outcome = hwset_outcome(store_col(r, (int)i, 0));
        it->res.rc = 0;
        if (it->want_resp
            && store_result_row(s, r, (int)i, &it->res.resp, &it->res.error)
                   < 0) {
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
bool store_hwset_fits(void *arg,
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

void store_hwset_run(void *arg, struct group_item **items, size_t n)
{
    hwset_group(arg, (struct item_result **)items, n, false);
}

int store_hwcoll_set(struct store *s,
                     long long id,
                     enum hwstate state,
                     enum hwstate_cause cause,
                     const char *reason,
                     const char *sealed_hex,
                     const char *actor,
                     json_t **resp,
                     enum store_hwset_outcome *outcomep,
                     vnib_error_t *errp)
{
    struct hwset_item it = {.id = id,
                            .state = state,
                            .cause = cause,
                            .reason = reason,
                            .sealed_hex = sealed_hex,
                            .actor = actor,
                            .want_resp = resp != NULL};

    if (store_item_submit(s, s->hwsets, &it.res, hwset_group, errp) < 0)
        return -1;
    *outcomep = it.outcome;
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
    struct store_num n;
    const char *params[3] = {store_num(&n, id), reason, actor};
    PGresult *r =
        store_run_one(s, STMT_HWCOLL_DEFER, params, "no answer", errp);
    int rc = -1;
    if (!r)
        return -1;
    if (strcmp(store_col(r, 0, ROW_OUTCOME), "ok") != 0) {
        errno = EEXIST;
        errprintf(errp, "reservation %lld is no longer pending", id);
    } else
        rc = store_result_row(s, r, 0, resp, errp);
    PQclear(r);
    return rc;
}

/* The rows of the FM work queries (store_row_fns), by their columns. */
static const struct store_field claim_fields[] = {
    {"id", 0, STORE_FIELD_INT},
    {"fm_job_id", 1, STORE_FIELD_TEXT_OR_NULL},
    {"active", 2, STORE_FIELD_BOOL},
    {"attempts", 3, STORE_FIELD_INT},
};

static const struct store_field work_fields[] = {
    {"id", 0, STORE_FIELD_INT},
    {"fm_job_id", 1, STORE_FIELD_TEXT_OR_NULL},
    {"hwcoll_state", 2, STORE_FIELD_TEXT},
    {"active", 3, STORE_FIELD_BOOL},
    {"age_s", 4, STORE_FIELD_REAL},
};

static const struct store_field fm_op_fields[] = {
    {"id", 0, STORE_FIELD_INT},
    {"reservation_id", 1, STORE_FIELD_INT_OR_NULL},
    {"fm_job_id", 2, STORE_FIELD_TEXT},
    {"op", 3, STORE_FIELD_TEXT},
    {"step_id", 4, STORE_FIELD_TEXT_OR_NULL},
    {"attempts", 5, STORE_FIELD_INT},
};

static const struct store_field reconcile_fields[] = {
    {"kind", 0, STORE_FIELD_TEXT},
    {"job_id", 1, STORE_FIELD_TEXT_OR_NULL},
    {"fm_job_id", 2, STORE_FIELD_TEXT},
};

#define FIELDS(f) (f), sizeof(f) / sizeof((f)[0])

static json_t *claim_row(const struct config *cfg, const PGresult *r, int i)
{
    (void)cfg;
    return store_row_object(r, i, FIELDS(claim_fields));
}

static json_t *work_row(const struct config *cfg, const PGresult *r, int i)
{
    (void)cfg;
    return store_row_object(r, i, FIELDS(work_fields));
}

static json_t *fm_op_row(const struct config *cfg, const PGresult *r, int i)
{
    (void)cfg;
    return store_row_object(r, i, FIELDS(fm_op_fields));
}

static json_t *reconcile_row(const struct config *cfg, const PGresult *r, int i)
{
    (void)cfg;
    return store_row_object(r, i, FIELDS(reconcile_fields));
}

int store_hwcoll_claim(
    struct store *s, int limit, int lease_s, json_t **workp, vnib_error_t *errp)
{
    struct store_num l, ls;
    const char *params[2] = {store_num(&l, limit), store_num(&ls, lease_s)};
    return store_run_list(s, STMT_HWCOLL_CLAIM, params, claim_row, workp, errp);
}

int store_hwcoll_work(struct store *s,
                      int limit,
                      json_t **workp,
                      vnib_error_t *errp)
{
    struct store_num l;
    const char *params[1] = {store_num(&l, limit)};
    return store_run_list(s, STMT_HWCOLL_WORK, params, work_row, workp, errp);
}

int store_hwcoll_counts(struct store *s, json_t **countsp, vnib_error_t *errp)
{
    PGresult *r = store_run(s, STMT_HWCOLL_COUNTS, NULL, errp);
    json_t *o = json_object();
    if (!r || !o) {
        PQclear(r);
        json_decref(o);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++)
        json_object_set_new(
            o, store_col(r, i, 0), json_integer(store_col_ll(r, i, 1)));
    PQclear(r);
    *countsp = o;
    return 0;
}

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
    struct store_num l, t;
    size_t used = 0;

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
    const char *params[4] = {
        list, actor, store_num(&l, limit), store_num(&t, lease_s)};
    return store_run_list(s, STMT_FM_NEXT, params, fm_op_row, opsp, errp);
}

int store_fm_retry(struct store *s,
                   long long id,
                   const char *error,
                   double delay_s,
                   vnib_error_t *errp)
{
    struct store_num i;
    char d[32];
    snprintf(d, sizeof(d), "%.3f", delay_s);
    const char *params[3] = {store_num(&i, id), error, d};
    PGresult *r = store_run(s, STMT_FM_RETRY, params, errp);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int store_step_release(struct store *s,
                       const char *job_id,
                       const char *step_id,
                       const char *actor,
                       enum store_step_outcome *outcomep,
                       vnib_error_t *errp)
{
    const char *params[3] = {job_id, step_id, actor};
    PGresult *r =
        store_run_one(s, STMT_STEP_RELEASE, params, "no answer", errp);
    if (!r)
        return -1;
    const char *text = store_col(r, 0, 0);
    int rc = 0;
    if (text && !strcmp(text, "queued"))
        *outcomep = STORE_STEP_QUEUED;
    else if (text && !strcmp(text, "no_hwcoll"))
        *outcomep = STORE_STEP_NO_HWCOLL;
    else if (text && !strcmp(text, "not_found"))
        *outcomep = STORE_STEP_NOT_FOUND;
    else {
        errno = EIO;
        rc = store_db_error(errp, STORE_MSG_ERROR, "unexpected reply");
    }
    PQclear(r);
    return rc;
}

int store_db_now(struct store *s, char *buf, size_t size, vnib_error_t *errp)
{
    PGresult *r = store_run_one(s, STMT_DB_NOW, NULL, "no answer", errp);
    if (!r)
        return -1;
    snprintf(buf, size, "%s", store_col(r, 0, 0));
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
    int rc = -1;

    store_sb_putc(&a, '{');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            store_sb_putc(&a, ',');
        store_sb_quoted(&a, ids[i], strlen(ids[i]));
    }
    store_sb_putc(&a, '}');
    if (a.failed) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    const char *params[3] = {a.data, listed_at, actor};
    rc =
        store_run_list(s, STMT_RECONCILE, params, reconcile_row, resultp, errp);
done:
    free(a.data);
    return rc;
}

int store_fm_queue_stats(struct store *s,
                         long long *depthp,
                         double *oldest_sp,
                         vnib_error_t *errp)
{
    PGresult *r =
        store_run_one(s, STMT_FM_QUEUE_STATS, NULL, "no answer", errp);
    if (!r)
        return -1;
    *depthp = store_col_ll(r, 0, 0);
    *oldest_sp = strtod(store_col(r, 0, 1), NULL);
    PQclear(r);
    return 0;
}

int store_leader_get(struct store *s, json_t **leaderp, vnib_error_t *errp)
{
    PGresult *r = store_run(s, STMT_LEADER_GET, NULL, errp);
    if (!r)
        return -1;
    *leaderp = PQntuples(r) == 1 ? json_pack("{s:s, s:s}",
                                             "replica",
                                             store_col(r, 0, 0),
                                             "since",
                                             store_col(r, 0, 1))
                                 : json_null();
    PQclear(r);
    return 0;
}
