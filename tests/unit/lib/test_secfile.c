/* Unit tests for credential files (lib/secfile.c).
 *
 * A secret is read only from a regular file that its owner alone may
 * access; anything else at the path (a FIFO, a directory) is refused at
 * once, without blocking start-up, and the message names the path.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vnib/secfile.h"

struct dir {
    char path[64];
    char file[128];
};

static int setup(void **state)
{
    struct dir *d = calloc(1, sizeof(*d));
    if (!d)
        return -1;
    snprintf(d->path, sizeof(d->path), "/tmp/vnib-secfile.XXXXXX");
    if (!mkdtemp(d->path)) {
        free(d);
        return -1;
    }
    snprintf(d->file, sizeof(d->file), "%s/f", d->path);
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    struct dir *d = *state;
    unlink(d->file);
    rmdir(d->file);
    rmdir(d->path);
    free(d);
    return 0;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void test_regular_file(void **state)
{
    struct dir *d = *state;
    vnib_error_t e = {""};
    char *buf = NULL;
    size_t len = 0;

    write_file(d->file, "s3cret\n", 0600);
    assert_int_equal(secfile_read(d->file, &buf, &len, &e), 0);
    assert_int_equal(len, 7);
    assert_string_equal(buf, "s3cret\n");
    secfile_free(buf, len);

    write_file(d->file, "s3cret\n", 0640);
    assert_int_equal(secfile_read(d->file, &buf, &len, &e), -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(e.text, d->file));
}

/* Without O_NONBLOCK the open() of a FIFO waits for a writer forever:
 * the alarm turns that hang into a failure.
 */
static void test_fifo_refused_at_once(void **state)
{
    struct dir *d = *state;
    vnib_error_t e = {""};
    char *buf = NULL;
    size_t len = 0;

    assert_int_equal(mkfifo(d->file, 0600), 0);
    signal(SIGALRM, SIG_DFL);
    alarm(5);
    assert_int_equal(secfile_read(d->file, &buf, &len, &e), -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(e.text, "not a regular file"));
    assert_non_null(strstr(e.text, d->file));
    assert_int_equal(secfile_read_public(d->file, &buf, &len, &e), -1);
    assert_int_equal(errno, EPERM);
    alarm(0);
}

static void test_directory_refused(void **state)
{
    struct dir *d = *state;
    vnib_error_t e = {""};
    char *buf = NULL;
    size_t len = 0;

    assert_int_equal(mkdir(d->file, 0700), 0);
    assert_int_equal(secfile_read(d->file, &buf, &len, &e), -1);
    assert_non_null(strstr(e.text, d->file));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fifo_refused_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_directory_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
