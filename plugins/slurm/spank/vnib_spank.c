/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib_spank: the Slurm SPANK plugin of vnibroker.
 *
 * It has two jobs, one on each side of Slurm:
 *
 *  - In srun, sbatch and salloc (local and allocator contexts) it adds the
 *    options --network-vnis=0..4 and --hwcoll=on|off|auto, checks them,
 *    and hands them to the controller through the job control environment
 *    (spank_job_control_setenv), where PrologSlurmctld and
 *    EpilogSlurmctld see them as SPANK_VNIB_VNIS and SPANK_VNIB_HWCOLL.
 *    An option the user did not give is not set: the controller's hook
 *    applies the site default.
 *
 *  - In slurmstepd (remote context), in slurm_spank_task_init_privileged,
 *    for every task of every step including the batch script, it copies
 *    the job's Slingshot environment into the task.  The node Prolog
 *    (`vnib-agent prolog`) writes STATE_DIR/jobs/JOBID.env in Slurm's
 *    TaskProlog format, one "export NAME=value" or "unset NAME" per line.
 *    STATE_DIR is /run/vnibroker unless plugstack.conf passes
 *    state_dir=PATH; "%n" in PATH stands for the node's name (several
 *    slurmd on one host, each with its own agent).  Before applying the
 *    file the plugin unsets the reserved names (envfile_reserved_names),
 *    so values from the submitting shell never leak into a job, with or
 *    without a file.  Only names starting SLINGSHOT_ or FI_CXI_ are
 *    honoured; other names are logged and skipped.  When
 *    FI_CXI_COLL_JOB_ID ends up set, FI_CXI_COLL_JOB_STEP_ID is set to the
 *    step as Slurm names it: the step number, or "batch", "extern" or
 *    "interactive"; the plugin's value wins over one in the file, which
 *    is per job.
 *
 * The plugin fails closed.  The task is refused (Slurm ends it with exit
 * status 1 before it runs) when the jobs directory or the file is not
 * trustworthy (the directory must be root's and writable by no one else;
 * the file must be a regular file, not a symbolic link, owned by root or
 * the job's user, writable by neither group nor others, at most 64 KiB),
 * when the file is malformed (a line that is neither form, a bad name, a
 * control character; or an empty file or a last line without its
 * newline, which is what a truncated file looks like), or when Slurm
 * refuses a change.  A job that silently ran without its reserved
 * isolation, or with half of its environment, would be worse than one
 * that does not start.  A missing jobs directory or file only means that
 * the node holds no reservation for the job: the reserved names are
 * unset and the task runs.  The file is checked whole before anything is
 * applied.
 *
 * The file's rules, its reader and the reserved names are lib/envfile.c's,
 * shared with the Flux shell plugin; this file logs what it refuses, with
 * the job's id first ("vnib: job 12: ...").
 *
 * The option callback (spank_opt_cb_f) receives no handle, so the values
 * the user chose wait in option_values until slurm_spank_init_post_opt;
 * that, the option descriptors Slurm keeps pointers to, and the symbols
 * SPANK_PLUGIN defines are the only globals.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib_spank_slurm.h"

#include "vnib/envfile.h"
#include "vnib/tclass.h"

SPANK_PLUGIN(vnib, 1)

#ifdef VNIB_SPANK_FAILURE_MODE
/* A failing slurm_spank_init fails the job, never drains the node. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

#define DEFAULT_STATE_DIR "/run/vnibroker"
#define STEP_ID_LEN 16 /* "interactive" or a uint32_t */

enum option_id {
    OPT_NETWORK_VNIS = 1,
    OPT_HWCOLL = 2,
};

/* What the user chose, from option_cb to slurm_spank_init_post_opt (in
 * srun, sbatch or salloc; one process, one job).  Empty: not given. */
static struct {
    char vnis[2];   /* "0".."4" */
    char hwcoll[5]; /* "on", "off" or "auto" */
} option_values;

static int option_cb(int val, const char *value, int remote);

/* spank_option_register keeps the pointer, so these live as long as the
 * plugin. */
static struct spank_option network_vnis_option = {
    "network-vnis",
    "N",
    "[vnibroker] number of Slingshot VNIs for the job (0-4)",
    1,
    OPT_NETWORK_VNIS,
    option_cb,
};

static struct spank_option hwcoll_option = {
    "hwcoll",
    "on|off|auto",
    "[vnibroker] Slingshot hardware collectives for the job",
    1,
    OPT_HWCOLL,
    option_cb,
};

static int option_cb(int val, const char *value, int remote)
{
    const char *arg = value ? value : "";

    switch (val) {
        case OPT_NETWORK_VNIS:
            if (strlen(arg) != 1 || arg[0] < '0'
                || arg[0] > '0' + VNIB_SERVICE_VNIS_MAX) {
                slurm_error("vnib: --network-vnis must be 0 to %d, not '%s'",
                            VNIB_SERVICE_VNIS_MAX,
                            arg);
                return -1;
            }
            if (!remote)
                snprintf(
                    option_values.vnis, sizeof(option_values.vnis), "%s", arg);
            return 0;
        case OPT_HWCOLL:
            if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0
                && strcmp(arg, "auto") != 0) {
                slurm_error("vnib: --hwcoll must be on, off or auto, not '%s'",
                            arg);
                return -1;
            }
            if (!remote)
                snprintf(option_values.hwcoll,
                         sizeof(option_values.hwcoll),
                         "%s",
                         arg);
            return 0;
        default:
            slurm_error("vnib: unknown option id %d", val);
            return -1;
    }
}

