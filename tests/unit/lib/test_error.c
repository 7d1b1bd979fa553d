/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for vnib_error_t and errprintf (lib/error.c).
 *
 * The contract callers rely on: NULL is accepted, errno survives, -1 comes
 * back, long text is cut and marked with '+', errprintf_first keeps the
 * first message of an operation, and a message's public_text mark lives
 * exactly as long as the message errprintf_private wrote.
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
    vnib_error_t e = {0};
    (void)state;
    assert_int_equal(errprintf(&e, "port %d is %s", 80, "taken"), -1);
    assert_string_equal(e.text, "port 80 is taken");
}

static void test_null_and_errno(void **state)
{
    vnib_error_t e = {0};
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
    vnib_error_t e = {0};
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

/* A function of errprintf's contract that formats through verrprintf. */
static int wrapped(vnib_error_t *errp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int wrapped(vnib_error_t *errp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = verrprintf(errp, fmt, ap);
    va_end(ap);
    return rc;
}

static void test_verrprintf(void **state)
{
    vnib_error_t e = {0};
    char longtext[300];
    (void)state;
    errno = ENOENT;
    assert_int_equal(wrapped(&e, "job %s", "j1"), -1);
    assert_int_equal(wrapped(NULL, "x"), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(e.text, "job j1");
    memset(longtext, 'c', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    errprintf_private(&e, "fixed", "x");
    wrapped(&e, "%s", longtext);
    assert_int_equal(e.text[sizeof(e.text) - 2], '+');
    assert_null(e.public_text);
}

static void test_private_marked(void **state)
{
    static const char fixed[] = "database error";
    vnib_error_t e = {0}, copy = {0};
    (void)state;
    assert_null(e.public_text);
    errno = EIO;
    assert_int_equal(
        errprintf_private(&e, fixed, "%s: %s", fixed, "relation x"), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text, "database error: relation x");
    assert_ptr_equal(e.public_text, fixed);
    assert_int_equal(errprintf_private(NULL, fixed, "x"), -1);

    /* A copy hands message and mark on; NULL is accepted. */
    errno = EAGAIN;
    assert_int_equal(vnib_error_copy(&copy, &e), -1);
    assert_int_equal(vnib_error_copy(NULL, &e), -1);
    assert_int_equal(errno, EAGAIN);
    assert_string_equal(copy.text, e.text);
    assert_ptr_equal(copy.public_text, fixed);

    /* The first error, marked, is kept with its mark. */
    errprintf_first(&e, "second");
    assert_ptr_equal(e.public_text, fixed);

    /* Any other writer, and clearing, drops the mark with the message. */
    errprintf(&e, "no reservation for job %s", "j1");
    assert_null(e.public_text);
    errprintf_private(&copy, fixed, "again");
    vnib_error_clear(&copy);
    assert_string_equal(copy.text, "");
    assert_null(copy.public_text);
    errprintf_first(&copy, "first");
    assert_null(copy.public_text);
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
        cmocka_unit_test(test_verrprintf),
        cmocka_unit_test(test_private_marked),
        cmocka_unit_test(test_memburn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
