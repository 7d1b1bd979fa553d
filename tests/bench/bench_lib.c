/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Micro-benchmarks for the shared parsers that sit on request paths.
 *
 * A reservation for an El Capitan sized job (11,136 nodes) must be served
 * in a few milliseconds, and its hostlist is decoded, sorted, checked and
 * compressed on the way; a node's request checks membership.  Each
 * scenario prints one row: name, figure, target, and whether it is met.
 * Figures are medians over repeated runs, so one slow run does not decide.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/hostlist.h"
#include "vnib/idset.h"
#include "vnib/toml.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    return v[n / 2];
}

static void row(const char *name,
                double figure,
                const char *unit,
                double target,
                int lower_is_better)
{
    int met = lower_is_better ? figure <= target : figure >= target;
    printf("%-52s %12.3f %-6s %s %10.3f  %s\n",
           name,
           figure,
           unit,
           lower_is_better ? "<=" : ">=",
           target,
           met ? "met" : "NOT MET");
}

/* decode + uniq + encode + one membership test, as a reservation does. */
static double hostlist_cycle_us(const char *expr,
                                const char *member,
                                size_t max)
{
    double t0 = now_us();
    struct hostlist *hl = hostlist_decode(expr, max, NULL);
    if (!hl) {
        fprintf(stderr, "bench: cannot decode %s\n", expr);
        exit(1);
    }
    hostlist_uniq(hl);
    char *enc = hostlist_encode(hl);
    if (!enc || !hostlist_contains(hl, member)) {
        fprintf(stderr, "bench: hostlist cycle failed\n");
        exit(1);
    }
    free(enc);
    hostlist_destroy(hl);
    return now_us() - t0;
}

int main(void)
{
    double v[31];
    const int n = (int)(sizeof(v) / sizeof(v[0]));

    printf("%-52s %12s %-6s %2s %10s  %s\n",
           "scenario",
           "figure",
           "unit",
           "",
           "target",
           "result");
    for (int i = 0; i < n; i++)
        v[i] =
            hostlist_cycle_us(
                "nid[000001-011136]", "nid005000", HOSTLIST_DEFAULT_MAX_NAMES)
            / 1e3;
    row("hostlist: 11,136 names decode+sort+encode",
        median(v, n),
        "ms",
        1.0,
        1);

    for (int i = 0; i < 5; i++)
        v[i] = hostlist_cycle_us("nid[0000001-1000000]",
                                 "nid0500000",
                                 HOSTLIST_DEFAULT_MAX_NAMES)
               / 1e3;
    row("hostlist: 1,000,000 names (the bound) cycle",
        median(v, 5),
        "ms",
        1000.0,
        1);

    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        size_t count;
        if (hostlist_count_expr("n[0-99999999]", 1000000000, &count, NULL)
            < 0) {
            fprintf(stderr, "bench: count failed\n");
            return 1;
        }
        v[i] = now_us() - t0;
    }
    row("hostlist: count 10^8 names without expanding",
        median(v, n),
        "us",
        100.0,
        1);

    struct idset *pool = idset_decode("1024-65535", 65535, NULL);
    if (!pool)
        return 1;
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        unsigned id = 1024;
        for (int k = 0; k < 100000; k++)
            if (idset_next_after(pool, id, &id) < 0)
                return 1;
        v[i] = (now_us() - t0) * 1e3 / 100000;
    }
    row("idset: next_after on the default pool", median(v, n), "ns", 1000.0, 1);
    idset_destroy(pool);

    static const char conf[] =
        "[server]\naddress = \"127.0.0.1\"\nport = 8080\n"
        "[database]\nconninfo = \"dbname=vnibroker\"\n"
        "pool_size = 8\n[log]\nlevel = \"info\"\n";
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        json_t *lines = NULL;
        json_t *root =
            toml_parse("bench", conf, sizeof(conf) - 1, &lines, NULL);
        if (!root)
            return 1;
        json_decref(root);
        json_decref(lines);
        v[i] = now_us() - t0;
    }
    row("toml: parse a 9-line configuration", median(v, n), "us", 1000.0, 1);
    return 0;
}
