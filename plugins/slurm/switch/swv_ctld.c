/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_ctld: the controller side of switch/vnib (see swv_ctld.h).
 *
 * In slurmctld (swv_ctld_start) the state below is the process's: three
 * clients of the broker kept open (swv_conn.h), one per caller thread
 * (the job-lock path, the outbox's thread, the free count's poll thread);
 * the reservations this slurmctld made, by job, so that a job's later
 * steps and its release name it; and the release outbox (swv_outbox.h).
 * Anywhere else (a job's stepmgr) each call makes its own client, with
 * the job's token.  Requests are bounded by vnib_timeout_ms: slurmctld
 * holds its job lock during a step's reserve, so an unreachable broker
 * costs at most that per step.
 */
#include "swv_ctld.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "swv_broker.h"
#include "swv_conn.h"
#include "swv_outbox.h"
#include "vnib/client.h"
#include "vnib/monotime.h"

/* The reservations this slurmctld made, by job (chained buckets). */
#define JOBMAP_BUCKETS 4096
#define JOBMAP_MAX (1 << 20)
struct jobmap_node {
    uint32_t job_id;
    long long resv;
    int vnis; /* how many VNIs the reservation holds */
    struct jobmap_node *next;
};

struct ctld_state {
    struct swv_config cfg; /* as at start, for the threads */
    swv_log_fn *log;
    struct swv_conn_slot lockpath, sender, poll;
    pthread_mutex_t map_lock;
    struct jobmap_node *map[JOBMAP_BUCKETS];
    size_t map_count;
    struct swv_outbox *outbox;
};

/* slurmctld's, from swv_ctld_start to swv_ctld_stop; NULL elsewhere. */
static struct ctld_state *ctld;

/* ---- the reservations this slurmctld made --------------------------------
 */

static struct jobmap_node **map_find(struct ctld_state *st, uint32_t job_id)
{
    struct jobmap_node **pp = &st->map[job_id % JOBMAP_BUCKETS];

    while (*pp && (*pp)->job_id != job_id)
        pp = &(*pp)->next;
    return pp;
}

/* The reservation of job_id this slurmctld made, 0 when none, and the
 * VNIs it holds into *vnisp (-1 when none is known). */
static long long map_get(struct ctld_state *st, uint32_t job_id, int *vnisp)
{
    struct jobmap_node **pp;
    long long resv;

    pthread_mutex_lock(&st->map_lock);
    pp = map_find(st, job_id);
    resv = *pp ? (*pp)->resv : 0;
    *vnisp = *pp ? (*pp)->vnis : -1;
    pthread_mutex_unlock(&st->map_lock);
    return resv;
}

static void map_set(struct ctld_state *st,
                    uint32_t job_id,
                    long long resv,
                    int vnis)
{
    struct jobmap_node **pp, *n;

    pthread_mutex_lock(&st->map_lock);
    pp = map_find(st, job_id);
    if (*pp) {
        (*pp)->resv = resv;
        (*pp)->vnis = vnis;
    } else if (st->map_count < JOBMAP_MAX && (n = malloc(sizeof(*n)))) {
        *n = (struct jobmap_node){job_id, resv, vnis, NULL};
        *pp = n;
        st->map_count++;
    }
    pthread_mutex_unlock(&st->map_lock);
}

/* Forget job_id; its reservation (0 when none). */
static long long map_take(struct ctld_state *st, uint32_t job_id)
{
    struct jobmap_node **pp, *n;
    long long resv = 0;

    pthread_mutex_lock(&st->map_lock);
    pp = map_find(st, job_id);
    if ((n = *pp)) {
        resv = n->resv;
        *pp = n->next;
        free(n);
        st->map_count--;
    }
    pthread_mutex_unlock(&st->map_lock);
    return resv;
}

/* A job id as the broker knows it (digits), as a number; 0 when not. */
static uint32_t job_number(const char *job_id)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(job_id, &end, 10);
    if (errno || end == job_id || *end || v == 0 || v > UINT32_MAX)
        return 0;
    return (uint32_t)v;
}

/* A step id (digits, 0 included) as a number; -1 when not one. */
static int step_number(const char *step_id, uint32_t *stepp)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(step_id, &end, 10);
    if (errno || end == step_id || *end || v > UINT32_MAX || step_id[0] == '-'
        || step_id[0] == '+' || step_id[0] == ' ')
        return -1;
    *stepp = (uint32_t)v;
    return 0;
}

