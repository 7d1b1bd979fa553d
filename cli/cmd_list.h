/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's listings: list and events (cli/cmd_list.c). */
#ifndef VNIB_CLI_CMD_LIST_H
#define VNIB_CLI_CMD_LIST_H

#include "cli/opts.h"

/* The commands, ending with a NULL name. */
extern const struct opts_command cmd_list_commands[];

#endif /* !VNIB_CLI_CMD_LIST_H */
