/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Request worker threads and their bounded queue (see workers.h).
 *
 * The queue is a ring of queue_limit slots under one mutex; workers sleep
 * on a condition variable while it is empty.  Each slot records when its
 * job was queued, so that the worker can tell the job how long it waited
 * (the /metrics queue-wait histogram).  Destruction lets running jobs
 * finish but does not start queued ones: by then the caller has already
 * given them its grace period, and they are cancelled instead.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "vnib/monotime.h"
#include "server/http/workers.h"

struct slot {
    workers_run_f run;
    void *arg;
    int64_t queued_ns; /* monotonic time of workers_submit */
};

struct workers {
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake;  /* a job was queued, or stopping was set */
    struct slot *ring;    /* queue_limit slots */
    int queue_limit;
    int head;  /* next slot to run */
    int count; /* queued jobs */
    bool stopping;
    pthread_t *threads;
    int nthreads; /* started */
};

static void *worker_main(void *arg)
{
    struct workers *w = arg;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->count == 0 && !w->stopping)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        struct slot s = w->ring[w->head];
        w->head = (w->head + 1) % w->queue_limit;
        w->count--;
        pthread_mutex_unlock(&w->lock);
        s.run(s.arg, monotime_ns() - s.queued_ns, false);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct workers *workers_create(int nthreads,
                               int queue_limit,
                               vnib_error_t *errp)
{
    struct workers *w = NULL;

    if (nthreads < 1 || queue_limit < 1) {
        errno = EINVAL;
        errprintf(errp, "workers: need at least one thread and one slot");
        return NULL;
    }
    if (!(w = calloc(1, sizeof(*w))))
        goto nomem;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    w->queue_limit = queue_limit;
    if (!(w->ring = calloc((size_t)queue_limit, sizeof(w->ring[0])))
        || !(w->threads = calloc((size_t)nthreads, sizeof(w->threads[0]))))
        goto nomem;
    for (int i = 0; i < nthreads; i++) {
        int e = pthread_create(&w->threads[i], NULL, worker_main, w);
        if (e != 0) {
            errno = e;
            errprintf(errp, "cannot start request worker thread %d", i + 1);
            goto error;
        }
        w->nthreads++;
    }
    return w;
nomem:
    errno = ENOMEM;
    errprintf(errp, "out of memory");
error:
    workers_destroy(w);
    return NULL;
}

int workers_submit(struct workers *w, workers_run_f run, void *arg)
{
    int e = 0;

    pthread_mutex_lock(&w->lock);
    if (w->stopping)
        e = ESHUTDOWN;
    else if (w->count == w->queue_limit)
        e = EAGAIN;
    else {
        struct slot *s = &w->ring[(w->head + w->count) % w->queue_limit];
        s->run = run;
        s->arg = arg;
        s->queued_ns = monotime_ns();
        w->count++;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

long workers_depth(struct workers *w)
{
    pthread_mutex_lock(&w->lock);
    long n = w->count;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void workers_stop(struct workers *w)
{
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->wake);
    /* The threads take no more jobs: cancel the queued ones at once,
     * not after the running ones, which may take seconds.
     */
    while (w->count > 0) {
        struct slot s = w->ring[w->head];
        w->head = (w->head + 1) % w->queue_limit;
        w->count--;
        pthread_mutex_unlock(&w->lock);
        s.run(s.arg, monotime_ns() - s.queued_ns, true);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    w->nthreads = 0;
}

void workers_destroy(struct workers *w)
{
    int saved_errno = errno;

    if (!w)
        return;
    workers_stop(w);
    free(w->threads);
    free(w->ring);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
    errno = saved_errno;
}
