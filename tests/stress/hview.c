/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The history client's view of the broker at the end (see hview.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/stress/hview.h"

/* ---- the broker's view at the end -------------------------------------- */

json_t *hview_get_json(struct client *c, const char *path, const char *tok)
{
    struct hrec r = {0}; /* what the message shows after 0 attempts */

    for (int a = 0; a < c->run->attempts; a++) {
        memset(&r, 0, sizeof(r));
        r.url = a % c->run->nurls;
        if (history_attempt(c, &r, "GET", path, NULL, tok) == 200)
            return json_loadb(c->reply.buf, c->reply.len, 0, NULL);
        if (r.status == 404)
            return NULL;
        history_sleep_ms(100);
    }
    fprintf(stderr, "history: GET %s: %ld %s%s\n", path, r.status,
            r.transport, r.message);
    return NULL;
}

int hview_get_pages(struct client *c, const char *path, const char *key,
                    const char *tok, json_t *all)
{
    char url[512];
    char after[32] = "0";

    for (;;) {
        snprintf(url, sizeof(url), "%s%climit=1000&after=%s", path,
                 strchr(path, '?') ? '&' : '?', after);
        json_t *page = hview_get_json(c, url, tok);
        json_t *items = json_object_get(page, key);
        const char *next = json_string_value(json_object_get(page, "next"));
        if (!json_is_array(items) || json_array_extend(all, items) < 0) {
            json_decref(page);
            return -1;
        }
        if (!next || json_array_size(items) == 0) {
            json_decref(page);
            return 0;
        }
        snprintf(after, sizeof(after), "%s", next);
        json_decref(page);
    }
}

/* A reservation at path: 0 with its id and VNIs, 1 when the broker has
 * none (404), -1 when no replica answered.
 */
static int get_reservation(struct client *c, const char *path, long long *id,
                           int *vnis, int *n)
{
    struct hrec r = {0};

    for (int a = 0; a < c->run->attempts; a++) {
        memset(&r, 0, sizeof(r));
        r.url = a % c->run->nurls;
        long st = history_attempt(c, &r, "GET", path, NULL, c->run->sched);
        if (st == 200) {
            history_parse_reservation(c->reply.buf, id, vnis, n);
            return 0;
        }
        if (st == 404)
            return 1;
        history_sleep_ms(100);
    }
    return -1;
}

int hview_get_one(void *arg, const char *job, long long *id, int *vnis,
                  int *n)
{
    char path[256];

    snprintf(path, sizeof(path), "/v1/reservations/%s", job);
    return get_reservation(arg, path, id, vnis, n);
}

int hview_get_step(void *arg, const char *job, const char *step,
                   long long *id, int *vnis, int *n)
{
    char path[256];

    snprintf(path, sizeof(path), "/v1/reservations/%s/steps/%s", job, step);
    return get_reservation(arg, path, id, vnis, n);
}

int hview_get_reports(void *arg, const char *job, long long resv_id, int n,
                      const char (*nodes)[HREC_NODE_SIZE],
                      unsigned char *db)
{
    struct client *c = arg;
    char path[256];
    size_t i;
    json_t *r;

    snprintf(path, sizeof(path), "/v1/reservations/%s/nodes?limit=10000",
             job);
    json_t *got = hview_get_json(c, path, c->run->sched);
    if (!got)
        return -1;
    int rc = -1;
    if (json_integer_value(json_object_get(got, "reservation_id")) != resv_id)
        goto done;
    memset(db, HREC_NONE, (size_t)n);
    json_array_foreach(json_object_get(got, "reports"), i, r)
    {
        const char *node = json_string_value(json_object_get(r, "node"));
        const char *cxi = json_string_value(json_object_get(r, "cxi"));
        for (int k = 0; node && k < n; k++)
            if (!strcmp(nodes[k], node))
                db[k] = cxi && !strcmp(cxi, "failed")
                            ? HCHECK_FAILED
                            : (unsigned char)hrec_cxi_of(cxi);
    }
    rc = 0;
done:
    json_decref(got);
    return rc;
}

/* ---- bench rows -------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The 99th percentile of the reserve attempts that got a reply, in ms. */
static double reserve_p99(const struct client *cs, int n)
{
    size_t cnt = 0, k = 0;

    for (int i = 0; i < n; i++)
        for (size_t r = 0; r < cs[i].log.nrecs; r++)
            cnt += cs[i].log.recs[r].op == HREC_RESERVE
                   && cs[i].log.recs[r].status != 0;
    if (cnt == 0)
        return NAN;
    int64_t *v = malloc(cnt * sizeof(*v));
    if (!v)
        return NAN;
    for (int i = 0; i < n; i++)
        for (size_t r = 0; r < cs[i].log.nrecs; r++) {
            const struct hrec *h = &cs[i].log.recs[r];
            if (h->op == HREC_RESERVE && h->status != 0)
                v[k++] = h->recv_mono - h->send_mono;
        }
    qsort(v, cnt, sizeof(*v), cmp_i64);
    size_t idx = (size_t)ceil(0.99 * (double)cnt);
    double p = (double)v[idx ? idx - 1 : 0] / 1e6;
    free(v);
    return p;
}

/* A row as tests/bench/run.sh prints them; target NAN: a reference. */
static void bench_row(const char *name, double fig, const char *unit,
                      double target)
{
    if (isnan(target))
        printf("%-52s %12.3f %-6s %s %10s  %s\n", name, fig, unit, "  ", "-",
               "ref");
    else
        printf("%-52s %12.3f %-6s %s %10.3f  %s\n", name, fig, unit, "<=",
               target, fig <= target ? "met" : "NOT MET");
}

void hview_bench_rows(const struct run *run, const struct client *cs,
                      const struct hcheck_tally *t, double elapsed)
{
    uint64_t pairs = 0;
    char name[64], vc[16];

    for (int i = 0; i < run->threads; i++)
        pairs += cs[i].pairs;
    if (run->vni_count)
        snprintf(vc, sizeof(vc), "%d", run->vni_count);
    else
        snprintf(vc, sizeof(vc), "1-4");
    snprintf(name, sizeof(name),
             "contention: reserve+release pairs/s, %d cl, %s VNIs",
             run->threads, vc);
    bench_row(name, elapsed > 0 ? (double)pairs / elapsed : 0, "pair/s",
              NAN);
    bench_row("contention: reserve p99 latency", reserve_p99(cs, run->threads),
              "ms", NAN);
    bench_row("contention: 503s (not vni_pool_exhausted)", (double)t->bad503,
              "count", 0);
    bench_row("contention: replies naming a deadlock", (double)t->deadlock,
              "count", 0);
    printf("#   %" PRIu64 " pairs in %.2f s by %d clients; %" PRIu64
           " requests, %" PRIu64 " 5xx, %" PRIu64 " 503 vni_pool_exhausted,"
           " %" PRIu64 " transport failures\n",
           pairs, elapsed, run->threads, t->requests, t->s5xx, t->exhausted,
           t->transport);
}

