/* Unit tests for the Fabric Manager client (fmclient/fmclient.c).
 *
 * No FM is needed: a small HTTP server runs in a thread of the test on an
 * ephemeral loopback port.  It accepts any number of connections, records
 * every request it receives and answers each with the first canned reply
 * whose request-line prefix matches and that is not used up, so a test
 * states the exact exchange it expects (GET 404, then POST, ...).  The
 * tests check what goes on the wire (request line, headers, body), how
 * replies and failures come back (token, errno, the exact message), and
 * that no secret ever reaches a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vnib/fmclient.h"

#define MAX_CANNED 8
#define MAX_CONNS 8
#define MAX_REQUESTS 64

/* One canned answer. */
struct canned {
    const char *match; /* prefix of the request line it answers */
    const char *reply; /* the full HTTP response; NULL: big_body bytes */
    int uses;          /* times it may still answer; -1: unlimited */
};

/* One client connection of the server. */
struct conn {
    int fd;
    char buf[16384];
    size_t len;
};

struct server {
    int fd;                           /* listening socket */
    int port;                         /* its port */
    pthread_t thread;                 /* serves the connections */
    struct canned canned[MAX_CANNED]; /* answers, first match wins */
    int ncanned;
    atomic_int expect;            /* requests to answer, then stop */
    size_t big_body;              /* size of a NULL reply's body */
    int accepted;                 /* connections accepted */
    int unmatched;                /* requests no canned reply fit */
    atomic_int nrequests;         /* requests received (the test may
                                     read it while the server runs) */
    char *requests[MAX_REQUESTS]; /* each request, in order */
};

/* ---- the in-test HTTP server --------------------------------------------- */

static int listen_any(int *portp)
{
    struct sockaddr_in sin = {0};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    *portp = ntohs(sin.sin_port);
    return fd;
}

static void send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0)
            return; /* the client gave up: expected for the size cap */
        buf += n;
        len -= (size_t)n;
    }
}

static void send_big(int fd, size_t size)
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
    send_all(fd, head, strlen(head));
    for (size_t sent = 0; sent < size; sent += CHUNK) {
        if (send(fd, chunk, CHUNK, MSG_NOSIGNAL) <= 0)
            break;
    }
    free(chunk);
}

/* Length of the complete request at the start of buf, or 0. */
static size_t request_length(const char *buf, size_t len)
{
    const char *end = NULL;
    size_t clen = 0;

    for (size_t i = 0; !end && i + 4 <= len; i++) {
        if (memcmp(buf + i, "\r\n\r\n", 4) == 0)
            end = buf + i;
    }
    if (!end)
        return 0;
    for (const char *l = buf; l < end; l = strstr(l, "\r\n") + 2) {
        if (strncasecmp(l, "Content-Length:", 15) == 0)
            clen = strtoul(l + 15, NULL, 10);
    }
    size_t total = (size_t)(end + 4 - buf) + clen;
    return len >= total ? total : 0;
}

static const struct canned *pick(struct server *s, const char *request)
{
    for (int i = 0; i < s->ncanned; i++) {
        struct canned *c = &s->canned[i];
        if (c->uses != 0 && strncmp(request, c->match, strlen(c->match)) == 0) {
            if (c->uses > 0)
                c->uses--;
            return c;
        }
    }
    return NULL;
}

/* Answer every complete request buffered on a connection. */
static void serve_buffered(struct server *s, struct conn *c)
{
    static const char no_match[] =
        "HTTP/1.1 599 No Canned Reply\r\nContent-Length: 0\r\n\r\n";
    size_t n;

    while ((n = request_length(c->buf, c->len)) > 0) {
        char *req = strndup(c->buf, n);
        if (!req)
            return;
        const struct canned *k = pick(s, req);
        if (s->nrequests < MAX_REQUESTS)
            s->requests[s->nrequests] = req;
        else
            free(req);
        s->nrequests++;
        if (!k) {
            s->unmatched++;
            send_all(c->fd, no_match, strlen(no_match));
        } else if (!k->reply)
            send_big(c->fd, s->big_body);
        else
            send_all(c->fd, k->reply, strlen(k->reply));
        memmove(c->buf, c->buf + n, c->len - n);
        c->len -= n;
    }
}

static void *server_main(void *arg)
{
    struct server *s = arg;
    struct conn *conns = calloc(MAX_CONNS, sizeof(*conns));
    int idle_ms = 0;

    if (!conns)
        return NULL;
    for (int i = 0; i < MAX_CONNS; i++)
        conns[i].fd = -1;
    /* Serve until the expected requests are answered and 100 ms passed
     * without another (an unexpected request is recorded), or 5 s idle.
     */
    while (idle_ms < (s->nrequests >= s->expect ? 100 : 5000)) {
        struct pollfd p[MAX_CONNS + 1];
        p[0] = (struct pollfd){.fd = s->fd, .events = POLLIN};
        for (int i = 0; i < MAX_CONNS; i++)
            p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        int rc = poll(p, MAX_CONNS + 1, 20);
        if (rc <= 0) {
            idle_ms += 20;
            continue;
        }
        idle_ms = 0;
        if (p[0].revents & POLLIN) {
            int fd = accept(s->fd, NULL, NULL);
            for (int i = 0; fd >= 0 && i < MAX_CONNS; i++) {
                if (conns[i].fd < 0) {
                    conns[i].fd = fd;
                    conns[i].len = 0;
                    fd = -1;
                    s->accepted++;
                }
            }
            if (fd >= 0)
                close(fd);
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            struct conn *c = &conns[i];
            if (c->fd < 0 || !(p[i + 1].revents & (POLLIN | POLLHUP)))
                continue;
            ssize_t n =
                recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
            if (n <= 0) {
                close(c->fd);
                c->fd = -1;
                continue;
            }
            c->len += (size_t)n;
            serve_buffered(s, c);
        }
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (conns[i].fd >= 0)
            close(conns[i].fd);
    }
    free(conns);
    return NULL;
}

static struct server *server_new(int expect)
{
    struct server *s = calloc(1, sizeof(*s));

    assert_non_null(s);
    s->fd = listen_any(&s->port);
    s->expect = expect;
    return s;
}

