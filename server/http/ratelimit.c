/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Token buckets per key in a fixed table (see ratelimit.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "server/http/ratelimit.h"

/* Slots a key may occupy, from its hash on: a lookup reads at most these. */
#define PROBES 8

struct bucket {
    uint64_t key;    /* hash of the name; 0 marks a free slot */
    double tokens;   /* as of last_ms */
    int64_t last_ms; /* last refill, and last use (for eviction) */
};

struct ratelimit {
    pthread_mutex_t lock;
    double rate;  /* tokens per second */
    double burst; /* bucket size */
    size_t mask;  /* slots - 1 */
    struct bucket *slots;
};

/* FNV-1a, never 0 (0 marks a free slot). */
static uint64_t hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

struct ratelimit *ratelimit_create(double rate, double burst, size_t slots)
{
    struct ratelimit *rl;
    size_t n = PROBES;

    if (!(rate > 0) || !(burst >= 1)) {
        errno = EINVAL;
        return NULL;
    }
    while (n < slots && n < ((size_t)1 << 30))
        n *= 2;
    if (!(rl = calloc(1, sizeof(*rl))))
        return NULL;
    if (!(rl->slots = calloc(n, sizeof(*rl->slots)))) {
        free(rl);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&rl->lock, NULL);
    rl->rate = rate;
    rl->burst = burst;
    rl->mask = n - 1;
    return rl;
}

void ratelimit_destroy(struct ratelimit *rl)
{
    if (rl) {
        pthread_mutex_destroy(&rl->lock);
        free(rl->slots);
        free(rl);
    }
}

size_t ratelimit_slots(const struct ratelimit *rl)
{
    return rl->mask + 1;
}

/* The tokens b holds at now_ms. */
static double refilled(const struct ratelimit *rl,
                       const struct bucket *b,
                       int64_t now_ms)
{
    double t = b->tokens;
    if (now_ms > b->last_ms)
        t += (double)(now_ms - b->last_ms) * rl->rate / 1000.0;
    return t < rl->burst ? t : rl->burst;
}

/* Key's slot: its own, or a free, refilled or least recently used one of
 * its window, made over to key with a full bucket.  Lock held.
 */
static struct bucket *find(struct ratelimit *rl, uint64_t key, int64_t now_ms)
{
    struct bucket *victim = NULL;
    for (size_t i = 0; i < PROBES; i++) {
        struct bucket *b = &rl->slots[(key + i) & rl->mask];
        if (b->key == key)
            return b;
        if (b->key && refilled(rl, b, now_ms) >= rl->burst)
            b->key = 0; /* a full bucket is as good as none */
        if (!victim
            || (victim->key && (!b->key || b->last_ms < victim->last_ms)))
            victim = b;
    }
    victim->key = key;
    victim->tokens = rl->burst;
    victim->last_ms = now_ms;
    return victim;
}

bool ratelimit_take(struct ratelimit *rl,
                    const char *key,
                    int64_t now_ms,
                    int *retry_after_s)
{
    bool ok;

    pthread_mutex_lock(&rl->lock);
    struct bucket *b = find(rl, hash(key), now_ms);
    b->tokens = refilled(rl, b, now_ms);
    if (now_ms > b->last_ms)
        b->last_ms = now_ms;
    ok = b->tokens >= 1;
    if (ok)
        b->tokens -= 1;
    else if (retry_after_s) {
        double need = (1 - b->tokens) / rl->rate;
        int s = need < 3600 ? (int)need : 3600;
        if (s < need && s < 3600)
            s++;
        *retry_after_s = s < 1 ? 1 : s;
    }
    pthread_mutex_unlock(&rl->lock);
    return ok;
}
