/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Figures from the database for /metrics and GET /v1/status (see
 * gauges.h).
 *
 * One thread reads, under the request timeouts, what GET /v1/pool reports
 * (the same query, so the two agree), the quarantine and drain figures
 * (one more set-based statement), the Fabric Manager queue's depth and
 * oldest age when hwcoll is enabled, and the schema version.  Each pool
 * reading also goes into the history ring GET /v1/status shows.  The figures
 * sit under a mutex with the monotonic time they were read; a figure that
 * fails to refresh keeps its last value and grows old, which its age
 * series shows.  A failure to read is logged once per outage, not once
 * per interval.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vnib/monotime.h"
#include "vnib/logger.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/bg/gauges.h"
#include "server/bg/history.h"
#include "server/store/store_fm.h"
#include "server/store/store_migrate.h"
#include "server/store/store_pool.h"
#include "server/store/store_status.h"

/* One reading of GET /v1/pool. */
struct pool_figures {
    long long total, free, active, quarantined, cooling, outside;
};

struct gauges {
    struct broker *broker;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop; /* under lock */

    /* The last figures, under lock; *_at is 0 until first read. */
    int64_t pool_at; /* monotonic ms */
    struct pool_figures pool;
    int64_t fm_at;
    long long fm_depth;
    double fm_oldest_s;
    int64_t status_at;
    struct store_status_figures status;
    bool db_up;              /* the last reading succeeded */
    struct history *history; /* one sample per pool reading */

    /* GET /v1/status replies, by key (role and query), under lock. */
    struct {
        char key[GAUGES_CACHE_KEY];
        int64_t at; /* monotonic ms; 0: empty */
        json_t *reply;
    } cache[GAUGES_CACHE_SLOTS];

    /* The thread's own. */
    int schema_seen; /* last version read (warned about when newer) */
    bool failing;    /* the last reading failed (logged once) */
};

