/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `vnibctl token`: mint credentials locally, without a broker.
 *
 *   token new ROLE NAME             a named token and its tokens-file line
 *   token node NAME --key-file FILE the derived token of one node
 *   token key --out FILE            a new random node key (mode 0600)
 */
#ifndef VNIB_CLI_TOKENCMD_H
#define VNIB_CLI_TOKENCMD_H

#include <stdbool.h>

/* Run `token ...`; argv[0] is "token".  json selects JSON output (each
 * subcommand also accepts --json).  Returns an enum ctl_exit status.
 */
int tokencmd_run(int argc, char **argv, bool json);

#endif /* !VNIB_CLI_TOKENCMD_H */
