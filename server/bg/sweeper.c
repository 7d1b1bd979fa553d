/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Periodic quarantine sweep and purge (see sweeper.h).
 *
 * The thread sleeps on a condition variable so that shutdown wakes it at
 * once instead of waiting out the interval.  Each run closes the
 * quarantines whose nodes have all confirmed, then forgets reservations
 * released more than vni.retain_days ago, in batches of PURGE_BATCH (each
 * its own short transaction) for as long as batches come back full, up to
 * half the interval: so the purge keeps up with any steady job rate the
 * database can take, instead of forgetting at most PURGE_BATCH per
 * interval, while the next sweep still starts on time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "vnib/monotime.h"
#include "vnib/logger.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/store/store_pool.h"
#include "server/bg/sweeper.h"

/* Released reservations forgotten per run, at most. */
#define PURGE_BATCH 1000

struct sweeper {
    struct broker *broker;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop; /* under lock */
};

static bool stopping(struct sweeper *sw)
{
    pthread_mutex_lock(&sw->lock);
    bool stop = sw->stop;
    pthread_mutex_unlock(&sw->lock);
    return stop;
}

/* Forget reservations released more than vni.retain_days ago, batch
 * after batch while they come back full, for at most half the interval.
 */
static void purge(struct sweeper *sw)
{
    struct broker *b = sw->broker;
    int64_t until = monotime_ms() + b->cfg->vni.sweep_interval_s * 500;
    long total = 0;
    int batches = 0;
    int purged;

    do {
        vnib_error_t error = {0};
        purged = 0;
        if (store_purge(b->store,
                        (int)b->cfg->vni.retain_days,
                        PURGE_BATCH,
                        &purged,
                        &error)
            < 0) {
            logger_printf(b->log, LOG_WARNING, NULL, "purge: %s", error.text);
            break;
        }
        total += purged;
        batches++;
    } while (purged >= PURGE_BATCH && monotime_ms() < until && !stopping(sw));
    const char *more =
        purged >= PURGE_BATCH ? "; more are left for the next run" : "";
    if (total > 0)
        logger_printf(b->log,
                      LOG_INFO,
                      NULL,
                      "purge: forgot %ld reservations released more than "
                      "%ld days ago (%d batch%s)%s",
                      total,
                      b->cfg->vni.retain_days,
                      batches,
                      batches == 1 ? "" : "es",
                      more);
}

static void *sweeper_main(void *arg)
{
    struct sweeper *sw = arg;
    struct broker *b = sw->broker;

    pthread_mutex_lock(&sw->lock);
    while (!sw->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += b->cfg->vni.sweep_interval_s;
        while (!sw->stop
               && pthread_cond_timedwait(&sw->cond, &sw->lock, &ts)
                      != ETIMEDOUT)
            ;
        if (sw->stop)
            break;
        pthread_mutex_unlock(&sw->lock);
        vnib_error_t error = {0};
        int closed = 0;
        if (store_sweep(b->store, "sweeper", &closed, &error) < 0)
            logger_printf(b->log, LOG_WARNING, NULL, "sweeper: %s", error.text);
        else if (closed > 0)
            logger_printf(b->log,
                          LOG_NOTICE,
                          NULL,
                          "sweeper: closed %d quarantine%s whose nodes had all "
                          "confirmed",
                          closed,
                          closed == 1 ? "" : "s");
        if (b->cfg->vni.retain_days > 0)
            purge(sw);
        pthread_mutex_lock(&sw->lock);
    }
    pthread_mutex_unlock(&sw->lock);
    return NULL;
}

struct sweeper *sweeper_create(struct broker *b, vnib_error_t *errp)
{
    struct sweeper *sw = calloc(1, sizeof(*sw));
    pthread_condattr_t attr;
    int e;

    if (!sw) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    sw->broker = b;
    pthread_mutex_init(&sw->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sw->cond, &attr);
    pthread_condattr_destroy(&attr);
    if ((e = pthread_create(&sw->thread, NULL, sweeper_main, sw)) != 0) {
        pthread_cond_destroy(&sw->cond);
        pthread_mutex_destroy(&sw->lock);
        free(sw);
        errno = e;
        errprintf(errp, "cannot start the sweeper thread");
        return NULL;
    }
    return sw;
}

void sweeper_destroy(struct sweeper *sw)
{
    int saved_errno = errno;
    if (sw) {
        pthread_mutex_lock(&sw->lock);
        sw->stop = true;
        pthread_cond_signal(&sw->cond);
        pthread_mutex_unlock(&sw->lock);
        pthread_join(sw->thread, NULL);
        pthread_cond_destroy(&sw->cond);
        pthread_mutex_destroy(&sw->lock);
        free(sw);
    }
    errno = saved_errno;
}
