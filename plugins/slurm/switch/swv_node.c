/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_node: the node side of switch/vnib (see swv_node.h), over the
 * agent's in-process step API: from the step's lease when it carries one
 * (vnib_step_setup_lease: no broker request), else from the broker's
 * reservation (vnib_step_setup).
 */
#include "swv_node.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/agentcfg.h"
#include "agent/broker.h"
#include "agent/commands.h"
#include "agent/jobstate.h"
#include "agent/limits.h"
#include "agent/stepapi.h"
#include "vnib/monotime.h"
#include "vnib/secfile.h"

/* The agent's settings file for node. */
static int agent_config(const struct swv_config *cfg,
                        const char *node,
                        char *out,
                        size_t size,
                        vnib_error_t *errp)
{
    if (swv_expand_node(cfg->agent_config, node, out, size) < 0)
        return errprintf(errp, "vnib_agent_config: too long with %s", node);
    return 0;
}

/* The step's NIC limits for the agent: those the step carries (the
 * site's and its --network, as slurmctld read them), else this node's
 * SwitchParameters.  swv_limits is in libcxi's order, as nic_rsrc is.
 * NULL when none is set: HPE's table. */
static const struct limits_want *step_limits(const struct swv_config *cfg,
                                             const struct swv_jobinfo *info,
                                             struct limits_want *w)
{
    const struct swv_limits *l =
        (info->flags & SWV_JOBINFO_LIMITS) ? &info->limits : &cfg->limits;

    if (!swv_limits_any(l))
        return NULL;
    for (int r = 0; r < SWV_RSRC_COUNT && r < NIC_RSRC_COUNT; r++) {
        w->def[r] = l->def[r];
        w->res[r] = l->res[r];
        w->max[r] = l->max[r];
    }
    w->depth = l->depth;
    return w;
}

int swv_node_setup(const struct swv_config *cfg,
                   const char *node,
                   const struct swv_jobinfo *info,
                   long uid,
                   long ncores,
                   char ***envp,
                   int *unisolated,
                   vnib_error_t *warnp,
                   vnib_error_t *errp)
{
    char conf[SWV_PATH_MAX], job[16], step[16];
    struct limits_want want;
    const struct limits_want *limits;

    *envp = NULL;
    *unisolated = 0;
    if ((info->flags & SWV_JOBINFO_BUILT) == 0) {
        errno = EINVAL;
        return errprintf(errp, "the step carries no switch/vnib reservation");
    }
    if ((info->flags & SWV_JOBINFO_UNISOLATED) != 0) {
        *unisolated = 1;
        return errprintf(errp, "slurmctld could not reach the broker");
    }
    if (agent_config(cfg, node, conf, sizeof(conf), errp) < 0)
        return -1;
    swv_jobinfo_ids(info, job, step);
    limits_want_init(&want);
    limits = step_limits(cfg, info, &want);
    if (info->lease != NULL) {
        if (vnib_step_setup_lease(
                conf, job, step, uid, ncores, limits, info->lease, envp, errp)
            == 0)
            return 0;
        if (errno != EACCES)
            return -1;
        /* A lease refused (expired, for another step...) is no
         * reservation either way: the broker's own says. */
        errprintf(warnp, "lease refused, asking the broker: %s", errp->text);
    }
    if (vnib_step_setup(conf, job, step, uid, ncores, limits, envp, errp) == 0)
        return 0;
    if ((errno == EHOSTUNREACH || errno == ETIMEDOUT || errno == ECONNREFUSED)
        && cfg->outage == SWV_OUTAGE_OPEN) {
        *unisolated = 1;
        *envp = NULL;
    }
    return -1;
}

/* ---- the step's end: its report sent after slurmstepd told srun -------------
 *
 * slurmstepd tells srun that the step's tasks ended only after job_
 * postfini returns, so what postfini waits for, every srun waits for.
 * The services are destroyed there, at once, and the node's record of
 * them removed; the report that says so is sent by a thread of this
 * process, which loads the broker's client meanwhile and which
 * slurmstepd's exit waits for (atexit).  A report the broker does not
 * take goes into the agent's spool, as the agent's own would, for the
 * next agent run or the flush timer.  A slurmstepd killed before it sent
 * the report leaves no record of the step: the flush timer's sweep
 * reports the node clean for every reservation that still waits on it
 * (agent/README.md), so the quarantine waits longer, never less.
 */

/* A report the agent made, kept to send. */
struct kept_report {
    char *job_id;
    char *step_id;
    char *cxi;
    char *message;
    json_t *services;
    long long reservation;
};

