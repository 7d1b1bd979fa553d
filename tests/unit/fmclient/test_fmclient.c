/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the Fabric Manager client's jobs API (fmclient/).
 *
 * No FM is needed: the fake HTTP server (tests/unit/common/fakehttp.h)
 * answers canned replies, so a test states the exact exchange it expects
 * (GET 404, then POST, ...).  These check what goes on the wire (request
 * line, headers, body) and how replies come back (token, errno, the exact
 * message) for sizing, creation, GET, reserve, PATCH, DELETE and the job
 * list.  test_fmerrors.c has the failures, test_fmauth.c the auth
 * schemes.
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

/* ---- sizing -------------------------------------------------------------- */

static void test_addrs_per_job(void **state)
{
    (void)state;
    assert_int_equal(fmc_addrs_per_job(4086, 11136, 64, 1), 23);
    assert_int_equal(fmc_addrs_per_job(4086, 11136, 64, 2), 11);
    assert_int_equal(fmc_addrs_per_job(4086, 4096, 1024, 1), 1021);
    /* Fewer nodes than the smallest collective job: one job, all. */
    assert_int_equal(fmc_addrs_per_job(4086, 10, 64, 1), 4086);
    /* Zero and negative divisors are guarded. */
    assert_int_equal(fmc_addrs_per_job(4086, 0, 64, 1), 4086);
    assert_int_equal(fmc_addrs_per_job(4086, 11136, 0, 1), 1);
    assert_int_equal(fmc_addrs_per_job(4086, 11136, 64, 0), 23);
    assert_int_equal(fmc_addrs_per_job(4086, 11136, 64, -3), 23);
    assert_int_equal(fmc_addrs_per_job(4086, -5, -1, 1), 4086);
    /* Never below 1. */
    assert_int_equal(fmc_addrs_per_job(0, 11136, 64, 1), 1);
    assert_int_equal(fmc_addrs_per_job(-1, 11136, 64, 1), 1);
    assert_int_equal(fmc_addrs_per_job(10, 11136, 1, 1), 1);
    assert_int_equal(fmc_addrs_per_job(4086, 11136, 64, 100), 1);
}

static void test_create_ok(void **state)
{
    struct fmtest_tmpdir t;
    (void)state;

    fmtest_tmpdir_init(&t);
    const char *pw = fmtest_tmpdir_file(&t, "passwd", "hunter2\n", 0600);
    const char *cert = fmtest_tmpdir_file(&t, "cert.pem", "CERT\n", 0644);
    const char *key = fmtest_tmpdir_file(&t, "key.pem", "KEY\n", 0600);
    struct fmc *c =
        fmtest_create_ok(&(struct fmc_config){.url = "https://fm.example",
                                              .auth = "basic",
                                              .user = "cxi",
                                              .password_file = pw,
                                              .ca_file = cert,
                                              .cert_file = cert,
                                              .key_file = key,
                                              .tls_verify = true});
    fmc_destroy(c);
    /* The mTLS blobs are accepted by libcurl's TLS backend: a call gets as
     * far as connecting (to a closed port), not a handle set-up failure.
     */
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    int port;
    close(fakehttp_listen_any(&port));
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", port);
    c = fmtest_create_ok(&(struct fmc_config){.url = url,
                                              .ca_file = cert,
                                              .cert_file = cert,
                                              .key_file = key,
                                              .tls_verify = true});
    assert_fails(fmc_job_get(c, "c-1", &token, &e), ECONNREFUSED);
    errno = EEXIST;
    fmc_destroy(c);
    assert_int_equal(errno, EEXIST);
    fmc_destroy(NULL);
    fmc_free_secret(NULL);
    fmc_free_ids(NULL, 0);
    assert_int_equal(errno, EEXIST);
    /* NULL auth means none. */
    fmc_destroy(fmtest_create_ok(&(struct fmc_config){.url = "http://fm"}));
    fmtest_tmpdir_cleanup(&t);
}

