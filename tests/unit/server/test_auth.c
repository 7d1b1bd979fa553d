/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for node-token verification across a key rotation
 * (server/http/auth.c): the current key's tokens are accepted; the previous
 * key's are accepted until auth.node_key_previous_until and refused with
 * the same error as any bad token from then on; a short previous key
 * stops start-up; and the configuration refuses an overlap without an
 * end, or an end that is not an RFC 3339 UTC time.  Job tokens: the
 * identity they give (role job, the job and reservation, actor
 * "job:<job_id>"), the same overlap as node tokens, refused without a node
 * key, and never a role of the tokens file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/common/assert_fails.h"
#include "vnib/token.h"
#include "server/http/auth.h"
#include "server/config.h"

/* 2030-01-01T00:00:00Z */
#define UNTIL ((time_t)1893456000)

struct keys {
    char dir[64];
    char cur[96], prev[96], other[96], shortk[96], conf[96];
    unsigned char cur_key[32], prev_key[32], other_key[32];
};

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static int setup(void **state)
{
    struct keys *k = calloc(1, sizeof(*k));
    if (!k)
        return -1;
    snprintf(k->dir, sizeof(k->dir), "/tmp/vnib-auth.XXXXXX");
    if (!mkdtemp(k->dir))
        return -1;
    snprintf(k->cur, sizeof(k->cur), "%s/cur.key", k->dir);
    snprintf(k->prev, sizeof(k->prev), "%s/prev.key", k->dir);
    snprintf(k->other, sizeof(k->other), "%s/other.key", k->dir);
    snprintf(k->shortk, sizeof(k->shortk), "%s/short.key", k->dir);
    snprintf(k->conf, sizeof(k->conf), "%s/c.toml", k->dir);
    if (token_key_generate(k->cur_key, 32, NULL) < 0
        || token_key_generate(k->prev_key, 32, NULL) < 0
        || token_key_generate(k->other_key, 32, NULL) < 0)
        return -1;
    write_file(k->cur, k->cur_key, 32);
    write_file(k->prev, k->prev_key, 32);
    write_file(k->other, k->other_key, 32);
    write_file(k->shortk, k->other_key, 16);
    *state = k;
    return 0;
}

static int teardown(void **state)
{
    struct keys *k = *state;
    unlink(k->cur);
    unlink(k->prev);
    unlink(k->other);
    unlink(k->shortk);
    unlink(k->conf);
    rmdir(k->dir);
    free(k);
    return 0;
}

/* Load a configuration of [auth] lines (the tokens file off). */
static struct config *load_auth(struct keys *k,
                                const char *lines,
                                vnib_error_t *e)
{
    char text[1024];
    snprintf(text, sizeof(text), "[auth]\ntokens_file = \"\"\n%s", lines);
    write_file(k->conf, text, strlen(text));
    return config_load(k->conf, e);
}

/* Load node_key_file (the current key), node_key_previous_file = prev
 * and node_key_previous_until = until.
 */
static struct config *load_previous(struct keys *k,
                                    const char *prev,
                                    const char *until,
                                    vnib_error_t *e)
{
    char lines[512];

    snprintf(lines,
             sizeof(lines),
             "node_key_file = \"%s\"\n"
             "node_key_previous_file = \"%s\"\n"
             "node_key_previous_until = \"%s\"\n",
             k->cur,
             prev,
             until);
    return load_auth(k, lines, e);
}

/* a refuses hdr at now: -1, "invalid token". */
static void expect_invalid(struct auth *a, const char *hdr, time_t now)
{
    vnib_error_t e = {0};
    struct identity who;

    assert_int_equal(auth_check_at(a, hdr, now, &who, &e), -1);
    assert_string_equal(e.text, "invalid token");
}

/* "Bearer <node token of node under key>" */
static void bearer(const unsigned char *key, const char *node, char *out)
{
    char token[TOKEN_NODE_SIZE];
    assert_int_equal(
        token_node_derive(key, 32, node, token, sizeof(token), NULL), 0);
    snprintf(out, 7 + TOKEN_NODE_SIZE + 1, "Bearer %s", token);
}

