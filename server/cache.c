/* Node-fetch cache of active reservations (see cache.h).
 *
 * Direct-mapped: a job hashes to one slot and a newer job evicts an older
 * one, which bounds memory with no bookkeeping.  Each entry keeps the
 * reply (a jansson value, shared by reference; jansson's reference counts
 * are atomic and cached values are never modified) and the node list as
 * at most CACHE_MAX_RANGES ranges of trailing numbers, checked with the
 * same name keys the database uses.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"
#include "vnib/hostlist.h"
#include "server/cache.h"

/* A node list of more ranges than this is not cached (the database's
 * index answers it better than a linear scan would).
 */
#define CACHE_MAX_RANGES 64

/* Largest node list decoded to build the ranges. */
#define CACHE_MAX_NAMES 2000000

struct range {
    char prefix[64];
    char suffix[32];
    int width;
    uint64_t lo, hi;
};

struct entry {
    char job_id[129]; /* "" when empty */
    int64_t expires;  /* monotonic ms */
    json_t *res;
    struct range *ranges;
    size_t nranges;
};

struct cache {
    pthread_mutex_t lock;
    struct entry *slots;
    unsigned nslots;
    int64_t ttl_ms;
};

static unsigned slot_of(const struct cache *c, const char *job_id)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)job_id; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % c->nslots;
}

static void entry_clear(struct entry *e)
{
    json_decref(e->res);
    free(e->ranges);
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
            entry_clear(&c->slots[i]);
        free(c->slots);
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
    errno = saved_errno;
}

static bool ranges_contain(const struct range *r, size_t n, const char *node)
{
    struct hostlist_key k;
    hostlist_name_key(node, &k);
    for (size_t i = 0; i < n; i++) {
        if (r[i].width == k.width && k.num >= r[i].lo && k.num <= r[i].hi
            && strlen(r[i].prefix) == k.prefix_len
            && !strncmp(r[i].prefix, node, k.prefix_len)
            && !strcmp(r[i].suffix, k.suffix))
            return true;
    }
    return false;
}

bool cache_get(struct cache *c,
               const char *job_id,
               const char *node,
               json_t **resp,
               bool *memberp)
{
    bool hit = false;

    if (c->ttl_ms <= 0)
        return false;
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(c, job_id)];
    if (e->res && !strcmp(e->job_id, job_id) && e->expires > monotime_ms()) {
        *resp = json_incref(e->res);
        *memberp = ranges_contain(e->ranges, e->nranges, node);
        hit = true;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

/* The node list as ranges, or -1 when it has too many or will not parse. */
static int build_ranges(const char *nodes, struct range **rp, size_t *np)
{
    struct hostlist *hl = hostlist_decode(nodes, CACHE_MAX_NAMES, NULL);
    struct range *r = NULL;
    size_t n = 0;
    int rc = -1;

    if (!hl)
        return -1;
    hostlist_uniq(hl);
    if (!(r = calloc(CACHE_MAX_RANGES, sizeof(*r))))
        goto done;
    for (size_t i = 0; i < hostlist_count(hl); i++) {
        const char *name = hostlist_nth(hl, i);
        struct hostlist_key k;
        hostlist_name_key(name, &k);
        if (n > 0) {
            struct range *last = &r[n - 1];
            if (k.width >= 0 && last->width == k.width && k.num == last->hi + 1
                && strlen(last->prefix) == k.prefix_len
                && !strncmp(last->prefix, name, k.prefix_len)
                && !strcmp(last->suffix, k.suffix)) {
                last->hi = k.num;
                continue;
            }
        }
        if (n == CACHE_MAX_RANGES || k.prefix_len >= sizeof(r->prefix)
            || strlen(k.suffix) >= sizeof(r->suffix))
            goto done;
        memcpy(r[n].prefix, name, k.prefix_len);
        r[n].prefix[k.prefix_len] = '\0';
        strcpy(r[n].suffix, k.suffix);
        r[n].width = k.width;
        r[n].lo = r[n].hi = k.num;
        n++;
    }
    *rp = r;
    *np = n;
    r = NULL;
    rc = 0;
done:
    free(r);
    hostlist_destroy(hl);
    return rc;
}

void cache_put(struct cache *c, json_t *res)
{
    const char *job_id = json_string_value(json_object_get(res, "job_id"));
    const char *state = json_string_value(json_object_get(res, "state"));
    const char *nodes = json_string_value(json_object_get(res, "nodes"));
    struct range *r;
    size_t n;

    if (c->ttl_ms <= 0 || !job_id || !state || !nodes || strcmp(state, "active")
        || strlen(job_id) >= sizeof(c->slots[0].job_id))
        return;
    if (build_ranges(nodes, &r, &n) < 0)
        return;
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(c, job_id)];
    entry_clear(e);
    strcpy(e->job_id, job_id);
    e->expires = monotime_ms() + c->ttl_ms;
    e->res = json_incref(res);
    e->ranges = r;
    e->nranges = n;
    pthread_mutex_unlock(&c->lock);
}

void cache_forget(struct cache *c, const char *job_id)
{
    pthread_mutex_lock(&c->lock);
    struct entry *e = &c->slots[slot_of(c, job_id)];
    if (e->res && !strcmp(e->job_id, job_id))
        entry_clear(e);
    pthread_mutex_unlock(&c->lock);
}
