/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Fabric Manager release queue: its workers, their NOTIFY listener,
 * and the deferred reserves the workers make.
 *
 * hwcoll.fm_concurrency workers take their work from the database
 * (schema/0003 fm_queue: deletions of FM jobs and releases of job steps),
 * so nothing is lost across crashes and restarts; a claim leases a few
 * operations, and what the FM confirmed is recorded with the next claim.
 * While the FM is failing they back off instead of spinning.  Between
 * passes each worker also makes one deferred reserve (schema/0005): a
 * reserve the request threads had no slot for.  One listener thread wakes
 * a worker when another transaction, on any replica, queues work.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/fmclient.h"
#include "vnib/logger.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/hwcoll/hwcoll_int.h"
#include "server/store/store.h"
#include "server/store/store_fm.h"

/* Queued operations a release-queue worker claims per pass. */
#define CLAIM_BATCH 8
/* A worker whose claim came back short waits this long before its next
 * claim, so that claims take several operations, not one each: a release
 * is asynchronous, and a few milliseconds more before the FM hears of it
 * cost nobody, while a claim per operation was the queue's largest cost
 * per job (schema/0012).
 */
#define LINGER_MS 20

/* New queue work was committed: wake one worker to claim it, unless a
 * worker is at work (it claims again when its pass ends, and sees this
 * work then) or one was woken already and has not claimed yet.  Waking a
 * worker per committed release made each claim find one operation.  A
 * worker whose claim came back full wakes the next with force, so that
 * under a backlog the workers call the FM side by side.  Called without
 * the lock.
 */
static void wake_claimer(struct hwcoll *h, bool force)
{
    pthread_mutex_lock(&h->lock);
    h->generation++;
    if (force || (!h->claim_woken && h->active == 0)) {
        h->claim_woken = true;
        pthread_cond_signal(&h->qcond);
    }
    pthread_mutex_unlock(&h->lock);
}

/* Make one deferred reserve (see hwcoll_reserve).  Returns 0, or -1 when
 * the FM failed in a way that pauses the workers.
 */
static int deferred_one(struct hwcoll *h, json_t *w)
{
    long long id = json_integer_value(json_object_get(w, "id"));
    const char *fm = json_string_value(json_object_get(w, "fm_job_id"));
    bool active = json_is_true(json_object_get(w, "active"));
    int attempts = (int)json_integer_value(json_object_get(w, "attempts"));
    long timeout = h->b->cfg->hwcoll.request_timeout_ms;
    struct hwcoll_call call = {id, fm, "hwcoll"};
    struct fmc_error error = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    int rc = 0;

    if (!fm)
        return 0;
    if (!active) {
        hwcoll_record(
            h, id, HWSTATE_UNAVAILABLE, HWSTATE_CAUSE_JOB_ENDED, NULL);
        return 0;
    }
    /* A worker before this one may have died during the call, after the
     * FM made the job: look first.  On the first attempt the FM job id
     * has never been sent, and one POST does.
     */
    if ((attempts > 0 && fmc_job_get(h->fmc, fm, &token, &error) < 0
         && errno != ENOENT)
        || (!token
            && fmc_job_create(
                   h->fmc, fm, h->addrs_per_job, timeout, &token, &error)
                   < 0)) {
        int e = errno;
        hwcoll_reserve_failed(h, &call, e, &error, NULL);
        rc = e == ECONNREFUSED || e == ETIMEDOUT ? -1 : 0;
        goto done;
    }
    hwcoll_note_result(h, "reserve", NULL);
    /* (When it cannot be recorded it is still deferred: claimed again
     * when the lease ends.) */
    if (hwcoll_reserve_done(h, &call, token, NULL) > 0)
        logger_printf(h->b->log,
                      LOG_INFO,
                      NULL,
                      "hwcoll: %s reserved in the background",
                      fm);
done:
    fmc_free_secret(token);
    return rc;
}

/* Back-off before retry n of a failing operation: exponential, capped,
 * with jitter so that a recovering FM is not hit by every retry at once.
 */