static long long field(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* Warn when the schema changed to one newer than this binary knows. */
static int read_schema(struct gauges *g, vnib_error_t *errp)
{
    struct broker *b = g->broker;
    int version, need = store_required_version();

    if (store_schema_version(b->store, &version, errp) < 0)
        return -1;
    if (version != g->schema_seen && version > need)
        gauges_warn_newer(b->log, version);
    g->schema_seen = version;
    return 0;
}

void gauges_warn_newer(struct logger *log, int version)
{
    logger_printf(log,
                  LOG_WARNING,
                  NULL,
                  "database schema %d is newer than this vnibrokerd (%d): "
                  "a newer replica migrated it; upgrade this one soon",
                  version,
                  store_required_version());
}

static int read_pool(struct gauges *g, vnib_error_t *errp)
{
    struct broker *b = g->broker;
    json_t *pool = NULL;

    if (store_pool(b->store, b->cfg->vni_pool, &pool, errp) < 0)
        return -1;
    struct pool_figures p = {
        .total = field(pool, "total"),
        .free = field(pool, "free"),
        .active = field(pool, "active"),
        .quarantined = field(pool, "quarantined"),
        .cooling = field(pool, "cooling"),
        .outside = field(pool, "outside_pool"),
    };
    json_decref(pool);
    struct history_sample h = {
        .t = time(NULL),
        .free = p.free,
        .active = p.active,
        .quarantined = p.quarantined,
        .outside = p.outside,
    };
    pthread_mutex_lock(&g->lock);
    g->pool = p;
    g->pool_at = monotime_ms();
    history_push(g->history, &h);
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static int read_status(struct gauges *g, vnib_error_t *errp)
{
    struct store_status_figures f;

    if (store_status_figures(g->broker->store, &f, errp) < 0)
        return -1;
    pthread_mutex_lock(&g->lock);
    g->status = f;
    g->status_at = monotime_ms();
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static int read_fm_queue(struct gauges *g, vnib_error_t *errp)
{
    long long depth;
    double oldest;

    if (!g->broker->cfg->hwcoll.enabled)
        return 0;
    if (store_fm_queue_stats(g->broker->store, &depth, &oldest, errp) < 0)
        return -1;
    pthread_mutex_lock(&g->lock);
    g->fm_depth = depth;
    g->fm_oldest_s = oldest;
    g->fm_at = monotime_ms();
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static void refresh(struct gauges *g)
{
    vnib_error_t error = {0};
    struct logger *log = g->broker->log;

    bool ok = read_schema(g, &error) == 0 && read_pool(g, &error) == 0
              && read_status(g, &error) == 0 && read_fm_queue(g, &error) == 0;

    pthread_mutex_lock(&g->lock);
    g->db_up = ok;
    pthread_mutex_unlock(&g->lock);
    if (!ok) {
        if (!g->failing)
            logger_printf(log,
                          LOG_WARNING,
                          NULL,
                          "metrics: cannot read the pool figures: %s",
                          error.text);
        g->failing = true;
        return;
    }
    if (g->failing)
        logger_printf(log, LOG_INFO, NULL, "metrics: pool figures read again");
    g->failing = false;
}

static void *gauges_main(void *arg)
{
    struct gauges *g = arg;

    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        pthread_mutex_unlock(&g->lock);
        refresh(g);
        pthread_mutex_lock(&g->lock);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += GAUGES_INTERVAL_S;
        while (!g->stop
               && pthread_cond_timedwait(&g->cond, &g->lock, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

struct gauges *gauges_create(struct broker *b,
                             int schema_version,
                             vnib_error_t *errp)
{
    struct gauges *g = calloc(1, sizeof(*g));
    pthread_condattr_t attr;
    int e;

    if (!g) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    g->broker = b;
    g->schema_seen = schema_version;
    if (!(g->history = history_create(HISTORY_CAPACITY))) {
        free(g);
        errprintf(errp, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cond, &attr);
    pthread_condattr_destroy(&attr);
    if ((e = pthread_create(&g->thread, NULL, gauges_main, g)) != 0) {
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        history_destroy(g->history);
        free(g);
        errno = e;
        errprintf(errp, "cannot start the metrics thread");
        return NULL;
    }
    return g;
}

void gauges_destroy(struct gauges *g)
{
    int saved_errno = errno;
    if (g) {
        pthread_mutex_lock(&g->lock);
        g->stop = true;
        pthread_cond_signal(&g->cond);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->thread, NULL);
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        for (size_t i = 0; i < GAUGES_CACHE_SLOTS; i++)
            json_decref(g->cache[i].reply);
        history_destroy(g->history);
        free(g);
    }
    errno = saved_errno;
}

void gauges_write_metrics(struct gauges *g, FILE *f)
{
    int64_t now = monotime_ms();

    pthread_mutex_lock(&g->lock);
    fprintf(f,
            "# HELP vnib_db_up 1 when the last reading of the figures from "
            "the database succeeded, else 0.\n"
            "# TYPE vnib_db_up gauge\n"
            "vnib_db_up %d\n",
            g->db_up ? 1 : 0);
    if (g->pool_at || g->fm_at || g->status_at)
        fprintf(f,
                "# HELP vnib_db_figures_age_seconds Seconds since the figures "
                "read from the database every %d s were last read.\n"
                "# TYPE vnib_db_figures_age_seconds gauge\n",
                GAUGES_INTERVAL_S);
    if (g->pool_at)
        fprintf(f,
                "vnib_db_figures_age_seconds{figures=\"vni_pool\"} %.3f\n",
                (double)(now - g->pool_at) / 1000);
    if (g->fm_at)
        fprintf(f,
                "vnib_db_figures_age_seconds{figures=\"fm_queue\"} %.3f\n",
                (double)(now - g->fm_at) / 1000);
    if (g->status_at)
        fprintf(f,
                "vnib_db_figures_age_seconds{figures=\"status\"} %.3f\n"
                "# HELP vnib_quarantine_reservations Reservations releasing "
                "with VNIs still held (waiting for their nodes).\n"
                "# TYPE vnib_quarantine_reservations gauge\n"
                "vnib_quarantine_reservations %lld\n"
                "# HELP vnib_quarantine_oldest_seconds Age of the oldest "
                "quarantine (0: none).\n"
                "# TYPE vnib_quarantine_oldest_seconds gauge\n"
                "vnib_quarantine_oldest_seconds %.3f\n"
                "# HELP vnib_nodes_drained Drained nodes.\n"
                "# TYPE vnib_nodes_drained gauge\n"
                "vnib_nodes_drained %lld\n",
                (double)(now - g->status_at) / 1000,
                g->status.quarantine_reservations,
                g->status.oldest_age_s,
                g->status.drained);
    if (g->pool_at)
        fprintf(f,
                "# HELP vnib_vni_pool_size VNIs in vni.pool.\n"
                "# TYPE vnib_vni_pool_size gauge\n"
                "vnib_vni_pool_size %lld\n"
                "# HELP vnib_vni_pool_vnis VNIs by state, as GET /v1/pool "
                "reports them (cooling: free but not handed out before the "
                "leases that named them expired; outside_pool: active or "
                "quarantined VNIs "
                "outside vni.pool, counted in those states too).\n"
                "# TYPE vnib_vni_pool_vnis gauge\n"
                "vnib_vni_pool_vnis{state=\"free\"} %lld\n"
                "vnib_vni_pool_vnis{state=\"active\"} %lld\n"
                "vnib_vni_pool_vnis{state=\"quarantined\"} %lld\n"
                "vnib_vni_pool_vnis{state=\"cooling\"} %lld\n"
                "vnib_vni_pool_vnis{state=\"outside_pool\"} %lld\n",
                g->pool.total,
                g->pool.free,
                g->pool.active,
                g->pool.quarantined,
                g->pool.cooling,
                g->pool.outside);
    if (g->fm_at)
        fprintf(f,
                "# HELP vnib_fm_queue_depth Fabric Manager operations queued "
                "(all replicas).\n"
                "# TYPE vnib_fm_queue_depth gauge\n"
                "vnib_fm_queue_depth %lld\n"
                "# HELP vnib_fm_queue_oldest_seconds Age of the oldest queued "
                "operation (0: none).\n"
                "# TYPE vnib_fm_queue_oldest_seconds gauge\n"
                "vnib_fm_queue_oldest_seconds %.3f\n",
                g->fm_depth,
                g->fm_oldest_s);
    pthread_mutex_unlock(&g->lock);
}

json_t *gauges_history(struct gauges *g, int seconds)
{
    json_t *samples;

    pthread_mutex_lock(&g->lock);
    samples = history_json(g->history, time(NULL) - seconds);
    pthread_mutex_unlock(&g->lock);
    if (!samples)
        return NULL;
    return json_pack(
        "{s:i, s:o}", "interval_s", GAUGES_INTERVAL_S, "samples", samples);
}

void gauges_database(struct gauges *g, bool *upp, double *agep)
{
    pthread_mutex_lock(&g->lock);
    *upp = g->db_up;
    *agep = g->pool_at ? (double)(monotime_ms() - g->pool_at) / 1000 : -1;
    pthread_mutex_unlock(&g->lock);
}

/* The slot of key: its own, else an empty or the oldest one. */
static size_t cache_slot(struct gauges *g, const char *key)
{
    size_t best = 0;

    for (size_t i = 0; i < GAUGES_CACHE_SLOTS; i++) {
        if (strcmp(g->cache[i].key, key) == 0)
            return i;
        if (g->cache[i].at < g->cache[best].at)
            best = i;
    }
    return best;
}

json_t *gauges_cache_get(struct gauges *g, const char *key)
{
    json_t *reply = NULL;

    pthread_mutex_lock(&g->lock);
    size_t i = cache_slot(g, key);
    if (g->cache[i].reply && strcmp(g->cache[i].key, key) == 0
        && monotime_ms() - g->cache[i].at < GAUGES_CACHE_MS)
        reply = json_incref(g->cache[i].reply);
    pthread_mutex_unlock(&g->lock);
    return reply;
}

void gauges_cache_put(struct gauges *g, const char *key, json_t *reply)
{
    pthread_mutex_lock(&g->lock);
    size_t i = cache_slot(g, key);
    json_decref(g->cache[i].reply);
    snprintf(g->cache[i].key, sizeof(g->cache[i].key), "%s", key);
    g->cache[i].reply = json_incref(reply);
    g->cache[i].at = monotime_ms();
    pthread_mutex_unlock(&g->lock);
}
