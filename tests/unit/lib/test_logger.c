/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the logger (lib/logger.c).
 *
 * What operators rely on: with JOURNAL_STREAM set each line starts with
 * the sd-daemon priority and carries no timestamp of its own; without it
 * the line is unchanged (timestamp, ident[pid], level); the same message
 * repeated within the window is written once and then summarised with
 * its count (under the last repeat's request id); different messages,
 * and the same text at another level, are not folded together; control
 * characters cannot forge a line.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vnib/logger.h"

/* The test's logger writes into a pipe; drain() reads what is there. */
struct sink {
    int fd[2];
    char buf[16384];
};

static int sink_setup(void **state)
{
    struct sink *s = calloc(1, sizeof(*s));
    if (!s || pipe(s->fd) < 0)
        return -1;
    *state = s;
    return 0;
}

static int sink_teardown(void **state)
{
    struct sink *s = *state;
    close(s->fd[0]);
    close(s->fd[1]);
    free(s);
    unsetenv("JOURNAL_STREAM");
    return 0;
}

/* Everything written so far (the write end stays open: read what is
 * buffered without blocking, by writing a marker after it).
 */
static const char *drain(struct sink *s)
{
    size_t len = 0;
    ssize_t n;
    assert_int_equal(write(s->fd[1], "\x01", 1), 1);
    while (len < sizeof(s->buf) - 1
           && (n = read(s->fd[0], s->buf + len, sizeof(s->buf) - 1 - len))
                  > 0) {
        len += (size_t)n;
        if (s->buf[len - 1] == '\x01')
            break;
    }
    assert_true(len > 0 && s->buf[len - 1] == '\x01');
    s->buf[len - 1] = '\0';
    return s->buf;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static void test_journal_prefix(void **state)
{
    struct sink *s = *state;
    assert_int_equal(setenv("JOURNAL_STREAM", "8:12345", 1), 0);
    struct logger *log = logger_create("vnibtest", LOG_DEBUG, s->fd[1]);
    assert_non_null(log);
    assert_true(logger_journal(log));
    logger_printf(log, LOG_ERR, NULL, "e %d", 1);
    logger_printf(log, LOG_WARNING, NULL, "w");
    logger_printf(log, LOG_NOTICE, "abcd", "n");
    logger_printf(log, LOG_INFO, NULL, "i");
    logger_printf(log, LOG_DEBUG, NULL, "d");
    logger_destroy(log);
    assert_string_equal(drain(s),
                        "<3>error: e 1\n"
                        "<4>warning: w\n"
                        "<5>notice: req=abcd: n\n"
                        "<6>info: i\n"
                        "<7>debug: d\n");
}

static void test_no_journal_unchanged(void **state)
{
    struct sink *s = *state;
    char expect[64];
    unsetenv("JOURNAL_STREAM");
    struct logger *log = logger_create("vnibtest", LOG_INFO, s->fd[1]);
    assert_non_null(log);
    assert_false(logger_journal(log));
    logger_printf(log, LOG_WARNING, "ff", "hello %s", "world");
    logger_printf(log, LOG_DEBUG, NULL, "dropped");
    logger_destroy(log);
    const char *out = drain(s);
    /* "2026-11-21T18:05:00.123Z vnibtest[pid]: warning: req=ff: ..." */
    assert_int_equal(count_lines(out), 1);
    assert_true(out[0] != '<');
    assert_int_equal(out[4], '-');
    assert_int_equal(out[10], 'T');
    assert_int_equal(out[23], 'Z');
    snprintf(expect,
             sizeof(expect),
             " vnibtest[%ld]: warning: req=ff: hello world\n",
             (long)getpid());
    assert_string_equal(out + 24, expect);
}

/* JOURNAL_STREAM is read when the logger is created, not afterwards. */
static void test_journal_decided_at_create(void **state)
{
    struct sink *s = *state;
    unsetenv("JOURNAL_STREAM");
    struct logger *log = logger_create("vnibtest", LOG_INFO, s->fd[1]);
    assert_non_null(log);
    assert_int_equal(setenv("JOURNAL_STREAM", "1", 1), 0);
    logger_printf(log, LOG_INFO, NULL, "x");
    logger_destroy(log);
    assert_true(drain(s)[0] != '<');
}

static void test_repeats_counted(void **state)
{
    struct sink *s = *state;
    assert_int_equal(setenv("JOURNAL_STREAM", "1", 1), 0);
    struct logger *log = logger_create("vnibtest", LOG_DEBUG, s->fd[1]);
    assert_non_null(log);
    for (int i = 0; i < 168; i++) {
        /* Another request id each time: still the same message. */
        char reqid[8];
        snprintf(reqid, sizeof(reqid), "%04x", i);
        logger_printf(log,
                      LOG_WARNING,
                      reqid,
                      "database: cannot connect: %s",
                      "no such file");
        if (i % 2)
            logger_printf(log, LOG_WARNING, NULL, "readyz: not ready");
    }
    logger_printf(log, LOG_INFO, NULL, "readyz: not ready");
    logger_printf(log, LOG_WARNING, NULL, "another %d", 1);
    logger_printf(log, LOG_WARNING, NULL, "another %d", 2);
    /* Nothing summarised yet: the window (10 s) has not passed. */
    assert_string_equal(drain(s),
                        "<4>warning: req=0000: database: cannot connect: no "
                        "such file\n"
                        "<4>warning: readyz: not ready\n"
                        "<6>info: readyz: not ready\n"
                        "<4>warning: another 1\n"
                        "<4>warning: another 2\n");
    logger_destroy(log);
    const char *out = drain(s);
    assert_non_null(strstr(out,
                           "<4>warning: req=00a7: message repeated 167 more "
                           "times in "
                           "10 s: database: cannot connect: no such file\n"));
    assert_non_null(strstr(out,
                           "<4>warning: message repeated 83 more times in "
                           "10 s: readyz: not ready\n"));
    assert_int_equal(count_lines(out), 2);
}

/* Once the window has passed, the summary comes with the next line and
 * the message is written again.
 */
static void test_repeat_window_ends(void **state)
{
    struct sink *s = *state;
    unsetenv("JOURNAL_STREAM");
    struct logger *log = logger_create("vnibtest", LOG_INFO, s->fd[1]);
    assert_non_null(log);
    logger_set_repeat_window(log, 1000);
    logger_printf(log, LOG_WARNING, NULL, "flood");
    logger_printf(log, LOG_WARNING, NULL, "flood");
    logger_printf(log, LOG_WARNING, NULL, "flood");
    const char *out = drain(s);
    assert_int_equal(count_lines(out), 1);
    /* Sleep past the window (a lower bound only: no timing assert). */
    struct timespec ts = {1, 200000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    logger_printf(log, LOG_WARNING, NULL, "flood");
    out = drain(s);
    assert_int_equal(count_lines(out), 2);
    const char *sum = strstr(out,
                             "warning: message repeated 2 more times in "
                             "1 s: flood\n");
    const char *again = strstr(out, "warning: flood\n");
    assert_non_null(sum);
    assert_non_null(again);
    assert_true(sum < again);
    logger_destroy(log);
    /* One write, no repeat since: nothing to summarise. */
    assert_string_equal(drain(s), "");
}

static void test_repeat_window_off(void **state)
{
    struct sink *s = *state;
    struct logger *log = logger_create("vnibtest", LOG_INFO, s->fd[1]);
    assert_non_null(log);
    logger_set_repeat_window(log, 0);
    for (int i = 0; i < 5; i++)
        logger_printf(log, LOG_INFO, NULL, "same");
    logger_destroy(log);
    assert_int_equal(count_lines(drain(s)), 5);
}

/* A message taken from a request cannot make a line of its own. */
static void test_control_characters(void **state)
{
    struct sink *s = *state;
    assert_int_equal(setenv("JOURNAL_STREAM", "1", 1), 0);
    struct logger *log = logger_create("vnibtest", LOG_INFO, s->fd[1]);
    assert_non_null(log);
    logger_printf(log, LOG_NOTICE, NULL, "path %s", "/x\n<3>error: forged");
    logger_destroy(log);
    assert_string_equal(drain(s), "<5>notice: path /x?<3>error: forged\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_journal_prefix, sink_setup, sink_teardown),
        cmocka_unit_test_setup_teardown(
            test_no_journal_unchanged, sink_setup, sink_teardown),
        cmocka_unit_test_setup_teardown(
            test_journal_decided_at_create, sink_setup, sink_teardown),
        cmocka_unit_test_setup_teardown(
            test_repeats_counted, sink_setup, sink_teardown),
        cmocka_unit_test_setup_teardown(
            test_repeat_window_ends, sink_setup, sink_teardown),
        cmocka_unit_test_setup_teardown(
            test_repeat_window_off, sink_setup, sink_teardown),
        cmocka_unit_test_setup_teardown(
            test_control_characters, sink_setup, sink_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
