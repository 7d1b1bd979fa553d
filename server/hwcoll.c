/* Fabric Manager multicast reservations (see hwcoll.h).
 *
 * The request thread makes the reserve call itself, under its own short
 * timeout, so that a scheduler's reply carries the outcome; but only
 * hwcoll.request_concurrency of them at once, and past that the queue
 * workers make the call (a deferred reserve).  What may take longer or
 * must be retried (releases, deferred reserves) belongs to the
 * hwcoll.fm_concurrency release-queue workers, which take their work from
 * the database and so lose nothing across crashes and restarts; they back
 * off while the FM is failing instead of spinning.  One listener thread
 * wakes them when another transaction queues work, and one leader thread
 * (on the replica holding the leader lock) reconciles with the FM and
 * checks the reserves that timed out.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/fmclient.h"
#include "vnib/logger.h"
#include "vnib/seal.h"
#include "vnib/secfile.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/hwcoll.h"
#include "server/store.h"

/* Work items taken per worker pass. */
#define WORK_BATCH 32
/* Queued operations a release-queue worker claims per pass. */
#define CLAIM_BATCH 8
/* A worker whose claim came back short waits this long before its next
 * claim, so that claims take several operations, not one each: a release
 * is asynchronous, and a few milliseconds more before the FM hears of it
 * cost nobody, while a claim per operation was the queue's largest cost
 * per job (schema/0012).
 */
#define LINGER_MS 20

/* What a reservation says while a worker, not the request, reserves. */
#define DEFERRED_REASON                                                \
    "the Fabric Manager is busy; the reservation is completed in the " \
    "background"

struct hwcoll {
    struct broker *b;
    struct fmc *fmc;                 /* NULL when disabled */
    unsigned char key[SEAL_KEY_LEN]; /* seals session tokens */
    int addrs_per_job;               /* configured or computed */
    char prefix[128]; /* FM job ids are "<prefix>-<job>-r<reservation>" */
    /* After a rotation, the key before it: opens, never seals. */
    unsigned char prev_key[SEAL_KEY_LEN];
    bool has_prev_key;

    char replica[300];  /* host:pid, as fm_leader says */
    pthread_t *threads; /* queue workers, then listener, then leader */
    int nthreads;
    pthread_mutex_t lock;
    pthread_cond_t cond;  /* the leader's: something changed */
    pthread_cond_t qcond; /* the queue workers': work may be due */
    bool stop;            /* under lock */
    unsigned generation;  /* bumped by each wake-up */
    bool claim_woken;     /* a worker was woken to claim, has not yet */
    int active;           /* queue workers in a pass or lingering */
    int64_t paused_until; /* FM unreachable: no calls before (mono ms) */
    long pause_ms;        /* the current pause, doubling */
    bool reconcile_now;   /* the FM came back, or just elected */
    bool leading;         /* this replica leads */
    int in_request;       /* FM reserves running on request threads */
    int max_in_request;   /* hwcoll.request_concurrency, resolved */

    /* The last reconciliation, under lock. */
    time_t rec_at;
    int rec_released, rec_lost;
    long long rec_foreign; /* FM jobs of our prefix not ours */
    char rec_error[160];

    /* Counters for /metrics, under lock. */
    unsigned long long ops_done, ops_retried, lost_total, reconciles;
    unsigned long long deferred_total;

    /* Connection state for /v1/fabric-manager, under lock. */
    time_t last_success;
    time_t last_error;
    bool last_ok; /* the most recent call succeeded */
    char last_error_text[160];
    const char *last_error_class; /* failure_class: for non-admins */
};

/* Why an FM call failed, as a fixed phrase per class of failure: what
 * reservations and non-admins see.  The FM's own text (which a server or
 * proxy may have filled with anything) goes only to the log and to
 * admins.
 */
static const char *failure_class(int e)
{
    if (e == ETIMEDOUT)
        return "Fabric Manager timed out";
    if (e == ECONNREFUSED)
        return "Fabric Manager unreachable";
    if (e == ENOSPC)
        return "Fabric Manager out of multicast addresses";
    return "Fabric Manager refused";
}

/* Called right after the FM call, whose errno classifies a failure. */
static void note_result(struct hwcoll *h,
                        int rc,
                        const char *what,
                        const char *msg)
{
    const char *cls = failure_class(errno);

    pthread_mutex_lock(&h->lock);
    if (rc == 0 && !h->last_ok && h->last_error)
        h->reconcile_now = true; /* back after an outage */
    h->last_ok = rc == 0;
    if (rc == 0)
        h->last_success = time(NULL);
    else {
        h->last_error = time(NULL);
        h->last_error_class = cls;
        snprintf(h->last_error_text,
                 sizeof(h->last_error_text),
                 "%s: %s",
                 what,
                 msg);
    }
    pthread_mutex_unlock(&h->lock);
}

/* Seal a token for reservation id; hex into *hexp (caller frees).  Always
 * with the current key: a value sealed with the previous one is left as it
 * is (open_hex reads it), and goes with its reservation.
 */
