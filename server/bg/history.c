/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ring of pool samples behind GET /v1/status' history (see
 * history.h).
 *
 * Samples are appended in time order, so the ones newer than a given
 * time are a suffix of the ring: history_json finds its start by binary
 * search and copies only what it returns.
 */
#include <errno.h>
#include <stdlib.h>

#include "server/bg/history.h"

struct history {
    size_t cap;   /* slots */
    size_t first; /* slot of the oldest sample */
    size_t len;   /* samples held */
    struct history_sample s[];
};

struct history *history_create(size_t capacity)
{
    struct history *h;

    if (capacity == 0)
        capacity = 1;
    h = calloc(1, sizeof(*h) + capacity * sizeof(h->s[0]));
    if (!h) {
        errno = ENOMEM;
        return NULL;
    }
    h->cap = capacity;
    return h;
}

void history_destroy(struct history *h)
{
    free(h);
}

void history_push(struct history *h, const struct history_sample *s)
{
    if (h->len < h->cap) {
        h->s[(h->first + h->len++) % h->cap] = *s;
        return;
    }
    h->s[h->first] = *s;
    h->first = (h->first + 1) % h->cap;
}

size_t history_count(const struct history *h)
{
    return h->len;
}

const struct history_sample *history_at(const struct history *h, size_t i)
{
    if (i >= h->len)
        return NULL;
    return &h->s[(h->first + i) % h->cap];
}

/* The index (oldest first) of the first sample taken at or after since. */
static size_t first_since(const struct history *h, time_t since)
{
    size_t lo = 0, hi = h->len;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (history_at(h, mid)->t < since)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void history_time(time_t t, char *buf, size_t size)
{
    struct tm tm;

    gmtime_r(&t, &tm);
    if (strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0 && size > 0)
        buf[0] = '\0';
}

static json_t *sample_json(const struct history_sample *s)
{
    char t[HISTORY_TIME_LEN];

    history_time(s->t, t, sizeof(t));
    return json_pack("{s:s, s:I, s:I, s:I, s:I}",
                     "t",
                     t,
                     "free",
                     (json_int_t)s->free,
                     "active",
                     (json_int_t)s->active,
                     "quarantined",
                     (json_int_t)s->quarantined,
                     "outside_pool",
                     (json_int_t)s->outside);
}

json_t *history_json(const struct history *h, time_t since)
{
    json_t *arr = json_array();

    if (!arr)
        goto fail;
    for (size_t i = first_since(h, since); i < h->len; i++)
        if (json_array_append_new(arr, sample_json(history_at(h, i))) < 0)
            goto fail;
    return arr;
fail:
    json_decref(arr);
    errno = ENOMEM;
    return NULL;
}
