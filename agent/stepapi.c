/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The switch plugin's per-step calls (stepapi.h): a context like
 * vnib-agent's main() makes, then cmd_prolog or cmd_epilog with --step,
 * and the outcome turned into errno and a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/agentcfg.h"
#include "agent/broker.h"
#include "agent/commands.h"
#include "agent/jobenv.h"
#include "agent/jobstate.h"
#include "agent/stepapi.h"

const char *vnib_step_env_name(int i)
{
    return jobenv_name(i);
}

void vnib_step_env_free(char **env)
{
    for (char **p = env; p && *p; p++)
        free(*p);
    free(env);
}

/* The environment as "NAME=value" strings, NULL-terminated. */
static char **env_array(const struct jobenv *env)
{
    char **out = calloc(JOBENV_COUNT + 1, sizeof(*out));
    int n = 0;

    for (int i = 0; out && i < JOBENV_COUNT; i++) {
        if (!env->value[i])
            continue;
        size_t len = strlen(jobenv_name(i)) + strlen(env->value[i]) + 2;
        if (!(out[n] = malloc(len))) {
            vnib_step_env_free(out);
            return NULL;
        }
        snprintf(out[n++], len, "%s=%s", jobenv_name(i), env->value[i]);
    }
    return out;
}

/* -1 with errno and errp from a command's exit status and a->status. */
static int failed(struct cmd_ctx *a, int rc, vnib_error_t *errp)
{
    int err;

    if (rc == CMD_UNREACHABLE)
        err = EHOSTUNREACH;
    else if (rc == CMD_USAGE)
        err = EINVAL;
    else if (a->errnum)
        err = a->errnum;
    else if (a->status == 404)
        err = ENOENT;
    else if (a->status > 0)
        err = EACCES;
    else if (a->status < 0)
        err = EHOSTUNREACH;
    else
        err = EIO;
    errprintf(errp, "%s", a->error.text[0] ? a->error.text : "failed");
    errno = err;
    return -1;
}

/* Run a command of the step (o) on a, printing nothing to stdout: what a
 * command prints for its caller goes to /dev/null unless a has a stream.
 * prolog leaves its environment in env (when not NULL).  Returns 0, or -1
 * with errno and errp (failed).
 */
static int run(struct cmd_ctx *a,
               cmd_fn *fn,
               const struct cmd_opts *o,
               struct jobenv *env,
               vnib_error_t *errp)
{
    char key[JOBSTATE_KEY_MAX];
    FILE *null = NULL;
    int rc;

    if (!o->job || !o->step) {
        errno = EINVAL;
        return errprintf(errp, "a job and a step are needed");
    }
    if (jobstate_key(key, sizeof(key), o->job, o->step, errp) < 0)
        return -1;
    if (!a->out && !(a->out = null = fopen("/dev/null", "we")))
        return errprintf(errp, "/dev/null: %s", strerror(errno));
    if (!a->err)
        a->err = stderr;
    a->status = 0;
    a->errnum = 0;
    a->error.text[0] = '\0';
    a->env_out = env;
    rc = fn(a, o);
    a->env_out = NULL;
    if (null) {
        fclose(null);
        a->out = NULL;
    }
    return rc == CMD_DONE ? 0 : failed(a, rc, errp);
}

int vnib_step_setup_opts(struct cmd_ctx *a,
                         const struct cmd_opts *o,
                         char ***envp,
                         vnib_error_t *errp)
{
    struct jobenv env = {{NULL}};
    int rc = -1;

    *envp = NULL;
    if (run(a, cmd_prolog, o, &env, errp) == 0) {
        if ((*envp = env_array(&env)))
            rc = 0;
        else {
            errno = ENOMEM;
            errprintf(errp, "out of memory");
        }
    }
    jobenv_clear(&env);
    return rc;
}

int vnib_step_teardown_opts(struct cmd_ctx *a,
                            const struct cmd_opts *o,
                            vnib_error_t *errp)
{
    return run(a, cmd_epilog, o, NULL, errp);
}

/* A context as vnib-agent's main() makes one. */
static int ctx_open(struct cmd_ctx *a, const char *config, vnib_error_t *errp)
{
    memset(a, 0, sizeof(*a));
    a->err = stderr;
    a->open_broker = broker_open; /* linked in: no libcurl to spare */
    if (!(a->cfg = agentcfg_load(
              config ? config : AGENTCFG_DEFAULT_PATH, config != NULL, errp))) {
        errno = EINVAL;
        return -1;
    }
    if (!(a->warnings = json_array())) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return 0;
}

/* Finish a context, keeping errno, and return rc. */
static int ctx_close(struct cmd_ctx *a, int rc)
{
    int saved = errno;
    cmd_ctx_fini(a);
    errno = saved;
    return rc;
}

int vnib_step_setup(const char *agent_config,
                    const char *job,
                    const char *step,
                    long uid,
                    long ncores,
                    const struct limits_want *limits,
                    char ***envp,
                    vnib_error_t *errp)
{
    struct cmd_opts o = {.job = job,
                         .step = step,
                         .uid = uid >= 0 ? uid : -1,
                         .ncores = ncores > 0 ? ncores : 0,
                         .retry_ms = -1,
                         .format = "export",
                         .nics = -1,
                         .limits = limits};
    struct cmd_ctx a;

    *envp = NULL;
    if (uid > 4294967294L) {
        errno = EINVAL;
        return errprintf(errp, "uid %ld is not a uid", uid);
    }
    if (ctx_open(&a, agent_config, errp) < 0)
        return ctx_close(&a, -1);
    return ctx_close(&a, vnib_step_setup_opts(&a, &o, envp, errp));
}

int vnib_step_setup_lease(const char *agent_config,
                          const char *job,
                          const char *step,
                          long uid,
                          long ncores,
                          const struct limits_want *limits,
                          const char *lease,
                          char ***envp,
                          vnib_error_t *errp)
{
    struct cmd_opts o = {.job = job,
                         .step = step,
                         .uid = uid,
                         .ncores = ncores > 0 ? ncores : 0,
                         .retry_ms = -1,
                         .format = "export",
                         .lease = lease,
                         .nics = -1,
                         .limits = limits};
    struct cmd_ctx a;

    *envp = NULL;
    if (uid < 0 || uid > 4294967294L) {
        errno = EINVAL;
        return errprintf(errp, "uid %ld is not a uid", uid);
    }
    if (!lease) {
        errno = EINVAL;
        return errprintf(errp, "no lease");
    }
    if (ctx_open(&a, agent_config, errp) < 0)
        return ctx_close(&a, -1);
    return ctx_close(&a, vnib_step_setup_opts(&a, &o, envp, errp));
}

int vnib_step_teardown(const char *agent_config,
                       const char *job,
                       const char *step,
                       long retry_busy_ms,
                       vnib_error_t *errp)
{
    struct cmd_opts o = {.job = job,
                         .step = step,
                         .uid = -1,
                         .retry_ms = retry_busy_ms >= 0 ? retry_busy_ms : -1,
                         .format = "export",
                         .nics = -1};
    struct cmd_ctx a;

    if (ctx_open(&a, agent_config, errp) < 0)
        return ctx_close(&a, -1);
    return ctx_close(&a, vnib_step_teardown_opts(&a, &o, errp));
}
