/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The unit tests' fake HTTP server (see fakehttp.h). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/common/fakehttp.h"

enum { CONNS_MAX = 8 };

/* One client connection of the server. */
struct conn {
    int fd;
    char buf[16384];
    size_t len;
};

int fakehttp_listen_any(int *portp)
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

static const struct fakehttp_canned *pick(struct fakehttp *s,
                                          const char *request)
{
    for (int i = 0; i < s->ncanned; i++) {
        struct fakehttp_canned *c = &s->canned[i];
        if (c->uses != 0 && strncmp(request, c->match, strlen(c->match)) == 0) {
            if (c->uses > 0)
                c->uses--;
            return c;
        }
    }
    return NULL;
}

/* Answer every complete request buffered on a connection. */
static void serve_buffered(struct fakehttp *s, struct conn *c)
{
    static const char no_match[] =
        "HTTP/1.1 599 No Canned Reply\r\nContent-Length: 0\r\n\r\n";
    size_t n;

    while ((n = request_length(c->buf, c->len)) > 0) {
        char *req = strndup(c->buf, n);
        if (!req)
            return;
        const struct fakehttp_canned *k = pick(s, req);
        if (s->nrequests < FAKEHTTP_MAX_REQUESTS)
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
    struct fakehttp *s = arg;
    struct conn *conns = calloc(CONNS_MAX, sizeof(*conns));
    int idle_ms = 0;

    if (!conns)
        return NULL;
    for (int i = 0; i < CONNS_MAX; i++)
        conns[i].fd = -1;
    /* Serve until the expected requests are answered and 100 ms passed
     * without another (an unexpected request is recorded), or 5 s idle.
     */
    while (idle_ms < (s->nrequests >= s->expect ? 100 : 5000)) {
        struct pollfd p[CONNS_MAX + 1];
        p[0] = (struct pollfd){.fd = s->fd, .events = POLLIN};
        for (int i = 0; i < CONNS_MAX; i++)
            p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        int rc = poll(p, CONNS_MAX + 1, 20);
        if (rc <= 0) {
            idle_ms += 20;
            continue;
        }
        idle_ms = 0;
        if (p[0].revents & POLLIN) {
            int fd = accept(s->fd, NULL, NULL);
            for (int i = 0; fd >= 0 && i < CONNS_MAX; i++) {
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
        for (int i = 0; i < CONNS_MAX; i++) {
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
    for (int i = 0; i < CONNS_MAX; i++) {
        if (conns[i].fd >= 0)
            close(conns[i].fd);
    }
    free(conns);
    return NULL;
}

struct fakehttp *fakehttp_new(int expect)
{
    struct fakehttp *s = calloc(1, sizeof(*s));

    assert_non_null(s);
    s->fd = fakehttp_listen_any(&s->port);
    s->expect = expect;
    return s;
}

void fakehttp_add(struct fakehttp *s,
                  const char *match,
                  const char *reply,
                  int uses)
{
    assert_true(s->ncanned < FAKEHTTP_MAX_CANNED);
    s->canned[s->ncanned++] =
        (struct fakehttp_canned){match, reply, uses, NULL};
}

void fakehttp_run(struct fakehttp *s)
{
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

/* Wait for the server thread; the requests can be read afterwards. */
void fakehttp_join(struct fakehttp *s)
{
    assert_int_equal(pthread_join(s->thread, NULL), 0);
    assert_int_equal(s->unmatched, 0);
}

void fakehttp_free(struct fakehttp *s)
{
    for (int i = 0; i < s->nrequests && i < FAKEHTTP_MAX_REQUESTS; i++)
        free(s->requests[i]);
    for (int i = 0; i < s->ncanned; i++)
        free(s->canned[i].owned);
    close(s->fd);
    free(s);
}

/* The i-th request received. */
const char *fakehttp_request(const struct fakehttp *s, int i)
{
    assert_true(i < s->nrequests);
    return s->requests[i];
}

const char *fakehttp_body(const struct fakehttp *s, int i)
{
    const char *p = strstr(fakehttp_request(s, i), "\r\n\r\n");
    assert_non_null(p);
    return p + 4;
}

/* A canned response with a correct Content-Length (caller frees). */
char *fakehttp_reply_json(int status, const char *body)
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

void fakehttp_add_json(struct fakehttp *s,
                       const char *match,
                       int status,
                       const char *body,
                       int uses)
{
    char *reply = fakehttp_reply_json(status, body);

    fakehttp_add(s, match, reply, uses);
    s->canned[s->ncanned - 1].owned = reply;
}

void fakehttp_assert_prefix(const char *text, const char *prefix)
{
    assert_non_null(text);
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", text, prefix);
}

void fakehttp_assert_contains(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("'%s' does not contain '%s'", text, part);
}

void fakehttp_assert_lacks(const char *text, const char *part)
{
    if (strstr(text, part))
        fail_msg("'%s' contains '%s'", text, part);
}

void fakehttp_assert_request(const struct fakehttp *s,
                             int i,
                             const char *line,
                             const char *header)
{
    fakehttp_assert_prefix(fakehttp_request(s, i), line);
    if (header)
        fakehttp_assert_contains(fakehttp_request(s, i), header);
}