/* parse_args: the plugin's arguments from plugstack.conf.  Sets
 * *state_dir to a borrowed pointer into av (or the default).  Returns 0,
 * or -1 after logging an unknown or bad argument. */
static int parse_args(int ac, char **av, const char **state_dir)
{
    *state_dir = DEFAULT_STATE_DIR;
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "state_dir=", 10) == 0) {
            const char *dir = av[i] + 10;
            if (dir[0] != '/' || strlen(dir) > ENVFILE_DIR_MAX) {
                slurm_error(
                    "vnib: state_dir must be an absolute path of at "
                    "most %d characters, not '%s'",
                    ENVFILE_DIR_MAX,
                    dir);
                return -1;
            }
            *state_dir = dir;
        } else {
            slurm_error("vnib: unknown plugin argument '%s' in plugstack.conf",
                        av[i]);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    const char *state_dir;

    if (parse_args(ac, av, &state_dir) < 0)
        return -1;
    /* Registered in every context: the remote side must know the options
     * srun forwards, and sbatch and salloc see only registered ones. */
    if (spank_option_register(sp, &network_vnis_option) != ESPANK_SUCCESS
        || spank_option_register(sp, &hwcoll_option) != ESPANK_SUCCESS) {
        slurm_error("vnib: cannot register the plugin's options");
        return -1;
    }
    return 0;
}

/* In srun, sbatch and salloc: pass the options to the controller. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    spank_err_t rc;

    (void)ac;
    (void)av;
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
        return 0;
    if (option_values.vnis[0]) {
        rc = spank_job_control_setenv(sp, "VNIB_VNIS", option_values.vnis, 1);
        if (rc != ESPANK_SUCCESS) {
            slurm_error(
                "vnib: cannot pass --network-vnis to the controller: "
                "%s",
                spank_strerror(rc));
            return -1;
        }
    }
    if (option_values.hwcoll[0]) {
        rc = spank_job_control_setenv(
            sp, "VNIB_HWCOLL", option_values.hwcoll, 1);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("vnib: cannot pass --hwcoll to the controller: %s",
                        spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

/* step_name: the step as Slurm names it ("12", "batch", ...). */
static void step_name(uint32_t step_id, char *buf, size_t size)
{
    switch (step_id) {
        case SLURM_BATCH_SCRIPT:
            snprintf(buf, size, "batch");
            break;
        case SLURM_EXTERN_CONT:
            snprintf(buf, size, "extern");
            break;
        case SLURM_INTERACTIVE_STEP:
            snprintf(buf, size, "interactive");
            break;
        default:
            snprintf(buf, size, "%u", (unsigned)step_id);
            break;
    }
}

static int set_var(spank_t sp, uint32_t job_id, const char *name, const char *v)
{
    spank_err_t rc =
        v ? spank_setenv(sp, name, v, 1) : spank_unsetenv(sp, name);

    if (rc != ESPANK_SUCCESS) {
        slurm_error("vnib: job %u: cannot %s %s: %s",
                    (unsigned)job_id,
                    v ? "set" : "unset",
                    name,
                    spank_strerror(rc));
        return -1;
    }
    return 0;
}

/* node_name: this node's name as the job's node list has it.  slurmstepd
 * knows only the node's index in the step (S_JOB_NODEID), so it is looked
 * up in SLURM_STEP_NODELIST, or SLURM_JOB_NODELIST for the batch step,
 * whose node is the allocation's first.  Returns 0, or -1 after logging. */
