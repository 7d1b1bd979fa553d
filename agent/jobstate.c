/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-job files in STATE_DIR/jobs, and the report spool (see jobstate.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/jobstate.h"
#include "vnib/client.h"
#include "vnib/safefile.h"

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

bool jobstate_step_id_valid(const char *step_id)
{
    return jobstate_job_id_valid(step_id);
}

/* A job's key, or "JOB+STEP". */
static bool key_valid(const char *key)
{
    const char *plus = strchr(key, '+');
    char job[130];

    if (!plus)
        return jobstate_job_id_valid(key);
    if ((size_t)(plus - key) >= sizeof(job))
        return false;
    memcpy(job, key, (size_t)(plus - key));
    job[plus - key] = '\0';
    return jobstate_job_id_valid(job) && jobstate_step_id_valid(plus + 1);
}

int jobstate_key(char *buf,
                 size_t size,
                 const char *job_id,
                 const char *step_id,
                 vnib_error_t *errp)
{
    if (!jobstate_job_id_valid(job_id)
        || (step_id && !jobstate_step_id_valid(step_id))) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s id '%s' cannot name a file (use letters, "
                         "digits, '.', '_' and '-')",
                         jobstate_job_id_valid(job_id) ? "step" : "job",
                         jobstate_job_id_valid(job_id) ? step_id : job_id);
    }
    if ((size_t)snprintf(buf,
                         size,
                         "%s%s%s",
                         job_id,
                         step_id ? "+" : "",
                         step_id ? step_id : "")
        >= size) {
        errno = ENAMETOOLONG;
        return errprintf(errp, "job %s: key too long", job_id);
    }
    return 0;
}

