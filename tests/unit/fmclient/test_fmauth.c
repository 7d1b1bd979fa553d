/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the Fabric Manager client's authentication (fmclient/):
 * HTTP Basic and OAuth client credentials (token cache, refresh on 401,
 * expiry, refusals and the class of each token endpoint status), that no
 * secret in any encoding reaches a message,
 * and concurrent calls sharing one token.  Against the fake HTTP server
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

/* ---- Basic --------------------------------------------------------------- */

/* A fake server and a password file "s3cret" for Basic clients. */
struct basic {
    char url[64];
    struct fmtest_tmpdir t;
    const char *pw;
    struct fakehttp *s;
};

static struct fakehttp *basic_begin(struct basic *b, int expect)
{
    fmtest_tmpdir_init(&b->t);
    b->pw = fmtest_tmpdir_file(&b->t, "pw", "s3cret\n", 0600);
    b->s = fakehttp_new(expect);
    return b->s;
}

/* A Basic configuration for user cxi with the password file. */
static struct fmc_config basic_config(struct basic *b,
                                      const char *password_file)
{
    struct fmc_config cfg = fmtest_config_for(b->s, b->url);

    cfg.auth = "basic";
    cfg.user = "cxi";
    cfg.password_file = password_file;
    return cfg;
}

static void test_basic(void **state)
{
    struct basic b;
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s = basic_begin(&b, 3);
    const char *pw1 = b.pw;
    const char *pw2 = fmtest_tmpdir_file(&b.t, "pw2", "p@ss w0rd:x", 0400);
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", 2);
    fakehttp_add_json(
        s, fmtest_job_c1, 500, "{\"detail\":\"password s3cret is wrong\"}", 1);
    fakehttp_run(s);
    struct fmc_config cfg = basic_config(&b, pw1);
    struct fmc *c = fmtest_create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    fmc_free_secret(token);
    fmc_destroy(c);
    cfg.password_file = pw2;
    c = fmtest_create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    fmc_free_secret(token);
    fmc_destroy(c);
    cfg.password_file = pw1;
    c = fmtest_create_ok(&cfg);
    assert_fails(fmc_job_get(c, "c-1", &token, &e), EIO);
    /* A server quoting the password does not get it into the message. */
    assert_string_equal(e.msg.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 500: "
                        "password *** is wrong");
    fakehttp_assert_lacks(e.msg.text, "s3cret");
    fmtest_finish_expect(c, s, 3, -1);
    fakehttp_assert_contains(fakehttp_request(s, 0),
                             "\r\nAuthorization: Basic Y3hpOnMzY3JldA==\r\n");
    fakehttp_assert_contains(
        fakehttp_request(s, 1),
        "\r\nAuthorization: Basic Y3hpOnBAc3MgdzByZDp4\r\n");
    fakehttp_free(s);
    fmtest_tmpdir_cleanup(&b.t);
}

/* A server echoing the Authorization header (base64 of user:password)
 * or the password in its error gets neither into the message.
 */
static void test_basic_echo_scrubbed(void **state)
{
    struct basic b;
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s = basic_begin(&b, 1);
    fakehttp_add_json(s,
                      fmtest_job_c1,
                      403,
                      "{\"detail\":\"bad Authorization: Basic "
                      "Y3hpOnMzY3JldA== (cxi:s3cret)\"}",
                      1);
    fakehttp_run(s);
    struct fmc_config cfg = basic_config(&b, b.pw);
    struct fmc *c = fmtest_create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_string_equal(e.msg.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 403: "
                        "bad Authorization: Basic *** (cxi:***)");
    fmtest_done(c, s);
    fmtest_tmpdir_cleanup(&b.t);
}

/* ---- OAuth --------------------------------------------------------------- */

static const char secret_text[] = "p&ss=+w%rd";

