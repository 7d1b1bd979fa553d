/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Destroying services: `vnib-agent epilog`, `housekeeping` and `clean
 * --all`; the first two also for one step (--step).
 *
 * Services are matched by owner uid and exact VNI list (a job's), or by
 * VNIs in the broker's pool (clean), never by anything a job could forge.
 * At job end the report goes to the broker, or into the spool when the
 * broker cannot take it (cmd_spool.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/idset.h"
#include "agent/commands.h"
#include "agent/jobstate.h"
#include "agent/services.h"

/* Open the NICs and destroy the services pick chooses, retrying busy ones
 * for retry ms (see services_destroy): those destroyed go into done, those
 * left into left.  Returns how many are left, or -1 after cmd_fail
 * ("WHO: ...").
 */
static int destroy(struct cmd_ctx *a,
                   services_pick_fn pick,
                   const void *arg,
                   long retry,
                   json_t *done,
                   json_t *left,
                   const char *who)
{
    vnib_error_t error = {0};
    int n;

    if (cmd_open_nics(a) != CMD_DONE)
        return -1;
    n = services_destroy(a->nb,
                         a->devs,
                         a->ndev,
                         pick,
                         arg,
                         retry,
                         a->dry_run,
                         done,
                         left,
                         &error);
    if (n < 0)
        cmd_fail(a, CMD_FAILED, "%s: %s", who, error.text);
    return n;
}

/* True when a record other than key's, of the same job (its own or one
 * of its steps'), names a service with vnis for uid: a step without VNIs
 * of its own shares the job's service, which then stays while another
 * holds it.  Called under the job's lock.
 */
static bool shared(struct cmd_ctx *a,
                   const struct cmd_opts *o,
                   const char *key,
                   json_t *src)
{
    vnib_error_t ignore = {0};
    json_t *steps = jobstate_steps(a->cfg->state_dir, o->job, &ignore);
    bool found = false;
    size_t i;
    json_t *st;

    /* The job's own record first (index -1), then its steps'. */
    for (i = 0; !found && (i == 0 || i <= json_array_size(steps)); i++) {
        char other[JOBSTATE_KEY_MAX];
        st = i ? json_array_get(steps, i - 1) : NULL;
        if (jobstate_key(other,
                         sizeof(other),
                         o->job,
                         st ? json_string_value(st) : NULL,
                         &ignore)
                < 0
            || !strcmp(other, key))
            continue;
        json_t *rec = jobstate_load(a->cfg->state_dir, other, &ignore);
        found = rec
                && json_equal(json_object_get(rec, "vnis"),
                              json_object_get(src, "vnis"))
                && json_equal(json_object_get(rec, "uid"),
                              json_object_get(src, "uid"));
        json_decref(rec);
    }
    json_decref(steps);
    return found;
}

/* This node's services of reservation res_id (src: its record, or the
 * broker's reservation when fetched) are gone and reported: when a lease
 * may have started them (the reservation is presumed), record that it
 * ended here until the lease expires, so that a replay of the lease is
 * refused (cmd_lease.c).  The broker's reservation does not say when its
 * leases expire: then for the longest life a lease may have.  A failure
 * only warns: the lease's expiry and the broker's cool-down remain. */
static void ended_here(struct cmd_ctx *a,
                       json_t *src,
                       long long res_id,
                       bool fetched,
                       const char *who)
{
    vnib_error_t error = {0};
    json_t *exp = json_object_get(src, "lease_exp");
    long long until;

    if (!json_is_true(json_object_get(src, "presumed")))
        return;
    until = json_is_integer(exp) && !fetched
                ? (long long)json_integer_value(exp)
                : (long long)time(NULL) + CMD_LEASE_TTL_MAX;
    until += a->cfg->lease_max_skew_s;
    if (jobstate_ended_put(a->cfg->spool_dir, res_id, until, &error) < 0)
        cmd_warn(a,
                 "job %s: cannot record that reservation %lld ended here: %s",
                 who,
                 res_id,
                 error.text);
}

/* Epilog and housekeeping: destroy the job's services and say so.
 *
 * What to destroy comes from this node's record of what its prolog made;
 * the broker is asked only when there is none (a prolog that died between
 * its "creating" report and its record, or a node of a lease's
 * reservation where the job's prolog never ran): then whatever services
 * match the reservation's owner and VNIs are destroyed, and the node
 * reports "destroyed" even when there were none, since a reservation
 * made with a lease counts every node of it as holding services until it
 * says so.  The report goes to the broker
 * within broker.spool_after_ms, or into the spool: a broker outage at job
 * end neither drains the node nor holds the job back.
 *
 * With a step, the same for the step's services, record and route.  A
 * step's service that another record of the job still names (steps
 * without VNIs of their own share the job's) is left to the last of them.
 */
static int teardown(struct cmd_ctx *a, const struct cmd_opts *o, bool final)
{
    vnib_error_t error = {0};
    json_t *src = NULL, *done = json_array(), *left = json_array();
    const char *what = final ? "housekeeping" : "epilog";
    const char *outcome = "none";
    struct services_job job;
    long long res_id = 0;
    int rc, status, n = 0, lock = -1;
    char key[JOBSTATE_KEY_MAX], who[CMD_WHO_MAX];

    if (!done || !left) {
        rc = cmd_fail(a, CMD_FAILED, "out of memory");
        goto out;
    }
    if (jobstate_key(key, sizeof(key), o->job, o->step, &error) < 0) {
        rc = cmd_fail(a, CMD_USAGE, "%s: %s", what, error.text);
        goto out;
    }
    cmd_who(o, who, sizeof(who)); /* "42", or "42 step 0" */
    if ((rc = cmd_connect(a)) != CMD_DONE)
        goto out;
    long retry = o->retry_ms >= 0 ? o->retry_ms
                 : final          ? a->cfg->housekeeping_retry_busy_ms
                                  : a->cfg->epilog_retry_busy_ms;
    /* src: the node's record, else the broker's reservation. */
    bool fetched = false;
    if (!(src = jobstate_load(a->cfg->state_dir, key, &error))) {
        fetched = true;
        status =
            cmd_fetch(a, o->job, o->step, a->cfg->spool_after_ms, &src, &error);
        if (status != 200) {
            if (status < 0)
                cmd_warn(
                    a,
                    "job %s: no record on this node, so its prolog made no "
                    "service; the broker could not confirm (%s), and "
                    "'vnib-agent flush' reports the node clean once it can",
                    who,
                    error.text);
            else if (!a->json)
                fprintf(a->out,
                        "job %s: no reservation here; nothing to destroy\n",
                        who);
            if (!a->dry_run)
                jobstate_remove(a->cfg->state_dir, key, false);
            rc = CMD_DONE;
            goto out;
        }
    }
    res_id = json_integer_value(
        json_object_get(src, fetched ? "id" : "reservation_id"));
    if (cmd_job_from(src, &job, a->cfg->floor_percent) < 0) {
        rc = cmd_fail(a, CMD_FAILED, "job %s: malformed reservation", who);
        goto out;
    }
    /* A lease's reservation (presumed) waits for every node's report,
     * even of a node that holds nothing. */
    bool presumed = json_is_true(json_object_get(src, "presumed"));
    if (job.nvnis == 0 && !presumed) {
        if (!a->dry_run)
            jobstate_remove(a->cfg->state_dir, key, true);
        if (!a->json)
            fprintf(a->out, "job %s: no VNIs; nothing to destroy\n", who);
        rc = CMD_DONE;
        goto out;
    }
    char label[CMD_WHO_MAX + 8];
    snprintf(label, sizeof(label), "job %s", who);
    if (o->step
        && (lock = jobstate_lock(a->cfg->state_dir, o->job, &error)) < 0) {
        rc = cmd_fail(a, CMD_FAILED, "%s: %s", label, error.text);
        goto out;
    }
    if (job.nvnis > 0 && o->step && shared(a, o, key, src)) {
        if (!a->json)
            fprintf(a->out,
                    "job %s: its service is the job's, still in use; left "
                    "in place\n",
                    who);
    } else if (job.nvnis > 0
               && (n = destroy(
                       a, services_match, &job, retry, done, left, label))
                      < 0) {
        rc = CMD_FAILED;
        goto out;
    }
    char msg[768] = "";
    size_t used = 0;
    size_t i;
    json_t *s;
    json_array_foreach (left, i, s) {
        int k = snprintf(
            msg + used,
            sizeof(msg) - used,
            "%s%s svc %lld (%s)",
            used ? ", " : "",
            json_string_value(json_object_get(s, "device")),
            (long long)json_integer_value(json_object_get(s, "svc_id")),
            json_string_value(json_object_get(s, "error")));
        if (k < 0 || (size_t)k >= sizeof(msg) - used)
            break;
        used += (size_t)k;
    }
    if (a->dry_run) {
        rc = CMD_DONE;
        goto print;
    }
    char note[sizeof(msg) + 96];
    snprintf(note,
             sizeof(note),
             "%s: %d service(s) remain after %ld ms: %s",
             what,
             n,
             retry,
             msg);
    json_t *held = n ? cmd_report_services(left) : NULL;
    struct vnib_report r = {
        .job_id = o->job,
        .step_id = o->step,
        .node = a->node,
        .cxi = n ? "failed" : "destroyed",
        .services = held,
        .message = n ? note : NULL,
        .reservation = res_id,
    };
    status = cmd_report_or_spool(a, &r, &error);
    json_decref(held);
    if (status == 200) {
        outcome = "sent";
        cmd_flush_quietly(a);
    } else if (status == 0) {
        outcome = "spooled";
        cmd_warn(a,
                 "job %s: the broker did not take the report (%s); spooled in "
                 "%s for 'vnib-agent flush'",
                 who,
                 error.text,
                 a->cfg->spool_dir);
    } else {
        outcome = status < 0 ? "lost" : "refused";
        cmd_warn(a,
                 "job %s: the broker did not take the report: %s",
                 who,
                 error.text);
    }
    /* The record goes once the services are gone and the broker has the
     * report, or will have it from the spool; a presumed reservation's
     * (a lease's) leaves a tombstone first (ended_here). */
    if (n == 0 && status >= 0 && !a->dry_run)
        ended_here(a, src, res_id, fetched, who);
    jobstate_remove(a->cfg->state_dir, key, n == 0 && status >= 0);
    jobstate_unlock(lock);
    lock = -1;
    if (n > 0) {
        if (final)
            rc = cmd_fail(
                a,
                CMD_FAILED,
                "job %s: %d CXI service(s) remain: %s; drain this node, "
                "then run 'vnib-agent clean --all'",
                who,
                n,
                msg);
        else {
            cmd_warn(a,
                     "job %s: %d CXI service(s) still busy after %ld ms, left "
                     "for housekeeping: %s",
                     who,
                     n,
                     retry,
                     msg);
            rc = CMD_DONE;
        }
    } else if (status < 0 && final)
        rc = cmd_fail(a,
                      CMD_UNREACHABLE,
                      "job %s: services destroyed, but the broker was not told",
                      who);
    else
        rc = CMD_DONE;
print:
    if (!a->json && n == 0)
        fprintf(a->out,
                "job %s: %s %zu service(s)\n",
                who,
                a->dry_run ? "would destroy" : "destroyed",
                json_array_size(done));
    if (a->json) {
        json_t *o2 = json_pack("{s:s, s:s*, s:s, s:I, s:O, s:O, s:s}",
                               "job_id",
                               o->job,
                               "step_id",
                               o->step,
                               "node",
                               a->node,
                               "reservation_id",
                               (json_int_t)res_id,
                               "destroyed",
                               done,
                               "remaining",
                               left,
                               "report",
                               outcome);
        cmd_print_result(a, o2);
    }
out:
    jobstate_unlock(lock);
    json_decref(src);
    json_decref(done);
    json_decref(left);
    return rc;
}

/* A job's end: first the steps whose own teardown never ran (their
 * slurmstepd was killed, or their services were busy) by their records,
 * then the job's services.  The worst status wins. */
static int job_end(struct cmd_ctx *a, const struct cmd_opts *o, bool final)
{
    vnib_error_t error = {0};
    json_t *steps;
    size_t i;
    json_t *st;
    int rc = CMD_DONE;

    if (o->step)
        return teardown(a, o, final);
    if (jobstate_job_id_valid(o->job)
        && (steps = jobstate_steps(a->cfg->state_dir, o->job, &error))) {
        json_array_foreach (steps, i, st) {
            struct cmd_opts so = *o;
            so.step = json_string_value(st);
            int r = teardown(a, &so, final);
            if (r != CMD_DONE && (rc == CMD_DONE || r < rc))
                rc = r;
        }
        json_decref(steps);
    }
    int r = teardown(a, o, final);
    return rc != CMD_DONE && (r == CMD_DONE || rc < r) ? rc : r;
}

int cmd_epilog(struct cmd_ctx *a, const struct cmd_opts *o)
{
    return job_end(a, o, false);
}

int cmd_housekeeping(struct cmd_ctx *a, const struct cmd_opts *o)
{
    return job_end(a, o, true);
}

/* clean --all: the services whose VNIs lie in the pool. */
static bool pick_pool(const struct nic_svc *svc, const void *arg)
{
    const struct idset *pool = arg;
    if (svc->is_system || svc->svc_id == 1 || svc->nvnis == 0)
        return false;
    for (int i = 0; i < svc->nvnis; i++)
        if (idset_contains(pool, svc->vnis[i]))
            return true;
    return false;
}

/* True when a service in list has exactly the VNIs of res (a step's: its
 * own, then the job's). */
static bool holds(json_t *list, json_t *res)
{
    json_t *vnis = cmd_service_vnis(res);
    bool found = false;
    size_t i;
    json_t *s;
    json_array_foreach (list, i, s) {
        if (json_equal(json_object_get(s, "vnis"), vnis)
            && json_integer_value(json_object_get(s, "uid"))
                   == json_integer_value(json_object_get(res, "uid")))
            found = true;
    }
    json_decref(vnis);
    return found;
}

int cmd_clean(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    json_t *pool_reply = NULL, *view = NULL, *done, *left, *reported;
    struct idset *pool = NULL;
    char path[TOKEN_NODE_MAX + 32];
    int rc, status;

    if (!o->all)
        return cmd_fail(a,
                        CMD_USAGE,
                        "clean: --all is required (it destroys every "
                        "job service on this node)");
    done = json_array();
    left = json_array();
    reported = json_array();
    if (!done || !left || !reported) {
        rc = cmd_fail(a, CMD_FAILED, "out of memory");
        goto out;
    }
    if ((rc = cmd_connect(a)) != CMD_DONE)
        goto out;
    char *esc = cmd_escape(a->node);
    if (!esc) {
        rc = cmd_fail(a, CMD_FAILED, "out of memory");
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/nodes/%s", esc);
    free(esc);
    if ((status = a->broker.get(a->broker.arg,
                                "/v1/pool",
                                a->cfg->fetch_timeout_ms,
                                &pool_reply,
                                &error))
            != 200
        || (status = a->broker.get(
                a->broker.arg, path, a->cfg->fetch_timeout_ms, &view, &error))
               != 200) {
        rc = cmd_broker_failure(a, "clean", status, &error);
        goto out;
    }
    const char *ranges =
        json_string_value(json_object_get(pool_reply, "ranges"));
    if (!ranges || !(pool = idset_decode(ranges, 65535, &error))) {
        rc = cmd_fail(a, CMD_FAILED, "clean: the broker's pool is unreadable");
        goto out;
    }
    long retry = o->retry_ms >= 0 ? o->retry_ms : a->cfg->epilog_retry_busy_ms;
    int n = destroy(a, pick_pool, pool, retry, done, left, "clean");
    if (n < 0) {
        rc = CMD_FAILED;
        goto out;
    }
    /* Every reservation this node may still hold is now settled: destroyed
     * unless one of its services is among those left. */
    size_t i;
    json_t *r;
    json_array_foreach (json_object_get(view, "reservations"), i, r) {
        if (!json_is_true(json_object_get(r, "cleanup_needed")))
            continue;
        const char *job_id = json_string_value(json_object_get(r, "job_id"));
        const char *step_id = json_string_value(json_object_get(r, "step_id"));
        long long res_id = json_integer_value(json_object_get(r, "id"));
        bool stuck = holds(left, r);
        char key[JOBSTATE_KEY_MAX];
        if (!job_id
            || jobstate_key(key, sizeof(key), job_id, step_id, &error) < 0)
            continue;
        json_array_append_new(reported,
                              json_pack("{s:s, s:s*, s:I, s:s}",
                                        "job_id",
                                        job_id,
                                        "step_id",
                                        step_id,
                                        "reservation_id",
                                        (json_int_t)res_id,
                                        "cxi",
                                        stuck ? "failed" : "destroyed"));
        if (a->dry_run)
            continue;
        status =
            cmd_report(a,
                       (struct vnib_report){
                           .job_id = job_id,
                           .step_id = step_id,
                           .reservation = res_id,
                           .cxi = stuck ? "failed" : "destroyed",
                           .message = stuck ? "clean --all: services still busy"
                                            : "clean --all"},
                       &error);
        if (status != 200)
            cmd_warn(a,
                     "job %s: the broker did not take the report: %s",
                     job_id,
                     error.text);
        else {
            /* What this run reported supersedes what an earlier one
             * spooled for the same reservation. */
            jobstate_spool_remove(a->cfg->spool_dir, key, res_id);
            if (!stuck)
                jobstate_remove(a->cfg->state_dir, key, true);
        }
    }
    cmd_flush_quietly(a);
    if (a->json) {
        json_t *out = json_pack("{s:s, s:O, s:O, s:O}",
                                "node",
                                a->node,
                                "destroyed",
                                done,
                                "remaining",
                                left,
                                "reported",
                                reported);
        cmd_print_result(a, out);
    } else
        fprintf(a->out,
                "clean: %s %zu service(s), %d remain; %zu job(s) reported\n",
                a->dry_run ? "would destroy" : "destroyed",
                json_array_size(done),
                n,
                json_array_size(reported));
    rc = n > 0 ? cmd_fail(a, CMD_FAILED, "clean: %d service(s) remain busy", n)
               : CMD_DONE;
out:
    idset_destroy(pool);
    json_decref(pool_reply);
    json_decref(view);
    json_decref(done);
    json_decref(left);
    json_decref(reported);
    return rc;
}