static int job_path(char *buf,
                    size_t size,
                    const char *dir,
                    const char *job_id,
                    const char *ext,
                    vnib_error_t *errp)
{
    if (!key_valid(job_id)) {
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
    rc = safefile_write(path, text, geteuid(), 0600, false, errp);
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
        rc = safefile_write(path, text, uid, 0400, false, errp);
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
    /* A job's lock goes with its record (its steps have ended by then). */
    if (record && !strchr(job_id, '+')
        && job_path(path, sizeof(path), dir, job_id, ".lock", &ignore) == 0)
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

json_t *jobstate_steps(const char *dir, const char *job_id, vnib_error_t *errp)
{
    json_t *keys = jobstate_list(dir, errp), *steps = json_array(), *k;
    size_t len = strlen(job_id), i;

    if (!keys || !steps) {
        json_decref(keys);
        json_decref(steps);
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    json_array_foreach (keys, i, k) {
        const char *key = json_string_value(k);
        if (strncmp(key, job_id, len) == 0 && key[len] == '+'
            && jobstate_step_id_valid(key + len + 1))
            json_array_append_new(steps, json_string(key + len + 1));
    }
    json_decref(keys);
    return steps;
}

int jobstate_lock(const char *dir, const char *job_id, vnib_error_t *errp)
{
    char path[4096];
    int fd;

    if (job_path(path, sizeof(path), dir, job_id, ".lock", errp) < 0
        || make_dirs(dir, errp) < 0)
        return -1;
    if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        return errprintf(errp, "cannot open %s: %s", path, strerror(errno));
    while (flock(fd, LOCK_EX) < 0) {
        if (errno == EINTR)
            continue;
        int saved = errno;
        close(fd);
        errno = saved;
        return errprintf(errp, "cannot lock %s: %s", path, strerror(errno));
    }
    return fd;
}

void jobstate_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the lock */
}

/* ---- the report spool --------------------------------------------------- */

/* SPOOL_DIR: every report in it is sent with the node's token. */
static int spool_dir_check(const char *dir, bool create, vnib_error_t *errp)
{
    return safefile_private_dir(dir, create, "the report spool", errp);
}

static int spool_path(char *buf,
                      size_t size,
                      const char *dir,
                      const char *job_id,
                      long long res_id,
                      vnib_error_t *errp)
{
    if (!key_valid(job_id) || res_id < 0) {
        errno = EINVAL;
        return errprintf(errp, "job id '%s' cannot name a file", job_id);
    }
    if ((size_t)snprintf(buf, size, "%s/%020lld_%s.json", dir, res_id, job_id)
        >= size) {
        errno = ENAMETOOLONG;
        return errprintf(errp, "%s: spool directory path too long", dir);
    }
    return 0;
}

int jobstate_spool_put(const char *dir, json_t *report, vnib_error_t *errp)
{
    const char *job_id = json_string_value(json_object_get(report, "job_id"));
    json_t *step = json_object_get(report, "step_id");
    json_int_t res_id =
        json_integer_value(json_object_get(report, "reservation_id"));
    char path[4096], key[JOBSTATE_KEY_MAX];
    char *text = NULL;
    int rc;

    if (!job_id || (step && !json_is_string(step) && !json_is_null(step))) {
        errno = EINVAL;
        return errprintf(errp, "a spooled report needs a job id");
    }
    if (jobstate_key(key, sizeof(key), job_id, json_string_value(step), errp)
            < 0
        || spool_path(path, sizeof(path), dir, key, res_id, errp) < 0
        || spool_dir_check(dir, true, errp) < 0)
        return -1;
    if (!(text = json_dumps(report, JSON_COMPACT | JSON_SORT_KEYS))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    rc = safefile_write(path, text, geteuid(), 0600, true, errp);
    free(text);
    return rc;
}

int jobstate_spool_report(const char *spool_dir,
                          const struct vnib_report *r,
                          const char *why,
                          vnib_error_t *errp)
{
    /* The step, if any, is kept: its report goes to the step's route. */
    json_t *entry = json_pack("{s:s, s:s*, s:s, s:I, s:s, s:s}",
                              "job_id",
                              r->job_id,
                              "step_id",
                              r->step_id,
                              "node",
                              r->node,
                              "reservation_id",
                              (json_int_t)r->reservation,
                              "cxi",
                              r->cxi,
                              "error",
                              why ? why : "");
    int rc = -1;

    if (!entry
        || (r->services && json_object_set(entry, "services", r->services) < 0)
        || (r->message
            && json_object_set_new(entry, "message", json_string(r->message))
                   < 0)) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto out;
    }
    rc = jobstate_spool_put(spool_dir, entry, errp);
out:
    json_decref(entry);
    return rc;
}

bool jobstate_spool_worth(int status)
{
    return status < 0 || status == 401 || status == 403 || status == 429
           || status >= 500;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One spooled report, refused unless it is a regular file of this user
 * that nobody else may write. */
static json_t *spool_read(const char *path, vnib_error_t *errp)
{
    json_error_t jerr;
    struct stat st;
    json_t *o = NULL;
    FILE *f = NULL;
    int fd;

    if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()
        || (st.st_mode & 022) || st.st_size > ENV_MAX_SIZE) {
        close(fd);
        errno = EPERM;
        errprintf(errp,
                  "%s: refused: not a regular file of this user that only "
                  "its owner may write",
                  path);
        return NULL;
    }
    if (!(f = fdopen(fd, "r"))) {
        close(fd);
        errprintf(errp, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (!(o = json_loadf(f, 0, &jerr)) || !json_is_object(o)
        || !json_is_string(json_object_get(o, "job_id"))
        || !json_is_string(json_object_get(o, "cxi"))) {
        json_decref(o);
        o = NULL;
        errno = EINVAL;
        errprintf(errp, "%s: not a spooled report", path);
    }
    fclose(f);
    return o;
}

json_t *jobstate_spool_list(const char *dir, json_t *bad, vnib_error_t *errp)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    json_t *list = NULL;
    struct dirent *de;
    DIR *d = NULL;

    if (access(dir, F_OK) < 0 && errno == ENOENT)
        return json_array(); /* nothing was ever spooled */
    if (spool_dir_check(dir, false, errp) < 0)
        return NULL;
    if (!(d = opendir(dir))) {
        errprintf(errp, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len <= 5
            || strcmp(de->d_name + len - 5, ".json") != 0)
            continue; /* ., .., and temporary files */
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nn = realloc(names, ncap * sizeof(*names));
            if (!nn)
                goto nomem;
            names = nn;
            cap = ncap;
        }
        if (!(names[n] = strdup(de->d_name)))
            goto nomem;
        n++;
    }
    if (n)
        qsort(names, n, sizeof(*names), by_name);
    if (!(list = json_array()))
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        vnib_error_t rerr = {0};
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        json_t *o = spool_read(path, &rerr);
        if (o)
            json_array_append_new(list, o);
        else if (bad)
            json_array_append_new(bad, json_string(rerr.text));
    }
    goto out;
nomem:
    json_decref(list);
    list = NULL;
    errno = ENOMEM;
    errprintf(errp, "out of memory");
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (d)
        closedir(d);
    return list;
}

void jobstate_spool_remove(const char *dir,
                           const char *job_id,
                           long long res_id)
{
    char path[4096];
    vnib_error_t ignore;
    if (spool_path(path, sizeof(path), dir, job_id, res_id, &ignore) == 0)
        (void)unlink(path);
}

static int ended_path(char *buf, size_t size, const char *dir, long long res_id)
{
    return res_id > 0
                   && (size_t)snprintf(buf, size, "%s/%lld.ended", dir, res_id)
                          < size
               ? 0
               : -1;
}

int jobstate_ended_put(const char *dir,
                       long long res_id,
                       long long until,
                       vnib_error_t *errp)
{
    char path[4096], text[32];

    if (ended_path(path, sizeof(path), dir, res_id) < 0) {
        errno = EINVAL;
        return errprintf(errp, "reservation %lld cannot name a file", res_id);
    }
    if (spool_dir_check(dir, true, errp) < 0)
        return -1;
    snprintf(text, sizeof(text), "%lld\n", until);
    return safefile_write(path, text, geteuid(), 0600, false, errp);
}

/* The time a tombstone holds until, or -1 when it is missing or not a
 * small regular file of this user that only it may write (the spool is
 * root's and private, so such a file is not one the agent wrote). */
static long long ended_until(const char *path)
{
    char text[32];
    struct stat st;
    ssize_t n;
    long long until;
    int fd;

    if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()
        || (st.st_mode & 022) || (n = read(fd, text, sizeof(text) - 1)) <= 0) {
        close(fd);
        return -1;
    }
    close(fd);
    text[n] = '\0';
    return sscanf(text, "%lld", &until) == 1 ? until : -1;
}

int jobstate_ended_check(const char *dir,
                         long long res_id,
                         long long now,
                         vnib_error_t *errp)
{
    char path[4096];
    long long until;

    if (ended_path(path, sizeof(path), dir, res_id) < 0) {
        errno = EINVAL;
        return errprintf(errp, "reservation %lld cannot name a file", res_id);
    }
    until = ended_until(path);
    return until >= now ? 1 : 0;
}

int jobstate_ended_prune(const char *dir, long long now)
{
    struct dirent *de;
    char path[4096];
    int n = 0;
    DIR *d;

    if (!(d = opendir(dir)))
        return 0;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len <= 6
            || strcmp(de->d_name + len - 6, ".ended") != 0
            || (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name)
                   >= sizeof(path))
            continue;
        long long until = ended_until(path);
        if (until >= 0 && until < now && unlink(path) == 0)
            n++;
    }
    closedir(d);
    return n;
}
