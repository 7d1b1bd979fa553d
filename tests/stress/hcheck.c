/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The invariants of a stress run's history (see hcheck.h).
 *
 * Two small tables keep the bookkeeping: a string-keyed hash map (smap.h:
 * jobs and steps by name, reservations by decimal id) and, for the events
 * replay, the holder of each of the 65536 VNIs.  A step's reservation is
 * one more holder, named "JOB#STEP" as the broker keys it; the step
 * invariants of their own are in hstepcheck.c.  Everything is allocated
 * per call and freed before hcheck_run() returns.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stress/hcheck.h"
#include "tests/stress/hdeadline.h"
#include "tests/stress/hstepcheck.h"
#include "tests/stress/smap.h"
#include "vnib/hostlist.h"

#define VNI_SPACE 65536
#define EXAMPLES 3
#define KEY_SIZE (HREC_JOB_SIZE + HREC_STEP_SIZE + 2) /* "JOB#STEP" */

/* ---- output --------------------------------------------------------------- */

struct out {
    const char *prefix;
    int failed;
};

static void vverdict(const char *prefix, bool pass, const char *fmt,
                     va_list ap) __attribute__((format(printf, 3, 0)));

static void vverdict(const char *prefix, bool pass, const char *fmt,
                     va_list ap)
{
    printf("%s%s ", prefix, pass ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
}

int hcheck_verdict(const char *prefix, bool pass, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vverdict(prefix, pass, fmt, ap);
    va_end(ap);
    return !pass;
}

static void verdict(struct out *o, bool pass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void verdict(struct out *o, bool pass, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vverdict(o->prefix, pass, fmt, ap);
    va_end(ap);
    if (!pass)
        o->failed++;
}

void hcheck_vnis_text(char *buf, size_t size, const int *v, int n)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && off < size; i++) {
        int k = snprintf(buf + off, size - off, "%s%d", i ? "," : "", v[i]);
        if (k < 0)
            break;
        off += (size_t)k;
    }
}

/* ---- the tally -------------------------------------------------------------- */

static bool expected_refusal(const struct hrec *r)
{
    return r->op == HREC_CLEANUP && r->status == 404;
}

void hcheck_tally(const struct hrec_log *logs, int nlogs,
                  struct hcheck_tally *t)
{
    memset(t, 0, sizeof(*t));
    for (int l = 0; l < nlogs; l++) {
        const struct hrec_log *log = &logs[l];
        for (size_t i = 0; i < log->nrecs; i++) {
            const struct hrec *r = &log->recs[i];
            t->requests++;
            if (r->deadlock)
                t->deadlock++;
            if (r->status == 0)
                t->transport++;
            else if (r->status >= 200 && r->status < 300)
                t->ok++;
            else if (r->status >= 500) {
                t->s5xx++;
                if (r->status != 503)
                    t->other5xx++;
                else if (strcmp(r->code, "vni_pool_exhausted") == 0)
                    t->s503++, t->exhausted++;
                else if (r->deadline_ms > 0 && hrec_expired_where(r))
                    t->s503++, t->expired++;
                else {
                    t->s503++, t->bad503++;
                    if (strcmp(r->code, "unavailable") == 0)
                        t->unavailable++;
                }
            } else if (!expected_refusal(r))
                t->unexpected++;
        }
        for (size_t i = 0; i < log->njobs; i++) {
            const struct hjob *j = &log->jobs[i];
            t->jobs++;
            t->acked += j->acked;
            t->refused += j->refused;
            t->abandoned += j->abandoned;
            t->ambiguous += j->ambiguous;
        }
    }
}

/* ---- replies: certainly-live intervals ------------------------------------ */

/* One VNI of an acknowledged reservation, a job's or (step set) one of
 * its steps', and when it was certainly held.
 */
struct span {
    int vni;
    int64_t from, until;
    long long resv_id;
    const struct hjob *job;
    const char *step; /* NULL: the job's own */
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;

    if (x->vni != y->vni)
        return x->vni < y->vni ? -1 : 1;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return 0;
}

struct spans {
    struct span *s;
    size_t n, cap;
};

