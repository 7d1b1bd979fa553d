/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The history of a stress run: per-thread arrays of request attempts and
 * jobs, and their JSON-lines form (see hrec.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "tests/stress/hrec.h"

static const char *const op_names[HREC_OPS] = {
    "reserve",  "created",      "release",  "destroyed", "cleanup",
    "creating", "step_reserve", "step_end", "step_cleanup"};

/* Make room for one more element of size elem in *arr. */
static void *grow(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        void *p = realloc(*arr, ncap * elem);
        if (!p) {
            errno = ENOMEM;
            return NULL;
        }
        *arr = p;
        *cap = ncap;
    }
    char *slot = (char *)*arr + *n * elem;
    memset(slot, 0, elem);
    (*n)++;
    return slot;
}

struct hrec *hrec_add(struct hrec_log *log)
{
    void *arr = log->recs;
    struct hrec *r = grow(&arr, &log->nrecs, &log->recs_cap, sizeof(*r));
    log->recs = arr;
    return r;
}

struct hjob *hrec_add_job(struct hrec_log *log)
{
    void *arr = log->jobs;
    struct hjob *j = grow(&arr, &log->njobs, &log->jobs_cap, sizeof(*j));
    log->jobs = arr;
    return j;
}

struct hstep *hrec_add_step(struct hrec_log *log)
{
    void *arr = log->steps;
    struct hstep *s = grow(&arr, &log->nsteps, &log->steps_cap, sizeof(*s));
    log->steps = arr;
    return s;
}

void hrec_log_cleanup(struct hrec_log *log)
{
    if (!log)
        return;
    free(log->recs);
    free(log->jobs);
    free(log->steps);
    memset(log, 0, sizeof(*log));
}

