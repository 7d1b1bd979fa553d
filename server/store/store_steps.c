/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Job steps in the store (schema/0017): a step's reservation, reserved,
 * read and ended each in one statement and one transaction, and its rows
 * with the job's reservation as the step shows it (store_steps.h).
 * Steps do not join the group commit: a step is reserved once per step of
 * a running job, not once per job start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "server/store/store_int.h"

/* Add the job's sealed token of row `row`, with the reservation id it is
 * sealed under, for the callers that may reveal it (STORE_SEALED_ID).
 */
static int step_add_sealed(PGresult *r,
                           int row,
                           json_t *res,
                           vnib_error_t *errp)
{
    int tc = PQfnumber(r, "parent_session_token");
    int ic = PQfnumber(r, "parent_id");
    const char *sealed = tc >= 0 ? store_col(r, row, tc) : NULL;

    if (sealed && ic >= 0
        && (json_object_set_new(res, STORE_SEALED_TOKEN, json_string(sealed))
                < 0
            || json_object_set_new(
                   res, STORE_SEALED_ID, json_integer(store_col_ll(r, row, ic)))
                   < 0))
        return errprintf(errp, "out of memory");
    return 0;
}

/* The step reservation of row 0 of r, with its job's sealed token: 0, or
 * -1 with errno and errp.
 */
