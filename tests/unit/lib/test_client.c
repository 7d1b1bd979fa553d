/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the REST client library (lib/client.c).
 *
 * No broker is needed: the fake HTTP server (tests/unit/common/fakehttp.h)
 * records the requests it receives and answers each with a canned reply.
 * The tests check what goes on the wire
 * (request line, Authorization header, body) and how replies, refusals
 * and transport failures come back (status, parsed JSON, errno and the
 * exact message).
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

#include "tests/unit/common/assert_fails.h"
#include "tests/unit/common/fakehttp.h"
#include "vnib/client.h"

/* A fake server answering each request with the next canned reply. */
static struct fakehttp *server_start(const char *reply)
{
    struct fakehttp *s = fakehttp_new(1);

    fakehttp_add(s, "", reply, 1);
    return s;
}

/* A fake server answering one request with status and a JSON body (the
 * server keeps the reply).
 */
static struct fakehttp *json_server(int status, const char *body)
{
    struct fakehttp *s = fakehttp_new(1);

    fakehttp_add_json(s, "", status, body, 1);
    return s;
}

static struct vnib_client *client_for(const struct fakehttp *s,
                                      const char *token)
{
    char url[64];
    vnib_error_t e = {0};
    struct vnib_client *c;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
    c = vnib_client_create(url, token, &e);
    assert_non_null(c);
    assert_string_equal(e.text, "");
    return c;
}

/* Run s and return a client of it. */
static struct vnib_client *client_run(struct fakehttp *s, const char *token)
{
    fakehttp_run(s);
    return client_for(s, token);
}

/* Destroy c and wait for s to have answered every request. */
static void client_done(struct vnib_client *c, struct fakehttp *s)
{
    vnib_client_destroy(c);
    fakehttp_join(s);
}

/* s received exactly the requests whose request lines are lines (up to
 * the NULL that ends it), each without " HTTP/1.1".
 */
static void assert_request_lines(const struct fakehttp *s,
                                 const char *const lines[])
{
    int n = 0;

    for (; lines[n]; n++) {
        char want[256];
        snprintf(want, sizeof(want), "%s HTTP/1.1\r\n", lines[n]);
        fakehttp_assert_prefix(fakehttp_request(s, n), want);
    }
    assert_int_equal(s->nrequests, n);
}

/* String member key of o, or NULL. */
static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- escaping ------------------------------------------------------------ */

static void check_escape(const char *in, const char *want)
{
    char *out = vnib_client_escape(in);
    assert_non_null(out);
    assert_string_equal(out, want);
    free(out);
}

static void test_escape(void **state)
{
    (void)state;
    check_escape("", "");
    check_escape("job-1.2_x~y", "job-1.2_x~y");
    check_escape("AZaz09", "AZaz09");
    check_escape("job/1", "job%2F1");
    check_escape("a b?c#d&e=f%g", "a%20b%3Fc%23d%26e%3Df%25g");
    check_escape("1234@cluster:a+b", "1234%40cluster%3Aa%2Bb");
    check_escape("\xc3\xbc\n\x7f", "%C3%BC%0A%7F");
    check_escape(".", "%2E");
    check_escape("..", "%2E%2E");
    check_escape("...", "...");
    check_escape("a..", "a..");
    errno = 0;
    assert_null(vnib_client_escape(NULL));
    assert_int_equal(errno, EINVAL);
}

/* ---- creation ------------------------------------------------------------ */