static void test_invalid_arguments(void **state)
{
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = (char *)"x";
    char **ids = NULL;
    size_t count = 9;
    (void)state;

    struct fmc *c =
        fmtest_create_ok(&(struct fmc_config){.url = "http://127.0.0.1:1"});
    fmtest_get_fails(c, "", EINVAL, "no FM job id given");
    assert_fails(fmc_job_create(c, "c-1", 0, 0, &token, &e), EINVAL);
    assert_string_equal(e.msg.text, "mcastLimit 0 is not positive");
    assert_fails(fmc_job_release_step(c, "c-1", "", &e), EINVAL);
    assert_fails(fmc_job_delete(c, NULL, &e), EINVAL);
    assert_fails(fmc_job_list(c, "", &ids, &count, &e), EINVAL);
    fmc_destroy(c);
}

/* ---- GET ----------------------------------------------------------------- */

static void test_get_ok(void **state)
{
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s = fakehttp_new(2);
    fakehttp_add_json(s,
                      fmtest_job_c1,
                      200,
                      "{\"jobID\":\"c-1\",\"mcastLimit\":23,\"jobSteps\":{},"
                      "\"sessionToken\":\"st-abc.123\",\"future\":[1]}",
                      1);
    fakehttp_add_json(s,
                      "GET /apis/fm/fabric/collectives/jobs/c-1%2Fx%20y%3F ",
                      200,
                      "{\"jobID\":\"c-1\",\"mcastLimit\":23,\"jobSteps\":{},"
                      "\"sessionToken\":\"st-abc.123\",\"future\":[1]}",
                      1);
    struct fmc *c = fmtest_serve(s, url);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    assert_string_equal(token, "st-abc.123");
    assert_string_equal(e.msg.text, "");
    fmc_free_secret(token);
    /* Job ids are percent-encoded in the path. */
    assert_int_equal(fmc_job_get(c, "c-1/x y?", &token, &e), 0);
    fmc_free_secret(token);
    fmtest_finish_expect(c, s, 2, 1);
    fakehttp_assert_request(
        s,
        0,
        "GET /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n",
        "\r\nAccept: application/json\r\n");
    fakehttp_assert_lacks(fakehttp_request(s, 0), "Authorization");
    fakehttp_assert_lacks(fakehttp_request(s, 0), "Content-Type");
    fakehttp_free(s);
}

static void test_get_not_found(void **state)
{
    char url[64];
    (void)state;

    struct fakehttp *s = fakehttp_new(1);
    fakehttp_add_json(s,
                      "GET /apis/fm/fabric/collectives/jobs/c-2 ",
                      404,
                      "{\"detail\":\"no such job\"}",
                      1);
    struct fmc *c = fmtest_serve(s, url);
    fmtest_get_fails(c,
                     "c-2",
                     ENOENT,
                     "FM GET /fabric/collectives/jobs/c-2: HTTP 404: no "
                     "such job");
    fmtest_done(c, s);
}

/* ---- reserve ------------------------------------------------------------- */

/* One reply the fake FM gives, times times in a row. */
struct reply {
    const char *expect;
    int status;
    const char *body;
    int times;
};

/* A scripted fmc_job_create: the FM's replies in
 * order, the call, what it returns, and what went on the wire.
 */
struct reserve_case {
    struct reply replies[3];
    int limit;        /* mcastLimit */
    bool no_error;    /* pass no struct fmc_error */
    int err;          /* 0: the call succeeds */
    const char *want; /* the token, or the error message */
    bool prefix;      /* want is the start of the message */
    int nrequests;
    int connections;      /* accepted, 0: any number */
    const char *lines[3]; /* each request's line, NULL: not checked; a
                           * POST_LINE's body is checked too */
};

#define GET_C7_LINE "GET /apis/fm/fabric/collectives/jobs/c-7 HTTP/1.1\r\n"
#define POST_LINE "POST /apis/fm/fabric/collectives/jobs HTTP/1.1\r\n"
#define FM_POST "FM POST /fabric/collectives/jobs: "