static int seal_hex(struct hwcoll *h,
                    long long id,
                    const char *token,
                    char **hexp)
{
    unsigned char *sealed;
    size_t len;
    char aad[24];
    snprintf(aad, sizeof(aad), "%lld", id);
    if (seal_encrypt(
            h->key, token, strlen(token), aad, strlen(aad), &sealed, &len, NULL)
        < 0)
        return -1;
    char *hex = malloc(2 * len + 1);
    if (!hex) {
        free(sealed);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", sealed[i]);
    free(sealed);
    *hexp = hex;
    return 0;
}

/* Open what seal_hex made: with the current key, or failing that with the
 * previous one (hwcoll.token_key_previous_file) during a rotation.
 */
static int open_hex(struct hwcoll *h,
                    long long id,
                    const char *hex,
                    char **tokenp)
{
    size_t n = strlen(hex) / 2;
    unsigned char *raw = malloc(n + 1);
    char aad[24];
    size_t plen;
    int rc;

    if (!raw)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            free(raw);
            return -1;
        }
        raw[i] = (unsigned char)v;
    }
    snprintf(aad, sizeof(aad), "%lld", id);
    rc = seal_decrypt(h->key, raw, n, aad, strlen(aad), tokenp, &plen, NULL);
    if (rc < 0 && h->has_prev_key)
        rc = seal_decrypt(
            h->prev_key, raw, n, aad, strlen(aad), tokenp, &plen, NULL);
    free(raw);
    return rc;
}

void hwcoll_plan(struct hwcoll *h,
                 const char *mode,
                 struct store_reserve *a,
                 char *fm_job_id,
                 size_t size)
{
    const struct config *cfg = h->b->cfg;

    a->hwcoll_mode = mode;
    a->hwcoll_reason = NULL;
    a->fm_job_id = NULL;
    a->addrs_per_job = 0;
    if (!h->fmc) {
        a->hwcoll_state = "disabled";
        a->hwcoll_reason =
            "hardware collectives are not enabled on this broker";
        return;
    }
    if (!strcmp(mode, "off")) {
        a->hwcoll_state = "not_eligible";
        a->hwcoll_reason = "off by request";
        return;
    }
    if (!strcmp(mode, "auto")
        && (cfg->hwcoll.min_nodes == 0
            || a->node_count < (size_t)cfg->hwcoll.min_nodes)) {
        a->hwcoll_state = "not_eligible";
        a->hwcoll_reason = cfg->hwcoll.min_nodes == 0
                               ? "hwcoll.min_nodes is 0: only on request"
                               : "fewer nodes than hwcoll.min_nodes";
        return;
    }
    /* The store appends "-r<reservation id>" (schema/0004): a requeued
     * job's new FM job is never the old one that the release queue may
     * still be deleting.
     */
    snprintf(fm_job_id, size, "%s-%s", h->prefix, a->job_id);
    a->hwcoll_state = "pending";
    a->fm_job_id = fm_job_id;
    a->addrs_per_job = h->addrs_per_job;
}

/* Why a reserve failed, as the reservation says it: a fixed phrase per
 * class (failure_class), or for a timeout the text by which the store
 * finds reserves to check later ('timed out%').  The FM's own text goes
 * only to the log.
 */
static void failure_reason(int e, long timeout_ms, char *buf, size_t size)
{
    if (e == ETIMEDOUT)
        snprintf(buf,
                 size,
                 "timed out after %ld ms waiting for the Fabric Manager",
                 timeout_ms);
    else
        snprintf(buf, size, "%s", failure_class(e));
}

/* Take one of the request threads' FM slots, never waiting: false when
 * hwcoll.request_concurrency reserves are already waiting on the FM.
 */
static bool slot_take(struct hwcoll *h)
{
    bool ok;
    pthread_mutex_lock(&h->lock);
    ok = h->in_request < h->max_in_request;
    if (ok)
        h->in_request++;
    else
        h->deferred_total++;
    pthread_mutex_unlock(&h->lock);
    return ok;
}

static void slot_give(struct hwcoll *h)
{
    pthread_mutex_lock(&h->lock);
    h->in_request--;
    pthread_mutex_unlock(&h->lock);
}

