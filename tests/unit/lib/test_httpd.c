/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the libmicrohttpd request pipeline (lib/httpd.c).
 *
 * Each test starts an httpd on 127.0.0.1 port 0 with a small handler
 * table and drives it with plain sockets: a body over the cap (announced,
 * or sent chunked) is answered 413 in JSON; a malformed request line 400;
 * a handler's JSON reply and headers arrive intact and the request's
 * headers are read; a suspended request is answered once resumed; a
 * client that stalls mid-request neither blocks another nor outlives the
 * request deadline; past the connection budget a new connection displaces
 * the oldest waiting one of the address holding the most, never one from
 * a priority block; and stopping with a request in flight completes it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vnib/httpd.h"

#define BODY_CAP 64

struct fixture {
    struct httpd *httpd;
    struct logger *log;
    atomic_int done;      /* done() calls */
    atomic_int done_term; /* the last one's termination code */
};

static int reply_413(struct httpd_req *r, const char *what)
{
    return httpd_reply_json(r, 413, json_pack("{s:s}", "error", what), NULL);
}

/* A request parked by /park: a thread keeps its reply and resumes it. */
static void *park_main(void *arg)
{
    struct httpd_req *r = arg;
    struct timespec ts = {0, 50 * 1000000};

    nanosleep(&ts, NULL);
    r->data = (void *)"resumed";
    httpd_resume(r);
    return NULL;
}

static int on_begin(void *cls, struct httpd_req *r)
{
    (void)cls;
    r->body_max = BODY_CAP;
    r->discard_max = 4096;
    if (httpd_length_over(r, BODY_CAP))
        return reply_413(r, "announced body over the cap");
    return 0;
}

static int on_run(void *cls, struct httpd_req *r)
{
    (void)cls;
    if (r->refused == E2BIG)
        return reply_413(r, "body over the cap");
    if (strcmp(r->url, "/echo") == 0) {
        json_t *body = NULL;
        vnib_error_t err = {0};
        if (httpd_json_object(r->body, r->body_len, "body", &body, &err) < 0)
            return httpd_reply_json(
                r, 400, json_pack("{s:s}", "error", err.text), NULL);
        const char *x = httpd_header(r, "X-Test");
        const char *const hdrs[] = {"X-Reply", "yes", "X-None", NULL, NULL};
        return httpd_reply_json(
            r,
            200,
            json_pack("{s:o, s:s?, s:s}", "echo", body, "x", x, "url", r->url),
            hdrs);
    }
    if (strcmp(r->url, "/park") == 0) {
        pthread_t t;
        if (r->data)
            return httpd_reply_json(
                r, 200, json_pack("{s:s}", "park", (char *)r->data), NULL);
        httpd_suspend(r);
        if (pthread_create(&t, NULL, park_main, r) != 0)
            return -1;
        pthread_detach(t);
        return 0;
    }
    return httpd_reply_json(r, 404, json_pack("{s:s}", "error", "no"), NULL);
}

static void on_done(void *cls, struct httpd_req *r, int term)
{
    struct fixture *f = cls;
    (void)r;
    atomic_store(&f->done_term, term);
    atomic_fetch_add(&f->done, 1);
}

static struct fixture *start_with(bool suspend,
                                  int64_t deadline_ms,
                                  unsigned max_connections,
                                  const struct cidr *prio,
                                  unsigned prio_connections)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct sockaddr_in sa = {0};
    vnib_error_t err = {0};

    assert_non_null(f);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->log = logger_create("test_httpd", LOG_WARNING, 2);
    struct httpd_config cfg = {
        .addr = (struct sockaddr *)&sa,
        .threads = 1,
        .suspend = suspend,
        .max_connections = max_connections,
        .priority = prio,
        .npriority = prio ? 1 : 0,
        .priority_connections = prio_connections,
        .timeout_s = 30,
        .deadline_ms = deadline_ms,
        .deadline_name = "test.deadline_ms",
        .log = f->log,
        .log_burst = 10,
        .handlers = {on_begin, on_run, on_done, f},
    };
    f->httpd = httpd_start(&cfg, &err);
    if (!f->httpd)
        fail_msg("httpd_start: %s", err.text);
    assert_int_not_equal(httpd_port(f->httpd), 0);
    return f;
}

