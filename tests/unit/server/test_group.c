/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for group commit (server/store/group.c): an item alone runs at
 * once in a group of one; items that arrive while a group runs form the
 * next group, up to max_items; `fits` keeps incompatible items apart (they
 * run in a later group, never lost); at most `leaders` groups run at once;
 * every item is processed exactly once.  The same with threads of the
 * group's own (group_start, group_post): each posted item's on_done is
 * called exactly once, after it was processed, or expired without being
 * processed; destruction serves what is queued first.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "server/store/group.h"

#define NITEMS 16

struct item {
    struct group_item gi; /* first */
    int key;
    int processed;         /* times run() saw it */
    int dones;             /* times on_done was called */
    int processed_at_done; /* processed when on_done was called */
    bool expired_at_done;  /* gi.expired then */
};

/* What run() saw, and a gate the first group waits on. */
struct ctx {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool gated; /* the first group waits for gate_open */
    bool gate_open;
    int running; /* groups in run() now */
    int most_running;
    int groups;
    size_t sizes[NITEMS];
    bool mixed_keys; /* a group held two items with one key */
    struct group *g;
};

static void ctx_init(struct ctx *c, bool gated)
{
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->gated = gated;
    c->gate_open = false;
    c->running = 0;
    c->most_running = 0;
    c->groups = 0;
    c->mixed_keys = false;
    c->g = NULL;
}

static void ctx_open(struct ctx *c)
{
    pthread_mutex_lock(&c->lock);
    c->gate_open = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Wait until `running` groups are in run() (at most ~2 s). */
static bool ctx_wait_running(struct ctx *c, int running)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 2000000};
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&c->lock);
        bool ok = c->running >= running;
        pthread_mutex_unlock(&c->lock);
        if (ok)
            return true;
        nanosleep(&ts, NULL);
    }
    return false;
}

static bool fits(void *arg,
                 struct group_item *const *items,
                 size_t n,
                 const struct group_item *gi)
{
    const struct item *it = (const struct item *)gi;
    (void)arg;
    for (size_t i = 0; i < n; i++)
        if (((const struct item *)items[i])->key == it->key)
            return false;
    return true;
}

static void run(void *arg, struct group_item **items, size_t n)
{
    struct ctx *c = arg;
    pthread_mutex_lock(&c->lock);
    int me = c->groups++;
    if (me < NITEMS)
        c->sizes[me] = n;
    for (size_t i = 0; i < n; i++) {
        ((struct item *)items[i])->processed++;
        for (size_t j = 0; j < i; j++)
            if (((struct item *)items[j])->key
                == ((struct item *)items[i])->key)
                c->mixed_keys = true;
    }
    c->running++;
    if (c->running > c->most_running)
        c->most_running = c->running;
    while (c->gated && !c->gate_open)
        pthread_cond_wait(&c->cond, &c->lock);
    c->running--;
    pthread_mutex_unlock(&c->lock);
}

struct submitter {
    struct ctx *c;
    struct item *it;
    pthread_t t;
};

static void *submit_thread(void *arg)
{
    struct submitter *s = arg;
    group_submit(s->c->g, &s->it->gi);
    return NULL;
}

static void start(struct submitter *s, struct ctx *c, struct item *it)
{
    s->c = c;
    s->it = it;
    assert_int_equal(pthread_create(&s->t, NULL, submit_thread, s), 0);
}

/* Give the n submitters (started, the first group held in run()) ns
 * nanoseconds to queue behind it, open the gate, join them all and check
 * that each item was processed once.
 */
static void open_and_join(struct ctx *c,
                          struct submitter *subs,
                          const struct item *items,
                          int n,
                          long ns)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};

    nanosleep(&ts, NULL);
    ctx_open(c);
    for (int i = 0; i < n; i++)
        pthread_join(subs[i].t, NULL);
    for (int i = 0; i < n; i++)
        assert_int_equal(items[i].processed, 1);
}

