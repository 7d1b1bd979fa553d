/* Fabric Manager multicast reservations (see hwcoll.h).
 *
 * The request thread makes the reserve call itself, under its own short
 * timeout, so that a scheduler's reply carries the outcome.  Everything
 * that may take longer or must be retried (releases, and checking reserves
 * that timed out) belongs to one worker thread, which takes its work from
 * the database and so loses nothing across crashes and restarts.  The
 * worker backs off while the FM is failing instead of spinning.
 */
#include <errno.h>
#include <pthread.h>
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

/* Worker pacing: the idle period, and the longest back-off while the FM
 * keeps failing.
 */
#define IDLE_MS 2000
#define BACKOFF_MAX_MS 30000

struct hwcoll {
    struct broker *b;
    struct fmc *fmc;                 /* NULL when disabled */
    unsigned char key[SEAL_KEY_LEN]; /* seals session tokens */
    int addrs_per_job;               /* configured or computed */
    char prefix[128];                /* FM job ids are "<prefix>-<job>" */

    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;   /* under lock */
    bool kicked; /* under lock */

    /* Connection state for /v1/fabric-manager, under lock. */
    time_t last_success;
    time_t last_error;
    bool last_ok; /* the most recent call succeeded */
    char last_error_text[160];
};

static void note_result(struct hwcoll *h,
                        int rc,
                        const char *what,
                        const char *msg)
{
    pthread_mutex_lock(&h->lock);
    h->last_ok = rc == 0;
    if (rc == 0)
        h->last_success = time(NULL);
    else {
        h->last_error = time(NULL);
        snprintf(h->last_error_text,
                 sizeof(h->last_error_text),
                 "%s: %s",
                 what,
                 msg);
    }
    pthread_mutex_unlock(&h->lock);
}

/* Seal a token for reservation id; hex into *hexp (caller frees). */
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
    snprintf(fm_job_id, size, "%s-%s", h->prefix, a->job_id);
    a->hwcoll_state = "pending";
    a->fm_job_id = fm_job_id;
    a->addrs_per_job = h->addrs_per_job;
}

/* Why a reserve call failed, as the reservation will say. */
static void failure_reason(
    int e, long timeout_ms, const char *msg, char *buf, size_t size)
{
    if (e == ETIMEDOUT)
        snprintf(buf,
                 size,
                 "timed out after %ld ms waiting for the Fabric Manager",
                 timeout_ms);
    else if (e == ECONNREFUSED)
        snprintf(buf, size, "Fabric Manager unreachable: %s", msg);
    else if (e == ENOSPC)
        snprintf(
            buf, size, "Fabric Manager out of multicast addresses: %s", msg);
    else
        snprintf(buf, size, "Fabric Manager refused: %s", msg);
}

