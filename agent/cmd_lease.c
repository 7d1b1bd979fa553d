/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's start from a lease: `vnib-agent prolog --lease` and the switch
 * plugin's vnib_step_setup_lease (see commands.h, docs/node-path.md).
 *
 * The lease came with the scheduler's launch, through hands the job's
 * owner may control, so nothing in it is taken before it is verified
 * with the broker's public keys (lease.public_keys), and before it is
 * found to name the job, the step, the owner and the node being set up:
 * a lease of another job, another step or another node is refused, as is
 * an expired one or a reservation that was not active when it was signed.
 * Then the payload is the reservation the prolog works from, as if the
 * broker had answered a fetch, and no request goes to the broker, except
 * for a job with hardware collectives: their session token never travels
 * in a lease, so the node asks the broker for those variables, and starts
 * the job without them when it cannot get them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vnib/cfgtable.h"
#include "vnib/hostlist.h"
#include "vnib/hostset.h"
#include "vnib/lease.h"
#include "agent/commands.h"
#include "agent/jobstate.h"

/* The lease's text, from o->lease or, for --lease's argument, stdin ("-")
 * or a file ("@FILE"); trailing white space dropped.  NULL after cmd_fail
 * (*rcp is the exit status).
 */
static char *lease_text(struct cmd_ctx *a, const struct cmd_opts *o, int *rcp)
{
    const char *arg = o->lease;
    FILE *f = NULL;
    char *text = NULL;
    size_t len = 0;

    if (!o->lease_arg || (strcmp(arg, "-") != 0 && arg[0] != '@'))
        text = strdup(arg);
    else {
        const char *path = arg[0] == '@' ? arg + 1 : NULL;
        f = path ? fopen(path, "re") : stdin;
        if (!f) {
            *rcp =
                cmd_fail(a, CMD_USAGE, "--lease %s: %s", arg, strerror(errno));
            return NULL;
        }
        /* One byte past the longest lease: lease_verify says it is too
         * long. */
        if ((text = malloc(LEASE_MAX_LEN + 2))) {
            len = fread(text, 1, LEASE_MAX_LEN + 1, f);
            text[len] = '\0';
            if (ferror(f)) {
                int e = errno;
                free(text);
                if (path)
                    fclose(f);
                *rcp =
                    cmd_fail(a, CMD_USAGE, "--lease %s: %s", arg, strerror(e));
                return NULL;
            }
        }
        if (path)
            fclose(f);
    }
    if (!text) {
        *rcp = cmd_fail(a, CMD_FAILED, "out of memory");
        return NULL;
    }
    len = strlen(text);
    while (len > 0 && strchr(" \t\r\n", text[len - 1]))
        text[--len] = '\0';
    return text;
}

/* The keyring of lease.public_keys, read now.  NULL after cmd_fail (exit
 * 2: the node's configuration is wrong). */
static struct lease_keyring *load_keys(struct cmd_ctx *a)
{
    vnib_error_t error = {0};
    struct lease_keyring *ring = lease_keyring_create();
    char *list =
        a->cfg->lease_public_keys ? strdup(a->cfg->lease_public_keys) : NULL;
    char *save = NULL;

    if (!ring || !list) {
        cmd_fail(a, CMD_FAILED, "out of memory");
        goto fail;
    }
    for (char *p = strtok_r(list, CFGTABLE_LIST_SEP, &save); p;
         p = strtok_r(NULL, CFGTABLE_LIST_SEP, &save)) {
        if (lease_keyring_add_file(ring, p, &error) < 0) {
            cmd_fail(a, CMD_USAGE, "lease.public_keys: %s", error.text);
            goto fail;
        }
    }
    if (lease_keyring_count(ring) == 0) {
        cmd_fail(a,
                 CMD_USAGE,
                 "lease.public_keys is empty: no key to verify a lease with");
        goto fail;
    }
    free(list);
    return ring;
fail:
    free(list);
    lease_keyring_destroy(ring);
    return NULL;
}

