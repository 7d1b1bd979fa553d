/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the node-fetch cache (server/api/cache.c): a job and its
 * steps are kept apart, each judged by its own node list; forgetting a
 * step leaves the rest, forgetting a job takes its steps and nothing of
 * a job whose id merely starts the same; a read that began before a
 * forget is not kept; only active reservations are kept; entries expire;
 * ttl 0 keeps nothing; hits and misses are counted by kind; the misses of
 * a storm wait for its first one's read, but not for a read that kept
 * nothing, and not at all after one.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "server/api/cache.h"

/* Keep a reservation of job (and step, or NULL) on nodes in state as read
 * after the miss of fill; its reply text is "job/step" so that a hit shows
 * whose it is.
 */
static void put_after(struct cache *c,
                      const char *job,
                      const char *step,
                      const char *nodes,
                      const char *state,
                      const struct cache_fill *fill)
{
    char text[128];
    json_t *res = json_pack(
        "{s:s, s:s, s:s}", "job_id", job, "state", state, "nodes", nodes);
    assert_non_null(res);
    if (step)
        assert_int_equal(json_object_set_new(res, "step_id", json_string(step)),
                         0);
    snprintf(text, sizeof(text), "%s/%s", job, step ? step : "-");
    cache_put(c, job, step, res, text, strlen(text), fill);
    json_decref(res);
}

/* The same with no miss before: a fill of no read, as of a cache that
 * forgot nothing yet.
 */
static void put(struct cache *c,
                const char *job,
                const char *step,
                const char *nodes,
                const char *state)
{
    struct cache_fill fill = {0};
    put_after(c, job, step, nodes, state, &fill);
}

/* What the cache answers node's fetch of job (step): "miss", "refused" (a
 * hit for a node outside), or the reply's text.
 */
static char *get(struct cache *c,
                 const char *job,
                 const char *step,
                 const char *node)
{
    struct cache_fill fill;
    char *text = NULL;
    size_t len = 0;
    bool member = false;

    if (!cache_get(c, job, step, node, &text, &len, &member, &fill)) {
        cache_done(c, job, step, &fill);
        return strdup("miss");
    }
    if (!member) {
        assert_null(text);
        return strdup("refused");
    }
    assert_int_equal(len, strlen(text));
    return text;
}

static void expect(struct cache *c,
                   const char *job,
                   const char *step,
                   const char *node,
                   const char *want)
{
    char *got = get(c, job, step, node);
    assert_string_equal(got, want);
    free(got);
}

static void test_job_and_steps_apart(void **state)
{
    (void)state;
    struct cache *c = cache_create(64, 60000);
    assert_non_null(c);
    put(c, "12", NULL, "n[1-8]", "active");
    put(c, "12", "0", "n[1-2]", "active");
    put(c, "12", "1", "n[5-8]", "active");
    expect(c, "12", NULL, "n7", "12/-");
    expect(c, "12", "0", "n2", "12/0");
    /* A step's membership is its own node list's, not the job's. */
    expect(c, "12", "0", "n7", "refused");
    expect(c, "12", "1", "n7", "12/1");
    expect(c, "12", "1", "n9", "refused");
    expect(c, "12", "2", "n1", "miss");
    /* Job 120 is another job. */
    expect(c, "120", NULL, "n1", "miss");
    cache_destroy(c);
}

static void test_forget(void **state)
{
    (void)state;
    struct cache *c = cache_create(64, 60000);
    assert_non_null(c);
    put(c, "12", NULL, "n[1-8]", "active");
    put(c, "12", "0", "n[1-2]", "active");
    put(c, "12", "1", "n[1-2]", "active");
    put(c, "123", NULL, "n[1-8]", "active");
    put(c, "123", "0", "n[1-2]", "active");
    put(c, "1", "2", "n[1-2]", "active");
    /* A step: that step only. */
    cache_forget(c, "12", "0");
    expect(c, "12", "0", "n1", "miss");
    expect(c, "12", "1", "n1", "12/1");
    expect(c, "12", NULL, "n1", "12/-");
    /* A job: the job and all its steps, nothing of job 123 or 1. */
    cache_forget(c, "12", NULL);
    expect(c, "12", "1", "n1", "miss");
    expect(c, "12", NULL, "n1", "miss");
    expect(c, "123", NULL, "n1", "123/-");
    expect(c, "123", "0", "n1", "123/0");
    expect(c, "1", "2", "n1", "1/2");
    /* Forgetting what was never kept is nothing. */
    cache_forget(c, "nope", NULL);
    cache_forget(c, "nope", "7");
    cache_destroy(c);
}

/* A read that began before this broker forgot its job may be the job
 * before the change: it is not kept.  One that began after is.
 */
