/* Periodic quarantine sweep (see sweeper.h).
 *
 * The thread sleeps on a condition variable so that shutdown wakes it at
 * once instead of waiting out the interval.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "vnib/logger.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/store.h"
#include "server/sweeper.h"

/* Released reservations forgotten per run, at most. */
#define PURGE_BATCH 1000

struct sweeper {
    struct broker *broker;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop; /* under lock */
};

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
        vnib_error_t error = {""};
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
        int purged = 0;
        if (b->cfg->vni.retain_days > 0
            && store_purge(b->store,
                           (int)b->cfg->vni.retain_days,
                           PURGE_BATCH,
                           &purged,
                           &error)
                   < 0)
            logger_printf(b->log, LOG_WARNING, NULL, "purge: %s", error.text);
        else if (purged > 0)
            logger_printf(b->log,
                          LOG_INFO,
                          NULL,
                          "purge: forgot %d reservations released more than "
                          "%ld days ago",
                          purged,
                          b->cfg->vni.retain_days);
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