/* Refuse the lease: exit 1, with errnum for the in-process callers. */
static int refuse(struct cmd_ctx *a,
                  int errnum,
                  const char *who,
                  const char *why)
{
    a->errnum = errnum;
    return cmd_fail(a,
                    CMD_FAILED,
                    "job %s: lease refused: %s; no services created",
                    who,
                    why);
}

/* Whether the verified payload p is for what is being set up.  Returns
 * CMD_DONE or refuse()'s status. */
static int check_payload(struct cmd_ctx *a,
                         const struct cmd_opts *o,
                         const char *who,
                         json_t *p)
{
    json_t *id = json_object_get(p, "id");
    json_t *step = json_object_get(p, "step_id");
    json_t *uid = json_object_get(p, "uid");
    const char *job = json_string_value(json_object_get(p, "job_id"));
    const char *nodes = json_string_value(json_object_get(p, "nodes"));
    const char *state = json_string_value(json_object_get(p, "state"));
    vnib_error_t error = {0};
    struct hostset *set = NULL;
    char why[512];
    int rc;

    if (!json_is_integer(id) || json_integer_value(id) <= 0 || !job
        || !json_is_integer(uid) || !nodes || !state
        || !(json_is_null(step) || !step || json_is_string(step)))
        return refuse(a,
                      EINVAL,
                      who,
                      "its payload lacks the reservation's id, job_id, "
                      "uid, nodes or state");
    if (strcmp(job, o->job) != 0) {
        snprintf(why, sizeof(why), "it is for job %s, not %s", job, o->job);
        return refuse(a, EACCES, who, why);
    }
    const char *sid = json_string_value(step);
    if (o->step && !sid) {
        snprintf(
            why, sizeof(why), "it is for the job, not for step %s", o->step);
        return refuse(a, EACCES, who, why);
    }
    if (sid && (!o->step || strcmp(sid, o->step) != 0)) {
        snprintf(why,
                 sizeof(why),
                 "it is for step %s, not for %s%s",
                 sid,
                 o->step ? "step " : "the job",
                 o->step ? o->step : "");
        return refuse(a, EACCES, who, why);
    }
    if (o->uid < 0 || json_integer_value(uid) != (json_int_t)o->uid) {
        snprintf(why,
                 sizeof(why),
                 "its owner is uid %lld, not --uid %ld",
                 (long long)json_integer_value(uid),
                 o->uid);
        return refuse(a, EACCES, who, why);
    }
    if (!(set = hostset_decode(nodes, HOSTLIST_DEFAULT_MAX_NAMES, &error))) {
        snprintf(why, sizeof(why), "its node list: %s", error.text);
        return refuse(a, EINVAL, who, why);
    }
    if (!hostset_contains(set, a->node)) {
        snprintf(why,
                 sizeof(why),
                 "this node, %s, is not in its node list",
                 a->node);
        rc = refuse(a, EACCES, who, why);
    } else if (strcmp(state, "active") != 0) {
        snprintf(why,
                 sizeof(why),
                 "its reservation %lld is %s, not active",
                 (long long)json_integer_value(id),
                 state);
        rc = refuse(a, EACCES, who, why);
    } else
        rc = CMD_DONE;
    hostset_destroy(set);
    return rc;
}

/* The variables of the hardware collectives, which a lease never holds
 * for a job that has them (they come with the session token). */
static bool hwcoll_name(const char *name)
{
    return !strncmp(name, "FI_CXI_COLL_", 12)
           || !strncmp(name, "FI_CXI_HWCOLL_", 14);
}

/* Put the hardware collectives' variables from the broker's reservation
 * of the job (or step) into res's environment.  When the broker cannot
 * give them the job starts without them (libfabric then uses software
 * collectives), with a warning. */
