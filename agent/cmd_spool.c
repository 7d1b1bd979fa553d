/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The report spool, and `vnib-agent flush`.
 *
 * A job ends while the broker is down or failing over: its nodes destroy
 * their services all the same, and each keeps its report in SPOOL_DIR
 * instead of failing the epilog (which would drain every node of the job).
 * The VNIs stay quarantined meanwhile, which is safe.  Every later run of
 * the agent, and `vnib-agent flush` from a timer, sends what is spooled.
 *
 * `flush` then sweeps: a reservation made with a lease counts every node
 * of it as holding services until that node reports them destroyed, also
 * a node where the job never ran (its step never started there, the node
 * was down) and whose epilog, with no record, may never have reported.
 * So flush asks the broker which releasing reservations still wait on
 * this node and, for each the node has no record of, destroys any service
 * holding one of its VNIs (they are the reservation's alone while it is
 * quarantined) and reports the node clean.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/idset.h"
#include "vnib/monotime.h"
#include "agent/broker.h"
#include "agent/commands.h"
#include "agent/jobstate.h"
#include "agent/services.h"

int cmd_report_or_spool(struct cmd_ctx *a,
                        const struct vnib_report *r,
                        vnib_error_t *errp)
{
    vnib_error_t serr = {0};
    char key[JOBSTATE_KEY_MAX];
    int status =
        a->broker.report(a->broker.arg, r, a->cfg->spool_after_ms, errp);

    if (status == 200
        && jobstate_key(key, sizeof(key), r->job_id, r->step_id, &serr) == 0)
        jobstate_spool_remove(a->cfg->spool_dir, key, r->reservation);
    if (!jobstate_spool_worth(status))
        return status;
    if (jobstate_spool_report(a->cfg->spool_dir, r, errp->text, &serr) == 0)
        return 0;
    vnib_error_t why = *errp;
    return errprintf(errp,
                     "%s; and the report could not be spooled: %s",
                     why.text,
                     serr.text);
}

struct flushed {
    int sent, dropped, left;
};

/* Send the spooled reports, oldest reservation first, until deadline_ms is
 * spent or the broker cannot take one.  A report the broker refuses is an
 * answer (the reservation was purged, or the node's state there moved on)
 * and is dropped with a warning.  Returns 0, or -1 when reports are left
 * (errp says why).
 */
static int flush_spool(struct cmd_ctx *a,
                       long deadline_ms,
                       struct flushed *f,
                       vnib_error_t *errp)
{
    json_t *bad = json_array(), *list = NULL, *e;
    long end = (long)monotime_ms() + deadline_ms;
    size_t i;
    int rc = 0;

    *f = (struct flushed){0, 0, 0};
    if (!bad || !(list = jobstate_spool_list(a->cfg->spool_dir, bad, errp))) {
        rc = -1;
        goto out;
    }
    json_array_foreach (bad, i, e)
        cmd_warn(a, "spool: %s; left in place", json_string_value(e));
    f->left = (int)json_array_size(bad);
    json_array_foreach (list, i, e) {
        vnib_error_t error = {0};
        struct vnib_report r = {
            .job_id = json_string_value(json_object_get(e, "job_id")),
            .step_id = json_string_value(json_object_get(e, "step_id")),
            .node = json_string_value(json_object_get(e, "node")),
            .cxi = json_string_value(json_object_get(e, "cxi")),
            .services = json_object_get(e, "services"),
            .message = json_string_value(json_object_get(e, "message")),
            .reservation =
                json_integer_value(json_object_get(e, "reservation_id")),
        };
        if (!r.node || strcmp(r.node, a->node) != 0) {
            cmd_warn(a,
                     "spool: job %s: a report of node %s, not of this node %s; "
                     "left in place",
                     r.job_id,
                     r.node ? r.node : "(none)",
                     a->node);
            f->left++;
            continue;
        }
        long left = end - (long)monotime_ms();
        int status =
            rc < 0 ? -1
                   : a->broker.report(
                       a->broker.arg, &r, left > 100 ? left : 100, &error);
        if (rc < 0 || jobstate_spool_worth(status)) {
            if (rc == 0)
                errprintf(errp, "job %s: %s", r.job_id, error.text);
            rc = -1;
            f->left++;
            continue;
        }
        char key[JOBSTATE_KEY_MAX];
        if (jobstate_key(key, sizeof(key), r.job_id, r.step_id, &error) == 0)
            jobstate_spool_remove(a->cfg->spool_dir, key, r.reservation);
        if (status == 200)
            f->sent++;
        else {
            f->dropped++;
            cmd_warn(a,
                     "spool: job %s: the broker refused the spooled %s report "
                     "of reservation %lld (%s); dropped",
                     r.job_id,
                     r.cxi,
                     r.reservation,
                     error.text);
        }
    }
    if (rc == 0 && f->left > 0) {
        errprintf(errp, "%d spooled report(s) cannot be sent", f->left);
        rc = -1;
    }
out:
    json_decref(bad);
    json_decref(list);
    return rc;
}