void hwcoll_reserve(struct hwcoll *h, const char *actor, json_t **resp)
{
    json_t *hw = json_object_get(*resp, "hwcoll");
    const char *fm_job_id = json_string_value(json_object_get(hw, "fm_job_id"));
    long long id = json_integer_value(json_object_get(*resp, "id"));
    long timeout = h->b->cfg->hwcoll.reserve_timeout_ms;
    vnib_error_t error = {""};
    char *token = NULL, *hex = NULL;
    char outcome[32], reason[256];
    json_t *rec = NULL;

    if (!h->fmc || !fm_job_id
        || strcmp(json_string_value(json_object_get(hw, "state")), "pending"))
        return;
    if (fmc_job_reserve(
            h->fmc, fm_job_id, h->addrs_per_job, timeout, &token, &error)
        < 0) {
        int e = errno;
        note_result(h, -1, "reserve", error.text);
        failure_reason(e, timeout, error.text, reason, sizeof(reason));
        logger_printf(
            h->b->log, LOG_WARNING, NULL, "hwcoll: %s: %s", fm_job_id, reason);
        if (store_hwcoll_set(h->b->store,
                             id,
                             "unavailable",
                             reason,
                             NULL,
                             actor,
                             &rec,
                             outcome,
                             sizeof(outcome),
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
                         outcome,
                         sizeof(outcome),
                         &error)
        < 0) {
        logger_printf(
            h->b->log, LOG_ERR, NULL, "hwcoll: %s: %s", fm_job_id, error.text);
        goto done;
    }
    if (!strcmp(outcome, "not_active")) {
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
    if (!h || !h->thread_started)
        return;
    pthread_mutex_lock(&h->lock);
    h->kicked = true;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

/* One work item; returns 0, or -1 when the FM failed (back off). */
static int work_one(struct hwcoll *h, json_t *w)
{
    long long id = json_integer_value(json_object_get(w, "id"));
    const char *fm = json_string_value(json_object_get(w, "fm_job_id"));
    const char *st = json_string_value(json_object_get(w, "hwcoll_state"));
    bool active = json_is_true(json_object_get(w, "active"));
    vnib_error_t error = {""};
    char outcome[32];
    char *token = NULL, *hex = NULL;
    int rc = -1;

    if (!fm)
        return 0;
    if (!strcmp(st, "releasing")) {
        if (fmc_job_delete(h->fmc, fm, &error) < 0)
            goto failed;
        note_result(h, 0, "release", "");
        (void)store_hwcoll_set(h->b->store,
                               id,
                               "released",
                               NULL,
                               NULL,
                               "hwcoll",
                               NULL,
                               outcome,
                               sizeof(outcome),
                               &error);
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
        (void)store_hwcoll_set(
            h->b->store,
            id,
            "unavailable",
            "timeout; the Fabric Manager made no reservation",
            NULL,
            "hwcoll",
            NULL,
            outcome,
            sizeof(outcome),
            &error);
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
                            outcome,
                            sizeof(outcome),
                            &error)
               == 0
        && !strcmp(outcome, "ok")) {
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
    (void)store_hwcoll_set(
        h->b->store,
        id,
        "unavailable",
        "timeout; the late Fabric Manager reservation was deleted",
        NULL,
        "hwcoll",
        NULL,
        outcome,
        sizeof(outcome),
        &error);
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

static void *worker_main(void *arg)
{
    struct hwcoll *h = arg;
    long wait_ms = 0;

    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long ms = wait_ms ? wait_ms : IDLE_MS;
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (ms % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        /* A kick wakes the worker unless it is backing off. */
        while (!h->stop && !(h->kicked && !wait_ms)
               && pthread_cond_timedwait(&h->cond, &h->lock, &ts) != ETIMEDOUT)
            ;
        h->kicked = false;
        if (h->stop)
            break;
        pthread_mutex_unlock(&h->lock);

        vnib_error_t error = {""};
        json_t *work = NULL;
        int failures = 0;
        if (store_hwcoll_work(h->b->store, WORK_BATCH, &work, &error) == 0) {
            size_t i;
            json_t *w;
            json_array_foreach(work, i, w)
            {
                if (work_one(h, w) < 0 && ++failures >= 3)
                    break; /* the FM is failing: stop hammering it */
            }
            json_decref(work);
        }
        wait_ms = failures ? (wait_ms ? wait_ms * 2 : 500) : 0;
        if (wait_ms > BACKOFF_MAX_MS)
            wait_ms = BACKOFF_MAX_MS;
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static int load_key(struct hwcoll *h, const char *path, vnib_error_t *errp)
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
    memcpy(h->key, buf, SEAL_KEY_LEN);
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
    if (load_key(h, cfg->hwcoll.token_key_file, errp) < 0)
        goto error;
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
    logger_printf(
        b->log,
        LOG_NOTICE,
        NULL,
        "hwcoll: Fabric Manager %s (auth %s), %d multicast addresses per "
        "job%s, jobs of %ld+ nodes eligible, job ids '%s-<job>'",
        cfg->hwcoll.fm_url,
        cfg->hwcoll.auth,
        h->addrs_per_job,
        cfg->hwcoll.addrs_per_job ? "" : " (computed: (M / (S / s)) / j)",
        cfg->hwcoll.min_nodes,
        h->prefix);
    if (pthread_create(&h->thread, NULL, worker_main, h) != 0) {
        errprintf(errp, "cannot start the hwcoll worker");
        goto error;
    }
    h->thread_started = true;
    return h;
error:
    hwcoll_destroy(h);
    return NULL;
}

void hwcoll_destroy(struct hwcoll *h)
{
    int saved_errno = errno;
    if (h) {
        if (h->thread_started) {
            pthread_mutex_lock(&h->lock);
            h->stop = true;
            pthread_cond_signal(&h->cond);
            pthread_mutex_unlock(&h->lock);
            pthread_join(h->thread, NULL);
        }
        fmc_destroy(h->fmc);
        vnib_memburn(h->key, sizeof(h->key));
        pthread_cond_destroy(&h->cond);
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

int hwcoll_status(struct hwcoll *h, json_t **out, vnib_error_t *errp)
{
    const struct config *cfg = h->b->cfg;
    json_t *counts = NULL;
    const char *conn;

    if (store_hwcoll_counts(h->b->store, &counts, errp) < 0)
        return -1;
    pthread_mutex_lock(&h->lock);
    if (!h->fmc)
        conn = "disabled";
    else if (!h->last_success && !h->last_error)
        conn = "unknown";
    else
        conn = h->last_ok ? "up" : "down";
    *out = json_pack(
        "{s:b, s:b, s:s, s:s, s:b, s:s, s:i, s:I, s:s, s:o, s:o, s:o}",
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
        h->last_error ? json_pack("{s:o, s:s}",
                                  "time",
                                  time_or_null(h->last_error),
                                  "message",
                                  h->last_error_text)
                      : json_null(),
        "reservations",
        counts);
    pthread_mutex_unlock(&h->lock);
    if (!*out)
        return errprintf(errp, "out of memory");
    return 0;
}
