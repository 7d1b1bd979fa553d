/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_outbox: the release outbox and its thread (see swv_outbox.h).
 *
 * The queue is a list in release order under one mutex; an entry being
 * sent (by the thread or a drain) is marked busy, and whoever waits for
 * it waits on `changed`, broadcast whenever an entry leaves or stops
 * being busy.  Files are named after what they release and hold nothing.
 */
#include "swv_outbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vnib/monotime.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

struct entry {
    struct swv_release r;
    bool busy;             /* being sent */
    bool superseded;       /* a step's, its job's release queued since */
    int attempts;          /* sends that got no answer */
    struct timespec mtime; /* its file's, to order a previous run's */
    struct entry *next;
};

struct swv_outbox {
    char dir[PATH_MAX];
    int dirfd;
    swv_outbox_send_fn send;
    swv_outbox_done_fn done;
    void *arg;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* the thread: work, or stop */
    pthread_cond_t changed; /* drains: an entry left or is no longer busy */
    /* under lock */
    bool stop;
    bool unsynced; /* files written since the folder's last fsync */
    struct entry *head, *tail;
    int count;
};

/* The file name of r into buf. */
static void entry_name(const struct swv_release *r, char *buf, size_t size)
{
    if (r->step)
        snprintf(buf, size, "step.%" PRIu32 ".%" PRIu32, r->job_id, r->step_id);
    else
        snprintf(buf, size, "job.%" PRIu32 ".%lld", r->job_id, r->resv);
}

/* Parse a file name into r; -1 for anything else (a temporary file...). */
static int parse_name(const char *name, struct swv_release *r)
{
    unsigned long long a, b;
    char kind[8], tail;

    memset(r, 0, sizeof(*r));
    if (sscanf(name, "%4[a-z].%llu.%llu%c", kind, &a, &b, &tail) != 3 || a == 0
        || a > UINT32_MAX || strspn(name, "jobstep.0123456789") != strlen(name))
        return -1;
    r->job_id = (uint32_t)a;
    if (strcmp(kind, "step") == 0 && b <= UINT32_MAX) {
        r->step = true;
        r->step_id = (uint32_t)b;
        return 0;
    }
    if (strcmp(kind, "job") == 0 && b <= (unsigned long long)LLONG_MAX) {
        r->resv = (long long)b;
        return 0;
    }
    return -1;
}

static bool same(const struct swv_release *a, const struct swv_release *b)
{
    return a->step == b->step && a->job_id == b->job_id
           && (a->step ? a->step_id == b->step_id : a->resv == b->resv);
}

/* Remove e from the list (under lock) and its file, and free it. */
static void entry_drop(struct swv_outbox *ob, struct entry *e)
{
    struct entry **pp;
    char name[64];

    for (pp = &ob->head; *pp && *pp != e; pp = &(*pp)->next)
        ;
    if (!*pp)
        return;
    *pp = e->next;
    if (ob->tail == e) {
        ob->tail = NULL;
        for (struct entry *p = ob->head; p; p = p->next)
            ob->tail = p;
    }
    ob->count--;
    entry_name(&e->r, name, sizeof(name));
    (void)unlinkat(ob->dirfd, name, 0);
    free(e);
    pthread_cond_broadcast(&ob->changed);
}

static void entry_append(struct swv_outbox *ob, struct entry *e)
{
    e->next = NULL;
    if (ob->tail)
        ob->tail->next = e;
    else
        ob->head = e;
    ob->tail = e;
    ob->count++;
}

/* Did status answer the release (nothing to retry)? */
static bool answered(int status)
{
    return status >= 100 && status != 429 && status < 500;
}

/* Send e (busy, taken by the caller) with send; under lock on entry and
 * return.  1 when it was answered (e is gone), 0 when not (e stays). */
static int send_one(struct swv_outbox *ob,
                    struct entry *e,
                    swv_outbox_send_fn send,
                    void *arg)
{
    struct swv_release r = e->r;
    vnib_error_t err = {0};
    int64_t t0;
    double ms;
    int status, first;

    pthread_mutex_unlock(&ob->lock);
    t0 = monotime_ns();
    status = send(arg, &r, &err);
    ms = (double)(monotime_ns() - t0) / 1e6;
    pthread_mutex_lock(&ob->lock);
    if (e->superseded) {
        entry_drop(ob, e); /* the job's release releases it anyway */
        return 1;
    }
    if (answered(status)) {
        entry_drop(ob, e);
        pthread_mutex_unlock(&ob->lock);
        ob->done(ob->arg, &r, status, ms, err.text);
        pthread_mutex_lock(&ob->lock);
        return 1;
    }
    e->busy = false;
    first = e->attempts++ == 0;
    pthread_cond_broadcast(&ob->changed);
    if (first) {
        pthread_mutex_unlock(&ob->lock);
        ob->done(ob->arg, &r, status, ms, err.text);
        pthread_mutex_lock(&ob->lock);
    }
    return 0;
}

