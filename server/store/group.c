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
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "vnib/monotime.h"
#include "server/store/group.h"

struct group {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a group ended */
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

void group_destroy(struct group *g)
{
    if (!g)
        return;
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g->batch);
    free(g->batch_used);
    free(g);
}

/* Take the next group from the queue into items (under the lock).
 * Items whose deadline has passed leave the queue done and expired;
 * *expiredp says whether there were any, whose submitters must be woken.
 */
static size_t take(struct group *g, struct group_item **items, bool *expiredp)
{
    size_t n = 0;
    struct group_item **pp = &g->head;
    int64_t now = monotime_ns();

    *expiredp = false;
    while (*pp && n < g->max_items) {
        struct group_item *it = *pp;
        if (it->deadline_ns > 0 && now > it->deadline_ns) {
            *pp = it->next;
            it->next = NULL;
            it->expired = it->done = true;
            *expiredp = true;
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
            unsigned slot = 0;
            while (g->batch_used[slot])
                slot++;
            g->batch_used[slot] = true;
            struct group_item **items = g->batch + (size_t)slot * g->max_items;
            bool expired;
            size_t n = take(g, items, &expired);
            if (expired)
                pthread_cond_broadcast(&g->cond);
            if (n == 0) {
                g->batch_used[slot] = false;
                continue;
            }
            g->running++;
            g->stats.groups++;
            g->stats.items += n;
            if (n > g->stats.max)
                g->stats.max = n;
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

void group_get_stats(struct group *g, struct group_stats *st)
{
    pthread_mutex_lock(&g->lock);
    *st = g->stats;
    pthread_mutex_unlock(&g->lock);
}
