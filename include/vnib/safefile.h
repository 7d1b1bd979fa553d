/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Files written whole, and private directories of durable records.
 *
 * safefile_write() replaces a file through a temporary name and rename(2),
 * so a reader never sees half of it; a durable write is on disk, file and
 * directory entry, before it returns (spools: a record the caller said it
 * kept must survive a crash).  safefile_private_dir() makes and checks a
 * directory whose files the caller later acts on with its credentials
 * (the node agent's report spool, the Flux jobtap plugin's release spool):
 * it must be the caller's and writable by nobody else.
 */
#ifndef VNIB_SAFEFILE_H
#define VNIB_SAFEFILE_H

#include <stdbool.h>
#include <sys/types.h>

#include "vnib/error.h"

/* Write text to path via path.tmp.PID, owned by uid (chowned when not the
 * effective user) with mode; when durable, fsync the file and its
 * directory.  Returns 0, or -1 with errno and errp set (the temporary file
 * removed).
 */
int safefile_write(const char *path,
                   const char *text,
                   uid_t uid,
                   mode_t mode,
                   bool durable,
                   vnib_error_t *errp);

/* Check dir: a directory (not a link) of the effective user that group
 * and others may not write.  With create, make it 0700 first when missing,
 * and its missing parents 0755.  what names it in messages ("the report
 * spool").  Returns 0, or -1 with errno (EPERM when refused) and errp.
 */
int safefile_private_dir(const char *dir,
                         bool create,
                         const char *what,
                         vnib_error_t *errp);

#endif /* !VNIB_SAFEFILE_H */
