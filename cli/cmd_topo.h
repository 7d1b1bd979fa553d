/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl topology: Slurm's topology.conf and the switches a job spans
 * (cli/cmd_topo.c).
 */
#ifndef VNIB_CLI_CMD_TOPO_H
#define VNIB_CLI_CMD_TOPO_H

#include "cli/opts.h"

/* The commands, ending with a NULL name. */
extern const struct opts_command cmd_topo_commands[];

#endif /* !VNIB_CLI_CMD_TOPO_H */
