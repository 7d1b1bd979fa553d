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
 * memory whatever the node lists.
 *
 * Each slot also has a fill: the storm's first miss of a key reads the
 * database for everyone, and the misses of that key meanwhile (one per
 * request worker, up to server.threads of them) wait for it instead of
 * making the same read; a read that kept nothing (a released reservation,
 * a missing one) lets the next misses of its key read at once for
 * node_cache_ms, so that a storm of uncacheable fetches does not queue
 * behind one read at a time.  A waiter that finds nothing kept reads the
 * database itself: waiting never makes an answer wrong, only later.
 *
 * A read that began before this broker forgot its job (cache_forget())
 * may have seen the job before the change, and is not kept: each miss
 * carries the forgets of its job's bucket (gens) as they were, which
 * cache_put() compares.
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

/* The longest a miss waits for another's read of its key (or node_cache_ms
 * when shorter): a read slower than that is the database's trouble, and
 * the waiter reads itself.
 */
#define CACHE_FILL_WAIT_MS 1000

/* Buckets of forget counts, by job hash: a forget of one job makes the
 * reads in flight of the jobs of its bucket (one in 256) not kept.
 */
#define CACHE_GENS 256

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

/* What a slot's fill says of the misses of its key until `until`. */
enum fill_state {
    FILL_NONE,    /* nothing: a miss reads the database, for all */
    FILL_READING, /* fill `id` reads the database: misses wait for it */
    FILL_SKIP,    /* the last read kept nothing: misses read at once */
};

struct fill {
    char key[CACHE_KEY_SIZE];
    uint32_t job_hash; /* of the key's job (cache_forget) */
    enum fill_state state;
    uint64_t id;   /* the reading miss's (struct cache_fill) */
    int64_t until; /* monotonic ms */
};

struct slot {
    struct entry entry;
    struct fill fill;
};

struct cache {
    pthread_mutex_t lock;
    pthread_cond_t filled; /* a fill ended */
    struct slot *slots;
    unsigned nslots;
    int64_t ttl_ms;
    int64_t wait_ms;  /* CACHE_FILL_WAIT_MS, or ttl_ms if shorter */
    size_t ranges;    /* hostset ranges of all entries */
    uint64_t fill_id; /* the newest fill's */
    uint64_t gens[CACHE_GENS];
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

/* Whether key (of a job of hash kh) is job_id's (of hash h) or one of its
 * steps'.
 */
static bool key_of_job(const char *key,
                       uint32_t kh,
                       const char *job_id,
                       uint32_t h)
{
    size_t n = strlen(job_id);
    return kh == h && !strncmp(key, job_id, n)
           && (key[n] == '\0' || key[n] == '#');
}

static struct slot *slot_of(const struct cache *c, const char *key)
{
    return &c->slots[hash_of(key) % c->nslots];
}

static uint64_t *gen_of(struct cache *c, uint32_t job_hash)
{
    return &c->gens[job_hash % CACHE_GENS];
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
    pthread_condattr_t attr;
    struct cache *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->nslots = slots ? slots : 1;
    c->ttl_ms = ttl_ms;
    c->wait_ms = ttl_ms < CACHE_FILL_WAIT_MS ? ttl_ms : CACHE_FILL_WAIT_MS;
    if (!(c->slots = calloc(c->nslots, sizeof(c->slots[0])))) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->filled, &attr);
    pthread_condattr_destroy(&attr);
    return c;
}

