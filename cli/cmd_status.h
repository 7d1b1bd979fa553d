/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's overview of the broker: status (cli/cmd_status.c). */
#ifndef VNIB_CLI_CMD_STATUS_H
#define VNIB_CLI_CMD_STATUS_H

#include "cli/opts.h"

/* The commands, ending with a NULL name. */
extern const struct opts_command cmd_status_commands[];

#endif /* !VNIB_CLI_CMD_STATUS_H */
