/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's start on this node, and its environment: `vnib-agent prolog`
 * and `vnib-agent env`; with --step, one step's.
 *
 * The prolog takes the job's VNIs only from the broker, or from a lease
 * the broker signed (cmd_lease.c), turns them into one CXI service per NIC
 * for the job's owner, and leaves the job environment (for the task
 * hooks) and its own record (for the epilog) in the state directory.
 * Without a lease it reports every step, so that the broker keeps the VNIs
 * quarantined until the services are really gone; a lease's reservation
 * presumes every node of it holds services until it reports them
 * destroyed, so a start from a lease reports nothing.  A step's services hold
 * the step's VNIs, then the job's (commands.h), under its own record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/commands.h"
#include "agent/jobenv.h"
#include "agent/jobstate.h"
#include "agent/services.h"
#include "agent/slurmcpus.h"

/* A step set up before on this node, for the same reservation, keeps the
 * VNIs its record names (its own only, when the NICs held the job's
 * elsewhere: own_vnis_only). */
static int prior_vnis(struct cmd_ctx *a,
                      const struct cmd_opts *o,
                      const char *key,
                      json_t *res)
{
    vnib_error_t ignore = {0};
    json_t *rec =
        o->step ? jobstate_load(a->cfg->state_dir, key, &ignore) : NULL;
    json_t *vnis = json_object_get(rec, "vnis");
    int rc = 0;

    if (json_is_array(vnis)
        && json_equal(json_object_get(rec, "reservation_id"),
                      json_object_get(res, "id")))
        rc = json_object_set(res, "vnis", vnis);
    json_decref(rec);
    return rc;
}

int cmd_env(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    struct jobenv env = {{NULL}};
    json_t *res = NULL;
    int *ids = NULL;
    int rc = CMD_DONE, status;
    char key[JOBSTATE_KEY_MAX];

    if (jobstate_key(key, sizeof(key), o->job, o->step, &error) < 0)
        return cmd_fail(a, CMD_USAGE, "env: %s", error.text);
    if (!jobenv_format_valid(o->format))
        return cmd_fail(a,
                        CMD_USAGE,
                        "env: --format '%s' is not export, json or "
                        "slurm-taskprolog",
                        o->format);
    if (geteuid() != 0) {
        /* A user reads what root's prolog left for the job; it cannot
         * read the node token, and must not. */
        if (jobstate_read_env(a->cfg->state_dir, key, &env, &error) < 0) {
            if (errno != ENOENT)
                return cmd_fail(a, CMD_FAILED, "env: %s", error.text);
            char who[CMD_WHO_MAX];
            cmd_who(o, who, sizeof(who));
            cmd_warn(a,
                     "job %s: no environment prepared on this node; "
                     "clearing the variables",
                     who);
        }
    } else {
        if ((rc = cmd_connect(a)) != CMD_DONE)
            return rc;
        status = cmd_fetch(
            a, o->job, o->step, a->cfg->fetch_timeout_ms, &res, &error);
        if (status != 200 && status != 404) {
            rc = cmd_broker_failure(a, "env", status, &error);
            goto done;
        }
        if (status == 200) {
            struct services_job job;
            if (prior_vnis(a, o, key, res) < 0
                || cmd_job_from(res, &job, 0) < 0) {
                rc = cmd_fail(a, CMD_FAILED, "env: malformed reservation");
                goto done;
            }
            if ((rc = cmd_open_nics(a)) != CMD_DONE)
                goto done;
            if (!(ids = calloc((size_t)a->ndev + 1, sizeof(*ids)))
                || services_find(a->nb, a->devs, a->ndev, &job, ids, &error) < 0
                || jobenv_build(&env, res, a->devs, ids, a->ndev, &error) < 0
                || (o->step && jobenv_set_step(&env, o->step, &error) < 0)) {
                rc = cmd_fail(a, CMD_FAILED, "env: %s", error.text);
                goto done;
            }
        }
    }
    if (jobenv_write(&env, a->json ? "json" : o->format, a->out, &error) < 0)
        rc = cmd_fail(a, CMD_FAILED, "env: %s", error.text);
done:
    jobenv_clear(&env);
    json_decref(res);
    free(ids);
    return rc;
}