/* Add the spans of an acknowledged reservation's VNIs.  -1 on ENOMEM. */
static int spans_add(struct spans *sp, const int *vnis, int nvnis,
                     int64_t from, int64_t until, long long resv_id,
                     const struct hjob *job, const char *step)
{
    for (int v = 0; v < nvnis; v++) {
        if (sp->n == sp->cap) {
            size_t cap = sp->cap ? sp->cap * 2 : 4096;
            struct span *p = realloc(sp->s, cap * sizeof(*p));
            if (!p) {
                errno = ENOMEM;
                return -1;
            }
            sp->s = p;
            sp->cap = cap;
        }
        sp->s[sp->n++] =
            (struct span){vnis[v], from, until, resv_id, job, step};
    }
    return 0;
}

/* Every acknowledged reservation's spans, jobs' and steps'; *nres counts
 * the reservations.  -1 on ENOMEM.
 */
static int spans_collect(const struct hcheck_input *in, struct spans *sp,
                         size_t *nres)
{
    for (int l = 0; l < in->nlogs; l++) {
        const struct hrec_log *log = &in->logs[l];
        for (size_t i = 0; i < log->njobs; i++) {
            const struct hjob *j = &log->jobs[i];
            if (!j->acked)
                continue;
            (*nres)++;
            if (spans_add(sp, j->vnis, j->nvnis, j->live_from, j->live_until,
                          j->resv_id, j, NULL) < 0)
                return -1;
        }
        for (size_t i = 0; i < log->nsteps; i++) {
            const struct hstep *st = &log->steps[i];
            if (!st->acked || st->job >= log->njobs)
                continue;
            (*nres)++;
            if (spans_add(sp, st->vnis, st->nvnis, st->live_from,
                          st->live_until, st->resv_id, &log->jobs[st->job],
                          st->step) < 0)
                return -1;
        }
    }
    return 0;
}

/* Two acknowledged reservations (jobs' or steps') whose certainly-live
 * intervals overlap and that share a VNI.  Returns the number of such
 * intervals, -1 on ENOMEM.
 */
static long check_replies(const struct hcheck_input *in, struct out *o,
                          size_t *nres)
{
    struct spans sp = {0};
    long bad = 0;
    int shown = 0;

    *nres = 0;
    if (spans_collect(in, &sp, nres) < 0) {
        free(sp.s);
        return -1;
    }
    struct span *s = sp.s;
    size_t n = sp.n;
    if (n)
        qsort(s, n, sizeof(*s), span_cmp);
    for (size_t i = 0; i < n;) {
        size_t k;
        const struct span *longest = &s[i];
        for (k = i + 1; k < n && s[k].vni == s[i].vni; k++) {
            if (s[k].from < longest->until
                && s[k].resv_id != longest->resv_id) {
                bad++;
                if (shown++ < EXAMPLES)
                    printf("%s  e.g. VNI %d: %s%s%s (reservation %lld) acked"
                           " at +%.3f s while %s%s%s (reservation %lld) was"
                           " live until +%.3f s\n",
                           o->prefix, s[k].vni, s[k].job->job,
                           s[k].step ? "#" : "", s[k].step ? s[k].step : "",
                           s[k].resv_id, s[k].from / 1e9, longest->job->job,
                           longest->step ? "#" : "",
                           longest->step ? longest->step : "",
                           longest->resv_id, longest->until / 1e9);
            }
            if (s[k].until > longest->until)
                longest = &s[k];
        }
        i = k;
    }
    free(s);
    return bad;
}

/* ---- events replay -------------------------------------------------------- */

/* A node's last report on a reservation, from the events. */
struct resv_node {
    char node[HREC_NODE_SIZE];
    bool holds; /* its last report was not destroyed */
};

struct resv {
    long long id;
    char job[KEY_SIZE]; /* a step's: "JOB#STEP" */
    int vnis[HREC_MAX_VNIS];
    int n;
    bool live;
    struct resv_node *nodes; /* that reported, in order of their first */
    int nnodes, nodes_cap;
};

