/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the job env file (lib/envfile.c).
 *
 * The names: which are valid, which a file may set, the reserved ten.
 * The state directory's "%n".  The trusted open: a missing directory or
 * file is no reservation (0); each rule a directory or file can break is
 * its own refusal (-1, the path and the rule in the message), a FIFO
 * among them, refused at once.  The parser: a good file's lines in order,
 * and each way a file can be malformed, with the line's number.
 *
 * The jobs directory must be root's, so the tests that read a file need
 * root; without it they are skipped.
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

#include "vnib/envfile.h"

/* A uid that owns nothing here (nobody), and the job's. */
#define OTHER_UID ((uid_t)65534)
#define JOB_UID ((uid_t)4242)

struct dir {
    char state[64]; /* the state directory */
    char jobs[80];  /* state/jobs */
    char file[96];  /* state/jobs/12.env */
};

static int setup(void **state)
{
    struct dir *d = calloc(1, sizeof(*d));
    if (!d)
        return -1;
    snprintf(d->state, sizeof(d->state), "/tmp/vnib-envfile.XXXXXX");
    if (!mkdtemp(d->state)) {
        free(d);
        return -1;
    }
    snprintf(d->jobs, sizeof(d->jobs), "%s/jobs", d->state);
    snprintf(d->file, sizeof(d->file), "%s/12.env", d->jobs);
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    struct dir *d = *state;
    char link[128];

    unlink(d->file);
    rmdir(d->file);
    snprintf(link, sizeof(link), "%s/real", d->state);
    unlink(d->jobs);
    rmdir(d->jobs);
    unlink(link);
    rmdir(link);
    rmdir(d->state);
    free(d);
    return 0;
}

