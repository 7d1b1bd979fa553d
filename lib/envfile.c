/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job environment file (envfile.h): the reserved names, the trusted
 * open of STATE_DIR/jobs/KEY.env and its parser, shared by the Slurm SPANK
 * plugin and the Flux shell plugin.
 *
 * Every check is made on open descriptors (fstat), so the file checked is
 * the file read; the directory is opened without following a link, and
 * the file relative to it (openat), also without.  The whole file is read
 * and parsed before a plugin applies any of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/envfile.h"

const char *const envfile_reserved_names[] = {
    "SLINGSHOT_VNIS",
    "SLINGSHOT_DEVICES",
    "SLINGSHOT_SVC_IDS",
    "SLINGSHOT_TCS",
    "FI_CXI_COLL_JOB_ID",
    "FI_CXI_COLL_JOB_STEP_ID",
    "FI_CXI_COLL_MCAST_TOKEN",
    "FI_CXI_COLL_FABRIC_MGR_URL",
    "FI_CXI_HWCOLL_ADDRS_PER_JOB",
    "FI_CXI_HWCOLL_MIN_NODES",
    NULL,
};

bool envfile_valid_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > ENVFILE_NAME_MAX)
        return false;
    if (!((name[0] >= 'A' && name[0] <= 'Z')
          || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

bool envfile_honoured_name(const char *name)
{
    return strncmp(name, "SLINGSHOT_", 10) == 0
           || strncmp(name, "FI_CXI_", 7) == 0;
}

bool envfile_reserved_name(const char *name)
{
    for (const char *const *r = envfile_reserved_names; *r; r++)
        if (strcmp(*r, name) == 0)
            return true;
    return false;
}

/* The agent's rule for a job's key, with the "+" of JOB+STEP. */
static bool valid_key(const char *key)
{
    size_t n = strlen(key);

    return n > 0 && n <= ENVFILE_KEY_MAX && key[0] != '.'
           && strspn(key,
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789._+-")
                  == n;
}

int envfile_expand_dir(const char *pattern,
                       const char *node,
                       char *out,
                       size_t size,
                       vnib_error_t *errp)
{
    size_t used = 0;

    if (pattern[0] != '/' || strlen(pattern) > ENVFILE_DIR_MAX) {
        errno = EINVAL;
        return errprintf(errp,
                         "state_dir must be an absolute path of at most %d "
                         "characters, not '%s'",
                         ENVFILE_DIR_MAX,
                         pattern);
    }
    if (strstr(pattern, "%n") && (!node || !node[0] || strchr(node, '/'))) {
        errno = EINVAL;
        return errprintf(errp,
                         "state_dir '%s' has %%n, but this node's name "
                         "('%s') cannot name a folder",
                         pattern,
                         node ? node : "");
    }
    for (const char *p = pattern; *p; p++) {
        const char *piece = p[0] == '%' && p[1] == 'n' ? node : NULL;
        size_t n = piece ? strlen(piece) : 1;
        if (used + n >= size) {
            errno = EINVAL;
            return errprintf(
                errp, "state_dir '%s' expands to a bad path", pattern);
        }
        memcpy(out + used, piece ? piece : p, n);
        used += n;
        p += piece ? 1 : 0;
    }
    out[used] = '\0';
    return 0;
}

/* check_dir: dfd is the jobs directory, dir_path its name.  Returns 0, or
 * -1 with errno and errp set.
 */
static int check_dir(int dfd, const char *dir_path, vnib_error_t *errp)
{
    struct stat st;

    if (fstat(dfd, &st) < 0)
        return errprintf(errp, "cannot stat %s: %s", dir_path, strerror(errno));
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        errno = EPERM;
        return errprintf(errp,
                         "refusing %s: it must belong to root and be writable "
                         "by no one else (uid %u, mode %04o)",
                         dir_path,
                         (unsigned)st.st_uid,
                         (unsigned)(st.st_mode & 07777));
    }
    return 0;
}

/* check_file: fd is the env file, path its name.  One rule at a time, so
 * that the message says which one failed.  Returns 0, or -1 with errno
 * and errp set.
 */
static int check_file(int fd,
                      const char *path,
                      uid_t job_uid,
                      vnib_error_t *errp)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return errprintf(errp, "cannot stat %s: %s", path, strerror(errno));
    errno = EPERM;
    if (!S_ISREG(st.st_mode))
        return errprintf(errp,
                         "refusing %s: it must be a regular file (mode %06o)",
                         path,
                         (unsigned)st.st_mode);
    if (st.st_uid != 0 && st.st_uid != job_uid)
        return errprintf(errp,
                         "refusing %s: it must be owned by root or uid %u "
                         "(uid %u)",
                         path,
                         (unsigned)job_uid,
                         (unsigned)st.st_uid);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return errprintf(errp,
                         "refusing %s: it must be writable by neither group "
                         "nor others (mode %04o)",
                         path,
                         (unsigned)(st.st_mode & 07777));
    if (st.st_size > ENVFILE_MAX_SIZE) {
        errno = EFBIG;
        return errprintf(errp,
                         "refusing %s: it must be at most %d bytes (%lld "
                         "bytes)",
                         path,
                         ENVFILE_MAX_SIZE,
                         (long long)st.st_size);
    }
    return 0;
}

/* read_all: read fd to its end into a new buffer, refusing more than
 * ENVFILE_MAX_SIZE bytes (a file that grew after its fstat).  Returns 0
 * with *bufp (NUL-terminated) and *lenp, or -1 with errno and errp set.
 */
static int read_all(
    int fd, const char *path, char **bufp, size_t *lenp, vnib_error_t *errp)
{
    /* One byte more than allowed, to notice a file that grew. */
    char *buf = malloc(ENVFILE_MAX_SIZE + 2);
    size_t len = 0;

    if (!buf) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, ENVFILE_MAX_SIZE + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            errprintf(errp, "cannot read %s: %s", path, strerror(errno));
            free(buf);
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > ENVFILE_MAX_SIZE) {
            free(buf);
            errno = EFBIG;
            return errprintf(
                errp, "%s is larger than %d bytes", path, ENVFILE_MAX_SIZE);
        }
    }
    buf[len] = '\0';
    *bufp = buf;
    *lenp = len;
    return 0;
}

