/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reservations in the store: reserve and release, each written in groups
 * (store_batch.c), a job's reservation and pages of them, and whether a
 * reservation is still its job's active one (a job token's check).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "server/store/store_int.h"

void store_ranges_free(struct store_ranges *g)
{
    free(g->item.data);
    free(g->prefix.data);
    free(g->suffix.data);
    free(g->width.data);
    free(g->lo.data);
    free(g->hi.data);
}

void store_ranges_open(struct store_ranges *g)
{
    memset(g, 0, sizeof(*g));
    store_sb_putc(&g->item, '{');
    store_sb_putc(&g->prefix, '{');
    store_sb_putc(&g->suffix, '{');
    store_sb_putc(&g->width, '{');
    store_sb_putc(&g->lo, '{');
    store_sb_putc(&g->hi, '{');
}

void store_ranges_add(struct store_ranges *g,
                      const struct hostlist *hosts,
                      int item)
{
    size_t n = hostlist_count(hosts);
    struct hostlist_key cur = {0}, k;
    const char *curname = NULL;
    uint64_t hi = 0;

    for (size_t i = 0; i <= n; i++) {
        const char *name = i < n ? hostlist_nth(hosts, i) : NULL;
        if (name) {
            hostlist_name_key(name, &k);
            if (curname && k.width >= 0 && k.width == cur.width
                && k.prefix_len == cur.prefix_len
                && !strncmp(name, curname, k.prefix_len)
                && !strcmp(k.suffix, cur.suffix) && k.num == hi + 1) {
                hi = k.num;
                continue;
            }
        }
        if (curname) {
            const char *sep = g->count++ ? "," : "";
            store_sb_puts(&g->item, sep, strlen(sep));
            store_sb_num(&g->item, item);
            store_sb_puts(&g->prefix, sep, strlen(sep));
            store_sb_quoted(&g->prefix, curname, cur.prefix_len);
            store_sb_puts(&g->suffix, sep, strlen(sep));
            store_sb_quoted(&g->suffix, cur.suffix, strlen(cur.suffix));
            store_sb_puts(&g->width, sep, strlen(sep));
            store_sb_num(&g->width, cur.width);
            store_sb_puts(&g->lo, sep, strlen(sep));
            store_sb_num(&g->lo, (long long)cur.num);
            store_sb_puts(&g->hi, sep, strlen(sep));
            store_sb_num(&g->hi, (long long)hi);
        }
        if (name) {
            cur = k;
            curname = name;
            hi = k.num;
        }
    }
}

