/* SPDX-License-Identifier: GPL-2.0-or-later */
/* This node's core count from Slurm's prolog environment.
 *
 * Slurm gives the job's CPUs per node as SLURM_JOB_CPUS_PER_NODE, a
 * run-length list in node-list order ("72(x2),36": 72 on the first two
 * nodes, 36 on the third), beside SLURM_JOB_NODELIST, a compressed
 * hostlist ("n[1-3]").  The agent sizes a CXI service by this node's
 * entry.
 */
#ifndef VNIB_AGENT_SLURMCPUS_H
#define VNIB_AGENT_SLURMCPUS_H

#include "vnib/error.h"

/* *ncoresp := the CPUs of node in the job.  Returns 0, or -1 with errno
 * EINVAL (malformed list, node not in the node list, lists of different
 * lengths) and errp.
 */
int slurmcpus_for_node(const char *cpus_per_node,
                       const char *nodelist,
                       const char *node,
                       unsigned *ncoresp,
                       vnib_error_t *errp);

#endif /* !VNIB_AGENT_SLURMCPUS_H */
