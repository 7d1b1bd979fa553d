/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fabric Manager multicast reservations (see hwcoll.h): the hwcoll
 * object, the request thread's reserve, the reveal of session tokens,
 * status and metrics, and the helpers that every FM call shares
 * (hwcoll_int.h).
 *
 * The request thread makes the reserve call itself, under its own short
 * timeout, so that a scheduler's reply carries the outcome; but only
 * hwcoll.request_concurrency of them at once, and past that the queue
 * workers make the call (a deferred reserve, fmqueue.c).  What may take
 * longer or must be retried belongs to the release-queue workers
 * (fmqueue.c); reconciliation with the FM and the follow-up of reserves
 * that timed out to the leader (fmleader.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnib/monotime.h"
#include "vnib/hex.h"
#include "vnib/fmclient.h"
#include "vnib/logger.h"
#include "vnib/seal.h"
#include "vnib/secfile.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/hwcoll/hwcoll_int.h"
#include "server/inventory.h"
#include "server/store/store_fm.h"
#include "server/store/store_reservations.h"
#include "server/store/store_steps.h"

/* What a reservation says while a worker, not the request, reserves. */
#define DEFERRED_REASON                                                \
    "the Fabric Manager is busy; the reservation is completed in the " \
    "background"

void hwcoll_note_result(struct hwcoll *h,
                        const char *what,
                        const struct fmc_error *err)
{
    char reason[HWSTATE_REASON_MAX] = "";

    if (err)
        hwstate_fault_reason(err, reason, sizeof(reason));
    pthread_mutex_lock(&h->lock);
    if (!err && !h->last_ok && h->last_error)
        h->reconcile_now = true; /* back after an outage */
    h->last_ok = !err;
    if (!err)
        h->last_success = time(NULL);
    else {
        h->last_error = time(NULL);
        snprintf(
            h->last_error_reason, sizeof(h->last_error_reason), "%s", reason);
        snprintf(h->last_error_text,
                 sizeof(h->last_error_text),
                 "%s: %s",
                 what,
                 err->msg.text);
    }
    pthread_mutex_unlock(&h->lock);
}

/* (hwcoll_int.h) Always with the current key: a value sealed with the previous
 * one is left as it is (open_hex reads it), and goes with its reservation.
 */
int hwcoll_seal_hex(struct hwcoll *h,
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
    hex_encode(sealed, len, hex);
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
    if (hex_decode(hex, raw, n) < 0) {
        free(raw);
        return -1;
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
        a->hwcoll_state = HWSTATE_DISABLED;
        a->hwcoll_reason =
            "hardware collectives are not enabled on this broker";
        return;
    }
    if (!strcmp(mode, "off")) {
        a->hwcoll_state = HWSTATE_NOT_ELIGIBLE;
        a->hwcoll_reason = "off by request";
        return;
    }
    if (!strcmp(mode, "auto")
        && (cfg->hwcoll.min_nodes == 0
            || a->node_count < (size_t)cfg->hwcoll.min_nodes)) {
        a->hwcoll_state = HWSTATE_NOT_ELIGIBLE;
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
    a->hwcoll_state = HWSTATE_PENDING;
    a->fm_job_id = fm_job_id;
    a->addrs_per_job = h->addrs_per_job;
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

void hwcoll_reserve_failed(struct hwcoll *h,
                           const struct hwcoll_call *c,
                           int e,
                           const struct fmc_error *err,
                           json_t **recp)
{
    enum hwstate_cause cause = hwstate_cause_of_errno(e);
    enum store_hwset_outcome outcome;
    vnib_error_t error = {0};
    char reason[HWSTATE_REASON_MAX];

    hwcoll_note_result(h, "reserve", err);
    hwstate_fault_reason(err, reason, sizeof(reason));
    logger_printf(h->b->log,
                  LOG_WARNING,
                  NULL,
                  "hwcoll: reservation %lld: %s: %s: %s",
                  c->id,
                  c->fm,
                  reason,
                  err->msg.text);
    if (store_hwcoll_set(h->b->store,
                         c->id,
                         HWSTATE_UNAVAILABLE,
                         cause,
                         reason,
                         NULL,
                         c->actor,
                         recp,
                         &outcome,
                         &error)
            < 0
        && recp)
        *recp = NULL; /* logged by the store */
    if (cause == HWSTATE_CAUSE_TIMEOUT)
        hwcoll_kick(h); /* the leader checks whether it came late */
}

int hwcoll_reserve_done(struct hwcoll *h,
                        const struct hwcoll_call *c,
                        const char *token,
                        json_t **recp)
{
    vnib_error_t error = {0};
    enum store_hwset_outcome outcome;
    json_t *rec = NULL;
    char *hex = NULL;
    int rc = -1;

    if (hwcoll_seal_hex(h, c->id, token, &hex) < 0) {
        logger_printf(h->b->log,
                      LOG_ERR,
                      NULL,
                      "hwcoll: %s: cannot seal the token",
                      c->fm);
        goto done;
    }
    if (store_hwcoll_set(h->b->store,
                         c->id,
                         HWSTATE_RESERVED,
                         HWSTATE_CAUSE_NONE,
                         NULL,
                         hex,
                         c->actor,
                         recp ? &rec : NULL,
                         &outcome,
                         &error)
        < 0) {
        logger_printf(
            h->b->log, LOG_ERR, NULL, "hwcoll: %s: %s", c->fm, error.text);
        goto done;
    }
    if (outcome == STORE_HWSET_NOT_ACTIVE) {
        /* Released while the FM worked: its reservation is an orphan. */
        struct fmc_error fail = {.fault = FMC_FAULT_NONE};
        if (fmc_job_delete(h->fmc, c->fm, &fail) < 0)
            logger_printf(
                h->b->log,
                LOG_WARNING,
                NULL,
                "hwcoll: %s: released job's reservation not deleted: %s",
                c->fm,
                fail.msg.text);
        rc = 0;
        goto done;
    }
    if (recp) {
        *recp = rec;
        rec = NULL;
    }
    rc = 1;
done:
    json_decref(rec);
    free(hex);
    return rc;
}

void hwcoll_reserve(struct hwcoll *h, const char *actor, json_t **resp)
{
    json_t *hw = json_object_get(*resp, "hwcoll");
    const char *fm_job_id = json_string_value(json_object_get(hw, "fm_job_id"));
    long long id = json_integer_value(json_object_get(*resp, "id"));
    long timeout = h->b->cfg->hwcoll.reserve_timeout_ms;
    struct hwcoll_call call = {id, fm_job_id, actor};
    struct fmc_error fail = {.fault = FMC_FAULT_NONE};
    vnib_error_t error = {0};
    char *token = NULL;
    json_t *rec = NULL;

    if (!h->fmc || !fm_job_id
        || strcmp(json_string_value(json_object_get(hw, "state")),
                  hwstate_name(HWSTATE_PENDING)))
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
        h->fmc, fm_job_id, h->addrs_per_job, timeout, &token, &fail);
    int e = errno;
    slot_give(h);
    if (frc < 0) {
        hwcoll_reserve_failed(h, &call, e, &fail, &rec);
        if (rec) {
            json_decref(*resp);
            *resp = rec;
        }
        return;
    }
    hwcoll_note_result(h, "reserve", NULL);
    if (hwcoll_reserve_done(h, &call, token, &rec) > 0) {
        json_decref(*resp);
        *resp = rec;
        /* The caller reserved it, so may see it (scheduler or admin). */
        json_t *h2 = json_object_get(*resp, "hwcoll");
        json_object_set_new(h2, "session_token", json_string(token));
        json_object_set_new(json_object_get(*resp, "environment"),
                            "FI_CXI_COLL_MCAST_TOKEN",
                            json_string(token));
    }
    fmc_free_secret(token);
}

void hwcoll_reveal(struct hwcoll *h, json_t *res, bool allowed)
{
    const char *hex =
        json_string_value(json_object_get(res, STORE_SEALED_TOKEN));
    /* A step's token is its job's, sealed under the job's reservation. */
    json_t *sealed_id = json_object_get(res, STORE_SEALED_ID);
    long long id =
        json_integer_value(sealed_id ? sealed_id : json_object_get(res, "id"));
    char *token = NULL;

    if (hex && allowed && open_hex(h, id, hex, &token) == 0) {
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
    json_object_del(res, STORE_SEALED_ID);
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

bool hwcoll_nap(struct hwcoll *h, pthread_cond_t *cond, unsigned gen, long ms)
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

void hwcoll_record(struct hwcoll *h,
                   long long id,
                   enum hwstate state,
                   enum hwstate_cause cause,
                   const char *hex)
{
    enum store_hwset_outcome outcome;
    vnib_error_t ignore;
    if (store_hwcoll_set(h->b->store,
                         id,
                         state,
                         cause,
                         hwstate_cause_phrase(cause),
                         hex,
                         "hwcoll",
                         NULL,
                         &outcome,
                         &ignore)
        < 0)
        return; /* logged by the store; the workers come back to it */
}

static int load_key(const char *path,
                    unsigned char key[SEAL_KEY_LEN],
                    vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;
    if (secfile_read_owned(path, &buf, &len, errp) < 0)
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

    /* S and s may come from cluster.topology_file (inventory.h). */
    struct inventory_sizing sizing;
    inventory_sizing(cfg, b->inv, &sizing);
    h->addrs_per_job = sizing.addrs_per_job;
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
        "job%s, %s, FM job ids '%s-<job>-r<reservation id>'",
        cfg->hwcoll.fm_url,
        cfg->hwcoll.auth,
        h->addrs_per_job,
        cfg->hwcoll.addrs_per_job  ? ""
        : sizing.min_job_size == 0 ? " (computed: (M / (S / s)) / j, S / s "
                                     "= the topology's leaf switches)"
                                   : " (computed: (M / (S / s)) / j)",
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
        void *(*fn)(void *) = i < nworkers    ? fmqueue_worker_main
                              : i == nworkers ? fmqueue_listen_main
                                              : fmleader_main;
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
            ? json_pack("{s:o, s:s, s:s}",
                        "time",
                        time_or_null(h->last_error),
                        "reason",
                        h->last_error_reason,
                        "message",
                        detail ? h->last_error_text : h->last_error_reason)
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
