/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_iface25: switch/vnib's entry points that Slurm 25.11 added or
 * changed (what 24.05 and later share, and the blobs' calls under either
 * release's names, are in swv_iface24.c; what every release shares is in
 * swv_iface.c).
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

void switch_p_jobinfo_free(job_record_t *job_ptr);
int switch_p_stepinfo_build(switch_stepinfo_t **stepinfo,
                            void *switch_jobinfo,
                            step_record_t *step_ptr);
bool switch_p_setup_special_steps(void);
int switch_p_job_start(job_record_t *job_ptr, bool test_only);
uint32_t switch_p_job_channel(job_record_t *job_ptr, char *node_name);
void switch_p_stepmgr_init(void);
void switch_p_stepmgr_fini(uint32_t job_id);

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

/* The batch and extern steps run nothing that uses the NIC. */
bool switch_p_setup_special_steps(void)
{
    return false;
}

int switch_p_job_start(job_record_t *job_ptr, bool test_only)
{
    return swv_job_start(job_ptr, test_only);
}

/* No per-node channel: Slurm's "none". */
uint32_t switch_p_job_channel(job_record_t *job_ptr, char *node_name)
{
    (void)job_ptr;
    (void)node_name;
    return NO_VAL;
}

/* The stepmgr learns its job from the job record (jobinfo_unpack). */
void switch_p_stepmgr_init(void)
{
}

/* The job's end in its stepmgr: the job's release is slurmctld's. */
void switch_p_stepmgr_fini(uint32_t job_id)
{
    (void)job_id;
}

#endif /* SWV_IFACE == 25 */
