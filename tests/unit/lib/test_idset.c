/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for lib/idset.c: integer sets kept as ranges.
 *
 * Covers decoding (forms, whitespace, merging, every error), encoding,
 * adding and removing ranges at the edges 0 and max_id, the round-robin
 * next_after step with wrap-around, and a randomised comparison against a
 * plain bitmap that also checks the sorted, disjoint, non-adjacent
 * invariant after every operation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/common/assert_fails.h"
#include "vnib/idset.h"

/* ---- helpers ----------------------------------------------------------- */

/* s decodes (with max_id) and encodes as want, holding count ids. */
static void check_decode(const char *s,
                         uint32_t max_id,
                         const char *want,
                         size_t count)
{
    vnib_error_t e = {0};
    struct idset *set = idset_decode(s, max_id, &e);
    char *got;

    if (!set)
        fail_msg("decode '%s' failed: %s", s, e.text);
    got = idset_encode(set);
    assert_non_null(got);
    if (strcmp(got, want) != 0)
        fail_msg("decode '%s': got '%s', want '%s'", s, got, want);
    assert_int_equal(idset_count(set), count);
    free(got);
    idset_destroy(set);
}

/* A row of test_decode_forms or test_decode_merges (topic). */
enum decode_topic { DECODE_FORMS, DECODE_MERGES };
struct decode_case {
    enum decode_topic topic;
    const char *s;
    uint32_t max_id;
    const char *want;
    size_t count;
};

/* s is refused with EINVAL and a message containing msg. */
static void check_fail(const char *s, uint32_t max_id, const char *msg)
{
    vnib_error_t e = {0};

    errno = 0;
    if (idset_decode(s, max_id, &e))
        fail_msg("decode '%s' succeeded, want '%s'", s, msg);
    assert_int_equal(errno, EINVAL);
    if (!strstr(e.text, msg))
        fail_msg("decode '%s': message '%s' lacks '%s'", s, e.text, msg);
    errno = 0;
    assert_null(idset_decode(s, max_id, NULL));
    assert_int_equal(errno, EINVAL);
}

/* A row of test_decode_errors. */
struct fail_case {
    const char *s;
    uint32_t max_id;
    const char *msg;
};

static void check_fails(const struct fail_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_fail(cases[i].s, cases[i].max_id, cases[i].msg);
}

static void check_encode(const struct idset *set, const char *want)
{
    char *got = idset_encode(set);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Ranges are ascending, each lo <= hi <= max, with a gap between
 * neighbours.
 */
static void check_invariant(const struct idset *set, uint32_t max_id)
{
    size_t n = idset_range_count(set);
    uint32_t phi = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t lo;
        uint32_t hi;
        assert_int_equal(idset_range(set, i, &lo, &hi), 0);
        assert_true(lo <= hi);
        assert_true(hi <= max_id);
        if (i > 0)
            assert_true((uint64_t)phi + 1 < lo);
        phi = hi;
    }
}

/* ---- decoding ---------------------------------------------------------- */

/* Inputs that decode, by test: the forms an idset may take, and items
 * that overlap, repeat or come out of order and merge.  Leading zeros
 * are still decimal ("007"); 0xffffffffu is UINT32_MAX, the widest max_id.
 */
/* clang-format off */
static const struct decode_case decodes[] = {
    {DECODE_FORMS, "1024-65535", 65535, "1024-65535", 64512},
    {DECODE_FORMS, "1024-2047,4096-8191", 65535, "1024-2047,4096-8191", 5120},
    {DECODE_FORMS, " 5 , 7-9 ", 65535, "5,7-9", 4},
    {DECODE_FORMS, "\t5,\n7-9\r", 65535, "5,7-9", 4},
    {DECODE_FORMS, "", 65535, "", 0},
    {DECODE_FORMS, "   ", 65535, "", 0},
    {DECODE_FORMS, "0", 65535, "0", 1},
    {DECODE_FORMS, "65535", 65535, "65535", 1},
    {DECODE_FORMS, "0-65535", 65535, "0-65535", 65536},
    {DECODE_FORMS, "7-7", 10, "7", 1},
    {DECODE_FORMS, "007", 10, "7", 1},
    {DECODE_FORMS, "4294967295", 0xffffffffu, "4294967295", 1},
    {DECODE_FORMS, "0,4294967295", 0xffffffffu, "0,4294967295", 2},
    {DECODE_MERGES, "10-20,5-12,21,30,1-3,4", 100, "1-21,30", 22},
    {DECODE_MERGES, "5,4,3,2,1", 100, "1-5", 5},
    {DECODE_MERGES, "1-10,2-3,5", 100, "1-10", 10},
    {DECODE_MERGES, "8-9,1-2,5", 100, "1-2,5,8-9", 5},
    {DECODE_MERGES, "1-2,4-5,3", 100, "1-5", 5},
    {DECODE_MERGES, "1,1,1", 100, "1", 1},
};
/* clang-format on */