void hwcoll_reserve(struct hwcoll *h, const char *actor, json_t **resp)
{
    json_t *hw = json_object_get(*resp, "hwcoll");
    const char *fm_job_id = json_string_value(json_object_get(hw, "fm_job_id"));
    long long id = json_integer_value(json_object_get(*resp, "id"));
    long timeout = h->b->cfg->hwcoll.reserve_timeout_ms;
    vnib_error_t error = {""};
    char *token = NULL, *hex = NULL;
    enum store_hwset_outcome outcome;
    char reason[96];
    json_t *rec = NULL;

    if (!h->fmc || !fm_job_id
        || strcmp(json_string_value(json_object_get(hw, "state")), "pending"))
        return;
    if (!slot_take(h)) {
        /* Enough request threads wait on the FM already: answer now and
         * let a worker reserve (the mark is in the database).
         */
        if (store_hwcoll_defer(
                h->b->store, id, DEFERRED_REASON, actor, &rec, &error)
            == 0) {
            json_decref(*resp);
            *resp = rec;
        } else
            logger_printf(h->b->log,
                          LOG_WARNING,
                          NULL,
                          "hwcoll: %s: cannot defer: %s",
                          fm_job_id,
                          error.text);
        hwcoll_kick(h);
        return;
    }
    /* The reservation was created by this request: its FM job id has
     * never been sent, so one POST does (the FM's latency once).
     */
    int frc = fmc_job_create(
        h->fmc, fm_job_id, h->addrs_per_job, timeout, &token, &error);
    int e = errno;
    slot_give(h);
    if (frc < 0) {
        note_result(h, -1, "reserve", error.text);
        /* The store finds the timed-out reserves for the worker to check
         * by this prefix ('timed out%'), so it stays.
         */
        failure_reason(e, timeout, reason, sizeof(reason));
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hwcoll: reservation %lld: %s: %s: %s",
                      id,
                      fm_job_id,
                      failure_class(e),
                      error.text);
        if (store_hwcoll_set(h->b->store,
                             id,
                             "unavailable",
                             reason,
                             NULL,
                             actor,
                             &rec,
                             &outcome,
                             &error)
            == 0) {
            json_decref(*resp);
            *resp = rec;
        }
        if (e == ETIMEDOUT)
            hwcoll_kick(h); /* the worker checks whether it came late */
        return;
    }
    note_result(h, 0, "reserve", "");
    if (seal_hex(h, id, token, &hex) < 0) {
        logger_printf(h->b->log,
                      LOG_ERR,
                      NULL,
                      "hwcoll: %s: cannot seal the token",
                      fm_job_id);
        goto done;
    }
    if (store_hwcoll_set(h->b->store,
                         id,
                         "reserved",
                         NULL,
                         hex,
                         actor,
                         &rec,
                         &outcome,
                         &error)
        < 0) {
        logger_printf(
            h->b->log, LOG_ERR, NULL, "hwcoll: %s: %s", fm_job_id, error.text);
        goto done;
    }
    if (outcome == STORE_HWSET_NOT_ACTIVE) {
        /* Released while we waited: the FM reservation is an orphan. */
        json_decref(rec);
        rec = NULL;
        if (fmc_job_delete(h->fmc, fm_job_id, &error) < 0)
            logger_printf(
                h->b->log,
                LOG_WARNING,
                NULL,
                "hwcoll: %s: released job's reservation not deleted: %s",
                fm_job_id,
                error.text);
        goto done;
    }
    json_decref(*resp);
    *resp = rec;
    rec = NULL;
    /* The caller reserved it, so may see it (scheduler or admin). */
    json_t *h2 = json_object_get(*resp, "hwcoll");
    json_object_set_new(h2, "session_token", json_string(token));
    json_object_set_new(json_object_get(*resp, "environment"),
                        "FI_CXI_COLL_MCAST_TOKEN",
                        json_string(token));
done:
    json_decref(rec);
    free(hex);
    fmc_free_secret(token);
}

void hwcoll_reveal(struct hwcoll *h, json_t *res, bool allowed)
{
    const char *hex =
        json_string_value(json_object_get(res, STORE_SEALED_TOKEN));
    char *token = NULL;

    if (hex && allowed
        && open_hex(
               h, json_integer_value(json_object_get(res, "id")), hex, &token)
               == 0) {
        json_object_set_new(json_object_get(res, "hwcoll"),
                            "session_token",
                            json_string(token));
        json_object_set_new(json_object_get(res, "environment"),
                            "FI_CXI_COLL_MCAST_TOKEN",
                            json_string(token));
        vnib_memburn(token, strlen(token));
        free(token);
    }
    json_object_del(res, STORE_SEALED_TOKEN);
}

void hwcoll_kick(struct hwcoll *h)
{
    if (!h || !h->nthreads)
        return;
    pthread_mutex_lock(&h->lock);
    h->generation++;
    pthread_cond_broadcast(&h->cond);
    pthread_cond_broadcast(&h->qcond);
    pthread_mutex_unlock(&h->lock);
}

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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep on cond until a wake-up after generation gen, or ms pass; false
 * when stopping.  Called with the lock held.
 */
static bool nap(struct hwcoll *h, pthread_cond_t *cond, unsigned gen, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    while (!h->stop && h->generation == gen
           && pthread_cond_timedwait(cond, &h->lock, &ts) != ETIMEDOUT)
        ;
    return !h->stop;
}

/* Record an FM outcome for reservation id as the workers do (actor
 * "hwcoll"); a failure is logged by the store and tried again later.
 */
static void record(struct hwcoll *h,
                   long long id,
                   const char *state,
                   const char *reason,
                   const char *hex)
{
    enum store_hwset_outcome outcome;
    vnib_error_t ignore;
    if (store_hwcoll_set(h->b->store,
                         id,
                         state,
                         reason,
                         hex,
                         "hwcoll",
                         NULL,
                         &outcome,
                         &ignore)
        < 0)
        return; /* logged by the store; the workers come back to it */
}

/* Check one reserve that timed out (or was left pending); returns 0, or
 * -1 when the FM failed.
 */