static struct fixture *start(bool suspend, int64_t deadline_ms)
{
    return start_with(suspend, deadline_ms, 16, NULL, 0);
}

static void stop(struct fixture *f)
{
    httpd_stop(f->httpd);
    logger_destroy(f->log);
    free(f);
}

/* A connection to the fixture's port from the loopback address `from`
 * (NULL: any), with a 10 s receive guard.
 */
static int conn_open_from(const struct fixture *f, const char *from)
{
    struct sockaddr_in sa = {0};
    struct timeval tv = {10, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    if (from) {
        struct sockaddr_in src = {0};
        src.sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
    }
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(httpd_port(f->httpd));
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static int conn_open(const struct fixture *f)
{
    return conn_open_from(f, NULL);
}

/* Whether the server has closed fd, waiting up to ms for it. */
static bool closed_within(int fd, int ms)
{
    char c;
    for (int waited = 0;; waited += 10) {
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return true;
        if (waited >= ms)
            return false;
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void send_text(int fd, const char *text)
{
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);
        assert_true(n > 0);
        off += (size_t)n;
    }
}

/* Read until the server closes the connection; -1 on the guard's
 * timeout.
 */
static ssize_t read_all(int fd, char *buf, size_t size)
{
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && len == 0)
            return -1;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == size - 1)
            break;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

/* One request on a new connection; the whole reply into buf. */
static void exchange(const struct fixture *f,
                     const char *request,
                     char *buf,
                     size_t size)
{
    int fd = conn_open(f);
    send_text(fd, request);
    assert_true(read_all(fd, buf, size) > 0);
    close(fd);
}

/* text in reply, ignoring case, or NULL. */
static const char *find_nocase(const char *reply, const char *text)
{
    size_t n = strlen(text);
    for (const char *p = reply; *p; p++) {
        if (strncasecmp(p, text, n) == 0)
            return p;
    }
    return NULL;
}

static int status_of(const char *reply)
{
    int status = 0;
    if (sscanf(reply, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    return status;
}

static json_t *body_of(const char *reply)
{
    const char *body = strstr(reply, "\r\n\r\n");
    assert_non_null(body);
    return json_loads(body + 4, 0, NULL);
}

/* One request on a new connection; assert an error reply with status
 * and {"error": text}.
 */
static void expect_error(const struct fixture *f,
                         const char *request,
                         int status,
                         const char *text)
{
    char buf[4096];

    exchange(f, request, buf, sizeof(buf));
    assert_int_equal(status_of(buf), status);
    json_t *reply = body_of(buf);
    assert_non_null(reply);
    assert_string_equal(json_string_value(json_object_get(reply, "error")),
                        text);
    json_decref(reply);
}

static void test_json_reply_intact(void **state)
{
    struct fixture *f = start(false, 0);
    char buf[4096];
    (void)state;

    exchange(f,
             "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
             "X-Test: hello\r\nContent-Length: 20\r\n\r\n"
             "{\"a\": \"b\", \"n\": [1]}",
             buf,
             sizeof(buf));
    assert_int_equal(status_of(buf), 200);
    assert_non_null(find_nocase(buf, "Content-Type: application/json"));
    assert_non_null(find_nocase(buf, "Cache-Control: no-store"));
    assert_non_null(find_nocase(buf, "X-Reply: yes"));
    assert_null(find_nocase(buf, "X-None"));
    json_t *reply = body_of(buf);
    assert_non_null(reply);
    json_t *want = json_pack("{s:{s:s, s:[i]}, s:s, s:s}",
                             "echo",
                             "a",
                             "b",
                             "n",
                             1,
                             "x",
                             "hello",
                             "url",
                             "/echo");
    assert_true(json_equal(reply, want));
    json_decref(want);
    json_decref(reply);
    assert_int_equal(httpd_inflight(f->httpd), 0);
    assert_int_equal(atomic_load(&f->done), 1);
    assert_int_equal(atomic_load(&f->done_term), 0);
    stop(f);
}

/* A body that is not an object is the handler's 400; a Content-Length
 * over the cap is refused before any body is read.
 */
static void test_error_replies(void **state)
{
    struct fixture *f = start(false, 0);
    (void)state;

    expect_error(f,
                 "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                 "Content-Length: 3\r\n\r\n[1]",
                 400,
                 "the body must be a JSON object");
    expect_error(f,
                 "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                 "Content-Length: 65\r\n\r\n",
                 413,
                 "announced body over the cap");
    assert_int_equal(atomic_load(&f->done), 2);
    stop(f);
}

static void test_chunked_body_over_cap(void **state)
{
    struct fixture *f = start(false, 0);
    char req[1024];
    (void)state;

    /* 40 + 40 bytes: the second chunk crosses the 64-byte cap. */
    snprintf(req,
             sizeof(req),
             "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
             "Transfer-Encoding: chunked\r\n\r\n"
             "28\r\n%040d\r\n28\r\n%040d\r\n0\r\n\r\n",
             0,
             0);
    expect_error(f, req, 413, "body over the cap");
    stop(f);
}

static void test_malformed_request_line(void **state)
{
    struct fixture *f = start(false, 0);
    char buf[4096];
    (void)state;

    exchange(f, "GET /echo HTTP/1.1 junk\r\nHost: t\r\n\r\n", buf, sizeof(buf));
    assert_int_equal(status_of(buf), 400);
    assert_int_equal(atomic_load(&f->done), 0); /* never reached begin() */
    stop(f);
}

static void test_suspended_request_resumes(void **state)
{
    struct fixture *f = start(true, 0);
    char buf[4096];
    (void)state;

    exchange(f,
             "GET /park HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
             buf,
             sizeof(buf));
    assert_int_equal(status_of(buf), 200);
    json_t *reply = body_of(buf);
    assert_string_equal(json_string_value(json_object_get(reply, "park")),
                        "resumed");
    json_decref(reply);
    stop(f);
}

/* A client that stops halfway through its request holds its connection
 * only: another is served meanwhile, and the reaper closes the stalled
 * one once the request deadline has passed.
 */
static void test_slow_client_alone(void **state)
{
    struct fixture *f = start(false, 300);
    char buf[4096];
    (void)state;

    int slow = conn_open(f);
    send_text(slow, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Len");
    exchange(f,
             "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
             "Content-Length: 2\r\n\r\n{}",
             buf,
             sizeof(buf));
    assert_int_equal(status_of(buf), 200);
    /* No reply, and end-of-file (not the 10 s guard) from the reaper. */
    assert_int_equal(read_all(slow, buf, sizeof(buf)), 0);
    close(slow);
    stop(f);
}

/* A request from the address `from` that is sent at once is answered. */
static void served_from(const struct fixture *f, const char *from)
{
    char buf[4096];
    int fd = conn_open_from(f, from);

    send_text(fd,
              "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
              "Content-Length: 2\r\n\r\n{}");
    assert_true(read_all(fd, buf, sizeof(buf)) > 0);
    assert_int_equal(status_of(buf), 200);
    close(fd);
}

/* A budget of 3 and a priority block with 2 of its own. */
static void test_budget_displaces(void **state)
{
    struct cidr prio;
    vnib_error_t e = {0};
    struct httpd_stats st;
    (void)state;

    assert_int_equal(cidr_parse("127.0.0.9", &prio, &e), 0);
    struct fixture *f = start_with(false, 0, 3, &prio, 2);
    int a = conn_open_from(f, "127.0.0.2");
    pause_ms(20);
    int b = conn_open_from(f, "127.0.0.2");
    pause_ms(20);
    int c = conn_open_from(f, "127.0.0.3");
    int p1 = conn_open_from(f, "127.0.0.9");
    int p2 = conn_open_from(f, "127.0.0.9");
    pause_ms(50);
    httpd_get_stats(f->httpd, &st);
    assert_int_equal(st.open, 3);
    assert_int_equal(st.priority_open, 2);

    /* A fourth that sends its request at once is served; 127.0.0.2 holds
     * the most, and a was its first.
     */
    served_from(f, "127.0.0.4");
    assert_true(closed_within(a, 2000));
    assert_false(closed_within(b, 100));
    assert_false(closed_within(c, 0));

    /* d's close freed its place; e fills it.  Then every address holds
     * one, and b is the oldest.
     */
    int e6 = conn_open_from(f, "127.0.0.6");
    pause_ms(20);
    served_from(f, "127.0.0.5");
    assert_true(closed_within(b, 2000));
    assert_false(closed_within(c, 100));
    /* The priority connections were never candidates. */
    assert_false(closed_within(p1, 0));
    assert_false(closed_within(p2, 0));
    /* g fills the place d left.  A third from the priority block is
     * past its budget: it counts in the other one, as the newest, and c,
     * the oldest, is displaced.
     */
    int g = conn_open_from(f, "127.0.0.7");
    pause_ms(20);
    int p3 = conn_open_from(f, "127.0.0.9");
    assert_true(closed_within(c, 2000));
    assert_false(closed_within(p3, 100));
    assert_false(closed_within(e6, 0));
    assert_false(closed_within(g, 0));
    /* A second from e6's address: that address now waits on the most, so
     * the newcomer is the one closed.
     */
    int h1 = conn_open_from(f, "127.0.0.6");
    assert_true(closed_within(h1, 2000));
    assert_false(closed_within(e6, 100));

    httpd_get_stats(f->httpd, &st);
    assert_int_equal(st.displaced, 3);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.priority_open, 2);
    close(a);
    close(b);
    close(c);
    close(p1);
    close(p2);
    close(p3);
    close(e6);
    close(g);
    close(h1);
    stop(f);
}

/* A pool of kept-alive connections, answered and idle, holds no share:
 * its address is not refused, and its oldest idle connection goes before
 * another address's single new one.
 */
static void test_budget_idle_pool(void **state)
{
    struct httpd_stats st;
    char buf[4096];
    int pool[3];
    (void)state;

    struct fixture *f = start_with(false, 0, 4, NULL, 0);
    for (int i = 0; i < 3; i++) {
        pool[i] = conn_open_from(f, "127.0.0.2");
        send_text(pool[i],
                  "POST /echo HTTP/1.1\r\nHost: t\r\n"
                  "Content-Length: 2\r\n\r\n{}");
        ssize_t n = recv(pool[i], buf, sizeof(buf) - 1, 0);
        assert_true(n > 0);
        buf[n] = '\0';
        assert_int_equal(status_of(buf), 200);
        pause_ms(20);
    }
    int lone = conn_open_from(f, "127.0.0.3");
    pause_ms(50);
    served_from(f, "127.0.0.2");
    assert_true(closed_within(pool[0], 2000));
    assert_false(closed_within(pool[1], 100));
    assert_false(closed_within(lone, 0));
    httpd_get_stats(f->httpd, &st);
    assert_int_equal(st.displaced, 1);
    assert_int_equal(st.refused, 0);
    for (int i = 0; i < 3; i++)
        close(pool[i]);
    close(lone);
    stop(f);
}

static void test_stop_with_request_in_flight(void **state)
{
    struct fixture *f = start(false, 0);
    char buf[64];
    (void)state;

    int fd = conn_open(f);
    /* Headers in, body half sent: begin() has run, run() has not. */
    send_text(fd,
              "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n{");
    while (httpd_inflight(f->httpd) == 0) {
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);
    }
    httpd_quiesce(f->httpd);
    httpd_stop(f->httpd);
    assert_int_equal(atomic_load(&f->done), 1);
    assert_int_not_equal(atomic_load(&f->done_term), 0);
    assert_int_equal(read_all(fd, buf, sizeof(buf)), 0);
    close(fd);
    logger_destroy(f->log);
    free(f);
}

static void test_status_of_and_media_type(void **state)
{
    static const struct httpd_status map[] = {
        {EINVAL, 400, "bad_request"},
        {E2BIG, 413, "payload_too_large"},
    };
    (void)state;

    assert_int_equal(httpd_status_of(map, 2, E2BIG)->status, 413);
    assert_null(httpd_status_of(map, 2, ENOENT));
    assert_true(httpd_media_type_is_json("application/json"));
    assert_true(httpd_media_type_is_json(" Application/JSON; charset=utf-8"));
    assert_false(httpd_media_type_is_json("application/jsonx"));
    assert_false(httpd_media_type_is_json(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_reply_intact),
        cmocka_unit_test(test_error_replies),
        cmocka_unit_test(test_chunked_body_over_cap),
        cmocka_unit_test(test_malformed_request_line),
        cmocka_unit_test(test_suspended_request_resumes),
        cmocka_unit_test(test_slow_client_alone),
        cmocka_unit_test(test_budget_displaces),
        cmocka_unit_test(test_budget_idle_pool),
        cmocka_unit_test(test_stop_with_request_in_flight),
        cmocka_unit_test(test_status_of_and_media_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
