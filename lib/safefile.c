/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Files written whole, and private directories of durable records: see
 * include/vnib/safefile.h.  Used by the node agent (its state and report
 * spool) and the Flux jobtap plugin (its release spool).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/safefile.h"

int safefile_write(const char *path,
                   const char *text,
                   uid_t uid,
                   mode_t mode,
                   bool durable,
                   vnib_error_t *errp)
{
    char tmp[4200];
    size_t len = strlen(text);
    int fd;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if ((fd = open(
             tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600))
        < 0)
        return errprintf(errp, "cannot create %s: %s", tmp, strerror(errno));
    if (write(fd, text, len) != (ssize_t)len
        || (uid != geteuid() && fchown(fd, uid, (gid_t)-1) < 0)
        || fchmod(fd, mode) < 0 || (durable && fsync(fd) < 0)) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        errno = saved;
        return errprintf(errp, "cannot write %s: %s", tmp, strerror(errno));
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return errprintf(
            errp, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    }
    if (durable) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) < 0) {
            int saved = errno;
            if (dfd >= 0)
                close(dfd);
            errno = saved;
            return errprintf(errp, "cannot sync %s: %s", dir, strerror(errno));
        }
        close(dfd);
    }
    return 0;
}

int safefile_private_dir(const char *dir,
                         bool create,
                         const char *what,
                         vnib_error_t *errp)
{
    struct stat st;

    if (create && mkdir(dir, 0700) < 0) {
        if (errno != ENOENT && errno != EEXIST)
            return errprintf(
                errp, "cannot create %s: %s", dir, strerror(errno));
        if (errno == ENOENT) {
            char path[4096];
            snprintf(path, sizeof(path), "%s", dir);
            for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                    return errprintf(
                        errp, "cannot create %s: %s", path, strerror(errno));
                *p = '/';
            }
            if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return errprintf(
                    errp, "cannot create %s: %s", dir, strerror(errno));
        }
    }
    if (lstat(dir, &st) < 0)
        return errprintf(errp, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
        errno = EPERM;
        return errprintf(errp,
                         "%s: refused: %s must be a directory of uid %ld "
                         "that only its owner may write",
                         dir,
                         what,
                         (long)geteuid());
    }
    return 0;
}
