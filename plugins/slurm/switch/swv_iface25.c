/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_iface25: switch/vnib's entry points for Slurm 25.11 and later.
 *
 * 25.11 renamed the calls again (jobinfo_*, stepinfo_*), passes the job's
 * blob to stepinfo_build instead of the step layout, asks whether the
 * batch and extern steps get step data (setup_special_steps: no), and
 * asks job_start(job, test_only) before it starts a job: the test answers
 * from slurmctld's free count (swv_free.h), so a job waits for VNIs
 * instead of failing.  26.05 added job_channel and stepmgr_init, and
 * renamed extern_step_fini to stepmgr_fini: all are exported.
 */
#include "swv_plugin.h"

#if SWV_IFACE == 25

int init(void);
void fini(void);
int switch_p_save(void);
int switch_p_restore(bool recover);
void switch_p_jobinfo_pack(void *switch_jobinfo,
                           buf_t *buffer,
                           uint16_t protocol_version);
int switch_p_jobinfo_unpack(void **switch_jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version);
void switch_p_jobinfo_free(job_record_t *job_ptr);
int switch_p_stepinfo_build(switch_stepinfo_t **stepinfo,
                            void *switch_jobinfo,
                            step_record_t *step_ptr);
void switch_p_stepinfo_duplicate(switch_stepinfo_t *source,
                                 switch_stepinfo_t **dest);
void switch_p_stepinfo_free(switch_stepinfo_t *stepinfo);
void switch_p_stepinfo_pack(switch_stepinfo_t *stepinfo,
                            buf_t *buffer,
                            uint16_t protocol_version);
int switch_p_stepinfo_unpack(switch_stepinfo_t **stepinfo,
                             buf_t *buffer,
                             uint16_t protocol_version);
bool switch_p_setup_special_steps(void);
int switch_p_job_preinit(stepd_step_rec_t *step);
int switch_p_job_init(stepd_step_rec_t *step);
int switch_p_job_postfini(stepd_step_rec_t *step);
int switch_p_job_attach(switch_stepinfo_t *stepinfo,
                        char ***env,
                        uint32_t nodeid,
                        uint32_t procid,
                        uint32_t nnodes,
                        uint32_t nprocs,
                        uint32_t rank);
int switch_p_job_step_complete(switch_stepinfo_t *stepinfo, char *nodelist);
int switch_p_job_start(job_record_t *job_ptr, bool test_only);
void switch_p_job_complete(job_record_t *job_ptr);
uint32_t switch_p_job_channel(job_record_t *job_ptr, char *node_name);
int switch_p_fs_init(stepd_step_rec_t *step);
void switch_p_stepmgr_init(void);
void switch_p_stepmgr_fini(uint32_t job_id);
void switch_p_extern_step_fini(uint32_t job_id);

int init(void)
{
    return swv_plugin_init();
}

void fini(void)
{
    swv_plugin_fini();
}

/* The broker holds the state. */
int switch_p_save(void)
{
    return SLURM_SUCCESS;
}

int switch_p_restore(bool recover)
{
    (void)recover;
    return SLURM_SUCCESS;
}

void switch_p_jobinfo_pack(void *switch_jobinfo,
                           buf_t *buffer,
                           uint16_t protocol_version)
{
    (void)protocol_version;
    swv_jobdata_pack(switch_jobinfo, buffer);
}

int switch_p_jobinfo_unpack(void **switch_jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_jobdata_unpack(switch_jobinfo, buffer);
}

/* Slurm's table types this void *, but passes the job record. */
void switch_p_jobinfo_free(job_record_t *job_ptr)
{
    if (job_ptr == NULL)
        return;
    swv_jobdata_free(job_ptr->switch_jobinfo);
    job_ptr->switch_jobinfo = NULL;
}

int switch_p_stepinfo_build(switch_stepinfo_t **stepinfo,
                            void *switch_jobinfo,
                            step_record_t *step_ptr)
{
    *stepinfo = swv_step_new(0, 0);
    return swv_step_build(*stepinfo,
                          step_ptr,
                          step_ptr != NULL && step_ptr->step_layout != NULL
                              ? step_ptr->step_layout->node_list
                              : NULL,
                          switch_jobinfo);
}

void switch_p_stepinfo_duplicate(switch_stepinfo_t *source,
                                 switch_stepinfo_t **dest)
{
    *dest = swv_step_dup(source);
}

void switch_p_stepinfo_free(switch_stepinfo_t *stepinfo)
{
    swv_step_free(stepinfo);
}

void switch_p_stepinfo_pack(switch_stepinfo_t *stepinfo,
                            buf_t *buffer,
                            uint16_t protocol_version)
{
    (void)protocol_version;
    swv_step_pack(stepinfo, buffer);
}

int switch_p_stepinfo_unpack(switch_stepinfo_t **stepinfo,
                             buf_t *buffer,
                             uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_step_unpack(stepinfo, buffer);
}

/* The batch and extern steps run nothing that uses the NIC. */
bool switch_p_setup_special_steps(void)
{
    return false;
}

int switch_p_job_preinit(stepd_step_rec_t *step)
{
    return swv_stepd_preinit(step);
}

int switch_p_job_postfini(stepd_step_rec_t *step)
{
    return swv_stepd_postfini(step);
}

int switch_p_job_attach(switch_stepinfo_t *stepinfo,
                        char ***env,
                        uint32_t nodeid,
                        uint32_t procid,
                        uint32_t nnodes,
                        uint32_t nprocs,
                        uint32_t rank)
{
    /* The environment was set in the step's env array at preinit. */
    (void)stepinfo;
    (void)env;
    (void)nodeid;
    (void)procid;
    (void)nnodes;
    (void)nprocs;
    (void)rank;
    return SLURM_SUCCESS;
}

int switch_p_job_step_complete(switch_stepinfo_t *stepinfo, char *nodelist)
{
    (void)nodelist;
    return swv_step_complete(stepinfo);
}

int switch_p_job_start(job_record_t *job_ptr, bool test_only)
{
    return swv_job_start(job_ptr, test_only);
}

void switch_p_job_complete(job_record_t *job_ptr)
{
    swv_job_complete(job_ptr->job_id);
    switch_p_jobinfo_free(job_ptr);
}

/* No per-node channel: Slurm's "none". */
uint32_t switch_p_job_channel(job_record_t *job_ptr, char *node_name)
{
    (void)job_ptr;
    (void)node_name;
    return NO_VAL;
}

static int stepd_nothing(stepd_step_rec_t *step)
{
    (void)step;
    return SLURM_SUCCESS;
}

int switch_p_job_init(stepd_step_rec_t *step)
    __attribute__((alias("stepd_nothing")));
int switch_p_fs_init(stepd_step_rec_t *step)
    __attribute__((alias("stepd_nothing")));

/* The stepmgr learns its job from the job record (jobinfo_unpack). */
void switch_p_stepmgr_init(void)
{
}

static void job_nothing(uint32_t job_id)
{
    (void)job_id;
}

void switch_p_stepmgr_fini(uint32_t job_id)
    __attribute__((alias("job_nothing")));
void switch_p_extern_step_fini(uint32_t job_id)
    __attribute__((alias("job_nothing")));

#endif /* SWV_IFACE == 25 */
