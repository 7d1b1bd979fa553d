/* Unit tests for vnib_error_t and errprintf (lib/error.c).
 *
 * The contract callers rely on: NULL is accepted, errno survives, -1 comes
 * back, long text is cut and marked with '+', and errprintf_first keeps the
 * first message of an operation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vnib/error.h"

static void test_formats(void **state)
{
    vnib_error_t e = {""};
    (void)state;
    assert_int_equal(errprintf(&e, "port %d is %s", 80, "taken"), -1);
    assert_string_equal(e.text, "port 80 is taken");
}

static void test_null_and_errno(void **state)
{
    vnib_error_t e = {""};
    (void)state;
    errno = ENOSPC;
    assert_int_equal(errprintf(NULL, "ignored %s", "x"), -1);
    assert_int_equal(errno, ENOSPC);
    errno = EEXIST;
    errprintf(&e, "x");
    assert_int_equal(errno, EEXIST);
    errno = EPERM;
    assert_int_equal(errprintf_first(NULL, "y"), -1);
    assert_int_equal(errno, EPERM);
}

static void test_truncation_marked(void **state)
{
    vnib_error_t e;
    char longtext[400];
    (void)state;
    memset(longtext, 'a', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    errprintf(&e, "%s", longtext);
    assert_int_equal(strlen(e.text), sizeof(e.text) - 1);
    assert_int_equal(e.text[sizeof(e.text) - 2], '+');
    /* Exactly fitting text is not marked. */
    memset(longtext, 'b', sizeof(e.text) - 1);
    longtext[sizeof(e.text) - 1] = '\0';
    errprintf(&e, "%s", longtext);
    assert_int_equal(e.text[sizeof(e.text) - 2], 'b');
}

static void test_first_error_kept(void **state)
{
    vnib_error_t e = {""};
    (void)state;
    errprintf_first(&e, "first");
    errprintf_first(&e, "second");
    assert_string_equal(e.text, "first");
    vnib_error_clear(&e);
    assert_string_equal(e.text, "");
    errprintf_first(&e, "third");
    assert_string_equal(e.text, "third");
    vnib_error_clear(NULL);
}

static void test_memburn(void **state)
{
    unsigned char buf[16];
    (void)state;
    memset(buf, 0xa5, sizeof(buf));
    vnib_memburn(buf, sizeof(buf));
    for (size_t i = 0; i < sizeof(buf); i++)
        assert_int_equal(buf[i], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_null_and_errno),
        cmocka_unit_test(test_truncation_marked),
        cmocka_unit_test(test_first_error_kept),
        cmocka_unit_test(test_memburn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