static void fetch_hwcoll(struct cmd_ctx *a,
                         const struct cmd_opts *o,
                         const char *who,
                         json_t *res)
{
    vnib_error_t error = {0};
    json_t *env = json_object_get(res, "environment");
    json_t *got = NULL, *v;
    const char *k;
    void *tmp;
    int status = -1;

    if (!json_is_object(env)) {
        env = json_object();
        if (!env || json_object_set_new(res, "environment", env) < 0) {
            cmd_warn(a, "job %s: out of memory", who);
            return;
        }
    }
    /* Only what the broker says now, never what the lease carried. */
    json_object_foreach_safe(env, tmp, k, v)
    {
        if (hwcoll_name(k))
            json_object_del(env, k);
    }
    if (cmd_connect(a) != CMD_DONE)
        snprintf(error.text, sizeof(error.text), "%s", a->error.text);
    else
        status = cmd_fetch(
            a, o->job, o->step, a->cfg->fetch_timeout_ms, &got, &error);
    if (status == 200
        && !json_equal(json_object_get(got, "id"),
                       json_object_get(res, "id"))) {
        snprintf(error.text,
                 sizeof(error.text),
                 "the broker's reservation is %lld, the lease's %lld",
                 (long long)json_integer_value(json_object_get(got, "id")),
                 (long long)json_integer_value(json_object_get(res, "id")));
        status = 0;
    }
    if (status == 200) {
        json_object_foreach (json_object_get(got, "environment"), k, v) {
            if (hwcoll_name(k) && json_is_string(v)
                && json_object_set(env, k, v) < 0) {
                snprintf(error.text, sizeof(error.text), "out of memory");
                status = 0;
            }
        }
    }
    if (status != 200) {
        json_object_foreach_safe(env, tmp, k, v)
        {
            if (hwcoll_name(k))
                json_object_del(env, k);
        }
        cmd_warn(a,
                 "job %s: the hardware collectives' variables could not be "
                 "had from the broker (%s); the job starts WITHOUT hardware "
                 "collectives",
                 who,
                 error.text);
    }
    json_decref(got);
}

int cmd_lease_reservation(struct cmd_ctx *a,
                          const struct cmd_opts *o,
                          json_t **resp)
{
    vnib_error_t error = {0};
    struct lease_keyring *ring = NULL;
    json_t *p = NULL;
    char *text = NULL;
    char who[CMD_WHO_MAX];
    int rc = CMD_FAILED;

    *resp = NULL;
    cmd_who(o, who, sizeof(who));
    if (o->uid < 0) {
        a->errnum = EINVAL;
        return cmd_fail(a, CMD_USAGE, "prolog: --lease needs --uid");
    }
    if ((rc = cmd_identify(a)) != CMD_DONE)
        return rc;
    if (!(text = lease_text(a, o, &rc)))
        return rc;
    if (!(ring = load_keys(a))) {
        rc = CMD_USAGE;
        goto done;
    }
    if (lease_verify(
            ring, text, time(NULL), a->cfg->lease_max_skew_s, &p, &error)
        < 0) {
        /* "lease: expired 12 s ago" */
        const char *why = strncmp(error.text, "lease: ", 7) == 0
                              ? error.text + 7
                              : error.text;
        rc = refuse(a, errno == EINVAL ? EINVAL : EACCES, who, why);
        goto done;
    }
    if ((rc = check_payload(a, o, who, p)) != CMD_DONE)
        goto done;
    /* The job (or step) ended here already: a replay of its lease. */
    if (jobstate_ended_check(
            a->cfg->spool_dir,
            (long long)json_integer_value(json_object_get(p, "id")),
            (long long)time(NULL),
            &error)
        != 0) {
        char why[128];
        snprintf(why,
                 sizeof(why),
                 "its reservation %lld already ended on this node",
                 (long long)json_integer_value(json_object_get(p, "id")));
        rc = refuse(a, EACCES, who, why);
        goto done;
    }
    if (o->step && cmd_step_view(&p, o->step, &error) < 0) {
        rc = cmd_fail(a, CMD_FAILED, "%s", error.text);
        goto done;
    }
    if (json_is_true(json_object_get(p, "hwcoll_fetch")))
        fetch_hwcoll(a, o, who, p);
    *resp = p;
    p = NULL;
    rc = CMD_DONE;
done:
    json_decref(p);
    lease_keyring_destroy(ring);
    free(text);
    return rc;
}