void cmd_flush_quietly(struct cmd_ctx *a)
{
    vnib_error_t error = {0};
    struct flushed f;
    if (a->dry_run)
        return;
    if (flush_spool(a, a->cfg->spool_after_ms, &f, &error) < 0)
        cmd_warn(
            a, "spool: %d report(s) still waiting: %s", f.left, error.text);
}

/* The sweep's pick: a job's service holding a VNI of the set. */
static bool pick_vnis(const struct nic_svc *svc, const void *arg)
{
    const struct idset *vnis = arg;
    if (svc->is_system || svc->svc_id == 1)
        return false;
    for (int i = 0; i < svc->nvnis; i++)
        if (idset_contains(vnis, svc->vnis[i]))
            return true;
    return false;
}

/* "device svc N (error), ..." of the services in left, into buf. */
static void left_text(json_t *left, char *buf, size_t size)
{
    size_t used = 0, i;
    json_t *s;

    buf[0] = '\0';
    json_array_foreach (left, i, s) {
        int k = snprintf(
            buf + used,
            size - used,
            "%s%s svc %lld (%s)",
            used ? ", " : "",
            json_string_value(json_object_get(s, "device")),
            (long long)json_integer_value(json_object_get(s, "svc_id")),
            json_string_value(json_object_get(s, "error")));
        if (k < 0 || (size_t)k >= size - used)
            break;
        used += (size_t)k;
    }
}

/* Sweep one reservation r of the node's view: unless this node has its
 * record (its epilog or housekeeping then ends it), destroy the services
 * holding its VNIs and report.  Appends what was done to swept.  Returns
 * the number of services left, or -1 after cmd_fail (the NICs could not
 * be read), or -2 when the broker could take no report (nor the spool).
 */
static int sweep_one(struct cmd_ctx *a, long retry, json_t *r, json_t *swept)
{
    vnib_error_t error = {0};
    const char *job_id = json_string_value(json_object_get(r, "job_id"));
    const char *step_id = json_string_value(json_object_get(r, "step_id"));
    long long res_id = json_integer_value(json_object_get(r, "id"));
    json_t *done = json_array(), *left = json_array(), *rec = NULL, *v;
    struct idset *vnis = idset_create(65535);
    char key[JOBSTATE_KEY_MAX], who[CMD_WHO_MAX], msg[768], note[896];
    const char *outcome = "none";
    size_t i;
    int n = 0, status;

    if (!job_id
        || jobstate_key(key, sizeof(key), job_id, step_id, &error) < 0) {
        cmd_warn(a,
                 "sweep: the broker names a reservation %lld of job %s that "
                 "is no job of this node's; skipped",
                 res_id,
                 job_id ? job_id : "(none)");
        goto out;
    }
    cmd_who(
        &(struct cmd_opts){.job = job_id, .step = step_id}, who, sizeof(who));
    rec = jobstate_load(a->cfg->state_dir, key, &error);
    if (rec
        && json_integer_value(json_object_get(rec, "reservation_id"))
               == res_id) {
        if (!a->json)
            fprintf(a->out,
                    "sweep: job %s: this node has its record; left to its "
                    "epilog or housekeeping\n",
                    who);
        goto out;
    }
    if (!done || !left || !vnis) {
        cmd_fail(a, CMD_FAILED, "out of memory");
        n = -1;
        goto out;
    }
    /* Its own VNIs: a step's services hold them first, then the job's,
     * which the job's reservation answers for. */
    json_array_foreach (json_object_get(r, "vnis"), i, v) {
        json_int_t id = json_integer_value(v);
        if (json_is_integer(v) && id > 0 && id <= 65535)
            (void)idset_add_range(vnis, (uint32_t)id, (uint32_t)id);
    }
    if (idset_count(vnis) > 0) {
        if (cmd_open_nics(a) != CMD_DONE) {
            n = -1;
            goto out;
        }
        n = services_destroy(a->nb,
                             a->devs,
                             a->ndev,
                             pick_vnis,
                             vnis,
                             retry,
                             a->dry_run,
                             done,
                             left,
                             &error);
        if (n < 0) {
            cmd_fail(a, CMD_FAILED, "sweep: job %s: %s", who, error.text);
            goto out;
        }
    }
    left_text(left, msg, sizeof(msg));
    if (a->dry_run)
        outcome = "would report";
    else {
        snprintf(note,
                 sizeof(note),
                 "flush: %d service(s) remain after %ld ms: %s",
                 n,
                 retry,
                 msg);
        json_t *held = n ? cmd_report_services(left) : NULL;
        struct vnib_report rep = {
            .job_id = job_id,
            .step_id = step_id,
            .node = a->node,
            .cxi = n ? "failed" : "destroyed",
            .services = held,
            .message = n ? note : "flush: no record on this node",
            .reservation = res_id,
        };
        status = cmd_report_or_spool(a, &rep, &error);
        json_decref(held);
        outcome = status == 200 ? "sent"
                  : status == 0 ? "spooled"
                  : status < 0  ? "lost"
                                : "refused";
        if (status != 200)
            cmd_warn(a,
                     "sweep: job %s: the broker did not take the report "
                     "(%s)%s",
                     who,
                     error.text,
                     status == 0 ? "; spooled" : "");
        if (status < 0)
            n = -2;
    }
    if (!a->json)
        fprintf(a->out,
                "sweep: job %s (reservation %lld): %s %zu service(s)%s%s; "
                "%s %s\n",
                who,
                res_id,
                a->dry_run ? "would destroy" : "destroyed",
                json_array_size(done),
                json_array_size(left) ? ", left " : "",
                msg,
                a->dry_run ? "would report" : "report",
                json_array_size(left) ? "failed" : "destroyed");
    json_array_append_new(swept,
                          json_pack("{s:s, s:s*, s:I, s:O, s:O, s:s}",
                                    "job_id",
                                    job_id,
                                    "step_id",
                                    step_id,
                                    "reservation_id",
                                    (json_int_t)res_id,
                                    "destroyed",
                                    done,
                                    "remaining",
                                    left,
                                    "report",
                                    outcome));
out:
    idset_destroy(vnis);
    json_decref(rec);
    json_decref(done);
    json_decref(left);
    return n;
}

