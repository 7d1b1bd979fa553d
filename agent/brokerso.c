/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading vnib-agent-broker.so (see brokerso.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/trustload.h"
#include "agent/brokerso.h"

/* Where the object may be, from the program's folder. */
static const char *const places[] = {"", "/../lib/vnibroker"};

/* The program's folder into dir. */
static int program_dir(char *dir, size_t size, vnib_error_t *errp)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    char *slash;

    if (n < 0)
        return errprintf(errp, "/proc/self/exe: %s", strerror(errno));
    dir[n] = '\0';
    if (!(slash = strrchr(dir, '/'))) {
        errno = ENOENT;
        return errprintf(errp, "/proc/self/exe: no folder in '%s'", dir);
    }
    *slash = '\0';
    return 0;
}

/* The object, loaded (a second load is the first's; it is never
 * unloaded: the program is short-lived). */
static void *load(vnib_error_t *errp)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    struct stat st;

    if (program_dir(dir, sizeof(dir), errp) < 0)
        return NULL;
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        snprintf(path, sizeof(path), "%s%s/%s", dir, places[i], BROKERSO_NAME);
        if (stat(path, &st) < 0)
            continue;
        return trustload_open(path, errp);
    }
    errno = ENOENT;
    errprintf(errp,
              "%s: not in %s nor in %s/../lib/vnibroker (the agent's "
              "client of the broker)",
              BROKERSO_NAME,
              dir,
              dir);
    return NULL;
}

int brokerso_open(const char *url,
                  const char *token,
                  const char *cacert,
                  struct broker_conn *c,
                  vnib_error_t *errp)
{
    void *h = load(errp);
    broker_open_fn *open_fn;

    *c = (struct broker_conn){NULL, NULL, NULL, NULL};
    if (!h)
        return -1;
    *(void **)&open_fn = dlsym(h, BROKER_OPEN_SYMBOL);
    if (!open_fn) {
        errno = ELIBBAD;
        return errprintf(
            errp, "%s: no %s in it", BROKERSO_NAME, BROKER_OPEN_SYMBOL);
    }
    return open_fn(url, token, cacert, c, errp);
}