static void test_forget_during_read(void **state)
{
    (void)state;
    struct cache *c = cache_create(64, 60000);
    struct cache_fill fill;
    char *text = NULL;
    size_t len;
    bool member;
    assert_non_null(c);
    assert_false(cache_get(c, "j", "0", "n1", &text, &len, &member, &fill));
    assert_true(fill.id != 0); /* the read for all */
    cache_forget(c, "j", NULL);
    put_after(c, "j", "0", "n1", "active", &fill);
    expect(c, "j", "0", "n1", "miss");
    /* A forget of the step, as of the job, and of another job's step. */
    assert_false(cache_get(c, "j", "0", "n1", &text, &len, &member, &fill));
    cache_forget(c, "j", "0");
    put_after(c, "j", "0", "n1", "active", &fill);
    expect(c, "j", "0", "n1", "miss");
    assert_false(cache_get(c, "j", "0", "n1", &text, &len, &member, &fill));
    cache_forget(c, "other", "0");
    put_after(c, "j", "0", "n1", "active", &fill);
    expect(c, "j", "0", "n1", "j/0");
    cache_destroy(c);
}

static void test_only_active(void **state)
{
    (void)state;
    struct cache *c = cache_create(64, 60000);
    assert_non_null(c);
    put(c, "j", "0", "n1", "releasing");
    put(c, "j", "1", "n1", "released");
    expect(c, "j", "0", "n1", "miss");
    expect(c, "j", "1", "n1", "miss");
    put(c, "j", "0", "n1", "active");
    expect(c, "j", "0", "n1", "j/0");
    cache_destroy(c);
}

static void test_expiry_and_off(void **state)
{
    (void)state;
    struct cache *c = cache_create(64, 30);
    struct cache *off = cache_create(64, 0);
    struct timespec nap = {0, 60 * 1000000L};
    assert_non_null(c);
    assert_non_null(off);
    put(c, "j", "0", "n1", "active");
    expect(c, "j", "0", "n1", "j/0");
    nanosleep(&nap, NULL);
    expect(c, "j", "0", "n1", "miss");
    put(off, "j", "0", "n1", "active");
    put(off, "j", NULL, "n1", "active");
    expect(off, "j", "0", "n1", "miss");
    expect(off, "j", NULL, "n1", "miss");
    cache_destroy(c);
    cache_destroy(off);
}

/* The value of one sample in the metrics text, or -1. */
static long long sample(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    return p ? strtoll(p + strlen(name), NULL, 10) : -1;
}