static void check_bad_url(const char *url, const char *want)
{
    vnib_error_t e = {0};
    errno = 0;
    assert_null(vnib_client_create(url, "tok", &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, want);
}

static void test_create_bad_urls(void **state)
{
    (void)state;
    check_bad_url(NULL, "no broker URL given");
    check_bad_url("", "no broker URL given");
    check_bad_url("127.0.0.1:8080",
                  "'127.0.0.1:8080' is not a valid broker URL (want "
                  "http://HOST:PORT or https://HOST:PORT)");
    check_bad_url("ftp://example.org/",
                  "'ftp://example.org/': unsupported scheme 'ftp' (want "
                  "http or https)");
    check_bad_url("file:///etc/passwd",
                  "'file:///etc/passwd': unsupported scheme 'file' (want "
                  "http or https)");
    check_bad_url("http://user:pw@broker:8080",
                  "the broker URL must not contain user information (pass "
                  "the token in a file)");
    check_bad_url("http://broker:8080/?a=b",
                  "'http://broker:8080/?a=b': the broker URL must not have "
                  "a query");
    check_bad_url("http://broker :8080",
                  "broker URL contains a space, control or non-ASCII "
                  "character");
    check_bad_url("http://broker:8080\n",
                  "broker URL contains a space, control or non-ASCII "
                  "character");
}

static void test_create_bad_tokens(void **state)
{
    static const char *const bad[] = {"", "a b", "tok\r\nX-Evil: 1", "t\x7f"};
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vnib_error_t e = {0};
        errno = 0;
        assert_null(vnib_client_create("http://127.0.0.1:8080", bad[i], &e));
        assert_int_equal(errno, EINVAL);
        assert_string_equal(e.text,
                            "the token is empty, too long, or contains "
                            "spaces or control characters");
    }
}

static void test_create_ok(void **state)
{
    vnib_error_t e = {0};
    struct vnib_client *c;
    (void)state;

    assert_int_equal(vnib_client_global_init(), 0);
    c = vnib_client_create("https://broker.example:8443/vnib//", NULL, &e);
    assert_non_null(c);
    assert_string_equal(vnib_client_url(c), "https://broker.example:8443/vnib");
    assert_fails(vnib_client_set_timeout_ms(c, 0), EINVAL);
    assert_int_equal(vnib_client_set_timeout_ms(c, 2500), 0);
    assert_int_equal(vnib_client_set_cacert(c, "/nonexistent/ca.pem"), 0);
    errno = EEXIST;
    vnib_client_destroy(c);
    assert_int_equal(errno, EEXIST);
    vnib_client_destroy(NULL);
    assert_int_equal(errno, EEXIST);
}

/* ---- transport failures -------------------------------------------------- */

static void test_refused(void **state)
{
    char url[64];
    char want[128];
    vnib_error_t e = {0};
    json_t *reply = json_true(); /* must be reset to NULL */
    int port;
    (void)state;

    /* A port that was just free and is now closed. */
    close(fakehttp_listen_any(&port));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct vnib_client *c = vnib_client_create(url, "tok", &e);
    assert_non_null(c);
    errno = 0;
    assert_int_equal(
        vnib_client_request(c, "GET", "/healthz", NULL, &reply, &e), -1);
    assert_int_equal(errno, ECONNREFUSED);
    assert_null(reply);
    snprintf(want, sizeof(want), "cannot reach the broker at %s: ", url);
    fakehttp_assert_prefix(e.text, want);
    assert_null(strstr(e.text, "tok"));
    vnib_client_destroy(c);
}