static int work_one(struct hwcoll *h, json_t *w)
{
    long long id = json_integer_value(json_object_get(w, "id"));
    const char *fm = json_string_value(json_object_get(w, "fm_job_id"));
    const char *st = json_string_value(json_object_get(w, "hwcoll_state"));
    bool active = json_is_true(json_object_get(w, "active"));
    vnib_error_t error = {""};
    enum store_hwset_outcome outcome;
    char *token = NULL, *hex = NULL;
    int rc = -1;

    if (!fm)
        return 0;
    if (!strcmp(st, "releasing")) {
        if (fmc_job_delete(h->fmc, fm, &error) < 0)
            goto failed;
        note_result(h, 0, "release", "");
        record(h, id, "released", NULL, NULL);
        logger_printf(h->b->log, LOG_INFO, NULL, "hwcoll: %s released", fm);
        return 0;
    }
    /* A reserve that timed out, or one left pending by a broker that
     * stopped during the call: did the FM complete it after all?
     */
    if (fmc_job_get(h->fmc, fm, &token, &error) < 0) {
        if (errno != ENOENT)
            goto failed;
        note_result(h, 0, "check", "");
        /* Not there yet is not an answer while the FM may still be
         * working on the POST the request gave up on: look again on
         * later passes until that call cannot land any more (twice the
         * longer of the two timeouts after the time-out); the release
         * of a job whose reservation lands later still finds it then.
         */
        double grace = 2e-3
                       * (double)(h->b->cfg->hwcoll.request_timeout_ms
                                          > h->b->cfg->hwcoll.reserve_timeout_ms
                                      ? h->b->cfg->hwcoll.request_timeout_ms
                                      : h->b->cfg->hwcoll.reserve_timeout_ms);
        if (!strcmp(st, "unavailable")
            && json_real_value(json_object_get(w, "age_s")) < grace)
            return 0;
        record(h,
               id,
               "unavailable",
               "timeout; the Fabric Manager made no reservation",
               NULL);
        return 0;
    }
    note_result(h, 0, "check", "");
    if (active && seal_hex(h, id, token, &hex) == 0
        && store_hwcoll_set(h->b->store,
                            id,
                            "reserved",
                            NULL,
                            hex,
                            "hwcoll",
                            NULL,
                            &outcome,
                            &error)
               == 0
        && outcome == STORE_HWSET_OK) {
        logger_printf(
            h->b->log,
            LOG_NOTICE,
            NULL,
            "hwcoll: %s: adopted a reservation the FM made after the timeout",
            fm);
        rc = 0;
        goto done;
    }
    /* The job ended (or cannot take it): delete the late reservation. */
    if (fmc_job_delete(h->fmc, fm, &error) < 0)
        goto failed;
    record(h,
           id,
           "unavailable",
           "timeout; the late Fabric Manager reservation was deleted",
           NULL);
    logger_printf(
        h->b->log,
        LOG_NOTICE,
        NULL,
        "hwcoll: %s: deleted a reservation the FM made after the job ended",
        fm);
    rc = 0;
    goto done;
failed:
    note_result(h, -1, st, error.text);
    logger_printf(
        h->b->log, LOG_WARNING, NULL, "hwcoll: %s: %s", fm, error.text);
done:
    free(hex);
    fmc_free_secret(token);
    return rc;
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
    vnib_error_t error = {""};
    enum store_hwset_outcome outcome;
    char reason[256];
    char *token = NULL, *hex = NULL;
    int rc = 0;

    if (!fm)
        return 0;
    if (!active) {
        record(h,
               id,
               "unavailable",
               "the job ended before the Fabric Manager "
               "was asked",
               NULL);
        return 0;
    }
    /* A worker before this one may have died during the call, after the
     * FM made the job: look first.  On the first attempt the FM job id
     * has never been sent, and one POST does.
     */
    if (attempts > 0 && fmc_job_get(h->fmc, fm, &token, &error) < 0
        && errno != ENOENT)
        goto failed;
    if (!token
        && fmc_job_create(h->fmc, fm, h->addrs_per_job, timeout, &token, &error)
               < 0)
        goto failed;
    note_result(h, 0, "reserve", "");
    if (seal_hex(h, id, token, &hex) < 0) {
        logger_printf(
            h->b->log, LOG_ERR, NULL, "hwcoll: %s: cannot seal the token", fm);
        goto done;
    }
    if (store_hwcoll_set(h->b->store,
                         id,
                         "reserved",
                         NULL,
                         hex,
                         "hwcoll",
                         NULL,
                         &outcome,
                         &error)
        < 0) {
        /* Still deferred: claimed again when the lease ends. */
        logger_printf(
            h->b->log, LOG_ERR, NULL, "hwcoll: %s: %s", fm, error.text);
        goto done;
    }
    if (outcome == STORE_HWSET_NOT_ACTIVE) {
        if (fmc_job_delete(h->fmc, fm, &error) < 0)
            logger_printf(
                h->b->log,
                LOG_WARNING,
                NULL,
                "hwcoll: %s: released job's reservation not deleted: %s",
                fm,
                error.text);
        goto done;
    }
    logger_printf(
        h->b->log, LOG_INFO, NULL, "hwcoll: %s reserved in the background", fm);
    goto done;
failed:;
    int e = errno;
    note_result(h, -1, "reserve", error.text);
    failure_reason(e, timeout, reason, sizeof(reason));
    logger_printf(h->b->log,
                  LOG_WARNING,
                  NULL,
                  "hwcoll: reservation %lld: %s: %s: %s",
                  id,
                  fm,
                  failure_class(e),
                  error.text);
    record(h, id, "unavailable", reason, NULL);
    if (e == ETIMEDOUT)
        hwcoll_kick(h); /* the leader checks whether it came late */
    rc = e == ECONNREFUSED || e == ETIMEDOUT ? -1 : 0;
done:
    free(hex);
    fmc_free_secret(token);
    return rc;
}

