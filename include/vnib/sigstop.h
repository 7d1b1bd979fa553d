/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stop signals of the daemons (vnibrokerd, fmsim).
 *
 * SIGTERM, SIGINT and SIGHUP are blocked in the main thread before any
 * other thread exists, so every thread inherits the mask and the main
 * thread alone takes them, synchronously, with sigwait(): no handler runs
 * in an arbitrary thread.  SIGPIPE is ignored (a peer that hangs up is an
 * error return, not a signal).
 */
#ifndef VNIB_SIGSTOP_H
#define VNIB_SIGSTOP_H

#include <signal.h>

struct logger;

/* Fill set with SIGTERM, SIGINT and SIGHUP, block them in the calling
 * thread and ignore SIGPIPE.  Call before starting any thread.
 */
void sigstop_block(sigset_t *set);

/* Wait for SIGTERM or SIGINT in set (blocked by sigstop_block), log
 * "SIGTERM: shutting down" (or SIGINT) at LOG_NOTICE and return the
 * signal.  SIGHUP is passed over; with hup_note, it is logged first at
 * LOG_NOTICE.
 */
int sigstop_wait(const sigset_t *set, struct logger *log, const char *hup_note);

#endif /* !VNIB_SIGSTOP_H */
