/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Nodes in the store: an agent's report on a job's CXI services, a
 * node's view (its live reservations, its reports, its drain mark), and
 * undrain.  Reports are written in groups (group.h) by threads of their
 * own: a report posted (store_report_post) waits for its group on no
 * request's thread, and its outcome goes to its callback; store_report
 * writes one alone, on the caller's thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/store_int.h"

/* A report in a group: a copy of the request's fields (all in buf), its
 * outcome, and for a posted one whom to tell.
 */
struct report_item {
    struct item_result res; /* first */
    struct store_report a;
    enum store_report_refusal refusal;
    store_report_done_f done; /* posted; NULL: run alone, waited for */
    void *arg;
    struct store_node_params np;
    char *buf; /* a's strings */
};

/* The refusal of an outcome, with its message into errp and errno; or
 * STORE_REPORT_ACCEPTED for "ok".
 */
static enum store_report_refusal report_refusal(const struct store_report *a,
                                                const char *outcome,
                                                const char *prev,
                                                vnib_error_t *errp)
{
    char what[256];

    if (a->step_id)
        snprintf(
            what, sizeof(what), "step %s of job %s", a->step_id, a->job_id);
    else
        snprintf(what, sizeof(what), "job %s", a->job_id);
    if (!strcmp(outcome, "not_found")) {
        errno = ENOENT;
        errprintf(errp, "no reservation for %s", what);
        return STORE_REPORT_NOT_FOUND;
    }
    if (!strcmp(outcome, "not_member")) {
        errno = EPERM;
        errprintf(errp, "node %s is not in %s's node list", a->node, what);
        return STORE_REPORT_NOT_MEMBER;
    }
    if (!strcmp(outcome, "stale_reservation")) {
        errno = EEXIST;
        errprintf(errp,
                  "reservation %lld is not %s's current one; fetch the "
                  "job again",
                  a->reservation_id,
                  what);
        return STORE_REPORT_STALE_RESERVATION;
    }
    if (!strcmp(outcome, "invalid_transition")) {
        errno = EEXIST;
        errprintf(errp,
                  "node %s already reported %s for %s; %s would go "
                  "backwards",
                  a->node,
                  prev ? prev : "?",
                  what,
                  a->cxi);
        return STORE_REPORT_INVALID_TRANSITION;
    }
    if (!strcmp(outcome, "job_not_active")) {
        errno = EEXIST;
        errprintf(errp,
                  "%s is being released; '%s' is no longer "
                  "accepted",
                  what,
                  a->cxi);
        return STORE_REPORT_JOB_NOT_ACTIVE;
    }
    return STORE_REPORT_ACCEPTED;
}

/* The outcome of one row for its item. */
static void report_finish(struct store *s,
                          PGresult *r,
                          int row,
                          struct report_item *it)
{
    vnib_error_t *errp = &it->res.error;
    const char *outcome = store_col(r, row, ROW_OUTCOME);

    it->res.rc = -1;
    it->refusal = report_refusal(
        &it->a, outcome ? outcome : "", store_col(r, row, ROW_COUNTS), errp);
    if (it->refusal != STORE_REPORT_ACCEPTED) {
        it->res.err = errno;
        return;
    }
    if (!outcome || strcmp(outcome, "ok")) {
        it->res.err = errno = EIO;
        store_db_error(errp,
                       STORE_MSG_ERROR,
                       "unexpected report outcome '%s'",
                       outcome ? outcome : "(null)");
        return;
    }
    if (store_result_row(s, r, row, &it->res.resp, errp) < 0) {
        it->res.err = errno ? errno : EIO;
        return;
    }
    it->res.rc = 0;
}

/* Run items[0..n-1] (report_items) as one group: one call of
 * vnib_report_batch.  A store_group_fn (reports take no job lock, so
 * wait does not matter).
 */
static void report_group(struct store *s,
                         struct item_result **base,
                         size_t n,
                         bool wait)
{
    struct report_item **items = (struct report_item **)base;
    struct sbuf job = {0}, step = {0}, node = {0}, cxi = {0}, svc = {0},
                msg = {0}, actor = {0}, prefix = {0}, suffix = {0}, width = {0},
                num = {0}, res = {0};
    struct sbuf *all[] = {&job,
                          &step,
                          &node,
                          &cxi,
                          &svc,
                          &msg,
                          &actor,
                          &prefix,
                          &suffix,
                          &width,
                          &num,
                          &res};
    const size_t nall = sizeof(all) / sizeof(all[0]);
    PGresult *r = NULL;

    (void)wait;
    for (size_t i = 0; i < nall; i++)
        store_sb_putc(all[i], '{');
    for (size_t i = 0; i < n; i++) {
        const struct store_report *a = &items[i]->a;
        const struct store_node_params *np = &items[i]->np;
        store_sb_elem(&job, i, a->job_id);
        store_sb_elem(&step, i, a->step_id);
        store_sb_elem(&node, i, a->node);
        store_sb_elem(&cxi, i, a->cxi);
        store_sb_elem(&svc, i, a->services);
        store_sb_elem(&msg, i, a->message);
        store_sb_elem(&actor, i, a->actor);
        store_sb_elem(&prefix, i, np->prefix);
        store_sb_elem(&suffix, i, np->suffix);
        store_sb_elem(&width, i, np->width);
        store_sb_elem(&num, i, np->num);
        if (a->reservation_id > 0)
            store_sb_elem_num(&res, i, a->reservation_id);
        else
            store_sb_elem(&res, i, NULL);
    }
    if (!store_arrays_close(all, nall, false, base, n))
        goto done;
    const char *params[12];
    for (size_t i = 0; i < nall; i++)
        params[i] = all[i]->data;
    if (!(r = store_group_exec(
              s, STMT_REPORT_BATCH, params, base, n, true, report_group)))
        goto done;
    for (size_t i = 0; i < n; i++)
        report_finish(s, r, (int)i, items[i]);
done:
    PQclear(r);
    for (size_t i = 0; i < nall; i++)
        free(all[i]->data);
}

