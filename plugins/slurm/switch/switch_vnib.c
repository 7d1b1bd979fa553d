/* SPDX-License-Identifier: GPL-2.0-or-later */
/* switch_vnib: the Slurm switch plugin "switch/vnib" (Slurm 22.05).
 *
 * This is the only file that sees Slurm's structures: it implements every
 * symbol 22.05's src/common/switch.c looks up (syms[]), takes what it
 * needs out of step_record_t, job_record_t and stepd_step_rec_t, and
 * hands plain values to the plugin's modules: swv_opts (SwitchParameters
 * and --network), swv_jobinfo (what travels with a step), swv_ctld (the
 * broker calls of slurmctld) and swv_node (the agent's code in
 * slurmstepd).  See plugins/slurm/README.md, "switch/vnib".
 *
 * The plugin keeps no state of its own: every reservation lives in the
 * broker, so libstate_save/restore/clear have nothing to do and a
 * slurmctld killed at any point loses nothing.  The settings parsed from
 * SwitchParameters at init and reconfig are the one mutable global the
 * plugin interface leaves room for.
 *
 * plugin_id: 22.05 uses 100-104 (slurm.h, enum switch_plugin_type; later
 * Slurm releases add ids after 104, one at a time).  switch_init() loads
 * every switch plugin it finds and refuses duplicate ids, so ours is far
 * outside that sequence: 0x564e4942, "VNIB" in ASCII.
 */
#include "config.h"

#include "src/common/slurm_xlator.h"

#include "src/common/env.h"
#include "src/common/log.h"
#include "src/common/pack.h"
#include "src/common/switch.h"
#include "src/common/xmalloc.h"

#include "swv_ctld.h"
#include "swv_jobinfo.h"
#include "swv_node.h"
#include "swv_opts.h"

const char plugin_name[] = "switch vnibroker plugin";
const char plugin_type[] = "switch/vnib";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;
const uint32_t plugin_id = 0x564e4942u;

struct switch_jobinfo {
    struct swv_jobinfo info;
};

/* SwitchParameters, parsed (init, reconfig). */
static struct swv_config swv_cfg;

/* Every Slurm switch plugin symbol is extern; these prototypes keep
 * -Wmissing-prototypes quiet without a header no one else includes. */
int init(void);
int fini(void);
int switch_p_reconfig(void);
int switch_p_libstate_save(char *dir_name);
int switch_p_libstate_restore(char *dir_name, bool recover);
int switch_p_libstate_clear(void);
int switch_p_alloc_jobinfo(switch_jobinfo_t **jobinfo,
                           uint32_t job_id,
                           uint32_t step_id);
int switch_p_build_jobinfo(switch_jobinfo_t *jobinfo,
                           slurm_step_layout_t *step_layout,
                           step_record_t *step_ptr);
int switch_p_duplicate_jobinfo(switch_jobinfo_t *source,
                               switch_jobinfo_t **dest);
void switch_p_free_jobinfo(switch_jobinfo_t *jobinfo);
int switch_p_pack_jobinfo(switch_jobinfo_t *jobinfo,
                          buf_t *buffer,
                          uint16_t protocol_version);
int switch_p_unpack_jobinfo(switch_jobinfo_t **jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version);
int switch_p_get_jobinfo(switch_jobinfo_t *jobinfo, int key, void *data);
int switch_p_job_preinit(stepd_step_rec_t *job);
int switch_p_job_init(stepd_step_rec_t *job);
int switch_p_job_suspend_test(switch_jobinfo_t *jobinfo);
void switch_p_job_suspend_info_get(switch_jobinfo_t *jobinfo,
                                   void *suspend_info);
void switch_p_job_suspend_info_pack(void *suspend_info,
                                    buf_t *buffer,
                                    uint16_t protocol_version);
int switch_p_job_suspend_info_unpack(void **suspend_info,
                                     buf_t *buffer,
                                     uint16_t protocol_version);