static int node_name(spank_t sp, char *out, size_t size)
{
    char list[8192];
    uint32_t nodeid = 0;
    vnib_hostlist hl = NULL;
    char *name = NULL;
    int rc = -1;

    if (spank_get_item(sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS
        || (spank_getenv(sp, "SLURM_STEP_NODELIST", list, sizeof(list))
                != ESPANK_SUCCESS
            && spank_getenv(sp, "SLURM_JOB_NODELIST", list, sizeof(list))
                   != ESPANK_SUCCESS)) {
        slurm_error("vnib: state_dir has %%n, but the node list is unknown");
        return -1;
    }
    if (!(hl = slurm_hostlist_create(list)))
        goto done;
    for (uint32_t i = 0; i <= nodeid; i++) {
        free(name);
        if (!(name = slurm_hostlist_shift(hl)))
            goto done;
    }
    if (strlen(name) < size && !strchr(name, '/')) {
        strcpy(out, name);
        rc = 0;
    }
done:
    if (rc < 0)
        slurm_error("vnib: state_dir has %%n, but node %u of '%s' is unusable",
                    (unsigned)nodeid,
                    list);
    free(name);
    if (hl)
        slurm_hostlist_destroy(hl);
    return rc;
}

/* expand_dir: state_dir with each "%n" replaced by the node's name.
 * Returns 0, or -1 after logging. */
static int expand_dir(spank_t sp, const char *in, char *out, size_t size)
{
    char node[256] = "";
    vnib_error_t e = {0};

    if (strstr(in, "%n") && node_name(sp, node, sizeof(node)) < 0)
        return -1;
    if (envfile_expand_dir(in, node, out, size, &e) < 0) {
        slurm_error("vnib: %s", e.text);
        return -1;
    }
    return 0;
}

/* load_env: read and parse the job's env file into env.  Returns 1 with
 * its lines, 0 without a file, or -1 after logging why it is refused. */
static int load_env(const char *dir,
                    uint32_t job_id,
                    uid_t job_uid,
                    struct envfile *env)
{
    char key[16];
    vnib_error_t e = {0};
    int rc;

    snprintf(key, sizeof(key), "%u", (unsigned)job_id);
    if ((rc = envfile_read(dir, key, job_uid, env, &e)) == 1
        && envfile_parse(env, &e) < 0)
        rc = -1;
    if (rc < 0)
        slurm_error("vnib: job %u: %s", (unsigned)job_id, e.text);
    return rc;
}

/* apply_env: unset the reserved names, then set or unset each honoured
 * line of env (others are logged and skipped), then the step's
 * FI_CXI_COLL_JOB_STEP_ID when FI_CXI_COLL_JOB_ID ends up set.  Returns
 * 0, or -1 after logging the change Slurm refused. */
static int apply_env(spank_t sp,
                     uint32_t job_id,
                     uint32_t step_id,
                     const struct envfile *env)
{
    bool coll_job_id = false;
    char step[STEP_ID_LEN];

    for (const char *const *r = envfile_reserved_names; *r; r++)
        if (set_var(sp, job_id, *r, NULL) < 0)
            return -1;
    for (size_t i = 0; i < env->count; i++) {
        const struct envfile_line *l = &env->lines[i];
        if (!envfile_honoured_name(l->name)) {
            slurm_error(
                "vnib: job %u: ignoring %s from the env file: only "
                "SLINGSHOT_* and FI_CXI_* are set",
                (unsigned)job_id,
                l->name);
            continue;
        }
        if (set_var(sp, job_id, l->name, l->value) < 0)
            return -1;
        if (strcmp(l->name, "FI_CXI_COLL_JOB_ID") == 0)
            coll_job_id = l->value != NULL;
    }
    if (coll_job_id) {
        step_name(step_id, step, sizeof(step));
        if (set_var(sp, job_id, "FI_CXI_COLL_JOB_STEP_ID", step) < 0)
            return -1;
    }
    return 0;
}

/* In slurmstepd, as root, in each task before it becomes the user. */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    const char *state_dir;
    uint32_t job_id;
    uint32_t step_id;
    uid_t job_uid;
    struct envfile env = {0};
    char dir[ENVFILE_DIR_MAX + 1];
    int rc = -1;

    if (!spank_remote(sp))
        return 0;
    if (parse_args(ac, av, &state_dir) < 0
        || expand_dir(sp, state_dir, dir, sizeof(dir)) < 0)
        goto cleanup;
    if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS
        || spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS
        || spank_get_item(sp, S_JOB_UID, &job_uid) != ESPANK_SUCCESS) {
        slurm_error("vnib: cannot get the job id, step id or uid");
        goto cleanup;
    }
    /* The whole file is checked before anything is applied. */
    if (load_env(dir, job_id, job_uid, &env) < 0
        || apply_env(sp, job_id, step_id, &env) < 0)
        goto cleanup;
    rc = 0;
cleanup:
    envfile_cleanup(&env);
    return rc;
}
