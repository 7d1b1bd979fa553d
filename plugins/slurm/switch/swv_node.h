/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_node: switch/vnib's node side, in slurmstepd.
 *
 * Before a step's tasks start (switch_p_job_init, as root) the node
 * creates the step's CXI services and gets the task environment; after
 * they are gone (switch_p_job_postfini) it destroys the services and
 * reports, or spools the report when the broker is unreachable.  Both
 * are the agent's own code, called in-process (agent/stepapi.h).  The
 * step's VNIs come from the step's lease, which travelled with it and
 * which the agent verifies with the broker's public keys and checks
 * against this job, step, node and the owner uid of slurmstepd's step
 * record (never the job's environment); without a lease (a broker that
 * issues none, vnib_lease=off), or when the lease is refused, from the
 * broker, with the node's own token.
 */
#ifndef SWV_NODE_H
#define SWV_NODE_H

#include "swv_jobinfo.h"
#include "swv_opts.h"
#include "vnib/error.h"

/* Set up the step of info on node (the Slurm node name, for "%n" in
 * vnib_agent_config).  Returns 0 with *envp the task environment
 * ("NAME=value", NULL-terminated; free with swv_node_env_free), or -1
 * with errno and errp set.  After -1, *unisolated says whether the step
 * may still run, without isolation (vnib_outage=open and the controller
 * or this node could not reach the broker), or must fail (0).  warnp
 * receives what the caller should log even on success (a lease refused,
 * the broker asked instead), else stays empty.
 */
int swv_node_setup(const struct swv_config *cfg,
                   const char *node,
                   const struct swv_jobinfo *info,
                   long uid,
                   long ncores,
                   char ***envp,
                   int *unisolated,
                   vnib_error_t *warnp,
                   vnib_error_t *errp);

/* Destroy the step's services on node, at once, and report destroyed
 * (or failed, naming what is left) from a thread of this process, which
 * slurmstepd's exit waits for; a report the broker does not take goes
 * into the agent's spool (log says so; the flush timer sends it).  0, or
 * -1 with errp (a service stayed busy: its VNIs stay quarantined).
 */
int swv_node_teardown(const struct swv_config *cfg,
                      const char *node,
                      const struct swv_jobinfo *info,
                      swv_log_fn *log,
                      vnib_error_t *errp);

void swv_node_env_free(char **env);

/* Wait for the report swv_node_teardown left to its thread (slurmstepd's
 * end: the switch plugin unloads, and the thread logs through it).  Also
 * run at exit. */
void swv_node_stop(void);

#endif /* !SWV_NODE_H */