void switch_p_job_suspend_info_free(void *suspend_info);
int switch_p_job_suspend(void *suspend_info, int max_wait);
int switch_p_job_resume(void *suspend_info, int max_wait);
int switch_p_job_fini(switch_jobinfo_t *jobinfo);
int switch_p_job_postfini(stepd_step_rec_t *job);
int switch_p_job_attach(switch_jobinfo_t *jobinfo,
                        char ***env,
                        uint32_t nodeid,
                        uint32_t procid,
                        uint32_t nnodes,
                        uint32_t nprocs,
                        uint32_t rank);
int switch_p_job_step_complete(switch_jobinfo_t *jobinfo, char *nodelist);
int switch_p_job_step_allocated(switch_jobinfo_t *jobinfo, char *nodelist);
int switch_p_job_step_pre_suspend(stepd_step_rec_t *job);
int switch_p_job_step_post_suspend(stepd_step_rec_t *job);
int switch_p_job_step_pre_resume(stepd_step_rec_t *job);
int switch_p_job_step_post_resume(stepd_step_rec_t *job);
void switch_p_job_complete(uint32_t job_id);

static int load_config(void)
{
    vnib_error_t err = {0};

    if (swv_config_parse(&swv_cfg, slurm_conf.switch_param, &err) < 0) {
        error("switch/vnib: %s", err.text);
        return SLURM_ERROR;
    }
    return SLURM_SUCCESS;
}

int init(void)
{
    return load_config();
}

int fini(void)
{
    return SLURM_SUCCESS;
}

int switch_p_reconfig(void)
{
    return load_config();
}

/* ---- global state: none, the broker holds it ---------------------------- */

int switch_p_libstate_save(char *dir_name)
{
    (void)dir_name;
    return SLURM_SUCCESS;
}

int switch_p_libstate_restore(char *dir_name, bool recover)
{
    (void)dir_name;
    (void)recover;
    return SLURM_SUCCESS;
}

int switch_p_libstate_clear(void)
{
    return SLURM_SUCCESS;
}

/* ---- the jobinfo -----------------------------------------------------------
 */

int switch_p_alloc_jobinfo(switch_jobinfo_t **jobinfo,
                           uint32_t job_id,
                           uint32_t step_id)
{
    switch_jobinfo_t *j = xmalloc(sizeof(*j));

    j->info.job_id = job_id;
    j->info.step_id = step_id;
    *jobinfo = j;
    return SLURM_SUCCESS;
}

int switch_p_duplicate_jobinfo(switch_jobinfo_t *source,
                               switch_jobinfo_t **dest)
{
    switch_jobinfo_t *j = xmalloc(sizeof(*j));

    if (source != NULL)
        j->info = source->info;
    *dest = j;
    return SLURM_SUCCESS;
}

void switch_p_free_jobinfo(switch_jobinfo_t *jobinfo)
{
    xfree(jobinfo);
}

/* One length-prefixed blob: empty for no jobinfo, else the 36 bytes of
 * swv_jobinfo_encode. */
int switch_p_pack_jobinfo(switch_jobinfo_t *jobinfo,
                          buf_t *buffer,
                          uint16_t protocol_version)
{
    uint8_t wire[SWV_JOBINFO_WIRE];

    (void)protocol_version;
    if (jobinfo == NULL) {
        packmem(NULL, 0, buffer);
        return SLURM_SUCCESS;
    }
    swv_jobinfo_encode(&jobinfo->info, wire);
    packmem((char *)wire, SWV_JOBINFO_WIRE, buffer);
    return SLURM_SUCCESS;
}

int switch_p_unpack_jobinfo(switch_jobinfo_t **jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version)
{
    vnib_error_t err = {0};
    char *data = NULL;
    uint32_t len = 0;
    switch_jobinfo_t *j;

    (void)protocol_version;
    *jobinfo = NULL;
    if (unpackmem_xmalloc(&data, &len, buffer) != SLURM_SUCCESS) {
        error("switch/vnib: jobinfo: unpack error");
        return SLURM_ERROR;
    }
    j = xmalloc(sizeof(*j));
    if (len > 0
        && swv_jobinfo_decode((uint8_t *)data, len, &j->info, &err) < 0) {
        error("switch/vnib: %s", err.text);
        xfree(data);
        xfree(j);
        return SLURM_ERROR;
    }
    xfree(data);
    *jobinfo = j;
    return SLURM_SUCCESS;
}

