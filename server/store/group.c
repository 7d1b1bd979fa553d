/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Group commit (see group.h).
 *
 * One mutex guards the queue and the count of running groups.  A
 * submitter queues its item, then loops: when its item is done it
 * returns; when fewer than `leaders` groups run and the queue is not
 * empty it leads one, taking items from the queue (its own among them or
 * not: whoever leads serves the queue in order); otherwise it waits for a
 * group to end.  Every end of a group wakes all waiters, so a thread whose
 * item was served returns, and one of the others may lead next.
 *
 * A group started with threads of its own (group_start) has no
 * submitters waiting: its `leaders` threads each sleep until the queue
 * has items, lead a group, and call each item's `done` once it is
 * processed; items whose deadline passed in the queue get theirs at once,
 * expired.  On destruction they serve what is queued, then exit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "vnib/monotime.h"
#include "server/store/group.h"

struct group {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a group ended, or (threads) an item came */
    struct group_item *head;
    struct group_item **tail;
    unsigned running;
    unsigned leaders;
    size_t max_items;
    group_fits_f fits;
    group_run_f run;
    void *arg;
    struct group_item **batch; /* one per leader: leaders * max_items */
    bool *batch_used;
    struct group_stats stats;
    pthread_t *threads; /* group_start: one per leader; NULL: none */
    unsigned nthreads;
    bool stopping; /* threads: serve what is queued, then exit */
};

struct group *group_create(size_t max_items,
                           unsigned leaders,
                           group_fits_f fits,
                           group_run_f run,
                           void *arg)
{
    struct group *g;

    if (max_items < 1 || leaders < 1 || !run) {
        errno = EINVAL;
        return NULL;
    }
    if (!(g = calloc(1, sizeof(*g))))
        return NULL;
    g->batch = calloc((size_t)leaders * max_items, sizeof(g->batch[0]));
    g->batch_used = calloc(leaders, sizeof(g->batch_used[0]));
    if (!g->batch || !g->batch_used) {
        free(g->batch);
        free(g->batch_used);
        free(g);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->tail = &g->head;
    g->leaders = leaders;
    g->max_items = max_items;
    g->fits = fits;
    g->run = run;
    g->arg = arg;
    return g;
}

/* Stop the threads of group_start, once they have served the queue. */
static void stop_threads(struct group *g)
{
    pthread_mutex_lock(&g->lock);
    g->stopping = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    for (unsigned i = 0; i < g->nthreads; i++)
        pthread_join(g->threads[i], NULL);
    g->nthreads = 0;
}

void group_destroy(struct group *g)
{
    if (!g)
        return;
    if (g->threads)
        stop_threads(g);
    free(g->threads);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g->batch);
    free(g->batch_used);
    free(g);
}

/* Take the next group from the queue into items (under the lock).
 * Items whose deadline has passed leave the queue done and expired, in
 * the list *expiredp (linked by next), whose submitters must be woken (or
 * their done called).
 */
static size_t take(struct group *g,
                   struct group_item **items,
                   struct group_item **expiredp)
{
    size_t n = 0;
    struct group_item **pp = &g->head;
    struct group_item **ex = expiredp;
    int64_t now = monotime_ns();

    *expiredp = NULL;
    while (*pp && n < g->max_items) {
        struct group_item *it = *pp;
        if (it->deadline_ns > 0 && now > it->deadline_ns) {
            *pp = it->next;
            it->next = NULL;
            it->expired = it->done = true;
            *ex = it;
            ex = &it->next;
            g->stats.expired++;
            continue;
        }
        if (n == 0 || !g->fits || g->fits(g->arg, items, n, it)) {
            *pp = it->next;
            it->next = NULL;
            items[n++] = it;
        } else
            pp = &it->next;
    }
    /* The tail moved if the last item was taken. */
    g->tail = &g->head;
    while (*g->tail)
        g->tail = &(*g->tail)->next;
    return n;
}

/* Claim a free batch of items (under the lock; one is free while fewer
 * than `leaders` groups run).
 */