/* Check every row of decodes[] of topic t. */
static void check_decodes(enum decode_topic t)
{
    for (size_t i = 0; i < sizeof(decodes) / sizeof(decodes[0]); i++) {
        if (decodes[i].topic == t)
            check_decode(decodes[i].s,
                         decodes[i].max_id,
                         decodes[i].want,
                         decodes[i].count);
    }
}

static void test_decode_forms(void **state)
{
    (void)state;
    check_decodes(DECODE_FORMS);
}

static void test_decode_merges(void **state)
{
    (void)state;
    check_decodes(DECODE_MERGES);
}

static void test_decode_errors(void **state)
{
    static const struct fail_case cases[] = {
        {"70000", 65535, "idset: '70000' is out of range 0-65535"},
        {"1-70000", 65535, "idset: '70000' is out of range 0-65535"},
        {"65536", 65535, "'65536' is out of range"},
        {"11", 10, "idset: '11' is out of range 0-10"},
        {"4294967296", UINT32_MAX, "'4294967296' is out of range 0-4294967295"},
        {"99999999999999999999999", UINT32_MAX, "is out of range"},
        /* 2^64 and 2^64 + 1 would wrap to 0 and 1 in 64-bit arithmetic. */
        {"18446744073709551616", UINT32_MAX, "is out of range"},
        {"5-18446744073709551617", UINT32_MAX, "is out of range"},
        {"9-5", 65535, "idset: reversed range '9-5'"},
        {"x", 65535, "idset: invalid item 'x'"},
        {"-5", 65535, "idset: invalid item '-5'"},
        {"+5", 65535, "idset: invalid item '+5'"},
        {"0x10", 65535, "idset: invalid item '0x10'"},
        {"5-", 65535, "idset: invalid item '5-'"},
        {"5--6", 65535, "idset: invalid item '5--6'"},
        {"5-6-7", 65535, "idset: invalid item '5-6-7'"},
        {"5 6", 65535, "idset: invalid item '5 6'"},
        {"5 - 6", 65535, "idset: invalid item '5 - 6'"},
        {"1.5", 65535, "idset: invalid item '1.5'"},
        {"1,,2", 65535, "idset: empty item at offset 2"},
        {"1,", 65535, "idset: empty item at offset 2"},
        {",1", 65535, "idset: empty item at offset 0"},
        {"1, ,2", 65535, "idset: empty item"},
    };

    (void)state;
    check_fails(cases, sizeof(cases) / sizeof(cases[0]));

    vnib_error_t e = {0};
    errno = 0;
    assert_null(idset_decode(NULL, 10, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "idset: no input");
}

/* ---- operations -------------------------------------------------------- */

static void test_add_remove(void **state)
{
    (void)state;
    struct idset *set = idset_create(100);

    assert_non_null(set);
    assert_int_equal(idset_add_range(set, 1, 3), 0);
    assert_int_equal(idset_add_range(set, 5, 7), 0);
    check_encode(set, "1-3,5-7");
    assert_int_equal(idset_range_count(set), 2);
    assert_int_equal(idset_add_range(set, 4, 4), 0); /* fills the gap */
    check_encode(set, "1-7");
    assert_int_equal(idset_range_count(set), 1);
    assert_int_equal(idset_add_range(set, 8, 8), 0); /* touches the end */
    assert_int_equal(idset_add_range(set, 0, 0), 0); /* touches the start */
    check_encode(set, "0-8");
    assert_int_equal(idset_add_range(set, 20, 30), 0);
    assert_int_equal(idset_add_range(set, 10, 12), 0);
    check_encode(set, "0-8,10-12,20-30");
    assert_int_equal(idset_add_range(set, 5, 25), 0); /* swallows three */
    check_encode(set, "0-30");
    assert_int_equal(idset_count(set), 31);

    assert_int_equal(idset_remove_range(set, 10, 19), 0); /* split */
    check_encode(set, "0-9,20-30");
    assert_int_equal(idset_remove_range(set, 0, 0), 0);
    assert_int_equal(idset_remove_range(set, 30, 30), 0);
    check_encode(set, "1-9,20-29");
    assert_int_equal(idset_remove_range(set, 5, 25), 0); /* trims two */
    check_encode(set, "1-4,26-29");
    assert_int_equal(idset_remove_range(set, 50, 60), 0); /* no overlap */
    assert_int_equal(idset_remove_range(set, 10, 20), 0);
    check_encode(set, "1-4,26-29");
    assert_int_equal(idset_remove_range(set, 0, 100), 0);
    check_encode(set, "");
    assert_int_equal(idset_count(set), 0);
    assert_int_equal(idset_remove_range(set, 0, 100), 0); /* empty set */

    /* Edges: 0 and max_id. */
    assert_int_equal(idset_add_range(set, 100, 100), 0);
    assert_int_equal(idset_add_range(set, 0, 0), 0);
    check_encode(set, "0,100");
    assert_true(idset_contains(set, 0));
    assert_true(idset_contains(set, 100));
    assert_false(idset_contains(set, 1));
    assert_false(idset_contains(set, 99));
    assert_false(idset_contains(set, 101));
    assert_false(idset_contains(set, UINT32_MAX));

    /* Errors leave the set alone. */
    assert_fails(idset_add_range(set, 5, 4), EINVAL);
    assert_fails(idset_add_range(set, 50, 101), EINVAL);
    assert_fails(idset_remove_range(set, 5, 4), EINVAL);
    assert_fails(idset_remove_range(set, 0, 101), EINVAL);
    assert_fails(idset_add_range(NULL, 0, 0), EINVAL);
    check_encode(set, "0,100");
    idset_destroy(set);
}

/* The full 32-bit space: no off-by-one wraps at UINT32_MAX. */
static void test_full_range(void **state)
{
    (void)state;
    struct idset *set = idset_create(UINT32_MAX);
    uint32_t id;

    assert_non_null(set);
    assert_int_equal(idset_add_range(set, 0, UINT32_MAX), 0);
    assert_int_equal(idset_range_count(set), 1);
    if (SIZE_MAX > UINT32_MAX)
        assert_int_equal(idset_count(set), (size_t)UINT32_MAX + 1);
    assert_true(idset_contains(set, UINT32_MAX));
    check_encode(set, "0-4294967295");
    assert_int_equal(idset_remove_range(set, 1, UINT32_MAX - 1), 0);
    check_encode(set, "0,4294967295");
    assert_int_equal(idset_next_after(set, 0, &id), 0);
    assert_int_equal(id, UINT32_MAX);
    assert_int_equal(idset_next_after(set, UINT32_MAX - 1, &id), 0);
    assert_int_equal(id, UINT32_MAX);
    assert_int_equal(idset_next_after(set, UINT32_MAX, &id), 0);
    assert_int_equal(id, 0);
    assert_int_equal(idset_add_range(set, UINT32_MAX - 1, UINT32_MAX - 1), 0);
    check_encode(set, "0,4294967294-4294967295");
    assert_int_equal(idset_remove_range(set, UINT32_MAX, UINT32_MAX), 0);
    check_encode(set, "0,4294967294");
    idset_destroy(set);
}

static void test_first_last(void **state)
{
    (void)state;
    struct idset *set = idset_create(65535);
    uint32_t id = 42;

    assert_non_null(set);
    assert_fails(idset_first(set, &id), ENOENT);
    assert_fails(idset_last(set, &id), ENOENT);
    assert_int_equal(id, 42);

    assert_int_equal(idset_add_range(set, 1024, 2047), 0);
    assert_int_equal(idset_add_range(set, 4096, 8191), 0);
    assert_int_equal(idset_first(set, &id), 0);
    assert_int_equal(id, 1024);
    assert_int_equal(idset_last(set, &id), 0);
    assert_int_equal(id, 8191);
    idset_destroy(set);
}

static void test_next_after(void **state)
{
    (void)state;
    struct idset *set = idset_decode("5-7,10", 100, NULL);
    static const struct {
        uint32_t cursor;
        uint32_t want;
    } steps[] = {
        {0, 5},
        {4, 5},
        {5, 6},
        {6, 7},
        {7, 10},
        {8, 10},
        {9, 10},
        {10, 5}, /* wraps */
        {11, 5},
        {100, 5},
        {UINT32_MAX, 5},
    };
    uint32_t id;

    assert_non_null(set);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        id = 12345;
        assert_int_equal(idset_next_after(set, steps[i].cursor, &id), 0);
        if (id != steps[i].want)
            fail_msg("next_after (%u) = %u, want %u",
                     (unsigned)steps[i].cursor,
                     (unsigned)id,
                     (unsigned)steps[i].want);
    }

    /* Walking round the set visits every member once, in order. */
    uint32_t cur = 10;
    uint32_t seen[4];
    for (int i = 0; i < 4; i++) {
        assert_int_equal(idset_next_after(set, cur, &cur), 0);
        seen[i] = cur;
    }
    assert_int_equal(seen[0], 5);
    assert_int_equal(seen[1], 6);
    assert_int_equal(seen[2], 7);
    assert_int_equal(seen[3], 10);
    idset_destroy(set);

    /* A single member is its own successor. */
    set = idset_decode("0", 100, NULL);
    assert_non_null(set);
    assert_int_equal(idset_next_after(set, 0, &id), 0);
    assert_int_equal(id, 0);
    idset_destroy(set);

    /* The empty set has none. */
    set = idset_create(100);
    assert_non_null(set);
    assert_fails(idset_next_after(set, 0, &id), ENOENT);
    idset_destroy(set);
    assert_fails(idset_next_after(NULL, 0, &id), ENOENT);
}

