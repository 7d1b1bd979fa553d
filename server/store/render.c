/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The client's JSON for what the store reads (see render.h): the shape of
 * a reservation, its hardware-collectives object and job environment, a
 * node's view, the pool, a VNI, an audit event and a page.  Only the
 * shapes live here; the store reads the rows and the handlers reply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/fmclient.h"
#include "vnib/hostlist.h"
#include "vnib/idset.h"
#include "vnib/tclass.h"
#include "server/store/render.h"

static json_t *str_or_null(const char *v)
{
    return v ? json_string(v) : json_null();
}

static long long num(const char *v)
{
    return v ? strtoll(v, NULL, 10) : 0;
}

/* Traffic class names of a mask, in enum order. */
static json_t *tclass_names(unsigned mask)
{
    json_t *a = json_array();
    for (unsigned bit = 1; a && bit <= TCLASS_ALL; bit <<= 1)
        if ((mask & bit) && tclass_name(bit))
            json_array_append_new(a, json_string(tclass_name(bit)));
    return a;
}

/* The "hwcoll" and "environment" objects of a reservation.  The session
 * token is never part of them here: only callers allowed to see it add it.
 */
static int render_hwcoll(const struct config *cfg,
                         const struct render_row *f,
                         json_t *o,
                         const char *tcs,
                         const char *step)
{
    const char *state = f->hwcoll_state;
    const char *reason = f->hwcoll_reason;
    const char *fm_job_id = f->fm_job_id;
    const char *addrs = f->addrs_per_job;
    char url[1024] = "";
    json_t *h, *env;

    if (cfg->hwcoll.fm_url[0])
        fmc_multicasts_url(cfg->hwcoll.fm_url, url, sizeof(url));
    if (!(h = json_pack("{s:s, s:s, s:I}",
                        "state",
                        state ? state : "disabled",
                        "mode",
                        f->hwcoll_mode,
                        "min_nodes",
                        (json_int_t)cfg->hwcoll.min_nodes)))
        return -1;
    /* json_object_set_new() takes its value even when it fails, so only h
     * is ours to drop here, and only until o has taken it.
     */
    if ((reason && json_object_set_new(h, "reason", json_string(reason)) < 0)
        || (fm_job_id
            && json_object_set_new(h, "fm_job_id", json_string(fm_job_id)) < 0)
        || (addrs
            && json_object_set_new(
                   h, "addrs_per_job", json_integer(strtol(addrs, NULL, 10)))
                   < 0)
        || (url[0]
            && json_object_set_new(h, "fabric_manager_url", json_string(url))
                   < 0)) {
        json_decref(h);
        return -1;
    }
    if (json_object_set_new(o, "hwcoll", h) < 0)
        return -1;
    if (!(env = json_pack("{s:s, s:s}",
                          "SLINGSHOT_VNIS",
                          f->vnis ? f->vnis : "",
                          "SLINGSHOT_TCS",
                          tcs)))
        return -1;
    if (state && !strcmp(state, "reserved") && fm_job_id && addrs) {
        char n[24];
        snprintf(n, sizeof(n), "%ld", cfg->hwcoll.min_nodes);
        if (json_object_set_new(
                env, "FI_CXI_COLL_JOB_ID", json_string(fm_job_id))
                < 0
            || json_object_set_new(
                   env, "FI_CXI_COLL_FABRIC_MGR_URL", json_string(url))
                   < 0
            || json_object_set_new(
                   env, "FI_CXI_HWCOLL_ADDRS_PER_JOB", json_string(addrs))
                   < 0
            || json_object_set_new(
                   env, "FI_CXI_HWCOLL_MIN_NODES", json_string(n))
                   < 0
            || (step
                && json_object_set_new(
                       env, "FI_CXI_COLL_JOB_STEP_ID", json_string(step))
                       < 0)) {
            json_decref(env);
            return -1;
        }
    }
    return json_object_set_new(o, "environment", env);
}