/* The one sender of this process (a step's slurmstepd ends one step). */
static struct {
    pthread_mutex_t lock;
    bool started;
    pthread_t thread;
    struct kept_report report;
    char node[TOKEN_NODE_MAX];
    char *url, *token, *cacert, *spool_dir;
    size_t token_len;
    long deadline_ms;
    swv_log_fn *log;
} sender = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void kept_clear(struct kept_report *k)
{
    free(k->job_id);
    free(k->step_id);
    free(k->cxi);
    free(k->message);
    json_decref(k->services);
    memset(k, 0, sizeof(*k));
}

/* What teardown's broker does instead of asking: for a GET (no record of
 * the step: the broker's reservation says what to destroy) the real
 * client; the step's report is kept and taken as sent (the thread sends
 * it); any other (the agent's spool, which it flushes after a report
 * sent) is "no answer", so that it stays spooled. */
struct deferred {
    struct cmd_ctx *a;
    struct broker_conn conn;
    struct kept_report kept;
    bool have;
};

static int deferred_get(void *arg,
                        const char *path,
                        long deadline_ms,
                        json_t **replyp,
                        vnib_error_t *errp)
{
    struct deferred *d = arg;

    *replyp = NULL;
    if (!d->conn.get
        && broker_open(
               d->a->cfg->url, d->a->token, d->a->cfg->cacert, &d->conn, errp)
               < 0)
        return -1;
    return d->conn.get(d->conn.arg, path, deadline_ms, replyp, errp);
}

static int deferred_report(void *arg,
                           const struct vnib_report *r,
                           long deadline_ms,
                           vnib_error_t *errp)
{
    struct deferred *d = arg;
    struct kept_report *k = &d->kept;

    (void)deadline_ms;
    if (d->have) {
        errno = EAGAIN;
        errprintf(errp, "left to the agent's next run");
        return -1;
    }
    if (!(k->job_id = strdup(r->job_id)) || !(k->cxi = strdup(r->cxi))
        || (r->step_id && !(k->step_id = strdup(r->step_id)))
        || (r->message && !(k->message = strdup(r->message)))
        || (r->services && !(k->services = json_deep_copy(r->services)))) {
        kept_clear(k);
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return -1; /* the agent spools it */
    }
    k->reservation = r->reservation;
    d->have = true;
    return 200;
}

static void say(swv_log_fn *log, enum swv_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(swv_log_fn *log, enum swv_log_level level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!log)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    log(level, buf);
}