/* Check the reserves that timed out, a few at a time. */
static void follow_up_timeouts(struct hwcoll *h)
{
    vnib_error_t error = {""};
    json_t *work = NULL;
    if (store_hwcoll_work(h->b->store, WORK_BATCH, &work, &error) < 0)
        return;
    size_t i;
    json_t *w;
    json_array_foreach (work, i, w) {
        if (work_one(h, w) < 0)
            break;
    }
    json_decref(work);
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
              + (double)(rand_r(&(unsigned){(unsigned)mono_ms()
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
    vnib_error_t error = {""};
    vnib_error_t ignore;
    int rc;

    if (!strcmp(kind, "release_step"))
        rc = fmc_job_release_step(h->fmc, fm, step ? step : "0", &error);
    else
        rc = fmc_job_delete(h->fmc, fm, &error);
    if (rc == 0) {
        note_result(h, 0, kind, "");
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
    note_result(h, -1, kind, error.text);
    if (store_fm_retry(
            h->b->store, id, error.text, backoff_s(h, attempts), &ignore)
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
                  error.text);
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
static void *queue_main(void *arg)
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
        int64_t wait = h->paused_until - mono_ms();
        bool paused = wait > 0 || h->stop;
        unsigned gen = h->generation;
        if (!paused) {
            h->claim_woken = false; /* this pass's claim sees it all */
            if (!counted)
                h->active++;
            counted = true;
        }
        pthread_mutex_unlock(&h->lock);
        vnib_error_t error = {""};
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
        if (paused)
            goto sleep;
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
                    || mono_ms() >= next_deferred_look;
        seen_deferred = h->deferred_total;
        pthread_mutex_unlock(&h->lock);
        if (look)
            next_deferred_look = mono_ms() + 1000;
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
            h->paused_until = mono_ms() + h->pause_ms;
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
            nap(h, &h->qcond, gen, (long)wait);
        else
            nap(h, &h->qcond, gen, 1000);
    }
    if (counted)
        h->active--;
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Wakes the workers the moment a release is committed, on any replica. */
static void *listen_main(void *arg)
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

/* Run hooks.on_reservation_lost for one job, without a shell, bounded by
 * hooks.timeout_s.  Its failure is logged, never fatal.
 */
static void run_lost_hook(struct hwcoll *h,
                          const char *job_id,
                          const char *fm_job_id)
{
    const struct config *cfg = h->b->cfg;
    char *copy = NULL, *argv[64];
    int argc = 0;
    char *save = NULL;
    pid_t pid;

    if (!cfg->hooks.on_reservation_lost[0]
        || !(copy = strdup(cfg->hooks.on_reservation_lost)))
        return;
    char *subst[64] = {0};
    for (char *a = strtok_r(copy, CONFIG_LIST_SEP, &save); a && argc < 63;
         a = strtok_r(NULL, CONFIG_LIST_SEP, &save)) {
        const char *with = !strcmp(a, "{job_id}")      ? job_id
                           : !strcmp(a, "{fm_job_id}") ? fm_job_id
                                                       : NULL;
        argv[argc] = with ? (subst[argc] = strdup(with)) : a;
        if (!argv[argc])
            goto done;
        argc++;
    }
    argv[argc] = NULL;
    if (argc == 0) /* the command was only separators */
        goto done;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, fd, STDIN_FILENO);
    extern char **environ;
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (fd >= 0)
        close(fd);
    if (e != 0) {
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hook on_reservation_lost: cannot run %s: %s",
                      argv[0],
                      strerror(e));
        goto done;
    }
    int64_t deadline = mono_ms() + cfg->hooks.timeout_s * 1000;
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && mono_ms() < deadline) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hook on_reservation_lost for job %s: killed after %lds",
                      job_id,
                      cfg->hooks.timeout_s);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hook on_reservation_lost for job %s failed (status %d)",
                      job_id,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else
        logger_printf(h->b->log,
                      LOG_INFO,
                      NULL,
                      "hook on_reservation_lost ran for job %s",
                      job_id);
done:
    for (int i = 0; i < argc; i++)
        free(subst[i]);
    free(copy);
}