/* clang-format off */
/* fmc_job_create: one POST for a job id never sent before. */
static const struct reserve_case create_posts_once = {
    {{fmtest_post_jobs, 201, "{\"sessionToken\":\"st-new\"}", 1}},
    .limit = 23, .want = "st-new", .nrequests = 1, .connections = 1,
    .lines = {POST_LINE}};

/* fmc_job_create on a job that exists after all: 409, then its token. */
static const struct reserve_case create_conflict_gets = {
    {{fmtest_post_jobs, 409, "{\"message\":\"exists\"}", 1},
     {fmtest_job_c7, 200, "{\"sessionToken\":\"st-old\"}", 1}},
    .limit = 23, .no_error = true, .want = "st-old", .nrequests = 2,
    .connections = 1,
    .lines = {POST_LINE, GET_C7_LINE}};

static const struct reserve_case create_conflict_then_gone = {
    {{fmtest_post_jobs, 409, "{}", 1}, {fmtest_job_c7, 404, "{}", 1}},
    .limit = 5, .err = EIO, .prefix = true, .nrequests = 2,
    .want = FM_POST "HTTP 409, yet the job is not found: "
                    "FM GET /fabric/collectives/jobs/c-7: HTTP 404"};

static const struct reserve_case create_out_of_addresses = {
    {{fmtest_post_jobs, 507,
      "{\"message\":\"01: job mcastLimit reached\"}", 1}},
    .limit = 23, .err = ENOSPC, .nrequests = 1,
    .want = FM_POST "HTTP 507: 01: job mcastLimit reached"};

static const struct reserve_case create_reply_without_token = {
    {{fmtest_post_jobs, 201, "{\"jobID\":\"c-7\"}", 1}},
    .limit = 23, .err = EPROTO, .nrequests = 1,
    .want = FM_POST "HTTP 201 reply has no valid sessionToken"};
/* clang-format on */

static void run_reserve_case(const struct reserve_case *k)
{
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    int n = 0;

    while (n < 3 && k->replies[n].expect)
        n++;
    struct fakehttp *s = fakehttp_new(k->nrequests);
    for (int i = 0; i < n; i++)
        fakehttp_add_json(s,
                          k->replies[i].expect,
                          k->replies[i].status,
                          k->replies[i].body,
                          k->replies[i].times);
    struct fmc *c = fmtest_serve(s, url);
    struct fmc_error *ep = k->no_error ? NULL : &e;
    errno = 0;
    int rc = fmc_job_create(c, "c-7", k->limit, 0, &token, ep);
    if (k->err == 0) {
        assert_int_equal(rc, 0);
        assert_string_equal(token, k->want);
        assert_string_equal(e.msg.text, "");
        fmc_free_secret(token);
    } else {
        assert_int_equal(rc, -1);
        assert_int_equal(errno, k->err);
        assert_null(token);
        if (k->prefix)
            fakehttp_assert_prefix(e.msg.text, k->want);
        else
            assert_string_equal(e.msg.text, k->want);
    }
    fmtest_finish_expect(
        c, s, k->nrequests, k->connections ? k->connections : -1);
    for (int i = 0; i < 3; i++) {
        if (k->lines[i] && !strcmp(k->lines[i], POST_LINE))
            fmtest_assert_sent(s,
                               i,
                               POST_LINE,
                               "application/json",
                               "{\"jobID\":\"c-7\",\"mcastLimit\":23}");
        else if (k->lines[i])
            fakehttp_assert_request(s, i, k->lines[i], NULL);
    }
    fakehttp_free(s);
}

/* One cmocka test a case. */
#define RESERVE_TEST(k)                \
    static void test_##k(void **state) \
    {                                  \
        (void)state;                   \
        run_reserve_case(&(k));        \
    }

RESERVE_TEST(create_conflict_then_gone)
RESERVE_TEST(create_posts_once)
RESERVE_TEST(create_conflict_gets)
RESERVE_TEST(create_out_of_addresses)
RESERVE_TEST(create_reply_without_token)

/* ---- PATCH and DELETE ---------------------------------------------------- */

