/* Unit tests for the REST client library (lib/client.c).
 *
 * No broker is needed: a tiny HTTP server runs in a thread of the test on
 * an ephemeral loopback port, records the requests it receives and
 * answers each with a canned reply.  It checks what goes on the wire
 * (request line, Authorization header, body) and how replies, refusals
 * and transport failures come back (status, parsed JSON, errno and the
 * exact message).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vnib/client.h"

#define MAX_REPLIES 4

/* One in-test HTTP server: one connection, one canned reply per request. */
struct server {
    int fd;                           /* listening socket */
    int port;                         /* its port */
    pthread_t thread;                 /* serves the connection */
    const char *replies[MAX_REPLIES]; /* full HTTP responses, in order */
    int nreplies;
    size_t big_body;      /* > 0: answer 200 with this many bytes instead */
    int accepted;         /* connections accepted */
    char requests[16384]; /* every request received, concatenated */
    size_t reqlen;
};

/* A loopback socket listening on an ephemeral port. */
static int listen_any(int *portp)
{
    struct sockaddr_in sin = {0};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    *portp = ntohs(sin.sin_port);
    return fd;
}

static int wait_readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms);
}

/* Read one request (headers and Content-Length body) into s->requests. */
static int read_request(struct server *s, int conn)
{
    size_t start = s->reqlen;
    size_t need = 0;
    char *end = NULL;

    for (;;) {
        if (end && s->reqlen >= need)
            return 0;
        if (s->reqlen + 1 >= sizeof(s->requests)
            || wait_readable(conn, 5000) <= 0)
            return -1;
        ssize_t n = recv(conn,
                         s->requests + s->reqlen,
                         sizeof(s->requests) - s->reqlen - 1,
                         0);
        if (n <= 0)
            return -1;
        s->reqlen += (size_t)n;
        s->requests[s->reqlen] = '\0';
        if (!end && (end = strstr(s->requests + start, "\r\n\r\n"))) {
            size_t clen = 0;
            for (char *l = s->requests + start; l < end;
                 l = strstr(l, "\r\n") + 2) {
                if (strncasecmp(l, "Content-Length:", 15) == 0)
                    clen = strtoul(l + 15, NULL, 10);
            }
            need = (size_t)(end + 4 - s->requests) + clen;
        }
    }
}

static void send_all(int conn, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(conn, buf, len, MSG_NOSIGNAL);
        if (n <= 0)
            return; /* the client gave up: expected for the size cap */
        buf += n;
        len -= (size_t)n;
    }
}

static void send_big(int conn, size_t size)
{
    enum { CHUNK = 65536 };
    char head[128];
    char *chunk = malloc(CHUNK);

    if (!chunk)
        return;
    memset(chunk, ' ', CHUNK);
    snprintf(head,
             sizeof(head),
             "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
             size);
    send_all(conn, head, strlen(head));
    for (size_t sent = 0; sent < size; sent += CHUNK) {
        ssize_t n = send(conn, chunk, CHUNK, MSG_NOSIGNAL);
        if (n <= 0)
            break;
    }
    free(chunk);
}

static void *server_main(void *arg)
{
    struct server *s = arg;
    int conn;

    if (wait_readable(s->fd, 5000) <= 0)
        return NULL;
    if ((conn = accept(s->fd, NULL, NULL)) < 0)
        return NULL;
    s->accepted++;
    for (int i = 0; i < s->nreplies; i++) {
        if (read_request(s, conn) < 0)
            break;
        if (s->big_body)
            send_big(conn, s->big_body);
        else
            send_all(conn, s->replies[i], strlen(s->replies[i]));
    }
    /* A second connection would be a failure of keep-alive. */
    if (wait_readable(s->fd, 50) > 0) {
        int again = accept(s->fd, NULL, NULL);
        if (again >= 0) {
            s->accepted++;
            close(again);
        }
    }
    close(conn);
    return NULL;
}

static struct server *server_start(const char *reply)
{
    struct server *s = calloc(1, sizeof(*s));

    assert_non_null(s);
    s->fd = listen_any(&s->port);
    s->replies[0] = reply;
    s->nreplies = 1;
    return s;
}

