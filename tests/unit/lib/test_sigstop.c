/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the daemons' stop signals (lib/sigstop.c): blocked ones
 * stay pending until sigstop_wait() takes them, SIGHUP is passed over, and
 * the signal that stops is logged and returned.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vnib/logger.h"
#include "vnib/sigstop.h"

/* Raise first and then second, wait, and return what was logged. */
static void wait_after(int first,
                       int second,
                       const char *hup_note,
                       int *sigp,
                       char *out,
                       size_t size)
{
    sigset_t set;
    int fd[2];

    assert_int_equal(pipe(fd), 0);
    struct logger *log = logger_create("test", LOG_INFO, fd[1]);
    assert_non_null(log);
    sigstop_block(&set);
    assert_int_equal(raise(first), 0);
    assert_int_equal(raise(second), 0);
    *sigp = sigstop_wait(&set, log, hup_note);
    logger_destroy(log);
    close(fd[1]);
    ssize_t n = read(fd[0], out, size - 1);
    assert_true(n >= 0);
    out[n] = '\0';
    close(fd[0]);
}

static void test_hup_noted_then_term(void **state)
{
    char out[512];
    int sig = 0;
    (void)state;

    wait_after(SIGHUP, SIGTERM, "SIGHUP: noted", &sig, out, sizeof(out));
    assert_int_equal(sig, SIGTERM);
    const char *hup = strstr(out, "SIGHUP: noted\n");
    const char *term = strstr(out, "SIGTERM: shutting down\n");
    assert_non_null(hup);
    assert_non_null(term);
    assert_true(hup < term);
}

static void test_hup_silent_then_int(void **state)
{
    char out[512];
    int sig = 0;
    (void)state;

    wait_after(SIGHUP, SIGINT, NULL, &sig, out, sizeof(out));
    assert_int_equal(sig, SIGINT);
    assert_non_null(strstr(out, "SIGINT: shutting down\n"));
    assert_null(strstr(out, "SIGHUP"));
    /* SIGPIPE is ignored: raising it does not end the process. */
    assert_int_equal(raise(SIGPIPE), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hup_noted_then_term),
        cmocka_unit_test(test_hup_silent_then_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
