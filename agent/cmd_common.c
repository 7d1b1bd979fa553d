/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the agent's commands share (see commands.h): the context's
 * messages, its connection to the broker and its NICs, and the pieces of
 * a reservation and of a report that several commands build.  Nothing
 * here calls libcurl: the connection comes from a->open_broker.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/secfile.h"
#include "vnib/tclass.h"
#include "vnib/token.h"
#include "agent/commands.h"
#include "agent/services.h"

int cmd_fail(struct cmd_ctx *a, int code, const char *fmt, ...)
{
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    vsnprintf(a->error.text, sizeof(a->error.text), fmt, copy);
    va_end(copy);
    fputs("vnib-agent: ", a->err);
    vfprintf(a->err, fmt, ap);
    fputc('\n', a->err);
    va_end(ap);
    return code;
}

void cmd_warn(struct cmd_ctx *a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(a->err, "vnib-agent: warning: %s\n", buf);
    if (a->warnings)
        json_array_append_new(a->warnings, json_string(buf));
}

void cmd_ctx_fini(struct cmd_ctx *a)
{
    if (a->conn.close)
        a->conn.close(&a->conn);
    nic_destroy(a->nb);
    free(a->devs);
    if (a->token)
        secfile_free(a->token, a->token_len);
    agentcfg_destroy(a->cfg);
    json_decref(a->warnings);
}

/* Read the node token and settle this node's name. */
static int load_identity(struct cmd_ctx *a)
{
    vnib_error_t error = {0};
    const char *file = a->cfg->token_file;

    if (secfile_read(file, &a->token, &a->token_len, &error) < 0)
        return cmd_fail(a, CMD_USAGE, "%s", error.text);
    a->token[strcspn(a->token, " \t\r\n")] = '\0';
    if (!*a->token)
        return cmd_fail(a, CMD_USAGE, "%s: holds no token", file);
    const char *from_token = NULL;
    if (token_is_node(a->token)) {
        const char *start = a->token + strlen(TOKEN_NODE_PREFIX);
        const char *dot = strrchr(start, '.');
        if (dot && (size_t)(dot - start) < sizeof(a->node)) {
            snprintf(
                a->node, sizeof(a->node), "%.*s", (int)(dot - start), start);
            from_token = a->node;
        }
    }
    if (*a->cfg->name) {
        if (from_token && strcmp(from_token, a->cfg->name) != 0)
            return cmd_fail(a,
                            CMD_USAGE,
                            "%s: the token is node %s's, but this agent is "
                            "configured as %s",
                            file,
                            from_token,
                            a->cfg->name);
        snprintf(a->node, sizeof(a->node), "%s", a->cfg->name);
    } else if (!from_token)
        return cmd_fail(a,
                        CMD_USAGE,
                        "%s: not a node token; set node.name or --node",
                        file);
    return CMD_DONE;
}

int cmd_identify(struct cmd_ctx *a)
{
    return a->node[0] ? CMD_DONE : load_identity(a);
}

int cmd_connect(struct cmd_ctx *a)
{
    vnib_error_t error = {0};
    if (a->broker.get)
        return CMD_DONE;
    int rc = cmd_identify(a);
    if (rc != CMD_DONE)
        return rc;
    if (!a->open_broker)
        return cmd_fail(
            a, CMD_USAGE, "no client of the broker in this program");
    if (a->open_broker(a->cfg->url, a->token, a->cfg->cacert, &a->conn, &error)
        < 0)
        return cmd_fail(a, CMD_USAGE, "%s", error.text);
    a->broker = (struct cmd_broker){a->conn.get, a->conn.report, a->conn.arg};
    return CMD_DONE;
}

char *cmd_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    bool dots = !strcmp(s, ".") || !strcmp(s, "..");
    char *out = malloc(3 * strlen(s) + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (!dots && (isalnum(*p) || strchr("-._~", *p))) {
            out[o++] = (char)*p;
            continue;
        }
        out[o++] = '%';
        out[o++] = hex[*p >> 4];
        out[o++] = hex[*p & 15];
    }
    out[o] = '\0';
    return out;
}

/* The path of a job's newest reservation, "/v1/reservations/JOB", or of
 * one of its steps', "/v1/reservations/JOB/steps/STEP", escaped, into
 * buf. */
static int res_path(const char *job_id,
                    const char *step_id,
                    char *buf,
                    size_t size,
                    vnib_error_t *errp)
{
    char *esc = cmd_escape(job_id);
    char *step = step_id ? cmd_escape(step_id) : NULL;
    int rc = 0;

    if (!esc || (step_id && !step)) {
        errno = ENOMEM;
        rc = errprintf(errp, "out of memory");
    } else if ((size_t)snprintf(buf,
                                size,
                                "/v1/reservations/%s%s%s",
                                esc,
                                step ? "/steps/" : "",
                                step ? step : "")
               >= size) {
        errno = ENAMETOOLONG;
        rc = errprintf(errp, "job or step id too long");
    }
    free(esc);
    free(step);
    return rc;
}

int cmd_open_nics(struct cmd_ctx *a)
{
    vnib_error_t error = {0};
    const char *arg =
        !strcmp(a->cfg->backend, "sim") ? a->cfg->sim_dir : a->cfg->libcxi;
    free(a->devs); /* a second command in one process lists them anew */
    a->devs = NULL;
    a->ndev = 0;
    if ((!a->nb && !(a->nb = nic_create(a->cfg->backend, arg, &error)))
        || nic_list(a->nb, &a->devs, &a->ndev, &error) < 0)
        return cmd_fail(a, CMD_FAILED, "%s", error.text);
    return CMD_DONE;
}

