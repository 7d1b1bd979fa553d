/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fjt_spool: the jobtap plugin's releases that the broker could not take,
 * one durable file per job (see fjt_spool.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "plugins/flux/jobtap/fjt_spool.h"
#include "vnib/safefile.h"

struct fjt_spool {
    char *path;
};

/* A Flux job id in decimal: 1-20 digits. */
static int valid_job_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 20)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

struct fjt_spool *fjt_spool_create(const char *path, vnib_error_t *errp)
{
    struct fjt_spool *s = NULL;

    if (!path || path[0] != '/') {
        errno = EINVAL;
        errprintf(errp, "spool_dir must be an absolute path");
        return NULL;
    }
    if (safefile_private_dir(path, true, "the release spool", errp) < 0)
        return NULL;
    if (!(s = calloc(1, sizeof(*s))) || !(s->path = strdup(path))) {
        free(s);
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    return s;
}

void fjt_spool_destroy(struct fjt_spool *s)
{
    if (s) {
        int saved = errno;
        free(s->path);
        free(s);
        errno = saved;
    }
}

const char *fjt_spool_path(const struct fjt_spool *s)
{
    return s->path;
}

int fjt_spool_add(struct fjt_spool *s, const char *job_id, vnib_error_t *errp)
{
    char path[4096];
    char *text = NULL;
    json_t *o = NULL;
    int rc = -1;

    if (!valid_job_id(job_id)) {
        errno = EINVAL;
        return errprintf(errp, "spool: '%s' is not a job id", job_id);
    }
    snprintf(path, sizeof(path), "%s/%s", s->path, job_id);
    if (!(o = json_pack("{s:s s:I}",
                        "job_id",
                        job_id,
                        "spooled_at",
                        (json_int_t)time(NULL)))
        || !(text = json_dumps(o, JSON_COMPACT))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    rc = safefile_write(path, text, geteuid(), 0600, true, errp);
cleanup:
    free(text);
    json_decref(o);
    return rc;
}

int fjt_spool_remove(struct fjt_spool *s,
                     const char *job_id,
                     vnib_error_t *errp)
{
    char path[4096];

    if (!valid_job_id(job_id)) {
        errno = EINVAL;
        return errprintf(errp, "spool: '%s' is not a job id", job_id);
    }
    snprintf(path, sizeof(path), "%s/%s", s->path, job_id);
    if (unlink(path) < 0 && errno != ENOENT)
        return errprintf(errp, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

struct entry {
    char *name;
    struct timespec mtime;
};

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a;
    const struct entry *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

char **fjt_spool_list(struct fjt_spool *s, vnib_error_t *errp)
{
    DIR *d = NULL;
    struct dirent *de;
    struct entry *v = NULL;
    size_t n = 0;
    size_t cap = 0;
    char **out = NULL;

    if (!(d = opendir(s->path))) {
        errprintf(errp, "%s: %s", s->path, strerror(errno));
        return NULL;
    }
    while ((de = readdir(d))) {
        struct stat st;
        if (!valid_job_id(de->d_name))
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
            || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct entry *nv = realloc(v, ncap * sizeof(*v));
            if (!nv)
                goto nomem;
            v = nv;
            cap = ncap;
        }
        if (!(v[n].name = strdup(de->d_name)))
            goto nomem;
        v[n].mtime = st.st_mtim;
        n++;
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), entry_cmp);
    if (!(out = calloc(n + 1, sizeof(*out))))
        goto nomem;
    for (size_t i = 0; i < n; i++)
        out[i] = v[i].name;
    free(v);
    closedir(d);
    return out;
nomem:
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    closedir(d);
    errno = ENOMEM;
    errprintf(errp, "out of memory");
    return NULL;
}

void fjt_spool_list_free(char **list)
{
    if (list) {
        for (char **p = list; *p; p++)
            free(*p);
        free(list);
    }
}

int fjt_spool_count(struct fjt_spool *s)
{
    vnib_error_t error;
    char **list = fjt_spool_list(s, &error);
    int n = 0;

    if (!list)
        return -1;
    while (list[n])
        n++;
    fjt_spool_list_free(list);
    return n;
}
