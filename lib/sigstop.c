/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemons' stop signals: blocked before any thread starts, then taken
 * with sigwait() in the main thread (see vnib/sigstop.h).
 */
#include "vnib/sigstop.h"

#include <pthread.h>
#include <signal.h>

#include "vnib/logger.h"

void sigstop_block(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int sigstop_wait(const sigset_t *set, struct logger *log, const char *hup_note)
{
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            if (hup_note)
                logger_printf(log, LOG_NOTICE, NULL, "%s", hup_note);
            continue;
        }
        logger_printf(log,
                      LOG_NOTICE,
                      NULL,
                      "%s: shutting down",
                      sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return sig;
    }
}
