/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the request workers (server/http/workers.c): jobs run on the
 * threads with their queue wait, a full queue refuses at once (EAGAIN),
 * stopping cancels what is still queued and lets the running job finish,
 * and a stopped pool refuses (ESHUTDOWN).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/http/workers.h"

/* A job's record, and a gate a job can wait on. */
struct job {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool gate_open; /* a gated job waits for this */
    bool gated;
    bool started;
    int runs;       /* times run was called */
    bool cancelled; /* with cancelled = true */
    int64_t wait_ns;
};

static void job_init(struct job *j, bool gated)
{
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, NULL);
    j->gate_open = false;
    j->gated = gated;
    j->started = false;
    j->runs = 0;
    j->cancelled = false;
    j->wait_ns = -1;
}

static void job_run(void *arg, int64_t wait_ns, bool cancelled)
{
    struct job *j = arg;
    pthread_mutex_lock(&j->lock);
    j->started = true;
    j->wait_ns = wait_ns;
    j->cancelled = cancelled;
    pthread_cond_broadcast(&j->cond);
    while (j->gated && !cancelled && !j->gate_open)
        pthread_cond_wait(&j->cond, &j->lock);
    j->runs++;
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
}

static void job_open(struct job *j)
{
    pthread_mutex_lock(&j->lock);
    j->gate_open = true;
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
}

static void job_wait_started(struct job *j)
{
    pthread_mutex_lock(&j->lock);
    while (!j->started)
        pthread_cond_wait(&j->cond, &j->lock);
    pthread_mutex_unlock(&j->lock);
}

static void job_wait_done(struct job *j)
{
    pthread_mutex_lock(&j->lock);
    while (j->runs == 0)
        pthread_cond_wait(&j->cond, &j->lock);
    pthread_mutex_unlock(&j->lock);
}

static void test_runs_jobs(void **state)
{
    (void)state;
    struct workers *w = workers_create(2, 8, NULL);
    struct job a, b;
    assert_non_null(w);
    job_init(&a, false);
    job_init(&b, false);
    assert_int_equal(workers_submit(w, job_run, &a), 0);
    assert_int_equal(workers_submit(w, job_run, &b), 0);
    job_wait_done(&a);
    job_wait_done(&b);
    assert_int_equal(a.runs, 1);
    assert_false(a.cancelled);
    assert_true(a.wait_ns >= 0);
    workers_destroy(w);
    assert_int_equal(a.runs, 1); /* never twice */
    assert_int_equal(b.runs, 1);
}

static void test_full_queue_refuses(void **state)
{
    (void)state;
    struct workers *w = workers_create(1, 1, NULL);
    struct job busy, queued, refused;
    assert_non_null(w);
    job_init(&busy, true);
    job_init(&queued, false);
    job_init(&refused, false);
    assert_int_equal(workers_submit(w, job_run, &busy), 0);
    job_wait_started(&busy); /* the only thread is taken */
    assert_int_equal(workers_submit(w, job_run, &queued), 0);
    assert_int_equal(workers_depth(w), 1);
    errno = 0;
    assert_int_equal(workers_submit(w, job_run, &refused), -1);
    assert_int_equal(errno, EAGAIN);
    job_open(&busy);
    job_wait_done(&queued);
    assert_int_equal(workers_depth(w), 0);
    assert_false(queued.cancelled);
    workers_destroy(w);
    assert_int_equal(refused.runs, 0);
}

/* Stop from another thread, so that the test can open the gate of the
 * running job while workers_stop() waits for it.
 */
static void *stopper(void *arg)
{
    workers_stop(arg);
    return NULL;
}

static void test_stop_cancels_queued(void **state)
{
    (void)state;
    struct workers *w = workers_create(1, 4, NULL);
    struct job running, queued;
    pthread_t t;
    assert_non_null(w);
    job_init(&running, true);
    job_init(&queued, true);
    assert_int_equal(workers_submit(w, job_run, &running), 0);
    job_wait_started(&running);
    assert_int_equal(workers_submit(w, job_run, &queued), 0);
    assert_int_equal(pthread_create(&t, NULL, stopper, w), 0);
    /* The queued job is cancelled without waiting for the running one. */
    job_wait_done(&queued);
    assert_true(queued.cancelled);
    assert_int_equal(running.runs, 0);
    job_open(&running);
    pthread_join(t, NULL);
    assert_int_equal(running.runs, 1);
    assert_false(running.cancelled);
    errno = 0;
    assert_int_equal(workers_submit(w, job_run, &queued), -1);
    assert_int_equal(errno, ESHUTDOWN);
    workers_stop(w); /* idempotent */
    workers_destroy(w);
    assert_int_equal(queued.runs, 1);
}

static void test_invalid(void **state)
{
    (void)state;
    errno = 0;
    assert_null(workers_create(0, 4, NULL));
    assert_int_equal(errno, EINVAL);
    assert_null(workers_create(1, 0, NULL));
    workers_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_jobs),
        cmocka_unit_test(test_full_queue_refuses),
        cmocka_unit_test(test_stop_cancels_queued),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