/* VNIs as array_to_string gives them ("1024,1025"), as a JSON array. */
static json_t *vni_array(const char *v)
{
    json_t *a = json_array();

    for (const char *p = v ? v : ""; a && *p;) {
        char *end;
        long n = strtol(p, &end, 10);
        if (json_array_append_new(a, json_integer(n)) < 0) {
            json_decref(a);
            return NULL;
        }
        p = *end == ',' ? end + 1 : end + strlen(end);
    }
    return a;
}

/* A step's fields (job_id "<job>#<step>", schema/0017): "job_id" and
 * "step_id" apart and "job_vnis".  *h becomes the row whose hwcoll object
 * and environment the step shows: its job's multicast reservation, and
 * its own VNIs followed by its job's (both, of at least 64 bytes, holds
 * them).
 */
static int render_step(const struct render_row *f,
                       const char *hash,
                       json_t *o,
                       struct render_row *h,
                       char *both,
                       size_t size)
{
    const char *own = f->vnis ? f->vnis : "";
    const char *job = f->parent_vnis ? f->parent_vnis : "";

    if (json_object_set_new(
            o, "job_id", json_stringn(f->job_id, (size_t)(hash - f->job_id)))
            < 0
        || json_object_set_new(o, "step_id", json_string(hash + 1)) < 0
        || json_object_set_new(o, "job_vnis", vni_array(f->parent_vnis)) < 0)
        return -1;
    if (f->parent_hwcoll_mode) {
        h->hwcoll_mode = f->parent_hwcoll_mode;
        h->hwcoll_state = f->parent_hwcoll_state;
        h->hwcoll_reason = f->parent_hwcoll_reason;
        h->fm_job_id = f->parent_fm_job_id;
        h->addrs_per_job = f->parent_addrs_per_job;
    }
    snprintf(both, size, "%s%s%s", own, *own && *job ? "," : "", job);
    h->vnis = both;
    return 0;
}

json_t *render_reservation(const struct config *cfg, const struct render_row *f)
{
    json_t *o = json_object();
    json_t *vnis = vni_array(f->vnis);
    const char *hash = f->job_id ? strchr(f->job_id, '#') : NULL;
    struct render_row h = *f;
    char both[128];
    char tcs[16];
    const char *v;

    if (!o || !vnis)
        goto nomem;
    unsigned mask = (unsigned)num(f->tcs_mask);
    tclass_mask_hex(mask, tcs, sizeof(tcs));
    const char *state = f->state;
    if (!state)
        goto nomem; /* not a reservation row */
    /* clang-format off */
    if (json_object_set_new(o, "id", json_integer(num(f->id))) < 0
        || json_object_set_new(o, "job_id", json_string(f->job_id)) < 0
        || json_object_set_new(o, "state", json_string(state)) < 0
        || json_object_set_new(o, "uid", json_integer(num(f->uid))) < 0
        || json_object_set_new(o, "user", json_string(f->user)) < 0
        || json_object_set_new(o, "nodes", json_string(f->nodes)) < 0
        || json_object_set_new(o, "node_count",
                               json_integer(num(f->node_count))) < 0
        || json_object_set_new(o, "vni_count",
                               json_integer(num(f->vni_count))) < 0
        || json_object_set_new(o, "vnis", json_incref(vnis)) < 0
        || json_object_set_new(o, "traffic_classes", tclass_names(mask)) < 0
        || json_object_set_new(o, "tcs_mask", json_string(tcs)) < 0
        || json_object_set_new(o, "quarantined",
                               json_boolean(!strcmp(state, "releasing"))) < 0
        || json_object_set_new(o, "created_at",
                               str_or_null(f->created_at)) < 0
        || json_object_set_new(o, "created_by",
                               str_or_null(f->created_by)) < 0
        || json_object_set_new(o, "release_requested_at",
                               str_or_null(f->release_requested_at)) < 0
        || json_object_set_new(o, "released_at",
                               str_or_null(f->released_at)) < 0
        || json_object_set_new(o, "released_by",
                               str_or_null(f->released_by)) < 0
        || json_object_set_new(o, "forced",
                               json_boolean(*f->forced == 't')) < 0
        || json_object_set_new(o, "presumed",
                               json_boolean(f->presumed
                                            && *f->presumed == 't')) < 0)
        goto nomem;
    /* clang-format on */
    if (json_array_size(vnis) == 0
        && json_object_set_new(o, "empty_reason", str_or_null(f->empty_reason))
               < 0)
        goto nomem;
    if (hash && render_step(f, hash, o, &h, both, sizeof(both)) < 0)
        goto nomem;
    if (render_hwcoll(cfg, &h, o, tcs, hash ? hash + 1 : NULL) < 0)
        goto nomem;
    if ((v = f->counts)) {
        long long creating, created, destroyed, failed;
        if (sscanf(v,
                   "%lld,%lld,%lld,%lld",
                   &creating,
                   &created,
                   &destroyed,
                   &failed)
            == 4) {
            long long pending =
                num(f->node_count) - creating - created - destroyed - failed;
            json_t *c = json_pack("{s:I, s:I, s:I, s:I, s:I}",
                                  "pending",
                                  (json_int_t)(pending > 0 ? pending : 0),
                                  "creating",
                                  (json_int_t)creating,
                                  "created",
                                  (json_int_t)created,
                                  "destroyed",
                                  (json_int_t)destroyed,
                                  "failed",
                                  (json_int_t)failed);
            if (!c || json_object_set_new(o, "cleanup", c) < 0)
                goto nomem;
        }
    }
    json_decref(vnis);
    return o;
nomem:
    json_decref(vnis);
    json_decref(o);
    errno = ENOMEM;
    return NULL;
}

