/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_iface24: switch/vnib's entry points for Slurm 24.05 and later that
 * 25.11 kept, and those of 24.05 to 25.05 that 25.11 renamed.
 *
 * 24.05 renamed a step's data to switch_stepinfo_t (*_stepinfo), folded
 * alloc into build, dropped the suspend, reconfig and libstate_clear
 * calls, passes the job record to job_complete, and added a job-level
 * blob (pack/unpack_jobinfo) and job_start(job).  switch/vnib uses the
 * job-level blob only for jobs with enable_stepmgr: job_start reserves
 * such a job and keeps the job token there for its stepmgr (swv_plugin.h).
 * Later 24.x releases added fs_init (24.05.1), extern_stepinfo (24.05.2)
 * and extern_step_fini (24.11.0): all are exported, and a release that
 * does not ask for one never calls it.  The blobs' calls have one body
 * each, exported under 24.05's names or 25.11's; 25.11's other entry
 * points are in swv_iface25.c, those every release shares in swv_iface.c.
 */
#include "swv_plugin.h"

#if SWV_IFACE >= 24

int init(void);
void fini(void);
int switch_p_save(void);
int switch_p_restore(bool recover);
void switch_p_job_complete(job_record_t *job_ptr);
int switch_p_fs_init(stepd_step_rec_t *step);
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

void switch_p_job_complete(job_record_t *job_ptr)
{
    swv_job_complete(job_ptr->job_id);
    swv_jobdata_free(job_ptr->switch_jobinfo);
    job_ptr->switch_jobinfo = NULL;
}

int switch_p_fs_init(stepd_step_rec_t *step)
{
    (void)step;
    return SLURM_SUCCESS;
}

/* The job's end in its extern step (24.11 to 25.05; 26.05's
 * stepmgr_fini): the job's release is slurmctld's. */
void switch_p_extern_step_fini(uint32_t job_id)
{
    (void)job_id;
}

/* ---- the blobs: 24.05's names, 25.11's the same bodies --------------------
 */

static void jobinfo_pack(void *switch_jobinfo,
                         buf_t *buffer,
                         uint16_t protocol_version)
{
    (void)protocol_version;
    swv_jobdata_pack(switch_jobinfo, buffer);
}

static int jobinfo_unpack(void **switch_jobinfo,
                          buf_t *buffer,
                          uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_jobdata_unpack(switch_jobinfo, buffer);
}

static void stepinfo_duplicate(switch_stepinfo_t *source,
                               switch_stepinfo_t **dest)
{
    *dest = swv_step_dup(source);
}

static void stepinfo_free(switch_stepinfo_t *stepinfo)
{
    swv_step_free(stepinfo);
}

static void stepinfo_pack(switch_stepinfo_t *stepinfo,
                          buf_t *buffer,
                          uint16_t protocol_version)
{
    (void)protocol_version;
    swv_step_pack(stepinfo, buffer);
}

static int stepinfo_unpack(switch_stepinfo_t **stepinfo,
                           buf_t *buffer,
                           uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_step_unpack(stepinfo, buffer);
}

#if SWV_IFACE == 24
#define SWV_BLOB(old, new) old
#else
#define SWV_BLOB(old, new) new
#endif

void SWV_BLOB(switch_p_pack_jobinfo,
              switch_p_jobinfo_pack)(void *switch_jobinfo,
                                     buf_t *buffer,
                                     uint16_t protocol_version)
    __attribute__((alias("jobinfo_pack")));
int SWV_BLOB(switch_p_unpack_jobinfo,
             switch_p_jobinfo_unpack)(void **switch_jobinfo,
                                      buf_t *buffer,
                                      uint16_t protocol_version)
    __attribute__((alias("jobinfo_unpack")));
void SWV_BLOB(switch_p_duplicate_stepinfo,
              switch_p_stepinfo_duplicate)(switch_stepinfo_t *source,
                                           switch_stepinfo_t **dest)
    __attribute__((alias("stepinfo_duplicate")));
void SWV_BLOB(switch_p_free_stepinfo,
              switch_p_stepinfo_free)(switch_stepinfo_t *stepinfo)
    __attribute__((alias("stepinfo_free")));
void SWV_BLOB(switch_p_pack_stepinfo,
              switch_p_stepinfo_pack)(switch_stepinfo_t *stepinfo,
                                      buf_t *buffer,
                                      uint16_t protocol_version)
    __attribute__((alias("stepinfo_pack")));
int SWV_BLOB(switch_p_unpack_stepinfo,
             switch_p_stepinfo_unpack)(switch_stepinfo_t **stepinfo,
                                       buf_t *buffer,
                                       uint16_t protocol_version)
    __attribute__((alias("stepinfo_unpack")));

#endif /* SWV_IFACE >= 24 */

#if SWV_IFACE == 24

int switch_p_build_stepinfo(switch_stepinfo_t **stepinfo,
                            slurm_step_layout_t *step_layout,
                            step_record_t *step_ptr);
void switch_p_job_start(job_record_t *job_ptr);
void switch_p_extern_stepinfo(switch_stepinfo_t **stepinfo,
                              job_record_t *job_ptr);

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

/* Slurm ignores what the start makes of a job here. */
void switch_p_job_start(job_record_t *job_ptr)
{
    (void)swv_job_start(job_ptr, false);
}

/* The extern step carries nothing: it runs no tasks that use the NIC. */
void switch_p_extern_stepinfo(switch_stepinfo_t **stepinfo,
                              job_record_t *job_ptr)
{
    (void)job_ptr;
    *stepinfo = NULL;
}

#endif /* SWV_IFACE == 24 */
