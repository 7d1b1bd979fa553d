/* Destroying services: `vnib-agent epilog`, `housekeeping` and `clean
 * --all`.
 *
 * Services are matched by owner uid and exact VNI list (a job's), or by
 * VNIs in the broker's pool (clean), never by anything a job could forge.
 * At job end the report goes to the broker, or into the spool when the
 * broker cannot take it (cmd_spool.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    vnib_error_t error = {""};
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

/* Epilog and housekeeping: destroy the job's services and say so.
 *
 * What to destroy comes from this node's record of what its prolog made;
 * the broker is asked only when there is none (a prolog that died between
 * its "creating" report and its record).  The report goes to the broker
 * within broker.spool_after_ms, or into the spool: a broker outage at job
 * end neither drains the node nor holds the job back.
 */
static int teardown(struct cmd_ctx *a, const struct cmd_opts *o, bool final)
{
    vnib_error_t error = {""};
    json_t *src = NULL, *done = json_array(), *left = json_array();
    const char *what = final ? "housekeeping" : "epilog";
    const char *outcome = "none";
    struct services_job job;
    long long res_id = 0;
    int rc, status, n = 0;

    if (!done || !left) {
        rc = cmd_fail(a, CMD_FAILED, "out of memory");
        goto out;
    }
    if ((rc = cmd_connect(a)) != CMD_DONE)
        goto out;
    long retry = o->retry_ms >= 0 ? o->retry_ms
                 : final          ? a->cfg->housekeeping_retry_busy_ms
                                  : a->cfg->epilog_retry_busy_ms;
    /* src: the node's record, else the broker's reservation. */
    bool fetched = false;
    if (!(src = jobstate_load(a->cfg->state_dir, o->job, &error))) {
        fetched = true;
        status = cmd_fetch(a, o->job, a->cfg->spool_after_ms, &src, &error);
        if (status != 200) {
            if (status < 0)
                cmd_warn(
                    a,
                    "job %s: no record on this node, so its prolog made no "
                    "service; the broker could not confirm (%s)",
                    o->job,
                    error.text);
            else if (!a->json)
                fprintf(a->out,
                        "job %s: no reservation here; nothing to destroy\n",
                        o->job);
            if (!a->dry_run)
                jobstate_remove(a->cfg->state_dir, o->job, false);
            rc = CMD_DONE;
            goto out;
        }
    }
    res_id = json_integer_value(
        json_object_get(src, fetched ? "id" : "reservation_id"));
    if (cmd_job_from(src, &job, a->cfg->floor_percent) < 0) {
        rc = cmd_fail(a, CMD_FAILED, "job %s: malformed reservation", o->job);
        goto out;
    }
    if (job.nvnis == 0) {
        if (!a->dry_run)
            jobstate_remove(a->cfg->state_dir, o->job, true);
        if (!a->json)
            fprintf(a->out, "job %s: no VNIs; nothing to destroy\n", o->job);
        rc = CMD_DONE;
        goto out;
    }
    char who[160];
    snprintf(who, sizeof(who), "job %s", o->job);
    if ((n = destroy(a, services_match, &job, retry, done, left, who)) < 0) {
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
                 o->job,
                 error.text,
                 a->cfg->spool_dir);
    } else {
        outcome = status < 0 ? "lost" : "refused";
        cmd_warn(a,
                 "job %s: the broker did not take the report: %s",
                 o->job,
                 error.text);
    }
    /* The record goes once the services are gone and the broker has the
     * report, or will have it from the spool. */
    jobstate_remove(a->cfg->state_dir, o->job, n == 0 && status >= 0);
    if (n > 0) {
        if (final)
            rc = cmd_fail(
                a,
                CMD_FAILED,
                "job %s: %d CXI service(s) remain: %s; drain this node, "
                "then run 'vnib-agent clean --all'",
                o->job,
                n,
                msg);
        else {
            cmd_warn(a,
                     "job %s: %d CXI service(s) still busy after %ld ms, left "
                     "for housekeeping: %s",
                     o->job,
                     n,
                     retry,
                     msg);
            rc = CMD_DONE;
        }
    } else if (status < 0 && final)
        rc = cmd_fail(a,
                      CMD_UNREACHABLE,
                      "job %s: services destroyed, but the broker was not told",
                      o->job);
    else
        rc = CMD_DONE;
print:
    if (!a->json && n == 0)
        fprintf(a->out,
                "job %s: %s %zu service(s)\n",
                o->job,
                a->dry_run ? "would destroy" : "destroyed",
                json_array_size(done));
    if (a->json) {
        json_t *o2 = json_pack("{s:s, s:s, s:I, s:O, s:O, s:s}",
                               "job_id",
                               o->job,
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
    json_decref(src);
    json_decref(done);
    json_decref(left);
    return rc;
}

int cmd_epilog(struct cmd_ctx *a, const struct cmd_opts *o)
{
    return teardown(a, o, false);
}

int cmd_housekeeping(struct cmd_ctx *a, const struct cmd_opts *o)
{
    return teardown(a, o, true);
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

/* True when a service in list has exactly the VNIs of res. */
static bool holds(json_t *list, json_t *res)
{
    size_t i;
    json_t *s;
    json_array_foreach (list, i, s) {
        if (json_equal(json_object_get(s, "vnis"), json_object_get(res, "vnis"))
            && json_integer_value(json_object_get(s, "uid"))
                   == json_integer_value(json_object_get(res, "uid")))
            return true;
    }
    return false;
}

int cmd_clean(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {""};
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
    char *esc = vnib_client_escape(a->node);
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
        long long res_id = json_integer_value(json_object_get(r, "id"));
        bool stuck = holds(left, r);
        if (!job_id)
            continue;
        json_array_append_new(reported,
                              json_pack("{s:s, s:I, s:s}",
                                        "job_id",
                                        job_id,
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
            jobstate_spool_remove(a->cfg->spool_dir, job_id, res_id);
            if (!stuck)
                jobstate_remove(a->cfg->state_dir, job_id, true);
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
