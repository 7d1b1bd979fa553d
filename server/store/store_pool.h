/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What GET /v1/pool, /v1/vnis and /v1/events, the start-up's pool check
 * and the sweeper ask the store (store_pool.c), all about VNIs and their
 * history: occupancy, syncing the configured pool, a VNI's holder, a page
 * of the audit trail, closing confirmed quarantines, purging old rows.
 */
#ifndef VNIB_SERVER_STORE_POOL_H
#define VNIB_SERVER_STORE_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"
#include "server/store/store.h"

struct idset;

/* Pool occupancy against the configured pool. */
int store_pool(struct store *s,
               const struct idset *pool,
               json_t **resp,
               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Record `pool` as the pool in force and make the free-VNI queue match it
 * (schema/0004): VNIs outside it leave the queue, VNIs of it neither held
 * nor queued join its tail.  The pool recorded before goes to previous
 * ("" if none), the counts to *addedp and *removedp.
 */
int store_pool_sync(struct store *s,
                    const struct idset *pool,
                    char *previous,
                    size_t size,
                    long long *addedp,
                    long long *removedp,
                    vnib_error_t *errp) VNIB_MUST_CHECK;

/* Who holds a VNI, or who held it last. */
int store_vni(struct store *s,
              int vni,
              const struct idset *pool,
              json_t **resp,
              vnib_error_t *errp) VNIB_MUST_CHECK;

/* Which events, in which order. */
struct store_events_query {
    const char *job_id; /* the job's and its steps'; NULL: any */
    const char *action; /* NULL: any */
    const char *node;   /* NULL: any */
    bool desc;          /* newest first */
    long long after;    /* the cursor: an id (0: from the start) */
    int limit;          /* 1-1000 */
};

/* A page of the audit trail: {"events": [...], "next"}; next continues in
 * the same order.
 */
int store_events(struct store *s,
                 const struct store_events_query *q,
                 json_t **resp,
                 vnib_error_t *errp) VNIB_MUST_CHECK;

/* Close the quarantines whose nodes have all confirmed; *closedp counts
 * them.
 */
int store_sweep(struct store *s,
                const char *actor,
                int *closedp,
                vnib_error_t *errp) VNIB_MUST_CHECK;

/* Delete released reservations (with their ranges and reports) and audit
 * events older than `days`, at most `batch` reservations; *purgedp counts
 * them.
 */
int store_purge(struct store *s,
                int days,
                int batch,
                int *purgedp,
                vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_POOL_H */
