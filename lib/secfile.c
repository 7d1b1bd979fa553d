/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Credential files: permission checks and wiped buffers (see secfile.h).
 *
 * Like munge's path checks, the rule is strict on purpose: a key that
 * another local user could read is not a secret, and starting anyway would
 * hide the problem until it is exploited.  The three readers differ only
 * in the rule applied to the open descriptor (enum rule).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/secfile.h"

static int read_fd(int fd,
                   const char *path,
                   size_t size,
                   char **bufp,
                   size_t *lenp,
                   vnib_error_t *errp)
{
    char *buf = malloc(size + 1);
    size_t len = 0;

    if (!buf)
        return errprintf(errp, "%s: out of memory", path);
    while (len < size) {
        ssize_t n = read(fd, buf + len, size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            secfile_free(buf, size + 1);
            errno = e;
            return errprintf(errp, "%s: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *bufp = buf;
    *lenp = len;
    return 0;
}

/* What read_checked requires of the file beyond being a regular one. */
enum rule {
    RULE_PUBLIC, /* nothing more (a certificate) */
    RULE_SECRET, /* strict mode; owner the euid or root, unless euid is 0 */
    RULE_OWNED,  /* strict mode; owner the euid or root, for root too */
};

static int read_checked(const char *path,
                        enum rule rule,
                        char **bufp,
                        size_t *lenp,
                        vnib_error_t *errp)
{
    bool secret = rule != RULE_PUBLIC;
    struct stat st;
    int fd = -1;
    int rc = -1;

    /* O_NONBLOCK: a FIFO (or a device) at the path must not hang the
     * open() until a writer comes; fstat() then refuses it.  Symbolic
     * links are followed on purpose (secret mounts are often links): the
     * checks below are made on the file opened, not on the name.
     */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(fd, &st) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EPERM;
        errprintf(errp, "%s: not a regular file", path);
        goto done;
    }
    if (secret && (st.st_mode & 077) != 0) {
        errno = EPERM;
        errprintf(errp,
                  "%s: mode %04o is unsafe: a credential file must not be "
                  "accessible by group or others (chmod 600)",
                  path,
                  (unsigned)(st.st_mode & 07777));
        goto done;
    }
    /* Another owner is refused, since that user could change or swap the
     * file.  RULE_SECRET spares root: root reads any file anyway, and
     * refusing would only stop vnibctl minting node tokens from a
     * node.key given to the broker's user, as the guide says to.  A
     * daemon's own credentials (RULE_OWNED) have no such exemption: a
     * broker run as root must not take a key that another user could
     * have written.  The mode rule above holds for root either way.
     */
    if (secret && st.st_uid != geteuid() && st.st_uid != 0
        && (rule == RULE_OWNED || geteuid() != 0)) {
        errno = EPERM;
        errprintf(errp,
                  "%s: owned by uid %u: a credential file must belong to "
                  "this user (uid %u) or root",
                  path,
                  (unsigned)st.st_uid,
                  (unsigned)geteuid());
        goto done;
    }
    if ((size_t)st.st_size > SECFILE_MAX_SIZE) {
        errno = EFBIG;
        errprintf(errp, "%s: larger than %u bytes", path, SECFILE_MAX_SIZE);
        goto done;
    }
    rc = read_fd(fd, path, (size_t)st.st_size, bufp, lenp, errp);
done:
    if (fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return rc;
}

int secfile_read(const char *path,
                 char **bufp,
                 size_t *lenp,
                 vnib_error_t *errp)
{
    return read_checked(path, RULE_SECRET, bufp, lenp, errp);
}

int secfile_read_owned(const char *path,
                       char **bufp,
                       size_t *lenp,
                       vnib_error_t *errp)
{
    return read_checked(path, RULE_OWNED, bufp, lenp, errp);
}

int secfile_read_public(const char *path,
                        char **bufp,
                        size_t *lenp,
                        vnib_error_t *errp)
{
    return read_checked(path, RULE_PUBLIC, bufp, lenp, errp);
}

void secfile_free(char *buf, size_t len)
{
    int saved_errno = errno;
    if (buf) {
        vnib_memburn(buf, len);
        free(buf);
    }
    errno = saved_errno;
}