/* c's metrics text (the caller frees). */
static char *metrics_of(const struct cache *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    cache_write_metrics(c, f);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_counters(void **state)
{
    (void)state;
    struct cache *c = cache_create(64, 60000);
    struct cache *off = cache_create(64, 0);
    assert_non_null(c);
    assert_non_null(off);
    put(c, "j", NULL, "n1", "active");
    put(c, "j", "0", "n1", "active");
    expect(c, "j", NULL, "n1", "j/-");     /* job hit */
    expect(c, "j", NULL, "n2", "refused"); /* job hit: answered */
    expect(c, "j", "0", "n1", "j/0");      /* step hit */
    expect(c, "j", "1", "n1", "miss");     /* step miss */
    expect(c, "k", NULL, "n1", "miss");    /* job miss */
    put(off, "j", "0", "n1", "active");
    expect(off, "j", "0", "n1", "miss"); /* off: every fetch a miss */
    char *on_text = metrics_of(c), *off_text = metrics_of(off);
    assert_non_null(
        strstr(on_text, "# TYPE vnib_node_cache_hits_total counter\n"));
    assert_non_null(
        strstr(on_text, "# TYPE vnib_node_cache_misses_total counter\n"));
    assert_int_equal(
        sample(on_text, "vnib_node_cache_hits_total{kind=\"job\"} "), 2);
    assert_int_equal(
        sample(on_text, "vnib_node_cache_hits_total{kind=\"step\"} "), 1);
    assert_int_equal(
        sample(on_text, "vnib_node_cache_misses_total{kind=\"job\"} "), 1);
    assert_int_equal(
        sample(on_text, "vnib_node_cache_misses_total{kind=\"step\"} "), 1);
    assert_int_equal(
        sample(off_text, "vnib_node_cache_hits_total{kind=\"step\"} "), 0);
    assert_int_equal(
        sample(off_text, "vnib_node_cache_misses_total{kind=\"step\"} "), 1);
    free(on_text);
    free(off_text);
    cache_destroy(c);
    cache_destroy(off);
}

/* Many steps of one job, more than the slots: each kept or pushed out by
 * a newer one, never answered for another step.
 */
static void test_slots_bounded(void **state)
{
    (void)state;
    struct cache *c = cache_create(16, 60000);
    char step[16], want[32];
    int kept = 0;
    assert_non_null(c);
    for (int i = 0; i < 100; i++) {
        snprintf(step, sizeof(step), "%d", i);
        put(c, "big", step, "nid[000001-011136]", "active");
    }
    for (int i = 0; i < 100; i++) {
        snprintf(step, sizeof(step), "%d", i);
        snprintf(want, sizeof(want), "big/%d", i);
        char *got = get(c, "big", step, "nid005000");
        if (strcmp(got, "miss")) {
            assert_string_equal(got, want);
            kept++;
        }
        free(got);
    }
    assert_true(kept > 0 && kept <= 16);
    cache_forget(c, "big", NULL);
    for (int i = 0; i < 100; i++) {
        snprintf(step, sizeof(step), "%d", i);
        expect(c, "big", step, "nid005000", "miss");
    }
    cache_destroy(c);
}

/* ---- a storm's misses: one read for all --------------------------------- */

struct storm {
    struct cache *c;
    pthread_barrier_t go;
    const char *state; /* what the filler reads ("active", ...), or NULL:
                          its read fails (cache_done) */
    pthread_mutex_t lock;
    int readers; /* misses that made the read for the others */
    int hits;
    int alone; /* misses that read by themselves */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A node's fetch of step 0 of job j at the storm's start; the one that
 * reads for the others takes 50 ms to do it.
 */
static void *storm_fetch(void *arg)
{
    struct storm *st = arg;
    struct timespec read_time = {0, 50 * 1000000L};
    struct cache_fill fill;
    char *text = NULL;
    size_t len;
    bool member = false;

    pthread_barrier_wait(&st->go);
    bool hit = cache_get(st->c, "j", "0", "n1", &text, &len, &member, &fill);
    free(text);
    if (!hit && fill.id) {
        nanosleep(&read_time, NULL);
        if (st->state)
            put_after(st->c, "j", "0", "n[1-4]", st->state, &fill);
        else
            cache_done(st->c, "j", "0", &fill);
    } else if (!hit) {
        cache_done(st->c, "j", "0", &fill); /* nothing: not the reader */
    }
    pthread_mutex_lock(&st->lock);
    if (hit)
        st->hits++;
    else if (fill.id)
        st->readers++;
    else
        st->alone++;
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* 8 fetches at once (a broker's request workers) of a key that is not
 * kept; returns how long they took, in ms.
 */
static int64_t storm_run(struct storm *st, const char *state)
{
    pthread_t t[8];

    st->state = state;
    st->readers = st->hits = st->alone = 0;
    pthread_barrier_init(&st->go, NULL, 8);
    int64_t t0 = now_ms();
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&t[i], NULL, storm_fetch, st), 0);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&st->go);
    return now_ms() - t0;
}

static void test_storm_one_read(void **state)
{
    (void)state;
    struct storm st = {.c = cache_create(64, 60000)};
    assert_non_null(st.c);
    pthread_mutex_init(&st.lock, NULL);
    storm_run(&st, "active");
    assert_int_equal(st.readers, 1);
    assert_int_equal(st.hits, 7);
    assert_int_equal(st.alone, 0);
    pthread_mutex_destroy(&st.lock);
    cache_destroy(st.c);
}

/* A read that keeps nothing (a released step, a failed read) releases the
 * waiting misses at once, which read by themselves; and the next misses
 * of the key for node_cache_ms wait for no one.
 */
static void test_storm_nothing_kept(void **state)
{
    (void)state;
    static const char *const states[] = {"released", NULL};
    for (int i = 0; i < 2; i++) {
        struct storm st = {.c = cache_create(64, 60000)};
        assert_non_null(st.c);
        pthread_mutex_init(&st.lock, NULL);
        int64_t ms = storm_run(&st, states[i]);
        assert_int_equal(st.readers, 1);
        assert_int_equal(st.hits, 0);
        assert_int_equal(st.alone, 7);
        /* The waiters went on at the read's end (50 ms), not at the bound
         * of a wait (a second).
         */
        assert_true(ms < 800);
        ms = storm_run(&st, "active");
        assert_int_equal(st.readers, 0);
        assert_int_equal(st.hits, 0);
        assert_int_equal(st.alone, 8);
        assert_true(ms < 800);
        /* Until the step changes here: then one read for all again. */
        cache_forget(st.c, "j", "0");
        storm_run(&st, "active");
        assert_int_equal(st.readers, 1);
        assert_int_equal(st.hits, 7);
        pthread_mutex_destroy(&st.lock);
        cache_destroy(st.c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_and_steps_apart),
        cmocka_unit_test(test_forget),
        cmocka_unit_test(test_forget_during_read),
        cmocka_unit_test(test_only_active),
        cmocka_unit_test(test_expiry_and_off),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_slots_bounded),
        cmocka_unit_test(test_storm_one_read),
        cmocka_unit_test(test_storm_nothing_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