static void server_run(struct server *s)
{
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

/* Wait for the server thread; the requests can be read afterwards. */
static void server_join(struct server *s)
{
    assert_int_equal(pthread_join(s->thread, NULL), 0);
}

static void server_free(struct server *s)
{
    close(s->fd);
    free(s);
}

static struct vnib_client *client_for(const struct server *s, const char *token)
{
    char url[64];
    vnib_error_t e = {""};
    struct vnib_client *c;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
    c = vnib_client_create(url, token, &e);
    assert_non_null(c);
    assert_string_equal(e.text, "");
    return c;
}

/* Assert that text starts with prefix. */
static void assert_prefix(const char *text, const char *prefix)
{
    assert_non_null(text);
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", text, prefix);
}

/* A canned JSON response with a correct Content-Length. */
static char *reply_json(int status, const char *reason, const char *body)
{
    size_t size = strlen(body) + 256;
    char *buf = malloc(size);
    assert_non_null(buf);
    assert_true(snprintf(buf,
                         size,
                         "HTTP/1.1 %d %s\r\n"
                         "Content-Type: application/json\r\n"
                         "X-Request-Id: r-1\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         status,
                         reason,
                         strlen(body),
                         body)
                > 0);
    return buf;
}

/* The body of the first request (after the blank line). */
static const char *request_body(const struct server *s)
{
    const char *p = strstr(s->requests, "\r\n\r\n");
    assert_non_null(p);
    return p + 4;
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
    vnib_error_t e = {""};
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
        vnib_error_t e = {""};
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
    vnib_error_t e = {""};
    struct vnib_client *c;
    (void)state;

    assert_int_equal(vnib_client_global_init(), 0);
    c = vnib_client_create("https://broker.example:8443/vnib//", NULL, &e);
    assert_non_null(c);
    assert_string_equal(vnib_client_url(c), "https://broker.example:8443/vnib");
    errno = 0;
    assert_int_equal(vnib_client_set_timeout_ms(c, 0), -1);
    assert_int_equal(errno, EINVAL);
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
    vnib_error_t e = {""};
    json_t *reply = json_true(); /* must be reset to NULL */
    int port;
    (void)state;

    /* A port that was just free and is now closed. */
    close(listen_any(&port));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct vnib_client *c = vnib_client_create(url, "tok", &e);
    assert_non_null(c);
    errno = 0;
    assert_int_equal(
        vnib_client_request(c, "GET", "/healthz", NULL, &reply, &e), -1);
    assert_int_equal(errno, ECONNREFUSED);
    assert_null(reply);
    snprintf(want, sizeof(want), "cannot reach the broker at %s: ", url);
    assert_prefix(e.text, want);
    assert_null(strstr(e.text, "tok"));
    vnib_client_destroy(c);
}

static void test_timeout(void **state)
{
    char want[128];
    vnib_error_t e = {""};
    struct timespec t0, t1;
    (void)state;

    /* Listening, never accepting: the kernel completes the handshake and
     * the request then waits for an answer that never comes.
     */
    struct server *s = server_start(NULL);
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
    assert_prefix(e.text, want);
    double secs = (double)(t1.tv_sec - t0.tv_sec)
                  + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs >= 0.25 && secs < 3.0);
    vnib_client_destroy(c);
    server_free(s);
}

/* ---- replies ------------------------------------------------------------- */

/* Run one request against a server answering `canned`; returns the server
 * (joined) for the caller to inspect and free.
 */
static struct server *one_request(const char *canned,
                                  const char *token,
                                  const char *method,
                                  const char *path,
                                  json_t *body,
                                  int *rcp,
                                  json_t **replyp,
                                  vnib_error_t *errp)
{
    struct server *s = server_start(canned);
    server_run(s);
    struct vnib_client *c = client_for(s, token);
    *rcp = vnib_client_request(c, method, path, body, replyp, errp);
    vnib_client_destroy(c);
    server_join(s);
    return s;
}

static void test_get_ok(void **state)
{
    char *canned =
        reply_json(200, "OK", "{\"status\":\"ok\",\"version\":\"x\"}");
    vnib_error_t e = {""};
    json_t *reply = NULL;
    int rc;
    (void)state;

    struct server *s = one_request(
        canned, "vnib1.secret-token", "GET", "/healthz", NULL, &rc, &reply, &e);
    assert_int_equal(rc, 200);
    assert_string_equal(e.text, "");
    assert_non_null(reply);
    assert_string_equal(json_string_value(json_object_get(reply, "status")),
                        "ok");
    assert_prefix(s->requests, "GET /healthz HTTP/1.1\r\n");
    assert_non_null(strstr(s->requests,
                           "\r\nAuthorization: Bearer vnib1.secret-token\r\n"));
    assert_non_null(strstr(s->requests, "\r\nAccept: application/json\r\n"));
    assert_null(strstr(s->requests, "Content-Type"));
    assert_int_equal(s->accepted, 1);
    json_decref(reply);
    server_free(s);
    free(canned);
}

static void test_no_token_no_header(void **state)
{
    char *canned = reply_json(200, "OK", "{\"status\":\"ready\"}");
    json_t *reply = NULL;
    int rc;
    (void)state;

    struct server *s =
        one_request(canned, NULL, "GET", "/readyz", NULL, &rc, &reply, NULL);
    assert_int_equal(rc, 200);
    assert_null(strstr(s->requests, "Authorization"));
    assert_null(strstr(s->requests, "authorization"));
    json_decref(reply);
    server_free(s);
    free(canned);
}