/* Reconcile the database with the FM's job list (leader only). */
static void reconcile(struct hwcoll *h)
{
    vnib_error_t error = {""};
    char listed_at[64];
    char **ids = NULL;
    size_t n = 0;
    json_t *res = NULL;
    int released = 0, lost = 0;
    long long foreign = 0;

    if (store_db_now(h->b->store, listed_at, sizeof(listed_at), &error) < 0)
        goto done;
    if (fmc_job_list(h->fmc, h->prefix, &ids, &n, &error) < 0) {
        note_result(h, -1, "list", error.text);
        goto done;
    }
    note_result(h, 0, "list", "");
    if (store_reconcile(
            h->b->store, ids, n, listed_at, "reconciler", &res, &error)
        < 0)
        goto done;
    size_t i;
    json_t *r;
    json_array_foreach (res, i, r) {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        const char *job = json_string_value(json_object_get(r, "job_id"));
        const char *fm = json_string_value(json_object_get(r, "fm_job_id"));
        if (!strcmp(kind, "foreign")) {
            /* FM jobs with our prefix that this database never made:
             * another cluster's (a prefix is not ownership).
             */
            foreign = strtoll(fm ? fm : "0", NULL, 10);
            logger_printf(h->b->log,
                          LOG_DEBUG,
                          NULL,
                          "hwcoll: %lld FM jobs carry the prefix %s- but are "
                          "not this cluster's; left alone",
                          foreign,
                          h->prefix);
        } else if (!strcmp(kind, "lost")) {
            lost++;
            logger_printf(
                h->b->log,
                LOG_WARNING,
                NULL,
                "hwcoll: job %s: the Fabric Manager lost reservation %s",
                job,
                fm);
            run_lost_hook(h, job, fm);
        } else {
            released++;
            logger_printf(
                h->b->log,
                LOG_NOTICE,
                NULL,
                "hwcoll: %s in the Fabric Manager belongs to no active "
                "job: queued for release",
                fm);
        }
    }
    vnib_error_clear(&error);
done:
    pthread_mutex_lock(&h->lock);
    h->rec_at = time(NULL);
    h->rec_released = released;
    h->rec_lost = lost;
    h->rec_foreign = foreign;
    h->lost_total += (unsigned long long)lost;
    h->reconciles++;
    snprintf(h->rec_error, sizeof(h->rec_error), "%s", error.text);
    pthread_mutex_unlock(&h->lock);
    if (released)
        hwcoll_kick(h);
    json_decref(res);
    fmc_free_ids(ids, n);
}

/* The leader: holds an advisory lock on a session of its own; while it
 * does, it reconciles at start, after each FM outage and every
 * hwcoll.reconcile_interval_s, and checks reserves that timed out.
 * Another replica takes over within seconds of the lock's session ending.
 */
static void *leader_main(void *arg)
{
    struct hwcoll *h = arg;
    struct store_session *ss = store_session_create(h->b->store, NULL);
    int64_t next_reconcile = 0;

    pthread_mutex_lock(&h->lock);
    while (ss && !h->stop) {
        pthread_mutex_unlock(&h->lock);
        bool lead = store_session_lead(ss, h->replica);
        pthread_mutex_lock(&h->lock);
        if (lead && !h->leading) {
            logger_printf(h->b->log,
                          LOG_NOTICE,
                          NULL,
                          "hwcoll: this replica (%s) now leads reconciliation",
                          h->replica);
            h->reconcile_now = true;
        }
        h->leading = lead;
        if (lead && (h->reconcile_now || mono_ms() >= next_reconcile)) {
            h->reconcile_now = false;
            pthread_mutex_unlock(&h->lock);
            reconcile(h);
            follow_up_timeouts(h);
            pthread_mutex_lock(&h->lock);
            next_reconcile =
                mono_ms() + h->b->cfg->hwcoll.reconcile_interval_s * 1000;
        } else if (lead) {
            pthread_mutex_unlock(&h->lock);
            follow_up_timeouts(h);
            pthread_mutex_lock(&h->lock);
        }
        if (!nap(h, &h->cond, h->generation, 2000))
            break;
    }
    pthread_mutex_unlock(&h->lock);
    store_session_destroy(ss);
    return NULL;
}

static int load_key(const char *path,
                    unsigned char key[SEAL_KEY_LEN],
                    vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;
    if (secfile_read(path, &buf, &len, errp) < 0)
        return -1;
    if (len != SEAL_KEY_LEN) {
        secfile_free(buf, len);
        errno = EINVAL;
        return errprintf(
            errp,
            "%s: the token key must be exactly %d bytes (it has %zu); "
            "'vnibctl token key --out FILE' makes one",
            path,
            SEAL_KEY_LEN,
            len);
    }
    memcpy(key, buf, SEAL_KEY_LEN);
    secfile_free(buf, len);
    return 0;
}

struct hwcoll *hwcoll_create(struct broker *b, vnib_error_t *errp)
{
    const struct config *cfg = b->cfg;
    struct hwcoll *h = calloc(1, sizeof(*h));
    pthread_condattr_t attr;