/* An OAuth configuration against s, the client secret in t. */
static struct fmc_config oauth_config(const struct fakehttp *s,
                                      struct fmtest_tmpdir *t,
                                      char *url,
                                      char *token_url)
{
    struct fmc_config cfg = fmtest_config_for(s, url);
    char secret[64];

    snprintf(token_url, 64, "http://127.0.0.1:%d/token", s->port);
    snprintf(secret, sizeof(secret), "%s\n", secret_text);
    cfg.auth = "oauth";
    cfg.token_url = token_url;
    cfg.client_id = "vnib broker";
    cfg.client_secret_file =
        fmtest_tmpdir_file(t, "client-secret", secret, 0600);
    return cfg;
}

/* An OAuth client of a fake server, its secret in a temporary directory. */
struct oauth {
    char url[64];
    char token_url[64];
    struct fmtest_tmpdir t;
    struct fakehttp *s;
};

/* The server answers the first token request with token (a JSON body)
 * when it is not NULL.
 */
static struct fakehttp *oauth_begin(struct oauth *o,
                                    int expect,
                                    const char *token)
{
    fmtest_tmpdir_init(&o->t);
    o->s = fakehttp_new(expect);
    if (token)
        fakehttp_add_json(o->s, fmtest_token_post, 200, token, 1);
    return o->s;
}

/* Run the server, then create the client. */
static struct fmc *oauth_client(struct oauth *o)
{
    fakehttp_run(o->s);
    struct fmc_config cfg = oauth_config(o->s, &o->t, o->url, o->token_url);
    return fmtest_create_ok(&cfg);
}

static void oauth_end(struct oauth *o)
{
    fakehttp_free(o->s);
    fmtest_tmpdir_cleanup(&o->t);
}

static void test_oauth_cached(void **state)
{
    struct oauth o;
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s =
        oauth_begin(&o,
                    4,
                    "{\"access_token\":\"AT1\",\"expires_in\":300,"
                    "\"token_type\":\"Bearer\",\"scope\":\"openid\"}");
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", -1);
    struct fmc *c = oauth_client(&o);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
        assert_string_equal(token, "st");
        fmc_free_secret(token);
    }
    /* One token request for three calls, all on one connection. */
    fmtest_finish_expect(c, s, 4, 1);
    fmtest_assert_sent(s,
                       0,
                       "POST /token HTTP/1.1\r\n",
                       "application/x-www-form-urlencoded",
                       "grant_type=client_credentials&client_id=vnib%20broker"
                       "&client_secret=p%26ss%3D%2Bw%25rd&scope=openid");
    fakehttp_assert_lacks(fakehttp_request(s, 0), "Authorization");
    for (int i = 1; i < 4; i++) {
        fakehttp_assert_prefix(
            fakehttp_request(s, i),
            "GET /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n");
        fakehttp_assert_contains(fakehttp_request(s, i),
                                 "\r\nAuthorization: Bearer AT1\r\n");
    }
    oauth_end(&o);
}

/* An OAuth server or FM echoing the token form (the client secret
 * percent-encoded, in either case), client_id:secret's base64 or the
 * access token gets none of them into the message.
 */
static void test_oauth_echo_scrubbed(void **state)
{
    char *refused = fakehttp_reply_json(
        401,
        "{\"error_description\":\"bad client_secret=p%26ss%3D%2Bw%25rd, "
        "p%26ss%3d%2bw%25rd, dm5pYiBicm9rZXI6cCZzcz0rdyVyZA==, p&ss=+w%rd\"}");
    char *echo = fakehttp_reply_json(
        500, "{\"detail\":\"Authorization: Bearer AT1secret rejected\"}");
    struct oauth o;
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s = oauth_begin(&o, 3, NULL);
    fakehttp_add(s, fmtest_token_post, refused, 1);
    fakehttp_add_json(s,
                      fmtest_token_post,
                      200,
                      "{\"access_token\":\"AT1secret\",\"expires_in\":300}",
                      1);
    fakehttp_add(s, fmtest_job_c1, echo, 1);
    struct fmc *c = oauth_client(&o);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EACCES);
    fakehttp_assert_prefix(e.msg.text, "OAuth POST http://127.0.0.1:");
    fakehttp_assert_contains(
        e.msg.text, "/token: HTTP 401: bad client_secret=***, ***, ***, ***");
    fakehttp_assert_lacks(e.msg.text, "p&ss");
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.msg.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 500: "
                        "Authorization: Bearer *** rejected");
    fmtest_finish(c, s);
    oauth_end(&o);
    free(refused);
    free(echo);
}

