/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The invariants of a run's job steps (see hstepcheck.h).
 *
 * Each step the client tried gets a struct sinfo, found by its broker key
 * "JOB#STEP" (smap.h); one pass over the audit trail counts each step's
 * reserve events, finds the one it was acknowledged with and checks every
 * event's actor.  Events of jobs that are not this run's (earlier runs on
 * the same database, other clients) are skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stress/hstepcheck.h"
#include "tests/stress/smap.h"

#define EXAMPLES 3
#define KEY_SIZE (HREC_JOB_SIZE + HREC_STEP_SIZE + 2)

/* A step of the run and what the trail says of it. */
struct sinfo {
    const struct hstep *s;
    const struct hjob *j;
    int reserves; /* its reserve events */
    bool found;   /* one of them has the acknowledged id and VNIs */
};

struct sctx {
    const struct hcheck_input *in;
    const char *prefix;
    struct smap steps; /* "JOB#STEP" -> struct sinfo (in info) */
    struct smap jobs;  /* job -> struct hjob */
    struct sinfo *info;
    size_t n;
    /* the trail */
    long events, reserves, ends, unknown, by_job_release, actor_bad;
    int shown_actor;
};

static void step_key(char *buf, const char *job, const char *step)
{
    snprintf(buf, KEY_SIZE, "%s#%s", job, step);
}

static bool same_vnis(const int *a, int na, const int *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof(*a)) == 0;
}

/* Every step and job of the logs in the maps.  -1 on ENOMEM. */
static int sctx_fill(struct sctx *x)
{
    const struct hcheck_input *in = x->in;
    size_t total = 0, k = 0;
    char key[KEY_SIZE];

    for (int l = 0; l < in->nlogs; l++)
        total += in->logs[l].nsteps;
    if (total && !(x->info = calloc(total, sizeof(*x->info))))
        return -1;
    for (int l = 0; l < in->nlogs; l++) {
        const struct hrec_log *log = &in->logs[l];
        for (size_t i = 0; i < log->njobs; i++)
            if (smap_put(&x->jobs, log->jobs[i].job, (void *)&log->jobs[i])
                < 0)
                return -1;
        for (size_t i = 0; i < log->nsteps; i++) {
            const struct hstep *s = &log->steps[i];
            if (s->job >= log->njobs)
                continue;
            x->info[k] = (struct sinfo){.s = s, .j = &log->jobs[s->job]};
            step_key(key, x->info[k].j->job, s->step);
            if (smap_put(&x->steps, key, &x->info[k]) < 0)
                return -1;
            k++;
        }
    }
    x->n = k;
    return 0;
}

static void vnis_of(const json_t *detail, int *vnis, int *n)
{
    const json_t *v;
    size_t i;

    *n = 0;
    json_array_foreach(json_object_get(detail, "vnis"), i, v)
    {
        if (*n < HREC_MAX_VNIS)
            vnis[(*n)++] = (int)json_integer_value(v);
    }
}

/* One event of a step of the run. */
static void step_event(struct sctx *x, struct sinfo *si, const json_t *ev,
                       const char *job)
{
    const char *action = json_string_value(json_object_get(ev, "action"));
    const char *actor = json_string_value(json_object_get(ev, "actor"));
    long long rid = json_integer_value(json_object_get(ev, "reservation_id"));
    const json_t *detail = json_object_get(ev, "detail");
    char want[HREC_JOB_SIZE + 8];
    bool reserve = action && !strcmp(action, "reserve");
    bool end = action
               && (!strcmp(action, "release")
                   || !strcmp(action, "quarantine_end")
                   || !strcmp(action, "force"));

    if (!reserve && !end)
        return; /* reports are the nodes' */
    snprintf(want, sizeof(want), "job:%s", job);
    if (reserve) {
        int vnis[HREC_MAX_VNIS], n = 0;
        x->reserves++;
        si->reserves++;
        vnis_of(detail, vnis, &n);
        if (si->s->acked && rid == si->s->resv_id
            && same_vnis(vnis, n, si->s->vnis, si->s->nvnis))
            si->found = true;
    } else {
        x->ends++;
    }
    if (actor && !strcmp(actor, want))
        return;
    /* The job's release ends the steps the client did not end itself. */
    if (end && !(si->s->acked && si->s->ended)) {
        x->by_job_release++;
        return;
    }
    if (x->actor_bad++ < EXAMPLES)
        printf("%s  e.g. event %lld: %s of step %s of job %s (reservation"
               " %lld) by %s, not by the job token (%s)\n",
               x->prefix, (long long)json_integer_value(json_object_get(ev, "id")),
               action, si->s->step, job, rid, actor ? actor : "(none)", want);
}