static void server_add(struct server *s,
                       const char *match,
                       const char *reply,
                       int uses)
{
    assert_true(s->ncanned < MAX_CANNED);
    s->canned[s->ncanned++] = (struct canned){match, reply, uses};
}

static void server_run(struct server *s)
{
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

/* Wait for the server thread; the requests can be read afterwards. */
static void server_join(struct server *s)
{
    assert_int_equal(pthread_join(s->thread, NULL), 0);
    assert_int_equal(s->unmatched, 0);
}

static void server_free(struct server *s)
{
    for (int i = 0; i < s->nrequests && i < MAX_REQUESTS; i++)
        free(s->requests[i]);
    close(s->fd);
    free(s);
}

/* The i-th request received. */
static const char *request(const struct server *s, int i)
{
    assert_true(i < s->nrequests);
    return s->requests[i];
}

static const char *request_body(const struct server *s, int i)
{
    const char *p = strstr(request(s, i), "\r\n\r\n");
    assert_non_null(p);
    return p + 4;
}

/* A canned response with a correct Content-Length (caller frees). */
static char *reply_json(int status, const char *body)
{
    size_t size = strlen(body) + 256;
    char *buf = malloc(size);

    assert_non_null(buf);
    snprintf(buf,
             size,
             "HTTP/1.1 %d Canned\r\n"
             "Content-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             status,
             strlen(body),
             body);
    return buf;
}

/* ---- helpers ------------------------------------------------------------- */

static void assert_prefix(const char *text, const char *prefix)
{
    assert_non_null(text);
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", text, prefix);
}

static void assert_contains(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("'%s' does not contain '%s'", text, part);
}

static void assert_lacks(const char *text, const char *part)
{
    if (strstr(text, part))
        fail_msg("'%s' contains '%s'", text, part);
}

/* A private temporary directory for credential files. */
struct tmpdir {
    char path[64];
    char files[4][128];
    int nfiles;
};

static void tmpdir_init(struct tmpdir *t)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->path, sizeof(t->path), "/tmp/fmc-test-XXXXXX");
    assert_non_null(mkdtemp(t->path));
}

/* Write a file in t with the given mode; returns its path. */
static const char *tmpdir_file(struct tmpdir *t,
                               const char *name,
                               const char *content,
                               mode_t mode)
{
    char *path = t->files[t->nfiles++];
    char buf[sizeof(t->files[0])];
    int fd;

    snprintf(buf, sizeof(buf), "%s/%s", t->path, name);
    memcpy(path, buf, sizeof(buf));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)),
                     (ssize_t)strlen(content));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
    return path;
}

static void tmpdir_cleanup(struct tmpdir *t)
{
    for (int i = 0; i < t->nfiles; i++)
        unlink(t->files[i]);
    rmdir(t->path);
}

/* A configuration pointing at a server, with a base path to prove the
 * client keeps it.
 */
static struct fmc_config config_for(const struct server *s, char *url)
{
    snprintf(url, 64, "http://127.0.0.1:%d/apis/fm/", s->port);
    return (struct fmc_config){.url = url, .auth = "none", .tls_verify = true};
}

static struct fmc *create_ok(const struct fmc_config *cfg)
{
    vnib_error_t e = {""};
    struct fmc *c = fmc_create(cfg, &e);

    if (!c)
        fail_msg("fmc_create: %s", e.text);
    return c;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec)
           + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static const char job_c1[] = "GET /apis/fm/fabric/collectives/jobs/c-1 ";
static const char job_c7[] = "GET /apis/fm/fabric/collectives/jobs/c-7 ";
static const char post_jobs[] = "POST /apis/fm/fabric/collectives/jobs ";
static const char token_post[] = "POST /token ";

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

/* ---- creation ------------------------------------------------------------ */

static void check_refused(const struct fmc_config *cfg,
                          int err,
                          const char *want)
{
    vnib_error_t e = {""};

    errno = 0;
    assert_null(fmc_create(cfg, &e));
    assert_int_equal(errno, err);
    assert_string_equal(e.text, want);
}