static void test_alone(void **state)
{
    struct ctx c;
    struct item it = {.key = 1};
    struct group_stats st;
    (void)state;

    ctx_init(&c, false);
    assert_non_null(c.g = group_create(8, 1, fits, run, &c));
    group_submit(c.g, &it.gi);
    assert_true(it.gi.done);
    assert_int_equal(it.processed, 1);
    group_get_stats(c.g, &st);
    assert_int_equal(st.groups, 1);
    assert_int_equal(st.items, 1);
    assert_int_equal(c.sizes[0], 1);
    group_destroy(c.g);
}

/* While the first group runs, six more arrive: they form the next group
 * (up to max_items 4, so two groups: 4 and 2), each processed once.
 */
static void test_groups_form(void **state)
{
    struct ctx c;
    struct item items[7];
    struct submitter subs[7];
    struct group_stats st;
    (void)state;

    ctx_init(&c, true);
    assert_non_null(c.g = group_create(4, 1, fits, run, &c));
    for (int i = 0; i < 7; i++)
        items[i] = (struct item){.key = i};
    start(&subs[0], &c, &items[0]);
    assert_true(ctx_wait_running(&c, 1));
    for (int i = 1; i < 7; i++)
        start(&subs[i], &c, &items[i]);
    /* Let the others queue behind the running group. */
    open_and_join(&c, subs, items, 7, 100000000);
    group_get_stats(c.g, &st);
    assert_int_equal(st.items, 7);
    assert_int_equal(st.groups, 3);
    assert_int_equal(c.sizes[0], 1);
    assert_int_equal(c.sizes[1], 4);
    assert_int_equal(c.sizes[2], 2);
    assert_int_equal(st.max, 4);
    assert_int_equal(c.most_running, 1);
    group_destroy(c.g);
}

/* Items with one key never share a group; all are processed. */
static void test_fits(void **state)
{
    struct ctx c;
    struct item items[6];
    struct submitter subs[6];
    (void)state;

    ctx_init(&c, true);
    assert_non_null(c.g = group_create(8, 1, fits, run, &c));
    items[0] = (struct item){.key = 100};
    start(&subs[0], &c, &items[0]);
    assert_true(ctx_wait_running(&c, 1));
    for (int i = 1; i < 6; i++) {
        items[i] = (struct item){.key = i % 2}; /* keys 1,0,1,0,1 */
        start(&subs[i], &c, &items[i]);
    }
    open_and_join(&c, subs, items, 6, 100000000);
    assert_false(c.mixed_keys);
    /* 1 + (1,0) + (1,0) + (1): no group larger than the two keys. */
    for (int i = 1; i < c.groups; i++)
        assert_true(c.sizes[i] <= 2);
    group_destroy(c.g);
}

/* With two leaders, two groups run at once, never three. */
static void test_leaders(void **state)
{
    struct ctx c;
    struct item items[5];
    struct submitter subs[5];
    (void)state;

    ctx_init(&c, true);
    assert_non_null(c.g = group_create(1, 2, NULL, run, &c));
    for (int i = 0; i < 5; i++) {
        items[i] = (struct item){.key = i};
        start(&subs[i], &c, &items[i]);
    }
    assert_true(ctx_wait_running(&c, 2));
    open_and_join(&c, subs, items, 5, 50000000);
    assert_int_equal(c.most_running, 2);
    group_destroy(c.g);
}

/* on_done of posted items (group_post): counted under the ctx's lock,
 * whose address the test passes in `done_ctx`.
 */
static struct ctx *done_ctx;

static void on_done(struct group_item *gi)
{
    struct item *it = (struct item *)gi;
    pthread_mutex_lock(&done_ctx->lock);
    it->dones++;
    it->processed_at_done = it->processed;
    it->expired_at_done = gi->expired;
    pthread_cond_broadcast(&done_ctx->cond);
    pthread_mutex_unlock(&done_ctx->lock);
}