int store_ranges_close(struct store_ranges *g)
{
    store_sb_putc(&g->item, '}');
    store_sb_putc(&g->prefix, '}');
    store_sb_putc(&g->suffix, '}');
    store_sb_putc(&g->width, '}');
    store_sb_putc(&g->lo, '}');
    store_sb_putc(&g->hi, '}');
    if (g->item.failed || g->prefix.failed || g->suffix.failed
        || g->width.failed || g->lo.failed || g->hi.failed) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

struct reserve_item {
    struct item_result res; /* first */
    const struct store_reserve *a;
    long long ticket; /* kept from a busy first try, else 0 */
    bool created;
};

/* Whether the comma-separated list of names list holds name. */
static bool differs_has(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list; p; p = strchr(p, ',')) {
        if (*p == ',')
            p++;
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* Set STORE_DIFFERS of resp to the names of the comma-separated list. */
static int differs_add(json_t *resp, const char *list, vnib_error_t *errp)
{
    json_t *arr = json_array();

    if (!arr || json_object_set_new(resp, STORE_DIFFERS, arr) < 0)
        goto nomem;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (json_array_append_new(arr, json_stringn(p, n)) < 0)
            goto nomem;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
nomem:
    errno = ENOMEM;
    return errprintf(errp, "out of memory");
}

/* The outcome of one row for its item. */
static void reserve_finish(struct store *s,
                           PGresult *r,
                           int row,
                           struct reserve_item *it)
{
    const char *outcome = store_col(r, row, ROW_OUTCOME);
    const char *detail = store_col(r, row, ROW_NCOLS);
    const struct store_reserve *a = it->a;
    vnib_error_t *errp = &it->res.error;

    it->res.rc = -1;
    if (!strcmp(outcome, "busy")) {
        it->res.busy = true;
        it->ticket = detail ? strtoll(detail, NULL, 10) : 0;
        return;
    }
    if (!strcmp(outcome, "exhausted")) {
        store_exhausted_error(errp, detail);
        it->res.err = ENOSPC;
        return;
    }
    if (!strcmp(outcome, "conflict")) {
        /* Another job under the same id, or another scheduler's: detail
         * names what differs (created_by, uid, nodes); the nodes come
         * last, where a long list may be cut.
         */
        it->res.err = EEXIST;
        errprintf(errp,
                  "job %s has an active reservation that is not this "
                  "request's (it differs in %s; made by %s, uid %s, nodes "
                  "%s)",
                  a->job_id,
                  detail ? detail : "its parameters",
                  store_col(r, row, ROW_CREATED_BY),
                  store_col(r, row, ROW_UID),
                  store_col(r, row, ROW_NODES));
        return;
    }
    if (!strcmp(outcome, "superseded")) {
        /* A retry of this request was answered while it waited, and the
         * job has a newer reservation (maybe released already): this one
         * must not make another.
         */
        it->res.err = EALREADY;
        errprintf(errp,
                  "job %s has a newer reservation (%s, %s) made while this "
                  "request waited; nothing was reserved",
                  a->job_id,
                  store_col(r, row, ROW_ID),
                  store_col(r, row, ROW_STATE));
        return;
    }
    it->created = !strcmp(outcome, "created");
    /* Created as asked, or existing (the job's, made by this actor for
     * these nodes), detail naming what else differs.  The row has no
     * presumed column: it is the request's, unless "lease" differs and
     * the request asked for none (a presumed reservation stays so; one
     * that was not became presumed when the request asked).
     */
    bool presumed = a->presumed || (detail && differs_has(detail, "lease"));
    if (store_result_row(s, r, row, &it->res.resp, errp) < 0
        || json_object_set_new(it->res.resp, "presumed", json_boolean(presumed))
               < 0
        || (!it->created && detail
            && differs_add(it->res.resp, detail, errp) < 0)
        || store_add_sealed(r, row, it->res.resp, errp) < 0) {
        it->res.err = errno ? errno : EIO;
        json_decref(it->res.resp);
        it->res.resp = NULL;
        return;
    }
    it->res.rc = 0;
}

/* Run items[0..n-1] (reserve_items) as one group; wait: take job locks
 * waiting.  A store_group_fn.
 */
static void reserve_group(struct store *s,
                          struct item_result **base,
                          size_t n,
                          bool wait)
{
    struct reserve_item **items = (struct reserve_item **)base;
    struct sbuf job = {0}, uid = {0}, user = {0}, nodes = {0}, ncount = {0},
                vcount = {0}, tcs = {0}, empty = {0}, actor = {0}, hmode = {0},
                hstate = {0}, hreason = {0}, fm = {0}, addrs = {0},
                ticket = {0}, presumed = {0}, lease = {0}, skew = {0},
                plo = {0}, phi = {0};
    struct sbuf *all[] = {&job,
                          &uid,
                          &user,
                          &nodes,
                          &ncount,
                          &vcount,
                          &tcs,
                          &empty,
                          &actor,
                          &hmode,
                          &hstate,
                          &hreason,
                          &fm,
                          &addrs,
                          &ticket,
                          &presumed,
                          &lease,
                          &skew};
    const size_t nall = sizeof(all) / sizeof(all[0]);
    struct store_ranges g;
    bool tickets = false;
    PGresult *r = NULL;

    store_ranges_open(&g);
    for (size_t i = 0; i < nall; i++)
        store_sb_putc(all[i], '{');
    for (size_t i = 0; i < n; i++) {
        const struct store_reserve *a = items[i]->a;
        store_sb_elem(&job, i, a->job_id);
        store_sb_elem_num(&uid, i, a->uid);
        store_sb_elem(&user, i, a->user);
        store_sb_elem(&nodes, i, a->nodes);
        store_sb_elem_num(&ncount, i, (long long)a->node_count);
        store_sb_elem_num(&vcount, i, a->vni_count);
        store_sb_elem_num(&tcs, i, a->tcs_mask);
        store_sb_elem(&empty, i, a->empty_reason);
        store_sb_elem(&actor, i, a->actor);
        store_sb_elem(&hmode, i, a->hwcoll_mode);
        store_sb_elem(&hstate, i, hwstate_name(a->hwcoll_state));
        store_sb_elem(&hreason, i, a->hwcoll_reason);
        store_sb_elem(&fm, i, a->fm_job_id);
        if (a->addrs_per_job > 0)
            store_sb_elem_num(&addrs, i, a->addrs_per_job);
        else
            store_sb_elem(&addrs, i, NULL);
        if (items[i]->ticket > 0) {
            store_sb_elem_num(&ticket, i, items[i]->ticket);
            tickets = true;
        } else
            store_sb_elem(&ticket, i, NULL);
        store_sb_elem(&presumed, i, a->presumed ? "true" : "false");
        if (a->lease_until > 0)
            store_sb_elem_num(&lease, i, a->lease_until);
        else
            store_sb_elem(&lease, i, NULL);
        store_sb_elem_num(&skew, i, a->lease_skew_s);
        store_ranges_add(&g, a->hosts, (int)i + 1);
    }
    bool failed = store_ranges_close(&g) < 0
                  || store_pool_arrays(items[0]->a->pool, &plo, &phi) < 0;
    if (!store_arrays_close(all, nall, failed, base, n))
        goto done;
    const char *params[27] = {
        job.data,
        uid.data,
        user.data,
        nodes.data,
        ncount.data,
        vcount.data,
        tcs.data,
        empty.data,
        actor.data,
        plo.data,
        phi.data,
        g.item.data,
        g.prefix.data,
        g.suffix.data,
        g.width.data,
        g.lo.data,
        g.hi.data,
        hmode.data,
        hstate.data,
        hreason.data,
        fm.data,
        addrs.data,
        tickets ? ticket.data : NULL,
        wait ? "true" : "false",
        presumed.data,
        lease.data,
        skew.data,
    };
    if (!(r = store_group_exec(
              s, STMT_RESERVE, params, base, n, wait, reserve_group)))
        goto done;
    for (size_t i = 0; i < n; i++)
        reserve_finish(s, r, (int)i, items[i]);
done:
    PQclear(r);
    store_ranges_free(&g);
    for (size_t i = 0; i < nall; i++)
        free(all[i]->data);
    free(plo.data);
    free(phi.data);
}

/* group_fits_f: one pool per group, each job once. */
bool store_reserve_fits(void *arg,
                        struct group_item *const *items,
                        size_t n,
                        const struct group_item *gi)
{
    const struct reserve_item *it = (const struct reserve_item *)gi;
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        const struct reserve_item *o = (const struct reserve_item *)items[i];
        if (o->a->pool != it->a->pool || !strcmp(o->a->job_id, it->a->job_id))
            return false;
    }
    return true;
}

void store_reserve_run(void *arg, struct group_item **items, size_t n)
{
    reserve_group(arg, (struct item_result **)items, n, false);
}

int store_reserve(struct store *s,
                  const struct store_reserve *a,
                  json_t **resp,
                  bool *createdp,
                  vnib_error_t *errp)
{
    struct reserve_item it = {.a = a};

    it.res.gi.deadline_ns = a->deadline_ns;
    if (store_item_submit(s, s->reserves, &it.res, reserve_group, errp) < 0)
        return -1;
    *createdp = it.created;
    *resp = it.res.resp;
    return 0;
}

int store_get(struct store *s,
              const char *job_id,
              const char *node,
              bool counts,
              json_t **resp,
              bool *memberp,
              vnib_error_t *errp)
{
    struct store_node_params np;
    const char *params[6] = {
        job_id, NULL, NULL, NULL, NULL, counts ? "true" : "false"};
    if (node)
        store_node_param_list(&np, node, params + 1);
    PGresult *r = store_run(s, STMT_RES_GET, params, errp);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        errno = ENOENT;
        return errprintf(errp, "no reservation for job %s", job_id);
    }
    *memberp = *store_col(r, 0, ROW_NCOLS) == 't';
    int rc = store_result_row(s, r, 0, resp, errp);
    const char *sealed = store_col(r, 0, ROW_SESSION_TOKEN);
    if (rc == 0 && sealed
        && json_object_set_new(*resp, STORE_SEALED_TOKEN, json_string(sealed))
               < 0)
        rc = errprintf(errp, "out of memory");
    PQclear(r);
    return rc;
}