static void test_release_step(void **state)
{
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    (void)state;

    struct fakehttp *s = fakehttp_new(3);
    fakehttp_add_json(s,
                      "PATCH /apis/fm/fabric/collectives/jobs/c-1 ",
                      200,
                      "{\"jobID\":\"c-1\"}",
                      1);
    fakehttp_add_json(
        s, "PATCH /apis/fm/fabric/collectives/jobs/c-1 ", 404, "{}", 1);
    fakehttp_add_json(s,
                      "PATCH /apis/fm/fabric/collectives/jobs/c-1 ",
                      500,
                      "{\"detail\":\"tree busy\"}",
                      1);
    struct fmc *c = fmtest_serve(s, url);
    assert_int_equal(fmc_job_release_step(c, "c-1", "3", &e), 0);
    assert_int_equal(fmc_job_release_step(c, "c-1", "3", &e), 0);
    assert_string_equal(e.msg.text, "");
    assert_fails(fmc_job_release_step(c, "c-1", "4", &e), EIO);
    assert_string_equal(e.msg.text,
                        "FM PATCH /fabric/collectives/jobs/c-1: HTTP 500: "
                        "tree busy");
    fmtest_finish_expect(c, s, 3, -1);
    fmtest_assert_sent(
        s,
        0,
        "PATCH /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n",
        "application/json",
        "{\"jobSteps\":{\"3\":null}}");
    assert_string_equal(fakehttp_body(s, 2), "{\"jobSteps\":{\"4\":null}}");
    fakehttp_free(s);
}

