/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running a helper program, without a shell, for a bounded time.
 *
 * For hooks an administrator configures (hooks.on_reservation_lost): the
 * program reads /dev/null, inherits the environment and the standard
 * output and error, and is killed when it outlives its time.
 */
#ifndef VNIB_SPAWN_H
#define VNIB_SPAWN_H

#include <stdbool.h>

#include "vnib/error.h"

/* Run argv[0] (looked up in PATH) with argv, NULL-terminated, and wait for
 * it at most timeout_s seconds; past that it is killed (SIGKILL) and
 * *killedp set.  Returns 0 with its wait status in *statusp (see
 * waitpid), or -1 with errno and errp set when it could not be started.
 */
int spawn_run(char *const argv[],
              long timeout_s,
              int *statusp,
              bool *killedp,
              vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SPAWN_H */
