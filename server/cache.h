/* A short-lived cache of active reservations for node fetches.
 *
 * When a large job starts, every one of its nodes fetches the same
 * reservation within a second or two: 11,136 identical reads for El
 * Capitan.  The cache answers those from memory for node_cache_ms after
 * the first one, with the membership check done against the job's node
 * ranges kept beside the reply.  Only active reservations of node-role
 * fetches are cached; schedulers, admins and monitors always read the
 * database.  A broker forgets a job at once when it reserves or releases
 * it; another replica's change is seen within node_cache_ms.  That
 * staleness is safe because an agent reports `creating` (naming the
 * reservation id it fetched) before it touches a NIC, and the database
 * refuses that report for a job that is no longer active or was requeued.
 */
#ifndef VNIB_SERVER_CACHE_H
#define VNIB_SERVER_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct cache;

/* A cache of `slots` entries (direct-mapped by job id) that live ttl_ms.
 * ttl_ms 0 makes a cache that never holds anything.
 */
struct cache *cache_create(unsigned slots, int64_t ttl_ms)
    __attribute__((warn_unused_result));

/* Free (NULL accepted). */
void cache_destroy(struct cache *c);

/* A fresh cached reservation of job_id: returns true with *resp a new
 * reference (never to be modified) and *memberp whether node is in the
 * job's node list.  False on a miss.
 */
bool cache_get(struct cache *c,
               const char *job_id,
               const char *node,
               json_t **resp,
               bool *memberp);

/* Remember res (borrowed; an active reservation in the API's shape) for
 * its job.  Reservations that are not active, or whose node lists would
 * make the membership check costly, are not kept.
 */
void cache_put(struct cache *c, json_t *res);

/* Forget job_id (after this broker changed it). */
void cache_forget(struct cache *c, const char *job_id);

#endif /* !VNIB_SERVER_CACHE_H */
