/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Node-fetch cache of active reservations, jobs' and steps' (see cache.h).
 *
 * Direct-mapped: a key (a job's id, or "<job>#<step>" for a step, the
 * database's own key of a step reservation) hashes to one slot and a newer
 * entry evicts an older one, which bounds the entries with no
 * bookkeeping.  Each entry keeps the reply rendered once, as the text a
 * node receives (a hit copies it out, which costs a memcpy where rendering
 * a large node list in JSON again would cost more than the rest of the
 * request), and the node list as a hostset: ranges of trailing numbers
 * read from the stored expression without expanding it, checked with the
 * same name keys the database uses, by binary search.  A node list of a
 * thousand ranges is therefore answered like one of one range.  The ranges
 * of all entries together are bounded (CACHE_MAX_RANGES), which bounds the
 * memory whatever the node lists.  An entry also keeps the hash of its
 * job's id, so that forgetting a job with all its steps compares a number
 * per slot, not a string.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/hostset.h"
#include "vnib/httpd.h"
#include "vnib/monotime.h"
#include "server/api/cache.h"
#include "server/http/http.h"

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

/* A key: a job id (at most 128 bytes, params_job_id()), '#', a step id
 * (at most 64, params_step_id()), NUL.
 */
#define CACHE_KEY_SIZE 194

/* What an entry or a fetch is of: the label of its counters. */
enum cache_kind { CACHE_JOB, CACHE_STEP, CACHE_KINDS };

static const char *const kind_names[CACHE_KINDS] = {"job", "step"};

struct entry {
    char key[CACHE_KEY_SIZE]; /* "" when empty */
    uint32_t job_hash;        /* of the job's id (cache_forget) */
    int64_t expires;          /* monotonic ms */
    char *text;               /* the reply as sent, NULL when empty */
    size_t len;               /* its bytes */
    struct hostset *nodes;    /* the job's or the step's node list */
};

struct cache {
    pthread_mutex_t lock;
    struct entry *slots;
    unsigned nslots;
    int64_t ttl_ms;
    size_t ranges; /* hostset ranges of all entries */
    atomic_uint_fast64_t hits[CACHE_KINDS];
    atomic_uint_fast64_t misses[CACHE_KINDS];
};

static uint32_t hash_of(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* The key of job_id, or of its step step_id (not NULL) into key (of
 * CACHE_KEY_SIZE bytes): 0, or -1 for ids too long to be valid.
 */
static int key_of(char *key, const char *job_id, const char *step_id)
{
    int n = step_id ? snprintf(key, CACHE_KEY_SIZE, "%s#%s", job_id, step_id)
                    : snprintf(key, CACHE_KEY_SIZE, "%s", job_id);
    return n < 0 || n >= CACHE_KEY_SIZE ? -1 : 0;
}

static struct entry *slot_of(const struct cache *c, const char *key)
{
    return &c->slots[hash_of(key) % c->nslots];
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
               const char *step_id,
               const char *node,
               char **textp,
               size_t *lenp,
               bool *memberp)
{
    enum cache_kind kind = step_id ? CACHE_STEP : CACHE_JOB;
    char key[CACHE_KEY_SIZE];
    bool hit = false;

    *textp = NULL;
    if (c->ttl_ms > 0 && key_of(key, job_id, step_id) == 0) {
        pthread_mutex_lock(&c->lock);
        struct entry *e = slot_of(c, key);
        if (e->text && !strcmp(e->key, key) && e->expires > monotime_ms()) {
            *memberp = hostset_contains(e->nodes, node);
            if (*memberp && (*textp = malloc(e->len + 1))) {
                memcpy(*textp, e->text, e->len + 1);
                *lenp = e->len;
            }
            /* Out of memory for the copy: a miss, which the database
             * answers.
             */
            hit = !*memberp || *textp;
        }
        pthread_mutex_unlock(&c->lock);
    }
    atomic_fetch_add_explicit(
        hit ? &c->hits[kind] : &c->misses[kind], 1, memory_order_relaxed);
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
    const char *step_id = json_string_value(json_object_get(res, "step_id"));
    const char *state = json_string_value(json_object_get(res, "state"));
    const char *nodes = json_string_value(json_object_get(res, "nodes"));
    struct hostset *set = NULL;
    char key[CACHE_KEY_SIZE];
    char *copy = NULL;

    if (c->ttl_ms <= 0 || !job_id || !state || !nodes || strcmp(state, "active")
        || key_of(key, job_id, step_id) < 0)
        return;
    /* Read and copy outside the lock: fetches of other reservations need
     * not wait.
     */
    if (!(set = hostset_decode(nodes, CACHE_MAX_NAMES, NULL))
        || !(copy = malloc(len + 1)))
        goto done;
    memcpy(copy, text, len);
    copy[len] = '\0';
    size_t n = hostset_range_count(set);
    int64_t now = monotime_ms();
    pthread_mutex_lock(&c->lock);
    struct entry *e = slot_of(c, key);
    entry_clear(c, e);
    if (c->ranges + n > CACHE_MAX_RANGES)
        drop_expired(c, now);
    if (c->ranges + n <= CACHE_MAX_RANGES) {
        strcpy(e->key, key);
        e->job_hash = hash_of(job_id);
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

/* Whether entry e is job_id's (of hash h) or one of its steps'. */
static bool of_job(const struct entry *e, const char *job_id, uint32_t h)
{
    size_t n = strlen(job_id);
    return e->text && e->job_hash == h && !strncmp(e->key, job_id, n)
           && (e->key[n] == '\0' || e->key[n] == '#');
}

void cache_forget(struct cache *c, const char *job_id, const char *step_id)
{
    char key[CACHE_KEY_SIZE];

    if (key_of(key, job_id, step_id) < 0)
        return; /* never kept */
    pthread_mutex_lock(&c->lock);
    if (step_id) {
        struct entry *e = slot_of(c, key);
        if (e->text && !strcmp(e->key, key))
            entry_clear(c, e);
    } else {
        /* The job's steps are in slots of their own: look at every slot
         * (a thousand numbers compared, at a job's reserve or release).
         */
        uint32_t h = hash_of(job_id);
        for (unsigned i = 0; i < c->nslots; i++)
            if (of_job(&c->slots[i], job_id, h))
                entry_clear(c, &c->slots[i]);
    }
    pthread_mutex_unlock(&c->lock);
}

bool cache_answer(struct cache *c,
                  struct request *req,
                  const char *job_id,
                  const char *step_id,
                  bool *memberp)
{
    if (!cache_get(c,
                   job_id,
                   step_id,
                   req->who.node,
                   &req->text,
                   &req->text_len,
                   memberp))
        return false;
    if (*memberp)
        req->content_type = "application/json";
    return true;
}

void cache_keep(struct cache *c, struct request *req, json_t **out)
{
    if (!(req->text = httpd_json_text(*out, &req->text_len)))
        return;
    req->content_type = "application/json";
    cache_put(c, *out, req->text, req->text_len);
    json_decref(*out);
    *out = NULL;
}

void cache_write_metrics(const struct cache *c, FILE *out)
{
    fputs(
        "# HELP vnib_node_cache_hits_total Node fetches of a job or a "
        "step (kind) answered from this replica's node-fetch cache.\n"
        "# TYPE vnib_node_cache_hits_total counter\n",
        out);
    for (int k = 0; k < CACHE_KINDS; k++)
        fprintf(out,
                "vnib_node_cache_hits_total{kind=\"%s\"} %llu\n",
                kind_names[k],
                (unsigned long long)atomic_load_explicit(&c->hits[k],
                                                         memory_order_relaxed));
    fputs(
        "# HELP vnib_node_cache_misses_total Node fetches of a job or a "
        "step (kind) the database answered (all of them with "
        "server.node_cache_ms = 0).\n"
        "# TYPE vnib_node_cache_misses_total counter\n",
        out);
    for (int k = 0; k < CACHE_KINDS; k++)
        fprintf(out,
                "vnib_node_cache_misses_total{kind=\"%s\"} %llu\n",
                kind_names[k],
                (unsigned long long)atomic_load_explicit(&c->misses[k],
                                                         memory_order_relaxed));
}