int cmd_broker_failure(struct cmd_ctx *a,
                       const char *what,
                       int status,
                       vnib_error_t *error)
{
    a->status = status;
    if (status < 0)
        return cmd_fail(a,
                        CMD_UNREACHABLE,
                        "%s: broker unreachable: %s",
                        what,
                        error->text);
    return cmd_fail(a, CMD_FAILED, "%s: refused: %s", what, error->text);
}

int cmd_job_from(json_t *res, struct services_job *job, long floor)
{
    json_t *vnis = json_object_get(res, "vnis");
    const char *tcs = json_string_value(json_object_get(res, "tcs_mask"));
    json_t *uid = json_object_get(res, "uid");
    size_t i;
    json_t *v;

    memset(job, 0, sizeof(*job));
    /* (uid_t)-1 means "no change" to chown() and friends: refused. */
    if (!json_is_integer(uid) || json_integer_value(uid) < 0
        || json_integer_value(uid) > 4294967294LL || !json_is_array(vnis)
        || json_array_size(vnis) > VNIB_SERVICE_VNIS_MAX)
        return -1;
    job->uid = (uid_t)json_integer_value(uid);
    json_array_foreach (vnis, i, v) {
        json_int_t n = json_integer_value(v);
        if (!json_is_integer(v) || n < 2 || n > 65535 || n == 10)
            return -1;
        job->vnis[job->nvnis++] = (uint16_t)n;
    }
    job->tcs_mask = 0xa;
    if (tcs && tclass_mask_parse(tcs, &job->tcs_mask) < 0)
        return -1;
    job->floor_percent = floor;
    return 0;
}

json_t *cmd_services_list(const struct nic_info *devs, const int *ids, int ndev)
{
    json_t *a = json_array();
    for (int d = 0; a && d < ndev; d++)
        if (ids[d] >= 0)
            json_array_append_new(
                a,
                json_pack(
                    "{s:s, s:i}", "device", devs[d].name, "svc_id", ids[d]));
    return a;
}

json_t *cmd_report_services(json_t *list)
{
    json_t *a = json_array();
    size_t i;
    json_t *s;
    json_array_foreach (list, i, s)
        json_array_append_new(a,
                              json_pack("{s:O, s:O}",
                                        "device",
                                        json_object_get(s, "device"),
                                        "svc_id",
                                        json_object_get(s, "svc_id")));
    return a;
}

void cmd_print_json(struct cmd_ctx *a, json_t *o)
{
    if (!o)
        return;
    json_dumpf(o, a->out, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputc('\n', a->out);
    json_decref(o);
}

void cmd_print_result(struct cmd_ctx *a, json_t *o)
{
    if (o
        && (json_object_set(o, "warnings", a->warnings) < 0
            || json_object_set_new(o, "dry_run", json_boolean(a->dry_run))
                   < 0)) {
        json_decref(o);
        return;
    }
    cmd_print_json(a, o);
}

void cmd_who(const struct cmd_opts *o, char *buf, size_t size)
{
    snprintf(buf,
             size,
             "%s%s%s",
             o->job,
             o->step ? " step " : "",
             o->step ? o->step : "");
}

json_t *cmd_service_vnis(json_t *res)
{
    json_t *vnis = json_object_get(res, "vnis");
    json_t *job = json_object_get(res, "job_vnis");
    json_t *all;

    if (!json_is_array(vnis)
        || (json_object_get(res, "step_id") && job && !json_is_array(job)))
        return NULL;
    if (!(all = json_copy(vnis)))
        return NULL;
    if (json_object_get(res, "step_id") && job
        && json_array_extend(all, job) < 0) {
        json_decref(all);
        return NULL;
    }
    return all;
}

int cmd_step_view(json_t **resp, const char *step_id, vnib_error_t *errp)
{
    json_t *copy, *vnis;

    /* A copy: the reply may be shared. */
    if (!(copy = json_deep_copy(*resp))
        || (!json_object_get(copy, "step_id")
            && json_object_set_new(copy, "step_id", json_string(step_id)) < 0)
        || (json_object_get(copy, "vnis")
            && json_object_set(copy, "step_vnis", json_object_get(copy, "vnis"))
                   < 0)) {
        json_decref(copy);
        json_decref(*resp);
        *resp = NULL;
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    vnis = cmd_service_vnis(copy);
    if (vnis)
        json_object_set_new(copy, "vnis", vnis);
    else
        json_object_del(copy, "vnis");
    json_decref(*resp);
    *resp = copy;
    return 0;
}

int cmd_fetch(struct cmd_ctx *a,
              const char *job_id,
              const char *step_id,
              long deadline_ms,
              json_t **replyp,
              vnib_error_t *errp)
{
    char path[1024];
    int status;

    *replyp = NULL;
    if (res_path(job_id, step_id, path, sizeof(path), errp) < 0)
        return -1;
    status = a->broker.get(a->broker.arg, path, deadline_ms, replyp, errp);
    if (status != 200 || !step_id)
        return status;
    /* A step's services hold its VNIs, then the job's: from here on
     * "vnis" says so; the step's own stay as "step_vnis". */
    return cmd_step_view(replyp, step_id, errp) < 0 ? -1 : status;
}

int cmd_report(struct cmd_ctx *a, struct vnib_report r, vnib_error_t *errp)
{
    r.node = a->node;
    return a->broker.report(a->broker.arg, &r, a->cfg->fetch_timeout_ms, errp);
}
