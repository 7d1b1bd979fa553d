/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_iface24: switch/vnib's entry points for Slurm 24.05 to 25.05.
 *
 * 24.05 renamed a step's data to switch_stepinfo_t (*_stepinfo), folded
 * alloc into build, dropped the suspend, reconfig and libstate_clear
 * calls, passes the job record to job_complete, and added a job-level
 * blob (pack/unpack_jobinfo) and job_start(job).  switch/vnib uses the
 * job-level blob only for jobs with enable_stepmgr: job_start reserves
 * such a job and keeps the job token there for its stepmgr (swv_plugin.h).
 * Later 24.x releases added fs_init (24.05.1), extern_stepinfo (24.05.2)
 * and extern_step_fini (24.11.0): all are exported, and a release that
 * does not ask for one never calls it.
 */
#include "swv_plugin.h"

#if SWV_IFACE == 24

int init(void);
void fini(void);
int switch_p_save(void);
int switch_p_restore(bool recover);
void switch_p_pack_jobinfo(void *switch_jobinfo,
                           buf_t *buffer,
                           uint16_t protocol_version);
int switch_p_unpack_jobinfo(void **switch_jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version);
int switch_p_build_stepinfo(switch_stepinfo_t **stepinfo,
                            slurm_step_layout_t *step_layout,
                            step_record_t *step_ptr);
void switch_p_duplicate_stepinfo(switch_stepinfo_t *source,
                                 switch_stepinfo_t **dest);
void switch_p_free_stepinfo(switch_stepinfo_t *stepinfo);
void switch_p_pack_stepinfo(switch_stepinfo_t *stepinfo,
                            buf_t *buffer,
                            uint16_t protocol_version);
int switch_p_unpack_stepinfo(switch_stepinfo_t **stepinfo,
                             buf_t *buffer,
                             uint16_t protocol_version);
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
void switch_p_job_start(job_record_t *job_ptr);
void switch_p_job_complete(job_record_t *job_ptr);
int switch_p_fs_init(stepd_step_rec_t *step);
void switch_p_extern_stepinfo(switch_stepinfo_t **stepinfo,
                              job_record_t *job_ptr);
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

void switch_p_pack_jobinfo(void *switch_jobinfo,
                           buf_t *buffer,
                           uint16_t protocol_version)
{
    (void)protocol_version;
    swv_jobdata_pack(switch_jobinfo, buffer);
}

int switch_p_unpack_jobinfo(void **switch_jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_jobdata_unpack(switch_jobinfo, buffer);
}

int switch_p_build_stepinfo(switch_stepinfo_t **stepinfo,
                            slurm_step_layout_t *step_layout,
                            step_record_t *step_ptr)
{
    *stepinfo = swv_step_new(0, 0);
    return swv_step_build(*stepinfo,
                          step_ptr,
                          step_layout != NULL ? step_layout->node_list : NULL,
                          step_ptr != NULL && step_ptr->job_ptr != NULL
                              ? step_ptr->job_ptr->switch_jobinfo
                              : NULL);
}

void switch_p_duplicate_stepinfo(switch_stepinfo_t *source,
                                 switch_stepinfo_t **dest)
{
    *dest = swv_step_dup(source);
}

void switch_p_free_stepinfo(switch_stepinfo_t *stepinfo)
{
    swv_step_free(stepinfo);
}

void switch_p_pack_stepinfo(switch_stepinfo_t *stepinfo,
                            buf_t *buffer,
                            uint16_t protocol_version)
{
    (void)protocol_version;
    swv_step_pack(stepinfo, buffer);
}

int switch_p_unpack_stepinfo(switch_stepinfo_t **stepinfo,
                             buf_t *buffer,
                             uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_step_unpack(stepinfo, buffer);
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

void switch_p_job_start(job_record_t *job_ptr)
{
    (void)swv_job_start(job_ptr, false);
}

void switch_p_job_complete(job_record_t *job_ptr)
{
    swv_job_complete(job_ptr->job_id);
    swv_jobdata_free(job_ptr->switch_jobinfo);
    job_ptr->switch_jobinfo = NULL;
}

/* The extern step carries nothing: it runs no tasks that use the NIC. */
void switch_p_extern_stepinfo(switch_stepinfo_t **stepinfo,
                              job_record_t *job_ptr)
{
    (void)job_ptr;
    *stepinfo = NULL;
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

void switch_p_extern_step_fini(uint32_t job_id)
{
    (void)job_id;
}

#endif /* SWV_IFACE == 24 */