static struct group_item **batch_claim(struct group *g, unsigned *slotp)
{
    unsigned slot = 0;

    while (g->batch_used[slot])
        slot++;
    g->batch_used[slot] = true;
    *slotp = slot;
    return g->batch + (size_t)slot * g->max_items;
}

/* Count a group of n about to run (under the lock). */
static void count_group(struct group *g, size_t n)
{
    g->running++;
    g->stats.groups++;
    g->stats.items += n;
    if (n > g->stats.max)
        g->stats.max = n;
}

void group_submit(struct group *g, struct group_item *it)
{
    pthread_mutex_lock(&g->lock);
    it->done = false;
    it->expired = false;
    it->next = NULL;
    *g->tail = it;
    g->tail = &it->next;
    while (!it->done) {
        if (g->running < g->leaders && g->head) {
            unsigned slot;
            struct group_item **items = batch_claim(g, &slot);
            struct group_item *expired;
            size_t n = take(g, items, &expired);
            if (expired)
                pthread_cond_broadcast(&g->cond);
            if (n == 0) {
                g->batch_used[slot] = false;
                continue;
            }
            count_group(g, n);
            pthread_mutex_unlock(&g->lock);
            g->run(g->arg, items, n);
            pthread_mutex_lock(&g->lock);
            for (size_t i = 0; i < n; i++)
                items[i]->done = true;
            g->running--;
            g->batch_used[slot] = false;
            pthread_cond_broadcast(&g->cond);
        } else
            pthread_cond_wait(&g->cond, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
}

/* Call done of each item of the list (linked by next, which done may
 * free), outside the lock.
 */
static void call_done_list(struct group_item *it)
{
    while (it) {
        struct group_item *next = it->next;
        it->next = NULL;
        it->on_done(it);
        it = next;
    }
}

/* A thread of group_start: lead a group whenever items are queued. */
static void *leader_main(void *arg)
{
    struct group *g = arg;

    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (!g->head && !g->stopping)
            pthread_cond_wait(&g->cond, &g->lock);
        if (!g->head)
            break; /* stopping, and nothing is left to serve */
        unsigned slot;
        struct group_item **items = batch_claim(g, &slot);
        struct group_item *expired;
        size_t n = take(g, items, &expired);
        if (n > 0)
            count_group(g, n);
        pthread_mutex_unlock(&g->lock);
        call_done_list(expired);
        if (n > 0) {
            g->run(g->arg, items, n);
            for (size_t i = 0; i < n; i++) {
                items[i]->done = true;
                items[i]->on_done(items[i]);
            }
        }
        pthread_mutex_lock(&g->lock);
        if (n > 0)
            g->running--;
        g->batch_used[slot] = false;
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int group_start(struct group *g)
{
    if (g->threads) {
        errno = EBUSY;
        return -1;
    }
    if (!(g->threads = calloc(g->leaders, sizeof(g->threads[0])))) {
        errno = ENOMEM;
        return -1;
    }
    for (unsigned i = 0; i < g->leaders; i++) {
        int e = pthread_create(&g->threads[i], NULL, leader_main, g);
        if (e != 0) {
            stop_threads(g);
            free(g->threads);
            g->threads = NULL;
            g->stopping = false;
            errno = e;
            return -1;
        }
        g->nthreads++;
    }
    return 0;
}

int group_post(struct group *g, struct group_item *it)
{
    int e = 0;

    pthread_mutex_lock(&g->lock);
    if (!g->threads)
        e = EINVAL;
    else if (g->stopping)
        e = ESHUTDOWN;
    else {
        it->done = false;
        it->expired = false;
        it->next = NULL;
        *g->tail = it;
        g->tail = &it->next;
        pthread_cond_signal(&g->cond);
    }
    pthread_mutex_unlock(&g->lock);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

void group_get_stats(struct group *g, struct group_stats *st)
{
    pthread_mutex_lock(&g->lock);
    *st = g->stats;
    pthread_mutex_unlock(&g->lock);
}