static double backoff_s(struct hwcoll *h, int attempts)
{
    double cap = (double)h->b->cfg->hwcoll.retry_max_s;
    double d = 0.5;
    for (int i = 0; i < attempts && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    return d
           * (0.5
              + (double)(rand_r(&(unsigned){(unsigned)monotime_ms()
                                            ^ (unsigned)attempts})
                         % 1000)
                    / 1000.0);
}

/* Run one queued operation.  Returns 1 when the FM confirmed it (the
 * caller marks it done, with the rest of its pass), 0 when it failed and
 * is due again later, or -1 with the FM unreachable.
 */
static int queue_op(struct hwcoll *h, json_t *op)
{
    long long id = json_integer_value(json_object_get(op, "id"));
    const char *fm = json_string_value(json_object_get(op, "fm_job_id"));
    const char *kind = json_string_value(json_object_get(op, "op"));
    const char *step = json_string_value(json_object_get(op, "step_id"));
    int attempts = (int)json_integer_value(json_object_get(op, "attempts"));
    struct fmc_error error = {.fault = FMC_FAULT_NONE};
    vnib_error_t ignore;
    int rc;

    if (!strcmp(kind, "release_step"))
        rc = fmc_job_release_step(h->fmc, fm, step ? step : "0", &error);
    else
        rc = fmc_job_delete(h->fmc, fm, &error);
    if (rc == 0) {
        hwcoll_note_result(h, kind, NULL);
        logger_printf(h->b->log,
                      LOG_DEBUG,
                      NULL,
                      "hwcoll: %s %s%s%s done",
                      kind,
                      fm,
                      step ? " step " : "",
                      step ? step : "");
        return 1;
    }
    int e = errno;
    hwcoll_note_result(h, kind, &error);
    if (store_fm_retry(
            h->b->store, id, error.msg.text, backoff_s(h, attempts), &ignore)
        < 0) {
        /* Logged by the store; the op is due again when its lease ends. */
    }
    pthread_mutex_lock(&h->lock);
    h->ops_retried++;
    pthread_mutex_unlock(&h->lock);
    logger_printf(h->b->log,
                  attempts < 3 ? LOG_INFO : LOG_WARNING,
                  NULL,
                  "hwcoll: %s %s failed (attempt %d): %s",
                  kind,
                  fm,
                  attempts + 1,
                  error.msg.text);
    return e == ECONNREFUSED || e == ETIMEDOUT ? -1 : 0;
}

/* A release-queue worker: claims due operations and runs them.  What
 * the FM confirmed in one pass is recorded with the next pass's claim, in
 * one transaction (store_fm_next); if that fails the operations come due
 * again after their lease, and a repeated delete is harmless (the FM's
 * 404 counts as done).  While the FM is unreachable every worker waits
 * out a pause that doubles up to 30 s, so an outage costs one probe per
 * pause, not a busy loop.
 */
void *fmqueue_worker_main(void *arg)
{
    struct hwcoll *h = arg;
    unsigned long long seen_deferred = 0;
    int64_t next_deferred_look = 0;
    long long done[CLAIM_BATCH];
    size_t ndone = 0;
    bool stopping = false;
    bool counted = false; /* in h->active */

    _Static_assert(CLAIM_BATCH <= STORE_FM_DONE_MAX, "done fits one call");
    pthread_mutex_lock(&h->lock);
    while (!stopping) {
        int64_t wait = h->paused_until - monotime_ms();
        bool paused = wait > 0 || h->stop;
        unsigned gen = h->generation;
        if (!paused) {
            h->claim_woken = false; /* this pass's claim sees it all */
            if (!counted)
                h->active++;
            counted = true;
        }
        pthread_mutex_unlock(&h->lock);
        vnib_error_t error = {0};
        json_t *ops = NULL;
        int unreachable = 0;
        size_t n = 0;
        /* The lease outlives one FM call, so a live worker keeps it (an
         * operation claimed again after it is repeated, harmlessly). */
        int lease_s = (int)(h->b->cfg->hwcoll.request_timeout_ms / 1000) + 5;
        if (paused && ndone == 0)
            goto sleep;
        if (store_fm_next(h->b->store,
                          done,
                          ndone,
                          "fm-queue",
                          paused ? 0 : CLAIM_BATCH,
                          lease_s,
                          &ops,
                          &error)
            == 0) {
            pthread_mutex_lock(&h->lock);
            h->ops_done += ndone;
            pthread_mutex_unlock(&h->lock);
        } else if (ndone > 0)
            logger_printf(h->b->log,
                          LOG_WARNING,
                          NULL,
                          "hwcoll: cannot record %zu FM operation(s) "
                          "done (they run again after their lease): %s",
                          ndone,
                          error.text);
        ndone = 0;
        if (paused) {
            /* A claim of none still answers with an (empty) list. */
            json_decref(ops);
            goto sleep;
        }
        n = json_array_size(ops);
        if (n == CLAIM_BATCH)
            wake_claimer(h, true); /* there may be more: share them */
        size_t i;
        json_t *op;
        json_array_foreach (ops, i, op) {
            if (unreachable) {
                /* Hand back what this worker will not try now, so that
                 * it is due again when the FM returns rather than when
                 * its lease ends.
                 */
                vnib_error_t ignore;
                if (store_fm_retry(
                        h->b->store,
                        json_integer_value(json_object_get(op, "id")),
                        "postponed: the Fabric Manager is unreachable",
                        1.0,
                        &ignore)
                    < 0) {
                    /* Logged by the store; due again when the lease ends. */
                }
            } else {
                int rc = queue_op(h, op);
                if (rc < 0)
                    unreachable = 1;
                else if (rc > 0 && ndone < CLAIM_BATCH)
                    /* (More than were asked for cannot come back; if
                     * they did, the rest run again after their lease.) */
                    done[ndone++] =
                        json_integer_value(json_object_get(op, "id"));
            }
        }
        json_decref(ops);
        /* One deferred reserve per worker and pass, so that the workers
         * make them side by side.  Deferrals are rare (the request slots
         * ran out), so the workers look for them only when this replica
         * deferred one since, or once a second for other replicas'.
         */
        json_t *def = NULL;
        pthread_mutex_lock(&h->lock);
        bool look = h->deferred_total != seen_deferred
                    || monotime_ms() >= next_deferred_look;
        seen_deferred = h->deferred_total;
        pthread_mutex_unlock(&h->lock);
        if (look)
            next_deferred_look = monotime_ms() + 1000;
        if (!unreachable && look
            && store_hwcoll_claim(h->b->store, 1, 2 * lease_s, &def, &error)
                   == 0) {
            json_t *w;
            n += json_array_size(def);
            json_array_foreach (def, i, w) {
                if (deferred_one(h, w) < 0)
                    unreachable = 1;
            }
            if (json_array_size(def) > 0)
                next_deferred_look = 0; /* there may be more */
            json_decref(def);
        }
    sleep:
        pthread_mutex_lock(&h->lock);
        if (unreachable) {
            h->pause_ms = h->pause_ms ? h->pause_ms * 2 : 1000;
            if (h->pause_ms > 30000)
                h->pause_ms = 30000;
            h->paused_until = monotime_ms() + h->pause_ms;
        } else if (n > 0)
            h->pause_ms = 0;
        if (h->stop)
            stopping = ndone == 0; /* record what is done first */
        else if (n >= CLAIM_BATCH)
            continue; /* confirm it; more may be due at once */
        else if (ndone > 0 || n > 0) {
            /* A short claim: confirm it with the next one, after a
             * while (a wake-up with force ends the wait early). */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += LINGER_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            (void)pthread_cond_timedwait(&h->qcond, &h->lock, &ts);
            continue;
        }
        if (counted) {
            h->active--;
            counted = false;
        }
        if (h->stop)
            ;
        else if (paused)
            hwcoll_nap(h, &h->qcond, gen, (long)wait);
        else
            hwcoll_nap(h, &h->qcond, gen, 1000);
    }
    if (counted)
        h->active--;
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Wakes the workers the moment a release is committed, on any replica. */
void *fmqueue_listen_main(void *arg)
{
    struct hwcoll *h = arg;
    struct store_session *ss = store_session_create(h->b->store, "vnib_fm");
    bool stop = false;

    while (ss && !stop) {
        int rc = store_session_wait(ss, 500);
        if (rc > 0)
            wake_claimer(h, false);
        else if (rc < 0) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&h->lock);
        stop = h->stop;
        pthread_mutex_unlock(&h->lock);
    }
    store_session_destroy(ss);
    return NULL;
}
