/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for credential files (lib/secfile.c).
 *
 * A secret is read only from a regular file that its owner alone may
 * access; anything else at the path (a FIFO, a directory) is refused at
 * once, without blocking start-up, and the message names the path.  A
 * file of another owner is refused, except to root (which reads any file
 * anyway), as long as its mode is strict; secfile_read_owned, for a
 * daemon's own credentials, refuses it to root too.
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

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

/* secfile_read, secfile_read_owned or secfile_read_public. */
typedef int (*reader_f)(const char *path,
                        char **bufp,
                        size_t *lenp,
                        vnib_error_t *errp);

/* reader reads path, which holds "s3cret\n". */
static void expect_read(reader_f reader, const char *path)
{
    vnib_error_t e = {0};
    char *buf = NULL;
    size_t len = 0;

    assert_int_equal(reader(path, &buf, &len, &e), 0);
    assert_int_equal(len, 7);
    assert_string_equal(buf, "s3cret\n");
    secfile_free(buf, len);
}

/* reader refuses path, returning no buffer and naming the path: errno err
 * (0: not checked) and a message that contains part (NULL: the path is
 * enough).
 */
static void expect_refused(reader_f reader,
                           const char *path,
                           int err,
                           const char *part)
{
    vnib_error_t e = {0};
    char *buf = NULL;
    size_t len = 0;

    assert_int_equal(reader(path, &buf, &len, &e), -1);
    assert_null(buf);
    if (err)
        assert_int_equal(errno, err);
    if (part)
        assert_non_null(strstr(e.text, part));
    assert_non_null(strstr(e.text, path));
}

static void test_regular_file(void **state)
{
    struct dir *d = *state;

    write_file(d->file, "s3cret\n", 0600);
    expect_read(secfile_read, d->file);

    write_file(d->file, "s3cret\n", 0640);
    expect_refused(secfile_read, d->file, EPERM, NULL);
}

/* Without O_NONBLOCK the open() of a FIFO waits for a writer forever:
 * the alarm turns that hang into a failure.
 */
static void test_fifo_refused_at_once(void **state)
{
    struct dir *d = *state;

    assert_int_equal(mkfifo(d->file, 0600), 0);
    signal(SIGALRM, SIG_DFL);
    alarm(5);
    expect_refused(secfile_read, d->file, EPERM, "not a regular file");
    expect_refused(secfile_read_public, d->file, EPERM, NULL);
    alarm(0);
}

static void test_directory_refused(void **state)
{
    struct dir *d = *state;

    assert_int_equal(mkdir(d->file, 0700), 0);
    expect_refused(secfile_read, d->file, 0, NULL);
}

/* A uid that owns nothing here (nobody). */
#define OTHER_UID ((uid_t)65534)

/* As root, a strict file of another owner (the service user's node.key)
 * is read; its mode is still checked.
 */
static void test_root_reads_other_owner(void **state)
{
    struct dir *d = *state;

    if (geteuid() != 0) {
        print_message("skip: needs root (a file owned by another user)\n");
        skip();
    }
    write_file(d->file, "s3cret\n", 0600);
    assert_int_equal(chown(d->file, OTHER_UID, OTHER_UID), 0);
    expect_read(secfile_read, d->file);

    assert_int_equal(chmod(d->file, 0640), 0);
    expect_refused(secfile_read, d->file, EPERM, "mode 0640");
}

/* secfile_read_owned as root: a strict file of another owner is refused,
 * naming the file and its owner; one of root is read; the mode rule holds
 * as well.  Without root, only the effective user's own file is tried.
 */
static void test_owned_strict_for_root(void **state)
{
    struct dir *d = *state;

    write_file(d->file, "s3cret\n", 0600);
    expect_read(secfile_read_owned, d->file);
    if (geteuid() != 0) {
        print_message("skip: needs root (a file owned by another user)\n");
        skip();
    }

    assert_int_equal(chown(d->file, 0, 0), 0);
    expect_read(secfile_read_owned, d->file);

    assert_int_equal(chown(d->file, OTHER_UID, OTHER_UID), 0);
    expect_refused(secfile_read_owned,
                   d->file,
                   EPERM,
                   "owned by uid 65534: a credential file must belong to "
                   "this user (uid 0) or root");

    assert_int_equal(chown(d->file, 0, 0), 0);
    assert_int_equal(chmod(d->file, 0604), 0);
    expect_refused(secfile_read_owned, d->file, EPERM, "mode 0604");
}

/* Child of test_other_owner_refused: become OTHER_UID + 1 but keep
 * CAP_DAC_READ_SEARCH, so that open() succeeds and the owner check alone
 * decides.  Exit status: 0 refused for the owner, 1 read, 2 setup failed,
 * 3 refused for another reason.
 */
static int read_as_other_user(const char *path)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    vnib_error_t e = {0};
    char *buf = NULL;
    size_t len = 0;
    uint32_t bit = 1u << CAP_DAC_READ_SEARCH;

    if (prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) < 0
        || setreuid(OTHER_UID + 1, OTHER_UID + 1) < 0)
        return 2;
    memset(data, 0, sizeof(data));
    data[0].permitted = bit;
    data[0].effective = bit;
    if (syscall(SYS_capset, &hdr, data) < 0)
        return 2;
    if (secfile_read(path, &buf, &len, &e) == 0) {
        secfile_free(buf, len);
        return 1;
    }
    return errno == EPERM && strstr(e.text, "owned by uid 65534") ? 0 : 3;
}

/* A user other than root still may not use another user's file, even one
 * it can open.
 */
static void test_other_owner_refused(void **state)
{
    struct dir *d = *state;
    int status = 0;
    pid_t pid;

    if (geteuid() != 0) {
        print_message("skip: needs root (a file owned by another user)\n");
        skip();
    }
    write_file(d->file, "s3cret\n", 0600);
    assert_int_equal(chown(d->file, OTHER_UID, OTHER_UID), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(read_as_other_user(d->file));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 2) {
        print_message(
            "skip: no capabilities to give (a restricted container)\n");
        skip();
    }
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fifo_refused_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_directory_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_root_reads_other_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_other_owner_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_owned_strict_for_root, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
