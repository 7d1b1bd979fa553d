/* Per-job files in STATE_DIR/jobs (see jobstate.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/jobstate.h"

#define ENV_MAX_SIZE (64 * 1024)

bool jobstate_job_id_valid(const char *job_id)
{
    size_t n = strlen(job_id);
    return n > 0 && n <= 128 && job_id[0] != '.'
           && strspn(job_id,
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789._-")
                  == n;
}

static int job_path(char *buf,
                    size_t size,
                    const char *dir,
                    const char *job_id,
                    const char *ext,
                    vnib_error_t *errp)
{
    if (!jobstate_job_id_valid(job_id)) {
        errno = EINVAL;
        return errprintf(errp,
                         "job id '%s' cannot name a file (use letters, "
                         "digits, '.', '_' and '-')",
                         job_id);
    }
    if ((size_t)snprintf(buf, size, "%s/jobs/%s%s", dir, job_id, ext) >= size) {
        errno = ENAMETOOLONG;
        return errprintf(errp, "%s: state directory path too long", dir);
    }
    return 0;
}

/* STATE_DIR and STATE_DIR/jobs, root's, 0755 and 0711. */
static int make_dirs(const char *dir, vnib_error_t *errp)
{
    char jobs[4096];
    snprintf(jobs, sizeof(jobs), "%s/jobs", dir);
    if ((mkdir(dir, 0755) < 0 && errno != EEXIST)
        || (mkdir(jobs, 0711) < 0 && errno != EEXIST))
        return errprintf(errp, "cannot create %s: %s", jobs, strerror(errno));
    return 0;
}

/* Write text to path via a temporary file, owned by uid with mode. */
static int write_file(const char *path,
                      const char *text,
                      uid_t uid,
                      mode_t mode,
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
        || fchmod(fd, mode) < 0) {
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
    return 0;
}

int jobstate_save(const char *dir,
                  const char *job_id,
                  json_t *record,
                  vnib_error_t *errp)
{
    char path[4096];
    char *text = NULL;
    int rc = -1;

    if (job_path(path, sizeof(path), dir, job_id, ".json", errp) < 0
        || make_dirs(dir, errp) < 0)
        return -1;
    if (!(text = json_dumps(record, JSON_COMPACT | JSON_SORT_KEYS))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    rc = write_file(path, text, geteuid(), 0600, errp);
    free(text);
    return rc;
}

json_t *jobstate_load(const char *dir, const char *job_id, vnib_error_t *errp)
{
    char path[4096];
    json_error_t jerr;
    json_t *o;

    if (job_path(path, sizeof(path), dir, job_id, ".json", errp) < 0)
        return NULL;
    if (access(path, F_OK) < 0) {
        errno = ENOENT;
        errprintf(errp, "%s: no record", path);
        return NULL;
    }
    if (!(o = json_load_file(path, 0, &jerr)) || !json_is_object(o)) {
        json_decref(o);
        errno = EINVAL;
        errprintf(errp, "%s: unreadable record: %s", path, jerr.text);
        return NULL;
    }
    return o;
}

int jobstate_write_env(const char *dir,
                       const char *job_id,
                       uid_t uid,
                       const struct jobenv *env,
                       vnib_error_t *errp)
{
    char path[4096];
    char *text = NULL;
    size_t size = 0;
    FILE *f;
    int rc = -1;

    if (job_path(path, sizeof(path), dir, job_id, ".env", errp) < 0
        || make_dirs(dir, errp) < 0)
        return -1;
    if (!(f = open_memstream(&text, &size)))
        return errprintf(errp, "out of memory");
    rc = jobenv_write(env, "slurm-taskprolog", f, errp);
    fclose(f);
    if (rc == 0)
        rc = write_file(path, text, uid, 0400, errp);
    free(text);
    return rc;
}

int jobstate_read_env(const char *dir,
                      const char *job_id,
                      struct jobenv *env,
                      vnib_error_t *errp)
{
    char path[4096];
    char buf[ENV_MAX_SIZE + 1];
    struct stat st;
    ssize_t n;
    int fd, rc = -1;

    if (job_path(path, sizeof(path), dir, job_id, ".env", errp) < 0)
        return -1;
    if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return errprintf(errp, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)
        || (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)
        || st.st_size > ENV_MAX_SIZE) {
        errno = EPERM;
        errprintf(errp,
                  "%s: refused: not a regular file of root or of this user "
                  "that only its owner may write",
                  path);
        goto done;
    }
    if ((n = read(fd, buf, ENV_MAX_SIZE)) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    buf[n] = '\0';
    rc = jobenv_parse(env, buf, path, errp);
done:
    close(fd);
    return rc;
}

void jobstate_remove(const char *dir, const char *job_id, bool record)
{
    char path[4096];
    vnib_error_t ignore;
    if (job_path(path, sizeof(path), dir, job_id, ".env", &ignore) < 0)
        return;
    (void)unlink(path);
    if (record
        && job_path(path, sizeof(path), dir, job_id, ".json", &ignore) == 0)
        (void)unlink(path);
}

json_t *jobstate_list(const char *dir, vnib_error_t *errp)
{
    char path[4096];
    json_t *list = json_array();
    struct dirent *de;
    DIR *d;

    snprintf(path, sizeof(path), "%s/jobs", dir);
    if (!list)
        goto nomem;
    if (!(d = opendir(path)))
        return list; /* no jobs yet */
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 5 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char *id = strndup(de->d_name, n - 5);
        if (!id || json_array_append_new(list, json_string(id)) < 0) {
            free(id);
            closedir(d);
            goto nomem;
        }
        free(id);
    }
    closedir(d);
    return list;
nomem:
    json_decref(list);
    errno = ENOMEM;
    errprintf(errp, "out of memory");
    return NULL;
}