static void test_error_reply(void **state)
{
    char *canned = reply_json(
        409,
        "Conflict",
        "{\"error\":{\"code\":\"reservation_conflict\",\"message\":\"job 7 "
        "is active with other parameters\",\"request_id\":\"r-1\"}}");
    vnib_error_t e = {""};
    json_t *reply = NULL;
    int rc;
    (void)state;

    errno = 0;
    struct server *s = one_request(
        canned, "tok", "GET", "/v1/reservations/7", NULL, &rc, &reply, &e);
    assert_int_equal(rc, 409);
    assert_int_equal(errno, 0);
    assert_string_equal(e.text,
                        "reservation_conflict: job 7 is active with other "
                        "parameters");
    assert_non_null(reply);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(reply, "error"), "request_id")),
                        "r-1");
    json_decref(reply);
    server_free(s);
    free(canned);
}

static void test_error_reply_without_code(void **state)
{
    char *canned = reply_json(500, "Internal Server Error", "{\"oops\":1}");
    vnib_error_t e = {""};
    int rc;
    (void)state;

    /* No replyp: the reply is freed, the status still comes back. */
    struct server *s =
        one_request(canned, "tok", "GET", "/v1/pool", NULL, &rc, NULL, &e);
    assert_int_equal(rc, 500);
    assert_string_equal(e.text,
                        "http_500: the broker's reply has no error code");
    server_free(s);
    free(canned);
}

static void test_not_json(void **state)
{
    char want[160];
    const char *canned =
        "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n"
        "Content-Length: 11\r\n\r\n<html></ht>";
    vnib_error_t e = {""};
    json_t *reply = json_true();
    int rc;
    (void)state;

    errno = 0;
    struct server *s =
        one_request(canned, "tok", "GET", "/v1/pool", NULL, &rc, &reply, &e);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    assert_null(reply);
    snprintf(want,
             sizeof(want),
             "GET http://127.0.0.1:%d/v1/pool: HTTP 502 reply is not JSON (",
             s->port);
    assert_prefix(e.text, want);
    server_free(s);
}

static void test_empty_reply(void **state)
{
    char want[160];
    const char *canned = "HTTP/1.1 204 No Content\r\n\r\n";
    vnib_error_t e = {""};
    int rc;
    (void)state;

    errno = 0;
    struct server *s = one_request(
        canned, "tok", "DELETE", "/v1/nodes/n1/drain", NULL, &rc, NULL, &e);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    snprintf(want,
             sizeof(want),
             "DELETE http://127.0.0.1:%d/v1/nodes/n1/drain: HTTP 204 reply "
             "is not JSON (empty body)",
             s->port);
    assert_string_equal(e.text, want);
    assert_prefix(s->requests, "DELETE /v1/nodes/n1/drain HTTP/1.1\r\n");
    server_free(s);
}

static void test_reply_too_large(void **state)
{
    char want[160];
    vnib_error_t e = {""};
    int rc;
    (void)state;

    struct server *s = server_start(NULL);
    s->big_body = VNIB_CLIENT_MAX_REPLY + 65536;
    server_run(s);
    struct vnib_client *c = client_for(s, "tok");
    errno = 0;
    rc = vnib_client_request(c, "GET", "/v1/events", NULL, NULL, &e);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    snprintf(want,
             sizeof(want),
             "http://127.0.0.1:%d: reply larger than 16 MiB",
             s->port);
    assert_string_equal(e.text, want);
    vnib_client_destroy(c);
    server_join(s);
    server_free(s);
}

static void test_invalid_requests(void **state)
{
    vnib_error_t e = {""};
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
    char *canned = reply_json(201, "Created", "{\"job_id\":\"job/1\"}");
    vnib_error_t e = {""};
    json_t *reply = NULL;
    (void)state;

    struct server *s = server_start(canned);
    server_run(s);
    struct vnib_client *c = client_for(s, "tok");
    struct vnib_reserve r = {.job_id = "job/1",
                             .uid = 4294967294u,
                             .user = "alice",
                             .nodes = "tux[0-3]",
                             .vni_count = 2,
                             .hwcoll = "on"};
    assert_int_equal(vnib_client_reserve(c, &r, &reply, &e), 201);
    vnib_client_destroy(c);
    server_join(s);
    assert_prefix(s->requests, "POST /v1/reservations HTTP/1.1\r\n");
    assert_non_null(
        strstr(s->requests, "\r\nContent-Type: application/json\r\n"));
    assert_null(strstr(s->requests, "Expect:"));
    assert_string_equal(request_body(s),
                        "{\"job_id\":\"job/1\",\"uid\":4294967294,\"user\":"
                        "\"alice\",\"nodes\":\"tux[0-3]\",\"vni_count\":2,"
                        "\"hwcoll\":\"on\"}");
    assert_string_equal(json_string_value(json_object_get(reply, "job_id")),
                        "job/1");
    json_decref(reply);
    server_free(s);
    free(canned);
}