static void test_oauth_refresh_on_401(void **state)
{
    struct oauth o;
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s =
        oauth_begin(&o, 7, "{\"access_token\":\"AT1\",\"expires_in\":300}");
    fakehttp_add_json(
        s, fmtest_job_c1, 401, "{\"detail\":\"token expired\"}", 1);
    fakehttp_add_json(s,
                      fmtest_token_post,
                      200,
                      "{\"access_token\":\"AT2\",\"expires_in\":300}",
                      1);
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", 1);
    fakehttp_add_json(
        s, fmtest_job_c1, 403, "{}", 1); /* CSM says 403 when expired */
    fakehttp_add_json(
        s, fmtest_token_post, 200, "{\"access_token\":\"AT3\"}", 1);
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", 1);
    struct fmc *c = oauth_client(&o);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    assert_string_equal(token, "st");
    fmc_free_secret(token);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    fmc_free_secret(token);
    assert_string_equal(e.msg.text, "");
    fmtest_finish_expect(c, s, 7, -1);
    fakehttp_assert_request(s, 0, "POST /token ", NULL);
    fakehttp_assert_contains(fakehttp_request(s, 1),
                             "\r\nAuthorization: Bearer AT1\r\n");
    fakehttp_assert_request(s, 2, "POST /token ", NULL);
    fakehttp_assert_contains(fakehttp_request(s, 3),
                             "\r\nAuthorization: Bearer AT2\r\n");
    fakehttp_assert_contains(fakehttp_request(s, 4),
                             "\r\nAuthorization: Bearer AT2\r\n");
    fakehttp_assert_request(s, 5, "POST /token ", NULL);
    fakehttp_assert_contains(fakehttp_request(s, 6),
                             "\r\nAuthorization: Bearer AT3\r\n");
    oauth_end(&o);
}

static void test_oauth_refresh_fails(void **state)
{
    struct oauth o;
    (void)state;

    struct fakehttp *s =
        oauth_begin(&o, 4, "{\"access_token\":\"AT1\",\"expires_in\":300}");
    fakehttp_add_json(s,
                      fmtest_token_post,
                      200,
                      "{\"access_token\":\"AT2\",\"expires_in\":300}",
                      1);
    fakehttp_add_json(
        s, fmtest_job_c1, 401, "{\"detail\":\"token expired\"}", 2);
    struct fmc *c = oauth_client(&o);
    fmtest_get_fails(c,
                     "c-1",
                     EACCES,
                     "FM GET /fabric/collectives/jobs/c-1: HTTP 401: token "
                     "expired");
    /* Exactly one refresh and one retry. */
    fmtest_finish_expect(c, s, 4, -1);
    fakehttp_assert_request(s, 0, "POST /token ", NULL);
    fakehttp_assert_request(s, 1, "GET ", NULL);
    fakehttp_assert_request(s, 2, "POST /token ", NULL);
    fakehttp_assert_contains(fakehttp_request(s, 3),
                             "\r\nAuthorization: Bearer AT2\r\n");
    oauth_end(&o);
}