struct replay {
    struct smap resv; /* decimal id -> struct resv (owned) */
    struct smap jobs; /* job -> newest struct resv (borrowed) */
    long long *holder; /* VNI -> reservation id, 0 when free */
    size_t events, reserves, frees;
    long vni_bad, job_bad, unordered;
    long long last_id;
    size_t reports, ends;  /* report events; quarantine ends checked */
    size_t presumed;       /* reservations whose every node held at once */
    long ended_held;       /* ends while a node held the reservation */
};

static bool frees_vnis(const char *action, const json_t *detail)
{
    if (!strcmp(action, "force") || !strcmp(action, "quarantine_end"))
        return true;
    /* vnib_end_quarantine writes "release" with quarantined false when
     * an active reservation is released at once; vnib_release writes it
     * with quarantined true when the VNIs stay quarantined. */
    return !strcmp(action, "release")
           && json_is_false(json_object_get(detail, "quarantined"));
}

static int replay_reserve(struct replay *rp, struct out *o, long long id,
                          const char *job, const json_t *detail)
{
    char key[32];
    struct resv *r = calloc(1, sizeof(*r));
    const json_t *v;
    size_t i;

    if (!r)
        return -1;
    r->id = id;
    snprintf(r->job, sizeof(r->job), "%s", job);
    json_array_foreach(json_object_get(detail, "vnis"), i, v)
    {
        if (r->n < HREC_MAX_VNIS)
            r->vnis[r->n++] = (int)json_integer_value(v);
    }
    r->live = true;
    /* A presumed reservation (schema/0021): every node of it holds from
     * the reserve on, until it reports destroyed. */
    const char *nodes = json_string_value(json_object_get(detail, "nodes"));
    if (json_is_true(json_object_get(detail, "presumed")) && nodes) {
        struct hostlist *hl = hostlist_decode(nodes, 100000, NULL);
        size_t cnt = hl ? hostlist_count(hl) : 0;
        if (hl && cnt > 0 && (r->nodes = calloc(cnt, sizeof(*r->nodes)))) {
            r->nodes_cap = (int)cnt;
            for (size_t k = 0; k < cnt; k++) {
                snprintf(r->nodes[k].node, sizeof(r->nodes[k].node), "%s",
                         hostlist_nth(hl, k));
                r->nodes[k].holds = true;
            }
            r->nnodes = (int)cnt;
            rp->presumed++;
        }
        hostlist_destroy(hl);
    }
    if (smap_get(&rp->resv, smap_id_key(key, sizeof(key), id))) {
        rp->unordered++; /* a second reserve event for one reservation */
        free(r->nodes);
        free(r);
        return 0;
    }
    if (smap_put(&rp->resv, key, r) < 0) {
        free(r);
        return -1;
    }
    for (int k = 0; k < r->n; k++) {
        int vni = r->vnis[k];
        if (vni < 0 || vni >= VNI_SPACE)
            continue;
        if (rp->holder[vni] && rp->holder[vni] != id) {
            if (rp->vni_bad++ < EXAMPLES)
                printf("%s  e.g. event: VNI %d reserved by %s (reservation"
                       " %lld) while reservation %lld still held it\n",
                       o->prefix, vni, job, id, rp->holder[vni]);
        }
        rp->holder[vni] = id;
    }
    struct resv *prev = smap_get(&rp->jobs, job);
    if (prev && prev->live && prev->id != id) {
        if (rp->job_bad++ < EXAMPLES)
            printf("%s  e.g. event: job %s got reservation %lld while its"
                   " reservation %lld was still live\n",
                   o->prefix, job, id, prev->id);
    }
    return smap_put(&rp->jobs, job, r);
}

