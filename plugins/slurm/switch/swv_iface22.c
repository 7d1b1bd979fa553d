/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_iface22: switch/vnib's entry points for Slurm 22.05 to 23.11.
 *
 * The symbols src/common/switch.c (src/interfaces/switch.c from 23.02)
 * looks up under 22.05's names (the ones every release shares are in
 * swv_iface.c), each adapted to swv_plugin.h.  A step's data is a
 * switch_jobinfo_t; slurmctld builds it at step creation and ends it
 * with job_step_complete; the job ends with job_complete(job_id).
 * Suspending keeps a step's services and VNIs (the reservation stays),
 * so suspend and resume have nothing to do, nor does the global state
 * (the broker holds it).  23.11 no longer asks for get_jobinfo and the
 * suspend calls: they are exported all the same and never called.
 */
#include "swv_plugin.h"

#if SWV_IFACE == 22

/* Every symbol is looked up by name; these prototypes keep
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
int switch_p_job_step_allocated(switch_jobinfo_t *jobinfo, char *nodelist);
int switch_p_job_step_pre_suspend(stepd_step_rec_t *job);
int switch_p_job_step_post_suspend(stepd_step_rec_t *job);
int switch_p_job_step_pre_resume(stepd_step_rec_t *job);
int switch_p_job_step_post_resume(stepd_step_rec_t *job);
void switch_p_job_complete(uint32_t job_id);

int init(void)
{
    return swv_plugin_init();
}

int fini(void)
{
    swv_plugin_fini();
    return SLURM_SUCCESS;
}

int switch_p_reconfig(void)
{
    return swv_plugin_init();
}

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

int switch_p_alloc_jobinfo(switch_jobinfo_t **jobinfo,
                           uint32_t job_id,
                           uint32_t step_id)
{
    *jobinfo = swv_step_new(job_id, step_id);
    return SLURM_SUCCESS;
}

int switch_p_build_jobinfo(switch_jobinfo_t *jobinfo,
                           slurm_step_layout_t *step_layout,
                           step_record_t *step_ptr)
{
    return swv_step_build(jobinfo,
                          step_ptr,
                          step_layout != NULL ? step_layout->node_list : NULL,
                          NULL);
}

int switch_p_duplicate_jobinfo(switch_jobinfo_t *source,
                               switch_jobinfo_t **dest)
{
    *dest = swv_step_dup(source);
    return SLURM_SUCCESS;
}

void switch_p_free_jobinfo(switch_jobinfo_t *jobinfo)
{
    swv_step_free(jobinfo);
}

int switch_p_pack_jobinfo(switch_jobinfo_t *jobinfo,
                          buf_t *buffer,
                          uint16_t protocol_version)
{
    (void)protocol_version;
    swv_step_pack(jobinfo, buffer);
    return SLURM_SUCCESS;
}

int switch_p_unpack_jobinfo(switch_jobinfo_t **jobinfo,
                            buf_t *buffer,
                            uint16_t protocol_version)
{
    (void)protocol_version;
    return swv_step_unpack(jobinfo, buffer);
}

int switch_p_get_jobinfo(switch_jobinfo_t *jobinfo, int key, void *data)
{
    (void)jobinfo;
    (void)key;
    (void)data;
    errno = EINVAL;
    return SLURM_ERROR;
}

/* A step still running when slurmctld restarted: its reservations are in
 * the broker, not in memory, so nothing is rebuilt. */
int switch_p_job_step_allocated(switch_jobinfo_t *jobinfo, char *nodelist)
{
    (void)jobinfo;
    (void)nodelist;
    return SLURM_SUCCESS;
}

void switch_p_job_complete(uint32_t job_id)
{
    swv_job_complete(job_id);
}

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

/* ---- the calls with nothing to do: aliases of one body per signature --- */

static int nothing(void)
{
    return SLURM_SUCCESS;
}

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

int switch_p_libstate_clear(void) __attribute__((alias("nothing")));
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

#endif /* SWV_IFACE == 22 */
