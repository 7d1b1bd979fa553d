/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Lock-free request metrics rendered as Prometheus text (see metrics.h).
 *
 * Status codes are counted in a dense array per route (100-599), which
 * avoids any map or lock on the request path; only non-zero cells are
 * printed.  Histogram buckets are stored per bucket and made cumulative
 * while rendering, as the exposition format requires.  The same buckets
 * serve the histogram of the time requests wait for a request worker.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "server/http/metrics.h"
#include "server/http/route.h"

#define STATUS_MIN 100
#define STATUS_MAX 599
#define NSTATUS (STATUS_MAX - STATUS_MIN + 1)

/* Upper bounds of the latency buckets, in seconds (then +Inf). */
static const double buckets[] = {0.0005,
                                 0.001,
                                 0.0025,
                                 0.005,
                                 0.01,
                                 0.025,
                                 0.05,
                                 0.1,
                                 0.25,
                                 0.5,
                                 1,
                                 2.5,
                                 5,
                                 10};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

/* The end of bucket b's line in a histogram: its le label (b ==
 * NBUCKETS: +Inf), then the cumulative count cum.
 */
static void bucket_end(FILE *out, size_t b, uint_fast64_t cum)
{
    if (b < NBUCKETS)
        fprintf(out, "le=\"%g\"} %llu\n", buckets[b], (unsigned long long)cum);
    else
        fprintf(out, "le=\"+Inf\"} %llu\n", (unsigned long long)cum);
}

struct route_slot {
    atomic_uint_fast64_t status[NSTATUS];
    atomic_uint_fast64_t bucket[NBUCKETS + 1]; /* last is +Inf only */
    atomic_uint_fast64_t sum_ns;
    atomic_uint_fast64_t count;
};

/* A histogram with the latency buckets. */
struct histogram {
    atomic_uint_fast64_t bucket[NBUCKETS + 1]; /* last is +Inf only */
    atomic_uint_fast64_t sum_ns;
};

struct metrics {
    const struct route *routes; /* the table's rows, borrowed */
    size_t nroutes;
    struct route_slot *slots;    /* nroutes + 1 */
    struct histogram queue_wait; /* time requests waited for a worker */
};

struct metrics *metrics_create(const struct route_table *table)
{
    size_t nroutes = table->count;
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->routes = table->rows;
    m->nroutes = nroutes;
    if (!(m->slots = calloc(nroutes + 1, sizeof(m->slots[0])))) {
        free(m);
        errno = ENOMEM;
        return NULL;
    }
    return m;
}

void metrics_destroy(struct metrics *m)
{
    int saved_errno = errno;
    if (m) {
        free(m->slots);
        free(m);
    }
    errno = saved_errno;
}

void metrics_observe(struct metrics *m, int route_index, int status, int64_t ns)
{
    if (route_index < 0 || (size_t)route_index > m->nroutes)
        route_index = (int)m->nroutes;
    struct route_slot *s = &m->slots[route_index];
    if (status >= STATUS_MIN && status <= STATUS_MAX)
        atomic_fetch_add_explicit(
            &s->status[status - STATUS_MIN], 1, memory_order_relaxed);
    double secs = (double)ns / 1e9;
    size_t b = 0;
    while (b < NBUCKETS && secs > buckets[b])
        b++;
    atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(
        &s->sum_ns, (uint_fast64_t)(ns > 0 ? ns : 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
}

void metrics_observe_queue_wait(struct metrics *m, int64_t ns)
{
    double secs = (double)ns / 1e9;
    size_t b = 0;
    while (b < NBUCKETS && secs > buckets[b])
        b++;
    atomic_fetch_add_explicit(
        &m->queue_wait.bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->queue_wait.sum_ns,
                              (uint_fast64_t)(ns > 0 ? ns : 0),
                              memory_order_relaxed);
}

void metrics_write_queue(const struct metrics *m, long depth, FILE *out)
{
    const struct histogram *q = &m->queue_wait;
    uint_fast64_t cum = 0;

    fprintf(out,
            "# HELP vnib_http_queue_depth Requests waiting for a request "
            "worker.\n"
            "# TYPE vnib_http_queue_depth gauge\n"
            "vnib_http_queue_depth %ld\n"
            "# HELP vnib_http_queue_wait_seconds Time requests waited for a "
            "request worker.\n"
            "# TYPE vnib_http_queue_wait_seconds histogram\n",
            depth);
    for (size_t b = 0; b <= NBUCKETS; b++) {
        cum += atomic_load_explicit(&q->bucket[b], memory_order_relaxed);
        fprintf(out, "vnib_http_queue_wait_seconds_bucket{");
        bucket_end(out, b, cum);
    }
    uint_fast64_t sum_ns =
        atomic_load_explicit(&q->sum_ns, memory_order_relaxed);
    fprintf(out,
            "vnib_http_queue_wait_seconds_sum %.9f\n"
            "vnib_http_queue_wait_seconds_count %llu\n",
            (double)sum_ns / 1e9,
            (unsigned long long)cum);
}

static void route_labels(const struct metrics *m, size_t i, FILE *out)
{
    if (i < m->nroutes)
        fprintf(out,
                "method=\"%s\",route=\"%s\"",
                m->routes[i].method,
                m->routes[i].pattern);
    else
        fprintf(out, "method=\"\",route=\"unmatched\"");
}

void metrics_write_http(const struct metrics *m, FILE *out)
{
    fprintf(out,
            "# HELP vnib_http_requests_total HTTP requests answered, by "
            "route and status.\n"
            "# TYPE vnib_http_requests_total counter\n");
    for (size_t i = 0; i <= m->nroutes; i++) {
        for (int st = 0; st < NSTATUS; st++) {
            uint_fast64_t n = atomic_load_explicit(&m->slots[i].status[st],
                                                   memory_order_relaxed);
            if (n == 0)
                continue;
            fprintf(out, "vnib_http_requests_total{");
            route_labels(m, i, out);
            fprintf(out,
                    ",code=\"%d\"} %llu\n",
                    st + STATUS_MIN,
                    (unsigned long long)n);
        }
    }
    fprintf(out,
            "# HELP vnib_http_request_duration_seconds Time from a request's "
            "arrival to its reply, by route.\n"
            "# TYPE vnib_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i <= m->nroutes; i++) {
        const struct route_slot *s = &m->slots[i];
        uint_fast64_t count =
            atomic_load_explicit(&s->count, memory_order_relaxed);
        if (count == 0)
            continue;
        uint_fast64_t cum = 0;
        for (size_t b = 0; b <= NBUCKETS; b++) {
            cum += atomic_load_explicit(&s->bucket[b], memory_order_relaxed);
            fprintf(out, "vnib_http_request_duration_seconds_bucket{");
            route_labels(m, i, out);
            fputc(',', out);
            bucket_end(out, b, cum);
        }
        fprintf(out, "vnib_http_request_duration_seconds_sum{");
        route_labels(m, i, out);
        fprintf(out,
                "} %.9f\n",
                (double)atomic_load_explicit(&s->sum_ns, memory_order_relaxed)
                    / 1e9);
        fprintf(out, "vnib_http_request_duration_seconds_count{");
        route_labels(m, i, out);
        fprintf(out, "} %llu\n", (unsigned long long)cum);
    }
}
