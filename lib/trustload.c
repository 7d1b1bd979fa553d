/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading a trusted shared object (see trustload.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/trustload.h"

int trustload_check(const char *path, const struct stat *st, vnib_error_t *errp)
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

void *trustload_open(const char *path, vnib_error_t *errp)
{
    struct stat st;
    void *handle;

    if (stat(path, &st) < 0) {
        int e = errno;
        errprintf(errp, "%s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    if (trustload_check(path, &st, errp) < 0)
        return NULL;
    if (!(handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        errprintf(errp, "%s", why ? why : path);
        errno = ELIBBAD;
    }
    return handle;
}
