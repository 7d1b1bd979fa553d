/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib_spank_slurm: what differs in <slurm/spank.h> and <slurm/slurm.h>
 * between the Slurm releases vnib_spank.so is built for (22.05 to 26.05).
 *
 * The SPANK interface itself did not change in a way the plugin uses;
 * two things around it did:
 *
 *  - 23.11 made hostlist_t the structure itself (it was a pointer to
 *    it), so a handle is now hostlist_t *: vnib_hostlist is the handle
 *    under either release.
 *  - 25.05 drains the node when a required plugin's slurm_spank_init
 *    fails, unless the plugin says otherwise.  This plugin fails there
 *    only on a bad plugstack.conf line, which is the job's problem to
 *    report, not the node's: slurm_spank_init_failure_mode says so.  It
 *    is an enum value, so only the version number can tell whether it
 *    exists.
 */
#ifndef VNIB_SPANK_SLURM_H
#define VNIB_SPANK_SLURM_H

#include <slurm/slurm.h>
#include <slurm/spank.h>

#ifndef SLURM_VERSION_NUM
#error "<slurm/slurm.h> defines no SLURM_VERSION_NUM: not a Slurm header"
#endif

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef hostlist_t *vnib_hostlist;
#else
typedef hostlist_t vnib_hostlist;
#endif

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
#define VNIB_SPANK_FAILURE_MODE 1
#endif

#endif /* !VNIB_SPANK_SLURM_H */
