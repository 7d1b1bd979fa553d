/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Nodes in the store: an agent's report on a job's CXI services, a
 * node's view (its live reservations, its reports, its drain mark), and
 * undrain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/store_int.h"

int store_report(struct store *s,
                 const struct store_report *a,
                 json_t **resp,
                 enum store_report_refusal *refusalp,
                 vnib_error_t *errp)
{
    struct store_node_params np;
    store_node_params(&np, a->node);
    struct store_num res;
    char what[256];
    /* A step's report goes to its key (schema/0017), with the job first. */
    const char *params[12] = {
        a->job_id,
        a->node,
        a->cxi,
        a->services,
        a->message,
        a->actor,
        np.prefix,
        np.suffix,
        np.width,
        np.num,
        a->reservation_id > 0 ? store_num(&res, a->reservation_id) : NULL};
    if (a->step_id) {
        memmove(params + 2, params + 1, 10 * sizeof(params[0]));
        params[1] = a->step_id;
        snprintf(
            what, sizeof(what), "step %s of job %s", a->step_id, a->job_id);
    } else
        snprintf(what, sizeof(what), "job %s", a->job_id);
    PGresult *r = store_run_one(s,
                                a->step_id ? STMT_STEP_REPORT : STMT_REPORT,
                                params,
                                "no answer",
                                errp);
    if (!r)
        return -1;
    const char *outcome = store_col(r, 0, ROW_OUTCOME);
    const char *prev = store_col(r, 0, ROW_COUNTS); /* for invalid_transition */
    int rc = -1;
    *refusalp = STORE_REPORT_ACCEPTED;
    if (!strcmp(outcome, "not_found")) {
        errno = ENOENT;
        *refusalp = STORE_REPORT_NOT_FOUND;
        errprintf(errp, "no reservation for %s", what);
    } else if (!strcmp(outcome, "not_member")) {
        errno = EPERM;
        *refusalp = STORE_REPORT_NOT_MEMBER;
        errprintf(errp, "node %s is not in %s's node list", a->node, what);
    } else if (!strcmp(outcome, "stale_reservation")) {
        errno = EEXIST;
        *refusalp = STORE_REPORT_STALE_RESERVATION;
        errprintf(errp,
                  "reservation %lld is not %s's current one; fetch the "
                  "job again",
                  a->reservation_id,
                  what);
    } else if (!strcmp(outcome, "invalid_transition")) {
        errno = EEXIST;
        *refusalp = STORE_REPORT_INVALID_TRANSITION;
        errprintf(errp,
                  "node %s already reported %s for %s; %s would go "
                  "backwards",
                  a->node,
                  prev ? prev : "?",
                  what,
                  a->cxi);
    } else if (!strcmp(outcome, "job_not_active")) {
        errno = EEXIST;
        *refusalp = STORE_REPORT_JOB_NOT_ACTIVE;
        errprintf(errp,
                  "%s is being released; '%s' is no longer "
                  "accepted",
                  what,
                  a->cxi);
    } else
        rc = store_result_row(s, r, 0, resp, errp);
    PQclear(r);
    return rc;
}

int store_node(struct store *s,
               const char *node,
               json_t **resp,
               vnib_error_t *errp)
{
    struct store_node_params np;
    PGresult *r = NULL, *d = NULL;
    struct render_node_entry *e = NULL;
    int rc = -1;

    store_node_params(&np, node);
    const char *params[5] = {node, np.prefix, np.suffix, np.width, np.num};
    if (!(r = store_run(s, STMT_NODE_VIEW, params, errp)))
        return -1;
    if (!(d = store_run(s, STMT_NODE_GET, params, errp)))
        goto cleanup;
    size_t n = (size_t)PQntuples(r);
    if (n > 0 && !(e = calloc(n, sizeof(*e)))) {
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        store_row_fields(r, (int)i, &e[i].res);
        e[i].cxi = store_col(r, (int)i, ROW_NCOLS);
        e[i].services = store_col(r, (int)i, ROW_NCOLS + 1);
    }
    bool drained = PQntuples(d) == 1 && *store_col(d, 0, 0) == 't';
    if (!(*resp = render_node_view(s->cfg,
                                   node,
                                   e,
                                   n,
                                   drained,
                                   drained ? store_col(d, 0, 1) : NULL,
                                   drained ? store_col(d, 0, 2) : NULL))) {
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(e);
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
    PGresult *r = store_run(s, STMT_UNDRAIN, params, errp);
    if (!r)
        return -1;
    PQclear(r);
    return store_node(s, node, resp, errp);
}
