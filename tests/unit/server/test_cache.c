/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the node-fetch cache (server/api/cache.c): a job and its
 * steps are kept apart, each judged by its own node list; forgetting a
 * step leaves the rest, forgetting a job takes its steps and nothing of
 * a job whose id merely starts the same; only active reservations are
 * kept; entries expire; ttl 0 keeps nothing; hits and misses are counted
 * by kind.
 */
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

/* Keep a reservation of job (and step, or NULL) on nodes in state; its
 * reply text is "job/step" so that a hit shows whose it is.
 */
static void put(struct cache *c,
                const char *job,
                const char *step,
                const char *nodes,
                const char *state)
{
    char text[128];
    json_t *res = json_pack("{s:s, s:s, s:s}",
                            "job_id",
                            job,
                            "state",
                            state,
                            "nodes",
                            nodes);
    assert_non_null(res);
    if (step)
        assert_int_equal(
            json_object_set_new(res, "step_id", json_string(step)), 0);
    snprintf(text, sizeof(text), "%s/%s", job, step ? step : "-");
    cache_put(c, res, text, strlen(text));
    json_decref(res);
}

/* What the cache answers node's fetch of job (step): "miss", "refused" (a
 * hit for a node outside), or the reply's text.
 */
static char *get(struct cache *c,
                 const char *job,
                 const char *step,
                 const char *node)
{
    char *text = NULL;
    size_t len = 0;
    bool member = false;

    if (!cache_get(c, job, step, node, &text, &len, &member))
        return strdup("miss");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_and_steps_apart),
        cmocka_unit_test(test_forget),
        cmocka_unit_test(test_only_active),
        cmocka_unit_test(test_expiry_and_off),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_slots_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
