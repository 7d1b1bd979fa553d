/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the store's files share besides the pool: reading a row
 * (columns, a reservation row to render_reservation(), a node's key as
 * parameters), the array literals that carry a group's parameters, and the
 * group commit of reserves, releases and FM answers (server/store/group.h):
 * running a group, failing it, and running its items alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/idset.h"
#include "vnib/monotime.h"
#include "server/store/store_int.h"

const char *store_col(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? NULL : PQgetvalue(r, row, c);
}

long long store_col_ll(const PGresult *r, int row, int c)
{
    const char *v = store_col(r, row, c);
    return v ? strtoll(v, NULL, 10) : 0;
}

/* One field's value; NULL when it cannot be made. */
static json_t *field_json(const PGresult *r,
                          int row,
                          const struct store_field *f)
{
    const char *v = store_col(r, row, f->col);

    switch (f->type) {
        case STORE_FIELD_INT:
            return json_integer(store_col_ll(r, row, f->col));
        case STORE_FIELD_INT_OR_NULL:
            return v ? json_integer(strtoll(v, NULL, 10)) : json_null();
        case STORE_FIELD_TEXT:
            return v ? json_string(v) : NULL;
        case STORE_FIELD_TEXT_OR_NULL:
            return v ? json_string(v) : json_null();
        case STORE_FIELD_BOOL:
            return json_boolean(v && *v == 't');
        case STORE_FIELD_REAL:
            return json_real(v ? strtod(v, NULL) : 0);
    }
    return NULL;
}