static void read_trail(struct sctx *x)
{
    const json_t *ev;
    size_t i;
    char key[KEY_SIZE];

    json_array_foreach(x->in->events, i, ev)
    {
        const char *job = json_string_value(json_object_get(ev, "job_id"));
        const char *step = json_string_value(json_object_get(ev, "step_id"));
        if (!job || !step || !smap_get(&x->jobs, job))
            continue; /* not a step, or not of this run's jobs */
        x->events++;
        step_key(key, job, step);
        struct sinfo *si = smap_get(&x->steps, key);
        if (!si) {
            if (x->unknown++ < EXAMPLES)
                printf("%s  e.g. event %lld: %s of step %s of job %s, a step"
                       " the client never asked for\n",
                       x->prefix,
                       (long long)json_integer_value(json_object_get(ev, "id")),
                       json_string_value(json_object_get(ev, "action")), step,
                       job);
            continue;
        }
        step_event(x, si, ev, job);
    }
}

/* Every acknowledged step is in the trail with its id and VNIs, or GET
 * of the step answers them.
 */
static int check_recorded(struct sctx *x)
{
    long checked = 0, via_get = 0, missing = 0, get_errors = 0;

    for (size_t k = 0; k < x->n; k++) {
        const struct sinfo *si = &x->info[k];
        long long id = 0;
        int vnis[HREC_MAX_VNIS], n = 0;
        if (!si->s->acked)
            continue;
        checked++;
        if (si->found)
            continue;
        int rc = x->in->get_step ? x->in->get_step(x->in->get_arg, si->j->job,
                                                   si->s->step, &id, vnis, &n)
                                 : -1;
        via_get++;
        if (rc == 0 && id == si->s->resv_id
            && same_vnis(vnis, n, si->s->vnis, si->s->nvnis))
            continue;
        get_errors += rc < 0;
        if (missing++ < EXAMPLES) {
            char want[64], got[64];
            hcheck_vnis_text(want, sizeof(want), si->s->vnis, si->s->nvnis);
            hcheck_vnis_text(got, sizeof(got), vnis, rc == 0 ? n : 0);
            printf("%s  e.g. step %s of %s acknowledged as reservation %lld"
                   " [%s]; the broker has %lld [%s]%s\n",
                   x->prefix, si->s->step, si->j->job, si->s->resv_id, want,
                   rc == 0 ? id : 0, got, rc < 0 ? " (GET failed)" : "");
        }
    }
    return hcheck_verdict(
        x->prefix, missing == 0 && checked > 0,
        "every acknowledged step reservation recorded with its VNIs: %ld"
        " checked, %ld missing or different (%ld looked up with GET, %ld"
        " GET errors)",
        checked, missing, via_get, get_errors);
}

/* One reserve per step, the acknowledged one; a 200 only after an
 * attempt that may have committed unseen.
 */
static int check_same_step(struct sctx *x)
{
    long twice = 0, other = 0, bad200 = 0, retried = 0, again = 0;
    int shown = 0;

    for (size_t k = 0; k < x->n; k++) {
        const struct sinfo *si = &x->info[k];
        const struct hstep *s = si->s;
        bool bad = false;
        if (s->acked && s->ambiguous) {
            retried++;
            again += s->acked_status == 200;
        }
        if (si->reserves > 1)
            twice++, bad = true;
        if (s->acked && si->reserves == 1 && !si->found)
            other++, bad = true;
        if (s->acked && s->acked_status == 200 && !s->ambiguous)
            bad200++, bad = true;
        if (bad && shown++ < EXAMPLES)
            printf("%s  e.g. step %s of %s: %d reserve events, acknowledged"
                   " %s as reservation %lld%s\n",
                   x->prefix, s->step, si->j->job, si->reserves,
                   s->acked ? (s->acked_status == 200 ? "200" : "201") : "never",
                   s->resv_id,
                   s->ambiguous ? " after an attempt that may have committed"
                                : "");
    }
    if (!x->in->events)
        return hcheck_verdict(x->prefix, false,
                              "a retried step reserve gets the same step"
                              " back: events not read");
    return hcheck_verdict(
        x->prefix, twice == 0 && other == 0 && bad200 == 0,
        "a retried step reserve gets the same step back: %ld steps with"
        " more than one reservation, %ld acknowledged with another than"
        " the trail's, %ld answered 200 (existing) with no earlier attempt;"
        " %ld acknowledged after an attempt that may have committed unseen,"
        " %ld of them 200 with the step it had made",
        twice, other, bad200, retried, again);
}