/* Wait ms on wake, or less when stopped (under lock). */
static void pause_ms(struct swv_outbox *ob, long ms)
{
    struct timespec until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!ob->stop
           && pthread_cond_timedwait(&ob->wake, &ob->lock, &until) == 0)
        ;
}

static void *outbox_loop(void *arg)
{
    struct swv_outbox *ob = arg;
    long backoff = 0;
    struct entry *e;

    pthread_mutex_lock(&ob->lock);
    while (!ob->stop) {
        for (e = ob->head; e && e->busy; e = e->next)
            ;
        if (!e) {
            pthread_cond_wait(&ob->wake, &ob->lock);
            continue;
        }
        if (ob->unsynced) {
            ob->unsynced = false;
            pthread_mutex_unlock(&ob->lock);
            (void)fsync(ob->dirfd);
            pthread_mutex_lock(&ob->lock);
            continue; /* the list may have changed meanwhile */
        }
        e->busy = true;
        if (send_one(ob, e, ob->send, ob->arg)) {
            backoff = 0;
            continue;
        }
        backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
        if (backoff > BACKOFF_MAX_MS)
            backoff = BACKOFF_MAX_MS;
        pause_ms(ob, backoff);
    }
    pthread_mutex_unlock(&ob->lock);
    return NULL;
}

/* Make dir (0700) and the folders above it if missing; refuse one others
 * may write. */
static int outbox_dir(const char *dir, vnib_error_t *errp)
{
    char path[PATH_MAX], *p;
    struct stat st;

    snprintf(path, sizeof(path), "%s", dir);
    for (p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(path, 0700);
        *p = '/';
    }
    (void)mkdir(path, 0700);
    if (lstat(dir, &st) < 0)
        return errprintf(errp, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return errprintf(errp, "%s is not a directory", dir);
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        errno = EPERM;
        return errprintf(errp, "%s is writable by others; refusing", dir);
    }
    return 0;
}

static int by_mtime(const void *a, const void *b)
{
    const struct entry *x = *(struct entry *const *)a;
    const struct entry *y = *(struct entry *const *)b;

    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return 0;
}

