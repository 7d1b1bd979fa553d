/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's local look at a lease: lease show (cli/cmd_lease.c). */
#ifndef VNIB_CLI_CMD_LEASE_H
#define VNIB_CLI_CMD_LEASE_H

#include "cli/opts.h"

/* The commands, ending with a NULL name. */
extern const struct opts_command cmd_lease_commands[];

#endif /* !VNIB_CLI_CMD_LEASE_H */