json_t *store_row_object(const PGresult *r,
                         int row,
                         const struct store_field *fields,
                         size_t n)
{
    json_t *o = json_object();

    for (size_t k = 0; o && k < n; k++) {
        /* set_new takes the value, also when it fails. */
        json_t *v = field_json(r, row, &fields[k]);
        if (!v || json_object_set_new(o, fields[k].key, v) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

void store_row_fields(const PGresult *r, int row, struct render_row *f)
{
    f->id = store_col(r, row, ROW_ID);
    f->job_id = store_col(r, row, ROW_JOB_ID);
    f->state = store_col(r, row, ROW_STATE);
    f->uid = store_col(r, row, ROW_UID);
    f->user = store_col(r, row, ROW_USER);
    f->nodes = store_col(r, row, ROW_NODES);
    f->node_count = store_col(r, row, ROW_NODE_COUNT);
    f->vni_count = store_col(r, row, ROW_VNI_COUNT);
    f->vnis = store_col(r, row, ROW_VNIS);
    f->empty_reason = store_col(r, row, ROW_EMPTY_REASON);
    f->tcs_mask = store_col(r, row, ROW_TCS_MASK);
    f->created_at = store_col(r, row, ROW_CREATED_AT);
    f->created_by = store_col(r, row, ROW_CREATED_BY);
    f->release_requested_at = store_col(r, row, ROW_RELEASE_REQUESTED_AT);
    f->released_at = store_col(r, row, ROW_RELEASED_AT);
    f->released_by = store_col(r, row, ROW_RELEASED_BY);
    f->forced = store_col(r, row, ROW_FORCED);
    f->counts = store_col(r, row, ROW_COUNTS);
    f->hwcoll_mode = store_col(r, row, ROW_HWCOLL_MODE);
    f->hwcoll_state = store_col(r, row, ROW_HWCOLL_STATE);
    f->hwcoll_reason = store_col(r, row, ROW_HWCOLL_REASON);
    f->fm_job_id = store_col(r, row, ROW_FM_JOB_ID);
    f->addrs_per_job = store_col(r, row, ROW_ADDRS_PER_JOB);
    /* Whether it is presumed (schema/0021), when the query reads it: the
     * column of that name (store_sql.c).
     */
    int pr = PQfnumber(r, "presumed");
    f->presumed = pr >= 0 ? store_col(r, row, pr) : NULL;
    /* A step's job (schema/0017), when the query reads it: the columns
     * from parent_id on, in PARENT_COLS' order (store_sql.c).
     */
    int pc = PQfnumber(r, "parent_id");
    bool known = pc >= 0 && pc + 6 < PQnfields(r) && !PQgetisnull(r, row, pc);
    f->parent_vnis = known ? store_col(r, row, pc + 1) : NULL;
    f->parent_hwcoll_mode = known ? store_col(r, row, pc + 2) : NULL;
    f->parent_hwcoll_state = known ? store_col(r, row, pc + 3) : NULL;
    f->parent_hwcoll_reason = known ? store_col(r, row, pc + 4) : NULL;
    f->parent_fm_job_id = known ? store_col(r, row, pc + 5) : NULL;
    f->parent_addrs_per_job = known ? store_col(r, row, pc + 6) : NULL;
}

json_t *store_row_json(const struct config *cfg, const PGresult *r, int row)
{
    struct render_row f;

    store_row_fields(r, row, &f);
    return render_reservation(cfg, &f);
}

/* store_run_list, keeping the result in *rp for the caller to clear. */
static int run_rows(struct store *s,
                    enum stmt_id id,
                    const char *const *params,
                    store_row_fn fn,
                    json_t **listp,
                    PGresult **rp,
                    vnib_error_t *errp)
{
    PGresult *r = store_run(s, id, params, errp);
    json_t *list = NULL;

    if (!r)
        return -1;
    if (!(list = json_array()))
        goto nomem;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *o = fn(s->cfg, r, i);
        if (!o || json_array_append_new(list, o) < 0)
            goto nomem;
    }
    *listp = list;
    *rp = r;
    return 0;
nomem:
    PQclear(r);
    json_decref(list);
    errno = ENOMEM;
    return errprintf(errp, "out of memory");
}

int store_run_list(struct store *s,
                   enum stmt_id id,
                   const char *const *params,
                   store_row_fn fn,
                   json_t **listp,
                   vnib_error_t *errp)
{
    PGresult *r = NULL;

    if (run_rows(s, id, params, fn, listp, &r, errp) < 0)
        return -1;
    PQclear(r);
    return 0;
}

int store_run_page(struct store *s,
                   enum stmt_id id,
                   const char *const *params,
                   store_row_fn fn,
                   const char *key,
                   int limit,
                   int next_col,
                   json_t **pagep,
                   vnib_error_t *errp)
{
    PGresult *r = NULL;
    json_t *list = NULL;

    if (run_rows(s, id, params, fn, &list, &r, errp) < 0)
        return -1;
    /* A full page may have more behind it. */
    int n = PQntuples(r);
    *pagep = render_page(
        key, list, n == limit ? store_col(r, n - 1, next_col) : NULL);
    PQclear(r);
    if (!*pagep)
        return errprintf(errp, "out of memory");
    return 0;
}

int store_result_row(
    struct store *s, PGresult *r, int row, json_t **resp, vnib_error_t *errp)
{
    if (!(*resp = store_row_json(s->cfg, r, row))) {
        errno = EIO;
        return store_db_error(
            errp, STORE_MSG_ERROR, "no reservation in the reply");
    }
    return 0;
}

int store_add_sealed(PGresult *r, int row, json_t *res, vnib_error_t *errp)
{
    const char *sealed = store_col(r, row, ROW_SESSION_TOKEN);
    if (sealed
        && json_object_set_new(res, STORE_SEALED_TOKEN, json_string(sealed))
               < 0)
        return errprintf(errp, "out of memory");
    return 0;
}

void store_node_params(struct store_node_params *np, const char *node)
{
    struct hostlist_key k;
    hostlist_name_key(node, &k);
    snprintf(np->prefix, sizeof(np->prefix), "%.*s", (int)k.prefix_len, node);
    np->suffix = k.suffix;
    snprintf(np->width, sizeof(np->width), "%d", k.width);
    snprintf(np->num, sizeof(np->num), "%llu", (unsigned long long)k.num);
}

void store_node_param_list(struct store_node_params *np,
                           const char *node,
                           const char **params)
{
    store_node_params(np, node);
    params[0] = np->prefix;
    params[1] = np->suffix;
    params[2] = np->width;
    params[3] = np->num;
}

void store_sb_putc(struct sbuf *b, char c)
{
    if (b->failed)
        return;
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void store_sb_puts(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        store_sb_putc(b, s[i]);
}

void store_sb_quoted(struct sbuf *b, const char *s, size_t n)
{
    store_sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            store_sb_putc(b, '\\');
        store_sb_putc(b, s[i]);
    }
    store_sb_putc(b, '"');
}

const char *store_num(struct store_num *n, long long v)
{
    snprintf(n->text, sizeof(n->text), "%lld", v);
    return n->text;
}

void store_sb_num(struct sbuf *b, long long v)
{
    struct store_num n;
    const char *t = store_num(&n, v);
    store_sb_puts(b, t, strlen(t));
}

void store_sb_elem(struct sbuf *b, size_t i, const char *v)
{
    if (i > 0)
        store_sb_putc(b, ',');
    if (v)
        store_sb_quoted(b, v, strlen(v));
    else
        store_sb_puts(b, "NULL", 4);
}

/* Append one element to a numeric array literal. */
void store_sb_elem_num(struct sbuf *b, size_t i, long long v)
{
    if (i > 0)
        store_sb_putc(b, ',');
    store_sb_num(b, v);
}

/* The pool as two array literals of range bounds. */
int store_pool_arrays(const struct idset *pool,
                      struct sbuf *lo,
                      struct sbuf *hi)
{
    size_t n = idset_range_count(pool);
    memset(lo, 0, sizeof(*lo));
    memset(hi, 0, sizeof(*hi));
    store_sb_putc(lo, '{');
    store_sb_putc(hi, '{');
    for (size_t i = 0; i < n; i++) {
        uint32_t l, h;
        (void)idset_range(pool, i, &l, &h);
        if (i > 0) {
            store_sb_putc(lo, ',');
            store_sb_putc(hi, ',');
        }
        store_sb_num(lo, l);
        store_sb_num(hi, h);
    }
    store_sb_putc(lo, '}');
    store_sb_putc(hi, '}');
    if (lo->failed || hi->failed) {
        free(lo->data);
        free(hi->data);
        lo->data = hi->data = NULL;
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* May one item have failed its whole group with this errno?  A bad value
 * or an unexpected database error may; a database that is down, slow or
 * gone (EAGAIN, ETIMEDOUT, ESTALE) fails every item alike, and running
 * them again one by one would only make each wait its own timeout.
 */
static bool item_may_fail_group(int e)
{
    return e != EAGAIN && e != ETIMEDOUT && e != ESTALE && e != EDQUOT;
}

/* Fail an item with errno err and the group's message (mark included). */
static void item_fail(struct item_result *ir, int err, const vnib_error_t *why)
{
    ir->rc = -1;
    ir->err = err;
    ir->error = *why;
}

/* A group's statement failed with errno e and message why: store_run each
 * item alone when one of them may be the cause, else fail them all.
 */
static void group_failed(struct store *s,
                         struct item_result **items,
                         size_t n,
                         bool wait,
                         int e,
                         const vnib_error_t *why,
                         store_group_fn fn)
{
    if (n > 1 && item_may_fail_group(e)) {
        for (size_t i = 0; i < n; i++)
            fn(s, &items[i], 1, wait);
    } else {
        for (size_t i = 0; i < n; i++)
            item_fail(items[i], e, why);
    }
}

bool store_arrays_close(struct sbuf *const *all,
                        size_t nall,
                        bool failed,
                        struct item_result **base,
                        size_t n)
{
    vnib_error_t nomem = {0};

    for (size_t i = 0; i < nall; i++) {
        store_sb_putc(all[i], '}');
        failed = failed || all[i]->failed;
    }
    errprintf(&nomem, "out of memory");
    for (size_t i = 0; failed && i < n; i++)
        item_fail(base[i], ENOMEM, &nomem);
    return !failed;
}

PGresult *store_group_exec(struct store *s,
                           enum stmt_id id,
                           const char *const *params,
                           struct item_result **base,
                           size_t n,
                           bool wait,
                           store_group_fn fn)
{
    vnib_error_t err = {0};
    PGresult *r = store_run(s, id, params, &err);

    if (r && PQntuples(r) != (int)n) {
        PQclear(r);
        r = NULL;
        errno = EIO;
        store_db_error(&err, STORE_MSG_ERROR, "unexpected reply");
    }
    if (!r)
        group_failed(s, base, n, wait, errno, &err, fn);
    return r;
}

int store_item_submit(struct store *s,
                      struct group *g,
                      struct item_result *it,
                      store_group_fn fn,
                      vnib_error_t *errp)
{
    struct item_result *one = it;

    if (g)
        group_submit(g, &it->gi);
    else if (it->gi.deadline_ns > 0 && monotime_ns() > it->gi.deadline_ns)
        it->gi.expired = true;
    else
        fn(s, &one, 1, true);
    if (it->gi.expired) {
        errno = ECANCELED;
        return errprintf(errp,
                         "the request's deadline passed while it waited "
                         "to be written; nothing was done");
    }
    if (it->busy) {
        it->busy = false;
        fn(s, &one, 1, true);
    }
    if (it->rc < 0 || it->busy) {
        errno = it->busy ? EIO : it->err;
        return vnib_error_copy(errp, &it->error);
    }
    return 0;
}