int switch_p_get_jobinfo(switch_jobinfo_t *jobinfo, int key, void *data)
{
    (void)jobinfo;
    (void)key;
    (void)data;
    slurm_seterrno(EINVAL);
    return SLURM_ERROR;
}

/* ---- slurmctld ------------------------------------------------------------
 */

int switch_p_build_jobinfo(switch_jobinfo_t *jobinfo,
                           slurm_step_layout_t *step_layout,
                           step_record_t *step_ptr)
{
    vnib_error_t err = {0};
    struct swv_network net;
    struct swv_step_resv resv;
    struct swv_step_req req;
    job_record_t *job_ptr;
    char job[16], step[16];

    if (jobinfo == NULL || step_layout == NULL || step_ptr == NULL
        || step_ptr->job_ptr == NULL) {
        error("switch/vnib: build_jobinfo without a step");
        slurm_seterrno(ESLURM_INTERCONNECT_FAILURE);
        return SLURM_ERROR;
    }
    job_ptr = step_ptr->job_ptr;
    jobinfo->info.step_id = step_ptr->step_id.step_id;
    swv_jobinfo_ids(&jobinfo->info, job, step);
    if (swv_network_parse(
            &swv_cfg, job_ptr->network, step_ptr->network, &net, &err)
        < 0) {
        error("switch/vnib: JobId=%s StepId=%s: %s", job, step, err.text);
        slurm_seterrno(ESLURM_INTERCONNECT_FAILURE);
        return SLURM_ERROR;
    }
    req = (struct swv_step_req){
        .job_id = job,
        .step_id = step,
        .uid = job_ptr->user_id,
        .user = job_ptr->user_name,
        .job_nodes = job_ptr->nodes,
        .step_nodes = step_layout->node_list,
    };
    if (swv_ctld_step_begin(&swv_cfg, &req, &net, &resv, &err) < 0) {
        error("switch/vnib: JobId=%s StepId=%s: %s", job, step, err.text);
        slurm_seterrno(errno == EAGAIN ? ESLURM_INTERCONNECT_BUSY
                                       : ESLURM_INTERCONNECT_FAILURE);
        return SLURM_ERROR;
    }
    jobinfo->info.flags = SWV_JOBINFO_BUILT;
    if (resv.unisolated) {
        jobinfo->info.flags |= SWV_JOBINFO_UNISOLATED;
        error(
            "switch/vnib: JobId=%s StepId=%s: broker unreachable (%s); "
            "the step runs WITHOUT VNI isolation (vnib_outage=open)",
            job,
            step,
            err.text);
    }
    jobinfo->info.job_resv = resv.job_resv;
    jobinfo->info.step_resv = resv.step_resv;
    debug(
        "switch/vnib: JobId=%s StepId=%s nodes=%s: reservation %lld, "
        "step reservation %lld",
        job,
        step,
        step_layout->node_list,
        resv.job_resv,
        resv.step_resv);
    return SLURM_SUCCESS;
}

int switch_p_job_step_complete(switch_jobinfo_t *jobinfo, char *nodelist)
{
    vnib_error_t err = {0};
    char job[16], step[16];

    (void)nodelist;
    if (!running_in_slurmctld() || jobinfo == NULL
        || (jobinfo->info.flags & SWV_JOBINFO_BUILT) == 0
        || (jobinfo->info.flags & SWV_JOBINFO_UNISOLATED) != 0)
        return SLURM_SUCCESS;
    swv_jobinfo_ids(&jobinfo->info, job, step);
    if (swv_ctld_step_end(&swv_cfg, job, step, &err) < 0)
        error(
            "switch/vnib: JobId=%s StepId=%s: step release failed (%s); "
            "the job's release will release it",
            job,
            step,
            err.text);
    return SLURM_SUCCESS;
}

