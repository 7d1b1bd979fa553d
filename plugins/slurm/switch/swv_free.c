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
    swv_free_nudge_fn nudge;
    void *arg;
    /* under lock */
    long free_vnis;
    long per_job_default;
    int64_t fetched_ms; /* 0: never */
    bool refused;       /* a job was told to wait since the last nudge */
    long refused_avail; /* ... seeing this many free and unclaimed */
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

/* What jobs need: need, or the broker's default for -1. */
static long resolve(const struct swv_free *f, int need)
{
    return need < 0 ? f->per_job_default : need;
}

static bool fresh(const struct swv_free *f, int64_t now_ms)
{
    return f->fetched_ms != 0 && now_ms - f->fetched_ms <= 3 * f->interval_ms;
}

bool swv_free_admit_at(struct swv_free *f,
                       int need,
                       int64_t now_ms,
                       long *freep)
{
    bool ok = true;
    long avail;

    pthread_mutex_lock(&f->lock);
    if (!fresh(f, now_ms)) {
        *freep = -1;
        goto out;
    }
    avail = f->free_vnis - claimed(f, now_ms / f->bucket_ms);
    *freep = avail;
    if (resolve(f, need) > avail) {
        ok = false;
        if (!f->refused || avail < f->refused_avail)
            f->refused_avail = avail;
        f->refused = true;
    }
out:
    pthread_mutex_unlock(&f->lock);
    return ok;
}

bool swv_free_admit(struct swv_free *f, int need, long *freep)
{
    return swv_free_admit_at(f, need, monotime_ms(), freep);
}

void swv_free_claim_at(struct swv_free *f, int need, int64_t now_ms)
{
    int64_t epoch = now_ms / f->bucket_ms;
    struct slot *s = &f->slots[epoch % SLOTS];

    pthread_mutex_lock(&f->lock);
    if (fresh(f, now_ms)) {
        if (s->epoch != epoch) {
            s->epoch = epoch;
            s->count = 0;
        }
        s->count += resolve(f, need);
    }
    pthread_mutex_unlock(&f->lock);
}

void swv_free_claim(struct swv_free *f, int need)
{
    swv_free_claim_at(f, need, monotime_ms());
}

bool swv_free_should_nudge(struct swv_free *f, int64_t now_ms)
{
    bool nudge = false;

    pthread_mutex_lock(&f->lock);
    if (f->refused && fresh(f, now_ms)
        && f->free_vnis - claimed(f, now_ms / f->bucket_ms)
               > f->refused_avail) {
        f->refused = false;
        nudge = true;
    }
    pthread_mutex_unlock(&f->lock);
    return nudge;
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
        if (rc == 0) {
            swv_free_update_at(f, free_vnis, per_job, monotime_ms());
            if (f->nudge != NULL && swv_free_should_nudge(f, monotime_ms()))
                f->nudge();
        }
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
                                 swv_free_nudge_fn nudge,
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
    f->nudge = nudge;
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