int envfile_read(const char *state_dir,
                 const char *key,
                 uid_t job_uid,
                 struct envfile *env,
                 vnib_error_t *errp)
{
    char dir_path[ENVFILE_DIR_MAX + sizeof("/jobs")];
    char name[ENVFILE_KEY_MAX + sizeof(".env")];
    char path[sizeof(dir_path) + sizeof(name)];
    int dfd = -1;
    int fd = -1;
    int rc = -1;

    if (!valid_key(key)) {
        errno = EINVAL;
        return errprintf(errp, "a job key that cannot name a file: '%s'", key);
    }
    if (strlen(state_dir) > ENVFILE_DIR_MAX) {
        errno = EINVAL;
        return errprintf(
            errp, "state directory longer than %d characters", ENVFILE_DIR_MAX);
    }
    snprintf(dir_path, sizeof(dir_path), "%s/jobs", state_dir);
    snprintf(name, sizeof(name), "%s.env", key);
    snprintf(path, sizeof(path), "%s/%s", dir_path, name);

    dfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT)
            return 0;
        return errprintf(errp, "cannot open %s: %s", dir_path, strerror(errno));
    }
    if (check_dir(dfd, dir_path, errp) < 0)
        goto done;

    /* O_NONBLOCK: a FIFO planted here must not hang the task; it is
     * refused by check_file as not a regular file.  O_NOFOLLOW: a link
     * fails with ELOOP.
     */
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            rc = 0;
        } else if (errno == ELOOP) {
            errno = EPERM;
            errprintf(errp,
                      "refusing %s: it must be a regular file, not a "
                      "symbolic link",
                      path);
        } else {
            errprintf(errp, "cannot open %s: %s", path, strerror(errno));
        }
        goto done;
    }
    if (check_file(fd, path, job_uid, errp) < 0
        || read_all(fd, path, &env->buf, &env->len, errp) < 0)
        goto done;
    rc = 1;
done:
    if (fd >= 0)
        close(fd);
    close(dfd);
    return rc;
}

/* parse_line: split one line (NUL-terminated, without its newline) in
 * place.  Returns 0, or -1 if the line is malformed.
 */
static int parse_line(char *line, struct envfile_line *out)
{
    for (const char *p = line; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f)
            return -1;
    }
    if (strncmp(line, "export ", 7) == 0) {
        char *eq = strchr(line + 7, '=');
        if (!eq)
            return -1;
        *eq = '\0';
        out->name = line + 7;
        out->value = eq + 1;
    } else if (strncmp(line, "unset ", 6) == 0) {
        out->name = line + 6;
        out->value = NULL;
    } else {
        return -1;
    }
    return envfile_valid_name(out->name) ? 0 : -1;
}

int envfile_parse(struct envfile *env, vnib_error_t *errp)
{
    char *buf = env->buf;
    size_t len = env->len;
    struct envfile_line *lines = NULL;
    size_t count = 0;
    size_t max = 0;
    int lineno = 0;
    char *p = buf;
    char *end = buf + len;

    free(env->lines);
    env->lines = NULL;
    env->count = 0;
    errno = EINVAL;
    if (len > 0 && memchr(buf, '\0', len))
        return errprintf(errp, "the env file holds a NUL byte");
    if (len == 0 || buf[len - 1] != '\n')
        return errprintf(errp,
                         "the env file is empty or its last line has no "
                         "newline (truncated?)");
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n')
            max++;
    /* max >= 1 here: the last byte is a newline (one more for the
     * analyzer, which cannot see that). */
    if (!(lines = calloc(max + 1, sizeof(*lines)))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        *nl = '\0';
        lineno++;
        if (parse_line(p, &lines[count]) < 0) {
            free(lines);
            errno = EINVAL;
            return errprintf(errp,
                             "malformed line %d of the env file (want "
                             "\"export NAME=value\" or \"unset NAME\")",
                             lineno);
        }
        count++;
        p = nl + 1;
    }
    env->lines = lines;
    env->count = count;
    return 0;
}

void envfile_cleanup(struct envfile *env)
{
    free(env->lines);
    free(env->buf);
    env->lines = NULL;
    env->buf = NULL;
    env->count = 0;
    env->len = 0;
}
