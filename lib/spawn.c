/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running a helper program for a bounded time (see spawn.h).  The wait
 * polls (every 20 ms) rather than taking SIGCHLD, which belongs to the
 * process, not to a library.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vnib/spawn.h"

extern char **environ;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int spawn_run(char *const argv[],
              long timeout_s,
              int *statusp,
              bool *killedp,
              vnib_error_t *errp)
{
    posix_spawn_file_actions_t fa;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int status = 0;
    pid_t pid, w;

    *killedp = false;
    posix_spawn_file_actions_init(&fa);
    if (fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, fd, STDIN_FILENO);
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (fd >= 0)
        close(fd);
    if (e != 0) {
        errno = e;
        return errprintf(errp, "cannot run %s: %s", argv[0], strerror(e));
    }
    int64_t deadline = mono_ms() + timeout_s * 1000;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && mono_ms() < deadline) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        *killedp = true;
    }
    *statusp = status;
    return 0;
}