int switch_p_job_step_allocated(switch_jobinfo_t *jobinfo, char *nodelist)
{
    /* A step still running when slurmctld restarted: its reservations are
     * in the broker, not in memory, so nothing is rebuilt. */
    (void)jobinfo;
    (void)nodelist;
    return SLURM_SUCCESS;
}

void switch_p_job_complete(uint32_t job_id)
{
    vnib_error_t err = {0};
    char job[16];
    int rc;

    if (!running_in_slurmctld())
        return;
    snprintf(job, sizeof(job), "%u", job_id);
    rc = swv_ctld_job_end(&swv_cfg, job, &err);
    if (rc != 0)
        error("switch/vnib: JobId=%s: %s", job, err.text);
}

/* ---- slurmstepd -----------------------------------------------------------
 */

/* What the step carries; a step without (never built by slurmctld) is
 * all zeros, which swv_node refuses to set up. */
static const struct swv_jobinfo *step_info(const stepd_step_rec_t *job)
{
    static const struct swv_jobinfo none = {0};

    if (job->switch_job != NULL && job->switch_job->data != NULL)
        return &((switch_jobinfo_t *)job->switch_job->data)->info;
    return &none;
}

/* Drop every SLINGSHOT_* and FI_CXI_* name from env, so nothing from the
 * submitting shell reaches a task. */
static void env_clear_ours(char **env)
{
    char name[256];
    size_t i, n;
    bool again = true;

    while (again && env != NULL) {
        again = false;
        for (i = 0; env[i] != NULL; i++) {
            if (strncmp(env[i], "SLINGSHOT_", 10) != 0
                && strncmp(env[i], "FI_CXI_", 7) != 0)
                continue;
            n = strcspn(env[i], "=");
            if (n >= sizeof(name))
                n = sizeof(name) - 1;
            memcpy(name, env[i], n);
            name[n] = '\0';
            unsetenvp(env, name);
            again = true;
            break;
        }
    }
}

static int env_apply(char ***env, char **add)
{
    char name[256];
    const char *eq;
    size_t i, n;

    for (i = 0; add != NULL && add[i] != NULL; i++) {
        eq = strchr(add[i], '=');
        n = eq != NULL ? (size_t)(eq - add[i]) : 0;
        if (n == 0 || n >= sizeof(name))
            return SLURM_ERROR;
        memcpy(name, add[i], n);
        name[n] = '\0';
        if (!env_array_overwrite(env, name, eq + 1))
            return SLURM_ERROR;
    }
    return SLURM_SUCCESS;
}

int switch_p_job_preinit(stepd_step_rec_t *job)
{
    const struct swv_jobinfo *info = step_info(job);
    vnib_error_t err = {0};
    char **add = NULL;
    long ncores;
    int unisolated = 0, rc;

    env_clear_ours(job->env);
    ncores = (long)job->node_tasks
             * (long)(job->cpus_per_task > 0 ? job->cpus_per_task : 1);
    if (ncores < 1)
        ncores = 1;
    rc = swv_node_setup(&swv_cfg,
                        job->node_name,
                        info,
                        (long)job->uid,
                        ncores,
                        &add,
                        &unisolated,
                        &err);
    if (rc < 0 && unisolated) {
        error(
            "switch/vnib: JobId=%u StepId=%u on %s: %s; the step runs "
            "WITHOUT VNI isolation (vnib_outage=open)",
            job->step_id.job_id,
            job->step_id.step_id,
            job->node_name,
            err.text);
        return SLURM_SUCCESS;
    }
    if (rc < 0) {
        error("switch/vnib: JobId=%u StepId=%u on %s: %s",
              job->step_id.job_id,
              job->step_id.step_id,
              job->node_name,
              err.text);
        slurm_seterrno(ESLURM_INTERCONNECT_FAILURE);
        return SLURM_ERROR;
    }
    rc = env_apply(&job->env, add);
    swv_node_env_free(add);
    if (rc != SLURM_SUCCESS) {
        error(
            "switch/vnib: JobId=%u StepId=%u: cannot set the task "
            "environment",
            job->step_id.job_id,
            job->step_id.step_id);
        (void)swv_node_teardown(&swv_cfg, job->node_name, info, &err);
        slurm_seterrno(ESLURM_INTERCONNECT_FAILURE);
        return SLURM_ERROR;
    }
    return SLURM_SUCCESS;
}

