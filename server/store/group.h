/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Group commit: requests of one kind that arrive while one of them is
 * being written are gathered and written together, in one call.
 *
 * A caller embeds a struct group_item in its own item and submits it; it
 * returns once the group's `run` callback has processed the item, on this
 * thread or another.  At most `leaders` groups run at once; a submitter
 * that finds a free place leads, taking the queued items that `fits`
 * accepts (up to max_items, in arrival order), so a request that arrives
 * alone runs alone, at once, and under load the groups grow by themselves.
 * There is no timer: nothing waits for company.
 *
 * An item may carry a deadline: one still queued when it passes is not
 * given to `run`; it comes back with `expired` set, so that a request
 * whose client has given up is never written.
 *
 * A group may instead have threads of its own (group_start): its
 * `leaders` threads lead the groups, and items are posted to it
 * (group_post) without waiting, each coming back through its own on_done
 * callback.  That serves requests whose caller must not block (a request
 * the HTTP pipeline answers later, from the callback), and lets a group
 * hold as many items as arrive, not as many as there are threads to wait
 * for them.  A group is used one way or the other, never both.
 */
#ifndef VNIB_SERVER_GROUP_H
#define VNIB_SERVER_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct group_item {
    struct group_item *next; /* the group's queue */
    int64_t deadline_ns;     /* monotonic; 0: none (set by the caller) */
    bool done;               /* run() has processed it, or it expired */
    bool expired;            /* its deadline passed before a group took it */
    /* group_post: called once, on one of the group's threads, when the
     * item is done (processed, or expired); it may free the item */
    void (*on_done)(struct group_item *it);
};

/* May `it` join the items already chosen (items[0..n-1], n >= 1)? */
typedef bool (*group_fits_f)(void *arg,
                             struct group_item *const *items,
                             size_t n,
                             const struct group_item *it);

/* Process items[0..n-1]: each must carry its outcome when this returns. */
typedef void (*group_run_f)(void *arg, struct group_item **items, size_t n);

struct group_stats {
    uint64_t groups;  /* run() calls */
    uint64_t items;   /* items they carried */
    uint64_t max;     /* the largest group */
    uint64_t expired; /* items whose deadline passed in the queue */
};

struct group;

/* NULL with errno on failure. */
struct group *group_create(size_t max_items,
                           unsigned leaders,
                           group_fits_f fits,
                           group_run_f run,
                           void *arg);
void group_destroy(struct group *g);

/* Run `it` in a group; returns when it is done (or has expired). */
void group_submit(struct group *g, struct group_item *it);

/* Give g `leaders` threads of its own, which run the groups of the items
 * posted to it.  0, or -1 with errno.  group_destroy() lets them serve
 * what is queued, then joins them.
 */
int group_start(struct group *g);

/* Queue `it` for g's threads (group_start) and return at once: it->on_done
 * is called once it is processed or has expired, on one of those threads.
 * 0, or -1 with errno ESHUTDOWN (g is being destroyed) or EINVAL (g has no
 * threads); on_done is then never called.
 */
int group_post(struct group *g, struct group_item *it);

void group_get_stats(struct group *g, struct group_stats *st);

#endif
