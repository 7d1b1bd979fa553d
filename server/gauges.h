/* Figures from the database for /metrics, refreshed in the background.
 *
 * A scrape must stay cheap and must not wait on a down database, so the
 * VNI pool by state, the Fabric Manager queue and the schema version are
 * read by a thread of their own every GAUGES_INTERVAL_S seconds, and
 * /metrics prints the last figures read together with their age.  The
 * same thread warns, once per change, when a newer replica has migrated
 * the schema past what this vnibrokerd knows.
 */
#ifndef VNIB_SERVER_GAUGES_H
#define VNIB_SERVER_GAUGES_H

#include <stdio.h>

#include "vnib/error.h"
#include "vnib/logger.h"

/* Seconds between two readings. */
#define GAUGES_INTERVAL_S 5

struct broker;
struct gauges;

/* Start the thread, which reads at once and then every GAUGES_INTERVAL_S.
 * schema_version is the version seen at start (already warned about).
 */
struct gauges *gauges_create(struct broker *b,
                             int schema_version,
                             vnib_error_t *errp)
    __attribute__((warn_unused_result));

/* Stop the thread and free it (NULL accepted). */
void gauges_destroy(struct gauges *g);

/* Print the last figures in the Prometheus text format; nothing for a
 * figure never read.
 */
void gauges_write_metrics(struct gauges *g, FILE *f);

/* Warn that the database schema (version) is newer than this binary's:
 * at start (main.c) and when the background reading sees it change.
 */
void gauges_warn_newer(struct logger *log, int version);

#endif /* !VNIB_SERVER_GAUGES_H */
