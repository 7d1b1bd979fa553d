/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's views of the broker's state: pool, vni and node
 * (cli/cmd_admin.c).
 */
#ifndef VNIB_CLI_CMD_ADMIN_H
#define VNIB_CLI_CMD_ADMIN_H

#include "cli/opts.h"

/* The commands, ending with a NULL name. */
extern const struct opts_command cmd_admin_commands[];

#endif /* !VNIB_CLI_CMD_ADMIN_H */
