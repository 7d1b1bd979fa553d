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
 *    slurmd on one host, each with its own agent).  Before applying the file
 * the plugin unsets the reserved names (reserved_names below), so values from
 * the submitting shell never leak into a job, with or without a file. Only
 * names starting SLINGSHOT_ or FI_CXI_ are honoured; other names are logged and
 * skipped.  When FI_CXI_COLL_JOB_ID ends up set, FI_CXI_COLL_JOB_STEP_ID is set
 * to the step as Slurm names it: the step number, or "batch", "extern" or
 * "interactive"; the plugin's value wins over one in the file, which is per
 * job.
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
 * The option callback (spank_opt_cb_f) receives no handle, so the values
 * the user chose wait in option_values until slurm_spank_init_post_opt;
 * that, the option descriptors Slurm keeps pointers to, and the symbols
 * SPANK_PLUGIN defines are the only globals.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib_spank_slurm.h"

#include "vnib/tclass.h"

SPANK_PLUGIN(vnib, 1)

#ifdef VNIB_SPANK_FAILURE_MODE
/* A failing slurm_spank_init fails the job, never drains the node. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

#define DEFAULT_STATE_DIR "/run/vnibroker"
#define ENV_FILE_MAX (64 * 1024) /* bytes in one job's env file */
#define NAME_MAX_LEN 128         /* characters in a variable name */
#define STEP_ID_LEN 16           /* "interactive" or a uint32_t */

enum option_id {
    OPT_NETWORK_VNIS = 1,
    OPT_HWCOLL = 2,
};

/* The names the agent may set.  Each is unset before the file is read,
 * so a job never inherits one from the submitting shell. */