static int step_result(struct store *s,
                       PGresult *r,
                       json_t **resp,
                       vnib_error_t *errp)
{
    if (store_result_row(s, r, 0, resp, errp) < 0)
        return -1;
    if (step_add_sealed(r, 0, *resp, errp) < 0) {
        json_decref(*resp);
        *resp = NULL;
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* The refusals of a step reserve, by outcome; errno and refusal. */
static const struct {
    const char *outcome;
    int err;
    enum store_step_refusal refusal;
} step_refusals[] = {
    {"not_found", ENOENT, STORE_STEP_JOB_NOT_FOUND},
    {"job_not_active", EEXIST, STORE_STEP_JOB_NOT_ACTIVE},
    {"parent_changed", EAGAIN, STORE_STEP_PARENT_CHANGED},
    {"conflict", EEXIST, STORE_STEP_CONFLICT},
    {"superseded", EALREADY, STORE_STEP_SUPERSEDED},
};

/* The message of a refused step reserve. */
static int step_refused(const struct store_step_reserve *a,
                        enum store_step_refusal refusal,
                        const char *state,
                        vnib_error_t *errp)
{
    switch (refusal) {
        case STORE_STEP_JOB_NOT_FOUND:
            return errprintf(errp, "no reservation for job %s", a->job_id);
        case STORE_STEP_JOB_NOT_ACTIVE:
            return errprintf(errp,
                             "job %s is not active (its reservation is %s); a "
                             "step is reserved only while its job runs",
                             a->job_id,
                             state ? state : "released");
        case STORE_STEP_PARENT_CHANGED:
            return errprintf(errp,
                             "job %s was reserved again while this request "
                             "waited; retry",
                             a->job_id);
        case STORE_STEP_CONFLICT:
            return errprintf(
                errp,
                "step %s of job %s already has an active reservation "
                "with different parameters (nodes, vni_count or lease)",
                a->step_id,
                a->job_id);
        case STORE_STEP_SUPERSEDED:
            return errprintf(errp,
                             "step %s of job %s has a newer reservation made "
                             "while this request waited; nothing was reserved",
                             a->step_id,
                             a->job_id);
        case STORE_STEP_ACCEPTED:
            break;
    }
    return store_db_error(errp, STORE_MSG_ERROR, "unexpected reply");
}

int store_step_reserve(struct store *s,
                       const struct store_step_reserve *a,
                       json_t **resp,
                       bool *createdp,
                       enum store_step_refusal *refusalp,
                       vnib_error_t *errp)
{
    struct store_ranges g;
    struct sbuf plo = {0}, phi = {0};
    struct store_num parent, ncount, vcount, until, skew;
    PGresult *r = NULL;
    int rc = -1;

    *resp = NULL;
    *createdp = false;
    *refusalp = STORE_STEP_ACCEPTED;
    store_ranges_open(&g);
    store_ranges_add(&g, a->hosts, 1);
    if (store_ranges_close(&g) < 0
        || store_pool_arrays(a->pool, &plo, &phi) < 0) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    const char *params[18] = {
        a->job_id,
        a->step_id,
        store_num(&parent, a->parent_id),
        a->nodes,
        store_num(&ncount, (long long)a->node_count),
        store_num(&vcount, a->vni_count),
        a->empty_reason,
        a->actor,
        plo.data,
        phi.data,
        g.prefix.data,
        g.suffix.data,
        g.width.data,
        g.lo.data,
        g.hi.data,
        a->presumed ? "true" : "false",
        a->lease_until > 0 ? store_num(&until, a->lease_until) : NULL,
        store_num(&skew, a->lease_skew_s)};
    if (!(r = store_run_one(s, STMT_STEP_RESERVE, params, "no answer", errp)))
        goto done;
    const char *outcome = store_col(r, 0, ROW_OUTCOME);
    for (size_t i = 0;
         outcome && i < sizeof(step_refusals) / sizeof(step_refusals[0]);
         i++) {
        if (strcmp(outcome, step_refusals[i].outcome))
            continue;
        *refusalp = step_refusals[i].refusal;
        step_refused(a, *refusalp, store_col(r, 0, ROW_NCOLS), errp);
        errno = step_refusals[i].err;
        goto done;
    }
    if (!outcome || (strcmp(outcome, "created") && strcmp(outcome, "exists"))) {
        errno = EIO;
        store_db_error(errp, STORE_MSG_ERROR, "unexpected reply");
        goto done;
    }
    *createdp = !strcmp(outcome, "created");
    if (step_result(s, r, resp, errp) < 0)
        goto done;
    /* As a job's reserve (store_reservations.c): the request's, unless
     * its lease differed from the existing step's (detail "lease"): a
     * presumed step stays so, and one that was not became presumed.
     */
    const char *detail = *createdp ? NULL : store_col(r, 0, ROW_NCOLS);
    bool presumed = a->presumed || (detail && !strcmp(detail, "lease"));
    if (json_object_set_new(*resp, "presumed", json_boolean(presumed)) < 0
        || (detail
            && json_object_set_new(
                   *resp, STORE_DIFFERS, json_pack("[s]", detail))
                   < 0)) {
        json_decref(*resp);
        *resp = NULL;
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 0;
done:
    PQclear(r);
    store_ranges_free(&g);
    free(plo.data);
    free(phi.data);
    return rc;
}

int store_step_get(struct store *s,
                   const char *job_id,
                   const char *step_id,
                   const char *node,
                   json_t **resp,
                   bool *memberp,
                   vnib_error_t *errp)
{
    struct store_node_params np;
    const char *params[6] = {job_id, step_id, NULL, NULL, NULL, NULL};
    int rc = -1;

    if (node)
        store_node_param_list(&np, node, params + 2);
    PGresult *r = store_run(s, STMT_STEP_GET, params, errp);
    if (!r)
        return -1;
    int mc = PQfnumber(r, "member");
    if (PQntuples(r) != 1 || mc < 0) {
        errno = ENOENT;
        errprintf(
            errp, "no reservation for step %s of job %s", step_id, job_id);
        goto done;
    }
    *memberp = *store_col(r, 0, mc) == 't';
    if (step_result(s, r, resp, errp) < 0)
        goto done;
    rc = 0;
done:
    PQclear(r);
    return rc;
}

int store_step_free(struct store *s,
                    const char *job_id,
                    const char *step_id,
                    long long parent_id,
                    const char *actor,
                    bool force,
                    enum store_step_outcome *outcomep,
                    json_t **resp,
                    vnib_error_t *errp)
{
    struct store_num parent;
    const char *params[5] = {
        job_id,
        step_id,
        actor,
        force ? "true" : "false",
        parent_id > 0 ? store_num(&parent, parent_id) : NULL};
    int rc = -1;

    *resp = NULL;
    PGresult *r = store_run_one(s, STMT_STEP_FREE, params, "no answer", errp);
    if (!r)
        return -1;
    const char *outcome = store_col(r, 0, ROW_OUTCOME);
    const char *fm = store_col(r, 0, ROW_NCOLS);
    if (outcome && !strcmp(outcome, "not_current")) {
        *outcomep = STORE_STEP_NOT_CURRENT;
        errno = EPERM;
        errprintf(errp,
                  "reservation %lld is not job %s's active reservation",
                  parent_id,
                  job_id);
        goto done;
    }
    if (outcome && !strcmp(outcome, "not_found")) {
        *outcomep = STORE_STEP_NOT_FOUND;
        errno = ENOENT;
        errprintf(errp, "no reservation for job %s", job_id);
        goto done;
    }
    if (!outcome || !fm || (strcmp(fm, "queued") && strcmp(fm, "no_hwcoll"))) {
        errno = EIO;
        store_db_error(errp, STORE_MSG_ERROR, "unexpected reply");
        goto done;
    }
    *outcomep =
        !strcmp(fm, "queued") ? STORE_STEP_QUEUED : STORE_STEP_NO_HWCOLL;
    if (strcmp(outcome, "none") && store_result_row(s, r, 0, resp, errp) < 0)
        goto done;
    rc = 0;
done:
    PQclear(r);
    return rc;
}