/* A node's report on reservation id: what it holds now.  -1 on ENOMEM. */
static int replay_report(struct replay *rp, long long id, const char *node,
                         const json_t *detail)
{
    char key[32];
    struct resv *r = smap_get(&rp->resv, smap_id_key(key, sizeof(key), id));
    const char *cxi = json_string_value(json_object_get(detail, "cxi"));
    int k;

    rp->reports++;
    if (!r || !node)
        return 0; /* not one of this run's reservations */
    for (k = 0; k < r->nnodes && strcmp(r->nodes[k].node, node); k++)
        ;
    if (k == r->nnodes) {
        if (r->nnodes == r->nodes_cap) {
            int cap = r->nodes_cap ? r->nodes_cap * 2 : 4;
            struct resv_node *p = realloc(r->nodes, (size_t)cap * sizeof(*p));
            if (!p) {
                errno = ENOMEM;
                return -1;
            }
            r->nodes = p;
            r->nodes_cap = cap;
        }
        snprintf(r->nodes[k].node, sizeof(r->nodes[k].node), "%s", node);
        r->nnodes++;
    }
    r->nodes[k].holds = !cxi || strcmp(cxi, "destroyed") != 0;
    return 0;
}

/* An end that frees reservation id's VNIs: unless forced, no node that
 * reported for it may hold it still, nor, for a presumed one, any node of
 * it that has not reported destroyed.
 */
static void replay_end_check(struct replay *rp, struct out *o, long long id,
                             const char *action)
{
    char key[32];
    const struct resv *r = smap_get(&rp->resv, smap_id_key(key, sizeof(key), id));

    if (!r || !strcmp(action, "force"))
        return;
    rp->ends++;
    for (int k = 0; k < r->nnodes; k++)
        if (r->nodes[k].holds) {
            if (rp->ended_held++ < EXAMPLES)
                printf("%s  e.g. event: reservation %lld (%s) freed by %s"
                       " while node %s held it (its last report was not"
                       " destroyed, or it was presumed and never"
                       " reported)\n",
                       o->prefix, id, r->job, action, r->nodes[k].node);
            return;
        }
}

static void replay_free(struct replay *rp, long long id)
{
    char key[32];
    struct resv *r = smap_get(&rp->resv, smap_id_key(key, sizeof(key), id));

    if (!r || !r->live)
        return;
    for (int k = 0; k < r->n; k++)
        if (r->vnis[k] >= 0 && r->vnis[k] < VNI_SPACE
            && rp->holder[r->vnis[k]] == id)
            rp->holder[r->vnis[k]] = 0;
    r->live = false;
}

static int replay_events(struct replay *rp, const json_t *events,
                         struct out *o)
{
    size_t i;
    const json_t *ev;

    json_array_foreach(events, i, ev)
    {
        long long id = json_integer_value(json_object_get(ev, "id"));
        long long rid =
            json_integer_value(json_object_get(ev, "reservation_id"));
        const char *action = json_string_value(json_object_get(ev, "action"));
        const char *job = json_string_value(json_object_get(ev, "job_id"));
        const char *step = json_string_value(json_object_get(ev, "step_id"));
        const json_t *detail = json_object_get(ev, "detail");
        char key[KEY_SIZE]; /* a step's reservation is its own holder */

        snprintf(key, sizeof(key), "%s%s%s", job ? job : "", step ? "#" : "",
                 step ? step : "");
        rp->events++;
        if (id <= rp->last_id)
            rp->unordered++;
        rp->last_id = id;
        if (!action || !rid)
            continue;
        if (!strcmp(action, "reserve")) {
            rp->reserves++;
            if (replay_reserve(rp, o, rid, key, detail) < 0)
                return -1;
        } else if (!strcmp(action, "report")) {
            if (replay_report(rp, rid,
                              json_string_value(json_object_get(ev, "node")),
                              detail) < 0)
                return -1;
        } else if (frees_vnis(action, detail)) {
            rp->frees++;
            replay_end_check(rp, o, rid, action);
            replay_free(rp, rid);
        }
    }
    return 0;
}

/* ---- acknowledged reservations -------------------------------------------- */

static bool same_vnis(const int *a, int na, const int *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof(*a)) == 0;
}

/* Every acknowledged reservation is in the trail (or, failing that, what
 * GET answers) with the id and VNIs it was acknowledged with.
 */
static void check_acked(const struct hcheck_input *in, struct replay *rp,
                        struct out *o)
{
    long checked = 0, via_get = 0, missing = 0, get_errors = 0;
    int shown = 0;