/* After the step's processes are killed: destroy its services. */
int switch_p_job_postfini(stepd_step_rec_t *job)
{
    const struct swv_jobinfo *info = step_info(job);
    vnib_error_t err = {0};

    if (swv_node_teardown(&swv_cfg, job->node_name, info, &err) < 0) {
        error("switch/vnib: JobId=%u StepId=%u on %s: %s",
              job->step_id.job_id,
              job->step_id.step_id,
              job->node_name,
              err.text);
        return SLURM_ERROR;
    }
    return SLURM_SUCCESS;
}

int switch_p_job_attach(switch_jobinfo_t *jobinfo,
                        char ***env,
                        uint32_t nodeid,
                        uint32_t procid,
                        uint32_t nnodes,
                        uint32_t nprocs,
                        uint32_t rank)
{
    /* The environment was set in the step's env array at preinit, which
     * every task copies. */
    (void)jobinfo;
    (void)env;
    (void)nodeid;
    (void)procid;
    (void)nnodes;
    (void)nprocs;
    (void)rank;
    return SLURM_SUCCESS;
}

/* ---- suspend and resume: services and VNIs stay with the job ---------- */

void switch_p_job_suspend_info_get(switch_jobinfo_t *jobinfo,
                                   void *suspend_info)
{
    (void)jobinfo;
    (void)suspend_info;
}

void switch_p_job_suspend_info_pack(void *suspend_info,
                                    buf_t *buffer,
                                    uint16_t protocol_version)
{
    (void)suspend_info;
    (void)buffer;
    (void)protocol_version;
}

int switch_p_job_suspend_info_unpack(void **suspend_info,
                                     buf_t *buffer,
                                     uint16_t protocol_version)
{
    (void)buffer;
    (void)protocol_version;
    *suspend_info = NULL;
    return SLURM_SUCCESS;
}

void switch_p_job_suspend_info_free(void *suspend_info)
{
    (void)suspend_info;
}

/* ---- the calls with nothing to do -------------------------------------- */

/* One body per signature; the symbols Slurm looks up are aliases of it.
 * Suspending keeps a step's services and VNIs (the broker's reservation
 * stays), so suspend and resume have nothing to do either. */
static int stepd_nothing(stepd_step_rec_t *job)
{
    (void)job;
    return SLURM_SUCCESS;
}

static int jobinfo_nothing(switch_jobinfo_t *jobinfo)
{
    (void)jobinfo;
    return SLURM_SUCCESS;
}

static int suspend_nothing(void *suspend_info, int max_wait)
{
    (void)suspend_info;
    (void)max_wait;
    return SLURM_SUCCESS;
}

int switch_p_job_init(stepd_step_rec_t *job)
    __attribute__((alias("stepd_nothing")));
int switch_p_job_step_pre_suspend(stepd_step_rec_t *job)
    __attribute__((alias("stepd_nothing")));
int switch_p_job_step_post_suspend(stepd_step_rec_t *job)
    __attribute__((alias("stepd_nothing")));
int switch_p_job_step_pre_resume(stepd_step_rec_t *job)
    __attribute__((alias("stepd_nothing")));
int switch_p_job_step_post_resume(stepd_step_rec_t *job)
    __attribute__((alias("stepd_nothing")));
/* job_fini runs after the tasks exit but before their processes are
 * killed: the services are destroyed in job_postfini instead. */
int switch_p_job_fini(switch_jobinfo_t *jobinfo)
    __attribute__((alias("jobinfo_nothing")));
int switch_p_job_suspend_test(switch_jobinfo_t *jobinfo)
    __attribute__((alias("jobinfo_nothing")));
int switch_p_job_suspend(void *suspend_info, int max_wait)
    __attribute__((alias("suspend_nothing")));
int switch_p_job_resume(void *suspend_info, int max_wait)
    __attribute__((alias("suspend_nothing")));
