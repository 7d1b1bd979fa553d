/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The report spool, and `vnib-agent flush`.
 *
 * A job ends while the broker is down or failing over: its nodes destroy
 * their services all the same, and each keeps its report in SPOOL_DIR
 * instead of failing the epilog (which would drain every node of the job).
 * The VNIs stay quarantined meanwhile, which is safe.  Every later run of
 * the agent, and `vnib-agent flush` from a timer, sends what is spooled.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "vnib/monotime.h"
#include "agent/broker.h"
#include "agent/commands.h"
#include "agent/jobstate.h"

/* Statuses after which a report is worth keeping to send again: no
 * answer, an overloaded or failing broker, or credentials it refused
 * (fixable on the node, and the report is still true then). */
static bool worth_spooling(int status)
{
    return status < 0 || status == 401 || status == 403 || status == 429
           || status >= 500;
}

int cmd_report_or_spool(struct cmd_ctx *a,
                        const struct vnib_report *r,
                        vnib_error_t *errp)
{
    vnib_error_t serr = {0};
    json_t *entry = NULL;
    char key[JOBSTATE_KEY_MAX];
    int status =
        a->broker.report(a->broker.arg, r, a->cfg->spool_after_ms, errp);

    if (status == 200
        && jobstate_key(key, sizeof(key), r->job_id, r->step_id, &serr) == 0)
        jobstate_spool_remove(a->cfg->spool_dir, key, r->reservation);
    if (!worth_spooling(status))
        return status;
    /* The step, if any, is kept: its report goes to the step's route. */
    if (!(entry = json_pack("{s:s, s:s*, s:s, s:I, s:s, s:s}",
                            "job_id",
                            r->job_id,
                            "step_id",
                            r->step_id,
                            "node",
                            r->node,
                            "reservation_id",
                            (json_int_t)r->reservation,
                            "cxi",
                            r->cxi,
                            "error",
                            errp->text))
        || (r->services && json_object_set(entry, "services", r->services) < 0)
        || (r->message
            && json_object_set_new(entry, "message", json_string(r->message))
                   < 0)) {
        json_decref(entry);
        errno = ENOMEM;
        snprintf(serr.text, sizeof(serr.text), "out of memory");
        goto unspooled;
    }
    status = jobstate_spool_put(a->cfg->spool_dir, entry, &serr);
    json_decref(entry);
    if (status == 0)
        return 0;
unspooled:;
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
        if (rc < 0 || worth_spooling(status)) {
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

int cmd_flush(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    struct flushed f = {0, 0, 0};
    int rc;

    (void)o;
    if ((rc = cmd_connect(a)) != CMD_DONE)
        return rc;
    if (a->dry_run) {
        json_t *list = jobstate_spool_list(a->cfg->spool_dir, NULL, &error);
        if (!list)
            return cmd_fail(a, CMD_FAILED, "flush: %s", error.text);
        f.left = (int)json_array_size(list);
        json_decref(list);
    } else if (flush_spool(a, a->cfg->fetch_timeout_ms, &f, &error) < 0)
        rc = f.left > 0 ? CMD_UNREACHABLE : CMD_FAILED;
    if (a->json) {
        json_t *out = json_pack("{s:s, s:i, s:i, s:i}",
                                "node",
                                a->node,
                                "sent",
                                f.sent,
                                "dropped",
                                f.dropped,
                                "left",
                                f.left);
        cmd_print_result(a, out);
    } else
        fprintf(a->out,
                "flush: %d sent, %d dropped, %d %s\n",
                f.sent,
                f.dropped,
                f.left,
                a->dry_run ? "spooled" : "left");
    if (rc == CMD_UNREACHABLE)
        return cmd_fail(a, rc, "flush: %s", error.text);
    if (rc != CMD_DONE)
        return cmd_fail(a, rc, "flush: %s", error.text);
    return rc;
}
