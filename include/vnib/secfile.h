/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading credential files safely.
 *
 * TLS keys, token files and shared keys must be readable by their owner
 * only.  secfile_read() opens the file, checks the open descriptor (so the
 * check and the read see the same file), refuses group or other access and
 * foreign owners (except to root), and returns the contents.
 * secfile_read_owned() refuses foreign owners to root too: for a daemon's
 * own credentials (vnibrokerd's), where root is no reason to trust a file
 * another user could have written.  Callers wipe the buffer with
 * secfile_free() when done.
 */
#ifndef VNIB_SECFILE_H
#define VNIB_SECFILE_H

#include <stddef.h>

#include "vnib/error.h"

/* Largest credential file read (a certificate chain fits comfortably). */
#define SECFILE_MAX_SIZE (1024u * 1024)

/* Read a whole secret file.  Refused (EPERM) when it is not a regular
 * file, when its mode grants any access to group or others, or when it is
 * owned by neither the effective user nor root (root itself, euid 0, may
 * read a strict file of any owner).  On success *bufp holds
 * *lenp bytes followed by a NUL.  Returns 0 or -1 with errno and errp set.
 */
int secfile_read(const char *path,
                 char **bufp,
                 size_t *lenp,
                 vnib_error_t *errp);

/* As secfile_read(), but the owner rule holds whatever the effective
 * user: refused (EPERM) when the file belongs to neither the effective
 * user nor root, also when the effective user is root.  The message names
 * the path and the owner's uid.  For the files a service reads as its own
 * credentials (the broker's tokens file, node keys, TLS key, FM secrets),
 * not for tools that root runs on files given to other users.
 */
int secfile_read_owned(const char *path,
                       char **bufp,
                       size_t *lenp,
                       vnib_error_t *errp);

/* Read a public file (certificate) with no permission requirement beyond
 * being a regular file.  Same conventions as secfile_read().
 */
int secfile_read_public(const char *path,
                        char **bufp,
                        size_t *lenp,
                        vnib_error_t *errp);

/* Wipe and free a buffer returned above (NULL accepted). */
void secfile_free(char *buf, size_t len);

#endif /* !VNIB_SECFILE_H */