static const char *const reserved_names[] = {
    "SLINGSHOT_VNIS",
    "SLINGSHOT_DEVICES",
    "SLINGSHOT_SVC_IDS",
    "SLINGSHOT_TCS",
    "FI_CXI_COLL_JOB_ID",
    "FI_CXI_COLL_JOB_STEP_ID",
    "FI_CXI_COLL_MCAST_TOKEN",
    "FI_CXI_COLL_FABRIC_MGR_URL",
    "FI_CXI_HWCOLL_ADDRS_PER_JOB",
    "FI_CXI_HWCOLL_MIN_NODES",
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

/* One line of the env file, pointing into the file's buffer. */
struct env_line {
    const char *name;  /* NUL-terminated */
    const char *value; /* NUL-terminated; NULL for "unset" */
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
            if (dir[0] != '/' || strlen(dir) > 1024) {
                slurm_error(
                    "vnib: state_dir must be an absolute path of at "
                    "most 1024 characters, not '%s'",
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

static bool valid_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    if (!((name[0] >= 'A' && name[0] <= 'Z')
          || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

static bool honoured_name(const char *name)
{
    return strncmp(name, "SLINGSHOT_", 10) == 0
           || strncmp(name, "FI_CXI_", 7) == 0;
}

/* parse_line: split one line (NUL-terminated, without its newline) in
 * place.  Returns 0, or -1 if the line is malformed. */
static int parse_line(char *line, struct env_line *out)
{
    for (const char *p = line; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f)
            return -1;
    }
    if (strncmp(line, "export ", 7) == 0) {
        char *eq = strchr(line + 7, '=');
        if (!eq)
            return -1;
        *eq = '\0';
        out->name = line + 7;
        out->value = eq + 1;
    } else if (strncmp(line, "unset ", 6) == 0) {
        out->name = line + 6;
        out->value = NULL;
    } else {
        return -1;
    }
    return valid_name(out->name) ? 0 : -1;
}

/* read_env_file: open and check STATE_DIR/jobs/JOBID.env and read it
 * whole into *bufp (NUL-terminated; the caller frees it).  Returns 1 with
 * the contents, 0 if there is no file (or no jobs directory), or -1 after
 * logging why the file cannot be trusted or read. */
static int read_env_file(const char *state_dir,
                         uint32_t job_id,
                         uid_t job_uid,
                         char **bufp,
                         size_t *lenp)
{
    char dir_path[1100];
    char file_name[32];
    struct stat st;
    int dfd = -1;
    int fd = -1;
    char *buf = NULL;
    size_t len = 0;
    int rc = -1;

    *bufp = NULL;
    snprintf(dir_path, sizeof(dir_path), "%s/jobs", state_dir);
    snprintf(file_name, sizeof(file_name), "%u.env", (unsigned)job_id);

    dfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT) {
            rc = 0;
            goto cleanup;
        }
        slurm_error("vnib: job %u: cannot open %s: %s",
                    (unsigned)job_id,
                    dir_path,
                    strerror(errno));
        goto cleanup;
    }
    if (fstat(dfd, &st) < 0) {
        slurm_error("vnib: job %u: cannot stat %s: %s",
                    (unsigned)job_id,
                    dir_path,
                    strerror(errno));
        goto cleanup;
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        slurm_error(
            "vnib: job %u: refusing %s: it must belong to root and "
            "be writable by no one else (uid %u, mode %04o)",
            (unsigned)job_id,
            dir_path,
            (unsigned)st.st_uid,
            (unsigned)(st.st_mode & 07777));
        goto cleanup;
    }

    /* O_NONBLOCK: a FIFO planted here must not hang the task; it is
     * refused below as not a regular file. */
    fd = openat(dfd, file_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            rc = 0;
            goto cleanup;
        }
        slurm_error("vnib: job %u: cannot open %s/%s: %s",
                    (unsigned)job_id,
                    dir_path,
                    file_name,
                    strerror(errno));
        goto cleanup;
    }
    if (fstat(fd, &st) < 0) {
        slurm_error("vnib: job %u: cannot stat %s/%s: %s",
                    (unsigned)job_id,
                    dir_path,
                    file_name,
                    strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != job_uid)
        || (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size > ENV_FILE_MAX) {
        slurm_error(
            "vnib: job %u: refusing %s/%s: it must be a regular file "
            "of at most %d bytes, owned by root or uid %u, writable "
            "by neither group nor others (uid %u, mode %06o, "
            "%lld bytes)",
            (unsigned)job_id,
            dir_path,
            file_name,
            ENV_FILE_MAX,
            (unsigned)job_uid,
            (unsigned)st.st_uid,
            (unsigned)st.st_mode,
            (long long)st.st_size);
        goto cleanup;
    }

    /* One byte more than allowed, to notice a file that grew. */
    if (!(buf = malloc(ENV_FILE_MAX + 2))) {
        slurm_error("vnib: job %u: out of memory", (unsigned)job_id);
        goto cleanup;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, ENV_FILE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            slurm_error("vnib: job %u: cannot read %s/%s: %s",
                        (unsigned)job_id,
                        dir_path,
                        file_name,
                        strerror(errno));
            goto cleanup;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > ENV_FILE_MAX) {
            slurm_error("vnib: job %u: %s/%s is larger than %d bytes",
                        (unsigned)job_id,
                        dir_path,
                        file_name,
                        ENV_FILE_MAX);
            goto cleanup;
        }
    }
    buf[len] = '\0';
    *bufp = buf;
    *lenp = len;
    buf = NULL;
    rc = 1;
cleanup:
    free(buf);
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

/* parse_env_file: split buf (len bytes) into lines, in place.  Returns
 * the number of lines stored in *linesp (the caller frees it), or -1
 * after logging the first malformed line. */
static int parse_env_file(char *buf,
                          size_t len,
                          uint32_t job_id,
                          struct env_line **linesp)
{
    struct env_line *lines = NULL;
    size_t count = 0;
    size_t max = 0;
    int lineno = 0;
    char *p = buf;
    char *end = buf + len;

    *linesp = NULL;
    if (memchr(buf, '\0', len)) {
        slurm_error("vnib: job %u: the env file holds a NUL byte",
                    (unsigned)job_id);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n')
            max++;
    if (len == 0 || buf[len - 1] != '\n') {
        slurm_error(
            "vnib: job %u: the env file is empty or its last line has no "
            "newline (truncated?)",
            (unsigned)job_id);
        return -1;
    }
    /* max >= 1 here: the last byte is a newline. */
    if (!(lines = calloc(max, sizeof(*lines)))) {
        slurm_error("vnib: job %u: out of memory", (unsigned)job_id);
        return -1;
    }
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        *nl = '\0';
        lineno++;
        if (parse_line(p, &lines[count]) < 0) {
            slurm_error(
                "vnib: job %u: malformed line %d of the env file "
                "(want \"export NAME=value\" or \"unset NAME\")",
                (unsigned)job_id,
                lineno);
            free(lines);
            return -1;
        }
        count++;
        p = nl + 1;
    }
    *linesp = lines;
    return (int)count;
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
    size_t used = 0;

    if (strstr(in, "%n") && node_name(sp, node, sizeof(node)) < 0)
        return -1;
    for (const char *p = in; *p; p++) {
        const char *piece = p[0] == '%' && p[1] == 'n' ? node : NULL;
        size_t n = piece ? strlen(piece) : 1;
        if (used + n >= size) {
            slurm_error("vnib: state_dir '%s' expands to a bad path", in);
            return -1;
        }
        memcpy(out + used, piece ? piece : p, n);
        used += n;
        p += piece ? 1 : 0;
    }
    out[used] = '\0';
    return 0;
}

/* In slurmstepd, as root, in each task before it becomes the user. */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    const char *state_dir;
    uint32_t job_id;
    uint32_t step_id;
    uid_t job_uid;
    char *buf = NULL;
    size_t len = 0;
    struct env_line *lines = NULL;
    int count = 0;
    bool coll_job_id = false;
    char step[STEP_ID_LEN];
    char dir[1024];
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

    switch (read_env_file(dir, job_id, job_uid, &buf, &len)) {
        case 1:
            if ((count = parse_env_file(buf, len, job_id, &lines)) < 0)
                goto cleanup;
            break;
        case 0:
            break;
        default:
            goto cleanup;
    }

    for (size_t i = 0; i < sizeof(reserved_names) / sizeof(*reserved_names);
         i++)
        if (set_var(sp, job_id, reserved_names[i], NULL) < 0)
            goto cleanup;
    for (int i = 0; i < count; i++) {
        if (!honoured_name(lines[i].name)) {
            slurm_error(
                "vnib: job %u: ignoring %s from the env file: only "
                "SLINGSHOT_* and FI_CXI_* are set",
                (unsigned)job_id,
                lines[i].name);
            continue;
        }
        if (set_var(sp, job_id, lines[i].name, lines[i].value) < 0)
            goto cleanup;
        if (strcmp(lines[i].name, "FI_CXI_COLL_JOB_ID") == 0)
            coll_job_id = lines[i].value != NULL;
    }
    if (coll_job_id) {
        step_name(step_id, step, sizeof(step));
        if (set_var(sp, job_id, "FI_CXI_COLL_JOB_STEP_ID", step) < 0)
            goto cleanup;
    }
    rc = 0;
cleanup:
    free(lines);
    free(buf);
    return rc;
}
