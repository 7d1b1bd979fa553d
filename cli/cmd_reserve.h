/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's commands on one job's reservation: reserve, release, show
 * and report (cli/cmd_reserve.c).
 */
#ifndef VNIB_CLI_CMD_RESERVE_H
#define VNIB_CLI_CMD_RESERVE_H

#include "cli/opts.h"

/* The commands, ending with a NULL name. */
extern const struct opts_command cmd_reserve_commands[];

#endif /* !VNIB_CLI_CMD_RESERVE_H */