/* group_fits_f: one report of each node of a job (or step) per group; a
 * second waits for the next group, so that a node's reports keep their
 * order.
 */
bool store_report_fits(void *arg,
                       struct group_item *const *items,
                       size_t n,
                       const struct group_item *gi)
{
    const struct report_item *it = (const struct report_item *)gi;
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        const struct report_item *o = (const struct report_item *)items[i];
        if (!strcmp(o->a.node, it->a.node) && !strcmp(o->a.job_id, it->a.job_id)
            && !o->a.step_id == !it->a.step_id
            && (!o->a.step_id || !strcmp(o->a.step_id, it->a.step_id)))
            return false;
    }
    return true;
}

void store_report_run(void *arg, struct group_item **items, size_t n)
{
    report_group(arg, (struct item_result **)items, n, true);
}

/* Copy a's strings into it->buf and point it->a at them.  -1 (ENOMEM). */
static int report_item_init(struct report_item *it,
                            const struct store_report *a)
{
    const char *src[] = {a->job_id,
                         a->node,
                         a->cxi,
                         a->services,
                         a->message,
                         a->actor,
                         a->step_id};
    const char **dst[] = {&it->a.job_id,
                          &it->a.node,
                          &it->a.cxi,
                          &it->a.services,
                          &it->a.message,
                          &it->a.actor,
                          &it->a.step_id};
    size_t len = 0;

    it->a = *a;
    for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
        len += src[i] ? strlen(src[i]) + 1 : 0;
    if (!(it->buf = malloc(len ? len : 1))) {
        errno = ENOMEM;
        return -1;
    }
    char *p = it->buf;
    for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
        if (!src[i]) {
            *dst[i] = NULL;
            continue;
        }
        size_t n = strlen(src[i]) + 1;
        memcpy(p, src[i], n);
        *dst[i] = p;
        p += n;
    }
    store_node_params(&it->np, it->a.node);
    return 0;
}

/* The outcome of a report, as store_report gives it: 0 with *resp, or -1
 * with errno, errp and *refusalp.
 */
static int report_outcome(struct report_item *it,
                          json_t **resp,
                          enum store_report_refusal *refusalp,
                          vnib_error_t *errp)
{
    *refusalp = it->refusal;
    if (it->res.gi.expired) {
        errno = ECANCELED;
        return errprintf(errp,
                         "the request's deadline passed while it waited "
                         "to be written; nothing was done");
    }
    if (it->res.rc < 0) {
        errno = it->res.err ? it->res.err : EIO;
        return vnib_error_copy(errp, &it->res.error);
    }
    *resp = it->res.resp;
    it->res.resp = NULL;
    return 0;
}

/* group_item's on_done of a posted report: tell its caller, free it. */
static void report_posted_done(struct group_item *gi)
{
    struct report_item *it = (struct report_item *)gi;
    enum store_report_refusal refusal = STORE_REPORT_ACCEPTED;
    vnib_error_t error = {0};
    json_t *resp = NULL;
    int rc = report_outcome(it, &resp, &refusal, &error);
    int e = rc < 0 ? errno : 0;

    it->done(it->arg, rc, resp, refusal, e, &error);
    free(it->buf);
    free(it);
}

bool store_reports_grouped(const struct store *s)
{
    return s->reports != NULL;
}

int store_report_post(struct store *s,
                      const struct store_report *a,
                      int64_t deadline_ns,
                      store_report_done_f done,
                      void *arg,
                      vnib_error_t *errp)
{
    struct report_item *it = calloc(1, sizeof(*it));

    if (!it || report_item_init(it, a) < 0) {
        free(it);
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    it->done = done;
    it->arg = arg;
    it->res.gi.deadline_ns = deadline_ns;
    it->res.gi.on_done = report_posted_done;
    if (!s->reports) {
        errno = EINVAL;
    } else if (group_post(s->reports, &it->res.gi) == 0) {
        return 0;
    }
    int e = errno;
    free(it->buf);
    free(it);
    errno = e;
    return errprintf(errp,
                     e == ESHUTDOWN ? "the broker is shutting down"
                                    : "node reports are not written in "
                                      "groups here");
}

int store_report(struct store *s,
                 const struct store_report *a,
                 json_t **resp,
                 enum store_report_refusal *refusalp,
                 vnib_error_t *errp)
{
    struct report_item it = {0};
    struct item_result *one = &it.res;
    int rc;

    *refusalp = STORE_REPORT_ACCEPTED;
    if (report_item_init(&it, a) < 0)
        return errprintf(errp, "out of memory");
    report_group(s, &one, 1, true);
    rc = report_outcome(&it, resp, refusalp, errp);
    json_decref(it.res.resp);
    free(it.buf);
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