/* Monotonic milliseconds, for the bounded wait below. */
static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_oauth_expiry(void **state)
{
    struct oauth o;
    char *token = NULL;
    (void)state;

    /* How many requests come is known only at the end (expect below). */
    struct fakehttp *s =
        oauth_begin(&o,
                    FAKEHTTP_MAX_REQUESTS,
                    "{\"access_token\":\"AT1\",\"expires_in\":2}");
    fakehttp_add_json(s,
                      fmtest_token_post,
                      200,
                      "{\"access_token\":\"AT2\",\"expires_in\":2}",
                      1);
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", -1);
    struct fmc *c = oauth_client(&o);
    /* A 2 s token is reused for half its life, then refreshed. */
    assert_int_equal(fmc_job_get(c, "c-1", &token, NULL), 0);
    fmc_free_secret(token);
    assert_int_equal(fmc_job_get(c, "c-1", &token, NULL), 0);
    fmc_free_secret(token);
    int calls = 2;
    assert_int_equal(s->nrequests, calls + 1); /* one token, two jobs */
    /* Ask again every 50 ms until a call fetches a new token first (the
     * server has then seen two requests more than calls), for at most
     * 10 s of wall-clock time.
     */
    long long deadline = mono_ms() + 10000;
    while (s->nrequests == calls + 1 && mono_ms() < deadline) {
        usleep(50 * 1000);
        assert_int_equal(fmc_job_get(c, "c-1", &token, NULL), 0);
        fmc_free_secret(token);
        calls++;
    }
    assert_int_equal(s->nrequests, calls + 2); /* refreshed, within 10 s */
    assert_true(calls + 2 <= FAKEHTTP_MAX_REQUESTS);
    s->expect = calls + 2;
    fmtest_finish_expect(c, s, calls + 2, -1);
    fakehttp_assert_request(s, 0, "POST /token ", NULL);
    for (int i = 1; i < calls; i++)
        fakehttp_assert_contains(fakehttp_request(s, i),
                                 "\r\nAuthorization: Bearer AT1\r\n");
    fakehttp_assert_prefix(fakehttp_request(s, calls), "POST /token ");
    fakehttp_assert_contains(fakehttp_request(s, calls + 1),
                             "\r\nAuthorization: Bearer AT2\r\n");
    oauth_end(&o);
}

static void test_oauth_token_refused(void **state)
{
    char *html = fakehttp_reply_json(200, "<html></html>");
    struct oauth o;
    char want[160];
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = NULL;
    (void)state;

    struct fakehttp *s = oauth_begin(&o, 4, NULL);
    fakehttp_add_json(s,
                      fmtest_token_post,
                      401,
                      "{\"error\":\"unauthorized_client\","
                      "\"error_description\":\"client secret "
                      "'p&ss=+w%rd' is wrong\"}",
                      1);
    fakehttp_add_json(
        s, fmtest_token_post, 200, "{\"access_token\":\"A T\"}", 1);
    fakehttp_add(s, fmtest_token_post, html, 1);
    fakehttp_add_json(
        s, fmtest_token_post, 404, "{\"detail\":\"no such realm\"}", 1);
    struct fmc *c = oauth_client(&o);
    assert_fails(fmc_job_get(c, "c-1", &token, &e), EACCES);
    snprintf(want,
             sizeof(want),
             "OAuth POST %s: HTTP 401: client secret '***' is wrong",
             o.token_url);
    assert_string_equal(e.msg.text, want);
    fakehttp_assert_lacks(e.msg.text, secret_text);
    fakehttp_assert_lacks(e.msg.text, "p%26ss");
    assert_int_equal(e.fault, FMC_FAULT_CREDENTIALS);
    assert_int_equal(e.status, 401);
    fmtest_get_fails(c,
                     "c-1",
                     EPROTO,
                     "OAuth POST %s: the reply has no valid access_token",
                     o.token_url);
    fmtest_get_fails(c,
                     "c-1",
                     EPROTO,
                     "OAuth POST %s: HTTP 200 reply is not JSON",
                     o.token_url);
    /* A token endpoint's 404 is not the FM saying the job is gone. */
    fmtest_get_fails(
        c, "c-1", EIO, "OAuth POST %s: HTTP 404: no such realm", o.token_url);
    assert_null(token);
    /* No FM request went out without a token. */
    fmtest_finish_expect(c, s, 4, -1);
    oauth_end(&o);
    free(html);
}

/* The token endpoint's statuses through the same map: its 400 refuses
 * the client's credentials (RFC 6749's invalid_client), its 5xx is an
 * outage, and its 404 or 507 says nothing about an FM job.
 */
