/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_plugin: switch/vnib's logic, once for every Slurm release.
 *
 * The entry points Slurm looks up are in swv_iface22.c, swv_iface24.c or
 * swv_iface25.c (one per switch interface; swv_slurm.h says which is
 * built); each only adapts its release's names and signatures and calls
 * these.  Here is what the plugin does: in slurmctld (or a job's stepmgr)
 * reserve and release at the broker, in slurmstepd set up and tear down
 * a step's services through the agent, and in between carry the step's
 * reservation ids (swv_jobinfo.h).
 *
 * The plugin keeps no state of its own that a restart could lose: every
 * reservation lives in the broker.  The settings parsed from
 * SwitchParameters at init and the free count of slurmctld (swv_free.h)
 * are its only globals, as the plugin interface leaves no other room.
 */
#ifndef SWV_PLUGIN_H
#define SWV_PLUGIN_H

#include "swv_slurm.h"

int swv_plugin_init(void);
void swv_plugin_fini(void);

/* A step's data: new (for job_id.step_id), copied, freed (NULL ok). */
struct swv_step *swv_step_new(uint32_t job_id, uint32_t step_id);
struct swv_step *swv_step_dup(const struct swv_step *src);
void swv_step_free(struct swv_step *si);

/* One length-prefixed blob: empty for no step data, else
 * swv_jobinfo_encode's bytes (36 without a lease, the lease's 40 more
 * with one); unpack is strict (SLURM_ERROR on anything else). */
void swv_step_pack(const struct swv_step *si, buf_t *buffer);
int swv_step_unpack(struct swv_step **si, buf_t *buffer);

/* Reserve step_ptr at the broker into si (slurmctld, or the job's
 * stepmgr with the job's data jd, which may be NULL).  SLURM_SUCCESS or
 * SLURM_ERROR with Slurm's errno set. */
int swv_step_build(struct swv_step *si,
                   step_record_t *step_ptr,
                   const char *step_nodes,
                   const void *jd);

/* A step record ended: release its step reservation. */
int swv_step_complete(const struct swv_step *si);

/* slurmctld is about to start job_ptr.  test_only (25.11+): may it start
 * now, from the free count in memory (the first question of a fresh
 * slurmctld waits, at most 2 s, for the count's first poll);
 * SLURM_ERROR sets its wait reason.  Otherwise the job claims its VNIs
 * in that count and, for an enable_stepmgr job, is reserved, its job
 * token kept in job_ptr->switch_jobinfo for its stepmgr. */
int swv_job_start(job_record_t *job_ptr, bool test_only);

/* The job ended (slurmctld): release it, or spool the release. */
void swv_job_complete(uint32_t job_id);

/* The job-level data (24.05+): packed with the job record, unpacked in
 * slurmctld's recovery and in the stepmgr, freed. */
void swv_jobdata_pack(const void *jd, buf_t *buffer);
int swv_jobdata_unpack(void **jd, buf_t *buffer);
void swv_jobdata_free(void *jd);

/* slurmstepd: create the step's services and set its environment (at
 * job_init, once the step's process container exists); destroy them
 * after its processes are gone. */
int swv_stepd_init(stepd_step_rec_t *step);
int swv_stepd_postfini(stepd_step_rec_t *step);

/* What a step's tasks see of a step that runs on its job's VNIs alone
 * (its own could not be had, vnib_step_fallback=job): this name, "job",
 * in their environment (set at job_init), and one line on the stderr of
 * the task of rank 0, from switch_p_job_attach in the task before its
 * exec (then the user's stderr). */
#define SWV_FALLBACK_ENV "VNIB_STEP_FALLBACK"
int swv_step_attach(const struct swv_step *si, uint32_t rank);

#endif /* !SWV_PLUGIN_H */