    for (int l = 0; l < in->nlogs; l++)
        for (size_t i = 0; i < in->logs[l].njobs; i++) {
            const struct hjob *j = &in->logs[l].jobs[i];
            char key[32];
            if (!j->acked)
                continue;
            checked++;
            const struct resv *r =
                in->events ? smap_get(&rp->resv,
                                      smap_id_key(key, sizeof(key), j->resv_id))
                           : NULL;
            if (r && !strcmp(r->job, j->job)
                && same_vnis(r->vnis, r->n, j->vnis, j->nvnis))
                continue;
            long long id = 0;
            int vnis[HREC_MAX_VNIS], n = 0;
            int rc = in->get ? in->get(in->get_arg, j->job, &id, vnis, &n)
                             : -1;
            via_get++;
            if (rc == 0 && id == j->resv_id
                && same_vnis(vnis, n, j->vnis, j->nvnis))
                continue;
            if (rc < 0)
                get_errors++;
            missing++;
            if (shown++ < EXAMPLES) {
                char want[64], got[64];
                hcheck_vnis_text(want, sizeof(want), j->vnis, j->nvnis);
                hcheck_vnis_text(got, sizeof(got), vnis, rc == 0 ? n : 0);
                printf("%s  e.g. %s acknowledged as reservation %lld [%s];"
                       " the broker has %lld [%s]%s\n",
                       o->prefix, j->job, j->resv_id, want,
                       rc == 0 ? id : 0, got,
                       rc < 0 ? " (GET failed)" : "");
            }
        }
    verdict(o, missing == 0,
            "every acknowledged reservation recorded with its VNIs: %ld"
            " checked, %ld missing or different (%ld looked up with GET,"
            " %ld GET errors)",
            checked, missing, via_get, get_errors);
}

/* ---- the end state -------------------------------------------------------- */

static void check_end(const struct hcheck_input *in, struct out *o)
{
    struct smap ours = {0}, per_job = {0};
    long live = 0, held = 0, dup_jobs = 0, leaked = 0, leaked_vnis = 0;
    long left = 0, foreign = 0;
    size_t i;
    const json_t *r;
    int shown = 0;
    bool oom = false;

    for (int l = 0; l < in->nlogs; l++)
        for (size_t k = 0; k < in->logs[l].njobs; k++)
            if (smap_put(&ours, in->logs[l].jobs[k].job,
                         &in->logs[l].jobs[k])
                < 0)
                oom = true;
    json_array_foreach(in->live, i, r)
    {
        const char *job = json_string_value(json_object_get(r, "job_id"));
        const char *step = json_string_value(json_object_get(r, "step_id"));
        long nv = (long)json_array_size(json_object_get(r, "vnis"));
        char key[KEY_SIZE]; /* a step's own, as in the replay */
        if (!job)
            continue;
        live++;
        held += nv;
        snprintf(key, sizeof(key), "%s%s%s", job, step ? "#" : "",
                 step ? step : "");
        intptr_t c = (intptr_t)smap_get(&per_job, key);
        if (c == 1)
            dup_jobs++;
        if (smap_put(&per_job, key, (void *)(c + 1)) < 0)
            oom = true;
        const struct hjob *j = smap_get(&ours, job);
        if (!j) {
            foreign++;
        } else if (j->abandoned) {
            left++;
        } else {
            leaked++;
            leaked_vnis += nv;
            if (shown++ >= EXAMPLES)
                continue;
            if (j->acked)
                printf("%s  e.g. %s: reservation %lld is still %s, but the"
                       " client released it (it acknowledged reservation"
                       " %lld)\n",
                       o->prefix, key,
                       (long long)json_integer_value(json_object_get(r, "id")),
                       json_string_value(json_object_get(r, "state")),
                       j->resv_id);
            else
                printf("%s  e.g. %s: reservation %lld is %s, but its"
                       " reserve was never acknowledged (refused, or %d"
                       " attempts answered deadline_exceeded)\n",
                       o->prefix, key,
                       (long long)json_integer_value(json_object_get(r, "id")),
                       json_string_value(json_object_get(r, "state")),
                       j->expired);
        }
    }
    smap_cleanup(&ours, false);
    smap_cleanup(&per_job, false);
    if (oom)
        printf("%s  (out of memory: the end-state counts are incomplete)\n",
               o->prefix);
    verdict(o, dup_jobs == 0 && !oom,
            "no job or step with two live reservations (end state): %ld"
            " live reservations, %ld jobs or steps with more than one",
            live, dup_jobs);
    verdict(o, leaked == 0 && !oom,
            "nothing left live but what abandoned jobs may hold: %ld live"
            " (%ld of abandoned jobs, %ld of other clients), %ld leaked"
            " holding %ld VNIs",
            live, left, foreign, leaked, leaked_vnis);
    if (!in->pool) {
        verdict(o, false, "pool totals consistent: GET /v1/pool failed");
        return;
    }
    json_int_t total = json_integer_value(json_object_get(in->pool, "total"));
    json_int_t fr = json_integer_value(json_object_get(in->pool, "free"));
    json_int_t act = json_integer_value(json_object_get(in->pool, "active"));
    json_int_t q = json_integer_value(json_object_get(in->pool, "quarantined"));
    json_int_t out =
        json_integer_value(json_object_get(in->pool, "outside_pool"));
    bool sums = total == fr + act + q - out && fr >= 0 && fr <= total;
    verdict(o, sums && act + q == held,
            "pool totals consistent: total %lld = free %lld + active %lld +"
            " quarantined %lld - outside %lld; held %lld = VNIs of the"
            " live reservations %ld",
            (long long)total, (long long)fr, (long long)act, (long long)q,
            (long long)out, (long long)(act + q), held);
}

