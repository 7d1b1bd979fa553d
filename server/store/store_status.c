/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The store's reads for GET /v1/status and the gauges: quarantine and
 * drain figures, the oldest quarantines with the nodes they wait for, and
 * the drained nodes.
 *
 * Every statement is bounded by a LIMIT or aggregates in the database;
 * node names come back comma-joined and leave as compressed hostlists,
 * so a quarantine waiting on a whole 11,136-node job is one short string.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "server/store/store_int.h"

int store_status_figures(struct store *s,
                         struct store_status_figures *f,
                         vnib_error_t *errp)
{
    PGresult *r =
        store_run_one(s, STMT_STATUS_FIGURES, NULL, "no answer", errp);
    if (!r)
        return -1;
    const char *since = store_col(r, 0, 2);
    f->quarantine_reservations = store_col_ll(r, 0, 0);
    f->quarantine_vnis = store_col_ll(r, 0, 1);
    snprintf(
        f->oldest_since, sizeof(f->oldest_since), "%s", since ? since : "");
    f->oldest_age_s =
        strtod(store_col(r, 0, 3) ? store_col(r, 0, 3) : "0", NULL);
    f->drained = store_col_ll(r, 0, 4);
    PQclear(r);
    return 0;
}

/* Comma-joined names (NULL: none) as a compressed hostlist string. */
static json_t *compressed(const char *names)
{
    struct hostlist *hl = hostlist_create();
    char *copy = strdup(names ? names : ""), *save = NULL, *expr = NULL;
    json_t *out = NULL;

    if (!hl || !copy)
        goto cleanup;
    for (char *n = strtok_r(copy, ",", &save); n;
         n = strtok_r(NULL, ",", &save))
        if (hostlist_append(hl, n) < 0)
            goto cleanup;
    if ((expr = hostlist_encode(hl)))
        out = json_string(expr);
cleanup:
    free(expr);
    free(copy);
    hostlist_destroy(hl);
    return out;
}

/* The nodes of the hostlist `nodes` (of count names) that are not among
 * the comma-joined names `done` (NULL: none), as a compressed hostlist
 * string: a presumed reservation's nodes that have not reported
 * destroyed.
 */
static json_t *all_but(const char *nodes, long long count, const char *done)
{
    struct hostlist *all = hostlist_decode(nodes, (size_t)count, NULL);
    struct hostlist *gone = hostlist_create();
    struct hostlist *left = hostlist_create();
    char *copy = strdup(done ? done : ""), *save = NULL, *expr = NULL;
    json_t *out = NULL;

    if (!all || !gone || !left || !copy)
        goto cleanup;
    for (char *n = strtok_r(copy, ",", &save); n;
         n = strtok_r(NULL, ",", &save))
        if (hostlist_append(gone, n) < 0)
            goto cleanup;
    hostlist_uniq(gone);
    for (size_t k = 0; k < hostlist_count(all); k++)
        if (!hostlist_contains(gone, hostlist_nth(all, k))
            && hostlist_append(left, hostlist_nth(all, k)) < 0)
            goto cleanup;
    if ((expr = hostlist_encode(left)))
        out = json_string(expr);
cleanup:
    free(expr);
    free(copy);
    hostlist_destroy(left);
    hostlist_destroy(gone);
    hostlist_destroy(all);
    return out;
}

/* A quarantine item of sql_quarantine_items (a store_row_fn): a presumed
 * reservation waits for every node of its list that has not reported
 * destroyed, another for those whose report says they hold services.
 */
static json_t *quarantine_row(const struct config *cfg,
                              const PGresult *r,
                              int i)
{
    const char *key = store_col(r, i, 1);
    const char *hash = strchr(key, '#');
    bool presumed = store_col(r, i, 6) && *store_col(r, i, 6) == 't';
    json_t *vnis = json_loads(store_col(r, i, 3), 0, NULL);
    json_t *nodes =
        presumed ? all_but(
            store_col(r, i, 7), store_col_ll(r, i, 8), store_col(r, i, 9))
                 : compressed(store_col(r, i, 5));
    json_t *item = NULL;

    (void)cfg;
    if (!vnis || !nodes)
        goto cleanup;
    item = json_pack("{s:s%, s:I, s:b, s:O, s:s, s:{s:I, s:O}}",
                     "job_id",
                     key,
                     hash ? (size_t)(hash - key) : strlen(key),
                     "reservation_id",
                     (json_int_t)store_col_ll(r, i, 0),
                     "presumed",
                     (int)presumed,
                     "vnis",
                     vnis,
                     "since",
                     store_col(r, i, 2) ? store_col(r, i, 2) : "",
                     "waiting",
                     "count",
                     (json_int_t)store_col_ll(r, i, 4),
                     "nodes",
                     nodes);
    if (item && hash
        && json_object_set_new(item, "step_id", json_string(hash + 1)) < 0) {
        json_decref(item);
        item = NULL;
    }
cleanup:
    json_decref(vnis);
    json_decref(nodes);
    return item;
}

int store_quarantine_items(struct store *s,
                           int limit,
                           json_t **itemsp,
                           vnib_error_t *errp)
{
    struct store_num l;
    const char *params[1] = {store_num(&l, limit)};
    return store_run_list(
        s, STMT_QUARANTINE_ITEMS, params, quarantine_row, itemsp, errp);
}

static json_t *string_or_null(const char *v)
{
    return v ? json_string(v) : json_null();
}

int store_drained(struct store *s,
                  int limit,
                  json_t **drainedp,
                  vnib_error_t *errp)
{
    struct store_num l;
    const char *params[1] = {store_num(&l, limit)};
    json_t *items = NULL, *out = NULL;
    PGresult *r = store_run(s, STMT_DRAINED, params, errp);
    int rc = -1;

    if (!r)
        return -1;
    if (!(items = json_array()))
        goto cleanup;
    for (int i = 0; i < PQntuples(r); i++) {
        if (!store_col(r, i, 2))
            continue;
        if (json_array_append_new(items,
                                  json_pack("{s:s, s:o, s:o}",
                                            "node",
                                            store_col(r, i, 2),
                                            "reason",
                                            string_or_null(store_col(r, i, 3)),
                                            "since",
                                            string_or_null(store_col(r, i, 4))))
            < 0)
            goto cleanup;
    }
    out = json_pack("{s:I, s:o, s:O}",
                    "count",
                    (json_int_t)(PQntuples(r) ? store_col_ll(r, 0, 0) : 0),
                    "nodes",
                    compressed(PQntuples(r) ? store_col(r, 0, 1) : NULL),
                    "items",
                    items);
    if (out) {
        *drainedp = out;
        rc = 0;
    }
cleanup:
    PQclear(r);
    json_decref(items);
    if (rc < 0)
        errprintf(errp, "out of memory");
    return rc;
}