/* Every value handed to json_object_set_new(), json_array_append_new() or
 * json_pack()'s "o" is the container's from then on, even when the call
 * fails, so each is dropped here only while it is still ours.
 */
json_t *render_node_view(const struct config *cfg,
                         const char *node,
                         const struct render_node_entry *e,
                         size_t n,
                         bool drained,
                         const char *drained_reason,
                         const char *drained_at)
{
    json_t *list = json_array(), *o;
    int holding = 0;

    if (!list)
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        json_t *res = render_reservation(cfg, &e[i].res);
        const char *cxi = e[i].cxi;
        json_t *services = json_loads(e[i].services, 0, NULL);
        /* Anything but a confirmed destroy may leave a service behind,
         * and so may a presumed reservation's node that has not reported
         * (cxi pending).
         */
        bool needed = strcmp(cxi, "destroyed") != 0 && strcmp(cxi, "none") != 0;
        if (!res) {
            json_decref(services);
            goto nomem;
        }
        int set_cxi = json_object_set_new(res, "cxi", json_string(cxi));
        int set_services = json_object_set_new(
            res, "services", services ? services : json_array());
        if (set_cxi < 0 || set_services < 0
            || json_object_set_new(res, "cleanup_needed", json_boolean(needed))
                   < 0) {
            json_decref(res);
            goto nomem;
        }
        if (json_array_append_new(list, res) < 0)
            goto nomem;
        holding += needed;
    }
    o = json_pack("{s:s, s:b, s:o, s:o, s:i, s:o}",
                  "node",
                  node,
                  "drained",
                  drained,
                  "drained_reason",
                  str_or_null(drained ? drained_reason : NULL),
                  "drained_at",
                  str_or_null(drained ? drained_at : NULL),
                  "cleanup_needed",
                  holding,
                  "reservations",
                  list);
    list = NULL; /* json_pack()'s "o" took it, even on failure */
    if (!o)
        goto nomem;
    return o;
nomem:
    json_decref(list);
    errno = ENOMEM;
    return NULL;
}

/* The states of GET /v1/reservations/{job_id}/nodes, "pending" first. */
static const char *const report_states[] = {
    "pending", "creating", "created", "destroyed", "failed"};
#define NSTATES (sizeof(report_states) / sizeof(report_states[0]))

