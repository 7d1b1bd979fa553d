/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A short-lived cache of active reservations for node fetches.
 *
 * When a large job starts, every one of its nodes fetches the same
 * reservation within a second or two: 11,136 identical reads for El
 * Capitan, and as many again at the start of each of its steps (GET
 * /v1/reservations/{job}/steps/{step}).  The cache answers those from
 * memory for node_cache_ms after the first one: the reply as the text
 * sent, with the membership check done against the node ranges kept beside
 * it (the job's, or the step's own), so that a node list scattered over a
 * thousand ranges costs what one range costs.  Jobs and steps share the
 * slots and the bound on memory; an entry is a job's or a step's
 * (job, step).  Only active reservations of node-role fetches are cached;
 * schedulers, admins and monitors always read the database.  A broker
 * forgets a step at once when it reserves or releases it, and a job with
 * all its steps when it reserves or releases the job (a read in flight
 * then is not kept); another replica's change is seen within
 * node_cache_ms.  That staleness is safe because an agent reports
 * `creating` (naming the reservation id it fetched, the step's for a
 * step) before it touches a NIC, and the database refuses that report for
 * a reservation that is no longer active (a step is released with its
 * job) or is not the newest of its job or step.  The first misses of a
 * storm do not each read the database: one does, the others wait for it,
 * so that a broker reads a job or a step about once per node_cache_ms.
 * A hit needs no request worker: the fetch's route answers it on the
 * libmicrohttpd thread (cache_answer_now(), route.first), so a job start
 * never waits in the workers' queue behind database writes.
 */
#ifndef VNIB_SERVER_CACHE_H
#define VNIB_SERVER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "vnib/error.h"

struct cache;
struct request;

/* A miss's part in filling the cache: set by cache_get(), ended by
 * cache_put() or cache_done() once the database has answered, whatever
 * it answered (other fetches of the key may be waiting for it).
 */
struct cache_fill {
    uint64_t id;  /* the read the other misses of its key wait for, when
                     this fetch makes it; 0: none */
    uint64_t gen; /* its job's forgets when it missed (cache_forget) */
};

/* A cache of `slots` entries (direct-mapped by job, or by job and step)
 * that live ttl_ms.  ttl_ms 0 makes a cache that never holds anything
 * (its counters still count the node fetches, all misses).
 */
struct cache *cache_create(unsigned slots, int64_t ttl_ms) VNIB_MUST_CHECK;

/* Free (NULL accepted). */
void cache_destroy(struct cache *c);

/* A fresh cached reservation of job_id, or of its step step_id (NULL for
 * the job itself): returns true with *memberp whether node is in its node
 * list and, for a member, *textp the reply as rendered JSON text
 * (httpd_json_text()), a copy the caller frees, of *lenp bytes; *textp is
 * NULL for a node outside it.  False on a miss, after which the caller
 * reads the database and ends *fill with cache_put() or cache_done().  A
 * miss while another fetch of the key reads the database first waits for
 * that read (a second at most, or node_cache_ms if shorter), and is a
 * hit if it filled the cache.  Each call counts as a hit or a miss of its kind
 * (job or step).
 */
bool cache_get(struct cache *c,
               const char *job_id,
               const char *step_id,
               const char *node,
               char **textp,
               size_t *lenp,
               bool *memberp,
               struct cache_fill *fill);

/* A fresh cached reservation of job_id, or of its step step_id, looked up
 * without waiting for anything (for the libmicrohttpd thread): on a hit,
 * counted as one, as cache_get(); false on a miss, counted as nothing and
 * claiming no fill (the fetch then goes to cache_get() on a worker,
 * which counts it).
 */
bool cache_peek(struct cache *c,
                const char *job_id,
                const char *step_id,
                const char *node,
                char **textp,
                size_t *lenp,
                bool *memberp);

/* Remember res (the reservation of job_id, or of its step step_id, in the
 * API's shape, as a member node sees it; borrowed) as read after the miss
 * of *fill, and end that fill: its reply text (httpd_json_text() of res,
 * len bytes; copied), and its node list read into ranges (never
 * expanded), so that a node list of many ranges is kept like one of one
 * range.  Not kept: a reservation that is not active, one whose node list
 * would take the cache past its bound on ranges, and one this broker
 * forgot (cache_forget()) after the miss, whose read may predate the
 * change.
 */
void cache_put(struct cache *c,
               const char *job_id,
               const char *step_id,
               const json_t *res,
               const char *text,
               size_t len,
               const struct cache_fill *fill);

/* End the fill of a miss that keeps nothing (the node is not a member,
 * the reservation is missing, the database failed): for node_cache_ms
 * the next misses of the key read the database at once, none waiting.
 */
void cache_done(struct cache *c,
                const char *job_id,
                const char *step_id,
                const struct cache_fill *fill);

/* Forget step step_id of job_id, or with step_id NULL the job and every
 * step of it (after this broker changed them).
 */
void cache_forget(struct cache *c, const char *job_id, const char *step_id);

/* A node's fetch (req's role is node) of job_id or its step step_id (NULL
 * for the job), answered from the cache when it can be: true with
 * *memberp whether req's node is in the node list, and for a member the
 * reply in req->text (application/json).  False: the database answers,
 * and cache_keep() ends *fill.
 */
bool cache_answer(struct cache *c,
                  struct request *req,
                  const char *job_id,
                  const char *step_id,
                  bool *memberp,
                  struct cache_fill *fill);

/* cache_answer() with cache_peek(): true on a hit, answered as there;
 * false on a miss, with nothing claimed (cache_answer() on a worker goes
 * on from there).  Never waits.
 */
bool cache_answer_now(struct cache *c,
                      struct request *req,
                      const char *job_id,
                      const char *step_id,
                      bool *memberp);

/* After cache_answer()'s miss, the database's answer: for a member node,
 * its reply *out (hwcoll_reveal()ed) rendered once into req->text for
 * this reply and kept (cache_put()), *out freed and NULL; otherwise (not
 * a member, or the read failed: member false) kept as it is, the fill
 * ended (cache_done()).  Out of memory for the text: as the latter, *out
 * left for the pipeline to render.
 */
void cache_keep(struct cache *c,
                struct request *req,
                const char *job_id,
                const char *step_id,
                json_t **out,
                bool member,
                const struct cache_fill *fill);

/* Write the hit and miss counters, by kind, in the Prometheus text
 * format (vnib_node_cache_hits_total, vnib_node_cache_misses_total).
 */
void cache_write_metrics(const struct cache *c, FILE *out);

#endif /* !VNIB_SERVER_CACHE_H */
