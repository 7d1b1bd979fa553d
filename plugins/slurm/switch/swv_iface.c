/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_iface: switch/vnib's entry points that every Slurm release from
 * 22.05 to 26.05 looks up under the same name and signature.
 *
 * A step's data is `struct swv_step *` whatever the release calls the
 * type (swv_slurm.h), so these are written once; each release's own
 * names are in swv_iface22.c, swv_iface24.c and swv_iface25.c.
 */
#include "swv_plugin.h"

int switch_p_job_preinit(stepd_step_rec_t *step);
int switch_p_job_init(stepd_step_rec_t *step);
int switch_p_job_postfini(stepd_step_rec_t *step);
int switch_p_job_attach(struct swv_step *stepinfo,
                        char ***env,
                        uint32_t nodeid,
                        uint32_t procid,
                        uint32_t nnodes,
                        uint32_t nprocs,
                        uint32_t rank);
int switch_p_job_step_complete(struct swv_step *stepinfo, char *nodelist);

/* Nothing before the step's process container exists.  slurmstepd calls
 * preinit before proctrack creates the container, and a step refused
 * here has none: a signal to that step (a cancel, a requeue) then goes to
 * "container 0", which proctrack/linuxproc takes for every process on
 * the host.  So the step is set up, and may be refused, in job_init. */
int switch_p_job_preinit(stepd_step_rec_t *step)
{
    (void)step;
    return SLURM_SUCCESS;
}

/* After the container exists, before the tasks start, as root: create
 * the step's services and set its environment.  A refusal here ends the
 * step through postfini, which tears down whatever was made. */
int switch_p_job_init(stepd_step_rec_t *step)
{
    return swv_stepd_init(step);
}

/* After the step's processes are gone: destroy its services. */
int switch_p_job_postfini(stepd_step_rec_t *step)
{
    return swv_stepd_postfini(step);
}

/* The environment was set in the step's env array at job_init, which
 * every task copies; a step on its job's VNIs alone says so here, in the
 * task of rank 0, whose stderr is the user's by now. */
int switch_p_job_attach(struct swv_step *stepinfo,
                        char ***env,
                        uint32_t nodeid,
                        uint32_t procid,
                        uint32_t nnodes,
                        uint32_t nprocs,
                        uint32_t rank)
{
    (void)env;
    (void)nodeid;
    (void)procid;
    (void)nnodes;
    (void)nprocs;
    return swv_step_attach(stepinfo, rank);
}

/* A step record ended (slurmctld, or the job's stepmgr). */
int switch_p_job_step_complete(struct swv_step *stepinfo, char *nodelist)
{
    (void)nodelist;
    return swv_step_complete(stepinfo);
}