/* No step left live, but those of jobs whose release went unanswered. */
static int check_left(struct sctx *x)
{
    long live = 0, left = 0, leaked = 0;
    const json_t *r;
    size_t i;
    char key[KEY_SIZE];

    if (!x->in->live)
        return hcheck_verdict(x->prefix, false,
                              "no step left live: listing the live"
                              " reservations failed");
    json_array_foreach(x->in->live, i, r)
    {
        const char *job = json_string_value(json_object_get(r, "job_id"));
        const char *step = json_string_value(json_object_get(r, "step_id"));
        if (!job || !step || !smap_get(&x->jobs, job))
            continue;
        live++;
        step_key(key, job, step);
        const struct sinfo *si = smap_get(&x->steps, key);
        if (si && si->s->abandoned) {
            left++;
        } else if (leaked++ < EXAMPLES) {
            printf("%s  e.g. step %s of %s: reservation %lld is still %s"
                   " after the run (the client %s)\n",
                   x->prefix, step, job,
                   (long long)json_integer_value(json_object_get(r, "id")),
                   json_string_value(json_object_get(r, "state")),
                   !si           ? "never asked for it"
                   : si->s->ended ? "ended it"
                                  : "released its job");
        }
    }
    return hcheck_verdict(x->prefix, leaked == 0,
                          "no step left live after the run: %ld live steps of"
                          " this run's jobs (%ld of jobs whose release went"
                          " unanswered), %ld leaked",
                          live, left, leaked);
}

int hstepcheck_run(const struct hcheck_input *in)
{
    struct sctx x = {.in = in, .prefix = in->prefix ? in->prefix : ""};
    long steps = 0, acked = 0, refused = 0, ambiguous = 0, abandoned = 0;
    long read = 0, differs = 0, refused_read = 0;
    int failed = 0, rc = -1;

    if (sctx_fill(&x) < 0)
        goto done;
    for (size_t k = 0; k < x.n; k++) {
        const struct hstep *s = x.info[k].s;
        steps++;
        acked += s->acked;
        refused += s->refused;
        ambiguous += s->ambiguous;
        abandoned += s->abandoned;
        read += s->readback != HREC_NOT_READ;
        differs += s->readback == HREC_READ_DIFFERS;
        refused_read += s->readback == HREC_READ_REFUSED;
    }
    failed += hcheck_verdict(x.prefix, acked > 0,
                             "the run did step work: %ld steps, %ld"
                             " acknowledged, %ld refused (pool exhausted),"
                             " %ld with an ambiguous reserve, %ld abandoned",
                             steps, acked, refused, ambiguous, abandoned);
    if (in->events)
        read_trail(&x);
    failed += check_recorded(&x);
    failed += check_same_step(&x);
    if (in->events)
        failed += hcheck_verdict(
            x.prefix, x.actor_bad == 0 && x.unknown == 0 && x.reserves > 0,
            "every step event is the job token's (job:JOB), never the"
            " scheduler's: %ld step events, %ld reserves and %ld ends"
            " checked, %ld ended by their job's release, %ld by another"
            " actor, %ld of steps never asked for",
            x.events, x.reserves, x.ends, x.by_job_release, x.actor_bad,
            x.unknown);
    else
        failed += hcheck_verdict(x.prefix, false,
                                 "every step event is the job token's:"
                                 " events not read");
    failed += hcheck_verdict(x.prefix,
                             differs == 0 && refused_read == 0 && read > 0,
                             "every acknowledged step reads back with the job"
                             " token as acknowledged: %ld read, %ld differ,"
                             " %ld refused (4xx), %ld not read (no replica"
                             " answered)",
                             read, differs, refused_read, acked - read);
    failed += check_left(&x);
    rc = failed;
done:
    if (rc < 0) {
        errno = ENOMEM;
        printf("%shistory: out of memory while checking the steps\n",
               x.prefix);
    }
    smap_cleanup(&x.steps, false);
    smap_cleanup(&x.jobs, false);
    free(x.info);
    return rc;
}