static void test_timeout(void **state)
{
    char want[128];
    vnib_error_t e = {0};
    struct timespec t0, t1;
    (void)state;

    /* Listening, never accepting: the kernel completes the handshake and
     * the request then waits for an answer that never comes.
     */
    struct fakehttp *s = server_start(NULL);
    struct vnib_client *c = client_for(s, "tok");
    assert_int_equal(vnib_client_set_timeout_ms(c, 300), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    errno = 0;
    assert_int_equal(vnib_client_request(c, "GET", "/readyz", NULL, NULL, &e),
                     -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(errno, ETIMEDOUT);
    snprintf(want,
             sizeof(want),
             "broker at http://127.0.0.1:%d did not answer in time: ",
             s->port);
    fakehttp_assert_prefix(e.text, want);
    double secs = (double)(t1.tv_sec - t0.tv_sec)
                  + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs >= 0.25 && secs < 3.0);
    vnib_client_destroy(c);
    fakehttp_free(s);
}

/* ---- replies ------------------------------------------------------------- */

/* Run one bodiless request against s (not yet run, then joined, for the
 * caller to inspect and free); returns what vnib_client_request did.
 */
static int one_request(struct fakehttp *s,
                       const char *token,
                       const char *method,
                       const char *path,
                       json_t **replyp,
                       vnib_error_t *errp)
{
    struct vnib_client *c = client_run(s, token);
    int rc = vnib_client_request(c, method, path, NULL, replyp, errp);
    client_done(c, s);
    return rc;
}

static void test_get_ok(void **state)
{
    vnib_error_t e = {0};
    json_t *reply = NULL;
    int rc;
    (void)state;

    struct fakehttp *s =
        json_server(200, "{\"status\":\"ok\",\"version\":\"x\"}");
    rc = one_request(s, "vnib1.secret-token", "GET", "/healthz", &reply, &e);
    assert_int_equal(rc, 200);
    assert_string_equal(e.text, "");
    assert_non_null(reply);
    assert_string_equal(jstr(reply, "status"), "ok");
    fakehttp_assert_prefix(fakehttp_request(s, 0), "GET /healthz HTTP/1.1\r\n");
    assert_non_null(strstr(fakehttp_request(s, 0),
                           "\r\nAuthorization: Bearer vnib1.secret-token\r\n"));
    assert_non_null(
        strstr(fakehttp_request(s, 0), "\r\nAccept: application/json\r\n"));
    assert_null(strstr(fakehttp_request(s, 0), "Content-Type"));
    /* The default 10 s timeout, less its 2 s margin. */
    assert_non_null(
        strstr(fakehttp_request(s, 0), "\r\nVnib-Deadline-Ms: 8000\r\n"));
    assert_int_equal(s->accepted, 1);
    json_decref(reply);
    fakehttp_free(s);
}

/* The deadline sent is the timeout less a quarter, at most 2 s less. */
static void test_deadline_ms(void **state)
{
    (void)state;
    assert_int_equal(vnib_client_deadline_ms(10000), 8000);
    assert_int_equal(vnib_client_deadline_ms(60000), 58000);
    assert_int_equal(vnib_client_deadline_ms(1000), 750);
    assert_int_equal(vnib_client_deadline_ms(8000), 6000);
    assert_int_equal(vnib_client_deadline_ms(1), 1);
    assert_int_equal(vnib_client_deadline_ms(100000000), VNIB_DEADLINE_MAX_MS);
}

static void test_no_token_no_header(void **state)
{
    json_t *reply = NULL;
    int rc;
    (void)state;

    struct fakehttp *s = json_server(200, "{\"status\":\"ready\"}");
    rc = one_request(s, NULL, "GET", "/readyz", &reply, NULL);
    assert_int_equal(rc, 200);
    assert_null(strstr(fakehttp_request(s, 0), "Authorization"));
    assert_null(strstr(fakehttp_request(s, 0), "authorization"));
    json_decref(reply);
    fakehttp_free(s);
}

static void test_error_reply(void **state)
{
    vnib_error_t e = {0};
    json_t *reply = NULL;
    int rc;
    (void)state;

    errno = 0;
    struct fakehttp *s = json_server(
        409,
        "{\"error\":{\"code\":\"reservation_conflict\",\"message\":\"job 7 "
        "is active with other parameters\",\"request_id\":\"r-1\"}}");
    rc = one_request(s, "tok", "GET", "/v1/reservations/7", &reply, &e);
    assert_int_equal(rc, 409);
    assert_int_equal(errno, 0);
    assert_string_equal(e.text,
                        "reservation_conflict: job 7 is active with other "
                        "parameters");
    assert_non_null(reply);
    assert_string_equal(jstr(json_object_get(reply, "error"), "request_id"),
                        "r-1");
    json_decref(reply);
    fakehttp_free(s);
}

static void test_error_reply_without_code(void **state)
{
    vnib_error_t e = {0};
    int rc;
    (void)state;

    /* No replyp: the reply is freed, the status still comes back. */
    struct fakehttp *s = json_server(500, "{\"oops\":1}");
    rc = one_request(s, "tok", "GET", "/v1/pool", NULL, &e);
    assert_int_equal(rc, 500);
    assert_string_equal(e.text,
                        "http_500: the broker's reply has no error code");
    fakehttp_free(s);
}

static void test_not_json(void **state)
{
    char want[160];
    const char *canned =
        "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n"
        "Content-Length: 11\r\n\r\n<html></ht>";
    vnib_error_t e = {0};
    json_t *reply = json_true();
    int rc;
    (void)state;

    errno = 0;
    struct fakehttp *s = server_start(canned);
    rc = one_request(s, "tok", "GET", "/v1/pool", &reply, &e);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    assert_null(reply);
    snprintf(want,
             sizeof(want),
             "GET http://127.0.0.1:%d/v1/pool: HTTP 502 reply is not JSON (",
             s->port);
    fakehttp_assert_prefix(e.text, want);
    fakehttp_free(s);
}

static void test_empty_reply(void **state)
{
    char want[160];
    const char *canned = "HTTP/1.1 204 No Content\r\n\r\n";
    vnib_error_t e = {0};
    int rc;
    (void)state;

    errno = 0;
    struct fakehttp *s = server_start(canned);
    rc = one_request(s, "tok", "DELETE", "/v1/nodes/n1/drain", NULL, &e);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    snprintf(want,
             sizeof(want),
             "DELETE http://127.0.0.1:%d/v1/nodes/n1/drain: HTTP 204 reply "
             "is not JSON (empty body)",
             s->port);
    assert_string_equal(e.text, want);
    fakehttp_assert_prefix(fakehttp_request(s, 0),
                           "DELETE /v1/nodes/n1/drain HTTP/1.1\r\n");
    fakehttp_free(s);
}

static void test_reply_too_large(void **state)
{
    char want[160];
    vnib_error_t e = {0};
    int rc;
    (void)state;

    struct fakehttp *s = server_start(NULL);
    s->big_body = VNIB_CLIENT_MAX_REPLY + 65536;
    struct vnib_client *c = client_run(s, "tok");
    errno = 0;
    rc = vnib_client_request(c, "GET", "/v1/events", NULL, NULL, &e);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    snprintf(want,
             sizeof(want),
             "http://127.0.0.1:%d: reply larger than 16 MiB",
             s->port);
    assert_string_equal(e.text, want);
    client_done(c, s);
    fakehttp_free(s);
}

static void test_invalid_requests(void **state)
{
    vnib_error_t e = {0};
    struct vnib_client *c;
    (void)state;

    c = vnib_client_create("http://127.0.0.1:1", "tok", &e);
    assert_non_null(c);
    errno = 0;
    assert_int_equal(
        vnib_client_request(c, "PATCH", "/v1/pool", NULL, NULL, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "invalid request method or path");
    errno = 0;
    assert_int_equal(vnib_client_request(c, "GET", "v1/pool", NULL, NULL, &e),
                     -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(
        vnib_client_request(c, "GET", "/v1/reservations/a b", NULL, NULL, &e),
        -1);
    assert_int_equal(errno, EINVAL);
    vnib_client_destroy(c);
}

/* ---- wrappers ------------------------------------------------------------ */

static void test_reserve(void **state)
{
    vnib_error_t e = {0};
    json_t *reply = NULL;
    (void)state;

    struct fakehttp *s = json_server(201, "{\"job_id\":\"job/1\"}");
    struct vnib_client *c = client_run(s, "tok");
    struct vnib_reserve r = {.job_id = "job/1",
                             .uid = 4294967294u,
                             .user = "alice",
                             .nodes = "tux[0-3]",
                             .vni_count = 2,
                             .hwcoll = "on"};
    assert_int_equal(vnib_client_reserve(c, &r, &reply, &e), 201);
    client_done(c, s);
    fakehttp_assert_prefix(fakehttp_request(s, 0),
                           "POST /v1/reservations HTTP/1.1\r\n");
    assert_non_null(strstr(fakehttp_request(s, 0),
                           "\r\nContent-Type: application/json\r\n"));
    assert_null(strstr(fakehttp_request(s, 0), "Expect:"));
    assert_string_equal(fakehttp_body(s, 0),
                        "{\"job_id\":\"job/1\",\"uid\":4294967294,\"user\":"
                        "\"alice\",\"nodes\":\"tux[0-3]\",\"vni_count\":2,"
                        "\"hwcoll\":\"on\"}");
    assert_string_equal(jstr(reply, "job_id"), "job/1");
    json_decref(reply);
    fakehttp_free(s);
}

static void test_reserve_default_count(void **state)
{
    (void)state;

    struct fakehttp *s = json_server(200, "{}");
    struct vnib_client *c = client_run(s, "tok");
    struct vnib_reserve r = {.job_id = "42",
                             .uid = 0,
                             .user = "root",
                             .nodes = "n1",
                             .vni_count = -1};
    assert_int_equal(vnib_client_reserve(c, &r, NULL, NULL), 200);
    client_done(c, s);
    assert_string_equal(fakehttp_body(s, 0),
                        "{\"job_id\":\"42\",\"uid\":0,\"user\":\"root\","
                        "\"nodes\":\"n1\"}");
    fakehttp_free(s);
}

static void test_get_and_release(void **state)
{
    json_t *reply = NULL;
    (void)state;

    /* Three requests on one kept-alive connection. */
    struct fakehttp *s = fakehttp_new(3);
    fakehttp_add_json(s, "", 200, "{\"state\":\"active\"}", 1);
    fakehttp_add_json(s, "", 202, "{\"state\":\"releasing\"}", 1);
    fakehttp_add_json(s, "", 200, "{\"state\":\"released\"}", 1);
    struct vnib_client *c = client_run(s, "tok");
    assert_int_equal(vnib_client_get_reservation(c, "job/1", &reply, NULL),
                     200);
    assert_string_equal(jstr(reply, "state"), "active");
    json_decref(reply);
    assert_int_equal(vnib_client_release(c, "..", 0, false, &reply, NULL), 202);
    assert_string_equal(jstr(reply, "state"), "releasing");
    json_decref(reply);
    assert_int_equal(vnib_client_release(c, "a b", 0, true, NULL, NULL), 200);
    client_done(c, s);
    static const char *const lines[] = {
        "GET /v1/reservations/job%2F1",
        "DELETE /v1/reservations/%2E%2E",
        "DELETE /v1/reservations/a%20b?force=true",
        NULL,
    };
    assert_int_equal(s->accepted, 1);
    assert_request_lines(s, lines);
    assert_null(strstr(fakehttp_request(s, 2), "Content-Length"));
    fakehttp_free(s);
}

static void test_report(void **state)
{
    json_t *services = json_pack("[{s:s, s:i}]", "device", "cxi0", "svc_id", 5);
    (void)state;

    struct fakehttp *s = json_server(200, "{}");
    struct vnib_client *c = client_run(s, "tok");
    struct vnib_report r = {.job_id = "42",
                            .node = "n 1",
                            .cxi = "created",
                            .services = services,
                            .message = "ok \"x\"",
                            .reservation = 7};
    assert_int_equal(vnib_client_report(c, &r, NULL, NULL), 200);
    client_done(c, s);
    fakehttp_assert_prefix(fakehttp_request(s, 0),
                           "PUT /v1/reservations/42/nodes/n%201 HTTP/1.1\r\n");
    assert_string_equal(fakehttp_body(s, 0),
                        "{\"cxi\":\"created\",\"services\":[{\"device\":"
                        "\"cxi0\",\"svc_id\":5}],\"reservation_id\":7,"
                        "\"message\":\"ok \\\"x\\\"\"}");
    /* Borrowed: still ours. */
    assert_int_equal(services->refcount, 1);
    json_decref(services);
    fakehttp_free(s);
}

static void test_report_minimal(void **state)
{
    vnib_error_t e = {0};
    (void)state;

    struct fakehttp *s = json_server(409, "{\"error\":{\"code\":\"x\"}}");
    struct vnib_client *c = client_run(s, "tok");
    struct vnib_report r = {.job_id = "42", .node = "n1", .cxi = "destroyed"};
    assert_int_equal(vnib_client_report(c, &r, NULL, &e), 409);
    assert_string_equal(e.text, "x: HTTP 409");
    client_done(c, s);
    assert_string_equal(fakehttp_body(s, 0), "{\"cxi\":\"destroyed\"}");
    fakehttp_free(s);
}

static void test_steps(void **state)
{
    json_t *reply = NULL;
    vnib_error_t e = {0};
    (void)state;

    /* Reserve, read, release and report a step, each on its step route. */
    struct fakehttp *s = fakehttp_new(5);
    fakehttp_add_json(s, "", 201, "{\"step_id\":\"0\"}", 1);
    fakehttp_add_json(s, "", 200, "{\"step_id\":\"0\"}", 1);
    fakehttp_add_json(s, "", 202, "{\"outcome\":\"no_hwcoll\"}", 1);
    fakehttp_add_json(s, "", 200, "{}", 1);
    fakehttp_add_json(s, "", 201, "{\"step_id\":\"0\"}", 1);
    struct vnib_client *c = client_run(s, "tok");
    const struct vnib_step_reserve r = {
        .job_id = "job/1", .step_id = "0", .nodes = "n[1-2]", .vni_count = 1};
    assert_int_equal(vnib_client_step_reserve(c, &r, &reply, &e), 201);
    assert_string_equal(jstr(reply, "step_id"), "0");
    json_decref(reply);
    assert_int_equal(vnib_client_get_step(c, "job/1", "..", NULL, NULL), 200);
    assert_int_equal(
        vnib_client_step_release(c, "42", "3.1", true, &reply, NULL), 202);
    json_decref(reply);
    const struct vnib_report rep = {.job_id = "42",
                                    .node = "n1",
                                    .cxi = "created",
                                    .reservation = 7,
                                    .step_id = "3.1"};
    assert_int_equal(vnib_client_report(c, &rep, NULL, NULL), 200);
    const struct vnib_step_reserve none = {
        .job_id = "42", .step_id = "5", .nodes = "n1", .vni_count = -1};
    assert_int_equal(vnib_client_step_reserve(c, &none, NULL, NULL), 201);
    client_done(c, s);
    static const char *const lines[] = {
        "PUT /v1/reservations/job%2F1/steps/0",
        "GET /v1/reservations/job%2F1/steps/%2E%2E",
        "DELETE /v1/reservations/42/steps/3.1?force=true",
        "PUT /v1/reservations/42/steps/3.1/nodes/n1",
        "PUT /v1/reservations/42/steps/5",
        NULL,
    };
    assert_request_lines(s, lines);
    assert_string_equal(fakehttp_body(s, 0),
                        "{\"nodes\":\"n[1-2]\",\"vni_count\":1}");
    assert_string_equal(fakehttp_body(s, 3),
                        "{\"cxi\":\"created\",\"reservation_id\":7}");
    assert_string_equal(fakehttp_body(s, 4), "{\"nodes\":\"n1\"}");
    fakehttp_free(s);

    /* Arguments missing: refused before any request. */
    const struct vnib_step_reserve bad = {.job_id = "42", .nodes = "n1"};
    c = vnib_client_create("http://127.0.0.1:1", "tok", &e);
    assert_non_null(c);
    assert_int_equal(vnib_client_step_reserve(c, &bad, NULL, &e), -1);
    assert_int_equal(errno, EINVAL);
    vnib_client_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_deadline_ms),
        cmocka_unit_test(test_create_bad_urls),
        cmocka_unit_test(test_create_bad_tokens),
        cmocka_unit_test(test_create_ok),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_get_ok),
        cmocka_unit_test(test_no_token_no_header),
        cmocka_unit_test(test_error_reply),
        cmocka_unit_test(test_error_reply_without_code),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_empty_reply),
        cmocka_unit_test(test_reply_too_large),
        cmocka_unit_test(test_invalid_requests),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_reserve_default_count),
        cmocka_unit_test(test_get_and_release),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_report_minimal),
        cmocka_unit_test(test_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
