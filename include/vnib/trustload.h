/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading a shared object that a privileged program may trust.
 *
 * vnibroker's programs and plugins keep what few of their callers need
 * (the broker's client with libcurl, the Slurm switch plugin's helper) in
 * shared objects loaded when first needed.  The processes that load them
 * often run as root (vnib-agent, slurmstepd), so an object is loaded only
 * when it is a regular file owned by root or by the effective uid that
 * neither group nor others may write: anyone who could change it could
 * run code as the loader.
 */
#ifndef VNIB_TRUSTLOAD_H
#define VNIB_TRUSTLOAD_H

#include <sys/stat.h>

#include "vnib/error.h"

/* 0 when st (of path) is a file such an object may be, else -1 with
 * errno EPERM and errp naming path, its owner and its mode.
 */
int trustload_check(const char *path,
                    const struct stat *st,
                    vnib_error_t *errp);

/* dlopen path (RTLD_NOW | RTLD_LOCAL) once trustload_check accepts it.
 * The handle, or NULL with errno (ENOENT: no such file, EPERM: refused,
 * ELIBBAD: the loader's refusal, whose message errp keeps) and errp.
 */
void *trustload_open(const char *path, vnib_error_t *errp);

#endif /* !VNIB_TRUSTLOAD_H */