static double ms_since(int64_t t0)
{
    return (double)(monotime_ns() - t0) / 1e6;
}

/* ---- reserving -------------------------------------------------------------
 */

/* The broker's error code in a reply ({"error": {"code": ...}}), or "". */
static const char *reply_code(const json_t *reply)
{
    const char *code = json_string_value(
        json_object_get(json_object_get(reply, "error"), "code"));

    return code != NULL ? code : "";
}

/* The broker's message in a reply ({"error": {"message": ...}}), or "". */
static const char *reply_message(const json_t *reply)
{
    const char *m = json_string_value(
        json_object_get(json_object_get(reply, "error"), "message"));

    return m != NULL ? m : "";
}

/* How many VNIs of key ("vnis", "job_vnis") a reply lists; -1 none. */
static int reply_vnis(const json_t *reply, const char *key)
{
    const json_t *a = json_object_get(reply, key);

    return json_is_array(a) ? (int)json_array_size(a) : -1;
}

/* errno for a refusal: EAGAIN for an exhausted pool (the step may wait
 * and retry), EBUSY for any other 503 (the broker cannot serve for now:
 * unavailable, database_unavailable, deadline_exceeded, as while its
 * database fails over; the step may be retried), EACCES for a role
 * refused, EINVAL otherwise. */
static int refusal_errno(int status, const json_t *reply)
{
    if (status == 503 && strcmp(reply_code(reply), "vni_pool_exhausted") == 0)
        return EAGAIN;
    if (status == 503)
        return EBUSY;
    if (status == 401 || status == 403)
        return EACCES;
    return EINVAL;
}

/* The id of the reservation a reserve call answered with (200 or 201);
 * else -1 with errno from refusal_errno and errp naming what (a job or
 * a step) was refused. */
static int reserved_id(int status,
                       const json_t *reply,
                       const char *what,
                       long long *idp,
                       vnib_error_t *errp)
{
    if (status != 200 && status != 201) {
        errno = refusal_errno(status, reply);
        return errprintf(errp,
                         "%s: the broker refused the reservation (%d %s%s%s)",
                         what,
                         status,
                         reply_code(reply),
                         reply_message(reply)[0] != '\0' ? ": " : "",
                         reply_message(reply));
    }
    *idp = (long long)json_integer_value(json_object_get(reply, "id"));
    return 0;
}

/* Reserve the job: *idp its id, *vnisp (when not NULL) how many VNIs
 * it holds, jd (when not NULL) its job token. */