/* ---- node reports: told against stored ------------------------------------- */

static const char *const cxi_names[] = {"none", "creating", "created",
                                        "destroyed", "failed"};

/* Every node of every acknowledged job holds, in the broker's node
 * reports, a state between the furthest report it was answered 200 for
 * (told) and the furthest it sent (tried): a report told 200 is stored.
 */
static void check_reports(const struct hcheck_input *in, struct out *o)
{
    long jobs = 0, nodes = 0, bad = 0, errors = 0;

    for (int l = 0; l < in->nlogs; l++)
        for (size_t i = 0; i < in->logs[l].njobs; i++) {
            const struct hjob *j = &in->logs[l].jobs[i];
            unsigned char db[HREC_MAX_NODES];
            if (!j->acked)
                continue;
            jobs++;
            if (in->get_reports(in->get_arg, j->job, j->resv_id, j->nnodes,
                                (const char (*)[HREC_NODE_SIZE])j->nodes, db)
                < 0) {
                errors++;
                continue;
            }
            for (int k = 0; k < j->nnodes; k++) {
                nodes++;
                if (db[k] != HCHECK_FAILED && db[k] >= j->told[k]
                    && db[k] <= j->tried[k])
                    continue;
                if (bad++ < EXAMPLES)
                    printf("%s  e.g. %s (reservation %lld) node %s: told %s,"
                           " sent up to %s, the broker holds %s\n",
                           o->prefix, j->job, j->resv_id, j->nodes[k],
                           cxi_names[j->told[k]], cxi_names[j->tried[k]],
                           cxi_names[db[k] <= HCHECK_FAILED ? db[k] : 0]);
            }
        }
    verdict(o, bad == 0 && errors == 0 && nodes > 0,
            "every report answered 200 is in the broker's node reports"
            " (and none it was not sent): %ld jobs, %ld nodes, %ld"
            " differ, %ld jobs not read",
            jobs, nodes, bad, errors);
}

/* ---- the whole check ------------------------------------------------------ */

