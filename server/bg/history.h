/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A fixed-size ring of pool samples: the recent history GET /v1/status
 * shows.
 *
 * The gauges thread pushes one sample per reading (every
 * GAUGES_INTERVAL_S); once the ring is full each push drops the oldest.
 * The ring lives in memory only and starts empty at each start: long
 * history is Prometheus' job.  It takes no lock: its owner (gauges.c)
 * serialises access.
 */
#ifndef VNIB_SERVER_HISTORY_H
#define VNIB_SERVER_HISTORY_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "vnib/error.h"

/* 24 h of samples 5 s apart. */
#define HISTORY_CAPACITY 17280

/* One reading of the pool, at wall-clock time t. */
struct history_sample {
    time_t t;
    long long free, active, quarantined, outside;
};

struct history;

/* An empty ring of `capacity` samples (at least 1), or NULL (ENOMEM). */
struct history *history_create(size_t capacity) VNIB_MUST_CHECK;

/* Free (NULL accepted). */
void history_destroy(struct history *h);

/* Append a sample, dropping the oldest when full. */
void history_push(struct history *h, const struct history_sample *s);

/* t as the samples show it: RFC 3339 UTC, whole seconds ("...Z"), in a
 * buffer of HISTORY_TIME_LEN bytes or more.
 */
#define HISTORY_TIME_LEN 32
void history_time(time_t t, char *buf, size_t size);

/* Samples held now. */
size_t history_count(const struct history *h);

/* The i-th sample, oldest first (i < history_count), or NULL. */
const struct history_sample *history_at(const struct history *h, size_t i);

/* The samples taken at or after `since`, oldest first, as a new JSON
 * array of {"t": RFC 3339 UTC, "free", "active", "quarantined",
 * "outside_pool"}; NULL when out of memory.
 */
json_t *history_json(const struct history *h, time_t since);

#endif /* !VNIB_SERVER_HISTORY_H */
