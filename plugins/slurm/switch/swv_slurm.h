/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_slurm: what differs between the Slurm releases switch/vnib builds
 * for, in one place.
 *
 * A switch plugin is compiled against the source tree of the Slurm that
 * loads it, and the switch interface changed three times between 22.05
 * and 26.05 (plugins/slurm/README.md, "Slurm versions").  The plugin's
 * logic (swv_plugin.c) is written once against what stayed the same
 * (job_record_t, step_record_t, stepd_step_rec_t and their fields); this
 * header names what did not, and SWV_IFACE says which entry points are
 * built:
 *
 *   SWV_IFACE 22  22.05 to 23.11  swv_iface22.c  *_jobinfo, suspend calls
 *   SWV_IFACE 24  24.05 to 25.05  swv_iface24.c  *_stepinfo, job-level
 *                                                pack/unpack, job_start
 *   SWV_IFACE 25  25.11 and later swv_iface24.c  what 24.05+ shares, and
 *                                 swv_iface25.c  jobinfo_ and stepinfo_,
 *                                                job_start(test_only),
 *                                                stepmgr_init/fini
 *
 * and swv_iface.c those every release looks up under one name.  The
 * symbols exported are the union of those the releases of an interface
 * look up: the loader resolves only the names its own table lists, so a
 * symbol a release does not know is never called, and none it asks for
 * is missing.
 *
 * Slurm opens plugins with lazy binding, so a Slurm function the plugin
 * calls that its release no longer has (slurm_seterrno went in 24.05)
 * kills the daemon only when the call is first made.  The plugin sets
 * errno itself, and tests/integration/slurm.sh checks every undefined
 * symbol of both plugins against the release's libraries.
 */
#ifndef SWV_SLURM_H
#define SWV_SLURM_H

#include "config.h"

#include "src/common/slurm_xlator.h"

#include "src/common/env.h"
#include "src/common/log.h"
#include "src/common/pack.h"
#include "src/common/xmalloc.h"

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 2, 0)
#include "src/common/switch.h"
#else
#include "src/interfaces/switch.h"
#endif

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
#include "src/common/run_in_daemon.h"
#endif

#include "swv_jobinfo.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
#define SWV_IFACE 25
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
#define SWV_IFACE 24
#else
#define SWV_IFACE 22
#endif

/* What a step carries, under the name its release gives the opaque type
 * (switch_jobinfo_t until 23.11, switch_stepinfo_t since 24.05, which
 * Slurm no longer declares in a header). */
#if SWV_IFACE == 22
#define swv_step switch_jobinfo
#else
#define swv_step switch_stepinfo
typedef struct switch_stepinfo switch_stepinfo_t;
#endif
struct swv_step {
    struct swv_jobinfo info;
};

/* The plugin data slurmstepd holds for its step (renamed in 24.05). */
#if SWV_IFACE == 22
#define SWV_STEPD_DATA(step) ((step)->switch_job)
#else
#define SWV_STEPD_DATA(step) ((step)->switch_step)
#endif

/* The errno of a step refused for want of VNIs, so that srun retries
 * it: ESLURM_INTERCONNECT_BUSY is gone from 25.11 on. */
#if SWV_IFACE == 25
#define SWV_ERR_BUSY ESLURM_INTERCONNECT_FAILURE
#else
#define SWV_ERR_BUSY ESLURM_INTERCONNECT_BUSY
#endif

/* True in the program that creates and ends steps: slurmctld, or, for
 * a job with enable_stepmgr (24.05+), the stepmgr slurmstepd on its
 * batch host. */
#if SWV_IFACE == 25
#define swv_runs_steps() (running_in_slurmctld() || running_with_stepmgr())
#elif SWV_IFACE == 24
#define swv_runs_steps() (running_in_slurmctld() || running_in_slurmstepd())
#else
#define swv_runs_steps() running_in_slurmctld()
#endif

#endif /* !SWV_SLURM_H */