int hcheck_run(const struct hcheck_input *in, const struct hcheck_tally *t)
{
    struct out o = {.prefix = in->prefix ? in->prefix : ""};
    struct replay rp = {0};
    size_t nres = 0;
    int rc = -1;

    verdict(&o, t->acked > 0,
            "the run did work: %" PRIu64 " jobs, %" PRIu64
            " acknowledged, %" PRIu64 " refused (pool exhausted), %" PRIu64
            " abandoned, %" PRIu64 " with an ambiguous reserve",
            t->jobs, t->acked, t->refused, t->abandoned, t->ambiguous);
    long bad = check_replies(in, &o, &nres);
    if (bad < 0)
        goto done;
    verdict(&o, bad == 0,
            "no VNI in two live reservations, jobs' or steps' (replies): %zu"
            " acknowledged reservations, %ld overlapping a live holder of a"
            " VNI",
            nres, bad);

    if (in->events) {
        if (!(rp.holder = calloc(VNI_SPACE, sizeof(*rp.holder))))
            goto done;
        if (replay_events(&rp, in->events, &o) < 0)
            goto done;
        verdict(&o, rp.vni_bad == 0 && rp.unordered == 0,
                "no VNI in two live reservations (events): %zu events, %zu"
                " reserves, %zu ends; %ld VNIs taken while held, %ld events"
                " out of order or repeated",
                rp.events, rp.reserves, rp.frees, rp.vni_bad, rp.unordered);
        verdict(&o, rp.job_bad == 0,
                "no job or step with two live reservations (events): %ld"
                " reserves while its previous reservation was live",
                rp.job_bad);
        verdict(&o, rp.ended_held == 0,
                "a quarantine ends only once every node that reported has"
                " reported destroyed, every node of a presumed one"
                " (events): %zu node reports, %zu ends (not forced)"
                " checked, %zu presumed, %ld while a node held",
                rp.reports, rp.ends, rp.presumed, rp.ended_held);
    } else {
        verdict(&o, false, "events replay: GET /v1/events failed or no"
                           " admin token (--admin-token-file)");
    }
    check_acked(in, &rp, &o);
    if (in->get_reports)
        check_reports(in, &o);
    if (in->steps) {
        int sf = hstepcheck_run(in);
        if (sf < 0)
            goto done;
        o.failed += sf;
    }
    if (in->deadlines) {
        int df = hdeadline_check(in);
        if (df < 0)
            goto done;
        o.failed += df;
    }
    if (in->live)
        check_end(in, &o);
    else
        verdict(&o, false, "end state: listing the live reservations failed");

    if (in->outage)
        verdict(&o, t->bad503 == t->unavailable,
                "no 503 but vni_pool_exhausted, deadline_exceeded (to a"
                " short deadline) and unavailable (a database failover): %"
                PRIu64 " (of %" PRIu64 " 503s; %" PRIu64
                " vni_pool_exhausted, %" PRIu64 " deadline_exceeded and %"
                PRIu64 " unavailable are legitimate)",
                t->bad503 - t->unavailable, t->s503, t->exhausted,
                t->expired, t->unavailable);
    else
        verdict(&o, t->bad503 == 0,
                "no 503 but vni_pool_exhausted and deadline_exceeded (to"
                " a short deadline): %" PRIu64 " (of %" PRIu64 " 503s; %"
                PRIu64 " vni_pool_exhausted and %" PRIu64
                " deadline_exceeded are legitimate)",
                t->bad503, t->s503, t->exhausted, t->expired);
    verdict(&o, t->deadlock == 0,
            "no reply mentions a deadlock: %" PRIu64, t->deadlock);
    verdict(&o, t->other5xx == 0,
            "no 5xx but 503: %" PRIu64 " (5xx overall: %" PRIu64 ")",
            t->other5xx, t->s5xx);
    verdict(&o, t->unexpected == 0,
            "no unexpected refusal (4xx): %" PRIu64, t->unexpected);
    printf("%s  (%" PRIu64 " requests: %" PRIu64 " 2xx, %" PRIu64
           " transport failures retried on another replica)\n",
           o.prefix, t->requests, t->ok, t->transport);
    rc = o.failed;
done:
    if (rc < 0)
        printf("%shistory: out of memory while checking\n", o.prefix);
    for (size_t i = 0; i < rp.resv.cap; i++)
        if (rp.resv.e[i].key)
            free(((struct resv *)rp.resv.e[i].val)->nodes);
    smap_cleanup(&rp.resv, true);
    smap_cleanup(&rp.jobs, false);
    free(rp.holder);
    return rc;
}
