/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_free: the free-VNI count and its poll thread (see swv_free.h).
 *
 * Claims are kept in SLOTS buckets of claim_ms / SLOTS each, indexed by
 * time: a claim lives between claim_ms and claim_ms plus one bucket, and
 * summing the live buckets is a fixed 32 steps under one mutex.
 */
#include "swv_free.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"

#define SLOTS 32

struct slot {
    int64_t epoch; /* now_ms / bucket_ms of its claims */
    long count;
};

struct swv_free {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started;
    bool stop;
    long interval_ms;
    int64_t bucket_ms;
    swv_free_fetch_fn fetch;
    swv_free_log_fn log;
    void *arg;
    /* under lock */
    long free_vnis;
    long per_job_default;
    int64_t fetched_ms; /* 0: never */
    struct slot slots[SLOTS];
};

/* The VNIs claimed by jobs admitted within the last claim_ms. */
static long claimed(const struct swv_free *f, int64_t epoch)
{
    long sum = 0;

    for (int i = 0; i < SLOTS; i++)
        if (f->slots[i].epoch > epoch - SLOTS)
            sum += f->slots[i].count;
    return sum;
}

bool swv_free_admit_at(struct swv_free *f,
                       int need,
                       int64_t now_ms,
                       long *freep)
{
    int64_t epoch = now_ms / f->bucket_ms;
    struct slot *s = &f->slots[epoch % SLOTS];
    bool ok = true;
    long avail;

    pthread_mutex_lock(&f->lock);
    if (f->fetched_ms == 0 || now_ms - f->fetched_ms > 3 * f->interval_ms) {
        *freep = -1;
        goto out;
    }
    if (need < 0)
        need = (int)f->per_job_default;
    avail = f->free_vnis - claimed(f, epoch);
    *freep = avail;
    if (need > avail) {
        ok = false;
        goto out;
    }
    if (s->epoch != epoch) {
        s->epoch = epoch;
        s->count = 0;
    }
    s->count += need;
out:
    pthread_mutex_unlock(&f->lock);
    return ok;
}

bool swv_free_admit(struct swv_free *f, int need, long *freep)
{
    return swv_free_admit_at(f, need, monotime_ms(), freep);
}

void swv_free_update_at(struct swv_free *f,
                        long free_vnis,
                        long per_job_default,
                        int64_t now_ms)
{
    pthread_mutex_lock(&f->lock);
    f->free_vnis = free_vnis;
    f->per_job_default = per_job_default;
    f->fetched_ms = now_ms > 0 ? now_ms : 1;
    pthread_mutex_unlock(&f->lock);
}

static void *poll_loop(void *arg)
{
    struct swv_free *f = arg;
    bool failing = false;
    struct timespec until;

    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        vnib_error_t err = {0};
        long free_vnis = 0, per_job = 0;
        int rc;

        pthread_mutex_unlock(&f->lock);
        rc = f->fetch(f->arg, &free_vnis, &per_job, &err);
        if (rc == 0)
            swv_free_update_at(f, free_vnis, per_job, monotime_ms());
        if ((rc < 0) != failing && f->log != NULL)
            f->log(f->arg, rc == 0, rc == 0 ? "" : err.text);
        failing = rc < 0;
        pthread_mutex_lock(&f->lock);
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += f->interval_ms / 1000;
        until.tv_nsec += (f->interval_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!f->stop
               && pthread_cond_timedwait(&f->wake, &f->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

struct swv_free *swv_free_create(long interval_ms,
                                 long claim_ms,
                                 swv_free_fetch_fn fetch,
                                 swv_free_log_fn log,
                                 void *arg,
                                 vnib_error_t *errp)
{
    struct swv_free *f = NULL;
    pthread_condattr_t ca;
    int e;

    if (interval_ms <= 0 || claim_ms < SLOTS) {
        errno = EINVAL;
        errprintf(errp, "free count: bad interval or claim time");
        return NULL;
    }
    if ((f = calloc(1, sizeof(*f))) == NULL) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    f->interval_ms = interval_ms;
    f->bucket_ms = claim_ms / SLOTS;
    f->fetch = fetch;
    f->log = log;
    f->arg = arg;
    for (int i = 0; i < SLOTS; i++)
        f->slots[i].epoch = INT64_MIN / 2;
    pthread_mutex_init(&f->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (fetch == NULL)
        return f; /* tests feed it with swv_free_update_at */
    if ((e = pthread_create(&f->thread, NULL, poll_loop, f)) != 0) {
        errno = e;
        errprintf(errp, "free count: cannot start its thread: %s", strerror(e));
        swv_free_destroy(f);
        return NULL;
    }
    f->started = true;
    return f;
}

void swv_free_destroy(struct swv_free *f)
{
    if (f == NULL)
        return;
    if (f->started) {
        pthread_mutex_lock(&f->lock);
        f->stop = true;
        pthread_cond_signal(&f->wake);
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->thread, NULL);
    }
    pthread_cond_destroy(&f->wake);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