    if (!h) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    h->b = b;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cond, &attr);
    pthread_cond_init(&h->qcond, &attr);
    pthread_condattr_destroy(&attr);
    snprintf(
        h->prefix,
        sizeof(h->prefix),
        "%s",
        cfg->hwcoll.job_prefix[0] ? cfg->hwcoll.job_prefix : cfg->cluster.name);
    if (!cfg->hwcoll.enabled)
        return h;

    h->addrs_per_job = cfg->hwcoll.addrs_per_job
                           ? (int)cfg->hwcoll.addrs_per_job
                           : fmc_addrs_per_job((int)cfg->hwcoll.total_addrs,
                                               (int)cfg->hwcoll.system_size,
                                               (int)cfg->hwcoll.min_job_size,
                                               (int)cfg->hwcoll.jobs_per_node);
    if (load_key(cfg->hwcoll.token_key_file, h->key, errp) < 0)
        goto error;
    if (cfg->hwcoll.token_key_previous_file[0]) {
        if (load_key(cfg->hwcoll.token_key_previous_file, h->prev_key, errp)
            < 0)
            goto error;
        h->has_prev_key = true;
        logger_printf(b->log,
                      LOG_NOTICE,
                      NULL,
                      "hwcoll: session tokens sealed with the previous key "
                      "(%s) are still opened; new ones are sealed with %s",
                      cfg->hwcoll.token_key_previous_file,
                      cfg->hwcoll.token_key_file);
    }
    struct fmc_config fc = {
        .url = cfg->hwcoll.fm_url,
        .auth = cfg->hwcoll.auth,
        .user = cfg->hwcoll.user,
        .password_file = cfg->hwcoll.password_file,
        .token_url = cfg->hwcoll.token_url,
        .client_id = cfg->hwcoll.client_id,
        .client_secret_file = cfg->hwcoll.client_secret_file,
        .ca_file = cfg->hwcoll.ca_file,
        .cert_file = cfg->hwcoll.cert_file,
        .key_file = cfg->hwcoll.key_file,
        .tls_verify = cfg->hwcoll.tls_verify != 0,
        .timeout_ms = cfg->hwcoll.request_timeout_ms,
    };
    if (!(h->fmc = fmc_create(&fc, errp)))
        goto error;
    if (!cfg->hwcoll.tls_verify)
        logger_printf(b->log,
                      LOG_WARNING,
                      NULL,
                      "hwcoll: TLS verification of the Fabric Manager is OFF "
                      "(hwcoll.tls_verify = false): anyone on the path can "
                      "impersonate it and read its credentials");
    /* min_nodes = 0 makes no job eligible by size (hwcoll_decide). */
    char eligible[64] = "only jobs that ask for hardware collectives";
    if (cfg->hwcoll.min_nodes)
        snprintf(eligible,
                 sizeof(eligible),
                 "jobs of %ld+ nodes eligible",
                 cfg->hwcoll.min_nodes);
    logger_printf(
        b->log,
        LOG_NOTICE,
        NULL,
        "hwcoll: Fabric Manager %s (auth %s), %d multicast addresses per "
        "job%s, %s, job ids '%s-<job>'",
        cfg->hwcoll.fm_url,
        cfg->hwcoll.auth,
        h->addrs_per_job,
        cfg->hwcoll.addrs_per_job ? "" : " (computed: (M / (S / s)) / j)",
        eligible,
        h->prefix);
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    snprintf(h->replica, sizeof(h->replica), "%s:%ld", host, (long)getpid());
    /* As many FM calls from requests as the release queue makes: both are
     * sized to what the FM takes at once.
     */
    h->max_in_request = cfg->hwcoll.request_concurrency
                            ? (int)cfg->hwcoll.request_concurrency
                            : (int)cfg->hwcoll.fm_concurrency;
    if (h->max_in_request < 1)
        h->max_in_request = 1;
    int nworkers = (int)cfg->hwcoll.fm_concurrency;
    if (!(h->threads = calloc((size_t)nworkers + 2, sizeof(*h->threads)))) {
        errprintf(errp, "out of memory");
        goto error;
    }
    for (int i = 0; i < nworkers + 2; i++) {
        void *(*fn)(void *) = i < nworkers    ? queue_main
                              : i == nworkers ? listen_main
                                              : leader_main;
        if (pthread_create(&h->threads[i], NULL, fn, h) != 0) {
            errprintf(errp, "cannot start the hwcoll threads");
            goto error;
        }
        h->nthreads++;
    }
    return h;
error:
    hwcoll_destroy(h);
    return NULL;
}

void hwcoll_destroy(struct hwcoll *h)
{
    int saved_errno = errno;
    if (h) {
        if (h->nthreads) {
            pthread_mutex_lock(&h->lock);
            h->stop = true;
            pthread_cond_broadcast(&h->cond);
            pthread_cond_broadcast(&h->qcond);
            pthread_mutex_unlock(&h->lock);
            for (int i = 0; i < h->nthreads; i++)
                pthread_join(h->threads[i], NULL);
        }
        free(h->threads);
        fmc_destroy(h->fmc);
        vnib_memburn(h->key, sizeof(h->key));
        vnib_memburn(h->prev_key, sizeof(h->prev_key));
        pthread_cond_destroy(&h->cond);
        pthread_cond_destroy(&h->qcond);
        pthread_mutex_destroy(&h->lock);
        free(h);
    }
    errno = saved_errno;
}

