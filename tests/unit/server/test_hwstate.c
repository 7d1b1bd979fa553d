/* Unit tests for the hardware-collectives state and cause tables
 * (server/hwstate.c): each C table lists exactly the values that the
 * migrations' CHECK constraints allow (read from the schema compiled into
 * the binary, the last migration that states each list), so that a value
 * added on one side only fails here rather than in the database.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/hwstate.h"
#include "server/schema.h"

/* The quoted values of the last "CHECK (<column> IN (...))" in the
 * migrations, into vals (n at most max); returns how many.
 */
static size_t check_list(const char *column, char vals[][64], size_t max)
{
    char key[96];
    const char *list = NULL;
    size_t n = 0;

    snprintf(key, sizeof(key), "CHECK (%s IN (", column);
    for (size_t i = 0; i < schema_migrations_count; i++)
        for (const char *p = schema_migrations[i].sql;
             (p = strstr(p, key)) != NULL;
             p++)
            list = p + strlen(key);
    /* Returns after fail_msg() too, for the static analyzer's sake. */
    if (!list) {
        fail_msg("no \"%s\" in the migrations", key);
        return 0;
    }
    const char *end = strstr(list, "))");
    if (!end) {
        fail_msg("\"%s\" is not closed by \"))\"", key);
        return 0;
    }
    for (const char *p = list; (p = memchr(p, '\'', (size_t)(end - p)));) {
        const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));
        assert_non_null(q);
        assert_true(n < max && (size_t)(q - p - 1) < 64);
        memcpy(vals[n], p + 1, (size_t)(q - p - 1));
        vals[n][q - p - 1] = '\0';
        n++;
        p = q + 1;
    }
    return n;
}

static bool listed(char vals[][64], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(vals[i], name))
            return true;
    return false;
}

static void test_states_match_check(void **state)
{
    char vals[32][64];
    size_t n = check_list("hwcoll_state", vals, 32);
    (void)state;

    assert_int_equal(n, HWSTATE_COUNT);
    for (int s = 0; s < HWSTATE_COUNT; s++) {
        enum hwstate back;
        assert_non_null(hwstate_name((enum hwstate)s));
        assert_true(listed(vals, n, hwstate_name((enum hwstate)s)));
        assert_true(hwstate_parse(hwstate_name((enum hwstate)s), &back));
        assert_int_equal(back, s);
    }
    enum hwstate ignore;
    assert_false(hwstate_parse("timed out", &ignore));
    assert_false(hwstate_parse(NULL, &ignore));
    assert_null(hwstate_name(HWSTATE_COUNT));
}

static void test_causes_match_check(void **state)
{
    char vals[32][64];
    size_t n = check_list("hwcoll_cause", vals, 32);
    (void)state;

    /* NONE is SQL NULL, which the CHECK lets through unlisted. */
    assert_int_equal(n, HWSTATE_CAUSE_COUNT - 1);
    assert_null(hwstate_cause_code(HWSTATE_CAUSE_NONE));
    assert_null(hwstate_cause_phrase(HWSTATE_CAUSE_NONE));
    for (int c = 1; c < HWSTATE_CAUSE_COUNT; c++) {
        const char *code = hwstate_cause_code((enum hwstate_cause)c);
        assert_non_null(code);
        assert_true(listed(vals, n, code));
        assert_non_null(hwstate_cause_phrase((enum hwstate_cause)c));
        for (int d = 1; d < c; d++)
            assert_string_not_equal(code,
                                    hwstate_cause_code((enum hwstate_cause)d));
    }
}

/* The reasons clients read are those of earlier releases, word for word. */
static void test_reasons(void **state)
{
    char buf[128];
    (void)state;

    hwstate_cause_reason(HWSTATE_CAUSE_TIMEOUT, 750, buf, sizeof(buf));
    assert_string_equal(
        buf, "timed out after 750 ms waiting for the Fabric Manager");
    hwstate_cause_reason(HWSTATE_CAUSE_UNREACHABLE, 750, buf, sizeof(buf));
    assert_string_equal(buf, "Fabric Manager unreachable");
    assert_int_equal(hwstate_cause_of_errno(ETIMEDOUT), HWSTATE_CAUSE_TIMEOUT);
    assert_int_equal(hwstate_cause_of_errno(ECONNREFUSED),
                     HWSTATE_CAUSE_UNREACHABLE);
    assert_int_equal(hwstate_cause_of_errno(ENOSPC),
                     HWSTATE_CAUSE_NO_ADDRESSES);
    assert_int_equal(hwstate_cause_of_errno(EPROTO), HWSTATE_CAUSE_REFUSED);
    assert_string_equal(hwstate_cause_phrase(HWSTATE_CAUSE_REFUSED),
                        "Fabric Manager refused");
    assert_string_equal(hwstate_cause_phrase(HWSTATE_CAUSE_NO_ADDRESSES),
                        "Fabric Manager out of multicast addresses");
    assert_string_equal(
        hwstate_cause_phrase(HWSTATE_CAUSE_TIMEOUT_NO_RESERVATION),
        "timeout; the Fabric Manager made no reservation");
    assert_string_equal(
        hwstate_cause_phrase(HWSTATE_CAUSE_TIMEOUT_LATE_DELETED),
        "timeout; the late Fabric Manager reservation was deleted");
    assert_string_equal(hwstate_cause_phrase(HWSTATE_CAUSE_JOB_ENDED),
                        "the job ended before the Fabric Manager was asked");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states_match_check),
        cmocka_unit_test(test_causes_match_check),
        cmocka_unit_test(test_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
