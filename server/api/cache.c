/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Node-fetch cache of active reservations (see cache.h).
 *
 * Direct-mapped: a job hashes to one slot and a newer job evicts an older
 * one, which bounds the entries with no bookkeeping.  Each entry keeps the
 * reply rendered once, as the text a node receives (a hit copies it out,
 * which costs a memcpy where rendering a large node list in JSON again
 * would cost more than the rest of the request), and the node list as a
 * hostset: ranges of trailing numbers read from the stored expression
 * without expanding it, checked with the same name keys the database uses,
 * by binary search.  A job of a thousand ranges is therefore answered like
 * a job of one.  The ranges of all entries together are bounded
 * (CACHE_MAX_RANGES), which bounds the memory whatever the node lists.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/hostset.h"
#include "vnib/monotime.h"
#include "server/api/cache.h"

/* Ranges held by all entries together: some 70 bytes each with their
 * text in the hostset and in the reply, so at most about 18 MB.  A node
 * list that would take more (once expired entries are dropped) is not
 * cached; the database answers its fetches.
 */
#define CACHE_MAX_RANGES 262144

/* Largest node list read into a hostset (only groups of an unusual
 * shape are expanded; what the broker stores never has them).
 */
#define CACHE_MAX_NAMES 2000000

struct entry {
    char job_id[129];      /* "" when empty */
    int64_t expires;       /* monotonic ms */
    char *text;            /* the reply as sent, NULL when empty */
    size_t len;            /* its bytes */
    struct hostset *nodes; /* the job's node list */
};

struct cache {
    pthread_mutex_t lock;
    struct entry *slots;
    unsigned nslots;
    int64_t ttl_ms;
    size_t ranges; /* hostset ranges of all entries */
};

static unsigned slot_of(const struct cache *c, const char *job_id)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)job_id; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % c->nslots;
}

/* Empty e (under the lock). */
static void entry_clear(struct cache *c, struct entry *e)
{
    c->ranges -= hostset_range_count(e->nodes);
    free(e->text);
    hostset_destroy(e->nodes);
    memset(e, 0, sizeof(*e));
}

struct cache *cache_create(unsigned slots, int64_t ttl_ms)
{
    struct cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->nslots = slots ? slots : 1;
    c->ttl_ms = ttl_ms;
    if (!(c->slots = calloc(c->nslots, sizeof(c->slots[0])))) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void cache_destroy(struct cache *c)
{
    int saved_errno = errno;
    if (c) {
        for (unsigned i = 0; i < c->nslots; i++)
            entry_clear(c, &c->slots[i]);
        free(c->slots);
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
    errno = saved_errno;
}

bool cache_get(struct cache *c,
               const char *job_id,
               const char *node,
               char **textp,
               size_t *lenp,
               bool *memberp)
{
    bool hit = false;

    if (c->ttl_ms <= 0)
        return false;
    *textp = NULL;
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(c, job_id)];
    if (e->text && !strcmp(e->job_id, job_id) && e->expires > monotime_ms()) {
        *memberp = hostset_contains(e->nodes, node);
        if (*memberp && (*textp = malloc(e->len + 1))) {
            memcpy(*textp, e->text, e->len + 1);
            *lenp = e->len;
        }
        /* Out of memory for the copy: a miss, which the database answers. */
        hit = !*memberp || *textp;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

/* Drop the entries that have expired (under the lock). */
static void drop_expired(struct cache *c, int64_t now)
{
    for (unsigned i = 0; i < c->nslots; i++)
        if (c->slots[i].text && c->slots[i].expires <= now)
            entry_clear(c, &c->slots[i]);
}

void cache_put(struct cache *c, const json_t *res, const char *text, size_t len)
{
    const char *job_id = json_string_value(json_object_get(res, "job_id"));
    const char *state = json_string_value(json_object_get(res, "state"));
    const char *nodes = json_string_value(json_object_get(res, "nodes"));
    struct hostset *set = NULL;
    char *copy = NULL;

    if (c->ttl_ms <= 0 || !job_id || !state || !nodes || strcmp(state, "active")
        || strlen(job_id) >= sizeof(c->slots[0].job_id))
        return;
    /* Read and copy outside the lock: fetches of other jobs need not
     * wait.
     */
    if (!(set = hostset_decode(nodes, CACHE_MAX_NAMES, NULL))
        || !(copy = malloc(len + 1)))
        goto done;
    memcpy(copy, text, len);
    copy[len] = '\0';
    size_t n = hostset_range_count(set);
    int64_t now = monotime_ms();
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(c, job_id)];
    entry_clear(c, e);
    if (c->ranges + n > CACHE_MAX_RANGES)
        drop_expired(c, now);
    if (c->ranges + n <= CACHE_MAX_RANGES) {
        strcpy(e->job_id, job_id);
        e->expires = now + c->ttl_ms;
        e->text = copy;
        e->len = len;
        e->nodes = set;
        c->ranges += n;
        copy = NULL;
        set = NULL;
    }
    pthread_mutex_unlock(&c->lock);
done:
    free(copy);
    hostset_destroy(set);
}

void cache_forget(struct cache *c, const char *job_id)
{
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(c, job_id)];
    if (e->text && !strcmp(e->job_id, job_id))
        entry_clear(c, e);
    pthread_mutex_unlock(&c->lock);
}
