/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the per-key token buckets (server/http/ratelimit.c): burst,
 * refill, Retry-After, independent keys, and bounded memory under many
 * keys.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "server/http/ratelimit.h"

static void test_burst_then_refill(void **state)
{
    (void)state;
    struct ratelimit *rl = ratelimit_create(2, 5, 64);
    int ra = 0;
    assert_non_null(rl);
    for (int i = 0; i < 5; i++)
        assert_true(ratelimit_take(rl, "nid000001", 1000, &ra));
    assert_false(ratelimit_take(rl, "nid000001", 1000, &ra));
    assert_int_equal(ra, 1);
    /* Another key has its own bucket. */
    assert_true(ratelimit_take(rl, "nid000002", 1000, &ra));
    /* Half a second refills one token at 2/s. */
    assert_true(ratelimit_take(rl, "nid000001", 1500, &ra));
    assert_false(ratelimit_take(rl, "nid000001", 1500, &ra));
    /* Never more than the burst, however long it was idle. */
    for (int i = 0; i < 5; i++)
        assert_true(ratelimit_take(rl, "nid000001", 100000, &ra));
    assert_false(ratelimit_take(rl, "nid000001", 100000, &ra));
    ratelimit_destroy(rl);
}

static void test_retry_after(void **state)
{
    (void)state;
    struct ratelimit *rl = ratelimit_create(0.25, 1, 8);
    int ra = 0;
    assert_true(ratelimit_take(rl, "n", 0, &ra));
    assert_false(ratelimit_take(rl, "n", 0, &ra));
    assert_int_equal(ra, 4);
    ratelimit_destroy(rl);
}

static void test_many_keys_bounded(void **state)
{
    (void)state;
    /* El Capitan's 11,136 names in 16,384 slots, each taking its burst. */
    struct ratelimit *rl = ratelimit_create(20, 3, 16384);
    char name[32];
    int ra = 0, refused = 0;
    assert_int_equal(ratelimit_slots(rl), 16384);
    for (int i = 0; i < 11136; i++) {
        snprintf(name, sizeof(name), "nid%06d", i);
        for (int j = 0; j < 3; j++)
            refused += !ratelimit_take(rl, name, 0, &ra);
    }
    /* Collisions may evict a bucket (a fresh burst), never refuse early. */
    assert_int_equal(refused, 0);
    /* 100,000 names through a table of 64 slots: memory stays fixed. */
    struct ratelimit *small = ratelimit_create(1, 1, 64);
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        assert_true(ratelimit_take(small, name, i, &ra));
    }
    ratelimit_destroy(small);
    ratelimit_destroy(rl);
}

static void test_invalid(void **state)
{
    (void)state;
    errno = 0;
    assert_null(ratelimit_create(0, 5, 8));
    assert_int_equal(errno, EINVAL);
    assert_null(ratelimit_create(1, 0, 8));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_refill),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_many_keys_bounded),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
