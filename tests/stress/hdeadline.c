/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Short deadlines in the history client, and their invariants (see
 * hdeadline.h).
 *
 * The check keeps each job that got a deadline_exceeded, and no attempt
 * that may have committed unseen, in a string-keyed map (smap.h) by name;
 * one pass over the audit trail counts each one's reserve events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stress/hdeadline.h"
#include "tests/stress/smap.h"

#define EXAMPLES 3

void hdeadline_job(struct client *c, struct hjob *j)
{
    const struct run *run = c->run;

    if (!run->deadline_max_ms)
        return;
    j->short_deadline =
        (int)(history_rng(&c->rng) % 100) < run->deadline_pct;
    j->give_up = j->short_deadline && history_rng(&c->rng) % 2 == 0;
}

int hdeadline_ms(struct client *c, const struct hjob *j)
{
    const struct run *run = c->run;
    uint64_t span = (uint64_t)(run->deadline_max_ms - run->deadline_min_ms);

    if (!j->short_deadline)
        return 0;
    return run->deadline_min_ms + (int)(history_rng(&c->rng) % (span + 1));
}

bool hdeadline_expired(struct client *c, uint64_t ji, const struct hrec *r)
{
    if (r->op != HREC_RESERVE || ji >= c->log.njobs)
        return false;
    c->log.jobs[ji].expired++;
    return c->log.jobs[ji].give_up;
}

/* A job to hold to the promise, and what the trail says of it. */
struct dinfo {
    const struct hjob *j;
    int reserves;  /* its reserve events (of the job, not of its steps) */
    bool found;    /* one of them is the acknowledged reservation */
};

struct dctx {
    const struct hcheck_input *in;
    const char *prefix;
    struct smap jobs; /* job -> struct dinfo (in info) */
    struct dinfo *info;
    size_t n;
    /* the attempts that carried a deadline */
    uint64_t with, ok, exhausted, noreply, other;
    uint64_t in_group, in_worker, in_other;
    /* the jobs */
    long expired_jobs, skipped, given_up, acked, bad, get_errors;
};

/* Count the attempts with a deadline and keep the jobs to check.  -1 on
 * ENOMEM.
 */
static int dctx_fill(struct dctx *x)
{
    const struct hcheck_input *in = x->in;
    size_t total = 0;

    for (int l = 0; l < in->nlogs; l++) {
        const struct hrec_log *log = &in->logs[l];
        for (size_t i = 0; i < log->nrecs; i++) {
            const struct hrec *r = &log->recs[i];
            const char *where = hrec_expired_where(r);
            if (!r->deadline_ms)
                continue;
            x->with++;
            if (!where && r->status >= 200 && r->status < 300)
                x->ok++;
            else if (!where && r->status == 503
                     && !strcmp(r->code, "vni_pool_exhausted"))
                x->exhausted++;
            else if (!where && r->status == 0)
                x->noreply++;
            else if (!where)
                x->other++;
            else if (!strcmp(where, "group"))
                x->in_group++;
            else if (!strcmp(where, "worker"))
                x->in_worker++;
            else
                x->in_other++;
        }
        total += log->njobs;
    }
    /* At least one slot, so that info is never NULL below. */
    if (!(x->info = calloc(total ? total : 1, sizeof(*x->info)))) {
        errno = ENOMEM;
        return -1;
    }
    for (int l = 0; l < in->nlogs; l++)
        for (size_t i = 0; i < in->logs[l].njobs; i++) {
            const struct hjob *j = &in->logs[l].jobs[i];
            if (!j->expired)
                continue;
            x->expired_jobs++;
            if (j->ambiguous) {
                x->skipped++;
                continue;
            }
            x->info[x->n].j = j;
            if (smap_put(&x->jobs, j->job, &x->info[x->n]) < 0)
                return -1;
            x->n++;
        }
    return 0;
}

