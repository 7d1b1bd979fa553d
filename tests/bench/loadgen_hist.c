/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The load generator's figures (see loadgen.h): log-linear latency
 * histograms with microsecond resolution, their quantiles, and the totals
 * of a run over every request kind.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tests/bench/loadgen.h"

static size_t hist_index(uint64_t us)
{
    const uint64_t sub = 1u << LG_HIST_SUB_BITS;
    int e = 63 - __builtin_clzll(us | 1);

    if (us < sub)
        return (size_t)us;
    int shift = e - LG_HIST_SUB_BITS;
    return (size_t)((uint64_t)(shift + 1) * sub + ((us >> shift) - sub));
}

/* Lower bound and width of bucket i. */
static void hist_bucket(size_t i, double *low, double *width)
{
    const size_t sub = (size_t)1 << LG_HIST_SUB_BITS;

    if (i < sub) {
        *low = (double)i;
        *width = 1;
        return;
    }
    int shift = (int)(i / sub) - 1;
    *low = (double)((uint64_t)(sub + i % sub) << shift);
    *width = (double)(1ULL << shift);
}

void lg_hist_add(struct lg_hist *h, uint64_t us)
{
    if (h->count == 0 || us < h->min_us)
        h->min_us = us;
    if (us > h->max_us)
        h->max_us = us;
    h->count++;
    h->sum_us += (double)us;
    if (us > LG_HIST_MAX_US) {
        h->clamped++;
        us = LG_HIST_MAX_US;
    }
    h->bucket[hist_index(us)]++;
}

double lg_hist_quantile(const struct lg_hist *h, double q)
{
    uint64_t rank, seen = 0;

    if (h->count == 0)
        return 0;
    if (q <= 0)
        return (double)h->min_us;
    rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    if (rank >= h->count)
        return (double)h->max_us;
    for (size_t i = 0; i < LG_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            double low, width;
            hist_bucket(i, &low, &width);
            double mid = low + (width - 1) / 2;
            if (mid > (double)h->max_us)
                mid = (double)h->max_us;
            if (mid < (double)h->min_us)
                mid = (double)h->min_us;
            return mid;
        }
    }
    return (double)h->max_us;
}

static void hist_merge(struct lg_hist *to, const struct lg_hist *from)
{
    if (from->count == 0)
        return;
    if (to->count == 0 || from->min_us < to->min_us)
        to->min_us = from->min_us;
    if (from->max_us > to->max_us)
        to->max_us = from->max_us;
    to->count += from->count;
    to->clamped += from->clamped;
    to->sum_us += from->sum_us;
    for (size_t i = 0; i < LG_HIST_BUCKETS; i++)
        to->bucket[i] += from->bucket[i];
}

void lg_kind_add(struct lg_kind_stats *sum, const struct lg_kind_stats *s)
{
    sum->sent += s->sent;
    sum->done += s->done;
    sum->ok += s->ok;
    sum->non2xx += s->non2xx;
    sum->errors += s->errors;
    hist_merge(&sum->latency, &s->latency);
    hist_merge(&sum->server, &s->server);
    if (!sum->first_bad_status && s->first_bad_status) {
        sum->first_bad_status = s->first_bad_status;
        memcpy(sum->first_bad_body,
               s->first_bad_body,
               sizeof(sum->first_bad_body));
    }
}

void lg_result_totals(const struct lg_result *res, struct lg_kind_stats *sum)
{
    memset(sum, 0, sizeof(*sum));
    for (int k = 0; k < LG_KINDS; k++)
        lg_kind_add(sum, &res->kind[k]);
}