int64_t hrec_now(int clock_id)
{
    struct timespec ts;

    clock_gettime((clockid_t)clock_id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

const char *hrec_op_name(enum hrec_op op)
{
    return (unsigned)op < HREC_OPS ? op_names[op] : "?";
}

enum hrec_cxi hrec_cxi_of(const char *cxi)
{
    static const char *const names[] = {"", "creating", "created",
                                        "destroyed"};

    for (int i = HREC_IS_CREATING; cxi && i <= HREC_IS_DESTROYED; i++)
        if (!strcmp(cxi, names[i]))
            return (enum hrec_cxi)i;
    return HREC_NONE;
}

void hrec_parse_error(struct hrec *r, const char *buf, size_t len)
{
    json_t *j = json_loadb(buf ? buf : "", buf ? len : 0, 0, NULL);
    json_t *err = json_object_get(j, "error");
    const char *code = json_string_value(json_object_get(err, "code"));
    const char *msg = json_string_value(json_object_get(err, "message"));

    snprintf(r->code, sizeof(r->code), "%s", code ? code : "");
    snprintf(r->message, sizeof(r->message), "%s", msg ? msg : "");
    r->deadlock = buf && strstr(buf, "deadlock") != NULL; /* NUL-ended */
    json_decref(j);
}

const char *hrec_expired_where(const struct hrec *r)
{
    if (r->status != 503 || strcmp(r->code, "deadline_exceeded"))
        return NULL;
    if (strstr(r->message, "waited to be written"))
        return "group";
    if (strstr(r->message, "for a worker"))
        return "worker";
    return "other";
}

static json_t *vni_array(const int *vnis, int n)
{
    json_t *a = json_array();

    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer(vnis[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Write o as one line and drop it.  -1 when o is NULL or writing fails. */
static int put_line(FILE *f, json_t *o)
{
    int rc = -1;

    if (!o) {
        errno = ENOMEM;
        return -1;
    }
    if (json_dumpf(o, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF)
        rc = 0;
    json_decref(o);
    return rc;
}

static json_t *rec_json(const struct hrec_log *log,
                        const struct hrec *r,
                        const char *const *urls)
{
    const char *job = r->job < log->njobs ? log->jobs[r->job].job : "";

    return json_pack(
        "{s:s, s:i, s:s, s:s, s:s?, s:i, s:s, s:s?, s:I, s:I, s:I, s:I, s:i,"
        " s:s?, s:s?, s:s?, s:b, s:I, s:o, s:o, s:s?}",
        "type", "request",
        "thread", r->thread,
        "op", hrec_op_name(r->op),
        "job", job,
        "step", r->step[0] ? r->step : NULL,
        "attempt", r->attempt,
        "url", urls[r->url],
        "node", r->node[0] ? r->node : NULL,
        "send_mono_ns", (json_int_t)r->send_mono,
        "send_real_ns", (json_int_t)r->send_real,
        "recv_mono_ns", (json_int_t)r->recv_mono,
        "recv_real_ns", (json_int_t)r->recv_real,
        "status", (int)r->status,
        "transport", r->transport[0] ? r->transport : NULL,
        "code", r->code[0] ? r->code : NULL,
        "message", r->message[0] ? r->message : NULL,
        "deadlock", r->deadlock,
        "reservation_id", (json_int_t)r->resv_id,
        "vnis", vni_array(r->vnis, r->nvnis),
        "deadline_ms", r->deadline_ms ? json_integer(r->deadline_ms)
                                      : json_null(),
        "expired", hrec_expired_where(r));
}

static json_t *job_json(const struct hjob *j)
{
    return json_pack(
        "{s:s, s:s, s:i, s:i, s:i, s:b, s:b, s:b, s:b, s:I, s:i, s:b, s:b,"
        " s:i, s:o, s:I, s:I}",
        "type", "job",
        "job", j->job,
        "thread", j->thread,
        "vni_count", j->vni_count,
        "nodes", j->nnodes,
        "acked", j->acked,
        "refused", j->refused,
        "ambiguous", j->ambiguous,
        "abandoned", j->abandoned,
        "reservation_id", (json_int_t)j->resv_id,
        "acked_status", (int)j->acked_status,
        "short_deadline", j->short_deadline,
        "give_up", j->give_up,
        "deadline_expired", j->expired,
        "vnis", vni_array(j->vnis, j->nvnis),
        "live_from_mono_ns", (json_int_t)j->live_from,
        "live_until_mono_ns", (json_int_t)j->live_until);
}

static json_t *step_json(const struct hrec_log *log, const struct hstep *s)
{
    static const char *const readback[] = {"not_read", "same", "differs",
                                           "refused"};
    const char *job = s->job < log->njobs ? log->jobs[s->job].job : "";

    return json_pack(
        "{s:s, s:s, s:s, s:i, s:b, s:i, s:b, s:b, s:b, s:b, s:I, s:o, s:I,"
        " s:I, s:s}",
        "type", "step",
        "job", job,
        "step", s->step,
        "vni_count", s->vni_count,
        "acked", s->acked,
        "acked_status", (int)s->acked_status,
        "refused", s->refused,
        "ambiguous", s->ambiguous,
        "ended", s->ended,
        "abandoned", s->abandoned,
        "reservation_id", (json_int_t)s->resv_id,
        "vnis", vni_array(s->vnis, s->nvnis),
        "live_from_mono_ns", (json_int_t)s->live_from,
        "live_until_mono_ns", (json_int_t)s->live_until,
        "readback", readback[s->readback]);
}

int hrec_write_json(FILE *f, const struct hrec_log *log,
                    const char *const *urls)
{
    for (size_t i = 0; i < log->nrecs; i++)
        if (put_line(f, rec_json(log, &log->recs[i], urls)) < 0)
            return -1;
    for (size_t i = 0; i < log->njobs; i++)
        if (put_line(f, job_json(&log->jobs[i])) < 0)
            return -1;
    for (size_t i = 0; i < log->nsteps; i++)
        if (put_line(f, step_json(log, &log->steps[i])) < 0)
            return -1;
    return 0;
}