/* This node's cores: --ncores, else Slurm's environment, else online CPUs. */
static int job_cores(struct cmd_ctx *a, const struct cmd_opts *o, unsigned *np)
{
    const char *cpus = getenv("SLURM_JOB_CPUS_PER_NODE");
    /* The controller's hooks get SLURM_JOB_NODELIST, slurmd's Prolog
     * SLURM_NODELIST. */
    const char *nodes = getenv("SLURM_JOB_NODELIST")
                            ? getenv("SLURM_JOB_NODELIST")
                            : getenv("SLURM_NODELIST");
    vnib_error_t error = {0};

    if (o->ncores > 0) {
        *np = (unsigned)o->ncores;
        return 0;
    }
    if (cpus && nodes) {
        if (slurmcpus_for_node(cpus, nodes, a->node, np, &error) < 0)
            return cmd_fail(a, CMD_USAGE, "%s", error.text);
        return 0;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *np = n > 0 ? (unsigned)n : 1;
    return 0;
}

/* The prolog failed, and this node holds nothing of the job (or step):
 * it made no service, or destroyed and checked gone what it made
 * (services_create).  Report "destroyed", with why, so that the
 * reservation's quarantine ends as the job's end would end it and the
 * node is not drained: it lost nothing.  When held (services left on its
 * NICs, as a report carries them) is not empty, or the NICs could not be
 * checked (!checked), report "failed" naming them instead, which drains
 * the node in the broker until an admin looks.  Exit 1 either way.
 */
static int prolog_failed(struct cmd_ctx *a,
                         const struct cmd_opts *o,
                         const char *who,
                         long long res_id,
                         bool checked,
                         json_t *held,
                         const vnib_error_t *error)
{
    vnib_error_t rerr = {0};
    bool left = !checked || json_array_size(held) > 0;
    int cause = errno;
    char msg[sizeof(error->text) + 96];
    snprintf(msg,
             sizeof(msg),
             "prolog: %s; %s",
             error->text,
             left ? "services left on this node"
                  : "nothing of it is left on this node");
    /* A start from a lease reports nothing: the reservation counts this
     * node as holding services until it reports them destroyed, which its
     * epilog does from the record. */
    if (!o->lease
        && cmd_report(a,
                      (struct vnib_report){.job_id = o->job,
                                           .step_id = o->step,
                                           .reservation = res_id,
                                           .cxi = left ? "failed" : "destroyed",
                                           .services = left ? held : NULL,
                                           .message = msg},
                      &rerr)
               != 200)
        cmd_warn(a,
                 "job %s: the broker did not take the failure report: %s",
                 who,
                 rerr.text);
    /* For the in-process callers: a NIC short of what the service needs,
     * and nothing left behind. */
    if (cause == ENOSPC && !left)
        a->errnum = ENOSPC;
    return cmd_fail(a, CMD_FAILED, "job %s: %s", who, error->text);
}

/* Whether a failed services_create left a service it made. */
static bool any_left(const bool *created, int ndev)
{
    for (int d = 0; d < ndev; d++)
        if (created[d])
            return true;
    return false;
}

/* What the prolog's record and its --json output say of the job (or
 * step). */
static json_t *job_json(const struct cmd_opts *o,
                        long long res_id,
                        const struct services_job *job,
                        json_t *res)
{
    json_t *j = json_pack("{s:s, s:s*, s:I, s:I, s:O}",
                          "job_id",
                          o->job,
                          "step_id",
                          o->step,
                          "reservation_id",
                          (json_int_t)res_id,
                          "uid",
                          (json_int_t)job->uid,
                          "vnis",
                          json_object_get(res, "vnis"));
    /* Started from a lease: the reservation presumes this node holds
     * services until it reports them destroyed, even with none; and until
     * the lease expires (lease_exp) its end leaves a tombstone, so that
     * the lease cannot start the job here again (jobstate_ended_put). */
    json_t *exp = json_object_get(res, "exp");
    if (j && o->lease
        && (json_object_set_new(j, "presumed", json_true()) < 0
            || (json_is_integer(exp)
                && json_object_set(j, "lease_exp", exp) < 0))) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* A step's service could not be made because a VNI of the job is in
 * another service on a NIC (another step's, or the job's): libcxi up to
 * SHS 14.0.0 keeps each VNI in one service per NIC.  So the step gets its
 * own VNIs only, and says so; the record says so first, so its end finds
 * what it made.  Returns 0, or -1 (errp kept) when the step has no VNIs of
 * its own to fall back on.
 */
static int own_vnis_only(struct cmd_ctx *a,
                         const char *who,
                         json_t *res,
                         json_t *record,
                         const char *key,
                         struct services_job *job,
                         vnib_error_t *errp)
{
    json_t *own = json_object_get(res, "step_vnis");
    unsigned ncores = job->ncores;
    const struct limits_want *limits = job->limits;

    if (json_array_size(own) == 0
        || json_array_size(own) == json_array_size(json_object_get(res, "vnis"))
        || json_object_set(res, "vnis", own) < 0
        || json_object_set(record, "vnis", own) < 0
        || cmd_job_from(res, job, a->cfg->floor_percent) < 0)
        return -1;
    job->ncores = ncores;
    job->limits = limits;
    cmd_warn(a,
             "job %s: %s; this NIC keeps a VNI in one service only (libcxi "
             "up to SHS 14.0.0), so the step gets its own VNIs, without the "
             "job's",
             who,
             errp->text);
    return jobstate_save(a->cfg->state_dir, key, record, errp);
}

int cmd_prolog(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    json_t *res = NULL, *svcs = NULL, *record = NULL;
    struct services_job job;
    struct jobenv env = {{NULL}};
    int *ids = NULL;
    bool *created = NULL;
    int rc, status, lock = -1;
    char key[JOBSTATE_KEY_MAX], who[CMD_WHO_MAX];

    if (jobstate_key(key, sizeof(key), o->job, o->step, &error) < 0)
        return cmd_fail(a, CMD_USAGE, "prolog: %s", error.text);
    if (o->lease && o->report_only)
        return cmd_fail(a,
                        CMD_USAGE,
                        "prolog: --lease and --report-only exclude each other");
    cmd_who(o, who, sizeof(who)); /* "42", or "42 step 0" */
    if (o->lease) {
        /* The reservation came with the launch: no broker request. */
        if ((rc = cmd_lease_reservation(a, o, &res)) != CMD_DONE)
            return rc;
        status = 200;
    } else {
        if ((rc = cmd_connect(a)) != CMD_DONE)
            return rc;
        status = cmd_fetch(
            a, o->job, o->step, a->cfg->fetch_timeout_ms, &res, &error);
    }
    if (status != 200 && o->allow_missing && (status < 0 || status == 404)) {
        /* The site lets jobs run without isolation when the broker cannot
         * be asked (the scheduler's prolog said so in the job's record):
         * clear the environment and step aside. */
        cmd_warn(a,
                 "job %s: %s; running WITHOUT VNI isolation (--allow-missing)",
                 who,
                 status < 0 ? "broker unreachable" : "no reservation");
        if (jobstate_write_env(a->cfg->state_dir,
                               key,
                               o->uid >= 0 ? (uid_t)o->uid : 0,
                               &env,
                               &error)
            < 0) {
            rc = cmd_fail(a, CMD_FAILED, "job %s: %s", who, error.text);
            goto done;
        }
        rc = CMD_DONE;
        goto done;
    }
    if (status != 200) {
        rc = cmd_broker_failure(a, "prolog", status, &error);
        goto done;
    }
    long long res_id = json_integer_value(json_object_get(res, "id"));
    const char *state = json_string_value(json_object_get(res, "state"));
    if (prior_vnis(a, o, key, res) < 0
        || cmd_job_from(res, &job, a->cfg->floor_percent) < 0) {
        if (o->lease)
            a->errnum = EINVAL;
        rc = cmd_fail(a,
                      CMD_FAILED,
                      "job %s: the %s reservation is malformed; no services "
                      "created",
                      who,
                      o->lease ? "lease's" : "broker's");
        goto done;
    }
    if (!state || strcmp(state, "active") != 0) {
        rc = cmd_fail(a,
                      CMD_FAILED,
                      "job %s: reservation %lld is %s, not active; no services "
                      "created",
                      who,
                      res_id,
                      state ? state : "unknown");
        goto done;
    }
    if (o->uid >= 0 && (uid_t)o->uid != job.uid) {
        rc =
            cmd_fail(a,
                     CMD_FAILED,
                     "job %s: --uid %ld does not match the reservation's owner "
                     "%ld; no services created",
                     who,
                     o->uid,
                     (long)job.uid);
        goto done;
    }
    if (o->report_only) {
        /* Another tool (flux-coral2's `flux slingshot prolog`) makes the
         * services: the broker only learns that this node will hold them,
         * so the job's VNIs stay quarantined until this node's
         * housekeeping (which finds them by owner and VNIs, having no
         * record) reports them destroyed. */
        if (!a->dry_run
            && (status = cmd_report(a,
                                    (struct vnib_report){.job_id = o->job,
                                                         .step_id = o->step,
                                                         .reservation = res_id,
                                                         .cxi = "creating"},
                                    &error))
                   != 200) {
            rc = cmd_broker_failure(
                a, "prolog: report creating", status, &error);
            goto done;
        }
        if (!a->json)
            fprintf(a->out,
                    "job %s: reported to the broker; no services created "
                    "(--report-only)\n",
                    who);
        rc = CMD_DONE;
        goto done;
    }
    if ((rc = job_cores(a, o, &job.ncores)) != CMD_DONE)
        goto done;
    job.limits = o->limits;
    if ((rc = cmd_open_nics(a)) != CMD_DONE)
        goto done;
    if (!(ids = calloc((size_t)a->ndev + 1, sizeof(*ids)))
        || !(created = calloc((size_t)a->ndev + 1, sizeof(*created)))) {
        rc = cmd_fail(a, CMD_FAILED, "out of memory");
        goto done;
    }
    if (job.nvnis == 0 || a->ndev == 0) {
        /* Nothing to isolate: leave a cleared environment so nothing from
         * the submitting shell leaks in.  From a lease, a record too, so
         * that the epilog reports this node clean without asking the
         * broker what it holds. */
        if (!a->dry_run && o->lease
            && (!(record = job_json(o, res_id, &job, res))
                || json_object_set_new(record, "services", json_array()) < 0
                || jobstate_save(a->cfg->state_dir, key, record, &error) < 0)) {
            rc = cmd_fail(a,
                          CMD_FAILED,
                          "job %s: %s",
                          who,
                          record ? error.text : "out of memory");
            goto done;
        }
        if (!a->dry_run
            && jobstate_write_env(a->cfg->state_dir, key, job.uid, &env, &error)
                   < 0) {
            rc = cmd_fail(a, CMD_FAILED, "job %s: %s", who, error.text);
            goto done;
        }
        if (a->ndev == 0 && job.nvnis > 0)
            cmd_warn(
                a, "job %s: this node has no CXI devices; no services", who);
        if (!a->json)
            fprintf(a->out, "job %s: no VNIs; no services created\n", who);
        goto output;
    }
    if (a->dry_run) {
        if (services_find(a->nb, a->devs, a->ndev, &job, ids, &error) < 0) {
            rc = cmd_fail(a, CMD_FAILED, "%s", error.text);
            goto done;
        }
        for (int d = 0; d < a->ndev && !a->json; d++)
            fprintf(a->out,
                    "%s: %s uid=%ld ncores=%u vnis=%d\n",
                    a->devs[d].name,
                    ids[d] >= 0 ? "would reuse" : "would create",
                    (long)job.uid,
                    job.ncores,
                    job.nvnis);
        goto output;
    }
    /* The broker learns before any NIC is touched, so a crash from here
     * on leaves the node marked as holding something.  A lease's
     * reservation counts this node so from its reserve on. */
    status = o->lease ? 200
                      : cmd_report(a,
                                   (struct vnib_report){.job_id = o->job,
                                                        .step_id = o->step,
                                                        .reservation = res_id,
                                                        .cxi = "creating"},
                                   &error);
    if (status != 200) {
        rc = cmd_broker_failure(a, "prolog: report creating", status, &error);
        goto done;
    }
    /* Steps of one job may start here at once: a step without VNIs of its
     * own shares the job's service with the others, so finding or making
     * it and recording that is done under the job's lock, which a step's
     * teardown takes before deciding to destroy it. */
    if (o->step
        && (lock = jobstate_lock(a->cfg->state_dir, o->job, &error)) < 0) {
        rc = prolog_failed(a, o, who, res_id, true, NULL, &error);
        goto done;
    }
    /* The record comes before any service, so a node without a record
     * made none: its epilog needs no broker to know that. */
    record = job_json(o, res_id, &job, res);
    if (record && json_object_set_new(record, "services", json_array()) < 0) {
        json_decref(record);
        record = NULL;
    }
    if (!record || jobstate_save(a->cfg->state_dir, key, record, &error) < 0) {
        rc = prolog_failed(a, o, who, res_id, true, NULL, &error);
        goto done;
    }
    int made = services_create(
        a->nb, a->devs, a->ndev, &job, ids, created, a->err, &error);
    if (made < 0 && errno == EEXIST && o->step && !any_left(created, a->ndev)
        && own_vnis_only(a, who, res, record, key, &job, &error) == 0)
        made = services_create(
            a->nb, a->devs, a->ndev, &job, ids, created, a->err, &error);
    if (made < 0) {
        /* services_create destroyed what it made and checked it gone;
         * ids[] names what it could not. */
        json_t *held = cmd_services_list(a->devs, ids, a->ndev);
        rc = prolog_failed(a, o, who, res_id, true, held, &error);
        json_decref(held);
        goto done;
    }
    svcs = cmd_services_list(a->devs, ids, a->ndev);
    if (jobenv_build(&env, res, a->devs, ids, a->ndev, &error) < 0 || !svcs
        || (o->step && jobenv_set_step(&env, o->step, &error) < 0)
        || json_object_set(record, "services", svcs) < 0
        || jobstate_save(a->cfg->state_dir, key, record, &error) < 0
        || jobstate_write_env(a->cfg->state_dir, key, job.uid, &env, &error)
               < 0) {
        vnib_error_t rerr = {0};
        json_t *left = json_array(), *gone = json_array();
        int nleft = services_destroy(a->nb,
                                     a->devs,
                                     a->ndev,
                                     services_match,
                                     &job,
                                     0,
                                     false,
                                     gone,
                                     left,
                                     &rerr);
        json_t *held = cmd_report_services(left);
        rc = prolog_failed(a, o, who, res_id, nleft >= 0, held, &error);
        json_decref(held);
        json_decref(left);
        json_decref(gone);
        goto done;
    }
    jobstate_unlock(lock);
    lock = -1;
    /* From a lease, nothing to tell the broker (nor to flush). */
    if (!o->lease
        && cmd_report(a,
                      (struct vnib_report){.job_id = o->job,
                                           .step_id = o->step,
                                           .reservation = res_id,
                                           .cxi = "created",
                                           .services = svcs},
                      &error)
               != 200)
        cmd_warn(a,
                 "job %s: services made but the broker did not take the "
                 "report (%s); it still counts this node as holding them",
                 who,
                 error.text);
    else if (!o->lease)
        cmd_flush_quietly(a);
    if (!a->json) {
        char line[512] = "";
        size_t used = 0;
        for (int d = 0; d < a->ndev && used < sizeof(line); d++)
            used += (size_t)snprintf(line + used,
                                     sizeof(line) - used,
                                     "%s%s:%d%s",
                                     d ? " " : "",
                                     a->devs[d].name,
                                     ids[d],
                                     created[d] ? "" : "(reused)");
        fprintf(a->out,
                "job %s: uid=%ld ncores=%u vnis=%d services %s\n",
                who,
                (long)job.uid,
                job.ncores,
                job.nvnis,
                line);
    }
output:
    if (a->json) {
        json_t *out = job_json(o, res_id, &job, res);
        if (out
            && (json_object_set_new(out, "node", json_string(a->node)) < 0
                || json_object_set_new(
                       out, "ncores", json_integer((json_int_t)job.ncores))
                       < 0
                || json_object_set_new(
                       out,
                       "services",
                       cmd_services_list(a->devs, ids, ids ? a->ndev : 0))
                       < 0)) {
            json_decref(out);
            out = NULL;
        }
        cmd_print_result(a, out);
    }
    rc = CMD_DONE;
    if (a->env_out) {
        /* The caller (agent/stepapi.c) takes the environment. */
        jobenv_clear(a->env_out);
        *a->env_out = env;
        memset(&env, 0, sizeof(env));
    }
done:
    jobstate_unlock(lock);
    jobenv_clear(&env);
    json_decref(res);
    json_decref(svcs);
    json_decref(record);
    free(ids);
    free(created);
    return rc;
}