void cache_destroy(struct cache *c)
{
    int saved_errno = errno;
    if (c) {
        for (unsigned i = 0; i < c->nslots; i++)
            entry_clear(c, &c->slots[i].entry);
        free(c->slots);
        pthread_cond_destroy(&c->filled);
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
    errno = saved_errno;
}

/* Wait (under the lock, released meanwhile) until fill f, now reading as
 * fill id, ends or `until` (monotonic ms) passes.
 */
static void fill_wait(struct cache *c,
                      const struct fill *f,
                      uint64_t id,
                      int64_t until)
{
    struct timespec ts = {.tv_sec = (time_t)(until / 1000),
                          .tv_nsec = (long)(until % 1000) * 1000000L};

    while (f->state == FILL_READING && f->id == id && monotime_ms() < until)
        if (pthread_cond_timedwait(&c->filled, &c->lock, &ts) == ETIMEDOUT)
            break;
}

/* A miss of key (of a job of hash jh) in slot s: the database read it
 * makes for the others, unless another read of the key is under way or
 * the key's last read kept nothing (under the lock).
 */
static void fill_claim(struct cache *c,
                       struct slot *s,
                       const char *key,
                       uint32_t jh,
                       int64_t now,
                       struct cache_fill *fill)
{
    struct fill *f = &s->fill;

    if (f->state != FILL_NONE && f->until > now
        && (f->state == FILL_READING || !strcmp(f->key, key)))
        return; /* the key's read, or another key's: this one reads alone */
    strcpy(f->key, key);
    f->job_hash = jh;
    f->state = FILL_READING;
    f->id = fill->id = ++c->fill_id;
    f->until = now + c->wait_ms;
}

/* End the read of fill in slot s (under the lock): the key's misses read
 * for all again, or with skip at once for node_cache_ms.
 */
static void fill_end(struct cache *c,
                     struct slot *s,
                     const struct cache_fill *fill,
                     bool skip)
{
    struct fill *f = &s->fill;

    if (!fill->id || f->id != fill->id || f->state != FILL_READING)
        return;
    f->state = skip ? FILL_SKIP : FILL_NONE;
    f->until = monotime_ms() + c->ttl_ms;
    pthread_cond_broadcast(&c->filled);
}

/* Look key up in slot s (under the lock) at now: true when its entry is
 * fresh, with *memberp and, for a member, *textp and *lenp (a copy; NULL
 * when out of memory, which is then no hit).
 */
static bool entry_lookup(const struct slot *s,
                         const char *key,
                         const char *node,
                         int64_t now,
                         char **textp,
                         size_t *lenp,
                         bool *memberp,
                         bool *hitp)
{
    const struct entry *e = &s->entry;

    if (!e->text || strcmp(e->key, key) || e->expires <= now)
        return false;
    *memberp = hostset_contains(e->nodes, node);
    if (*memberp && (*textp = malloc(e->len + 1))) {
        memcpy(*textp, e->text, e->len + 1);
        *lenp = e->len;
    }
    /* Out of memory for the copy: a miss, which the database answers,
     * filling nothing.
     */
    *hitp = !*memberp || *textp;
    return true;
}

bool cache_peek(struct cache *c,
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
    if (c->ttl_ms <= 0 || key_of(key, job_id, step_id) < 0)
        return false;
    pthread_mutex_lock(&c->lock);
    (void)entry_lookup(
        slot_of(c, key), key, node, monotime_ms(), textp, lenp, memberp, &hit);
    pthread_mutex_unlock(&c->lock);
    if (hit)
        atomic_fetch_add_explicit(&c->hits[kind], 1, memory_order_relaxed);
    return hit;
}

bool cache_get(struct cache *c,
               const char *job_id,
               const char *step_id,
               const char *node,
               char **textp,
               size_t *lenp,
               bool *memberp,
               struct cache_fill *fill)
{
    enum cache_kind kind = step_id ? CACHE_STEP : CACHE_JOB;
    char key[CACHE_KEY_SIZE];
    bool hit = false, waited = false;

    *textp = NULL;
    memset(fill, 0, sizeof(*fill));
    if (c->ttl_ms > 0 && key_of(key, job_id, step_id) == 0) {
        uint32_t jh = hash_of(job_id);
        pthread_mutex_lock(&c->lock);
        struct slot *s = slot_of(c, key);
        for (;;) {
            int64_t now = monotime_ms();
            fill->gen = *gen_of(c, jh);
            if (entry_lookup(s, key, node, now, textp, lenp, memberp, &hit))
                break;
            struct fill *f = &s->fill;
            if (!waited && f->state == FILL_READING && f->until > now
                && !strcmp(f->key, key)) {
                fill_wait(c, f, f->id, f->until);
                waited = true;
                continue;
            }
            fill_claim(c, s, key, jh, now, fill);
            break;
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
    for (unsigned i = 0; i < c->nslots; i++) {
        struct entry *e = &c->slots[i].entry;
        if (e->text && e->expires <= now)
            entry_clear(c, e);
    }
}

void cache_put(struct cache *c,
               const char *job_id,
               const char *step_id,
               const json_t *res,
               const char *text,
               size_t len,
               const struct cache_fill *fill)
{
    const char *state = json_string_value(json_object_get(res, "state"));
    const char *nodes = json_string_value(json_object_get(res, "nodes"));
    bool keep = state && nodes && !strcmp(state, "active");
    struct hostset *set = NULL;
    char key[CACHE_KEY_SIZE];
    char *copy = NULL;
    bool kept = false;

    if (c->ttl_ms <= 0 || key_of(key, job_id, step_id) < 0)
        return; /* no fill either */
    /* Read and copy outside the lock: fetches of other reservations need
     * not wait.
     */
    if (keep
        && (!(set = hostset_decode(nodes, CACHE_MAX_NAMES, NULL))
            || !(copy = malloc(len + 1))))
        keep = false;
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = '\0';
    }
    size_t n = hostset_range_count(set);
    uint32_t jh = hash_of(job_id);
    int64_t now = monotime_ms();
    pthread_mutex_lock(&c->lock);
    struct slot *s = slot_of(c, key);
    bool forgotten = *gen_of(c, jh) != fill->gen;
    if (keep && !forgotten) {
        struct entry *e = &s->entry;
        entry_clear(c, e);
        if (c->ranges + n > CACHE_MAX_RANGES)
            drop_expired(c, now);
        if (c->ranges + n <= CACHE_MAX_RANGES) {
            strcpy(e->key, key);
            e->job_hash = jh;
            e->expires = now + c->ttl_ms;
            e->text = copy;
            e->len = len;
            e->nodes = set;
            c->ranges += n;
            copy = NULL;
            set = NULL;
            kept = true;
        }
    }
    /* Forgotten while it read: the next miss reads again, for all. */
    fill_end(c, s, fill, !kept && !forgotten);
    pthread_mutex_unlock(&c->lock);
    free(copy);
    hostset_destroy(set);
}

void cache_done(struct cache *c,
                const char *job_id,
                const char *step_id,
                const struct cache_fill *fill)
{
    char key[CACHE_KEY_SIZE];
    int saved_errno = errno; /* the failed read's, for the caller */

    if (!fill->id || key_of(key, job_id, step_id) < 0)
        return;
    pthread_mutex_lock(&c->lock);
    fill_end(c, slot_of(c, key), fill, true);
    pthread_mutex_unlock(&c->lock);
    errno = saved_errno;
}

/* Forget in slot s (under the lock) what is key's, a step's, or with key
 * NULL what is job_id's (of hash h) or one of its steps': its entry, and
 * the mark of a read that kept nothing, as what it read has changed.
 */
static void slot_forget(struct cache *c,
                        struct slot *s,
                        const char *key,
                        const char *job_id,
                        uint32_t h)
{
    struct entry *e = &s->entry;
    struct fill *f = &s->fill;

    if (e->text
        && (key ? !strcmp(e->key, key)
                : key_of_job(e->key, e->job_hash, job_id, h)))
        entry_clear(c, e);
    if (f->state == FILL_SKIP
        && (key ? !strcmp(f->key, key)
                : key_of_job(f->key, f->job_hash, job_id, h)))
        f->state = FILL_NONE;
}

void cache_forget(struct cache *c, const char *job_id, const char *step_id)
{
    char key[CACHE_KEY_SIZE];

    if (key_of(key, job_id, step_id) < 0)
        return; /* never kept */
    uint32_t h = hash_of(job_id);
    pthread_mutex_lock(&c->lock);
    (*gen_of(c, h))++;
    if (step_id) {
        slot_forget(c, slot_of(c, key), key, job_id, h);
    } else {
        /* The job's steps are in slots of their own: look at every slot
         * (a thousand numbers compared, at a job's reserve or release).
         */
        for (unsigned i = 0; i < c->nslots; i++)
            slot_forget(c, &c->slots[i], NULL, job_id, h);
    }
    pthread_mutex_unlock(&c->lock);
}

bool cache_answer(struct cache *c,
                  struct request *req,
                  const char *job_id,
                  const char *step_id,
                  bool *memberp,
                  struct cache_fill *fill)
{
    if (!cache_get(c,
                   job_id,
                   step_id,
                   req->who.node,
                   &req->text,
                   &req->text_len,
                   memberp,
                   fill))
        return false;
    if (*memberp)
        req->content_type = "application/json";
    return true;
}

bool cache_answer_now(struct cache *c,
                      struct request *req,
                      const char *job_id,
                      const char *step_id,
                      bool *memberp)
{
    if (!cache_peek(c,
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

void cache_keep(struct cache *c,
                struct request *req,
                const char *job_id,
                const char *step_id,
                json_t **out,
                bool member,
                const struct cache_fill *fill)
{
    if (!member || !*out
        || !(req->text = httpd_json_text(*out, &req->text_len))) {
        cache_done(c, job_id, step_id, fill);
        return;
    }
    req->content_type = "application/json";
    cache_put(c, job_id, step_id, *out, req->text, req->text_len, fill);
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
