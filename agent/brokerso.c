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

/* A library root may load: a regular file of root or the effective uid
 * that group and others cannot write. */
static int trusted(const char *path, const struct stat *st, vnib_error_t *errp)
{
    if (!S_ISREG(st->st_mode)) {
        errno = EPERM;
        return errprintf(errp, "%s: not a regular file", path);
    }
    if ((st->st_uid != 0 && st->st_uid != geteuid())
        || (st->st_mode & (S_IWGRP | S_IWOTH))) {
        errno = EPERM;
        return errprintf(errp,
                         "%s: refused: owned by uid %ld, mode %04o (it must "
                         "be root's, and not writable by group or others)",
                         path,
                         (long)st->st_uid,
                         (unsigned)(st->st_mode & 07777));
    }
    return 0;
}

/* The object, loaded (a second load is the first's; it is never
 * unloaded: the program is short-lived). */
static void *load(vnib_error_t *errp)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    struct stat st;
    void *handle;

    if (program_dir(dir, sizeof(dir), errp) < 0)
        return NULL;
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        snprintf(path, sizeof(path), "%s%s/%s", dir, places[i], BROKERSO_NAME);
        if (stat(path, &st) < 0)
            continue;
        if (trusted(path, &st, errp) < 0)
            return NULL;
        if (!(handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
            errno = ELIBBAD;
            errprintf(errp, "%s", dlerror());
        }
        return handle;
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
