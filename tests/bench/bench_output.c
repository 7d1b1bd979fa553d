/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The REST API benchmarks' output: table rows in bench_lib's format
 * (scenario, figure, unit, <= or >=, target, met or NOT MET), and the "#"
 * lines of detail below them (counts, rate, percentiles, non-2xx and
 * transport errors, server time).
 */
#include <math.h>
#include <stdio.h>

#include "tests/bench/bench_api.h"

static const char *const kind_names[LG_KINDS] = {
    "reserve", "release", "get", "report"};

/* One table row, as bench_lib prints it.  A NAN figure (not measured) and
 * a figure from a run with too many failures never meet the target.
 */
void bout_row(const char *name,
              double figure,
              const char *unit,
              double target,
              bool lower_is_better,
              const char *why_not)
{
    bool measured = !isnan(figure);
    bool met = measured && !why_not
               && (lower_is_better ? figure <= target : figure >= target);
    char fig[32], tgt[32];

    if (measured)
        snprintf(fig, sizeof(fig), "%12.3f", figure);
    else
        snprintf(fig, sizeof(fig), "%12s", "n/a");
    if (isnan(target))
        snprintf(tgt, sizeof(tgt), "%10s", "n/a");
    else
        snprintf(tgt, sizeof(tgt), "%10.3f", target);
    printf("%-52s %s %-6s %s %s  %s%s%s%s\n",
           name,
           fig,
           unit,
           lower_is_better ? "<=" : ">=",
           tgt,
           met ? "met" : "NOT MET",
           why_not ? " (" : "",
           why_not ? why_not : "",
           why_not ? ")" : "");
    fflush(stdout);
}

/* A figure with no target of its own (shown for comparison). */
void bout_reference(const char *name, double figure, const char *unit)
{
    char fig[32];

    if (isnan(figure))
        snprintf(fig, sizeof(fig), "%12s", "n/a");
    else
        snprintf(fig, sizeof(fig), "%12.3f", figure);
    printf("%-52s %s %-6s %s %10s  %s\n", name, fig, unit, "  ", "-", "ref");
    fflush(stdout);
}

/* The detail of one kind: "#" lines below the rows. */
void bout_detail_kind(const struct lg_result *res, int k)
{
    const char *label = kind_names[k];
    const struct lg_kind_stats *s = &res->kind[k];
    double el = res->elapsed_s > 0 ? res->elapsed_s : NAN;

    if (s->sent == 0)
        return;
    printf(
        "#   %-8s %llu sent, %llu answered in %.2f s (%.1f/s); "
        "latency ms p50 %.3f p90 %.3f p99 %.3f max %.3f\n",
        label,
        (unsigned long long)s->sent,
        (unsigned long long)s->done,
        res->elapsed_s,
        (double)s->done / el,
        lg_hist_quantile(&s->latency, 0.50) / 1e3,
        lg_hist_quantile(&s->latency, 0.90) / 1e3,
        lg_hist_quantile(&s->latency, 0.99) / 1e3,
        (double)s->latency.max_us / 1e3);
    printf("#   %-8s 2xx %llu, non-2xx %llu, transport errors %llu",
           "",
           (unsigned long long)s->ok,
           (unsigned long long)s->non2xx,
           (unsigned long long)s->errors);
    if (s->server.count)
        printf("; server time ms p50 %.3f p90 %.3f p99 %.3f max %.3f (%llu)",
               lg_hist_quantile(&s->server, 0.50) / 1e3,
               lg_hist_quantile(&s->server, 0.90) / 1e3,
               lg_hist_quantile(&s->server, 0.99) / 1e3,
               (double)s->server.max_us / 1e3,
               (unsigned long long)s->server.count);
    else
        printf("; no Server-Timing");
    printf("\n");
    if (s->first_bad_status) {
        char body[sizeof(s->first_bad_body)];
        snprintf(body, sizeof(body), "%s", s->first_bad_body);
        for (char *p = body; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        printf(
            "#   %-8s first non-2xx: %d %s\n", "", s->first_bad_status, body);
    }
}

void bout_detail(const struct lg_result *res)
{
    for (int k = 0; k < LG_KINDS; k++)
        bout_detail_kind(res, k);
    if (res->connect_errors || res->io_errors || res->timeouts || res->unsent
        || res->connects > 0)
        printf(
            "#   %-8s %llu connects, %llu connect errors, %llu io "
            "errors, %llu timeouts, %llu unsent, worst send delay "
            "%.3f ms\n",
            "conns",
            (unsigned long long)res->connects,
            (unsigned long long)res->connect_errors,
            (unsigned long long)res->io_errors,
            (unsigned long long)res->timeouts,
            (unsigned long long)res->unsent,
            (double)res->late_us_max / 1e3);
    fflush(stdout);
}

/* Why a run's figure is not credited: more than 1% of the requests of
 * kind k (or of all kinds, k < 0) failed or were not sent.
 */
const char *bout_failures(const struct lg_result *res, int k)
{
    struct lg_kind_stats sum;
    const struct lg_kind_stats *s = &res->kind[k < 0 ? 0 : k];

    if (k < 0) {
        lg_result_totals(res, &sum);
        s = &sum;
    }
    uint64_t bad = s->non2xx + s->errors + res->unsent;
    uint64_t all = s->sent + res->unsent;
    if (all == 0)
        return "nothing answered";
    if ((double)bad > 0.01 * (double)all)
        return "over 1% failed";
    return NULL;
}