static void need_root(void)
{
    if (geteuid() != 0) {
        print_message("skip: needs root (the jobs directory is root's)\n");
        skip();
    }
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

/* The jobs directory as the agent makes it (root's, 0711). */
static void make_jobs(const struct dir *d)
{
    assert_int_equal(mkdir(d->jobs, 0711), 0);
    assert_int_equal(chmod(d->jobs, 0711), 0);
}

/* envfile_read of key "12" in d returns want (0 or 1). */
static void expect_read(const struct dir *d, uid_t uid, int want)
{
    struct envfile env = {0};
    vnib_error_t e = {0};

    assert_int_equal(envfile_read(d->state, "12", uid, &env, &e), want);
    assert_string_equal(e.text, "");
    if (want == 0) {
        assert_null(env.buf);
        assert_int_equal(env.len, 0);
    } else {
        assert_non_null(env.buf);
    }
    envfile_cleanup(&env);
}

/* envfile_read of key in d is refused with errno err (0: not checked),
 * a message naming path that holds part, and nothing read.
 */
static void expect_refused_key(const struct dir *d,
                               const char *key,
                               uid_t uid,
                               int err,
                               const char *path,
                               const char *part)
{
    struct envfile env = {0};
    vnib_error_t e = {0};

    assert_int_equal(envfile_read(d->state, key, uid, &env, &e), -1);
    if (err)
        assert_int_equal(errno, err);
    assert_null(env.buf);
    if (path && !strstr(e.text, path))
        fail_msg("'%s' does not name %s", e.text, path);
    if (!strstr(e.text, part))
        fail_msg("'%s' does not say '%s'", e.text, part);
}

static void expect_refused(const struct dir *d,
                           int err,
                           const char *path,
                           const char *part)
{
    expect_refused_key(d, "12", JOB_UID, err, path, part);
}

/* ---- names ---------------------------------------------------------- */

static void test_valid_name(void **state)
{
    char longest[ENVFILE_NAME_MAX + 2];
    (void)state;

    assert_true(envfile_valid_name("SLINGSHOT_VNIS"));
    assert_true(envfile_valid_name("_x1"));
    assert_true(envfile_valid_name("a"));
    assert_false(envfile_valid_name(""));
    assert_false(envfile_valid_name("1X"));
    assert_false(envfile_valid_name("A-B"));
    assert_false(envfile_valid_name("A B"));
    assert_false(envfile_valid_name("A=B"));
    memset(longest, 'A', ENVFILE_NAME_MAX);
    longest[ENVFILE_NAME_MAX] = '\0';
    assert_true(envfile_valid_name(longest));
    longest[ENVFILE_NAME_MAX] = 'A';
    longest[ENVFILE_NAME_MAX + 1] = '\0';
    assert_false(envfile_valid_name(longest));
}

static void test_honoured_name(void **state)
{
    (void)state;
    assert_true(envfile_honoured_name("SLINGSHOT_VNIS"));
    assert_true(envfile_honoured_name("SLINGSHOT_NEW_ONE"));
    assert_true(envfile_honoured_name("FI_CXI_COLL_JOB_ID"));
    assert_false(envfile_honoured_name("LD_PRELOAD"));
    assert_false(envfile_honoured_name("SLINGSHOT"));
    assert_false(envfile_honoured_name("FI_CXIX"));
    assert_false(envfile_honoured_name("slingshot_vnis"));
}

/* The ten names the agent sets (agent/jobenv.c), all honoured. */
static void test_reserved_names(void **state)
{
    static const char *const want[] = {
        "SLINGSHOT_VNIS",
        "SLINGSHOT_DEVICES",
        "SLINGSHOT_SVC_IDS",
        "SLINGSHOT_TCS",
        "FI_CXI_COLL_JOB_ID",
        "FI_CXI_COLL_JOB_STEP_ID",
        "FI_CXI_COLL_MCAST_TOKEN",
        "FI_CXI_COLL_FABRIC_MGR_URL",
        "FI_CXI_HWCOLL_ADDRS_PER_JOB",
        "FI_CXI_HWCOLL_MIN_NODES",
    };
    size_t n = 0;
    (void)state;

    for (; envfile_reserved_names[n]; n++) {
        assert_true(n < sizeof(want) / sizeof(*want));
        assert_string_equal(envfile_reserved_names[n], want[n]);
        assert_true(envfile_honoured_name(want[n]));
        assert_true(envfile_valid_name(want[n]));
        assert_true(envfile_reserved_name(want[n]));
    }
    assert_int_equal(n, sizeof(want) / sizeof(*want));
    /* A user's own libfabric setting is not the agent's. */
    assert_false(envfile_reserved_name("FI_CXI_RX_MATCH_MODE"));
    assert_false(envfile_reserved_name("SLINGSHOT_VNI"));
}

/* ---- the state directory -------------------------------------------- */

static void test_expand_dir(void **state)
{
    char out[64];
    char longest[ENVFILE_DIR_MAX + 2];
    vnib_error_t e = {0};
    (void)state;

    assert_int_equal(
        envfile_expand_dir("/run/vnibroker", NULL, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/run/vnibroker");
    assert_int_equal(
        envfile_expand_dir("/t/%n/s/%n", "fx0", out, sizeof(out), &e), 0);
    assert_string_equal(out, "/t/fx0/s/fx0");
    /* A lone '%' is kept. */
    assert_int_equal(envfile_expand_dir("/t/%x%", "n", out, sizeof(out), &e),
                     0);
    assert_string_equal(out, "/t/%x%");

    assert_int_equal(envfile_expand_dir("run/x", NULL, out, sizeof(out), &e),
                     -1);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "absolute path"));
    assert_int_equal(envfile_expand_dir("/t/%n", NULL, out, sizeof(out), &e),
                     -1);
    assert_non_null(strstr(e.text, "cannot name a folder"));
    assert_int_equal(envfile_expand_dir("/t/%n", "", out, sizeof(out), &e), -1);
    assert_int_equal(
        envfile_expand_dir("/t/%n", "a/../b", out, sizeof(out), &e), -1);
    assert_non_null(strstr(e.text, "'a/../b'"));
    /* Two characters fit in 3 bytes, three do not. */
    assert_int_equal(envfile_expand_dir("/%n", "x", out, 3, &e), 0);
    assert_int_equal(envfile_expand_dir("/%n", "xy", out, 3, &e), -1);
    assert_non_null(strstr(e.text, "expands to a bad path"));
    memset(longest, 'd', sizeof(longest) - 1);
    longest[0] = '/';
    longest[sizeof(longest) - 1] = '\0';
    assert_int_equal(envfile_expand_dir(longest, NULL, out, sizeof(out), &e),
                     -1);
    assert_non_null(strstr(e.text, "at most 1024 characters"));
}

/* ---- reading -------------------------------------------------------- */

static void test_missing_is_no_reservation(void **state)
{
    struct dir *d = *state;

    expect_read(d, JOB_UID, 0); /* no jobs directory */
    need_root();
    make_jobs(d);
    expect_read(d, JOB_UID, 0); /* no file */
}

static void test_reads_file(void **state)
{
    struct dir *d = *state;
    struct envfile env = {0};
    vnib_error_t e = {0};

    need_root();
    make_jobs(d);
    write_file(d->file, "export SLINGSHOT_VNIS=1024\n", 0400);
    assert_int_equal(envfile_read(d->state, "12", JOB_UID, &env, &e), 1);
    assert_int_equal(env.len, 27);
    assert_string_equal(env.buf, "export SLINGSHOT_VNIS=1024\n");
    envfile_cleanup(&env);
    assert_null(env.buf);
    /* Owned by root, by the job's user; 0644 and 0600 are fine too. */
    assert_int_equal(chown(d->file, JOB_UID, 0), 0);
    expect_read(d, JOB_UID, 1);
    assert_int_equal(chmod(d->file, 0644), 0);
    expect_read(d, JOB_UID, 1);
    /* A 0755 jobs directory, as well as 0711. */
    assert_int_equal(chmod(d->jobs, 0755), 0);
    expect_read(d, JOB_UID, 1);
}

static void test_dir_writable_by_others(void **state)
{
    struct dir *d = *state;

    need_root();
    make_jobs(d);
    write_file(d->file, "export SLINGSHOT_VNIS=1024\n", 0400);
    assert_int_equal(chmod(d->jobs, 0731), 0);
    expect_refused(d, EPERM, d->jobs, "mode 0731");
    assert_int_equal(chmod(d->jobs, 0713), 0);
    expect_refused(d, EPERM, d->jobs, "it must belong to root and be writable");
}

static void test_dir_not_roots(void **state)
{
    struct dir *d = *state;

    /* Without root, a directory can only be the tester's: refused too. */
    assert_int_equal(mkdir(d->jobs, 0711), 0);
    if (geteuid() == 0)
        assert_int_equal(chown(d->jobs, OTHER_UID, 0), 0);
    expect_refused(d, EPERM, d->jobs, "it must belong to root");
}

static void test_dir_is_link(void **state)
{
    struct dir *d = *state;
    char real[128];

    need_root();
    snprintf(real, sizeof(real), "%s/real", d->state);
    assert_int_equal(mkdir(real, 0711), 0);
    assert_int_equal(symlink(real, d->jobs), 0);
    expect_refused(d, 0, d->jobs, "cannot open");
}

static void test_file_is_link(void **state)
{
    struct dir *d = *state;
    char real[128];

    need_root();
    make_jobs(d);
    snprintf(real, sizeof(real), "%s/real", d->state);
    write_file(real, "export SLINGSHOT_VNIS=1024\n", 0400);
    assert_int_equal(symlink(real, d->file), 0);
    expect_refused(d, EPERM, d->file, "not a symbolic link");
}

/* Without O_NONBLOCK the open() of a FIFO waits for a writer forever:
 * the alarm turns that hang into a failure.
 */
static void test_fifo_refused_at_once(void **state)
{
    struct dir *d = *state;

    need_root();
    make_jobs(d);
    assert_int_equal(mkfifo(d->file, 0400), 0);
    signal(SIGALRM, SIG_DFL);
    alarm(5);
    expect_refused(d, EPERM, d->file, "it must be a regular file");
    alarm(0);
}

static void test_directory_refused(void **state)
{
    struct dir *d = *state;

    need_root();
    make_jobs(d);
    assert_int_equal(mkdir(d->file, 0500), 0);
    expect_refused(d, EPERM, d->file, "it must be a regular file");
}

static void test_file_of_another_user(void **state)
{
    struct dir *d = *state;

    need_root();
    make_jobs(d);
    write_file(d->file, "export SLINGSHOT_VNIS=1024\n", 0400);
    assert_int_equal(chown(d->file, OTHER_UID, 0), 0);
    expect_refused(
        d, EPERM, d->file, "it must be owned by root or uid 4242 (uid 65534)");
}

static void test_file_writable_by_others(void **state)
{
    struct dir *d = *state;

    need_root();
    make_jobs(d);
    write_file(d->file, "export SLINGSHOT_VNIS=1024\n", 0620);
    expect_refused(d, EPERM, d->file, "writable by neither group nor others");
    assert_int_equal(chmod(d->file, 0602), 0);
    expect_refused(d, EPERM, d->file, "(mode 0602)");
}

static void test_file_too_large(void **state)
{
    struct dir *d = *state;
    char *big;

    need_root();
    make_jobs(d);
    big = malloc(ENVFILE_MAX_SIZE + 2);
    assert_non_null(big);
    /* Exactly the limit is read; one byte more is refused. */
    memset(big, 'x', ENVFILE_MAX_SIZE);
    big[ENVFILE_MAX_SIZE] = '\0';
    write_file(d->file, big, 0400);
    expect_read(d, JOB_UID, 1);
    big[ENVFILE_MAX_SIZE] = 'x';
    big[ENVFILE_MAX_SIZE + 1] = '\0';
    write_file(d->file, big, 0400);
    free(big);
    expect_refused(d, EFBIG, d->file, "at most 65536 bytes (65537 bytes)");
}

static void test_bad_keys(void **state)
{
    struct dir *d = *state;
    char longest[ENVFILE_KEY_MAX + 2];
    static const char *const bad[] = {
        "", ".", "..", ".x", "../12", "a/b", "1 2", "12\n"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        expect_refused_key(d, bad[i], JOB_UID, EINVAL, NULL, "cannot name");
    memset(longest, '1', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    expect_refused_key(d, longest, JOB_UID, EINVAL, NULL, "cannot name");
    /* The agent's step files (JOB+STEP) and the longest key are keys. */
    longest[ENVFILE_KEY_MAX] = '\0';
    {
        struct envfile env = {0};
        assert_int_equal(envfile_read(d->state, "12+batch", 0, &env, NULL), 0);
        assert_int_equal(envfile_read(d->state, longest, 0, &env, NULL), 0);
    }
}

static void test_state_dir_too_long(void **state)
{
    char longest[ENVFILE_DIR_MAX + 2];
    struct envfile env = {0};
    vnib_error_t e = {0};
    (void)state;

    memset(longest, 'd', sizeof(longest) - 1);
    longest[0] = '/';
    longest[sizeof(longest) - 1] = '\0';
    assert_int_equal(envfile_read(longest, "12", 0, &env, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "longer than 1024"));
}

/* ---- parsing -------------------------------------------------------- */

/* text parsed: returns the result, with env's lines in *env. */
static int parse(const char *text, size_t len, struct envfile *env)
{
    vnib_error_t e = {0};
    int rc;

    memset(env, 0, sizeof(*env));
    env->buf = malloc(len + 1);
    assert_non_null(env->buf);
    memcpy(env->buf, text, len);
    env->buf[len] = '\0';
    env->len = len;
    rc = envfile_parse(env, &e);
    if (rc == 0)
        assert_string_equal(e.text, "");
    return rc;
}

static void test_parse_good(void **state)
{
    static const char text[] =
        "export SLINGSHOT_VNIS=1024,1025\n"
        "unset FI_CXI_HWCOLL_MIN_NODES\n"
        "export FI_CXI_COLL_FABRIC_MGR_URL=https://fm:8000/x?a=b\n"
        "export SLINGSHOT_EMPTY=\n"
        "export LD_PRELOAD=/x y.so\n";
    struct envfile env;
    (void)state;

    assert_int_equal(parse(text, sizeof(text) - 1, &env), 0);
    assert_int_equal(env.count, 5);
    assert_string_equal(env.lines[0].name, "SLINGSHOT_VNIS");
    assert_string_equal(env.lines[0].value, "1024,1025");
    assert_string_equal(env.lines[1].name, "FI_CXI_HWCOLL_MIN_NODES");
    assert_null(env.lines[1].value);
    assert_string_equal(env.lines[2].name, "FI_CXI_COLL_FABRIC_MGR_URL");
    assert_string_equal(env.lines[2].value, "https://fm:8000/x?a=b");
    assert_string_equal(env.lines[3].value, "");
    /* Parsed, not judged: honouring a name is the plugin's business. */
    assert_string_equal(env.lines[4].name, "LD_PRELOAD");
    assert_string_equal(env.lines[4].value, "/x y.so");
    envfile_cleanup(&env);
    assert_null(env.lines);
    assert_int_equal(env.count, 0);
}

/* Each malformed file and the message's words. */
static const struct {
    const char *what;
    const char *text;
    size_t len; /* 0: strlen(text) */
    const char *message;
} malformed[] = {
    {"empty", "", 0, "the env file is empty or its last line has no newline"},
    {"no final newline",
     "export SLINGSHOT_VNIS=1\nexport SLINGSHOT_TCS=0xa",
     0,
     "the env file is empty or its last line has no newline"},
    {"NUL byte",
     "export SLINGSHOT_VNIS=1\0x\n",
     26,
     "the env file holds a NUL byte"},
    {"blank line", "export SLINGSHOT_VNIS=1\n\n", 0, "malformed line 2 "},
    {"bad verb", "set SLINGSHOT_VNIS=1\n", 0, "malformed line 1 "},
    {"no '='",
     "export SLINGSHOT_VNIS=1\nexport SLINGSHOT_DEVICES\n",
     0,
     "malformed line 2 of the env file (want \"export NAME=value\" or "
     "\"unset NAME\")"},
    {"empty name", "export =1\n", 0, "malformed line 1 "},
    {"bad name", "export SLINGSHOT-VNIS=1\n", 0, "malformed line 1 "},
    {"name with a space", "unset SLINGSHOT VNIS\n", 0, "malformed line 1 "},
    {"two spaces", "export  SLINGSHOT_VNIS=1\n", 0, "malformed line 1 "},
    {"CRLF", "export SLINGSHOT_VNIS=1\r\n", 0, "malformed line 1 "},
    {"tab in a value", "unset X\nexport X=a\tb\n", 0, "malformed line 2 "},
    {"DEL in a value", "export X=a\x7f\n", 0, "malformed line 1 "},
    {"escape in a name", "unset X\x1b\n", 0, "malformed line 1 "},
};

static void test_parse_malformed(void **state)
{
    (void)state;

    for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++) {
        const char *text = malformed[i].text;
        size_t len = malformed[i].len ? malformed[i].len : strlen(text);
        struct envfile env;
        vnib_error_t e = {0};

        memset(&env, 0, sizeof(env));
        env.buf = malloc(len + 1);
        assert_non_null(env.buf);
        memcpy(env.buf, text, len);
        env.buf[len] = '\0';
        env.len = len;
        if (envfile_parse(&env, &e) != -1)
            fail_msg("%s: accepted", malformed[i].what);
        assert_int_equal(errno, EINVAL);
        assert_null(env.lines);
        assert_int_equal(env.count, 0);
        if (!strstr(e.text, malformed[i].message))
            fail_msg("%s: '%s' does not say '%s'",
                     malformed[i].what,
                     e.text,
                     malformed[i].message);
        envfile_cleanup(&env);
    }
}

/* The largest file the reader takes, one short line after another. */
static void test_parse_many_lines(void **state)
{
    char *text = malloc(ENVFILE_MAX_SIZE + 1);
    size_t n = ENVFILE_MAX_SIZE / 8;
    struct envfile env;
    (void)state;

    assert_non_null(text);
    for (size_t i = 0; i < n; i++)
        memcpy(text + 8 * i, "unset X\n", 8);
    assert_int_equal(parse(text, 8 * n, &env), 0);
    free(text);
    assert_int_equal(env.count, n);
    assert_string_equal(env.lines[n - 1].name, "X");
    envfile_cleanup(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_name),
        cmocka_unit_test(test_honoured_name),
        cmocka_unit_test(test_reserved_names),
        cmocka_unit_test(test_expand_dir),
        cmocka_unit_test_setup_teardown(
            test_missing_is_no_reservation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads_file, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_dir_writable_by_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_not_roots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_is_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_is_link, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fifo_refused_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_directory_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_file_of_another_user, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_file_writable_by_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_keys, setup, teardown),
        cmocka_unit_test(test_state_dir_too_long),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_many_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