/* Count the reserve events of the jobs kept. */
static void dctx_trail(struct dctx *x)
{
    size_t i;
    const json_t *ev;

    json_array_foreach(x->in->events, i, ev)
    {
        const char *action = json_string_value(json_object_get(ev, "action"));
        const char *job = json_string_value(json_object_get(ev, "job_id"));
        struct dinfo *d;

        const json_t *step = json_object_get(ev, "step_id");

        if (!action || strcmp(action, "reserve") || !job
            || (step && !json_is_null(step))
            || !(d = smap_get(&x->jobs, job)))
            continue;
        d->reserves++;
        if (d->j->acked
            && json_integer_value(json_object_get(ev, "reservation_id"))
                   == d->j->resv_id)
            d->found = true;
    }
}

/* Hold one job to the promise; prints an example when it fails. */
static void dctx_job(struct dctx *x, const struct dinfo *d)
{
    const struct hjob *j = d->j;
    char why[160] = "";

    if (j->acked) {
        x->acked++;
        if (j->acked_status != 201)
            snprintf(why, sizeof(why),
                     "acknowledged %ld after %d expired attempt%s: a "
                     "reservation existed already",
                     j->acked_status, j->expired, j->expired == 1 ? "" : "s");
        else if (d->reserves != 1 || !d->found)
            snprintf(why, sizeof(why),
                     "%d reserve events (want 1, reservation %lld: %s)",
                     d->reserves, j->resv_id, d->found ? "found" : "missing");
    } else {
        long long id = 0;
        int vnis[HREC_MAX_VNIS], n = 0;
        int rc = x->in->get ? x->in->get(x->in->get_arg, j->job, &id, vnis,
                                         &n)
                            : -1;
        x->given_up++;
        if (rc < 0)
            x->get_errors++;
        if (d->reserves > 0)
            snprintf(why, sizeof(why),
                     "never acknowledged, yet %d reserve event%s",
                     d->reserves, d->reserves == 1 ? "" : "s");
        else if (rc == 0)
            snprintf(why, sizeof(why),
                     "never acknowledged, yet the broker has reservation "
                     "%lld (%d VNIs)",
                     id, n);
    }
    if (!why[0])
        return;
    if (x->bad++ < EXAMPLES)
        printf("%s  e.g. %s (%d reserve attempt%s answered "
               "deadline_exceeded%s): %s\n",
               x->prefix, j->job, j->expired, j->expired == 1 ? "" : "s",
               j->give_up ? ", then given up" : "", why);
}

int hdeadline_check(const struct hcheck_input *in)
{
    struct dctx x = {.in = in, .prefix = in->prefix ? in->prefix : ""};
    int failed = -1;

    if (dctx_fill(&x) < 0)
        goto done;
    if (in->events)
        dctx_trail(&x);
    for (size_t i = 0; i < x.n; i++)
        dctx_job(&x, &x.info[i]);
    uint64_t expired = x.in_group + x.in_worker + x.in_other;
    failed = hcheck_verdict(
        x.prefix, expired > 0,
        "short deadlines expired: %" PRIu64 " of %" PRIu64
        " reserve attempts with a deadline answered 503 deadline_exceeded"
        " (%" PRIu64 " queued for a group commit, %" PRIu64
        " waiting for a worker, %" PRIu64 " otherwise); the others: %"
        PRIu64 " 2xx, %" PRIu64 " vni_pool_exhausted, %" PRIu64
        " no reply, %" PRIu64 " else",
        expired, x.with, x.in_group, x.in_worker, x.in_other, x.ok,
        x.exhausted, x.noreply, x.other);
    failed += hcheck_verdict(
        x.prefix, x.bad == 0 && x.get_errors == 0 && in->events,
        "a reserve answered 503 deadline_exceeded wrote nothing: %ld jobs"
        " got one (%ld skipped: another attempt may have committed"
        " unseen); of the others, %ld never acknowledged (none may have a"
        " reservation or a reserve event) and %ld acknowledged later (each"
        " created by that attempt, 201, with one reserve event); %ld broke"
        " the promise, %ld GET errors%s",
        x.expired_jobs, x.skipped, x.given_up, x.acked, x.bad,
        x.get_errors, in->events ? "" : " (no audit trail)");
done:
    smap_cleanup(&x.jobs, false);
    free(x.info);
    return failed;
}