/* Wait until each of the n items had its on_done (at most ~2 s). */
static bool wait_dones(struct ctx *c, struct item *items, int n)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 2000000};
    for (int k = 0; k < 1000; k++) {
        int done = 0;
        pthread_mutex_lock(&c->lock);
        for (int i = 0; i < n; i++)
            done += items[i].dones > 0;
        pthread_mutex_unlock(&c->lock);
        if (done == n)
            return true;
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Posted while the first group runs on the group's own thread, six more
 * form the next groups (4 and 2); nobody waits; each item's on_done comes
 * once, after it was processed.
 */
static void test_post_groups_form(void **state)
{
    struct ctx c;
    struct item items[7];
    struct group_stats st;
    (void)state;

    ctx_init(&c, true);
    done_ctx = &c;
    for (int i = 0; i < 7; i++)
        items[i] = (struct item){.key = i, .gi.on_done = on_done};
    assert_non_null(c.g = group_create(4, 1, fits, run, &c));
    assert_int_equal(group_post(c.g, &items[0].gi), -1); /* no threads */
    assert_int_equal(group_start(c.g), 0);
    assert_int_equal(group_post(c.g, &items[0].gi), 0);
    assert_true(ctx_wait_running(&c, 1));
    for (int i = 1; i < 7; i++)
        assert_int_equal(group_post(c.g, &items[i].gi), 0);
    ctx_open(&c);
    assert_true(wait_dones(&c, items, 7));
    group_get_stats(c.g, &st);
    group_destroy(c.g);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(items[i].processed, 1);
        assert_int_equal(items[i].dones, 1);
        assert_int_equal(items[i].processed_at_done, 1);
        assert_false(items[i].expired_at_done);
    }
    assert_int_equal(st.groups, 3);
    assert_int_equal(c.sizes[1], 4);
    assert_int_equal(c.sizes[2], 2);
}

/* An item whose deadline passes while it is queued is never processed:
 * its on_done comes with expired set.  Destruction serves the queue.
 */
static void test_post_expired(void **state)
{
    struct ctx c;
    struct item items[3];
    (void)state;

    ctx_init(&c, true);
    done_ctx = &c;
    assert_non_null(c.g = group_create(4, 1, NULL, run, &c));
    assert_int_equal(group_start(c.g), 0);
    for (int i = 0; i < 3; i++)
        items[i] = (struct item){.key = i, .gi.on_done = on_done};
    items[1].gi.deadline_ns = 1; /* long past */
    assert_int_equal(group_post(c.g, &items[0].gi), 0);
    assert_true(ctx_wait_running(&c, 1));
    assert_int_equal(group_post(c.g, &items[1].gi), 0);
    assert_int_equal(group_post(c.g, &items[2].gi), 0);
    ctx_open(&c);
    group_destroy(c.g); /* serves items 1 and 2 before it returns */
    assert_int_equal(items[0].processed, 1);
    assert_int_equal(items[1].processed, 0);
    assert_int_equal(items[2].processed, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(items[i].dones, 1);
    assert_true(items[1].expired_at_done);
    assert_false(items[2].expired_at_done);
}

/* Two threads: two groups run at once, never three. */
static void test_post_leaders(void **state)
{
    struct ctx c;
    struct item items[5];
    (void)state;

    ctx_init(&c, true);
    done_ctx = &c;
    assert_non_null(c.g = group_create(1, 2, NULL, run, &c));
    assert_int_equal(group_start(c.g), 0);
    for (int i = 0; i < 5; i++) {
        items[i] = (struct item){.key = i, .gi.on_done = on_done};
        assert_int_equal(group_post(c.g, &items[i].gi), 0);
    }
    assert_true(ctx_wait_running(&c, 2));
    ctx_open(&c);
    assert_true(wait_dones(&c, items, 5));
    group_destroy(c.g);
    assert_int_equal(c.most_running, 2);
}

static void test_create_refuses(void **state)
{
    (void)state;
    assert_null(group_create(0, 1, NULL, run, NULL));
    assert_null(group_create(4, 0, NULL, run, NULL));
    assert_null(group_create(4, 1, NULL, NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone),
        cmocka_unit_test(test_groups_form),
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_leaders),
        cmocka_unit_test(test_post_groups_form),
        cmocka_unit_test(test_post_expired),
        cmocka_unit_test(test_post_leaders),
        cmocka_unit_test(test_create_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
