/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's steps, reserved, read and ended with its job token (see
 * hsteps.h).
 *
 * The steps of a job are held at once: both are reserved, then both
 * ended, so that a job and its steps hold up to 2 + 2 + 2 VNIs together
 * and the pool runs short now and then (a step refused with 503
 * vni_pool_exhausted is legitimate: it is not retried, and the job goes
 * on without it).
 */
#include <stdio.h>
#include <string.h>

#include "tests/stress/hsteps.h"

#define HSTEPS_MAX 2      /* steps a job reserves, at most */
#define HSTEPS_MAX_VNIS 2 /* VNIs of a step's own, at most */

/* The step's path: /v1/reservations/{job}/steps/{step}. */
static void step_path(char *buf, size_t size, const char *job,
                      const char *step)
{
    snprintf(buf, size, "/v1/reservations/%s/steps/%s", job, step);
}

static bool same_vnis(const int *a, int na, const int *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof(*a)) == 0;
}

/* The step manager reads acknowledged step si back with the job token,
 * from any replica: the same reservation and VNIs, or its readback says
 * it differs, or that the broker refused it (any 4xx: the job token is
 * good for its job's steps while the job is active).  Left HREC_NOT_READ
 * when no replica answered.  Not recorded as a request: the checker
 * judges the answer, not the attempts.
 */
static void step_read_back(struct client *c, size_t si, const char *path,
                           const char *token)
{
    struct hrec r;
    long long id = 0;
    int vnis[HREC_MAX_VNIS], n = 0;

    for (int a = 0; a < c->run->attempts; a++) {
        memset(&r, 0, sizeof(r));
        r.url = (c->index + a) % c->run->nurls;
        long st = history_attempt(c, &r, "GET", path, NULL, token);
        struct hstep *s = &c->log.steps[si];
        if (st == 200) {
            history_parse_reservation(c->reply.buf, &id, vnis, &n);
            s->readback =
                id == s->resv_id && same_vnis(vnis, n, s->vnis, s->nvnis)
                    ? HREC_READ_SAME
                    : HREC_READ_DIFFERS;
            return;
        }
        if (st >= 400 && st < 500) {
            s->readback = HREC_READ_REFUSED;
            return;
        }
        history_sleep_ms(20L << (a < 4 ? a : 3));
    }
}

/* Reserve step k of job ji on nodes.  -1 when the client broke. */
static int step_reserve(struct client *c, uint64_t ji, int k,
                        const char *nodes, const char *token)
{
    const struct hjob *j = &c->log.jobs[ji];
    struct hstep *s = hrec_add_step(&c->log);
    char path[256], body[256], step[HREC_STEP_SIZE];
    struct hrec *last = NULL;
    bool amb = false;

    if (!s)
        return -1;
    size_t si = c->log.nsteps - 1;
    int room = HREC_MAX_VNIS - j->vni_count;
    s->job = ji;
    snprintf(s->step, sizeof(s->step), "%d", k);
    s->vni_count = 1
                   + (int)(history_rng(&c->rng)
                           % (uint64_t)(room < HSTEPS_MAX_VNIS
                                            ? room
                                            : HSTEPS_MAX_VNIS));
    s->live_until = INT64_MAX;
    snprintf(step, sizeof(step), "%s", s->step);
    step_path(path, sizeof(path), j->job, step);
    snprintf(body, sizeof(body), "{\"nodes\":\"%s\",\"vni_count\":%d}", nodes,
             s->vni_count);
    long st = history_request(c, ji, HREC_STEP_RESERVE, NULL, step, "PUT",
                              path, body, token, NULL, &amb, &last);
    if (st < 0)
        return -1;
    s = &c->log.steps[si];
    s->ambiguous = amb;
    if (st == 200 || st == 201) {
        s->acked = true;
        s->acked_status = st;
        s->live_from = last->recv_mono;
        history_parse_reservation(c->reply.buf, &s->resv_id, s->vnis,
                                  &s->nvnis);
        step_read_back(c, si, path, token);
        return 0;
    }
    s->refused = st == 503 && !strcmp(last->code, "vni_pool_exhausted");
    if (!amb)
        return 0;
    /* An unseen attempt may hold VNIs: end the step, as a step manager
     * would a step that failed to start.  An orphan that commits after
     * this end is released with the job. */
    st = history_request(c, ji, HREC_STEP_CLEANUP, NULL, step, "DELETE",
                         path, NULL, token, NULL, &amb, &last);
    return st < 0 ? -1 : 0;
}

/* End acknowledged step si.  -1 when the client broke. */
static int step_end(struct client *c, size_t si, const char *token)
{
    struct hstep *s = &c->log.steps[si];
    char path[256], step[HREC_STEP_SIZE];
    struct hrec *last = NULL;
    int64_t t_send = 0;
    bool amb = false;

    if (!s->acked)
        return 0;
    uint64_t ji = s->job;
    snprintf(step, sizeof(step), "%s", s->step);
    step_path(path, sizeof(path), c->log.jobs[ji].job, step);
    long st = history_request(c, ji, HREC_STEP_END, NULL, step, "DELETE",
                              path, NULL, token, &t_send, &amb, &last);
    if (st < 0)
        return -1;
    s = &c->log.steps[si];
    /* Its VNIs may be free from the first attempt on, answered or not. */
    s->live_until = t_send;
    s->ended = st == 202;
    return 0;
}

int hsteps_run(struct client *c, uint64_t ji, const char *hostlist,
               const char *token)
{
    size_t first = c->log.nsteps;
    int n = 1 + (int)(history_rng(&c->rng) % HSTEPS_MAX);
    char node0[HREC_NODE_SIZE];

    snprintf(node0, sizeof(node0), "%s", c->log.jobs[ji].nodes[0]);
    for (int k = 0; k < n; k++)
        if (step_reserve(c, ji, k, k == 0 ? hostlist : node0, token) < 0)
            return -1;
    for (size_t si = first; si < c->log.nsteps; si++)
        if (step_end(c, si, token) < 0)
            return -1;
    return 0;
}

void hsteps_job_released(struct client *c, uint64_t ji, int64_t t_send,
                         bool acked)
{
    for (size_t si = c->log.nsteps; si-- > 0 && c->log.steps[si].job == ji;) {
        struct hstep *s = &c->log.steps[si];
        if (s->ended)
            continue;
        if (s->live_until > t_send)
            s->live_until = t_send;
        s->abandoned = !acked;
    }
}
