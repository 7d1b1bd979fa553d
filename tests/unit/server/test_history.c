/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the ring of pool samples behind GET /v1/status' history
 * (server/bg/history.c): samples come back oldest first, a full ring drops
 * the oldest one per push, and history_json returns exactly the samples
 * at or after the time asked, with their figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/bg/history.h"

static struct history_sample sample(time_t t)
{
    struct history_sample s = {.t = t,
                               .free = t * 10,
                               .active = t + 1,
                               .quarantined = 2,
                               .outside = 3};
    return s;
}

static void test_order_and_wrap(void **state)
{
    struct history *h = history_create(4);
    (void)state;
    assert_non_null(h);
    assert_int_equal(history_count(h), 0);
    assert_null(history_at(h, 0));
    for (time_t t = 1; t <= 3; t++) {
        struct history_sample s = sample(t);
        history_push(h, &s);
    }
    assert_int_equal(history_count(h), 3);
    assert_int_equal(history_at(h, 0)->t, 1);
    assert_int_equal(history_at(h, 2)->t, 3);
    /* Past capacity the oldest goes, one per push, over several laps. */
    for (time_t t = 4; t <= 11; t++) {
        struct history_sample s = sample(t);
        history_push(h, &s);
        assert_int_equal(history_count(h), 4);
        for (size_t i = 0; i < 4; i++)
            assert_int_equal(history_at(h, i)->t, t - 3 + (time_t)i);
    }
    assert_null(history_at(h, 4));
    history_destroy(h);
}

static void test_json_since(void **state)
{
    struct history *h = history_create(8);
    (void)state;
    assert_non_null(h);
    json_t *empty = history_json(h, 0);
    assert_non_null(empty);
    assert_int_equal(json_array_size(empty), 0);
    json_decref(empty);
    /* Ten samples 5 s apart into a ring of 8: 1700000010..1700000045. */
    for (int i = 0; i < 10; i++) {
        struct history_sample s = sample(1700000000 + 5 * i);
        history_push(h, &s);
    }
    json_t *all = history_json(h, 0);
    assert_int_equal(json_array_size(all), 8);
    json_t *first = json_array_get(all, 0);
    assert_string_equal(json_string_value(json_object_get(first, "t")),
                        "2023-11-14T22:13:30Z");
    assert_int_equal(json_integer_value(json_object_get(first, "free")),
                     17000000100LL);
    assert_int_equal(json_integer_value(json_object_get(first, "active")),
                     1700000011);
    assert_int_equal(json_integer_value(json_object_get(first, "quarantined")),
                     2);
    assert_int_equal(json_integer_value(json_object_get(first, "outside_pool")),
                     3);
    json_decref(all);

    /* At or after: an exact sample time includes it, a time between two
     * starts at the later one, a time past the newest gives none.
     */
    json_t *some = history_json(h, 1700000035);
    assert_int_equal(json_array_size(some), 3);
    json_decref(some);
    some = history_json(h, 1700000036);
    assert_int_equal(json_array_size(some), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(some, 0), "t")),
        "2023-11-14T22:14:00Z");
    json_decref(some);
    some = history_json(h, 1700000046);
    assert_int_equal(json_array_size(some), 0);
    json_decref(some);
    history_destroy(h);
}

static void test_capacity_zero_is_one(void **state)
{
    struct history *h = history_create(0);
    (void)state;
    assert_non_null(h);
    struct history_sample a = sample(1), b = sample(2);
    history_push(h, &a);
    history_push(h, &b);
    assert_int_equal(history_count(h), 1);
    assert_int_equal(history_at(h, 0)->t, 2);
    history_destroy(h);
    history_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_wrap),
        cmocka_unit_test(test_json_since),
        cmocka_unit_test(test_capacity_zero_is_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