int store_job_nodes(struct store *s,
                    const char *job_id,
                    size_t limit,
                    json_t **resp,
                    vnib_error_t *errp)
{
    const char *params[1] = {job_id};
    struct render_report *rep = NULL;
    size_t n = 0;
    int rc = -1;
    PGresult *r = store_run(s, STMT_JOB_REPORTS, params, errp);

    if (!r)
        return -1;
    int rows = PQntuples(r);
    if (rows == 0) {
        errno = ENOENT;
        errprintf(errp, "no reservation for job %s", job_id);
        goto cleanup;
    }
    if (!(rep = calloc((size_t)rows, sizeof(*rep)))) {
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < rows; i++) {
        if (PQgetisnull(r, i, 4))
            continue;
        rep[n].node = store_col(r, i, 4);
        rep[n].cxi = store_col(r, i, 5);
        rep[n].services = store_col(r, i, 6);
        rep[n].message = store_col(r, i, 7);
        rep[n].updated_at = store_col(r, i, 8);
        n++;
    }
    /* The stored list expands to its stored count, whatever
     * limits.hostlist_max_names says now.
     */
    if (!(*resp = render_job_nodes(job_id,
                                   store_col_ll(r, 0, 0),
                                   store_col(r, 0, 1),
                                   *store_col(r, 0, 9) == 't',
                                   store_col(r, 0, 2),
                                   rep,
                                   n,
                                   limit,
                                   (size_t)store_col_ll(r, 0, 3)))) {
        errprintf(errp,
                  errno == ENOMEM ? "out of memory"
                                  : "job %s's stored node list does not decode",
                  job_id);
        errno = errno == ENOMEM ? ENOMEM : EIO;
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(rep);
    PQclear(r);
    return rc;
}

int store_job_active_is(struct store *s,
                        const char *job_id,
                        long long resv_id,
                        bool *activep,
                        vnib_error_t *errp)
{
    struct store_num id;
    const char *params[2] = {job_id, store_num(&id, resv_id)};

    *activep = false;
    PGresult *r =
        store_run_one(s, STMT_JOB_ACTIVE_IS, params, "no answer", errp);
    if (!r)
        return -1;
    const char *v = store_col(r, 0, 0);
    *activep = v && *v == 't';
    PQclear(r);
    return 0;
}

int store_list(struct store *s,
               const struct store_list *q,
               json_t **pagep,
               vnib_error_t *errp)
{
    struct store_node_params np;
    struct store_num uid, after, limit;
    const char *params[8] = {q->state,
                             q->uid >= 0 ? store_num(&uid, q->uid) : NULL,
                             store_num(&after, q->after),
                             NULL,
                             NULL,
                             NULL,
                             NULL,
                             store_num(&limit, q->limit)};

    if (q->node)
        store_node_param_list(&np, q->node, params + 3);
    return store_run_page(s,
                          STMT_RES_LIST,
                          params,
                          store_row_json,
                          "reservations",
                          q->limit,
                          ROW_ID,
                          pagep,
                          errp);
}

struct release_item {
    struct item_result res; /* first */
    const char *job_id;
    long long reservation_id; /* 0: the one the job id means */
    const char *actor;
    bool force;
    bool done;
};

static void release_finish(struct store *s,
                           PGresult *r,
                           int row,
                           struct release_item *it)
{
    const char *outcome = store_col(r, row, ROW_OUTCOME);
    vnib_error_t *errp = &it->res.error;

    it->res.rc = -1;
    if (!strcmp(outcome, "busy")) {
        it->res.busy = true;
        return;
    }
    if (!strcmp(outcome, "not_found")) {
        it->res.err = ENOENT;
        if (it->reservation_id > 0)
            errprintf(errp,
                      "job %s has no reservation %lld",
                      it->job_id,
                      it->reservation_id);
        else
            errprintf(errp, "no reservation for job %s", it->job_id);
        return;
    }
    it->done =
        !strcmp(outcome, "released") || !strcmp(outcome, "already_released");
    if (store_result_row(s, r, row, &it->res.resp, errp) < 0) {
        it->res.err = errno ? errno : EIO;
        return;
    }
    it->res.rc = 0;
}

/* Run items[0..n-1] (release_items, sharing actor and force) as one
 * group.  A store_group_fn.
 */
static void release_group(struct store *s,
                          struct item_result **base,
                          size_t n,
                          bool wait)
{
    struct release_item **items = (struct release_item **)base;
    struct sbuf job = {0}, res = {0};
    PGresult *r = NULL;

    store_sb_putc(&job, '{');
    store_sb_putc(&res, '{');
    for (size_t i = 0; i < n; i++) {
        store_sb_elem(&job, i, items[i]->job_id);
        if (items[i]->reservation_id > 0)
            store_sb_elem_num(&res, i, items[i]->reservation_id);
        else
            store_sb_elem(&res, i, NULL);
    }
    struct sbuf *all[] = {&job, &res};
    if (!store_arrays_close(all, 2, false, base, n))
        goto done;
    const char *params[5] = {job.data,
                             res.data,
                             items[0]->actor,
                             items[0]->force ? "true" : "false",
                             wait ? "true" : "false"};
    if (!(r = store_group_exec(
              s, STMT_RELEASE, params, base, n, wait, release_group)))
        goto done;
    for (size_t i = 0; i < n; i++)
        release_finish(s, r, (int)i, items[i]);
done:
    PQclear(r);
    free(job.data);
    free(res.data);
}

/* group_fits_f: one actor and force per group, each job once. */
bool store_release_fits(void *arg,
                        struct group_item *const *items,
                        size_t n,
                        const struct group_item *gi)
{
    const struct release_item *it = (const struct release_item *)gi;
    const struct release_item *first = (const struct release_item *)items[0];
    (void)arg;
    if (first->force != it->force || strcmp(first->actor, it->actor))
        return false;
    for (size_t i = 0; i < n; i++) {
        const struct release_item *o = (const struct release_item *)items[i];
        if (!strcmp(o->job_id, it->job_id))
            return false;
    }
    return true;
}

void store_release_run(void *arg, struct group_item **items, size_t n)
{
    release_group(arg, (struct item_result **)items, n, false);
}

int store_release(struct store *s,
                  const char *job_id,
                  long long reservation_id,
                  const char *actor,
                  bool force,
                  json_t **resp,
                  bool *donep,
                  vnib_error_t *errp)
{
    struct release_item it = {.job_id = job_id,
                              .reservation_id = reservation_id,
                              .actor = actor,
                              .force = force};

    if (store_item_submit(s, s->releases, &it.res, release_group, errp) < 0)
        return -1;
    *donep = it.done;
    *resp = it.res.resp;
    return 0;
}