static void test_create_refusals(void **state)
{
    struct tmpdir t;
    char want[256];
    (void)state;

    tmpdir_init(&t);
    const char *pw_ok = tmpdir_file(&t, "passwd", "hunter2\n", 0600);
    const char *pw_open = tmpdir_file(&t, "passwd-open", "hunter2\n", 0644);
    const char *key_open = tmpdir_file(&t, "key.pem", "KEY\n", 0640);
    const char *empty = tmpdir_file(&t, "empty", "\n", 0600);

    check_refused(NULL, EINVAL, "no FM configuration given");
    check_refused(&(struct fmc_config){.url = NULL}, EINVAL, "no FM URL given");
    check_refused(&(struct fmc_config){.url = "ftp://fm/"},
                  EINVAL,
                  "the FM URL is not an http:// or https:// URL: 'ftp://fm/'");
    check_refused(&(struct fmc_config){.url = "https://u:hunter2@fm/"},
                  EINVAL,
                  "the FM URL must not contain user information (use the "
                  "credential files)");
    check_refused(&(struct fmc_config){.url = "https://fm/?x=1"},
                  EINVAL,
                  "the FM URL must not have a query or fragment");
    check_refused(&(struct fmc_config){.url = "https://fm/a b"},
                  EINVAL,
                  "the FM URL contains a space, control or non-ASCII "
                  "character");
    check_refused(&(struct fmc_config){.url = "https://fm", .auth = "kerberos"},
                  EINVAL,
                  "unknown FM auth 'kerberos' (want none, basic or oauth)");
    check_refused(
        &(struct fmc_config){
            .url = "https://fm", .auth = "basic", .password_file = pw_ok},
        EINVAL,
        "FM basic auth needs a user without spaces, ':' or "
        "control characters");
    check_refused(
        &(struct fmc_config){
            .url = "https://fm", .auth = "basic", .user = "cxi"},
        EINVAL,
        "no FM password file given");
    snprintf(want,
             sizeof(want),
             "%s: mode 0644 is unsafe: a credential file must not be "
             "accessible by group or others (chmod 600)",
             pw_open);
    check_refused(&(struct fmc_config){.url = "https://fm",
                                       .auth = "basic",
                                       .user = "cxi",
                                       .password_file = pw_open},
                  EPERM,
                  want);
    snprintf(want,
             sizeof(want),
             "%s: the FM password is empty or contains a NUL byte",
             empty);
    check_refused(&(struct fmc_config){.url = "https://fm",
                                       .auth = "basic",
                                       .user = "cxi",
                                       .password_file = empty},
                  EINVAL,
                  want);
    check_refused(&(struct fmc_config){.url = "https://fm", .auth = "oauth"},
                  EINVAL,
                  "no OAuth token URL given");
    check_refused(&(struct fmc_config){.url = "https://fm",
                                       .auth = "oauth",
                                       .token_url = "https://kc/token"},
                  EINVAL,
                  "FM OAuth needs a client id");
    check_refused(&(struct fmc_config){.url = "https://fm",
                                       .auth = "oauth",
                                       .token_url = "https://kc/token",
                                       .client_id = "wlm"},
                  EINVAL,
                  "no OAuth client secret file given");
    snprintf(want,
             sizeof(want),
             "%s: mode 0644 is unsafe: a credential file must not be "
             "accessible by group or others (chmod 600)",
             pw_open);
    check_refused(&(struct fmc_config){.url = "https://fm",
                                       .auth = "oauth",
                                       .token_url = "https://kc/token",
                                       .client_id = "wlm",
                                       .client_secret_file = pw_open},
                  EPERM,
                  want);
    check_refused(
        &(struct fmc_config){.url = "https://fm", .cert_file = pw_open},
        EINVAL,
        "FM mTLS needs both a client certificate and its key");
    snprintf(want,
             sizeof(want),
             "%s: mode 0640 is unsafe: a credential file must not be "
             "accessible by group or others (chmod 600)",
             key_open);
    check_refused(
        &(struct fmc_config){
            .url = "https://fm", .cert_file = pw_open, .key_file = key_open},
        EPERM,
        want);
    snprintf(want, sizeof(want), "%s/nope: No such file or directory", t.path);
    char missing[96];
    snprintf(missing, sizeof(missing), "%s/nope", t.path);
    check_refused(&(struct fmc_config){.url = "https://fm", .ca_file = missing},
                  ENOENT,
                  want);
    tmpdir_cleanup(&t);
}