static void test_reserve_default_count(void **state)
{
    char *canned = reply_json(200, "OK", "{}");
    (void)state;

    struct server *s = server_start(canned);
    server_run(s);
    struct vnib_client *c = client_for(s, "tok");
    struct vnib_reserve r = {.job_id = "42",
                             .uid = 0,
                             .user = "root",
                             .nodes = "n1",
                             .vni_count = -1};
    assert_int_equal(vnib_client_reserve(c, &r, NULL, NULL), 200);
    vnib_client_destroy(c);
    server_join(s);
    assert_string_equal(request_body(s),
                        "{\"job_id\":\"42\",\"uid\":0,\"user\":\"root\","
                        "\"nodes\":\"n1\"}");
    server_free(s);
    free(canned);
}

static void test_get_and_release(void **state)
{
    char *ok = reply_json(200, "OK", "{\"state\":\"active\"}");
    char *accepted = reply_json(202, "Accepted", "{\"state\":\"releasing\"}");
    char *forced = reply_json(200, "OK", "{\"state\":\"released\"}");
    json_t *reply = NULL;
    (void)state;

    /* Three requests on one kept-alive connection. */
    struct server *s = server_start(ok);
    s->replies[1] = accepted;
    s->replies[2] = forced;
    s->nreplies = 3;
    server_run(s);
    struct vnib_client *c = client_for(s, "tok");
    assert_int_equal(vnib_client_get_reservation(c, "job/1", &reply, NULL),
                     200);
    assert_string_equal(json_string_value(json_object_get(reply, "state")),
                        "active");
    json_decref(reply);
    assert_int_equal(vnib_client_release(c, "..", 0, false, &reply, NULL), 202);
    assert_string_equal(json_string_value(json_object_get(reply, "state")),
                        "releasing");
    json_decref(reply);
    assert_int_equal(vnib_client_release(c, "a b", 0, true, NULL, NULL), 200);
    vnib_client_destroy(c);
    server_join(s);
    assert_int_equal(s->accepted, 1);
    const char *p = s->requests;
    assert_prefix(p, "GET /v1/reservations/job%2F1 HTTP/1.1\r\n");
    p = strstr(p, "\r\n\r\n") + 4;
    assert_prefix(p, "DELETE /v1/reservations/%2E%2E HTTP/1.1\r\n");
    p = strstr(p, "\r\n\r\n") + 4;
    assert_prefix(p, "DELETE /v1/reservations/a%20b?force=true HTTP/1.1\r\n");
    assert_null(strstr(p, "Content-Length"));
    server_free(s);
    free(ok);
    free(accepted);
    free(forced);
}

static void test_report(void **state)
{
    char *canned = reply_json(200, "OK", "{}");
    json_t *services = json_pack("[{s:s, s:i}]", "device", "cxi0", "svc_id", 5);
    (void)state;

    struct server *s = server_start(canned);
    server_run(s);
    struct vnib_client *c = client_for(s, "tok");
    struct vnib_report r = {.job_id = "42",
                            .node = "n 1",
                            .cxi = "created",
                            .services = services,
                            .message = "ok \"x\"",
                            .reservation = 7};
    assert_int_equal(vnib_client_report(c, &r, NULL, NULL), 200);
    vnib_client_destroy(c);
    server_join(s);
    assert_prefix(s->requests,
                  "PUT /v1/reservations/42/nodes/n%201 HTTP/1.1\r\n");
    assert_string_equal(request_body(s),
                        "{\"cxi\":\"created\",\"services\":[{\"device\":"
                        "\"cxi0\",\"svc_id\":5}],\"reservation_id\":7,"
                        "\"message\":\"ok \\\"x\\\"\"}");
    /* Borrowed: still ours. */
    assert_int_equal(services->refcount, 1);
    json_decref(services);
    server_free(s);
    free(canned);
}

static void test_report_minimal(void **state)
{
    char *canned = reply_json(409, "Conflict", "{\"error\":{\"code\":\"x\"}}");
    vnib_error_t e = {""};
    (void)state;

    struct server *s = server_start(canned);
    server_run(s);
    struct vnib_client *c = client_for(s, "tok");
    struct vnib_report r = {.job_id = "42", .node = "n1", .cxi = "destroyed"};
    assert_int_equal(vnib_client_report(c, &r, NULL, &e), 409);
    assert_string_equal(e.text, "x: HTTP 409");
    vnib_client_destroy(c);
    server_join(s);
    assert_string_equal(request_body(s), "{\"cxi\":\"destroyed\"}");
    server_free(s);
    free(canned);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