/* Queue what the folder holds, oldest first. */
static int outbox_load(struct swv_outbox *ob, vnib_error_t *errp)
{
    struct entry **all = NULL, *e;
    struct dirent *d;
    struct stat st;
    size_t n = 0, cap = 0;
    DIR *dh;
    int fd, rc = -1;

    if ((fd = dup(ob->dirfd)) < 0 || !(dh = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return errprintf(errp, "%s: %s", ob->dir, strerror(errno));
    }
    while ((d = readdir(dh))) {
        struct swv_release r;

        if (parse_name(d->d_name, &r) < 0
            || fstatat(ob->dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
            || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            struct entry **grown;

            cap = cap ? 2 * cap : 16;
            if (!(grown = realloc(all, cap * sizeof(*all))))
                goto nomem;
            all = grown;
        }
        if (!(e = calloc(1, sizeof(*e))))
            goto nomem;
        e->r = r;
        e->mtime = st.st_mtim;
        all[n++] = e;
    }
    if (n > 1)
        qsort(all, n, sizeof(*all), by_mtime);
    for (size_t i = 0; i < n; i++)
        entry_append(ob, all[i]);
    n = 0;
    rc = 0;
    goto cleanup;
nomem:
    errno = ENOMEM;
    errprintf(errp, "out of memory");
cleanup:
    for (size_t i = 0; i < n; i++)
        free(all[i]);
    free(all);
    closedir(dh);
    return rc;
}

struct swv_outbox *swv_outbox_create(const char *dir,
                                     swv_outbox_send_fn send,
                                     swv_outbox_done_fn done,
                                     void *arg,
                                     vnib_error_t *errp)
{
    struct swv_outbox *ob;
    int e;

    if (!(ob = calloc(1, sizeof(*ob)))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    ob->dirfd = -1;
    ob->send = send;
    ob->done = done;
    ob->arg = arg;
    pthread_mutex_init(&ob->lock, NULL);
    pthread_cond_init(&ob->changed, NULL);
    {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&ob->wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    if ((size_t)snprintf(ob->dir, sizeof(ob->dir), "%s", dir)
        >= sizeof(ob->dir)) {
        errno = ENAMETOOLONG;
        errprintf(errp, "%s: too long", dir);
        goto fail;
    }
    if (outbox_dir(ob->dir, errp) < 0)
        goto fail;
    if ((ob->dirfd = open(ob->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        errprintf(errp, "%s: %s", ob->dir, strerror(errno));
        goto fail;
    }
    if (outbox_load(ob, errp) < 0)
        goto fail;
    if ((e = pthread_create(&ob->thread, NULL, outbox_loop, ob)) != 0) {
        errno = e;
        errprintf(errp, "release outbox: no thread: %s", strerror(e));
        goto fail;
    }
    ob->started = true;
    return ob;
fail:
    swv_outbox_destroy(ob);
    return NULL;
}

void swv_outbox_destroy(struct swv_outbox *ob)
{
    struct entry *e, *next;

    if (!ob)
        return;
    if (ob->started) {
        pthread_mutex_lock(&ob->lock);
        ob->stop = true;
        pthread_cond_broadcast(&ob->wake);
        pthread_mutex_unlock(&ob->lock);
        pthread_join(ob->thread, NULL);
    }
    for (e = ob->head; e; e = next) {
        next = e->next;
        free(e);
    }
    if (ob->dirfd >= 0)
        close(ob->dirfd);
    pthread_cond_destroy(&ob->wake);
    pthread_cond_destroy(&ob->changed);
    pthread_mutex_destroy(&ob->lock);
    free(ob);
}

int swv_outbox_add(struct swv_outbox *ob,
                   const struct swv_release *r,
                   vnib_error_t *errp)
{
    struct entry *e, *next;
    char name[64];
    int fd;

    entry_name(r, name, sizeof(name));
    pthread_mutex_lock(&ob->lock);
    for (struct entry *p = ob->head; p; p = p->next) {
        /* One release of a job at a time (slurmctld may end a job twice:
         * the second knows its reservation no more), one of a step. */
        if (r->step ? same(&p->r, r) : !p->r.step && p->r.job_id == r->job_id) {
            pthread_mutex_unlock(&ob->lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&ob->lock);
    if (!(e = calloc(1, sizeof(*e)))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    e->r = *r;
    fd = openat(ob->dirfd,
                name,
                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                0600);
    if (fd < 0) {
        int err = errno;

        free(e);
        errno = err;
        return errprintf(errp, "%s/%s: %s", ob->dir, name, strerror(err));
    }
    close(fd);
    pthread_mutex_lock(&ob->lock);
    for (struct entry *p = ob->head; p; p = next) {
        next = p->next;
        /* A job's release releases its steps: theirs are needless. */
        if (!r->step && p->r.step && p->r.job_id == r->job_id) {
            if (p->busy)
                p->superseded = true;
            else
                entry_drop(ob, p);
        }
    }
    entry_append(ob, e);
    ob->unsynced = true;
    pthread_cond_signal(&ob->wake);
    pthread_mutex_unlock(&ob->lock);
    return 0;
}

int swv_outbox_drain(struct swv_outbox *ob,
                     uint32_t job_id,
                     swv_outbox_send_fn send,
                     void *arg,
                     vnib_error_t *errp)
{
    struct entry *e;
    int rc = 0;

    pthread_mutex_lock(&ob->lock);
    for (;;) {
        for (e = ob->head; e && e->r.job_id != job_id; e = e->next)
            ;
        if (!e)
            break;
        if (e->busy) {
            pthread_cond_wait(&ob->changed, &ob->lock);
            continue;
        }
        e->busy = true;
        if (!send_one(ob, e, send, arg)) {
            errno = EHOSTUNREACH;
            errprintf(errp,
                      "job %" PRIu32
                      ": an earlier release of the job is "
                      "still to be sent",
                      job_id);
            rc = -1;
            break;
        }
    }
    pthread_mutex_unlock(&ob->lock);
    return rc;
}

int swv_outbox_pending(struct swv_outbox *ob)
{
    int n;

    pthread_mutex_lock(&ob->lock);
    n = ob->count;
    pthread_mutex_unlock(&ob->lock);
    return n;
}