static size_t report_state(const char *cxi)
{
    for (size_t i = 1; i < NSTATES; i++)
        if (!strcmp(cxi, report_states[i]))
            return i;
    return 0;
}

/* {"pending": {"count": N, "nodes": "hostlist"}, ...} of the lists. */
static json_t *render_states(struct hostlist *const by[NSTATES])
{
    json_t *o = json_object();

    for (size_t i = 0; o && i < NSTATES; i++) {
        char *expr = hostlist_encode(by[i]);
        json_t *one = expr ? json_pack("{s:I, s:s}",
                                       "count",
                                       (json_int_t)hostlist_count(by[i]),
                                       "nodes",
                                       expr)
                           : NULL;
        free(expr);
        if (!one || json_object_set_new(o, report_states[i], one) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

static json_t *render_report_list(const struct render_report *r,
                                  size_t n,
                                  size_t limit)
{
    json_t *list = json_array();

    for (size_t i = 0; list && i < n && i < limit; i++) {
        json_t *services = json_loads(r[i].services, 0, NULL);
        json_t *one = json_pack("{s:s, s:s, s:o, s:o, s:o}",
                                "node",
                                r[i].node,
                                "cxi",
                                r[i].cxi,
                                "services",
                                services ? services : json_array(),
                                "message",
                                str_or_null(r[i].message),
                                "updated_at",
                                str_or_null(r[i].updated_at));
        if (!one || json_array_append_new(list, one) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

/* The nodes that may hold services: {"count": N, "nodes": hostlist} of
 * the lists of creating, created and failed, and pending when presumed.
 */
static json_t *render_holding(struct hostlist *const by[NSTATES], bool presumed)
{
    struct hostlist *all = hostlist_create();
    json_t *o = NULL;
    char *expr = NULL;

    for (size_t i = 0; all && i < NSTATES; i++) {
        if (!strcmp(report_states[i], "destroyed") || (i == 0 && !presumed))
            continue;
        for (size_t k = 0; k < hostlist_count(by[i]); k++)
            if (hostlist_append(all, hostlist_nth(by[i], k)) < 0)
                goto cleanup;
    }
    if (!all)
        goto cleanup;
    hostlist_uniq(all);
    if ((expr = hostlist_encode(all)))
        o = json_pack("{s:I, s:s}",
                      "count",
                      (json_int_t)hostlist_count(all),
                      "nodes",
                      expr);
cleanup:
    free(expr);
    hostlist_destroy(all);
    return o;
}

json_t *render_job_nodes(const char *job_id,
                         long long reservation_id,
                         const char *state,
                         bool presumed,
                         const char *nodes,
                         const struct render_report *r,
                         size_t n,
                         size_t limit,
                         size_t max_names)
{
    struct hostlist *all = hostlist_decode(nodes, max_names, NULL);
    struct hostlist *reported = hostlist_create();
    struct hostlist *by[NSTATES] = {0};
    json_t *o = NULL, *states = NULL, *list = NULL, *holding = NULL;
    int saved;

    if (!all) {
        errno = errno == ENOMEM ? ENOMEM : EINVAL;
        goto cleanup;
    }
    if (!reported)
        goto nomem;
    for (size_t i = 0; i < NSTATES; i++)
        if (!(by[i] = hostlist_create()))
            goto nomem;
    for (size_t i = 0; i < n; i++)
        if (hostlist_append(reported, r[i].node) < 0
            || hostlist_append(by[report_state(r[i].cxi)], r[i].node) < 0)
            goto nomem;
    hostlist_uniq(reported);
    for (size_t i = 0; i < hostlist_count(all); i++) {
        const char *name = hostlist_nth(all, i);
        if (!hostlist_contains(reported, name)
            && hostlist_append(by[0], name) < 0)
            goto nomem;
    }
    if (!(states = render_states(by))
        || !(holding = render_holding(by, presumed))
        || !(list = render_report_list(r, n, limit)))
        goto nomem;
    o = json_pack("{s:s, s:I, s:s, s:b, s:s, s:I, s:o, s:o, s:o, s:I}",
                  "job_id",
                  job_id,
                  "reservation_id",
                  (json_int_t)reservation_id,
                  "state",
                  state,
                  "presumed",
                  (int)presumed,
                  "nodes",
                  nodes,
                  "node_count",
                  (json_int_t)hostlist_count(all),
                  "states",
                  states,
                  "holding",
                  holding,
                  "reports",
                  list,
                  "reports_total",
                  (json_int_t)n);
    /* json_pack()'s "o" took them, even on failure */
    states = NULL;
    holding = NULL;
    list = NULL;
    if (!o)
        goto nomem;
    goto cleanup;
nomem:
    errno = ENOMEM;
cleanup:
    saved = errno;
    json_decref(states);
    json_decref(holding);
    json_decref(list);
    for (size_t i = 0; i < NSTATES; i++)
        hostlist_destroy(by[i]);
    hostlist_destroy(reported);
    hostlist_destroy(all);
    errno = saved;
    return o;
}

json_t *render_pool(const struct idset *pool,
                    long long active,
                    long long releasing,
                    long long outside,
                    long long cooling,
                    const char *cursor)
{
    long long total = (long long)idset_count(pool);
    long long in_pool = active + releasing - outside;
    char *ranges = idset_encode(pool);
    json_t *o = NULL;

    if (ranges)
        o = json_pack(
            "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
            "ranges",
            ranges,
            "total",
            (json_int_t)total,
            "free",
            (json_int_t)(total - in_pool - cooling),
            "active",
            (json_int_t)active,
            "quarantined",
            (json_int_t)releasing,
            "cooling",
            (json_int_t)cooling,
            "outside_pool",
            (json_int_t)outside,
            "cursor",
            cursor ? json_integer(strtoll(cursor, NULL, 10)) : json_null());
    free(ranges);
    if (!o)
        errno = ENOMEM;
    return o;
}

json_t *render_vni(int vni,
                   bool in_pool,
                   const char *state,
                   json_t *res,
                   const char *last_released_at,
                   const char *usable_at)
{
    json_t *o = json_pack("{s:i, s:b, s:s, s:o, s:o, s:o}",
                          "vni",
                          vni,
                          "in_pool",
                          in_pool,
                          "state",
                          state,
                          "reservation",
                          res ? res : json_null(),
                          "last_released_at",
                          str_or_null(last_released_at),
                          "usable_at",
                          str_or_null(usable_at));
    if (!o)
        errno = ENOMEM;
    return o;
}

json_t *render_event(const struct render_event *ev)
{
    json_t *detail = json_loads(ev->detail, 0, NULL);
    const char *rid = ev->reservation_id;
    json_t *e =
        json_pack("{s:I, s:s, s:o, s:o, s:o, s:s, s:s, s:o}",
                  "id",
                  (json_int_t)num(ev->id),
                  "time",
                  ev->time,
                  "reservation_id",
                  rid ? json_integer(strtoll(rid, NULL, 10)) : json_null(),
                  "job_id",
                  str_or_null(ev->job_id),
                  "node",
                  str_or_null(ev->node),
                  "actor",
                  ev->actor,
                  "action",
                  ev->action,
                  "detail",
                  detail ? detail : json_object());
    const char *hash = ev->job_id ? strchr(ev->job_id, '#') : NULL;
    if (e && hash
        && (json_object_set_new(
                e,
                "job_id",
                json_stringn(ev->job_id, (size_t)(hash - ev->job_id)))
                < 0
            || json_object_set_new(e, "step_id", json_string(hash + 1)) < 0)) {
        json_decref(e);
        e = NULL;
    }
    if (!e)
        errno = ENOMEM;
    return e;
}

json_t *render_page(const char *key, json_t *list, const char *next)
{
    json_t *o = json_pack("{s:o, s:o}",
                          key,
                          list,
                          "next",
                          next ? json_string(next) : json_null());
    if (!o)
        errno = ENOMEM;
    return o;
}
