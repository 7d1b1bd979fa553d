/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Request counters and latency histograms for GET /metrics.
 *
 * One slot per row of the route table plus one for requests that matched
 * no route.  Updates are lock-free atomics so that recording a request
 * costs a few increments on the hot path; rendering walks the slots and
 * writes the Prometheus text exposition format.
 */
#ifndef VNIB_SERVER_METRICS_H
#define VNIB_SERVER_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "vnib/error.h"

struct metrics;
struct route_table;

/* Create counters for the rows of `table` (index table->count means
 * unmatched), which must outlive the metrics: its methods and patterns
 * label the series.
 */
struct metrics *metrics_create(const struct route_table *table) VNIB_MUST_CHECK;

/* Free (NULL accepted). */
void metrics_destroy(struct metrics *m);

/* Record one finished request. */
void metrics_observe(struct metrics *m,
                     int route_index,
                     int status,
                     int64_t ns);

/* Record how long one request waited for a request worker. */
void metrics_observe_queue_wait(struct metrics *m, int64_t ns);

/* Write the request queue's series: its depth now (given) and the
 * histogram of waits.
 */
void metrics_write_queue(const struct metrics *m, long depth, FILE *out);

/* Write the HTTP series (requests by route and status, latency
 * histograms) in the Prometheus text format.
 */
void metrics_write_http(const struct metrics *m, FILE *out);

#endif /* !VNIB_SERVER_METRICS_H */
