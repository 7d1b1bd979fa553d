/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job environment on one node: SLINGSHOT_* and FI_CXI_*.
 *
 * Every variable the agent manages is either set or explicitly cleared,
 * so values from the submitting shell never leak into a job: a job with no
 * reservation, or with no VNIs, gets every one of them unset.  The values
 * follow the formats libfabric and Cray MPICH read:
 *
 *   SLINGSHOT_VNIS      1024,1025          the reservation's VNIs, in order
 *   SLINGSHOT_DEVICES   cxi0,cxi1          every NIC of this node
 *   SLINGSHOT_SVC_IDS   3,3,4,3            aligned with the devices; -1
 *                                          where no service was found
 *   SLINGSHOT_TCS       0xa                the traffic-class mask
 *   FI_CXI_COLL_* and FI_CXI_HWCOLL_*      from the broker, only when the
 *                                          job has hardware collectives
 *
 * FI_CXI_COLL_JOB_STEP_ID is per step: jobenv_build always clears it, and
 * the scheduler's per-step hook (the SPANK plugin) sets it, or, for one
 * step's own environment (`--step`), jobenv_set_step.
 *
 * Output formats:
 *   export            `export NAME=value` (shell-quoted when needed) and
 *                     `unset NAME` lines, for eval in a shell
 *   slurm-taskprolog  `export NAME=value` and `unset NAME` lines exactly as
 *                     Slurm's TaskProlog protocol reads them (no quoting)
 *   json              {"NAME": "value" or null, ...}
 * The per-job file the prolog leaves for the task hooks is in the
 * slurm-taskprolog format; jobenv_parse reads it back.
 */
#ifndef VNIB_AGENT_JOBENV_H
#define VNIB_AGENT_JOBENV_H

#include <stdio.h>

#include <jansson.h>

#include "agent/nic.h"
#include "vnib/error.h"

#define JOBENV_COUNT 10

struct jobenv {
    char *value[JOBENV_COUNT]; /* NULL: cleared */
};

/* The name of variable i (0 <= i < JOBENV_COUNT). */
const char *jobenv_name(int i);

/* Build the environment from a reservation (NULL: none) and this node's
 * NICs with the id of the job's service on each (-1: none).  Returns 0 or
 * -1 with errno and errp (ENOMEM, or EINVAL for a value that cannot be
 * passed on: a newline or NUL in a broker-supplied value).
 */
int jobenv_build(struct jobenv *env,
                 json_t *reservation,
                 const struct nic_info *devs,
                 const int *svc_ids,
                 int ndev,
                 vnib_error_t *errp);

/* One step's environment: FI_CXI_COLL_JOB_STEP_ID := step_id when the job
 * has hardware collectives (FI_CXI_COLL_JOB_ID is set), as Slurm's own
 * plugin does.  Returns 0, or -1 with errno (ENOMEM, or EINVAL for a step
 * id holding a line break).
 */
int jobenv_set_step(struct jobenv *env,
                    const char *step_id,
                    vnib_error_t *errp);

/* Write env in format ("export", "slurm-taskprolog" or "json").  Returns 0
 * or -1 with errno (EINVAL for an unknown format, EIO on a write error).
 */
int jobenv_write(const struct jobenv *env,
                 const char *format,
                 FILE *out,
                 vnib_error_t *errp);

/* Read text in the slurm-taskprolog format (name: for messages, as
 * "NAME:LINE: ...").  Returns 0 or -1 with errno EINVAL.
 */
int jobenv_parse(struct jobenv *env,
                 const char *text,
                 const char *name,
                 vnib_error_t *errp);

/* True when a format name is known. */
bool jobenv_format_valid(const char *format);

void jobenv_clear(struct jobenv *env);

#endif /* !VNIB_AGENT_JOBENV_H */
