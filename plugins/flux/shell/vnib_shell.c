/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib_shell: the Flux job shell plugin of vnibroker.
 *
 * flux-shell runs one shell per node of a job; this plugin, loaded into
 * every one by a line of the site's shell initrc, gives the job's tasks
 * on that node their Slingshot environment, the SLINGSHOT_* and FI_CXI_*
 * variables that let them use the VNIs (and the hardware collectives)
 * vnibroker reserved for the job:
 *
 *   plugin.load { file = "/usr/lib/vnibroker/flux/vnib-shell.so",
 *                 conf = { state_dir = "/run/vnibroker" } }
 *
 * At shell.init it first unsets the reserved names (envfile.h) in the
 * job's environment, so values from the submitting shell never reach a
 * task, whatever happens next.  Then, one mode per job:
 *
 *  - off: the job was submitted with `-o cray-slingshot=off`; nothing more
 *    is set.
 *  - system (the system instance, broker attribute instance-level 0): the
 *    node agent's prolog (`vnib-agent prolog --job ID`, ID the decimal job
 *    id) left STATE_DIR/jobs/ID.env for the job's user.  The shell, which
 *    runs as that user, reads it with lib/envfile.c's rules and applies
 *    each SLINGSHOT_* and FI_CXI_* line; others are skipped with a
 *    warning.  STATE_DIR is conf's state_dir, default /run/vnibroker,
 *    with "%n" standing for the broker attribute hostname (several test
 *    brokers on one host, each with its own agent).  When
 *    FI_CXI_COLL_JOB_ID ends up set, FI_CXI_COLL_JOB_STEP_ID is the
 *    decimal job id.
 *  - inherit (a sub-instance: `flux batch`, `flux alloc`; or an instance
 *    at level 0 with no file for the job, such as Flux started inside a
 *    Slurm job, whose brokers hold the Slurm job's values): the job runs
 *    inside an enclosing job's reservation.  Each node's broker of the
 *    sub-instance was started by that job's shell on the node, so its
 *    environment holds the node's values: the plugin asks its local
 *    broker for them (the broker.getenv RPC, sent at shell.init and read
 *    at shell.post-init, so it overlaps the shells' init barrier) and
 *    sets those present.  FI_CXI_COLL_JOB_STEP_ID becomes the enclosing
 *    one, "/", this job's decimal id, unique within the reservation.  A
 *    broker that refuses the RPC (EPERM: it is not the user's; ENOSYS)
 *    means nothing to inherit.
 *  - none: no file (the node holds no reservation for the job) and
 *    nothing to inherit; the reserved names stay unset.
 *
 * Like the SPANK plugin it fails closed: a jobs directory or file that is
 * not trustworthy or is malformed, or a broker.getenv that fails for
 * another reason, ends the job (shell_die: the reason is logged and
 * becomes the job's exec exception) before any task runs.  A job that ran
 * without its isolation, or with half its environment, would be worse.
 *
 * shell_debug lines (`-o verbose`) name the mode that ran.  No value is
 * ever logged: FI_CXI_COLL_MCAST_TOKEN is a secret.
 */
#define FLUX_SHELL_PLUGIN_NAME "vnib"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <flux/core.h>
#include <flux/shell.h>
#include <jansson.h>

#include "vnib/envfile.h"

#define DEFAULT_STATE_DIR "/run/vnibroker"
#define JOB_ID_LEN 24 /* a uint64_t in decimal */

/* The entry point flux-shell looks up when it loads the plugin (no flux
 * header declares it); the one symbol the plugin exports.
 */
int flux_plugin_init(flux_plugin_t *p);

/* The plugin's state, one per shell (job and node). */
struct vnib_shell {
    char state_dir[ENVFILE_DIR_MAX + 1]; /* conf state_dir, with its "%n" */
    char job_id[JOB_ID_LEN];             /* the job's decimal id */
    flux_future_t *getenv_f; /* inherit: broker.getenv until post-init */
};

static void vnib_shell_destroy(void *arg)
{
    struct vnib_shell *ctx = arg;

    if (ctx) {
        int saved_errno = errno;
        flux_future_destroy(ctx->getenv_f);
        free(ctx);
        errno = saved_errno;
    }
}

/* unset: remove name from the job's environment (and its tasks'); a name
 * that was not set is no error.  Returns 0 or -1 after logging.
 */
static int unset(flux_shell_t *shell, const char *name)
{
    if (flux_shell_unsetenv(shell, name) < 0 && errno != ENOENT) {
        shell_log_errno("cannot unset %s", name);
        return -1;
    }
    return 0;
}

static int set(flux_shell_t *shell, const char *name, const char *value)
{
    if (flux_shell_setenvf(shell, 1, name, "%s", value) < 0) {
        shell_log_errno("cannot set %s", name);
        return -1;
    }
    return 0;
}

/* mode_off: true when the job asked for no Slingshot environment
 * (attributes.system.shell.options.cray-slingshot is "off").  Other
 * values are the jobtap plugin's to check.
 */
static bool mode_off(flux_shell_t *shell)
{
    json_t *o = NULL;

    return flux_shell_getopt_unpack(shell, "cray-slingshot", "o", &o) > 0
           && json_is_string(o) && strcmp(json_string_value(o), "off") == 0;
}

/* instance_level: the broker attribute instance-level (0: the system
 * instance, or a test instance of its own).  Returns it, or -1 after
 * logging.
 */
static int instance_level(flux_t *h)
{
    const char *s = flux_attr_get(h, "instance-level");
    char *end = NULL;
    long level;

    if (!s) {
        shell_log_errno("cannot get the broker attribute instance-level");
        return -1;
    }
    errno = 0;
    level = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || level < 0 || level > 1000) {
        shell_log_error("the broker attribute instance-level is '%s'", s);
        return -1;
    }
    return (int)level;
}

/* apply_file: set or unset each honoured line of env (read from path),
 * then the job's FI_CXI_COLL_JOB_STEP_ID when FI_CXI_COLL_JOB_ID ends up
 * set.  Returns the number of lines applied, or -1 after logging.
 */
static int apply_file(flux_shell_t *shell,
                      const struct vnib_shell *ctx,
                      const struct envfile *env,
                      const char *path)
{
    bool coll_job_id = false;
    int applied = 0;

    for (size_t i = 0; i < env->count; i++) {
        const struct envfile_line *l = &env->lines[i];
        if (!envfile_honoured_name(l->name)) {
            shell_warn(
                "ignoring %s from %s: only SLINGSHOT_* and FI_CXI_* "
                "are set",
                l->name,
                path);
            continue;
        }
        if (l->value ? set(shell, l->name, l->value) < 0
                     : unset(shell, l->name) < 0)
            return -1;
        if (strcmp(l->name, "FI_CXI_COLL_JOB_ID") == 0)
            coll_job_id = l->value != NULL;
        applied++;
    }
    if (coll_job_id && set(shell, "FI_CXI_COLL_JOB_STEP_ID", ctx->job_id) < 0)
        return -1;
    return applied;
}

/* system_mode: read this node's STATE_DIR/jobs/ID.env and apply it.
 * Returns 0, 1 when there is no file (the caller tries inherit mode), or
 * dies (the job fails) when the file is refused.
 */
static int system_mode(flux_shell_t *shell, const struct vnib_shell *ctx)
{
    flux_t *h = flux_shell_get_flux(shell);
    const char *node = NULL;
    char dir[ENVFILE_DIR_MAX + 1];
    char path[sizeof(dir) + JOB_ID_LEN + 16];
    struct envfile env = {0};
    vnib_error_t e = {0};
    int applied;

    if (strstr(ctx->state_dir, "%n")
        && !(node = flux_attr_get(h, "hostname"))) {
        shell_die_errno(1, "state_dir has %%n, but the broker has no hostname");
        return -1;
    }
    if (envfile_expand_dir(ctx->state_dir, node, dir, sizeof(dir), &e) < 0) {
        shell_die(1, "%s", e.text);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/jobs/%s.env", dir, ctx->job_id);

    switch (envfile_read(dir, ctx->job_id, getuid(), &env, &e)) {
        case 0:
            shell_debug("no %s (no reservation on this node)", path);
            return 1;
        case 1:
            break;
        default:
            shell_die(1, "job %s: %s", ctx->job_id, e.text);
            return -1;
    }
    if (envfile_parse(&env, &e) < 0) {
        envfile_cleanup(&env);
        shell_die(1, "job %s: %s: %s", ctx->job_id, path, e.text);
        return -1;
    }
    applied = apply_file(shell, ctx, &env, path);
    envfile_cleanup(&env);
    if (applied < 0)
        return -1;
    shell_debug("mode system: %d variables from %s", applied, path);
    return 0;
}

/* send_getenv: ask the local broker for its values of the reserved names.
 * Returns the future, or NULL after logging.
 */
static flux_future_t *send_getenv(flux_t *h)
{
    json_t *names = json_array();
    flux_future_t *f = NULL;

    if (!names)
        goto nomem;
    for (const char *const *r = envfile_reserved_names; *r; r++)
        if (json_array_append_new(names, json_string(*r)) < 0)
            goto nomem;
    /* FLUX_NODEID_ANY: the broker this shell is connected to answers. */
    if (!(f = flux_rpc_pack(
              h, "broker.getenv", FLUX_NODEID_ANY, 0, "{s:O}", "names", names)))
        shell_log_errno("cannot send broker.getenv");
    json_decref(names);
    return f;
nomem:
    json_decref(names);
    errno = ENOMEM;
    shell_log_errno("cannot send broker.getenv");
    return NULL;
}

/* inherit_mode: set the reserved names the local broker has (its reply to
 * send_getenv), then this job's FI_CXI_COLL_JOB_STEP_ID under the
 * enclosing one.  A refused RPC sets nothing.  Returns 0, or dies when
 * the RPC fails otherwise.
 */
static int inherit_mode(flux_shell_t *shell, struct vnib_shell *ctx)
{
    json_t *env = NULL;
    const char *coll_job_id;
    const char *outer_step;
    int applied = 0;

    if (flux_rpc_get_unpack(ctx->getenv_f, "{s:o}", "env", &env) < 0) {
        if (errno == EPERM || errno == ENOSYS) {
            shell_debug(
                "mode none: the local broker refused broker.getenv "
                "(%s)",
                future_strerror(ctx->getenv_f, errno));
            return 0;
        }
        shell_die(
            1, "broker.getenv: %s", future_strerror(ctx->getenv_f, errno));
        return -1;
    }
    for (const char *const *r = envfile_reserved_names; *r; r++) {
        const char *value = json_string_value(json_object_get(env, *r));
        if (!value || strcmp(*r, "FI_CXI_COLL_JOB_STEP_ID") == 0)
            continue;
        if (set(shell, *r, value) < 0)
            return -1;
        applied++;
    }
    coll_job_id = json_string_value(json_object_get(env, "FI_CXI_COLL_JOB_ID"));
    outer_step =
        json_string_value(json_object_get(env, "FI_CXI_COLL_JOB_STEP_ID"));
    if (coll_job_id) {
        if (flux_shell_setenvf(shell,
                               1,
                               "FI_CXI_COLL_JOB_STEP_ID",
                               "%s%s%s",
                               outer_step ? outer_step : "",
                               outer_step ? "/" : "",
                               ctx->job_id)
            < 0) {
            shell_log_errno("cannot set FI_CXI_COLL_JOB_STEP_ID");
            return -1;
        }
        applied++;
    }
    if (applied == 0)
        shell_debug("mode none: the local broker has none of the names");
    else
        shell_debug("mode inherit: %d variables from the local broker",
                    applied);
    return 0;
}

static int shell_init_cb(flux_plugin_t *p,
                         const char *topic,
                         flux_plugin_arg_t *args,
                         void *arg)
{
    struct vnib_shell *ctx = arg;
    flux_shell_t *shell = flux_plugin_get_shell(p);
    flux_t *h = flux_shell_get_flux(shell);
    json_int_t id;
    int level;
    int rc;

    (void)topic;
    (void)args;
    for (const char *const *r = envfile_reserved_names; *r; r++)
        if (unset(shell, *r) < 0)
            return -1;
    if (mode_off(shell)) {
        shell_debug("mode off: cray-slingshot=off, nothing set");
        return 0;
    }
    if (flux_shell_info_unpack(shell, "{s:I}", "jobid", &id) < 0) {
        shell_log_errno("cannot get the job id");
        return -1;
    }
    snprintf(ctx->job_id,
             sizeof(ctx->job_id),
             "%" PRIu64,
             (uint64_t)(flux_jobid_t)id);
    if ((level = instance_level(h)) < 0)
        return -1;
    /* An instance at level 0 without a file may still run inside another
     * scheduler's job (Flux started under Slurm), whose values its
     * brokers hold: inherit them.  A system instance's guests are refused
     * broker.getenv (EPERM), and its own broker has none of the names. */
    if (level == 0 && (rc = system_mode(shell, ctx)) != 1)
        return rc;
    if (!(ctx->getenv_f = send_getenv(h)))
        return -1;
    return 0;
}

static int shell_post_init_cb(flux_plugin_t *p,
                              const char *topic,
                              flux_plugin_arg_t *args,
                              void *arg)
{
    struct vnib_shell *ctx = arg;
    int rc;

    (void)topic;
    (void)args;
    if (!ctx->getenv_f)
        return 0;
    rc = inherit_mode(flux_plugin_get_shell(p), ctx);
    /* Done with it while the shell's handle is still open. */
    flux_future_destroy(ctx->getenv_f);
    ctx->getenv_f = NULL;
    return rc;
}

/* read_conf: state_dir from the plugin.load line's conf table, if any
 * (flux-shell hands it over as JSON; an unknown key is an error, so that
 * a misspelt one does not go unnoticed).  Returns 0 or -1 after logging.
 */
static int read_conf(flux_plugin_t *p, struct vnib_shell *ctx)
{
    const char *dir = DEFAULT_STATE_DIR;

    if (flux_plugin_get_conf(p)
        && flux_plugin_conf_unpack(p, "{s?s !}", "state_dir", &dir) < 0) {
        shell_log_error("conf: %s (the one key is state_dir, a string)",
                        flux_plugin_strerror(p));
        return -1;
    }
    if (dir[0] != '/' || strlen(dir) > ENVFILE_DIR_MAX) {
        shell_log_error(
            "conf: state_dir must be an absolute path of at most %d "
            "characters, not '%s'",
            ENVFILE_DIR_MAX,
            dir);
        return -1;
    }
    strcpy(ctx->state_dir, dir);
    return 0;
}

int flux_plugin_init(flux_plugin_t *p)
{
    struct vnib_shell *ctx = calloc(1, sizeof(*ctx));

    if (!ctx) {
        shell_log_errno("out of memory");
        return -1;
    }
    if (flux_plugin_aux_set(p, "vnib::shell", ctx, vnib_shell_destroy) < 0) {
        shell_log_errno("flux_plugin_aux_set");
        vnib_shell_destroy(ctx);
        return -1;
    }
    if (flux_plugin_set_name(p, FLUX_SHELL_PLUGIN_NAME) < 0
        || read_conf(p, ctx) < 0
        || flux_plugin_add_handler(p, "shell.init", shell_init_cb, ctx) < 0
        || flux_plugin_add_handler(
               p, "shell.post-init", shell_post_init_cb, ctx)
               < 0)
        return -1;
    return 0;
}
