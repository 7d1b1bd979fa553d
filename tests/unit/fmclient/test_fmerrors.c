/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the Fabric Manager client's refusals and failures
 * (fmclient/): configurations refused at creation, error replies, replies
 * that are not JSON or too large, refused connections and timeouts, and
 * the class and status each failure reports (struct fmc_error), an HTML
 * error page never quoted.  Against the fake HTTP server
 * (tests/unit/common/fakehttp.h).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/common/assert_fails.h"
#include "tests/unit/fmclient/fmtest.h"

/* ---- creation ------------------------------------------------------------ */

/* One configuration fmc_create refuses: errno err and the message want,
 * after "<path>: " when path is not NULL.
 */
struct refusal {
    struct fmc_config cfg;
    int err;
    const char *want;
    const char *path;
};

#define UNSAFE(mode)                                           \
    "mode " mode                                               \
    " is unsafe: a credential file must not be accessible by " \
    "group or others (chmod 600)"

static void check_refused(const struct refusal *r)
{
    vnib_error_t e = {0};
    char want[256];

    snprintf(want,
             sizeof(want),
             "%s%s%s",
             r->path ? r->path : "",
             r->path ? ": " : "",
             r->want);
    errno = 0;
    assert_null(fmc_create(&r->cfg, &e));
    assert_int_equal(errno, r->err);
    assert_string_equal(e.text, want);
}

static void check_all(const struct refusal *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_refused(&rows[i]);
}