/* The sweep: every releasing reservation the broker says still waits on
 * this node.  Returns an exit status. */
static int sweep(struct cmd_ctx *a, long retry, json_t *swept)
{
    vnib_error_t error = {0};
    json_t *view = NULL, *r;
    char path[TOKEN_NODE_MAX + 32];
    char *esc = cmd_escape(a->node);
    int status, left = 0;
    bool broken = false, lost = false;
    size_t i;

    if (!esc)
        return cmd_fail(a, CMD_FAILED, "out of memory");
    snprintf(path, sizeof(path), "/v1/nodes/%s", esc);
    free(esc);
    status = a->broker.get(
        a->broker.arg, path, a->cfg->fetch_timeout_ms, &view, &error);
    if (status != 200)
        return cmd_broker_failure(a, "flush: sweep", status, &error);
    json_array_foreach (json_object_get(view, "reservations"), i, r) {
        const char *state = json_string_value(json_object_get(r, "state"));
        if (!state || strcmp(state, "releasing") != 0
            || !json_is_true(json_object_get(r, "cleanup_needed")))
            continue;
        int n = sweep_one(a, retry, r, swept);
        if (n == -2)
            lost = true;
        else if (n < 0)
            broken = true;
        else
            left += n;
    }
    json_decref(view);
    if (lost)
        return cmd_fail(a,
                        CMD_UNREACHABLE,
                        "flush: sweep: a report could be neither sent nor "
                        "spooled");
    if (left > 0)
        return cmd_fail(a,
                        CMD_FAILED,
                        "flush: sweep: %d CXI service(s) remain busy; drain "
                        "this node, then run 'vnib-agent clean --all'",
                        left);
    return broken ? CMD_FAILED : CMD_DONE;
}

int cmd_flush(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    struct flushed f = {0, 0, 0};
    json_t *swept = json_array();
    int rc;

    if (!swept)
        return cmd_fail(a, CMD_FAILED, "out of memory");
    if ((rc = cmd_connect(a)) != CMD_DONE)
        goto out;
    if (a->dry_run) {
        json_t *list = jobstate_spool_list(a->cfg->spool_dir, NULL, &error);
        if (!list) {
            rc = cmd_fail(a, CMD_FAILED, "flush: %s", error.text);
            goto out;
        }
        f.left = (int)json_array_size(list);
        json_decref(list);
    } else if (flush_spool(a, a->cfg->fetch_timeout_ms, &f, &error) < 0)
        rc = f.left > 0 ? CMD_UNREACHABLE : CMD_FAILED;
    /* Tombstones of reservations whose leases have expired go. */
    if (!a->dry_run)
        (void)jobstate_ended_prune(a->cfg->spool_dir, (long long)time(NULL));
    if (!a->json)
        fprintf(a->out,
                "flush: %d sent, %d dropped, %d %s\n",
                f.sent,
                f.dropped,
                f.left,
                a->dry_run ? "spooled" : "left");
    if (rc != CMD_DONE) {
        rc = cmd_fail(a, rc, "flush: %s", error.text);
        goto print;
    }
    /* Reports the broker could not take wait in the spool: sweeping would
     * only make more of them. */
    rc = sweep(a,
               o->retry_ms >= 0 ? o->retry_ms : a->cfg->epilog_retry_busy_ms,
               swept);
print:
    if (a->json) {
        json_t *out = json_pack("{s:s, s:i, s:i, s:i, s:O}",
                                "node",
                                a->node,
                                "sent",
                                f.sent,
                                "dropped",
                                f.dropped,
                                "left",
                                f.left,
                                "swept",
                                swept);
        cmd_print_result(a, out);
    }
out:
    json_decref(swept);
    return rc;
}
