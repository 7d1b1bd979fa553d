/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The VNI pool in the store: occupancy, the pool in force and the
 * free-VNI queue, who holds a VNI, the audit trail, and the sweeps that
 * close confirmed quarantines and purge old history.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/idset.h"
#include "server/store/store_int.h"

/* Run statement id, whose parameters are the pool's range bounds, for
 * one row.
 */
static PGresult *run_pool(struct store *s,
                          enum stmt_id id,
                          const struct idset *pool,
                          vnib_error_t *errp)
{
    struct sbuf lo, hi;

    if (store_pool_arrays(pool, &lo, &hi) < 0) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    const char *params[2] = {lo.data, hi.data};
    PGresult *r = store_run_one(s, id, params, "no answer", errp);
    free(lo.data);
    free(hi.data);
    return r;
}

int store_pool(struct store *s,
               const struct idset *pool,
               json_t **resp,
               vnib_error_t *errp)
{
    PGresult *r = run_pool(s, STMT_POOL, pool, errp);
    if (!r)
        return -1;
    long long active = store_col_ll(r, 0, 0);
    long long releasing = store_col_ll(r, 0, 1);
    long long outside = store_col_ll(r, 0, 2);
    const char *cursor = store_col(r, 0, 3);
    long long cooling = store_col_ll(r, 0, 4);
    *resp = render_pool(pool, active, releasing, outside, cooling, cursor);
    PQclear(r);
    if (!*resp)
        return errprintf(errp, "out of memory");
    return 0;
}

int store_pool_sync(struct store *s,
                    const struct idset *pool,
                    char *previous,
                    size_t size,
                    long long *addedp,
                    long long *removedp,
                    vnib_error_t *errp)
{
    PGresult *r = run_pool(s, STMT_POOL_SYNC, pool, errp);
    if (!r)
        return -1;
    snprintf(
        previous, size, "%s", store_col(r, 0, 0) ? store_col(r, 0, 0) : "");
    *addedp = store_col_ll(r, 0, 1);
    *removedp = store_col_ll(r, 0, 2);
    PQclear(r);
    return 0;
}

int store_vni(struct store *s,
              int vni,
              const struct idset *pool,
              json_t **resp,
              vnib_error_t *errp)
{
    struct store_num v;
    const char *params[1] = {store_num(&v, vni)};
    PGresult *r = store_run(s, STMT_VNI, params, errp);
    if (!r)
        return -1;
    json_t *res = NULL;
    const char *state = "free";
    const char *last_released = NULL;
    const char *usable_at = NULL;
    if (PQntuples(r) == 1) {
        if (!(res = store_row_json(s->cfg, r, 0))) {
            PQclear(r);
            return errprintf(errp, "out of memory");
        }
        if (*store_col(r, 0, ROW_NCOLS) == 't')
            state = strcmp(store_col(r, 0, ROW_STATE), "active") ? "quarantined"
                                                                 : "active";
        else
            last_released = store_col(r, 0, ROW_RELEASED_AT);
        if ((usable_at = store_col(r, 0, PQfnumber(r, "usable_at"))))
            state = "cooling";
    }
    *resp = render_vni(vni,
                       idset_contains(pool, (uint32_t)vni),
                       state,
                       res,
                       last_released,
                       usable_at);
    PQclear(r);
    if (!*resp)
        return errprintf(errp, "out of memory");
    return 0;
}

/* An audit event of the events query (a store_row_fn). */
static json_t *event_row(const struct config *cfg, const PGresult *r, int i)
{
    struct render_event ev = {.id = store_col(r, i, 0),
                              .time = store_col(r, i, 1),
                              .reservation_id = store_col(r, i, 2),
                              .job_id = store_col(r, i, 3),
                              .node = store_col(r, i, 4),
                              .actor = store_col(r, i, 5),
                              .action = store_col(r, i, 6),
                              .detail = store_col(r, i, 7)};
    (void)cfg;
    return render_event(&ev);
}

int store_events(struct store *s,
                 const struct store_events_query *q,
                 json_t **resp,
                 vnib_error_t *errp)
{
    struct store_num a, l;
    const char *params[5] = {q->job_id,
                             store_num(&a, q->after),
                             store_num(&l, q->limit),
                             q->action,
                             q->node};
    return store_run_page(s,
                          q->desc ? STMT_EVENTS_DESC : STMT_EVENTS,
                          params,
                          event_row,
                          "events",
                          q->limit,
                          0,
                          resp,
                          errp);
}

int store_sweep(struct store *s,
                const char *actor,
                int *closedp,
                vnib_error_t *errp)
{
    long n;
    const char *params[1] = {actor};
    PGresult *r = store_run_one(s, STMT_SWEEP, params, "no answer", errp);
    if (!r)
        return -1;
    n = store_col_ll(r, 0, 0);
    PQclear(r);
    *closedp = (int)n;
    return 0;
}

int store_purge(
    struct store *s, int days, int batch, int *purgedp, vnib_error_t *errp)
{
    struct store_num d, b;
    const char *params[2] = {store_num(&d, days), store_num(&b, batch)};
    PGresult *r = store_run_one(s, STMT_PURGE, params, "no answer", errp);
    if (!r)
        return -1;
    *purgedp = (int)store_col_ll(r, 0, 0);
    PQclear(r);
    return 0;
}
