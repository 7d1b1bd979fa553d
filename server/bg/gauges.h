/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Figures from the database for /metrics, refreshed in the background,
 * and what GET /v1/status takes from them.
 *
 * A scrape must stay cheap and must not wait on a down database, so the
 * VNI pool by state, the quarantine and drain figures, the Fabric Manager
 * queue and the schema version are read by a thread of their own every
 * GAUGES_INTERVAL_S seconds, and /metrics prints the last figures read
 * together with their age.  The same object keeps the pool's recent
 * history (history.h) and GET /v1/status' short-lived reply cache.  The
 * same thread warns, once per change, when a newer replica has migrated
 * the schema past what this vnibrokerd knows.
 */
#ifndef VNIB_SERVER_GAUGES_H
#define VNIB_SERVER_GAUGES_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "vnib/error.h"
#include "vnib/logger.h"

/* Seconds between two readings. */
#define GAUGES_INTERVAL_S 5

/* GET /v1/status replies are kept this long, in this many slots keyed by
 * role and query (GAUGES_CACHE_KEY bytes at most).
 */
#define GAUGES_CACHE_MS 1000
#define GAUGES_CACHE_SLOTS 16
#define GAUGES_CACHE_KEY 96

struct broker;
struct gauges;

/* Start the thread, which reads at once and then every GAUGES_INTERVAL_S.
 * schema_version is the version seen at start (already warned about).
 */
struct gauges *gauges_create(struct broker *b,
                             int schema_version,
                             vnib_error_t *errp) VNIB_MUST_CHECK;

/* Stop the thread and free it (NULL accepted). */
void gauges_destroy(struct gauges *g);

/* Print the last figures in the Prometheus text format; nothing for a
 * figure never read.
 */
void gauges_write_metrics(struct gauges *g, FILE *f);

/* The pool samples of the last `seconds` seconds, oldest first:
 * {"interval_s", "samples": [...]} (see history.h), or NULL (ENOMEM).
 */
json_t *gauges_history(struct gauges *g, int seconds);

/* Whether the last reading succeeded, and the age in seconds of the last
 * pool figures read (-1: never read).
 */
void gauges_database(struct gauges *g, bool *upp, double *agep);

/* A status reply cached under key less than GAUGES_CACHE_MS ago (a new
 * reference, never to be modified), or NULL.
 */
json_t *gauges_cache_get(struct gauges *g, const char *key);

/* Cache reply (borrowed; kept, never modified) under key. */
void gauges_cache_put(struct gauges *g, const char *key, json_t *reply);

/* Warn that the database schema (version) is newer than this binary's:
 * at start (main.c) and when the background reading sees it change.
 */
void gauges_warn_newer(struct logger *log, int version);

#endif /* !VNIB_SERVER_GAUGES_H */