static void *sender_run(void *arg)
{
    struct kept_report *k = &sender.report;
    struct broker_conn conn;
    vnib_error_t err = {0};
    struct vnib_report r = {
        .job_id = k->job_id,
        .step_id = k->step_id,
        .node = sender.node,
        .cxi = k->cxi,
        .services = k->services,
        .message = k->message,
        .reservation = k->reservation,
    };
    int64_t t0 = monotime_ns();
    char key[JOBSTATE_KEY_MAX];
    vnib_error_t kerr = {0};
    bool spooled = false;
    int status = -1;

    (void)arg;
    /* Background work: the end of the step (srun's, slurmctld's) first. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    if (broker_open(sender.url, sender.token, sender.cacert, &conn, &err)
        == 0) {
        status = conn.report(conn.arg, &r, sender.deadline_ms, &err);
        conn.close(&conn);
    }
    if (status == 200
        && jobstate_key(key, sizeof(key), k->job_id, k->step_id, &kerr) == 0)
        jobstate_spool_remove(sender.spool_dir, key, k->reservation);
    if (jobstate_spool_worth(status))
        spooled =
            jobstate_spool_report(sender.spool_dir, &r, err.text, &kerr) == 0;
    if (status == 200)
        say(sender.log,
            SWV_LOG_DEBUG,
            "switch/vnib: JobId=%s StepId=%s on %s: reported %s (%.1f ms)",
            k->job_id,
            k->step_id ? k->step_id : "-",
            r.node,
            k->cxi,
            (double)(monotime_ns() - t0) / 1e6);
    else
        say(sender.log,
            SWV_LOG_ERROR,
            "switch/vnib: JobId=%s StepId=%s on %s: report %s %s (%s); %s",
            k->job_id,
            k->step_id ? k->step_id : "-",
            r.node,
            k->cxi,
            status < 0 ? "not taken" : "refused",
            err.text,
            spooled ? "spooled for 'vnib-agent flush'"
            : jobstate_spool_worth(status)
                ? "NOT spooled: the flush timer's sweep reports the node"
                : "dropped");
    return NULL;
}

void swv_node_stop(void)
{
    pthread_mutex_lock(&sender.lock);
    if (sender.started) {
        pthread_join(sender.thread, NULL);
        sender.started = false;
    }
    pthread_mutex_unlock(&sender.lock);
}

/* Start the sender with d's report, from a's settings. */
static int sender_start(struct cmd_ctx *a,
                        struct deferred *d,
                        swv_log_fn *log,
                        vnib_error_t *errp)
{
    static bool registered;
    int e, rc = -1;

    pthread_mutex_lock(&sender.lock);
    if (sender.started) {
        errno = EBUSY;
        errprintf(errp, "a report is being sent already");
        goto out;
    }
    snprintf(sender.node, sizeof(sender.node), "%s", a->node);
    free(sender.url);
    free(sender.cacert);
    free(sender.spool_dir);
    if (sender.token)
        secfile_free(sender.token, sender.token_len);
    sender.url = strdup(a->cfg->url);
    sender.cacert = strdup(a->cfg->cacert);
    sender.spool_dir = strdup(a->cfg->spool_dir);
    sender.token = a->token; /* the secret moves here */
    sender.token_len = a->token_len;
    a->token = NULL;
    sender.deadline_ms = a->cfg->spool_after_ms;
    sender.log = log;
    kept_clear(&sender.report);
    sender.report = d->kept;
    memset(&d->kept, 0, sizeof(d->kept));
    if (!sender.url || !sender.cacert || !sender.spool_dir) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto out;
    }
    if (!registered && atexit(swv_node_stop) != 0) {
        errno = ENOMEM;
        errprintf(errp, "cannot wait for the report at exit");
        goto out;
    }
    registered = true;
    if ((e = pthread_create(&sender.thread, NULL, sender_run, NULL)) != 0) {
        errno = e;
        errprintf(errp, "no thread for the report: %s", strerror(e));
        goto out;
    }
    sender.started = true;
    rc = 0;
out:
    pthread_mutex_unlock(&sender.lock);
    return rc;
}

int swv_node_teardown(const struct swv_config *cfg,
                      const char *node,
                      const struct swv_jobinfo *info,
                      swv_log_fn *log,
                      vnib_error_t *errp)
{
    char conf[SWV_PATH_MAX], job[16], step[16];
    struct cmd_opts o = {.job = job,
                         .step = step,
                         .uid = -1,
                         .retry_ms = cfg->retry_busy_ms,
                         .format = "export",
                         .nics = -1};
    struct deferred d = {0};
    vnib_error_t serr = {0};
    struct cmd_ctx a;
    int rc = -1;

    if ((info->flags & SWV_JOBINFO_BUILT) == 0
        || (info->flags & SWV_JOBINFO_UNISOLATED) != 0)
        return 0;
    if (agent_config(cfg, node, conf, sizeof(conf), errp) < 0)
        return -1;
    swv_jobinfo_ids(info, job, step);
    memset(&a, 0, sizeof(a));
    d.a = &a;
    a.broker = (struct cmd_broker){deferred_get, deferred_report, &d};
    if (!(a.err = fopen("/dev/null", "we"))) {
        errprintf(errp, "/dev/null: %s", strerror(errno));
        goto out;
    }
    if (!(a.cfg = agentcfg_load(conf, true, errp))) {
        errno = EINVAL;
        goto out;
    }
    if (!(a.warnings = json_array())) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto out;
    }
    if (cmd_identify(&a) != CMD_DONE) {
        errno = EINVAL;
        errprintf(errp, "%s", a.error.text);
        goto out;
    }
    if (vnib_step_teardown_opts(&a, &o, errp) < 0)
        goto out;
    rc = 0;
    /* Spooled by the agent: sent now, off the path to srun. */
    if (d.have && sender_start(&a, &d, log, &serr) < 0)
        say(log,
            SWV_LOG_ERROR,
            "switch/vnib: JobId=%s StepId=%s on %s: %s; the report "
            "stays in the agent's spool for 'vnib-agent flush'",
            job,
            step,
            node,
            serr.text);
out:
    kept_clear(&d.kept);
    if (d.conn.close)
        d.conn.close(&d.conn);
    if (a.err) {
        fclose(a.err);
        a.err = NULL;
    }
    cmd_ctx_fini(&a);
    return rc;
}

void swv_node_env_free(char **env)
{
    vnib_step_env_free(env);
}