static void test_create_ok(void **state)
{
    struct tmpdir t;
    (void)state;

    tmpdir_init(&t);
    const char *pw = tmpdir_file(&t, "passwd", "hunter2\n", 0600);
    const char *cert = tmpdir_file(&t, "cert.pem", "CERT\n", 0644);
    const char *key = tmpdir_file(&t, "key.pem", "KEY\n", 0600);
    struct fmc *c = create_ok(&(struct fmc_config){.url = "https://fm.example",
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
    vnib_error_t e = {""};
    char *token = NULL;
    int port;
    close(listen_any(&port));
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", port);
    c = create_ok(&(struct fmc_config){.url = url,
                                       .ca_file = cert,
                                       .cert_file = cert,
                                       .key_file = key,
                                       .tls_verify = true});
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, ECONNREFUSED);
    errno = EEXIST;
    fmc_destroy(c);
    assert_int_equal(errno, EEXIST);
    fmc_destroy(NULL);
    fmc_free_secret(NULL);
    fmc_free_ids(NULL, 0);
    assert_int_equal(errno, EEXIST);
    /* NULL auth means none. */
    fmc_destroy(create_ok(&(struct fmc_config){.url = "http://fm"}));
    tmpdir_cleanup(&t);
}

static void test_invalid_arguments(void **state)
{
    vnib_error_t e = {""};
    char *token = (char *)"x";
    char **ids = NULL;
    size_t count = 9;
    (void)state;

    struct fmc *c =
        create_ok(&(struct fmc_config){.url = "http://127.0.0.1:1"});
    errno = 0;
    assert_int_equal(fmc_job_get(c, "", &token, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_null(token);
    assert_string_equal(e.text, "no FM job id given");
    errno = 0;
    assert_int_equal(fmc_job_reserve(c, "c-1", 0, 0, &token, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "mcastLimit 0 is not positive");
    errno = 0;
    assert_int_equal(fmc_job_release_step(c, "c-1", "", &e), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(fmc_job_delete(c, NULL, &e), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(fmc_job_list(c, "", &ids, &count, &e), -1);
    assert_int_equal(errno, EINVAL);
    fmc_destroy(c);
}

/* ---- GET ----------------------------------------------------------------- */

static void test_get_ok(void **state)
{
    char *ok =
        reply_json(200,
                   "{\"jobID\":\"c-1\",\"mcastLimit\":23,\"jobSteps\":{},"
                   "\"sessionToken\":\"st-abc.123\",\"future\":[1]}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, job_c1, ok, 1);
    server_add(
        s, "GET /apis/fm/fabric/collectives/jobs/c-1%2Fx%20y%3F ", ok, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    assert_string_equal(token, "st-abc.123");
    assert_string_equal(e.text, "");
    fmc_free_secret(token);
    /* Job ids are percent-encoded in the path. */
    assert_int_equal(fmc_job_get(c, "c-1/x y?", &token, &e), 0);
    fmc_free_secret(token);
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 2);
    assert_int_equal(s->accepted, 1);
    assert_prefix(request(s, 0),
                  "GET /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n");
    assert_contains(request(s, 0), "\r\nAccept: application/json\r\n");
    assert_lacks(request(s, 0), "Authorization");
    assert_lacks(request(s, 0), "Content-Type");
    server_free(s);
    free(ok);
}

static void test_get_not_found(void **state)
{
    char *missing = reply_json(404, "{\"detail\":\"no such job\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = (char *)"x";
    (void)state;

    struct server *s = server_new(1);
    server_add(s, "GET /apis/fm/fabric/collectives/jobs/c-2 ", missing, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-2", &token, &e), -1);
    assert_int_equal(errno, ENOENT);
    assert_null(token);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-2: HTTP 404: no "
                        "such job");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(missing);
}

/* ---- reserve ------------------------------------------------------------- */

static void test_reserve_creates_on_404(void **state)
{
    char *missing = reply_json(404, "{}");
    char *created = reply_json(201, "{\"sessionToken\":\"st-new\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, job_c7, missing, 1);
    server_add(s, post_jobs, created, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_reserve(c, "c-7", 23, 0, &token, &e), 0);
    assert_string_equal(token, "st-new");
    assert_string_equal(e.text, "");
    fmc_free_secret(token);
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 2);
    assert_int_equal(s->accepted, 1);
    assert_prefix(request(s, 0),
                  "GET /apis/fm/fabric/collectives/jobs/c-7 HTTP/1.1\r\n");
    assert_prefix(request(s, 1),
                  "POST /apis/fm/fabric/collectives/jobs HTTP/1.1\r\n");
    assert_contains(request(s, 1), "\r\nContent-Type: application/json\r\n");
    assert_lacks(request(s, 1), "Expect:");
    assert_string_equal(request_body(s, 1),
                        "{\"jobID\":\"c-7\",\"mcastLimit\":23}");
    server_free(s);
    free(missing);
    free(created);
}

static void test_reserve_existing_no_post(void **state)
{
    char *found = reply_json(200, "{\"sessionToken\":\"st-old\"}");
    char url[64];
    char *token = NULL;
    (void)state;

    struct server *s = server_new(1);
    server_add(s, job_c7, found, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_reserve(c, "c-7", 23, 0, &token, NULL), 0);
    assert_string_equal(token, "st-old");
    fmc_free_secret(token);
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 1);
    assert_prefix(request(s, 0),
                  "GET /apis/fm/fabric/collectives/jobs/c-7 HTTP/1.1\r\n");
    server_free(s);
    free(found);
}

static void test_reserve_conflict_gets_again(void **state)
{
    char *missing = reply_json(404, "{}");
    char *conflict = reply_json(409, "{\"message\":\"exists\"}");
    char *found = reply_json(200, "{\"sessionToken\":\"st-theirs\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(3);
    server_add(s, job_c7, missing, 1);
    server_add(s, post_jobs, conflict, 1);
    server_add(s, job_c7, found, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_reserve(c, "c-7", 5, 0, &token, &e), 0);
    assert_string_equal(token, "st-theirs");
    assert_string_equal(e.text, "");
    fmc_free_secret(token);
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 3);
    assert_prefix(request(s, 2),
                  "GET /apis/fm/fabric/collectives/jobs/c-7 HTTP/1.1\r\n");
    server_free(s);
    free(missing);
    free(conflict);
    free(found);
}

/* fmc_job_create: one POST for a job id never sent before. */
static void test_create_posts_once(void **state)
{
    char *created = reply_json(201, "{\"sessionToken\":\"st-new\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(1);
    server_add(s, post_jobs, created, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_create(c, "c-7", 23, 0, &token, &e), 0);
    assert_string_equal(token, "st-new");
    assert_string_equal(e.text, "");
    fmc_free_secret(token);
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 1);
    assert_prefix(request(s, 0),
                  "POST /apis/fm/fabric/collectives/jobs HTTP/1.1\r\n");
    assert_string_equal(request_body(s, 0),
                        "{\"jobID\":\"c-7\",\"mcastLimit\":23}");
    server_free(s);
    free(created);
}

/* fmc_job_create on a job that exists after all: 409, then its token. */
static void test_create_conflict_gets(void **state)
{
    char *conflict = reply_json(409, "{\"message\":\"exists\"}");
    char *found = reply_json(200, "{\"sessionToken\":\"st-old\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, post_jobs, conflict, 1);
    server_add(s, job_c7, found, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_create(c, "c-7", 23, 0, &token, &e), 0);
    assert_string_equal(token, "st-old");
    fmc_free_secret(token);
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 2);
    assert_prefix(request(s, 0),
                  "POST /apis/fm/fabric/collectives/jobs HTTP/1.1\r\n");
    assert_prefix(request(s, 1),
                  "GET /apis/fm/fabric/collectives/jobs/c-7 HTTP/1.1\r\n");
    server_free(s);
    free(conflict);
    free(found);
}

static void test_reserve_conflict_then_gone(void **state)
{
    char *missing = reply_json(404, "{}");
    char *conflict = reply_json(409, "{}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(3);
    server_add(s, job_c7, missing, 2);
    server_add(s, post_jobs, conflict, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_reserve(c, "c-7", 5, 0, &token, &e), -1);
    assert_int_equal(errno, EIO);
    assert_null(token);
    assert_prefix(e.text,
                  "FM POST /fabric/collectives/jobs: HTTP 409, yet the job "
                  "is not found: FM GET /fabric/collectives/jobs/c-7: HTTP "
                  "404");
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 3);
    server_free(s);
    free(missing);
    free(conflict);
}

static void test_reserve_out_of_addresses(void **state)
{
    char *missing = reply_json(404, "{}");
    char *full =
        reply_json(507, "{\"message\":\"01: job mcastLimit reached\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, job_c7, missing, 1);
    server_add(s, post_jobs, full, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_reserve(c, "c-7", 23, 0, &token, &e), -1);
    assert_int_equal(errno, ENOSPC);
    assert_null(token);
    assert_string_equal(e.text,
                        "FM POST /fabric/collectives/jobs: HTTP 507: 01: job "
                        "mcastLimit reached");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(missing);
    free(full);
}

static void test_reserve_reply_without_token(void **state)
{
    char *missing = reply_json(404, "{}");
    char *created = reply_json(201, "{\"jobID\":\"c-7\"}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, job_c7, missing, 1);
    server_add(s, post_jobs, created, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_reserve(c, "c-7", 23, 0, &token, &e), -1);
    assert_int_equal(errno, EPROTO);
    assert_string_equal(e.text,
                        "FM POST /fabric/collectives/jobs: HTTP 201 reply has "
                        "no valid sessionToken");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(missing);
    free(created);
}

/* ---- PATCH and DELETE ---------------------------------------------------- */

static void test_release_step(void **state)
{
    char *ok = reply_json(200, "{\"jobID\":\"c-1\"}");
    char *missing = reply_json(404, "{}");
    char *broken = reply_json(500, "{\"detail\":\"tree busy\"}");
    char url[64];
    vnib_error_t e = {""};
    (void)state;

    struct server *s = server_new(3);
    server_add(s, "PATCH /apis/fm/fabric/collectives/jobs/c-1 ", ok, 1);
    server_add(s, "PATCH /apis/fm/fabric/collectives/jobs/c-1 ", missing, 1);
    server_add(s, "PATCH /apis/fm/fabric/collectives/jobs/c-1 ", broken, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_release_step(c, "c-1", "3", &e), 0);
    assert_int_equal(fmc_job_release_step(c, "c-1", "3", &e), 0);
    assert_string_equal(e.text, "");
    errno = 0;
    assert_int_equal(fmc_job_release_step(c, "c-1", "4", &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM PATCH /fabric/collectives/jobs/c-1: HTTP 500: "
                        "tree busy");
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 3);
    assert_prefix(request(s, 0),
                  "PATCH /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n");
    assert_contains(request(s, 0), "\r\nContent-Type: application/json\r\n");
    assert_string_equal(request_body(s, 0), "{\"jobSteps\":{\"3\":null}}");
    assert_string_equal(request_body(s, 2), "{\"jobSteps\":{\"4\":null}}");
    server_free(s);
    free(ok);
    free(missing);
    free(broken);
}

static void test_delete(void **state)
{
    static const char no_content[] = "HTTP/1.1 204 No Content\r\n\r\n";
    char *missing = reply_json(404, "{}");
    char *busy = reply_json(503, "{\"message\":\"99: busy\"}");
    char *html = reply_json(502, "<html>bad gateway</html>");
    char url[64];
    vnib_error_t e = {""};
    (void)state;

    struct server *s = server_new(4);
    server_add(
        s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", no_content, 1);
    server_add(s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", missing, 1);
    server_add(s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", busy, 1);
    server_add(s, "DELETE /apis/fm/fabric/collectives/jobs/c-1 ", html, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_delete(c, "c-1", &e), 0);
    assert_int_equal(fmc_job_delete(c, "c-1", &e), 0);
    assert_string_equal(e.text, "");
    errno = 0;
    assert_int_equal(fmc_job_delete(c, "c-1", &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM DELETE /fabric/collectives/jobs/c-1: HTTP 503: 99: "
                        "busy");
    /* A gateway's HTML error page: the status is what counts. */
    errno = 0;
    assert_int_equal(fmc_job_delete(c, "c-1", &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM DELETE /fabric/collectives/jobs/c-1: HTTP 502");
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 4);
    assert_int_equal(s->accepted, 1);
    assert_prefix(request(s, 0),
                  "DELETE /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n");
    assert_lacks(request(s, 0), "Content-Type");
    assert_lacks(request(s, 0), "Content-Length");
    server_free(s);
    free(missing);
    free(busy);
    free(html);
}

/* ---- list ---------------------------------------------------------------- */

static void test_list_prefix(void **state)
{
    char *list = reply_json(
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
    vnib_error_t e = {""};
    char **ids = NULL;
    size_t count = 0;
    (void)state;

    struct server *s = server_new(1);
    server_add(s, "GET /apis/fm/fabric/collectives/jobs/ ", list, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_list(c, "c", &ids, &count, &e), 0);
    assert_int_equal(count, 4);
    assert_string_equal(ids[0], "c-1");
    assert_string_equal(ids[1], "c-22");
    assert_string_equal(ids[2], "c-a b");
    assert_string_equal(ids[3], "c-7");
    fmc_free_ids(ids, count);
    fmc_destroy(c);
    server_join(s);
    assert_prefix(request(s, 0),
                  "GET /apis/fm/fabric/collectives/jobs/ HTTP/1.1\r\n");
    server_free(s);
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
    vnib_error_t e = {""};
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
    char *list = reply_json(200, body);
    struct server *s = server_new(1);
    server_add(s, "GET /apis/fm/fabric/collectives/jobs/ ", list, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    cfg.max_response = 4 * 1024 * 1024;
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_list(c, "c", &ids, &count, &e), 0);
    assert_int_equal(count, N);
    assert_string_equal(ids[0], "c-0-r1");
    assert_string_equal(ids[N - 1], "c-3999-r4000");
    fmc_free_ids(ids, count);
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(list);
    free(body);
}

static void test_list_empty_and_bad(void **state)
{
    char *empty = reply_json(200, "{\"documentLinks\":[]}");
    char *bad = reply_json(200, "{\"documents\":{}}");
    char url[64];
    vnib_error_t e = {""};
    char **ids = NULL;
    size_t count = 9;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, "GET /apis/fm/fabric/collectives/jobs/ ", empty, 1);
    server_add(s, "GET /apis/fm/fabric/collectives/jobs/ ", bad, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_list(c, "cluster", &ids, &count, &e), 0);
    assert_int_equal(count, 0);
    fmc_free_ids(ids, count);
    errno = 0;
    assert_int_equal(fmc_job_list(c, "cluster", &ids, &count, &e), -1);
    assert_int_equal(errno, EPROTO);
    assert_null(ids);
    assert_int_equal(count, 0);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/: the reply has no "
                        "documentLinks list");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(empty);
    free(bad);
}

/* ---- replies that are errors --------------------------------------------- */

static void test_server_error_detail(void **state)
{
    char *detail = reply_json(500, "{\"detail\":\"database unavailable\"}");
    char *message = reply_json(418, "{\"message\":\"short and stout\"}");
    char *bare = reply_json(500, "{}");
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(3);
    server_add(s, job_c1, detail, 1);
    server_add(s, job_c1, message, 1);
    server_add(s, job_c1, bare, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 500: "
                        "database unavailable");
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 418: short "
                        "and stout");
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 500");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(detail);
    free(message);
    free(bare);
}

static void test_not_json(void **state)
{
    char *html = reply_json(200, "<html>hello</html>");
    static const char empty[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(2);
    server_add(s, job_c1, html, 1);
    server_add(s, job_c1, empty, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EPROTO);
    assert_null(token);
    assert_string_equal(
        e.text,
        "FM GET /fabric/collectives/jobs/c-1: HTTP 200 reply is "
        "not JSON");
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EPROTO);
    assert_string_equal(
        e.text,
        "FM GET /fabric/collectives/jobs/c-1: HTTP 200 reply is "
        "empty");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    free(html);
}

static void test_reply_too_large(void **state)
{
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    struct server *s = server_new(1);
    s->big_body = 1024 * 1024;
    server_add(s, job_c1, NULL, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    cfg.max_response = 4096;
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EMSGSIZE);
    assert_null(token);
    assert_string_equal(
        e.text,
        "FM GET /fabric/collectives/jobs/c-1: reply larger than "
        "4096 bytes");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
}

/* ---- transport failures -------------------------------------------------- */

static void test_refused(void **state)
{
    char url[64];
    vnib_error_t e = {""};
    char *token = (char *)"x";
    int port;
    (void)state;

    close(listen_any(&port)); /* a port that was just free, now closed */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct fmc *c = create_ok(&(struct fmc_config){.url = url});
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, ECONNREFUSED);
    assert_null(token);
    assert_prefix(e.text,
                  "FM GET /fabric/collectives/jobs/c-1: cannot reach the "
                  "server: ");
    errno = 0;
    assert_int_equal(fmc_job_delete(c, "c-1", &e), -1);
    assert_int_equal(errno, ECONNREFUSED);
    fmc_destroy(c);
}

static void test_timeout(void **state)
{
    char url[64];
    vnib_error_t e = {""};
    char *token = NULL;
    struct timespec t0;
    int port;
    (void)state;

    /* Listening, never accepting: the kernel completes the handshake and
     * the request then waits for an answer that never comes.
     */
    int fd = listen_any(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct fmc *c =
        create_ok(&(struct fmc_config){.url = url, .timeout_ms = 300});
    clock_gettime(CLOCK_MONOTONIC, &t0);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, ETIMEDOUT);
    double secs = seconds_since(&t0);
    assert_true(secs >= 0.25 && secs < 3.0);
    assert_prefix(e.text, "FM GET /fabric/collectives/jobs/c-1: timed out: ");
    fmc_destroy(c);

    /* The reserve call's own timeout bounds the whole call. */
    c = create_ok(&(struct fmc_config){.url = url, .timeout_ms = 30000});
    clock_gettime(CLOCK_MONOTONIC, &t0);
    errno = 0;
    assert_int_equal(fmc_job_reserve(c, "c-1", 23, 300, &token, &e), -1);
    assert_int_equal(errno, ETIMEDOUT);
    assert_null(token);
    secs = seconds_since(&t0);
    assert_true(secs >= 0.25 && secs < 3.0);
    fmc_destroy(c);
    close(fd);
}

/* ---- Basic --------------------------------------------------------------- */

static void test_basic(void **state)
{
    char *found = reply_json(200, "{\"sessionToken\":\"st\"}");
    char *echo = reply_json(500, "{\"detail\":\"password s3cret is wrong\"}");
    char url[64];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    const char *pw1 = tmpdir_file(&t, "pw1", "s3cret\n", 0600);
    const char *pw2 = tmpdir_file(&t, "pw2", "p@ss w0rd:x", 0400);
    struct server *s = server_new(3);
    server_add(s, job_c1, found, 2);
    server_add(s, job_c1, echo, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    cfg.auth = "basic";
    cfg.user = "cxi";
    cfg.password_file = pw1;
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    fmc_free_secret(token);
    fmc_destroy(c);
    cfg.password_file = pw2;
    c = create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    fmc_free_secret(token);
    fmc_destroy(c);
    cfg.password_file = pw1;
    c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    /* A server quoting the password does not get it into the message. */
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 500: "
                        "password *** is wrong");
    assert_lacks(e.text, "s3cret");
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 3);
    assert_contains(request(s, 0),
                    "\r\nAuthorization: Basic Y3hpOnMzY3JldA==\r\n");
    assert_contains(request(s, 1),
                    "\r\nAuthorization: Basic Y3hpOnBAc3MgdzByZDp4\r\n");
    server_free(s);
    tmpdir_cleanup(&t);
    free(found);
    free(echo);
}

/* A server echoing the Authorization header (base64 of user:password)
 * or the password in its error gets neither into the message.
 */
static void test_basic_echo_scrubbed(void **state)
{
    char *echo = reply_json(403,
                            "{\"detail\":\"bad Authorization: Basic "
                            "Y3hpOnMzY3JldA== (cxi:s3cret)\"}");
    char url[64];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    const char *pw = tmpdir_file(&t, "pw", "s3cret\n", 0600);
    struct server *s = server_new(1);
    server_add(s, job_c1, echo, 1);
    server_run(s);
    struct fmc_config cfg = config_for(s, url);
    cfg.auth = "basic";
    cfg.user = "cxi";
    cfg.password_file = pw;
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 403: "
                        "bad Authorization: Basic *** (cxi:***)");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    tmpdir_cleanup(&t);
    free(echo);
}

/* ---- OAuth --------------------------------------------------------------- */

static const char secret_text[] = "p&ss=+w%rd";

/* An OAuth configuration against s, the client secret in t. */
static struct fmc_config oauth_config(const struct server *s,
                                      struct tmpdir *t,
                                      char *url,
                                      char *token_url)
{
    struct fmc_config cfg = config_for(s, url);
    char secret[64];

    snprintf(token_url, 64, "http://127.0.0.1:%d/token", s->port);
    snprintf(secret, sizeof(secret), "%s\n", secret_text);
    cfg.auth = "oauth";
    cfg.token_url = token_url;
    cfg.client_id = "vnib broker";
    cfg.client_secret_file = tmpdir_file(t, "client-secret", secret, 0600);
    return cfg;
}

static void test_oauth_cached(void **state)
{
    char *tok = reply_json(200,
                           "{\"access_token\":\"AT1\",\"expires_in\":300,"
                           "\"token_type\":\"Bearer\",\"scope\":\"openid\"}");
    char *found = reply_json(200, "{\"sessionToken\":\"st\"}");
    char url[64];
    char token_url[64];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    struct server *s = server_new(4);
    server_add(s, token_post, tok, 1);
    server_add(s, job_c1, found, -1);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
        assert_string_equal(token, "st");
        fmc_free_secret(token);
    }
    fmc_destroy(c);
    server_join(s);
    /* One token request for three calls, all on one connection. */
    assert_int_equal(s->nrequests, 4);
    assert_int_equal(s->accepted, 1);
    assert_prefix(request(s, 0), "POST /token HTTP/1.1\r\n");
    assert_contains(request(s, 0),
                    "\r\nContent-Type: application/x-www-form-urlencoded\r\n");
    assert_lacks(request(s, 0), "Authorization");
    assert_string_equal(request_body(s, 0),
                        "grant_type=client_credentials&client_id=vnib%20broker"
                        "&client_secret=p%26ss%3D%2Bw%25rd&scope=openid");
    for (int i = 1; i < 4; i++) {
        assert_prefix(request(s, i),
                      "GET /apis/fm/fabric/collectives/jobs/c-1 HTTP/1.1\r\n");
        assert_contains(request(s, i), "\r\nAuthorization: Bearer AT1\r\n");
    }
    server_free(s);
    tmpdir_cleanup(&t);
    free(tok);
    free(found);
}

/* An OAuth server or FM echoing the token form (the client secret
 * percent-encoded, in either case), client_id:secret's base64 or the
 * access token gets none of them into the message.
 */
static void test_oauth_echo_scrubbed(void **state)
{
    char *refused = reply_json(
        401,
        "{\"error_description\":\"bad client_secret=p%26ss%3D%2Bw%25rd, "
        "p%26ss%3d%2bw%25rd, dm5pYiBicm9rZXI6cCZzcz0rdyVyZA==, p&ss=+w%rd\"}");
    char *tok =
        reply_json(200, "{\"access_token\":\"AT1secret\",\"expires_in\":300}");
    char *echo = reply_json(
        500, "{\"detail\":\"Authorization: Bearer AT1secret rejected\"}");
    char url[64];
    char token_url[64];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    struct server *s = server_new(3);
    server_add(s, token_post, refused, 1);
    server_add(s, token_post, tok, 1);
    server_add(s, job_c1, echo, 1);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_prefix(e.text, "OAuth POST http://127.0.0.1:");
    assert_contains(e.text,
                    "/token: HTTP 401: bad client_secret=***, ***, ***, ***");
    assert_lacks(e.text, "p&ss");
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 500: "
                        "Authorization: Bearer *** rejected");
    fmc_destroy(c);
    server_join(s);
    server_free(s);
    tmpdir_cleanup(&t);
    free(refused);
    free(tok);
    free(echo);
}

static void test_oauth_refresh_on_401(void **state)
{
    char *tok1 =
        reply_json(200, "{\"access_token\":\"AT1\",\"expires_in\":300}");
    char *tok2 =
        reply_json(200, "{\"access_token\":\"AT2\",\"expires_in\":300}");
    char *tok3 = reply_json(200, "{\"access_token\":\"AT3\"}");
    char *denied = reply_json(401, "{\"detail\":\"token expired\"}");
    char *forbidden = reply_json(403, "{}");
    char *found = reply_json(200, "{\"sessionToken\":\"st\"}");
    char url[64];
    char token_url[64];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    struct server *s = server_new(7);
    server_add(s, token_post, tok1, 1);
    server_add(s, job_c1, denied, 1);
    server_add(s, token_post, tok2, 1);
    server_add(s, job_c1, found, 1);
    server_add(s, job_c1, forbidden, 1); /* CSM says 403 when expired */
    server_add(s, token_post, tok3, 1);
    server_add(s, job_c1, found, 1);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    assert_string_equal(token, "st");
    fmc_free_secret(token);
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), 0);
    fmc_free_secret(token);
    assert_string_equal(e.text, "");
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, 7);
    assert_prefix(request(s, 0), "POST /token ");
    assert_contains(request(s, 1), "\r\nAuthorization: Bearer AT1\r\n");
    assert_prefix(request(s, 2), "POST /token ");
    assert_contains(request(s, 3), "\r\nAuthorization: Bearer AT2\r\n");
    assert_contains(request(s, 4), "\r\nAuthorization: Bearer AT2\r\n");
    assert_prefix(request(s, 5), "POST /token ");
    assert_contains(request(s, 6), "\r\nAuthorization: Bearer AT3\r\n");
    server_free(s);
    tmpdir_cleanup(&t);
    free(tok1);
    free(tok2);
    free(tok3);
    free(denied);
    free(forbidden);
    free(found);
}

static void test_oauth_refresh_fails(void **state)
{
    char *tok1 =
        reply_json(200, "{\"access_token\":\"AT1\",\"expires_in\":300}");
    char *tok2 =
        reply_json(200, "{\"access_token\":\"AT2\",\"expires_in\":300}");
    char *denied = reply_json(401, "{\"detail\":\"token expired\"}");
    char url[64];
    char token_url[64];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = (char *)"x";
    (void)state;

    tmpdir_init(&t);
    struct server *s = server_new(4);
    server_add(s, token_post, tok1, 1);
    server_add(s, token_post, tok2, 1);
    server_add(s, job_c1, denied, 2);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_null(token);
    assert_string_equal(e.text,
                        "FM GET /fabric/collectives/jobs/c-1: HTTP 401: token "
                        "expired");
    fmc_destroy(c);
    server_join(s);
    /* Exactly one refresh and one retry. */
    assert_int_equal(s->nrequests, 4);
    assert_prefix(request(s, 0), "POST /token ");
    assert_prefix(request(s, 1), "GET ");
    assert_prefix(request(s, 2), "POST /token ");
    assert_contains(request(s, 3), "\r\nAuthorization: Bearer AT2\r\n");
    server_free(s);
    tmpdir_cleanup(&t);
    free(tok1);
    free(tok2);
    free(denied);
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
    char *tok1 = reply_json(200, "{\"access_token\":\"AT1\",\"expires_in\":2}");
    char *tok2 = reply_json(200, "{\"access_token\":\"AT2\",\"expires_in\":2}");
    char *found = reply_json(200, "{\"sessionToken\":\"st\"}");
    char url[64];
    char token_url[64];
    struct tmpdir t;
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    /* How many requests come is known only at the end (expect below). */
    struct server *s = server_new(MAX_REQUESTS);
    server_add(s, token_post, tok1, 1);
    server_add(s, token_post, tok2, 1);
    server_add(s, job_c1, found, -1);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
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
    assert_true(calls + 2 <= MAX_REQUESTS);
    s->expect = calls + 2;
    fmc_destroy(c);
    server_join(s);
    assert_int_equal(s->nrequests, calls + 2);
    assert_prefix(request(s, 0), "POST /token ");
    for (int i = 1; i < calls; i++)
        assert_contains(request(s, i), "\r\nAuthorization: Bearer AT1\r\n");
    assert_prefix(request(s, calls), "POST /token ");
    assert_contains(request(s, calls + 1), "\r\nAuthorization: Bearer AT2\r\n");
    server_free(s);
    tmpdir_cleanup(&t);
    free(tok1);
    free(tok2);
    free(found);
}

static void test_oauth_token_refused(void **state)
{
    char *refused = reply_json(401,
                               "{\"error\":\"unauthorized_client\","
                               "\"error_description\":\"client secret "
                               "'p&ss=+w%rd' is wrong\"}");
    char *bad = reply_json(200, "{\"access_token\":\"A T\"}");
    char *html = reply_json(200, "<html></html>");
    char *missing = reply_json(404, "{\"detail\":\"no such realm\"}");
    char url[64];
    char token_url[64];
    char want[160];
    struct tmpdir t;
    vnib_error_t e = {""};
    char *token = NULL;
    (void)state;

    tmpdir_init(&t);
    struct server *s = server_new(4);
    server_add(s, token_post, refused, 1);
    server_add(s, token_post, bad, 1);
    server_add(s, token_post, html, 1);
    server_add(s, token_post, missing, 1);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EACCES);
    snprintf(want,
             sizeof(want),
             "OAuth POST %s: HTTP 401: client secret '***' is wrong",
             token_url);
    assert_string_equal(e.text, want);
    assert_lacks(e.text, secret_text);
    assert_lacks(e.text, "p%26ss");
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EPROTO);
    snprintf(want,
             sizeof(want),
             "OAuth POST %s: the reply has no valid access_token",
             token_url);
    assert_string_equal(e.text, want);
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EPROTO);
    snprintf(want,
             sizeof(want),
             "OAuth POST %s: HTTP 200 reply is not JSON",
             token_url);
    assert_string_equal(e.text, want);
    /* A token endpoint's 404 is not the FM saying the job is gone. */
    errno = 0;
    assert_int_equal(fmc_job_get(c, "c-1", &token, &e), -1);
    assert_int_equal(errno, EIO);
    snprintf(want,
             sizeof(want),
             "OAuth POST %s: HTTP 404: no such realm",
             token_url);
    assert_string_equal(e.text, want);
    assert_null(token);
    fmc_destroy(c);
    server_join(s);
    /* No FM request went out without a token. */
    assert_int_equal(s->nrequests, 4);
    server_free(s);
    tmpdir_cleanup(&t);
    free(refused);
    free(bad);
    free(html);
    free(missing);
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
        vnib_error_t e = {""};
        char *token = NULL;
        if (fmc_job_get(w->c, "c-1", &token, &e) == 0 && token
            && strcmp(token, "st") == 0)
            w->ok++;
        else {
            w->failed++;
            snprintf(w->error, sizeof(w->error), "%s", e.text);
        }
        fmc_free_secret(token);
    }
    return NULL;
}