static int reserve_job(struct swv_conn *cc,
                       const struct swv_step_req *req,
                       const struct swv_network *net,
                       long long *idp,
                       int *vnisp,
                       struct swv_jobdata *jd,
                       vnib_error_t *errp)
{
    const char *token;
    char name[256] = "";
    struct passwd pw, *pwp = NULL;
    char pwbuf[4096];
    struct vnib_reserve r = {
        .job_id = req->job_id,
        .uid = req->uid,
        .user = req->user,
        .nodes = req->job_nodes,
        .vni_count = net->vnis,
        .hwcoll = net->hwcoll[0] != '\0' ? net->hwcoll : NULL,
    };
    json_t *reply = NULL;
    char what[64];
    int status, rc = -1;

    if (r.user == NULL || r.user[0] == '\0') {
        if (getpwuid_r((uid_t)req->uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0
            && pwp != NULL)
            snprintf(name, sizeof(name), "%s", pwp->pw_name);
        else
            snprintf(name, sizeof(name), "%u", (unsigned)req->uid);
        r.user = name;
    }
    snprintf(what, sizeof(what), "job %s", req->job_id);
    status = cc->api->reserve(cc->c, &r, &reply, errp);
    if (status < 0 || reserved_id(status, reply, what, idp, errp) < 0)
        goto cleanup;
    if (vnisp != NULL)
        *vnisp = reply_vnis(reply, "vnis");
    if (jd != NULL) {
        token = json_string_value(json_object_get(reply, "job_token"));
        if (token == NULL || strlen(token) >= sizeof(jd->token)) {
            errno = EPROTO;
            errprintf(errp,
                      "%s: the broker gave no job token (is "
                      "auth.node_key_file set?)",
                      what);
            goto cleanup;
        }
        jd->job_resv = *idp;
        snprintf(jd->token, sizeof(jd->token), "%s", token);
    }
    rc = 0;
cleanup:
    json_decref(reply);
    return rc;
}

/* When the broker last said it issues no leases (monotonic ms, 0 never):
 * it is not asked for one again for LEASE_RETRY_MS. */
#define LEASE_RETRY_MS 60000
static _Atomic int64_t lease_disabled_at;

/* Reserve the step into out (its id and lease); *statusp the broker's
 * answer (-1 none), *job_vnisp how many VNIs its answer says the job
 * holds (-1 not said). */
static int reserve_step(struct swv_conn *cc,
                        const struct swv_config *cfg,
                        const struct swv_step_req *req,
                        const struct swv_network *net,
                        struct swv_step_resv *out,
                        int *statusp,
                        int *job_vnisp,
                        vnib_error_t *errp)
{
    int64_t off = atomic_load(&lease_disabled_at), now = monotime_ms();
    struct vnib_step_reserve r = {
        .job_id = req->job_id,
        .step_id = req->step_id,
        .nodes = req->step_nodes,
        .vni_count = net->step_vnis,
        .lease = cfg->lease && (off == 0 || now - off >= LEASE_RETRY_MS),
    };
    const char *lease;
    json_t *reply = NULL;
    char what[64];
    int status, rc = -1;

    snprintf(what, sizeof(what), "step %s.%s", req->job_id, req->step_id);
    status = cc->api->step_reserve(cc->c, &r, &reply, errp);
    if (r.lease && status == 400
        && strcmp(reply_code(reply), "lease_disabled") == 0) {
        /* Nothing was made: the same reserve without a lease. */
        atomic_store(&lease_disabled_at, now > 0 ? now : 1);
        out->lease_disabled = 1;
        json_decref(reply);
        reply = NULL;
        r.lease = false;
        status = cc->api->step_reserve(cc->c, &r, &reply, errp);
    }
    *statusp = status;
    *job_vnisp = -1;
    if (status < 0
        || reserved_id(status, reply, what, &out->step_resv, errp) < 0)
        goto cleanup;
    *job_vnisp = reply_vnis(reply, "job_vnis");
    lease = json_string_value(json_object_get(reply, "lease"));
    if (r.lease && lease == NULL) {
        errno = EPROTO;
        errprintf(errp, "%s: the broker's answer has no lease", what);
        goto cleanup;
    }
    if (lease != NULL && (out->lease = strdup(lease)) == NULL) {
        errno = ENOMEM;
        errprintf(errp, "%s: out of memory", what);
        goto cleanup;
    }
    rc = 0;
cleanup:
    json_decref(reply);
    return rc;
}

/* Reserve the step; when its own VNIs are refused for want of them and
 * its step_fallback is job, reserve it again without them if its job
 * holds VNIs (job_vnis, -1 unknown: the step's answer says).  See
 * swv_ctld_step_begin. */
static int reserve_step_or_fallback(struct swv_conn *cc,
                                    const struct swv_config *cfg,
                                    const struct swv_step_req *req,
                                    const struct swv_network *net,
                                    int job_vnis,
                                    struct swv_step_resv *out,
                                    int *statusp,
                                    vnib_error_t *errp)
{
    struct swv_network alone = *net;
    vnib_error_t why = {0}, ignored = {0};
    json_t *reply = NULL;
    int answer_vnis = -1;

    if (reserve_step(cc, cfg, req, net, out, statusp, &answer_vnis, errp) == 0)
        return 0;
    if (errno != EAGAIN || net->step_vnis == 0)
        return -1;
    out->exhausted = 2;
    if (net->step_fallback != SWV_FALLBACK_JOB)
        return -1;
    if (errp)
        why = *errp;
    if (job_vnis == 0) {
        errprintf(errp, "%s; its job holds no VNIs to run on", why.text);
        errno = EAGAIN;
        return -1;
    }
    alone.step_vnis = 0;
    if (reserve_step(cc, cfg, req, &alone, out, statusp, &answer_vnis, errp)
        < 0)
        return -1;
    if (job_vnis < 0 && answer_vnis == 0) {
        /* The job holds none after all (the broker's default is 0): the
         * step reserved without VNIs is released, nothing runs. */
        (void)cc->api->step_release(
            cc->c, req->job_id, req->step_id, false, &reply, &ignored);
        json_decref(reply);
        free(out->lease);
        out->lease = NULL;
        out->step_resv = 0;
        errprintf(errp, "%s; its job holds no VNIs to run on", why.text);
        errno = EAGAIN;
        return -1;
    }
    out->exhausted = 0;
    out->fallback = 1;
    if (errp)
        *errp = why;
    return 0;
}

/* Is e the errno of a transport failure (no HTTP answer; see client.h)? */
static int unreachable(int e)
{
    return e == ECONNREFUSED || e == ETIMEDOUT || e == EIO || e == EPROTO
           || e == EHOSTUNREACH;
}

/* What an unreachable broker means for a step or a job: 0 and out
 * unisolated under vnib_outage=open, else -1 with errno EHOSTUNREACH;
 * any other failure stays as it is. */
static int outage(const struct swv_config *cfg, int *unisolatedp)
{
    if (!unreachable(errno))
        return -1;
    if (cfg->outage == SWV_OUTAGE_OPEN) {
        *unisolatedp = 1;
        return 0;
    }
    errno = EHOSTUNREACH;
    return -1;
}

static int send_release(void *arg,
                        const struct swv_release *r,
                        vnib_error_t *errp);

/* Reserve the job (unless this slurmctld did already) and the step, on
 * cc.  A step refused with 404 or 409 (the job's reservation released or
 * replaced since: an admin's release, the reconcile) has the job reserved
 * anew, then is tried once more. */
static int reserve_in_ctld(struct ctld_state *st,
                           struct swv_conn *cc,
                           const struct swv_config *cfg,
                           const struct swv_step_req *req,
                           const struct swv_network *net,
                           struct swv_step_resv *out,
                           vnib_error_t *errp)
{
    uint32_t job = job_number(req->job_id);
    int status = -1, job_vnis = -1;
    int64_t t0;

    /* A late release of this job must not end what is reserved now. */
    if (job && st->outbox
        && swv_outbox_drain(st->outbox, job, send_release, cc, errp) < 0)
        return -1;
    out->job_resv = job ? map_get(st, job, &job_vnis) : 0;
    for (int tries = 0; tries < 2; tries++) {
        if (out->job_resv == 0) {
            t0 = monotime_ns();
            if (reserve_job(cc, req, net, &out->job_resv, &job_vnis, NULL, errp)
                < 0) {
                out->exhausted = errno == EAGAIN ? 1 : 0;
                return -1;
            }
            out->job_ms = ms_since(t0);
            if (job)
                map_set(st, job, out->job_resv, job_vnis);
        }
        t0 = monotime_ns();
        if (reserve_step_or_fallback(
                cc, cfg, req, net, job_vnis, out, &status, errp)
            == 0) {
            out->step_ms = ms_since(t0);
            return 0;
        }
        if (out->job_ms >= 0 || (status != 404 && status != 409))
            return -1;
        if (job)
            map_take(st, job);
        out->job_resv = 0;
    }
    return -1;
}

int swv_ctld_step_begin(const struct swv_config *cfg,
                        const struct swv_step_req *req,
                        const struct swv_network *net,
                        struct swv_step_resv *out,
                        vnib_error_t *errp)
{
    struct ctld_state *st = req->job_token == NULL ? ctld : NULL;
    struct swv_conn cc = {0};
    int rc = -1, status = -1;
    /* In the stepmgr: what the job's --network says it holds (-1 the
     * broker's default, which the step's answer tells). */
    int job_vnis = net->vnis;
    int64_t t0;

    memset(out, 0, sizeof(*out));
    out->job_ms = out->step_ms = -1;
    if (st) {
        if (swv_conn_get(&st->lockpath, cfg, &cc, errp) < 0)
            goto fail;
        errno = 0;
        rc = reserve_in_ctld(st, &cc, cfg, req, net, out, errp);
        swv_conn_put(&st->lockpath, &cc, rc < 0 && unreachable(errno));
    } else if (swv_conn_open(cfg, req->job_token, &cc, errp) == 0) {
        errno = 0;
        if (req->job_token != NULL) {
            out->job_resv = req->job_resv;
        } else {
            t0 = monotime_ns();
            if (reserve_job(
                    &cc, req, net, &out->job_resv, &job_vnis, NULL, errp)
                < 0) {
                out->exhausted = errno == EAGAIN ? 1 : 0;
                goto fail;
            }
            out->job_ms = ms_since(t0);
        }
        t0 = monotime_ns();
        rc = reserve_step_or_fallback(
            &cc, cfg, req, net, job_vnis, out, &status, errp);
        out->step_ms = ms_since(t0);
    }
fail:
    swv_conn_close(&cc);
    if (rc == 0)
        return 0;
    free(out->lease);
    out->lease = NULL;
    if (outage(cfg, &out->unisolated) == 0) {
        out->job_resv = out->step_resv = 0;
        return 0;
    }
    return -1;
}

int swv_ctld_job_begin(const struct swv_config *cfg,
                       const struct swv_step_req *req,
                       const struct swv_network *net,
                       struct swv_jobdata *out,
                       int *unisolatedp,
                       vnib_error_t *errp)
{
    struct ctld_state *st = ctld;
    uint32_t job = job_number(req->job_id);
    struct swv_conn cc = {0};
    long long id = 0;
    int vnis = -1;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    *unisolatedp = 0;
    if (st) {
        if (swv_conn_get(&st->lockpath, cfg, &cc, errp) < 0)
            goto fail;
        errno = 0;
        if ((!job || !st->outbox
             || swv_outbox_drain(st->outbox, job, send_release, &cc, errp) == 0)
            && reserve_job(&cc, req, net, &id, &vnis, out, errp) == 0) {
            rc = 0;
            if (job)
                map_set(st, job, id, vnis);
        }
        swv_conn_put(&st->lockpath, &cc, rc < 0 && unreachable(errno));
    } else if (swv_conn_open(cfg, NULL, &cc, errp) == 0) {
        errno = 0;
        rc = reserve_job(&cc, req, net, &id, NULL, out, errp);
    }
fail:
    swv_conn_close(&cc);
    if (rc == 0)
        return 0;
    memset(out, 0, sizeof(*out));
    return outage(cfg, unisolatedp);
}

/* ---- releasing -------------------------------------------------------------
 */

/* Send release r on the client cc (the outbox's, or a drain's caller's):
 * the HTTP status, or -1 with errp. */
static int send_release(void *arg,
                        const struct swv_release *r,
                        vnib_error_t *errp)
{
    struct swv_conn *cc = arg;
    char job[16], step[16];
    json_t *reply = NULL;
    int status;

    snprintf(job, sizeof(job), "%" PRIu32, r->job_id);
    snprintf(step, sizeof(step), "%" PRIu32, r->step_id);
    if (r->step)
        status = cc->api->step_release(cc->c, job, step, false, &reply, errp);
    else
        status = cc->api->release(cc->c, job, r->resv, false, &reply, errp);
    json_decref(reply);
    return status;
}

/* The outbox thread's send: on the sender slot's client. */
static int send_queued(void *arg,
                       const struct swv_release *r,
                       vnib_error_t *errp)
{
    struct ctld_state *st = arg;
    struct swv_conn cc;
    int status;

    if (swv_conn_get(&st->sender, &st->cfg, &cc, errp) < 0)
        return -1;
    status = send_release(&cc, r, errp);
    swv_conn_put(&st->sender, &cc, status < 0);
    return status;
}

static void say(struct ctld_state *st,
                enum swv_log_level level,
                const char *fmt,
                ...) __attribute__((format(printf, 3, 4)));

static void say(struct ctld_state *st,
                enum swv_log_level level,
                const char *fmt,
                ...)
{
    char buf[1024];
    va_list ap;

    if (!st->log)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    st->log(level, buf);
}

/* What came of a release the outbox sent. */
static void release_done(void *arg,
                         const struct swv_release *r,
                         int status,
                         double ms,
                         const char *error)
{
    struct ctld_state *st = arg;
    vnib_error_t serr = {0};
    char who[64], job[16];

    snprintf(job, sizeof(job), "%" PRIu32, r->job_id);
    if (r->step)
        snprintf(who, sizeof(who), "JobId=%s StepId=%" PRIu32, job, r->step_id);
    else
        snprintf(who, sizeof(who), "JobId=%s", job);
    if (status == 200 || status == 202 || status == 404) {
        say(st, SWV_LOG_DEBUG, "switch/vnib: %s: released (%.1f ms)", who, ms);
        return;
    }
    if (status < 0 || status == 429 || status >= 500) {
        say(st,
            SWV_LOG_ERROR,
            "switch/vnib: %s: release not taken yet (%s); sent again until "
            "the broker takes it",
            who,
            error);
        return;
    }
    if (r->step) {
        say(st,
            SWV_LOG_ERROR,
            "switch/vnib: %s: the broker refused the step's release (%s); "
            "the job's release releases it",
            who,
            error);
        return;
    }
    if (swv_ctld_spool(st->cfg.spool, job, error, &serr) < 0)
        say(st,
            SWV_LOG_ERROR,
            "switch/vnib: %s: RELEASE FAILED (%s) and not spooled: %s",
            who,
            error,
            serr.text);
    else
        say(st,
            SWV_LOG_ERROR,
            "switch/vnib: %s: the broker refused the release (%s); spooled "
            "in %s/%s for the reconcile",
            who,
            error,
            st->cfg.spool,
            job);
}

int swv_ctld_step_end(const struct swv_config *cfg,
                      const char *job_token,
                      const char *job_id,
                      const char *step_id,
                      vnib_error_t *errp)
{
    struct ctld_state *st = job_token == NULL ? ctld : NULL;
    struct swv_release r = {.step = true, .job_id = job_number(job_id)};
    struct swv_conn cc = {0};
    json_t *reply = NULL;
    int status, rc = -1;

    if (st && st->outbox && r.job_id && step_number(step_id, &r.step_id) == 0
        && swv_outbox_add(st->outbox, &r, errp) == 0)
        return 1;
    if (swv_conn_open(cfg, job_token, &cc, errp) < 0)
        goto cleanup;
    status = cc.api->step_release(cc.c, job_id, step_id, false, &reply, errp);
    if (status < 0)
        goto cleanup;
    if (status != 200 && status != 202 && status != 404) {
        errno = EINVAL;
        errprintf(errp,
                  "step %s.%s: the broker refused the release (%d %s)",
                  job_id,
                  step_id,
                  status,
                  reply_code(reply));
        goto cleanup;
    }
    rc = 0;
cleanup:
    json_decref(reply);
    swv_conn_close(&cc);
    return rc;
}

int swv_ctld_job_end(const struct swv_config *cfg,
                     const char *job_id,
                     vnib_error_t *errp)
{
    struct ctld_state *st = ctld;
    struct swv_release r = {.job_id = job_number(job_id)};
    struct swv_conn cc = {0};
    vnib_error_t why = {0}, serr = {0};
    json_t *reply = NULL;
    int status = -1;

    if (st && r.job_id) {
        r.resv = map_take(st, r.job_id);
        if (st->outbox && swv_outbox_add(st->outbox, &r, &why) == 0)
            return 0;
    }
    if (swv_conn_open(cfg, NULL, &cc, &why) == 0) {
        status = cc.api->release(cc.c, job_id, r.resv, false, &reply, &why);
        if (status >= 400 && status != 404)
            errprintf(&why,
                      "the broker refused the release (%d %s)",
                      status,
                      reply_code(reply));
    }
    json_decref(reply);
    swv_conn_close(&cc);
    if (status == 200 || status == 202 || status == 404)
        return 0;
    if (swv_ctld_spool(cfg->spool, job_id, why.text, &serr) < 0) {
        errprintf(errp,
                  "job %s: RELEASE FAILED (%s) and not spooled: %s",
                  job_id,
                  why.text,
                  serr.text);
        return -1;
    }
    errprintf(errp,
              "job %s: release failed (%s); spooled in %s/%s",
              job_id,
              why.text,
              cfg->spool,
              job_id);
    return 1;
}

int swv_ctld_pool_free(const struct swv_config *cfg,
                       long *freep,
                       long *per_job_defaultp,
                       vnib_error_t *errp)
{
    struct ctld_state *st = ctld;
    struct swv_conn cc = {0};
    json_t *reply = NULL, *f, *d;
    int status = -1, rc = -1;

    if (st ? swv_conn_get(&st->poll, cfg, &cc, errp) < 0
           : swv_conn_open(cfg, NULL, &cc, errp) < 0)
        return -1;
    status = cc.api->request(cc.c, "GET", "/v1/pool", NULL, &reply, errp);
    if (status < 0)
        goto cleanup;
    f = json_object_get(reply, "free");
    d = json_object_get(reply, "per_job_default");
    if (status != 200 || !json_is_integer(f) || !json_is_integer(d)) {
        errno = EPROTO;
        errprintf(errp, "GET /v1/pool: HTTP %d without free counts", status);
        goto cleanup;
    }
    *freep = (long)json_integer_value(f);
    *per_job_defaultp = (long)json_integer_value(d);
    rc = 0;
cleanup:
    json_decref(reply);
    if (st)
        swv_conn_put(&st->poll, &cc, status < 0);
    else
        swv_conn_close(&cc);
    return rc;
}

/* ---- slurmctld's start and stop --------------------------------------------
 */

int swv_ctld_start(const struct swv_config *cfg,
                   swv_log_fn *log,
                   vnib_error_t *errp)
{
    struct ctld_state *st;
    vnib_error_t oerr = {0};
    char dir[SWV_PATH_MAX + 16];

    if (ctld)
        return 0;
    if (!(st = calloc(1, sizeof(*st)))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    st->cfg = *cfg;
    st->log = log;
    swv_conn_slot_init(&st->lockpath);
    swv_conn_slot_init(&st->sender);
    swv_conn_slot_init(&st->poll);
    pthread_mutex_init(&st->map_lock, NULL);
    ctld = st;
    snprintf(dir, sizeof(dir), "%s/outbox", cfg->spool);
    if (!(st->outbox =
              swv_outbox_create(dir, send_queued, release_done, st, &oerr))) {
        int e = errno;

        errprintf(errp,
                  "release outbox: %s; releases are made under the job lock",
                  oerr.text);
        errno = e;
        return -1;
    }
    return 0;
}

void swv_ctld_stop(void)
{
    struct ctld_state *st = ctld;

    if (!st)
        return;
    swv_outbox_destroy(st->outbox);
    st->outbox = NULL;
    /* The rest stays for the process's last moments: the plugin may be
     * called until it is unloaded, and its calls use the clients. */
}

/* Make dir (0700) if missing; refuse one others may write. */
static int spool_dir(const char *dir, vnib_error_t *errp)
{
    struct stat st;
    char parent[SWV_PATH_MAX], *slash;

    if (mkdir(dir, 0700) < 0 && errno == ENOENT) {
        /* one missing level above, as `mkdir -p` would for the default */
        snprintf(parent, sizeof(parent), "%s", dir);
        if ((slash = strrchr(parent, '/')) != NULL && slash != parent) {
            *slash = '\0';
            (void)mkdir(parent, 0755);
        }
        (void)mkdir(dir, 0700);
    }
    if (lstat(dir, &st) < 0)
        return errprintf(errp, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return errprintf(errp, "%s is not a directory", dir);
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        errno = EPERM;
        return errprintf(errp, "%s is writable by others; refusing", dir);
    }
    return 0;
}

int swv_ctld_spool(const char *dir,
                   const char *job_id,
                   const char *error,
                   vnib_error_t *errp)
{
    char tmp[SWV_PATH_MAX + 64], dst[SWV_PATH_MAX + 32], when[32];
    const char *p;
    struct tm tm;
    time_t now = time(NULL);
    FILE *f = NULL;
    int fd = -1, rc = -1;

    if (job_id[0] == '\0' || strspn(job_id, "0123456789") != strlen(job_id)
        || strlen(job_id) > 20) {
        errno = EINVAL;
        return errprintf(errp, "job id '%s' is not a number", job_id);
    }
    if (spool_dir(dir, errp) < 0)
        return -1;
    snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", dir, job_id, (long)getpid());
    snprintf(dst, sizeof(dst), "%s/%s", dir, job_id);
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if ((fd = open(
             tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600))
        < 0) {
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if ((f = fdopen(fd, "w")) == NULL) {
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    fd = -1;
    fprintf(f, "job %s\nfailed_at %s\nerror ", job_id, when);
    for (p = error; *p != '\0'; p++) /* one line */
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
    if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if (fclose(f) != 0) {
        f = NULL;
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    f = NULL;
    if (rename(tmp, dst) < 0) {
        errprintf(errp, "%s: %s", dst, strerror(errno));
        goto cleanup;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(fd);
        close(fd);
        fd = -1;
    }
    rc = 0;
cleanup:
    if (f != NULL)
        fclose(f);
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}