static json_t *time_or_null(time_t t)
{
    char buf[32];
    struct tm tm;
    if (!t)
        return json_null();
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

int hwcoll_status(struct hwcoll *h,
                  bool detail,
                  json_t **out,
                  vnib_error_t *errp)
{
    const struct config *cfg = h->b->cfg;
    json_t *counts = NULL, *leader = NULL;
    long long depth = 0;
    double oldest = 0;
    const char *conn;

    if (store_hwcoll_counts(h->b->store, &counts, errp) < 0
        || store_fm_queue_stats(h->b->store, &depth, &oldest, errp) < 0
        || store_leader_get(h->b->store, &leader, errp) < 0) {
        json_decref(counts);
        return -1;
    }
    pthread_mutex_lock(&h->lock);
    if (!h->fmc)
        conn = "disabled";
    else if (!h->last_success && !h->last_error)
        conn = "unknown";
    else
        conn = h->last_ok ? "up" : "down";
    json_t *rec = h->rec_at
                      ? json_pack("{s:o, s:i, s:i, s:I, s:o}",
                                  "at",
                                  time_or_null(h->rec_at),
                                  "released",
                                  h->rec_released,
                                  "lost",
                                  h->rec_lost,
                                  "foreign",
                                  (json_int_t)h->rec_foreign,
                                  "error",
                                  !h->rec_error[0] ? json_null()
                                  : detail         ? json_string(h->rec_error)
                                           : json_string("reconcile failed"))
                      : json_null();
    *out = json_pack(
        "{s:b, s:b, s:s, s:s, s:b, s:s, s:i, s:I, s:s, s:o, s:o, s:o,"
        " s:{s:I, s:f}, s:o, s:o, s:s, s:b}",
        "configured",
        cfg->hwcoll.enabled && cfg->hwcoll.fm_url[0],
        "enabled",
        (int)cfg->hwcoll.enabled,
        "url",
        cfg->hwcoll.fm_url,
        "auth",
        cfg->hwcoll.auth,
        "tls_verify",
        (int)cfg->hwcoll.tls_verify,
        "job_prefix",
        h->prefix,
        "addrs_per_job",
        h->addrs_per_job,
        "min_nodes",
        (json_int_t)cfg->hwcoll.min_nodes,
        "connection",
        conn,
        "last_success",
        time_or_null(h->last_success),
        "last_error",
        h->last_error
            ? json_pack("{s:o, s:s}",
                        "time",
                        time_or_null(h->last_error),
                        "message",
                        detail ? h->last_error_text : h->last_error_class)
            : json_null(),
        "reservations",
        counts,
        "queue",
        "depth",
        (json_int_t)depth,
        "oldest_s",
        oldest,
        "last_reconcile",
        rec,
        "leader",
        leader,
        "replica",
        h->replica,
        "leading",
        h->leading);
    pthread_mutex_unlock(&h->lock);
    if (!*out)
        return errprintf(errp, "out of memory");
    return 0;
}

int hwcoll_request_concurrency(const struct hwcoll *h)
{
    return h->max_in_request;
}

void hwcoll_write_metrics(struct hwcoll *h, FILE *f)
{
    pthread_mutex_lock(&h->lock);
    fprintf(
        f,
        "# HELP vnib_fm_ops_total Fabric Manager queue operations, by result.\n"
        "# TYPE vnib_fm_ops_total counter\n"
        "vnib_fm_ops_total{result=\"done\"} %llu\n"
        "vnib_fm_ops_total{result=\"retried\"} %llu\n"
        "# HELP vnib_hwcoll_lost_total Active reservations the Fabric "
        "Manager lost.\n"
        "# TYPE vnib_hwcoll_lost_total counter\n"
        "vnib_hwcoll_lost_total %llu\n"
        "# HELP vnib_fm_reconciles_total Reconciliations run by this replica.\n"
        "# TYPE vnib_fm_reconciles_total counter\n"
        "vnib_fm_reconciles_total %llu\n"
        "# HELP vnib_hwcoll_deferred_total Reserves left to the workers: "
        "hwcoll.request_concurrency were waiting on the Fabric Manager.\n"
        "# TYPE vnib_hwcoll_deferred_total counter\n"
        "vnib_hwcoll_deferred_total %llu\n"
        "# HELP vnib_fm_leader Whether this replica leads reconciliation.\n"
        "# TYPE vnib_fm_leader gauge\n"
        "vnib_fm_leader %d\n",
        h->ops_done,
        h->ops_retried,
        h->lost_total,
        h->reconciles,
        h->deferred_total,
        h->leading ? 1 : 0);
    /* Unknown until this replica has called the FM (a follower may not
     * for a long time): absent rather than a 0 that reads as down.
     */
    if (h->last_success || h->last_error)
        fprintf(f,
                "# HELP vnib_fm_up Whether this replica's last Fabric Manager "
                "call succeeded (absent before its first call).\n"
                "# TYPE vnib_fm_up gauge\n"
                "vnib_fm_up %d\n",
                h->last_ok ? 1 : 0);
    pthread_mutex_unlock(&h->lock);
}

int hwcoll_release_step(struct hwcoll *h,
                        const char *job_id,
                        const char *step_id,
                        const char *actor,
                        enum store_step_outcome *outcomep,
                        vnib_error_t *errp)
{
    return store_step_release(
        h->b->store, job_id, step_id, actor, outcomep, errp);
}