static void test_ranges_accessors(void **state)
{
    (void)state;
    struct idset *set = idset_decode("1024-2047,4096", 65535, NULL);
    uint32_t lo = 1;
    uint32_t hi = 1;

    assert_non_null(set);
    assert_int_equal(idset_range_count(set), 2);
    assert_int_equal(idset_range(set, 0, &lo, &hi), 0);
    assert_int_equal(lo, 1024);
    assert_int_equal(hi, 2047);
    assert_int_equal(idset_range(set, 1, &lo, &hi), 0);
    assert_int_equal(lo, 4096);
    assert_int_equal(hi, 4096);
    assert_fails(idset_range(set, 2, &lo, &hi), EINVAL);
    idset_destroy(set);

    assert_int_equal(idset_range_count(NULL), 0);
    assert_int_equal(idset_count(NULL), 0);
    assert_false(idset_contains(NULL, 0));
    errno = 0;
    assert_null(idset_encode(NULL));
    assert_int_equal(errno, EINVAL);

    errno = EPERM;
    idset_destroy(NULL);
    assert_int_equal(errno, EPERM);
    set = idset_decode("1-5", 10, NULL);
    assert_non_null(set);
    errno = ENOSPC;
    idset_destroy(set);
    assert_int_equal(errno, ENOSPC);
}