static void test_concurrent_calls(void **state)
{
    enum { NTHREADS = 6 };
    char *tok =
        reply_json(200, "{\"access_token\":\"AT1\",\"expires_in\":300}");
    char *found = reply_json(200, "{\"sessionToken\":\"st\"}");
    char url[64];
    char token_url[64];
    struct tmpdir t;
    pthread_t threads[NTHREADS];
    struct worker w[NTHREADS];
    (void)state;

    tmpdir_init(&t);
    struct server *s = server_new(1 + NTHREADS * 5);
    server_add(s, token_post, tok, 1);
    server_add(s, job_c1, found, -1);
    server_run(s);
    struct fmc_config cfg = oauth_config(s, &t, url, token_url);
    struct fmc *c = create_ok(&cfg);
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
    fmc_destroy(c);
    server_join(s);
    /* One token for everyone; at most one connection per pooled handle. */
    assert_int_equal(s->nrequests, 1 + NTHREADS * 5);
    int tokens = 0;
    for (int i = 0; i < s->nrequests; i++)
        tokens += strncmp(request(s, i), token_post, strlen(token_post)) == 0;
    assert_int_equal(tokens, 1);
    /* Connections are reused: never more than one per calling thread
     * (the client's pool is larger than NTHREADS).
     */
    assert_true(s->accepted >= 1 && s->accepted <= NTHREADS);
    server_free(s);
    tmpdir_cleanup(&t);
    free(tok);
    free(found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addrs_per_job),
        cmocka_unit_test(test_create_refusals),
        cmocka_unit_test(test_create_ok),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_get_ok),
        cmocka_unit_test(test_get_not_found),
        cmocka_unit_test(test_reserve_creates_on_404),
        cmocka_unit_test(test_reserve_existing_no_post),
        cmocka_unit_test(test_reserve_conflict_gets_again),
        cmocka_unit_test(test_reserve_conflict_then_gone),
        cmocka_unit_test(test_create_posts_once),
        cmocka_unit_test(test_create_conflict_gets),
        cmocka_unit_test(test_reserve_out_of_addresses),
        cmocka_unit_test(test_reserve_reply_without_token),
        cmocka_unit_test(test_release_step),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_list_prefix),
        cmocka_unit_test(test_list_large),
        cmocka_unit_test(test_list_empty_and_bad),
        cmocka_unit_test(test_server_error_detail),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_reply_too_large),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_oauth_cached),
        cmocka_unit_test(test_basic_echo_scrubbed),
        cmocka_unit_test(test_oauth_echo_scrubbed),
        cmocka_unit_test(test_oauth_refresh_on_401),
        cmocka_unit_test(test_oauth_refresh_fails),
        cmocka_unit_test(test_oauth_expiry),
        cmocka_unit_test(test_oauth_token_refused),
        cmocka_unit_test(test_concurrent_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