static void test_oauth_token_faults(void **state)
{
    static const struct {
        int status;
        int err;
        enum fmc_fault fault;
    } cases[] = {
        {400, EACCES, FMC_FAULT_CREDENTIALS},
        {403, EACCES, FMC_FAULT_CREDENTIALS},
        {503, EIO, FMC_FAULT_UNAVAILABLE},
        {404, EIO, FMC_FAULT_REQUEST},
        {507, EIO, FMC_FAULT_UNAVAILABLE},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct oauth o;
    (void)state;

    struct fakehttp *s = oauth_begin(&o, (int)n, NULL);
    for (size_t i = 0; i < n; i++)
        fakehttp_add_json(s,
                          fmtest_token_post,
                          cases[i].status,
                          "{\"error\":\"invalid_client\"}",
                          1);
    struct fmc *c = oauth_client(&o);
    for (size_t i = 0; i < n; i++) {
        struct fmc_error e = {.fault = FMC_FAULT_NONE};
        char *token = NULL;
        assert_fails(fmc_job_get(c, "c-1", &token, &e), cases[i].err);
        assert_int_equal(e.fault, cases[i].fault);
        assert_int_equal(e.status, cases[i].status);
    }
    /* No FM request went out without a token. */
    fmtest_finish_expect(c, s, (int)n, -1);
    oauth_end(&o);
}

/* ---- concurrency --------------------------------------------------------- */

struct worker {
    struct fmc *c;
    int ok;     /* calls that returned the expected token */
    int failed; /* calls that did not */
    char error[160];
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    for (int i = 0; i < 5; i++) {
        struct fmc_error e = {.fault = FMC_FAULT_NONE};
        char *token = NULL;
        if (fmc_job_get(w->c, "c-1", &token, &e) == 0 && token
            && strcmp(token, "st") == 0)
            w->ok++;
        else {
            w->failed++;
            snprintf(w->error, sizeof(w->error), "%s", e.msg.text);
        }
        fmc_free_secret(token);
    }
    return NULL;
}

static void test_concurrent_calls(void **state)
{
    enum { NTHREADS = 6 };
    struct oauth o;
    pthread_t threads[NTHREADS];
    struct worker w[NTHREADS];
    (void)state;

    struct fakehttp *s = oauth_begin(
        &o, 1 + NTHREADS * 5, "{\"access_token\":\"AT1\",\"expires_in\":300}");
    fakehttp_add_json(s, fmtest_job_c1, 200, "{\"sessionToken\":\"st\"}", -1);
    struct fmc *c = oauth_client(&o);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){.c = c};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &w[i]),
                         0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        if (w[i].failed)
            fail_msg("worker %d: %s", i, w[i].error);
        assert_int_equal(w[i].ok, 5);
    }
    /* One token for everyone; at most one connection per pooled handle. */
    fmtest_finish_expect(c, s, 1 + NTHREADS * 5, -1);
    int tokens = 0;
    for (int i = 0; i < s->nrequests; i++)
        tokens += strncmp(fakehttp_request(s, i),
                          fmtest_token_post,
                          strlen(fmtest_token_post))
                  == 0;
    assert_int_equal(tokens, 1);
    /* Connections are reused: never more than one per calling thread
     * (the client's pool is larger than NTHREADS).
     */
    assert_true(s->accepted >= 1 && s->accepted <= NTHREADS);
    oauth_end(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_oauth_cached),
        cmocka_unit_test(test_basic_echo_scrubbed),
        cmocka_unit_test(test_oauth_echo_scrubbed),
        cmocka_unit_test(test_oauth_refresh_on_401),
        cmocka_unit_test(test_oauth_refresh_fails),
        cmocka_unit_test(test_oauth_expiry),
        cmocka_unit_test(test_oauth_token_refused),
        cmocka_unit_test(test_oauth_token_faults),
        cmocka_unit_test(test_concurrent_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