/* Random adds and removes checked against a bitmap after every step. */
static void test_against_bitmap(void **state)
{
    (void)state;
    enum { MAX_ID = 300 };
    bool model[MAX_ID + 1] = {false};
    struct idset *set = idset_create(MAX_ID);
    uint64_t rng = 0x9e3779b97f4a7c15ull;

    assert_non_null(set);
    for (int step = 0; step < 4000; step++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        uint32_t a = (uint32_t)(rng % (MAX_ID + 1));
        uint32_t len = (uint32_t)((rng >> 20) % 12);
        uint32_t b = a + len > MAX_ID ? MAX_ID : a + len;
        bool add = ((rng >> 40) % 3) != 0;

        assert_int_equal(
            add ? idset_add_range(set, a, b) : idset_remove_range(set, a, b),
            0);
        for (uint32_t i = a; i <= b; i++)
            model[i] = add;
        check_invariant(set, MAX_ID);

        size_t count = 0;
        for (uint32_t i = 0; i <= MAX_ID; i++) {
            if (model[i] != idset_contains(set, i))
                fail_msg("step %d: contains (%u) disagrees", step, (unsigned)i);
            count += model[i];
        }
        assert_int_equal(idset_count(set), count);

        /* next_after agrees with a linear search with wrap. */
        uint32_t cursor = (uint32_t)((rng >> 8) % (MAX_ID + 2));
        uint32_t id;
        int want = -1;
        for (uint32_t i = cursor + 1; i <= MAX_ID && want < 0; i++)
            if (model[i])
                want = (int)i;
        for (uint32_t i = 0; i <= MAX_ID && want < 0; i++)
            if (model[i])
                want = (int)i;
        if (want < 0) {
            assert_int_equal(idset_next_after(set, cursor, &id), -1);
            assert_int_equal(errno, ENOENT);
        } else {
            assert_int_equal(idset_next_after(set, cursor, &id), 0);
            assert_int_equal(id, (uint32_t)want);
        }
    }

    /* The encoding decodes back to the same set. */
    char *s = idset_encode(set);
    assert_non_null(s);
    struct idset *again = idset_decode(s, MAX_ID, NULL);
    assert_non_null(again);
    for (uint32_t i = 0; i <= MAX_ID; i++)
        assert_int_equal(idset_contains(again, i), model[i]);
    free(s);
    idset_destroy(again);
    idset_destroy(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_forms),
        cmocka_unit_test(test_decode_merges),
        cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_add_remove),
        cmocka_unit_test(test_full_range),
        cmocka_unit_test(test_first_last),
        cmocka_unit_test(test_next_after),
        cmocka_unit_test(test_ranges_accessors),
        cmocka_unit_test(test_against_bitmap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