static void test_delete(void **state)
{
    static const char no_content[] = "HTTP/1.1 204 No Content\r\n\r\n";
    char *busy = fakehttp_reply_json(503, "{\"message\":\"99: busy\"}");
    char *html = fakehttp_reply_json(502, "<html>bad gateway</html>");
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    (void)state;

    struct fakehttp *s = fakehttp_new(4);
    fakehttp_add(
        s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", no_content, 1);
    fakehttp_add_json(
        s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", 404, "{}", 1);
    fakehttp_add(s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", busy, 1);
    fakehttp_add(s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", html, 1);
    struct fmc *c = fmtest_serve(s, url);
    assert_int_equal(fmc_job_delete(c, "c-1", &e), 0);
    assert_int_equal(fmc_job_delete(c, "c-1", &e), 0);
    assert_string_equal(e.msg.text, "");
    assert_fails(fmc_job_delete(c, "c-1", &e), EIO);
    assert_string_equal(e.msg.text,
                        "FM DELETE /fabric/collectives/jobs/c-1: HTTP 503: 99: "
                        "busy");
    /* A gateway's HTML error page: the status is what counts. */
    assert_fails(fmc_job_delete(c, "c-1", &e), EIO);
    assert_string_equal(e.msg.text,
                        "FM DELETE /fabric/collectives/jobs/c-1: HTTP 502");
    fmtest_finish_expect(c, s, 4, 1);
    fakehttp_assert_request(
        s, 0, "DELETE /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n", NULL);
    fakehttp_assert_lacks(fakehttp_request(s, 0), "Content-Type");
    fakehttp_assert_lacks(fakehttp_request(s, 0), "Content-Length");
    fakehttp_free(s);
    free(busy);
    free(html);
}

/* ---- list ---------------------------------------------------------------- */

static void test_list_prefix(void **state)
{
    char *list = fakehttp_reply_json(
        200,
        "{\"documentLinks\":[\"/fabric/collectives/jobs/c-1\","
        "\"/fabric/collectives/jobs/cx-2\",\"/fabric/collectives/jobs/"
        "other-3\","
        "\"/fabric/collectives/jobs/c-\",\"/fabric/collectives/jobs/c-22/\","
        "\"/fabric/collectives/jobs/c\",\"/fabric/collectives/jobs/c-a%20b\","
        "5,null,\"/fabric/collectives/jobs/c-bad%zz\",\"c-7\","
        "\"/fabric/collectives/jobs/cc-8\",\"/fabric/collectives/jobs/x-c-9\","
        "\"/fabric/collectives/jobs/C-10\"],"
        "\"documentCount\":14,\"unknown\":{}}");
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char **ids = NULL;
    size_t count = 0;
    (void)state;

    struct fakehttp *s = fakehttp_new(1);
    fakehttp_add(s, "GET /apis/fm/fabric/collectives/jobs/ ", list, 1);
    struct fmc *c = fmtest_serve(s, url);
    assert_int_equal(fmc_job_list(c, "c", &ids, &count, &e), 0);
    assert_int_equal(count, 4);
    assert_string_equal(ids[0], "c-1");
    assert_string_equal(ids[1], "c-22");
    assert_string_equal(ids[2], "c-a b");
    assert_string_equal(ids[3], "c-7");
    fmc_free_ids(ids, count);
    fmtest_finish(c, s);
    fakehttp_assert_request(
        s, 0, "GET /apis/fm/fabric/collectives/jobs/ HTTP/1.1\r\n", NULL);
    fakehttp_free(s);
    free(list);
}

/* A list far larger than one read: the reply arrives in many pieces and
 * its buffer grows several times, keeping every byte.
 */
static void test_list_large(void **state)
{
    enum { N = 4000 };
    size_t size = (size_t)N * 48 + 64;
    char *body = malloc(size);
    size_t len = 0;
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char **ids = NULL;
    size_t count = 0;
    (void)state;

    assert_non_null(body);
    len += (size_t)snprintf(body + len, size - len, "{\"documentLinks\":[");
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(body + len,
                                size - len,
                                "%s\"/fabric/collectives/jobs/c-%d-r%d\"",
                                i ? "," : "",
                                i,
                                i + 1);
    snprintf(body + len, size - len, "]}");
    char *list = fakehttp_reply_json(200, body);
    struct fakehttp *s = fakehttp_new(1);
    fakehttp_add(s, "GET /apis/fm/fabric/collectives/jobs/ ", list, 1);
    fakehttp_run(s);
    struct fmc_config cfg = fmtest_config_for(s, url);
    cfg.max_response = 4 * 1024 * 1024;
    struct fmc *c = fmtest_create_ok(&cfg);
    assert_int_equal(fmc_job_list(c, "c", &ids, &count, &e), 0);
    assert_int_equal(count, N);
    assert_string_equal(ids[0], "c-0-r1");
    assert_string_equal(ids[N - 1], "c-3999-r4000");
    fmc_free_ids(ids, count);
    fmtest_done(c, s);
    free(list);
    free(body);
}

static void test_list_empty_and_bad(void **state)
{
    char url[64];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char **ids = NULL;
    size_t count = 9;
    (void)state;

    struct fakehttp *s = fakehttp_new(2);
    fakehttp_add_json(s,
                      "GET /apis/fm/fabric/collectives/jobs/ ",
                      200,
                      "{\"documentLinks\":[]}",
                      1);
    fakehttp_add_json(s,
                      "GET /apis/fm/fabric/collectives/jobs/ ",
                      200,
                      "{\"documents\":{}}",
                      1);
    struct fmc *c = fmtest_serve(s, url);
    assert_int_equal(fmc_job_list(c, "cluster", &ids, &count, &e), 0);
    assert_int_equal(count, 0);
    fmc_free_ids(ids, count);
    assert_fails(fmc_job_list(c, "cluster", &ids, &count, &e), EPROTO);
    assert_null(ids);
    assert_int_equal(count, 0);
    assert_string_equal(e.msg.text,
                        "FM GET /fabric/collectives/jobs/: the reply has no "
                        "documentLinks list");
    fmtest_done(c, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addrs_per_job),
        cmocka_unit_test(test_create_ok),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_get_ok),
        cmocka_unit_test(test_get_not_found),
        cmocka_unit_test(test_create_conflict_then_gone),
        cmocka_unit_test(test_create_posts_once),
        cmocka_unit_test(test_create_conflict_gets),
        cmocka_unit_test(test_create_out_of_addresses),
        cmocka_unit_test(test_create_reply_without_token),
        cmocka_unit_test(test_release_step),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_list_prefix),
        cmocka_unit_test(test_list_large),
        cmocka_unit_test(test_list_empty_and_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
