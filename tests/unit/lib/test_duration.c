/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lib/duration.c: what is read, in milliseconds, and what is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vnib/duration.h"

static void test_units(void **state)
{
    long ms = -1;

    (void)state;
    assert_int_equal(duration_parse_ms("500ms", &ms), 0);
    assert_int_equal(ms, 500);
    assert_int_equal(duration_parse_ms("1.5", &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(duration_parse_ms("5s", &ms), 0);
    assert_int_equal(ms, 5000);
    assert_int_equal(duration_parse_ms(".25s", &ms), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(duration_parse_ms("5m", &ms), 0);
    assert_int_equal(ms, 300000);
    assert_int_equal(duration_parse_ms("1h", &ms), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(duration_parse_ms("168h", &ms), 0);
    assert_int_equal(ms, 604800000);
    assert_int_equal(duration_parse_ms("0", &ms), 0);
    assert_int_equal(ms, 0);
}

static void test_refused(void **state)
{
    static const char *const bad[] = {
        "",
        "8d",
        "200h",
        "168.01h",
        "nan",
        "inf",
        "-1",
        "+1",
        "0x10",
        "5 s",
        "5sec",
        "ms",
        "s5",
        "1e99",
        "1e3",
        "1..5s",
        ".",
    };
    long ms = 42;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errno = 0;
        assert_int_equal(duration_parse_ms(bad[i], &ms), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(ms, 42);
    }
    assert_int_equal(duration_parse_ms(NULL, &ms), -1);
    assert_int_equal(ms, 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