static void test_create_refusals(void **state)
{
    struct fmtest_tmpdir t;
    char missing[96];
    vnib_error_t e = {0};
    (void)state;

    fmtest_tmpdir_init(&t);
    const char *pw_ok = fmtest_tmpdir_file(&t, "passwd", "hunter2\n", 0600);
    const char *pw_open =
        fmtest_tmpdir_file(&t, "passwd-open", "hunter2\n", 0644);
    const char *key_open = fmtest_tmpdir_file(&t, "key.pem", "KEY\n", 0640);
    const char *empty = fmtest_tmpdir_file(&t, "empty", "\n", 0600);
    snprintf(missing, sizeof(missing), "%s/nope", t.path);
    const char *fm = "https://fm";
    const char *kc = "https://kc/token";
    const struct refusal urls[] = {
        {{.url = NULL}, EINVAL, "no FM URL given", NULL},
        {{.url = "ftp://fm/"},
         EINVAL,
         "the FM URL is not an http:// or https:// URL: 'ftp://fm/'",
         NULL},
        {{.url = "https://u:hunter2@fm/"},
         EINVAL,
         "the FM URL must not contain user information (use the "
         "credential files)",
         NULL},
        {{.url = "https://fm/?x=1"},
         EINVAL,
         "the FM URL must not have a query or fragment",
         NULL},
        {{.url = "https://fm/a b"},
         EINVAL,
         "the FM URL contains a space, control or non-ASCII character",
         NULL},
        {{.url = fm, .auth = "kerberos"},
         EINVAL,
         "unknown FM auth 'kerberos' (want none, basic or oauth)",
         NULL},
    };
    const struct refusal basic[] = {
        {{.url = fm, .auth = "basic", .password_file = pw_ok},
         EINVAL,
         "FM basic auth needs a user without spaces, ':' or control "
         "characters",
         NULL},
        {{.url = fm, .auth = "basic", .user = "cxi"},
         EINVAL,
         "no FM password file given",
         NULL},
        {{.url = fm, .auth = "basic", .user = "cxi", .password_file = pw_open},
         EPERM,
         UNSAFE("0644"),
         pw_open},
        {{.url = fm, .auth = "basic", .user = "cxi", .password_file = empty},
         EINVAL,
         "the FM password is empty or contains a NUL byte",
         empty},
    };
    const struct refusal oauth[] = {
        {{.url = fm, .auth = "oauth"},
         EINVAL,
         "no OAuth token URL given",
         NULL},
        {{.url = fm, .auth = "oauth", .token_url = kc},
         EINVAL,
         "FM OAuth needs a client id",
         NULL},
        {{.url = fm, .auth = "oauth", .token_url = kc, .client_id = "wlm"},
         EINVAL,
         "no OAuth client secret file given",
         NULL},
        {{.url = fm,
          .auth = "oauth",
          .token_url = kc,
          .client_id = "wlm",
          .client_secret_file = pw_open},
         EPERM,
         UNSAFE("0644"),
         pw_open},
    };
    const struct refusal tls[] = {
        {{.url = fm, .cert_file = pw_open},
         EINVAL,
         "FM mTLS needs both a client certificate and its key",
         NULL},
        {{.url = fm, .cert_file = pw_open, .key_file = key_open},
         EPERM,
         UNSAFE("0640"),
         key_open},
        {{.url = fm, .ca_file = missing},
         ENOENT,
         "No such file or directory",
         missing},
    };

    errno = 0;
    assert_null(fmc_create(NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "no FM configuration given");
    check_all(urls, sizeof(urls) / sizeof(urls[0]));
    check_all(basic, sizeof(basic) / sizeof(basic[0]));
    check_all(oauth, sizeof(oauth) / sizeof(oauth[0]));
    check_all(tls, sizeof(tls) / sizeof(tls[0]));
    fmtest_tmpdir_cleanup(&t);
}

/* ---- replies that are errors --------------------------------------------- */

static void test_server_error_detail(void **state)
{
    char *detail =
        fakehttp_reply_json(500, "{\"detail\":\"database unavailable\"}");
    char *message =
        fakehttp_reply_json(418, "{\"message\":\"short and stout\"}");
    char url[64];
    (void)state;

    struct fakehttp *s = fakehttp_new(3);
    fakehttp_add(s, fmtest_job_c1, detail, 1);
    fakehttp_add(s, fmtest_job_c1, message, 1);
    fakehttp_add_json(s, fmtest_job_c1, 500, "{}", 1);
    struct fmc *c = fmtest_serve(s, url);
    fmtest_get_fails(c,
                     "c-1",
                     EIO,
                     "FM GET /fabric/collectives/jobs/c-1: HTTP 500: "
                     "database unavailable");
    fmtest_get_fails(c,
                     "c-1",
                     EIO,
                     "FM GET /fabric/collectives/jobs/c-1: HTTP 418: short "
                     "and stout");
    fmtest_get_fails(
        c, "c-1", EIO, "FM GET /fabric/collectives/jobs/c-1: HTTP 500");
    fmtest_done(c, s);
    free(detail);
    free(message);
}

static void test_not_json(void **state)
{
    char *html = fakehttp_reply_json(200, "<html>hello</html>");
    static const char empty[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    char url[64];
    (void)state;

    struct fakehttp *s = fakehttp_new(2);
    fakehttp_add(s, fmtest_job_c1, html, 1);
    fakehttp_add(s, fmtest_job_c1, empty, 1);
    struct fmc *c = fmtest_serve(s, url);
    fmtest_get_fails(c,
                     "c-1",
                     EPROTO,
                     "FM GET /fabric/collectives/jobs/c-1: HTTP 200 reply is "
                     "not JSON");
    fmtest_get_fails(c,
                     "c-1",
                     EPROTO,
                     "FM GET /fabric/collectives/jobs/c-1: HTTP 200 reply is "
                     "empty");
    fmtest_done(c, s);
    free(html);
}

static void test_reply_too_large(void **state)
{
    char url[64];
    (void)state;

    struct fakehttp *s = fakehttp_new(2);
    s->big_body = 1024 * 1024;
    fakehttp_add(s, fmtest_job_c1, NULL, 2);
    fakehttp_run(s);
    struct fmc_config cfg = fmtest_config_for(s, url);
    cfg.max_response = 4096;
    struct fmc *c = fmtest_create_ok(&cfg);
    fmtest_get_fails(c,
                     "c-1",
                     EMSGSIZE,
                     "FM GET /fabric/collectives/jobs/c-1: reply larger than "
                     "4096 bytes");
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    assert_fails(fmc_job_get(c, "c-1", &token, &e), EMSGSIZE);
    assert_int_equal(e.fault, FMC_FAULT_REPLY);
    fmtest_done(c, s);
}

/* ---- failure classes ------------------------------------------------------
 */

/* One FM answer to a job GET and what the failed call says of it. */
struct fault_case {
    const char *reply;    /* the whole HTTP response */
    int err;              /* errno */
    enum fmc_fault fault; /* its class */
    long status;          /* the status reported */
};

/* An HTML error page, as a proxy before the FM may answer; its body must
 * never reach the message (only a JSON detail is quoted).
 */
static const char html_503[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\n"
    "Content-Length: 59\r\n\r\n"
    "<html><body><h1>BODY-MARKER gateway down</h1></body></html>";

/* Every status class, through fmc_job_get: the one map (fmhttp.c) gives
 * errno, the class and the status, and an HTML body is never quoted.
 */
static void test_fault_classes(void **state)
{
    char *r401 = fakehttp_reply_json(401, "{\"detail\":\"who are you\"}");
    char *r403 = fakehttp_reply_json(403, "{}");
    char *r400 = fakehttp_reply_json(400, "{\"detail\":\"bad id\"}");
    char *r404 = fakehttp_reply_json(404, "{}");
    char *r507 = fakehttp_reply_json(507, "{\"detail\":\"02: full\"}");
    char *r200 = fakehttp_reply_json(200, "<html>not json</html>");
    const struct fault_case cases[] = {
        {r401, EACCES, FMC_FAULT_CREDENTIALS, 401},
        {r403, EACCES, FMC_FAULT_CREDENTIALS, 403},
        {r400, EIO, FMC_FAULT_REQUEST, 400},
        {r404, ENOENT, FMC_FAULT_NOT_FOUND, 404},
        {r507, ENOSPC, FMC_FAULT_NO_ADDRESSES, 507},
        {html_503, EIO, FMC_FAULT_UNAVAILABLE, 503},
        {r200, EPROTO, FMC_FAULT_REPLY, 200},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    char url[64];
    (void)state;

    struct fakehttp *s = fakehttp_new((int)n + 1);
    for (size_t i = 0; i < n; i++)
        fakehttp_add(s, fmtest_job_c1, cases[i].reply, 1);
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", 1);
    struct fmc *c = fmtest_serve(s, url);
    for (size_t i = 0; i < n; i++) {
        struct fmc_error e = {.fault = FMC_FAULT_NONE};
        char *token = NULL;
        errno = 0;
        assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
        assert_int_equal(errno, cases[i].err);
        assert_int_equal(e.fault, cases[i].fault);
        assert_int_equal(e.status, cases[i].status);
        assert_int_equal(e.timeout_ms, 0);
        fakehttp_assert_lacks(e.msg.text, "BODY-MARKER");
    }
    /* A success clears what a failure said. */
    struct fmc_error e = {.fault = FMC_FAULT_REPLY, .status = 500};
    char *token = NULL;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    assert_int_equal(e.fault, FMC_FAULT_NONE);
    assert_int_equal(e.status, 0);
    fmc_free_secret(token);
    fmtest_done(c, s);
    free(r401);
    free(r403);
    free(r400);
    free(r404);
    free(r507);
    free(r200);
}

/* The class of a failure before any call: the arguments. */
static void test_fault_local(void **state)
{
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    char url[64];
    (void)state;

    snprintf(url, sizeof(url), "http://127.0.0.1:1");
    struct fmc *c = fmtest_create_ok(&(struct fmc_config){.url = url});
    assert_fails(fmc_job_create(c, "c-1", 0, 0, &token, &e), EINVAL);
    assert_int_equal(e.fault, FMC_FAULT_OTHER);
    assert_int_equal(e.status, 0);
    assert_fails(fmc_job_create(c, "c-1", 1, -1, &token, &e), EINVAL);
    assert_int_equal(e.fault, FMC_FAULT_OTHER);
    fmc_destroy(c);
}

/* ---- transport failures -------------------------------------------------- */

static void test_refused(void **state)
{
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = (char *)"x";
    int port;
    (void)state;

    close(
        fakehttp_listen_any(&port)); /* a port that was just free, now closed */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct fmc *c = fmtest_create_ok(&(struct fmc_config){.url = url});
    assert_fails(fmc_job_get(c, "c-1", &token, &e), ECONNREFUSED);
    assert_null(token);
    fakehttp_assert_prefix(
        e.msg.text,
        "FM GET /fabric/collectives/jobs/c-1: cannot reach the "
        "server: ");
    assert_int_equal(e.fault, FMC_FAULT_CONN_REFUSED);
    assert_int_equal(e.status, 0);
    assert_fails(fmc_job_delete(c, "c-1", &e), ECONNREFUSED);
    assert_int_equal(e.fault, FMC_FAULT_CONN_REFUSED);
    fmc_destroy(c);

    /* A name that does not resolve (.invalid never does, RFC 6761), with
     * time for a resolver that gives up slowly.
     */
    c = fmtest_create_ok(&(struct fmc_config){.url = "http://fm.invalid:8000",
                                              .connect_timeout_ms = 20000,
                                              .timeout_ms = 20000});
    assert_fails(fmc_job_get(c, "c-1", &token, &e), ECONNREFUSED);
    assert_int_equal(e.fault, FMC_FAULT_HOST_UNKNOWN);
    assert_int_equal(e.status, 0);
    fmc_destroy(c);
}

static void test_timeout(void **state)
{
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    struct timespec t0;
    int port;
    (void)state;

    /* Listening, never accepting: the kernel completes the handshake and
     * the request then waits for an answer that never comes.
     */
    int fd = fakehttp_listen_any(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct fmc *c =
        fmtest_create_ok(&(struct fmc_config){.url = url, .timeout_ms = 300});
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_fails(fmc_job_get(c, "c-1", &token, &e), ETIMEDOUT);
    double secs = fmtest_seconds_since(&t0);
    assert_true(secs >= 0.25 && secs < 3.0);
    fakehttp_assert_prefix(e.msg.text,
                           "FM GET /fabric/collectives/jobs/c-1: timed out: ");
    assert_int_equal(e.fault, FMC_FAULT_TIMEOUT);
    assert_int_equal(e.status, 0);
    assert_int_equal(e.timeout_ms, 300);
    fmc_destroy(c);

    /* The reserve call's own timeout bounds the whole call. */
    c = fmtest_create_ok(&(struct fmc_config){.url = url, .timeout_ms = 30000});
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_fails(fmc_job_create(c, "c-1", 23, 300, &token, &e), ETIMEDOUT);
    assert_null(token);
    assert_int_equal(e.fault, FMC_FAULT_TIMEOUT);
    assert_int_equal(e.timeout_ms, 300);
    secs = fmtest_seconds_since(&t0);
    assert_true(secs >= 0.25 && secs < 3.0);
    fmc_destroy(c);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_refusals),
        cmocka_unit_test(test_server_error_detail),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_reply_too_large),
        cmocka_unit_test(test_fault_classes),
        cmocka_unit_test(test_fault_local),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
