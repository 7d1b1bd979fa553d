/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's state file on disk (see fmsim_file.h): read with the checks
 * that a file of session tokens deserves, written atomically.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmsim/fmsim_file.h"

#define STATE_FILE_MAX ((off_t)1024 * 1024 * 1024)

json_t *fmsim_file_read(const char *path, vnib_error_t *errp)
{
    json_t *root = NULL;
    json_error_t jerr;
    struct stat st;
    int fd = -1;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)) < 0) {
        if (errno == ENOENT)
            return NULL;
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(fd, &st) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0
        || (st.st_uid != geteuid() && st.st_uid != 0)) {
        errno = EPERM;
        errprintf(errp,
                  "%s: must be a regular file of ours with mode 0600 (it "
                  "holds session tokens); mode is %04o",
                  path,
                  (unsigned)(st.st_mode & 07777));
        goto done;
    }
    if (st.st_size > STATE_FILE_MAX) {
        errno = EFBIG;
        errprintf(errp, "%s: larger than 1 GiB", path);
        goto done;
    }
    if (!(root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr))) {
        errno = EINVAL;
        errprintf(errp, "%s: line %d: %s", path, jerr.line, jerr.text);
        goto done;
    }
done:
    if (fd >= 0)
        close(fd);
    return root;
}

/* Write the state file atomically: temporary file, fsync, rename, and
 * fsync of the directory so that the rename itself is durable.
 */
int fmsim_file_write(const char *path, json_t *doc, struct logger *log)
{
    char *tmp = NULL, *dir = NULL;
    int fd = -1, dfd = -1;
    int rc = -1;
    const char *what = "out of memory";

    size_t len = strlen(path) + sizeof(".tmp");
    if (!(tmp = malloc(len)))
        goto done;
    snprintf(tmp, len, "%s.tmp", path);
    what = "cannot write";
    (void)unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        goto done;
    if (json_dumpfd(doc, fd, JSON_COMPACT) < 0 || write(fd, "\n", 1) != 1)
        goto done;
    what = "cannot sync";
    if (fsync(fd) < 0)
        goto done;
    what = "cannot close";
    if (close(fd) < 0) {
        fd = -1;
        goto done;
    }
    fd = -1;
    what = "cannot rename";
    if (rename(tmp, path) < 0)
        goto done;
    if (!(dir = strdup(path)))
        goto done;
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
        (void)fsync(dfd);
    rc = 0;
done:
    if (rc < 0)
        logger_printf(log,
                      LOG_ERR,
                      NULL,
                      "state: %s %s: %s (the change is kept in memory only)",
                      what,
                      path,
                      strerror(errno));
    if (fd >= 0) {
        close(fd);
        (void)unlink(tmp);
    }
    if (dfd >= 0)
        close(dfd);
    free(dir);
    free(tmp);
    return rc;
}