static void test_overlap(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};
    char hdr[7 + TOKEN_NODE_SIZE + 1];
    struct identity who;

    struct config *cfg = load_previous(k, k->prev, "2030-01-01T00:00:00Z", &e);
    assert_non_null(cfg);
    assert_int_equal(cfg->node_key_previous_until, UNTIL);
    struct auth *a = auth_create(cfg, NULL, &e);
    assert_non_null(a);

    /* The current key, before and after the overlap's end. */
    bearer(k->cur_key, "nid001", hdr);
    assert_int_equal(auth_check_at(a, hdr, UNTIL - 1, &who, &e), 0);
    assert_string_equal(who.node, "nid001");
    assert_int_equal(auth_check_at(a, hdr, UNTIL + 1, &who, &e), 0);

    /* The previous key: during the overlap only. */
    bearer(k->prev_key, "nid002", hdr);
    assert_int_equal(auth_check_at(a, hdr, UNTIL - 1, &who, &e), 0);
    assert_string_equal(who.node, "nid002");
    assert_int_equal(who.role, ROLE_NODE);
    errno = 0;
    assert_int_equal(auth_check_at(a, hdr, UNTIL, &who, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_string_equal(e.text, "invalid token");
    assert_string_equal(who.node, "");
    /* Again (the warning is logged once, the refusal is every time). */
    expect_invalid(a, hdr, UNTIL + 3600);

    /* A key that is neither: refused, same message, overlap or not. */
    bearer(k->other_key, "nid003", hdr);
    expect_invalid(a, hdr, UNTIL - 1);

    auth_destroy(a);
    config_destroy(cfg);
}

static void test_no_previous(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};
    char lines[256];
    char hdr[7 + TOKEN_NODE_SIZE + 1];

    snprintf(lines, sizeof(lines), "node_key_file = \"%s\"\n", k->cur);
    struct config *cfg = load_auth(k, lines, &e);
    assert_non_null(cfg);
    struct auth *a = auth_create(cfg, NULL, &e);
    assert_non_null(a);
    bearer(k->prev_key, "nid002", hdr);
    expect_invalid(a, hdr, 0);
    auth_destroy(a);
    config_destroy(cfg);
}

static void test_short_previous_key(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};

    struct config *cfg =
        load_previous(k, k->shortk, "2030-01-01T00:00:00Z", &e);
    assert_non_null(cfg);
    assert_null(auth_create(cfg, NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "short.key: the node key has 16 bytes"));
    /* Loose permissions are refused as for the current key. */
    chmod(k->prev, 0644);
    config_destroy(cfg);
    cfg = load_previous(k, k->prev, "2030-01-01T00:00:00Z", &e);
    assert_non_null(cfg);
    assert_null(auth_create(cfg, NULL, &e));
    assert_int_equal(errno, EPERM);
    chmod(k->prev, 0600);
    config_destroy(cfg);
}

/* "Bearer <job token of reservation resv of job under key>" */
static void job_bearer(const unsigned char *key,
                       long long resv,
                       const char *job,
                       char *out)
{
    char token[TOKEN_JOB_SIZE];
    assert_int_equal(
        token_job_derive(key, 32, resv, job, token, sizeof(token), NULL), 0);
    snprintf(out, 7 + TOKEN_JOB_SIZE + 1, "Bearer %s", token);
}

