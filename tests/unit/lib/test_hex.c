/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for hex digits and byte strings (lib/hex.c) and the
 * monotonic clock (lib/monotime.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/unit/common/assert_fails.h"
#include "vnib/hex.h"
#include "vnib/monotime.h"

static void test_digits(void **state)
{
    const char *all = "0123456789abcdefABCDEF";
    (void)state;
    for (int i = 0; all[i]; i++)
        assert_int_equal(hex_digit(all[i]), i < 16 ? i : i - 6);
    assert_int_equal(hex_digit('g'), -1);
    assert_int_equal(hex_digit('G'), -1);
    assert_int_equal(hex_digit('/'), -1);
    assert_int_equal(hex_digit(':'), -1);
    assert_int_equal(hex_digit('@'), -1);
    assert_int_equal(hex_digit('`'), -1);
    assert_int_equal(hex_digit('\0'), -1);
    assert_int_equal(hex_digit(0xe9), -1);
}

static void test_round_trip(void **state)
{
    unsigned char in[256], out[256];
    char text[2 * sizeof(in) + 1];
    (void)state;
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)i;
    hex_encode(in, sizeof(in), text);
    assert_int_equal(strlen(text), 2 * sizeof(in));
    assert_memory_equal(text, "000102", 6);
    assert_string_equal(text + 2 * 250, "fafbfcfdfeff");
    assert_int_equal(hex_decode(text, out, sizeof(out)), 0);
    assert_memory_equal(in, out, sizeof(in));
    hex_encode(in, 0, text);
    assert_string_equal(text, "");
}

static void test_decode_refuses(void **state)
{
    unsigned char out[2];
    (void)state;
    assert_int_equal(hex_decode("ABcd", out, 2), 0);
    assert_int_equal(out[0], 0xab);
    assert_int_equal(out[1], 0xcd);
    assert_fails(hex_decode("ab c", out, 2), EINVAL);
    assert_int_equal(hex_decode("abc", out, 2), -1); /* stops at the NUL */
    assert_int_equal(hex_decode("+1ab", out, 2), -1);
}

static void test_monotime(void **state)
{
    (void)state;
    int64_t ns0 = monotime_ns(), ms0 = monotime_ms();
    struct timespec nap = {0, 3000000};
    nanosleep(&nap, NULL);
    int64_t ns1 = monotime_ns(), ms1 = monotime_ms();
    assert_true(ns1 - ns0 >= 3000000);
    assert_true(ms1 - ms0 >= 2);
    /* The two agree on one clock. */
    assert_true(ms1 - ns1 / 1000000 >= -1 && ms1 - ns1 / 1000000 <= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digits),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_decode_refuses),
        cmocka_unit_test(test_monotime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
