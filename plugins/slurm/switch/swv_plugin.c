/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_plugin: the Slurm switch plugin "switch/vnib", its logic (see
 * swv_plugin.h; the symbols Slurm looks up are in swv_iface*.c).
 *
 * It takes what it needs out of step_record_t, job_record_t and
 * stepd_step_rec_t (fields every supported release has under the same
 * names) and hands plain values to the plugin's modules: swv_opts
 * (SwitchParameters and --network), swv_jobinfo (what travels with a
 * step or a job) and swv_free (slurmctld's free count), and to the
 * helper's (swv_helper.h, loaded by swv_load where a call needs it):
 * swv_ctld (the broker calls of slurmctld and the stepmgr) and swv_node
 * (the agent's code in slurmstepd).  See plugins/slurm/README.md,
 * "switch/vnib".
 *
 * plugin_id: Slurm uses 100-105 (slurm.h, enum switch_plugin_type; each
 * release adds ids after the last, one at a time).  switch_g_init() loads
 * every switch plugin it finds and refuses duplicate ids, so ours is far
 * outside that sequence: 0x564e4942, "VNIB" in ASCII.
 */
#include "swv_plugin.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "swv_free.h"
#include "swv_load.h"
#include "swv_opts.h"
#include "vnib/monotime.h"

const char plugin_name[] = "switch vnibroker plugin";
const char plugin_type[] = "switch/vnib";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;
const uint32_t plugin_id = 0x564e4942u;

/* SwitchParameters, parsed at init. */
static struct swv_config swv_cfg;

/* Whether slurmctld's log said that the broker issues no leases. */
static atomic_bool lease_disabled_said;

/* slurmctld's free count, started at the first test call (25.11+). */
static pthread_once_t free_once = PTHREAD_ONCE_INIT;
static struct swv_free *free_count;

/* In a job's stepmgr (a slurmstepd serving one job): that job's data as
 * slurmctld sent it, for the step releases, which Slurm hands no job. */
static pthread_mutex_t stepmgr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swv_jobdata stepmgr_job;

static int load_config(void)
{
    vnib_error_t err = {0};

    if (swv_config_parse(&swv_cfg, slurm_conf.switch_param, &err) < 0) {
        error("switch/vnib: %s", err.text);
        return SLURM_ERROR;
    }
    /* As Slurm's warning(), which 22.05's headers do not declare. */
    if (swv_cfg.warning[0] != '\0')
        info("warning: switch/vnib: %s", swv_cfg.warning);
    return SLURM_SUCCESS;
}

/* The helper, loaded at the first need (see swv_load.h), or NULL with
 * the reason logged: what needs it fails closed. */
static const struct swv_helper *helper(const char *who)
{
    vnib_error_t err = {0};
    const struct swv_helper *h = swv_load(&swv_cfg, &err);

    if (!h)
        error(
            "switch/vnib: %s: cannot load the switch helper (%s); "
            "refused",
            who,
            err.text);
    return h;
}

/* The helper's threads' messages, into slurmctld's log. */
static void helper_log(enum swv_log_level level, const char *message)
{
    if (level == SWV_LOG_ERROR)
        error("%s", message);
    else if (level == SWV_LOG_INFO)
        info("%s", message);
    else
        debug("%s", message);
}

/* slurmctld loads the helper at once: its first step would otherwise
 * wait for it under the job lock, and a missing helper is said at start.
 * srun, slurmd and slurmstepd load nothing here. */
int swv_plugin_init(void)
{
    vnib_error_t err = {0};
    const struct swv_helper *h;

    if (load_config() != SLURM_SUCCESS)
        return SLURM_ERROR;
    if (!running_in_slurmctld())
        return SLURM_SUCCESS;
    if (!(h = helper("slurmctld")))
        return SLURM_SUCCESS; /* every step fails closed, each saying why */
    if (h->ctld_start(&swv_cfg, helper_log, &err) < 0)
        error("switch/vnib: %s", err.text);
    return SLURM_SUCCESS;
}

void swv_plugin_fini(void)
{
    const struct swv_helper *h = swv_loaded();

    swv_free_destroy(free_count);
    free_count = NULL;
    if (h && running_in_slurmctld())
        h->ctld_stop();
    else if (h)
        h->node_stop(); /* a step's report, which logs through us */
}

/* ---- what travels with a step -------------------------------------------
 */

struct swv_step *swv_step_new(uint32_t job_id, uint32_t step_id)
{
    struct swv_step *si = xmalloc(sizeof(*si));

    si->info.job_id = job_id;
    si->info.step_id = step_id;
    return si;
}

struct swv_step *swv_step_dup(const struct swv_step *src)
{
    struct swv_step *si = xmalloc(sizeof(*si));

    /* Without its lease (out of memory) a node asks the broker instead. */
    if (src != NULL && swv_jobinfo_copy(&si->info, &src->info) < 0)
        error("switch/vnib: JobId=%u StepId=%u: out of memory for its lease",
              src->info.job_id,
              src->info.step_id);
    return si;
}

void swv_step_free(struct swv_step *si)
{
    if (si != NULL)
        swv_jobinfo_clear(&si->info);
    xfree(si);
}

void swv_step_pack(const struct swv_step *si, buf_t *buffer)
{
    uint8_t *wire;
    size_t n;

    if (si == NULL) {
        packmem(NULL, 0, buffer);
        return;
    }
    n = swv_jobinfo_wire_size(&si->info);
    wire = xmalloc(n);
    swv_jobinfo_encode(&si->info, wire);
    packmem((char *)wire, (uint32_t)n, buffer);
    xfree(wire);
}

int swv_step_unpack(struct swv_step **sip, buf_t *buffer)
{
    vnib_error_t err = {0};
    char *data = NULL;
    uint32_t len = 0;
    struct swv_step *si;

    *sip = NULL;
    if (unpackmem_xmalloc(&data, &len, buffer) != SLURM_SUCCESS) {
        error("switch/vnib: step data: unpack error");
        return SLURM_ERROR;
    }
    si = xmalloc(sizeof(*si));
    if (len > 0
        && swv_jobinfo_decode((uint8_t *)data, len, &si->info, &err) < 0) {
        error("switch/vnib: %s", err.text);
        xfree(data);
        xfree(si);
        return SLURM_ERROR;
    }
    xfree(data);
    *sip = si;
    return SLURM_SUCCESS;
}

/* ---- what travels with a job (24.05+) ------------------------------------
 */

#if SWV_IFACE >= 24

void swv_jobdata_pack(const void *jdp, buf_t *buffer)
{
    uint8_t wire[SWV_JOBDATA_WIRE_MAX];
    size_t n;

    if (jdp == NULL) {
        packmem(NULL, 0, buffer);
        return;
    }
    n = swv_jobdata_encode(jdp, wire);
    packmem((char *)wire, (uint32_t)n, buffer);
    explicit_bzero(wire, sizeof(wire));
}

int swv_jobdata_unpack(void **jdp, buf_t *buffer)
{
    vnib_error_t err = {0};
    struct swv_jobdata *jd = NULL;
    char *data = NULL;
    uint32_t len = 0;

    *jdp = NULL;
    if (unpackmem_xmalloc(&data, &len, buffer) != SLURM_SUCCESS) {
        error("switch/vnib: job data: unpack error");
        return SLURM_ERROR;
    }
    if (len == 0) {
        xfree(data);
        return SLURM_SUCCESS;
    }
    jd = xmalloc(sizeof(*jd));
    if (swv_jobdata_decode((uint8_t *)data, len, jd, &err) < 0) {
        error("switch/vnib: %s", err.text);
        explicit_bzero(data, len);
        xfree(data);
        xfree(jd);
        return SLURM_ERROR;
    }
    explicit_bzero(data, len);
    xfree(data);
    /* A slurmstepd unpacks a job record only as the job's stepmgr. */
    if (running_in_slurmstepd()) {
        pthread_mutex_lock(&stepmgr_lock);
        stepmgr_job = *jd;
        pthread_mutex_unlock(&stepmgr_lock);
    }
    *jdp = jd;
    return SLURM_SUCCESS;
}

void swv_jobdata_free(void *jdp)
{
    if (jdp != NULL)
        explicit_bzero(jdp, sizeof(struct swv_jobdata));
    xfree(jdp);
}
#endif

/* ---- slurmctld and the stepmgr -------------------------------------------
 */

/* "N.N ms" for a request made, "known" for none. */
static const char *ms_text(double ms, char *buf, size_t size)
{
    if (ms < 0)
        snprintf(buf, size, "known");
    else
        snprintf(buf, size, "%.1f ms", ms);
    return buf;
}

/* A step's reserve failed (e its errno): log why and set Slurm's errno.
 * A short pool (EAGAIN) is retried by srun (ESLURM_INTERCONNECT_BUSY,
 * before 25.11) unless the step's own VNIs were refused under
 * step_fallback=fail, and so is a broker that answered it cannot serve
 * for now (EBUSY: a 503 other than vni_pool_exhausted, as during a
 * database failover); elsewhere the step fails. */
static void step_refused(const char *job,
                         const char *step,
                         const struct swv_network *net,
                         const struct swv_step_resv *resv,
                         int e,
                         const vnib_error_t *err)
{
    const char *then = "";
    int rc = ESLURM_INTERCONNECT_FAILURE;

    if (e == EAGAIN && resv->exhausted == 2
        && net->step_fallback == SWV_FALLBACK_FAIL)
        then = "; the step fails (vnib_step_fallback=fail)";
    else if (e == EAGAIN) {
        rc = SWV_ERR_BUSY;
        then = SWV_IFACE == 25 ? "; the step fails: Slurm 25.11 and later "
                                 "retry no step a switch plugin refuses"
                               : "; srun retries the step until VNIs are "
                                 "free";
    } else if (e == EBUSY) {
        rc = SWV_ERR_BUSY;
        then = SWV_IFACE == 25 ? "; the step fails: Slurm 25.11 and later "
                                 "retry no step a switch plugin refuses"
                               : "; srun retries the step until the broker "
                                 "serves again";
    }
    error("switch/vnib: JobId=%s StepId=%s: %s%s", job, step, err->text, then);
    errno = rc;
}

int swv_step_build(struct swv_step *si,
                   step_record_t *step_ptr,
                   const char *step_nodes,
                   const void *jdp)
{
    const struct swv_jobdata *jd = jdp;
    vnib_error_t err = {0};
    struct swv_network net;
    struct swv_step_resv resv;
    struct swv_step_req req;
    const struct swv_helper *h;
    job_record_t *job_ptr;
    char job[16], step[16], who[64], ms[32];
    int own_vnis = 0;
    long avail = -1;

    if (si == NULL || step_nodes == NULL || step_ptr == NULL
        || step_ptr->job_ptr == NULL) {
        error("switch/vnib: a step's data built without its step");
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
    job_ptr = step_ptr->job_ptr;
    si->info.job_id = job_ptr->job_id;
    si->info.step_id = step_ptr->step_id.step_id;
    swv_jobinfo_ids(&si->info, job, step);
    if (swv_network_parse(
            &swv_cfg, job_ptr->network, step_ptr->network, &net, &err)
        < 0) {
        error("switch/vnib: JobId=%s StepId=%s: %s", job, step, err.text);
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
    req = (struct swv_step_req){
        .job_id = job,
        .step_id = step,
        .uid = job_ptr->user_id,
        .user = job_ptr->user_name,
        .job_nodes = job_ptr->nodes,
        .step_nodes = step_nodes,
    };
    if (!running_in_slurmctld()) {
        /* The job's stepmgr: only with the job's own token. */
        if ((jd == NULL || jd->token[0] == '\0')
            && swv_cfg.outage == SWV_OUTAGE_OPEN) {
            si->info.flags = SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED;
            error(
                "switch/vnib: JobId=%s StepId=%s: the job was not reserved "
                "at its start; the step runs WITHOUT VNI isolation "
                "(vnib_outage=open)",
                job,
                step);
            return SLURM_SUCCESS;
        }
        if (jd == NULL || jd->token[0] == '\0') {
            error(
                "switch/vnib: JobId=%s StepId=%s: the stepmgr has no job "
                "token (the job's reservation at its start failed)",
                job,
                step);
            errno = ESLURM_INTERCONNECT_FAILURE;
            return SLURM_ERROR;
        }
        req.job_token = jd->token;
        req.job_resv = jd->job_resv;
    }
    snprintf(who, sizeof(who), "JobId=%s StepId=%s", job, step);
    if (!(h = helper(who))) {
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
#if SWV_IFACE == 25
    /* 25.11 and later fail every step a switch plugin refuses (stepmgr.c,
     * _switch_setup): nothing would retry it, so wait means job. */
    if (net.step_fallback == SWV_FALLBACK_WAIT)
        net.step_fallback = SWV_FALLBACK_JOB;
#endif
    if (running_in_slurmctld() && net.step_fallback == SWV_FALLBACK_JOB
        && !swv_free_step_fits(
            free_count, job_ptr->job_id, net.vnis, net.step_vnis, &avail)) {
        /* A later step's own VNIs would come from those jobs admitted
         * before it were promised (its first step's were claimed with
         * the job; the VNIs of its steps that ended cool down): it runs
         * on its job's VNIs instead, as for a refusal. */
        own_vnis = net.step_vnis;
        net.step_vnis = 0;
        errprintf(
            &err, "%ld VNI(s) free and not promised to jobs starting", avail);
    }
    if (h->step_begin(&swv_cfg, &req, &net, &resv, &err) < 0) {
        step_refused(job, step, &net, &resv, errno, &err);
        return SLURM_ERROR;
    }
    if (own_vnis > 0 && !resv.unisolated) {
        resv.fallback = 1;
        net.step_vnis = own_vnis;
    }
    si->info.flags = SWV_JOBINFO_BUILT;
    if (resv.fallback) {
        si->info.flags |= SWV_JOBINFO_FALLBACK;
        info(
            "switch/vnib: JobId=%s StepId=%s: its own %d VNI(s) cannot be "
            "had (%s); the step runs on its job's VNIs alone "
            "(vnib_step_fallback=job)",
            job,
            step,
            net.step_vnis,
            err.text);
    }
    if (resv.unisolated) {
        si->info.flags |= SWV_JOBINFO_UNISOLATED;
        error(
            "switch/vnib: JobId=%s StepId=%s: broker unreachable (%s); "
            "the step runs WITHOUT VNI isolation (vnib_outage=open)",
            job,
            step,
            err.text);
    } else {
        if (running_in_slurmctld()) {
            /* The job and this step hold their VNIs at the broker now. */
            swv_free_reserved(free_count, job_ptr->job_id, true);
        }
        if (swv_limits_any(&net.limits)) {
            /* The node's agent sizes the step's services by them. */
            si->info.flags |= SWV_JOBINFO_LIMITS;
            si->info.limits = net.limits;
        }
    }
    if (resv.lease_disabled && !atomic_exchange(&lease_disabled_said, true))
        info(
            "switch/vnib: the broker issues no leases (400 lease_disabled): "
            "steps start as without vnib_lease, each node asking the "
            "broker; set lease.key_file on the brokers (said once)");
    si->info.job_resv = resv.job_resv;
    si->info.step_resv = resv.step_resv;
    swv_jobinfo_clear(&si->info);
    si->info.lease = resv.lease; /* the step's now */
    debug(
        "switch/vnib: JobId=%s StepId=%s nodes=%s: reservation %lld (%s), "
        "step reservation %lld (%.1f ms), %s",
        job,
        step,
        step_nodes,
        resv.job_resv,
        ms_text(resv.job_ms, ms, sizeof(ms)),
        resv.step_resv,
        resv.step_ms,
        resv.lease ? "with its lease" : "no lease");
    return SLURM_SUCCESS;
}

int swv_step_complete(const struct swv_step *si)
{
    vnib_error_t err = {0};
    struct swv_jobdata jd = {0};
    const struct swv_helper *h;
    char job[16], step[16], who[64];
    int rc;

    if (!swv_runs_steps() || si == NULL
        || (si->info.flags & SWV_JOBINFO_BUILT) == 0
        || (si->info.flags & SWV_JOBINFO_UNISOLATED) != 0)
        return SLURM_SUCCESS;
    swv_jobinfo_ids(&si->info, job, step);
    if (!running_in_slurmctld()) {
        pthread_mutex_lock(&stepmgr_lock);
        jd = stepmgr_job;
        pthread_mutex_unlock(&stepmgr_lock);
        if (jd.token[0] == '\0') {
            debug(
                "switch/vnib: JobId=%s StepId=%s: no job token here; the "
                "job's release releases the step",
                job,
                step);
            return SLURM_SUCCESS;
        }
    }
    snprintf(who, sizeof(who), "JobId=%s StepId=%s release", job, step);
    if (!(h = helper(who))) {
        explicit_bzero(&jd, sizeof(jd));
        return SLURM_SUCCESS; /* the job's release (or reconcile) does it */
    }
    rc = h->step_end(
        &swv_cfg, jd.token[0] != '\0' ? jd.token : NULL, job, step, &err);
    if (rc < 0)
        error(
            "switch/vnib: JobId=%s StepId=%s: step release failed (%s); "
            "the job's release will release it",
            job,
            step,
            err.text);
    else
        debug("switch/vnib: JobId=%s StepId=%s: step %s",
              job,
              step,
              rc > 0 ? "release queued" : "released");
    explicit_bzero(&jd, sizeof(jd));
    return SLURM_SUCCESS;
}

void swv_job_complete(uint32_t job_id)
{
    vnib_error_t err = {0};
    const struct swv_helper *h;
    char job[16], who[64];
    int rc;

    if (!running_in_slurmctld())
        return;
    swv_free_ended(free_count, job_id);
    snprintf(job, sizeof(job), "%u", job_id);
    snprintf(who, sizeof(who), "JobId=%s release", job);
    if (!(h = helper(who))) {
        /* The reconcile releases the jobs Slurm lists as ended. */
        return;
    }
    rc = h->job_end(&swv_cfg, job, &err);
    if (rc != 0)
        error("switch/vnib: JobId=%s: %s", job, err.text);
}

/* ---- job start: wait for VNIs, and the stepmgr's reservation --------------
 */

static int free_fetch(void *arg,
                      long *freep,
                      long *per_jobp,
                      vnib_error_t *errp)
{
    const struct swv_helper *h = swv_load(&swv_cfg, errp);

    (void)arg;
    /* Without a helper slurmctld reserves nothing and every step fails
     * closed (the load's failure is logged): no job waits, for VNIs or
     * for the broker, until a helper loads (swv_load tries again). */
    if (!h) {
        *freep = LONG_MAX;
        *per_jobp = 1;
        return 0;
    }
    return h->pool_free(&swv_cfg, freep, per_jobp, errp);
}

static void free_log(void *arg, enum swv_free_event event, const char *text)
{
    (void)arg;
    if (event == SWV_FREE_BACK)
        info("switch/vnib: the broker's free VNI count is known again");
    else if (event == SWV_FREE_FAILING && swv_cfg.broker_hold_s > 0)
        error(
            "switch/vnib: cannot read the broker's free VNI count (%s); "
            "jobs that need VNIs wait for the broker at %s up to %ld s "
            "after its last answer (vnib_broker_hold_s)",
            text,
            swv_cfg.url,
            swv_cfg.broker_hold_s);
    else if (event == SWV_FREE_FAILING)
        error(
            "switch/vnib: cannot read the broker's free VNI count (%s); "
            "jobs start without waiting for VNIs",
            text);
    else
        error(
            "switch/vnib: the broker at %s has not answered for %ld s "
            "(vnib_broker_hold_s; %s): jobs start without waiting for it, "
            "and vnib_outage=%s applies at their steps",
            swv_cfg.url,
            swv_cfg.broker_hold_s,
            text,
            swv_cfg.outage == SWV_OUTAGE_OPEN ? "open" : "fail");
}

#if SWV_IFACE == 25
/* slurmctld's own: a scheduling pass at its next chance (thread-safe).
 * Weak, so that the plugin loads in every other Slurm program. */
#pragma weak queue_job_scheduler

/* VNIs came back for a job told to wait: nothing in Slurm would try it
 * again before its next periodic pass (sched_interval, 60 s). */
static void free_nudge(void)
{
    if (queue_job_scheduler != NULL)
        queue_job_scheduler();
}
#else
#define free_nudge NULL
#endif

/* How long slurmctld's first admission waits for the broker's count. */
#define FREE_FIRST_MS 2000

static void free_start(void)
{
    vnib_error_t err = {0};
    int64_t t0 = monotime_ms();

    /* A claim outlives several polls: the job reserves at its first
     * step, which may come a few seconds after it starts; it ends sooner
     * when the plugin reserves the job or the job ends.  The first
     * admission waits (once, under slurmctld's locks) for the first
     * poll, at most FREE_FIRST_MS: past it, or on a failure, jobs that
     * need VNIs wait for the broker up to vnib_broker_hold_s from now,
     * then every job is admitted until the count is known. */
    free_count = swv_free_create(
        swv_cfg.free_poll_ms,
        10000 + 5 * swv_cfg.free_poll_ms,
        swv_cfg.timeout_ms < FREE_FIRST_MS ? swv_cfg.timeout_ms : FREE_FIRST_MS,
        free_fetch,
        free_log,
        free_nudge,
        NULL,
        &err);
    if (free_count == NULL) {
        error("switch/vnib: %s; jobs start without waiting for VNIs", err.text);
        return;
    }
    swv_free_set_hold(free_count, swv_cfg.broker_hold_s * 1000, t0);
}

/* May job_ptr start now, as far as VNIs go?  From memory only. */
static int job_start_test(job_record_t *job_ptr)
{
    vnib_error_t err = {0};
    struct swv_network net;
    long free_vnis = -1;

    if (!running_in_slurmctld())
        return SLURM_SUCCESS;
    pthread_once(&free_once, free_start);
    if (free_count == NULL
        || swv_network_parse(&swv_cfg, job_ptr->network, NULL, &net, &err) < 0)
        return SLURM_SUCCESS; /* a bad --network fails at its step */
    if (swv_free_admit(free_count, net.vnis, net.step_vnis, &free_vnis))
        return SLURM_SUCCESS;
    /* An out-of-tree plugin cannot add a reason: "Resources" it is
     * (slurmctld frees any state_desc set here). */
    job_ptr->state_reason = WAIT_RESOURCES;
    if (free_vnis < 0) {
        swv_free_last_error(free_count, &err);
        debug(
            "switch/vnib: JobId=%u waits for the broker at %s: %s (up to "
            "%ld s after its last answer, vnib_broker_hold_s)",
            job_ptr->job_id,
            swv_cfg.url,
            err.text[0] != '\0' ? err.text : "no answer yet",
            swv_cfg.broker_hold_s);
    } else if (net.vnis < 0)
        debug(
            "switch/vnib: JobId=%u waits for VNIs: it needs the broker's "
            "default and %d for its first step, %ld free and unclaimed",
            job_ptr->job_id,
            net.step_vnis,
            free_vnis);
    else
        debug(
            "switch/vnib: JobId=%u waits for VNIs: it needs %d and %d for "
            "its first step, %ld free and unclaimed",
            job_ptr->job_id,
            net.vnis,
            net.step_vnis,
            free_vnis);
    return SLURM_ERROR;
}

/* slurmctld starts the job (the test passed under the same locks): its
 * VNIs (and its first step's) are claimed until the broker counts them. */
static void job_start_claim(job_record_t *job_ptr)
{
    vnib_error_t err = {0};
    struct swv_network net;

    if (free_count != NULL
        && swv_network_parse(&swv_cfg, job_ptr->network, NULL, &net, &err) == 0)
        swv_free_claim(free_count, job_ptr->job_id, net.vnis, net.step_vnis);
}

int swv_job_start(job_record_t *job_ptr, bool test_only)
{
#if SWV_IFACE >= 24
    vnib_error_t err = {0};
    struct swv_network net;
    struct swv_step_req req;
    struct swv_jobdata *jd;
    const struct swv_helper *h;
    char job[16], who[64];
    int unisolated = 0, rc;
#endif

    if (test_only)
        return job_start_test(job_ptr);
    if (!running_in_slurmctld())
        return SLURM_SUCCESS;
    job_start_claim(job_ptr);
#if SWV_IFACE >= 24
    if (!(job_ptr->bit_flags & STEPMGR_ENABLED))
        return SLURM_SUCCESS;
    /* A stepmgr job: its steps are created on its batch host, which gets
     * the job's token, never slurmctld's.  Reserve the job now. */
    snprintf(job, sizeof(job), "%u", job_ptr->job_id);
    if (swv_network_parse(&swv_cfg, job_ptr->network, NULL, &net, &err) < 0) {
        error("switch/vnib: JobId=%s: %s", job, err.text);
        return SLURM_ERROR;
    }
    req = (struct swv_step_req){
        .job_id = job,
        .uid = job_ptr->user_id,
        .user = job_ptr->user_name,
        .job_nodes = job_ptr->nodes,
    };
    snprintf(who, sizeof(who), "JobId=%s", job);
    if (!(h = helper(who)))
        return SLURM_ERROR; /* its steps fail at the stepmgr: no token */
    jd = xmalloc(sizeof(*jd));
    rc = h->job_begin(&swv_cfg, &req, &net, jd, &unisolated, &err);
    if (rc < 0 && errno == EAGAIN) {
        /* A short pool: a stepmgr without the job's token could only
         * fail its steps, and Slurm gives this call no way to make the
         * job wait.  Its steps go through slurmctld instead (this runs
         * before the job's launch tells anyone of a stepmgr), where the
         * job is reserved at its first step, which waits for VNIs as any
         * job's (srun retries it before 25.11). */
        job_ptr->bit_flags &= ~STEPMGR_ENABLED;
        error(
            "switch/vnib: JobId=%s: the job's reservation at its start was "
            "refused (%s); it runs without a stepmgr: slurmctld creates "
            "its steps, which reserve it when VNIs are free",
            job,
            err.text);
        swv_jobdata_free(jd);
        return SLURM_SUCCESS;
    }
    if (rc < 0 || unisolated) {
        /* Slurm ignores what this call returns: the job's steps fail
         * (or run unisolated under vnib_outage=open) at the stepmgr. */
        error("switch/vnib: JobId=%s: the job's reservation failed (%s)",
              job,
              err.text);
        swv_jobdata_free(jd);
        return SLURM_ERROR;
    }
    /* Its steps reserve their own VNIs at the stepmgr: that part of
     * its claim lives on until the claim's time or the job's end. */
    swv_free_reserved(free_count, job_ptr->job_id, false);
    swv_jobdata_free(job_ptr->switch_jobinfo);
    job_ptr->switch_jobinfo = jd;
    debug("switch/vnib: JobId=%s: reservation %lld for its stepmgr",
          job,
          (long long)jd->job_resv);
#endif
    return SLURM_SUCCESS;
}

/* ---- slurmstepd -----------------------------------------------------------
 */

static const struct swv_jobinfo *step_info(const stepd_step_rec_t *job)
{
    static const struct swv_jobinfo none = {0};

    if (SWV_STEPD_DATA(job) != NULL && SWV_STEPD_DATA(job)->data != NULL)
        return &((struct swv_step *)SWV_STEPD_DATA(job)->data)->info;
    return &none;
}

/* Drop every SLINGSHOT_* and FI_CXI_* name from env, so nothing from the
 * submitting shell reaches a task. */
static void env_clear_ours(char **env)
{
    char name[256];
    size_t i, n;
    bool again = true;

    while (again && env != NULL) {
        again = false;
        for (i = 0; env[i] != NULL; i++) {
            if (strncmp(env[i], "SLINGSHOT_", 10) != 0
                && strncmp(env[i], "FI_CXI_", 7) != 0)
                continue;
            n = strcspn(env[i], "=");
            if (n >= sizeof(name))
                n = sizeof(name) - 1;
            memcpy(name, env[i], n);
            name[n] = '\0';
            unsetenvp(env, name);
            again = true;
            break;
        }
    }
}

static int env_apply(char ***env, char **add)
{
    char name[256];
    const char *eq;
    size_t i, n;

    for (i = 0; add != NULL && add[i] != NULL; i++) {
        eq = strchr(add[i], '=');
        n = eq != NULL ? (size_t)(eq - add[i]) : 0;
        if (n == 0 || n >= sizeof(name))
            return SLURM_ERROR;
        memcpy(name, add[i], n);
        name[n] = '\0';
        if (!env_array_overwrite(env, name, eq + 1))
            return SLURM_ERROR;
    }
    return SLURM_SUCCESS;
}

int swv_stepd_init(stepd_step_rec_t *job)
{
    const struct swv_jobinfo *info = step_info(job);
    const struct swv_helper *h;
    vnib_error_t err = {0}, warn = {0};
    char **add = NULL, who[64];
    int64_t t0 = monotime_ns(), t1;
    long ncores;
    int unisolated = 0, rc;

    env_clear_ours(job->env);
    unsetenvp(job->env, SWV_FALLBACK_ENV);
    snprintf(who,
             sizeof(who),
             "JobId=%u StepId=%u on %s",
             job->step_id.job_id,
             job->step_id.step_id,
             job->node_name);
    if ((info->flags & SWV_JOBINFO_BUILT) == 0) {
        error("switch/vnib: %s: the step carries no switch/vnib reservation",
              who);
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
    if ((info->flags & SWV_JOBINFO_UNISOLATED) != 0) {
        error(
            "switch/vnib: %s: slurmctld could not reach the broker; the "
            "step runs WITHOUT VNI isolation (vnib_outage=open)",
            who);
        return SLURM_SUCCESS;
    }
    if (!(h = helper(who))) {
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
    t1 = monotime_ns();
    ncores = (long)job->node_tasks
             * (long)(job->cpus_per_task > 0 ? job->cpus_per_task : 1);
    if (ncores < 1)
        ncores = 1;
    rc = h->node_setup(&swv_cfg,
                       job->node_name,
                       info,
                       (long)job->uid,
                       ncores,
                       &add,
                       &unisolated,
                       &warn,
                       &err);
    if (warn.text[0] != '\0')
        error("switch/vnib: %s: %s", who, warn.text);
    if (rc < 0 && unisolated) {
        error(
            "switch/vnib: %s: %s; the step runs WITHOUT VNI isolation "
            "(vnib_outage=open)",
            who,
            err.text);
        return SLURM_SUCCESS;
    }
    if (rc < 0) {
        error("switch/vnib: %s: %s", who, err.text);
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
    rc = env_apply(&job->env, add);
    h->node_env_free(add);
    if (rc == SLURM_SUCCESS && (info->flags & SWV_JOBINFO_FALLBACK) != 0
        && !env_array_overwrite(&job->env, SWV_FALLBACK_ENV, "job"))
        rc = SLURM_ERROR;
    if (rc != SLURM_SUCCESS) {
        error("switch/vnib: %s: cannot set the task environment", who);
        (void)h->node_teardown(
            &swv_cfg, job->node_name, info, helper_log, &err);
        errno = ESLURM_INTERCONNECT_FAILURE;
        return SLURM_ERROR;
    }
    debug("switch/vnib: %s: set up %s in %.1f ms (the helper %.1f ms)",
          who,
          info->lease ? "from its lease" : "from the broker",
          (double)(monotime_ns() - t0) / 1e6,
          (double)(t1 - t0) / 1e6);
    return SLURM_SUCCESS;
}

int swv_step_attach(const struct swv_step *si, uint32_t rank)
{
    char line[256];
    int n;

    if (si == NULL || (si->info.flags & SWV_JOBINFO_FALLBACK) == 0 || rank != 0)
        return SLURM_SUCCESS;
    /* The task's stderr is the user's (srun's output) by now. */
    n = snprintf(line,
                 sizeof(line),
                 "switch/vnib: step %u.%u: the VNI pool had none free for "
                 "the step's own VNIs; it runs on its job's VNIs alone "
                 "(%s=job)\n",
                 si->info.job_id,
                 si->info.step_id,
                 SWV_FALLBACK_ENV);
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
        return SLURM_SUCCESS; /* told in the environment anyway */
    return SLURM_SUCCESS;
}

/* After the step's processes are killed: destroy its services.  A step
 * that never reached the broker's reservation has none. */
int swv_stepd_postfini(stepd_step_rec_t *job)
{
    const struct swv_jobinfo *info = step_info(job);
    const struct swv_helper *h;
    vnib_error_t err = {0};
    char who[64];
    int64_t t0;

    if ((info->flags & SWV_JOBINFO_BUILT) == 0
        || (info->flags & SWV_JOBINFO_UNISOLATED) != 0)
        return SLURM_SUCCESS;
    snprintf(who,
             sizeof(who),
             "JobId=%u StepId=%u on %s",
             job->step_id.job_id,
             job->step_id.step_id,
             job->node_name);
    if (!(h = helper(who)))
        return SLURM_SUCCESS; /* so was its start: nothing was made */
    t0 = monotime_ns();
    if (h->node_teardown(&swv_cfg, job->node_name, info, helper_log, &err)
        < 0) {
        error("switch/vnib: %s: %s", who, err.text);
        return SLURM_ERROR;
    }
    debug("switch/vnib: %s: torn down in %.1f ms",
          who,
          (double)(monotime_ns() - t0) / 1e6);
    return SLURM_SUCCESS;
}