static void test_job_tokens(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};
    char hdr[7 + TOKEN_JOB_SIZE + 1];
    char token[TOKEN_JOB_SIZE];
    struct identity who;

    struct config *cfg = load_previous(k, k->prev, "2030-01-01T00:00:00Z", &e);
    assert_non_null(cfg);
    struct auth *a = auth_create(cfg, NULL, &e);
    assert_non_null(a);

    /* The current key: role job, its job, reservation and actor. */
    job_bearer(k->cur_key, 17, "1234.5", hdr);
    assert_int_equal(auth_check_at(a, hdr, UNTIL + 1, &who, &e), 0);
    assert_int_equal(who.role, ROLE_JOB);
    assert_string_equal(auth_role_name(who.role), "job");
    assert_string_equal(who.job_id, "1234.5");
    assert_int_equal(who.resv_id, 17);
    assert_string_equal(who.name, "job:1234.5");
    assert_string_equal(who.node, "");

    /* auth_job_token() makes exactly that token. */
    assert_int_equal(auth_job_token(a, 17, "1234.5", token, sizeof(token), &e),
                     0);
    assert_string_equal(hdr + 7, token);

    /* The longest job id: the whole of it in the actor. */
    char job[129];
    memset(job, 'j', 128);
    job[128] = '\0';
    job_bearer(k->cur_key, 1, job, hdr);
    assert_int_equal(auth_check_at(a, hdr, UNTIL + 1, &who, &e), 0);
    assert_string_equal(who.name + 4, job);

    /* The previous key: during the overlap only, as for node tokens. */
    job_bearer(k->prev_key, 18, "99", hdr);
    assert_int_equal(auth_check_at(a, hdr, UNTIL - 1, &who, &e), 0);
    assert_int_equal(who.role, ROLE_JOB);
    assert_int_equal(who.resv_id, 18);
    errno = 0;
    assert_int_equal(auth_check_at(a, hdr, UNTIL, &who, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_string_equal(e.text, "invalid token");
    assert_string_equal(who.job_id, "");
    assert_int_equal(who.resv_id, 0);
    expect_invalid(a, hdr, UNTIL + 3600);

    /* Another key, a changed MAC. */
    job_bearer(k->other_key, 19, "99", hdr);
    expect_invalid(a, hdr, UNTIL - 1);
    job_bearer(k->cur_key, 19, "99", hdr);
    char *last = hdr + strlen(hdr) - 1;
    *last = *last == 'A' ? 'B' : 'A';
    expect_invalid(a, hdr, UNTIL - 1);

    auth_destroy(a);
    config_destroy(cfg);
}

static void test_job_tokens_need_node_key(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};
    char hdr[7 + TOKEN_JOB_SIZE + 1];
    char token[TOKEN_JOB_SIZE];
    struct identity who;

    struct config *cfg = load_auth(k, "node_key_file = \"\"\n", &e);
    assert_non_null(cfg);
    struct auth *a = auth_create(cfg, NULL, &e);
    assert_non_null(a);
    assert_false(auth_nodes_enabled(a));
    job_bearer(k->cur_key, 17, "1234", hdr);
    errno = 0;
    assert_int_equal(auth_check_at(a, hdr, 0, &who, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_string_equal(e.text, "job tokens are not enabled on this broker");
    assert_fails(auth_job_token(a, 17, "1234", token, sizeof(token), &e),
                 ENOTSUP);
    auth_destroy(a);
    config_destroy(cfg);
}

static void test_tokens_file_has_no_job_role(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};
    char path[96], text[256];
    /* A line of a well-formed digest, under the role of job tokens. */
    const char *line =
        "job j1 "
        "0000000000000000000000000000000000000000000000000000"
        "000000000000\n";

    snprintf(path, sizeof(path), "%s/tokens", k->dir);
    write_file(path, line, strlen(line));
    snprintf(text, sizeof(text), "[auth]\ntokens_file = \"%s\"\n", path);
    write_file(k->conf, text, strlen(text));
    struct config *cfg = config_load(k->conf, &e);
    assert_non_null(cfg);
    assert_null(auth_create(cfg, NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "role 'job' is not admin, scheduler or"));
    config_destroy(cfg);
    unlink(path);
}

static void test_config_errors(void **state)
{
    struct keys *k = *state;
    vnib_error_t e = {0};
    static const struct {
        const char *prev, *until, *want;
    } cases[] = {
        {"P",
         "",
         "must be set together (auth.node_key_previous_until is "
         "missing)"},
        {"", "2030-01-01T00:00:00Z", "must be set together"},
        {"P", "2030-01-01 00:00:00", "is not an RFC 3339 UTC time"},
        {"P", "2030-01-01T00:00:00+01:00", "is not an RFC 3339 UTC time"},
        {"P", "2030-02-30T00:00:00Z", "is not an RFC 3339 UTC time"},
        {"P", "30d", "is not an RFC 3339 UTC time"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct config *cfg = load_previous(
            k, cases[i].prev[0] ? k->prev : "", cases[i].until, &e);
        if (cfg)
            fail_msg("case %zu accepted", i);
        assert_int_equal(errno, EINVAL);
        if (!strstr(e.text, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.text, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_overlap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_previous, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_short_previous_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_job_tokens_need_node_key, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_tokens_file_has_no_job_role, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
