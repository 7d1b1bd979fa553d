/* SPDX-License-Identifier: GPL-2.0-or-later */
/* switch/noop: a Slurm switch plugin that does nothing, for the bench
 * only (tests/bench/slurm-start.sh): loaded from a folder of its own as
 * switch_vnib.so is, it is the floor of what any out-of-tree switch
 * plugin costs a job's start, so that switch/vnib's figure is its own.
 *
 * Slurm looks its entry points up by name and calls them through its own
 * table; a plugin must define every name its release asks for, and may
 * define more.  So every entry point of Slurm 22.05 to 26.05 is here, one
 * body per kind of answer: success, nothing, false, and no channel.
 * Only the plugin's version (the release's, which Slurm's loader checks)
 * comes from Slurm's headers.
 */
#include <stdbool.h>
#include <stdint.h>

#include <slurm/slurm_version.h>

const char plugin_name[] = "switch noop plugin (bench)";
const char plugin_type[] = "switch/noop";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;
const uint32_t plugin_id = 0x4e4f4f50u; /* "NOOP" */

int init(void);
int fini(void);

int init(void)
{
    return 0;
}

int fini(void)
{
    return 0;
}

static int ok(void)
{
    return 0;
}

static void nothing(void)
{
}

static bool no(void)
{
    return false;
}

static uint32_t no_channel(void)
{
    return 0xfffffffeu; /* Slurm's NO_VAL */
}

#define OK(name) int name(void) __attribute__((alias("ok")))
#define NOTHING(name) void name(void) __attribute__((alias("nothing")))

/* every release */
OK(switch_p_job_preinit);
OK(switch_p_job_init);
OK(switch_p_job_postfini);
OK(switch_p_job_attach);
OK(switch_p_job_step_complete);
OK(switch_p_fs_init);
NOTHING(switch_p_job_complete);
/* 22.05 to 23.11 */
OK(switch_p_reconfig);
OK(switch_p_libstate_save);
OK(switch_p_libstate_restore);
OK(switch_p_libstate_clear);
OK(switch_p_alloc_jobinfo);
OK(switch_p_build_jobinfo);
OK(switch_p_duplicate_jobinfo);
NOTHING(switch_p_free_jobinfo);
OK(switch_p_get_jobinfo);
OK(switch_p_job_suspend_test);
NOTHING(switch_p_job_suspend_info_get);
NOTHING(switch_p_job_suspend_info_pack);
OK(switch_p_job_suspend_info_unpack);
NOTHING(switch_p_job_suspend_info_free);
OK(switch_p_job_suspend);
OK(switch_p_job_resume);
OK(switch_p_job_fini);
OK(switch_p_job_step_allocated);
OK(switch_p_job_step_pre_suspend);
OK(switch_p_job_step_post_suspend);
OK(switch_p_job_step_pre_resume);
OK(switch_p_job_step_post_resume);
/* 22.05 packs a step's data here, 24.05 to 25.05 a job's */
OK(switch_p_pack_jobinfo);
OK(switch_p_unpack_jobinfo);
/* 24.05 and later */
OK(switch_p_save);
OK(switch_p_restore);
OK(switch_p_build_stepinfo);
NOTHING(switch_p_duplicate_stepinfo);
NOTHING(switch_p_free_stepinfo);
NOTHING(switch_p_pack_stepinfo);
OK(switch_p_unpack_stepinfo);
NOTHING(switch_p_extern_stepinfo);
NOTHING(switch_p_extern_step_fini);
/* 25.11 and later */
NOTHING(switch_p_jobinfo_pack);
OK(switch_p_jobinfo_unpack);
NOTHING(switch_p_jobinfo_free);
OK(switch_p_stepinfo_build);
NOTHING(switch_p_stepinfo_duplicate);
NOTHING(switch_p_stepinfo_free);
NOTHING(switch_p_stepinfo_pack);
OK(switch_p_stepinfo_unpack);
OK(switch_p_job_start); /* 24.05's returns nothing: Slurm ignores it */
NOTHING(switch_p_stepmgr_init);
NOTHING(switch_p_stepmgr_fini);
bool switch_p_setup_special_steps(void) __attribute__((alias("no")));
uint32_t switch_p_job_channel(void) __attribute__((alias("no_channel")));
