/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for spawn_run (lib/spawn.c): exit statuses come back as
 * waitpid gives them, a program that outlives its time is killed, and one
 * that cannot be started is an error naming it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "vnib/spawn.h"

static void test_exit_status(void **state)
{
    char *ok[] = {"true", NULL};
    char *fail[] = {"sh", "-c", "exit 3", NULL};
    vnib_error_t error = {0};
    int status = -1;
    bool killed = true;
    (void)state;

    assert_int_equal(spawn_run(ok, 10, &status, &killed, &error), 0);
    assert_false(killed);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(spawn_run(fail, 10, &status, &killed, &error), 0);
    assert_false(killed);
    assert_int_equal(WEXITSTATUS(status), 3);
}

static void test_killed_past_its_time(void **state)
{
    char *slow[] = {"sleep", "30", NULL};
    vnib_error_t error = {0};
    int status = 0;
    bool killed = false;
    (void)state;

    assert_int_equal(spawn_run(slow, 0, &status, &killed, &error), 0);
    assert_true(killed);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
}

static void test_cannot_start(void **state)
{
    char *none[] = {"/nonexistent/vnib-hook", NULL};
    vnib_error_t error = {0};
    int status = 0;
    bool killed = false;
    (void)state;

    errno = 0;
    assert_int_equal(spawn_run(none, 10, &status, &killed, &error), -1);
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(error.text, "cannot run /nonexistent/vnib-hook"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_killed_past_its_time),
        cmocka_unit_test(test_cannot_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
