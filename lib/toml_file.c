/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The TOML reader's files (see toml.h): a file read whole, with a size
 * limit, and for a root process's settings only if root (or the user
 * running it) could have written it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/toml.h"

/* A file that says what a root process loads or runs must be one only
 * root (or the user running it) could have written.
 */
static int check_trusted(const char *path,
                         const struct stat *st,
                         vnib_error_t *errp)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        errno = EPERM;
        return errprintf(errp,
                         "%s: refused: owned by uid %u, not by root or this "
                         "user (uid %u)",
                         path,
                         (unsigned)st->st_uid,
                         (unsigned)geteuid());
    }
    if (st->st_mode & 022) {
        errno = EPERM;
        return errprintf(errp,
                         "%s: refused: mode %04o lets group or others write "
                         "it (chmod go-w)",
                         path,
                         (unsigned)(st->st_mode & 07777));
    }
    return 0;
}

static json_t *parse_file(const char *path,
                          bool trusted,
                          json_t **linesp,
                          vnib_error_t *errp)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0, cap;
    int fd = -1, saved_errno;
    json_t *root = NULL;

    if (linesp)
        *linesp = NULL;
    /* O_NONBLOCK keeps open() from hanging on a FIFO; fstat() then
     * refuses anything that is not a regular file.
     */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0
        || fstat(fd, &st) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        errprintf(errp, "%s: not a regular file", path);
        goto done;
    }
    if (trusted && check_trusted(path, &st, errp) < 0)
        goto done;
    if (st.st_size > (off_t)TOML_MAX_FILE_SIZE) {
        errno = E2BIG;
        errprintf(
            errp, "%s: file is larger than %u bytes", path, TOML_MAX_FILE_SIZE);
        goto done;
    }
    /* One spare byte shows whether the file grew since fstat(). */
    cap = (size_t)st.st_size + 1;
    for (;;) {
        ssize_t n;

        if (!buf || len == cap) {
            char *nbuf;

            if (buf && cap > TOML_MAX_FILE_SIZE) {
                errno = E2BIG;
                errprintf(errp,
                          "%s: file is larger than %u bytes",
                          path,
                          TOML_MAX_FILE_SIZE);
                goto done;
            }
            /* The file grew after fstat(): read on, up to the limit. */
            if (buf)
                cap = cap * 2 > TOML_MAX_FILE_SIZE + 1 ? TOML_MAX_FILE_SIZE + 1
                                                       : cap * 2;
            if (!(nbuf = realloc(buf, cap))) {
                errno = ENOMEM;
                errprintf(errp, "%s: out of memory", path);
                goto done;
            }
            buf = nbuf;
        }
        if ((n = read(fd, buf + len, cap - len)) < 0) {
            if (errno == EINTR)
                continue;
            errprintf(errp, "%s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    root = toml_parse(path, buf, len, linesp, errp);
done:
    /* free() and close() must not clobber the errno being reported. */
    saved_errno = errno;
    free(buf);
    if (fd >= 0)
        close(fd);
    errno = saved_errno;
    return root;
}

json_t *toml_parse_file(const char *path, json_t **linesp, vnib_error_t *errp)
{
    return parse_file(path, false, linesp, errp);
}

json_t *toml_parse_trusted_file(const char *path,
                                json_t **linesp,
                                vnib_error_t *errp)
{
    return parse_file(path, true, linesp, errp);
}
