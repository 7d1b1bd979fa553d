/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A short-lived cache of active reservations for node fetches.
 *
 * When a large job starts, every one of its nodes fetches the same
 * reservation within a second or two: 11,136 identical reads for El
 * Capitan.  The cache answers those from memory for node_cache_ms after
 * the first one: the reply as the text sent, with the membership check
 * done against the job's node ranges kept beside it, so that a job whose
 * nodes are scattered over a thousand ranges costs what a job of one range
 * costs.  Only active reservations of node-role fetches are cached;
 * schedulers, admins and monitors always read the database.  A broker
 * forgets a job at once when it reserves or releases it; another
 * replica's change is seen within node_cache_ms.  That staleness is safe
 * because an agent reports `creating` (naming the reservation id it
 * fetched) before it touches a NIC, and the database refuses that report
 * for a job that is no longer active or was requeued.
 */
#ifndef VNIB_SERVER_CACHE_H
#define VNIB_SERVER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"

struct cache;

/* A cache of `slots` entries (direct-mapped by job id) that live ttl_ms.
 * ttl_ms 0 makes a cache that never holds anything.
 */
struct cache *cache_create(unsigned slots, int64_t ttl_ms) VNIB_MUST_CHECK;

/* Free (NULL accepted). */
void cache_destroy(struct cache *c);

/* A fresh cached reservation of job_id: returns true with *memberp
 * whether node is in the job's node list and, for a member, *textp the
 * reply as rendered JSON text (httpd_json_text()), a copy the caller
 * frees, of *lenp bytes; *textp is NULL for a node outside the job.
 * False on a miss.
 */
bool cache_get(struct cache *c,
               const char *job_id,
               const char *node,
               char **textp,
               size_t *lenp,
               bool *memberp);

/* Remember res (an active reservation in the API's shape, as a node may
 * see it; borrowed) for its job: its reply text (httpd_json_text() of
 * res, len bytes; copied), and its node list read into ranges (never
 * expanded), so that a job of many ranges is kept like a job of one.
 * Reservations that are not active, or whose node lists would take the
 * cache past its bound on ranges, are not kept.
 */
void cache_put(struct cache *c,
               const json_t *res,
               const char *text,
               size_t len);

/* Forget job_id (after this broker changed it). */
void cache_forget(struct cache *c, const char *job_id);

#endif /* !VNIB_SERVER_CACHE_H */
