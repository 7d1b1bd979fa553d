/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The load generator behind tests/bench/bench_api (see loadgen.h).
 *
 * Everything runs on one thread: an epoll set holds every connection and,
 * in open loop, a timerfd that ticks at the request interval.  Each
 * connection is a slot that the request callback sees across reconnects,
 * so a scenario can keep per-client state (a reserve, then its release).
 * Answers are parsed in place in a fixed input buffer; bodies are skipped,
 * except the start of the first non-2xx body, kept for the report.  The
 * histograms and a run's totals are in loadgen_hist.c.
 *
 * The target must be 127.0.0.1: this is a tool for a private test broker,
 * and refusing other hosts keeps it from being pointed at a real service.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/loadgen.h"

#define IN_SIZE 65536 /* answer headers must fit; bodies stream */
#define OUT_SIZE (LG_BODY_MAX + 4096) /* one request: line, headers, body */
#define HEAD_MAX 16384                /* largest header block accepted */
#define CONNECT_PHASE_NS 5000000000ULL
#define BACKOFF_MIN_NS 10000000ULL
#define BACKOFF_MAX_NS 200000000ULL
#define TIMER_TAG UINT32_MAX

/* ---- connections ------------------------------------------------------ */

enum conn_state {
    C_DOWN,       /* no socket; reconnect at retry_ns */
    C_CONNECTING, /* non-blocking connect in progress */
    C_IDLE,       /* connected, nothing in flight */
    C_BUSY,       /* a request written or being written, answer pending */
};

enum parse_state {
    P_HEAD,        /* status line and headers */
    P_BODY,        /* Content-Length bytes left in remaining */
    P_CHUNK_SIZE,  /* a chunk-size line */
    P_CHUNK_DATA,  /* chunk bytes left in remaining */
    P_CHUNK_CRLF,  /* the CRLF after a chunk */
    P_TRAILER,     /* trailer lines up to the empty one */
    P_UNTIL_CLOSE, /* no framing: the body ends at EOF */
};

struct conn {
    int fd; /* -1 when down */
    enum conn_state state;
    uint32_t events;     /* epoll mask registered for fd */
    uint64_t retry_ns;   /* C_DOWN: next connect attempt */
    uint64_t backoff_ns; /* doubles on each failed connect */
    struct lg_slot slot; /* what the callback sees */

    int kind;           /* of the request in flight */
    uint64_t start_ns;  /* latency origin: send or scheduled time */
    char out[OUT_SIZE]; /* the request */
    size_t out_len, out_off;

    char in[IN_SIZE]; /* unparsed answer bytes */
    size_t in_len;
    enum parse_state ps;
    int status;       /* of the answer being parsed, 0 before */
    bool close_after; /* Connection: close, or HTTP/1.0 */
    bool no_body;     /* HEAD request */
    uint64_t remaining;
    bool has_server; /* Server-Timing app;dur seen */
    double server_ms;
    size_t bad_len; /* bytes of a non-2xx body captured */
    char bad[160];
};

struct lg {
    const struct lg_config *cfg;
    struct lg_result *res;
    vnib_error_t *errp;
    struct sockaddr_in addr;
    char host[32]; /* Host header value */
    int ep;        /* epoll descriptor */
    int tfd;       /* open loop timerfd, or -1 */
    int nconn;
    struct conn *conns;
    struct lg_request req; /* filled by the callback */

    bool running; /* past the connect phase */
    bool issuing; /* new requests may still go out */
    bool aborted; /* the callback failed */
    uint64_t start_ns;
    uint64_t stop_ns; /* stop issuing (closed) or scheduling (open) */
    uint64_t hard_ns; /* abandon what is still in flight */
    uint64_t last_done_ns;
    uint64_t stopped_ns;  /* when issuing stopped */
    uint64_t seq;         /* requests issued */
    uint64_t interval_ns; /* open loop */
    uint64_t planned;     /* open loop: requests in the schedule */
    int inflight;
    int down;             /* connections in C_DOWN */
    int rr;               /* open loop: next slot to try */
    uint32_t next_source; /* own_addresses: the next connection's */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Accept only http://127.0.0.1:PORT with an optional trailing slash. */
static int parse_url(struct lg *lg, const char *url)
{
    static const char prefix[] = "http://127.0.0.1:";
    char *end = NULL;

    if (!url || strncmp(url, prefix, sizeof(prefix) - 1) != 0)
        return errprintf(lg->errp,
                         "url must be http://127.0.0.1:PORT (got %s): the "
                         "load generator only drives a local broker",
                         url ? url : "(null)");
    const char *p = url + sizeof(prefix) - 1;
    errno = 0;
    unsigned long port = strtoul(p, &end, 10);
    if (errno || end == p || port == 0 || port > 65535
        || (*end && strcmp(end, "/") != 0))
        return errprintf(lg->errp, "bad port in url %s", url);
    memset(&lg->addr, 0, sizeof(lg->addr));
    lg->addr.sin_family = AF_INET;
    lg->addr.sin_port = htons((uint16_t)port);
    lg->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    snprintf(lg->host, sizeof(lg->host), "127.0.0.1:%lu", port);
    return 0;
}

static void conn_watch(struct lg *lg, struct conn *c, uint32_t events)
{
    if (c->fd < 0 || c->events == events)
        return;
    struct epoll_event ev = {.events = events,
                             .data.u32 = (uint32_t)(c - lg->conns)};
    if (epoll_ctl(lg->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->events = events;
}

/* Drop the socket; reconnect at once (after a close) or after a backoff
 * (after a failed connect).
 */
static void conn_down(struct lg *lg, struct conn *c, bool backoff)
{
    uint64_t now = now_ns();

    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = C_DOWN;
    c->events = 0;
    c->in_len = 0;
    if (backoff) {
        c->backoff_ns = c->backoff_ns ? c->backoff_ns * 2 : BACKOFF_MIN_NS;
        if (c->backoff_ns > BACKOFF_MAX_NS)
            c->backoff_ns = BACKOFF_MAX_NS;
        c->retry_ns = now + c->backoff_ns;
    } else {
        c->retry_ns = now;
    }
    lg->down++;
}

static void conn_connected(struct lg *lg, struct conn *c);

/* Start a non-blocking connect; a failure is retried after a backoff. */
static void conn_open(struct lg *lg, struct conn *c)
{
    int one = 1;
    int rc = -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    lg->down--;
    if (fd < 0)
        goto done;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    if (lg->cfg->own_addresses) {
        uint32_t k = lg->next_source++ % 65536;
        struct sockaddr_in src = {.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(0x7f010000u | k)};
        if (bind(fd, (const struct sockaddr *)&src, sizeof(src)) < 0)
            goto done;
    }
    rc = connect(fd, (const struct sockaddr *)&lg->addr, sizeof(lg->addr));
    if (rc < 0 && errno != EINPROGRESS)
        goto done;
    c->events = rc == 0 ? EPOLLIN : EPOLLOUT;
    struct epoll_event ev = {.events = c->events,
                             .data.u32 = (uint32_t)(c - lg->conns)};
    if (epoll_ctl(lg->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        rc = -1;
        goto done;
    }
    c->state = C_CONNECTING;
    if (rc < 0)
        rc = 1; /* in progress: EPOLLOUT says when */
done:
    if (rc < 0) {
        lg->res->connect_errors++;
        conn_down(lg, c, true);
    } else if (rc == 0) {
        conn_connected(lg, c);
    }
}

/* ---- requests --------------------------------------------------------- */

/* True when s can go into a request line or header: no CR, LF or space. */
static bool text_ok(const char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n' || *s == ' ')
            return false;
    return true;
}

/* Build the wire form of lg->req into c->out.  Returns 0 or -1. */
static int request_format(struct lg *lg, struct conn *c)
{
    const struct lg_request *r = &lg->req;
    bool has_body;
    int n;

    if (r->kind < 0 || r->kind >= LG_KINDS || !r->method || !text_ok(r->method)
        || r->path[0] != '/' || !text_ok(r->path)
        || (r->token && !text_ok(r->token)) || r->body_len > sizeof(r->body))
        return errprintf(lg->errp, "the scenario made a malformed request");
    /* POST and PUT always say how long their body is, even when empty */
    has_body = r->body_len > 0 || strcmp(r->method, "POST") == 0
               || strcmp(r->method, "PUT") == 0;
    n = snprintf(c->out,
                 sizeof(c->out),
                 "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: vnib-loadgen\r\n"
                 "%s%s%s%s",
                 r->method,
                 r->path,
                 lg->host,
                 r->close ? "Connection: close\r\n" : "",
                 r->token ? "Authorization: Bearer " : "",
                 r->token ? r->token : "",
                 r->token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(c->out))
        return errprintf(lg->errp, "request too large");
    size_t len = (size_t)n;
    if (has_body)
        n = snprintf(c->out + len,
                     sizeof(c->out) - len,
                     "Content-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     r->body_len);
    else
        n = snprintf(c->out + len, sizeof(c->out) - len, "\r\n");
    if (n < 0 || len + (size_t)n + r->body_len > sizeof(c->out))
        return errprintf(lg->errp, "request too large");
    len += (size_t)n;
    memcpy(c->out + len, r->body, r->body_len);
    c->out_len = len + r->body_len;
    c->out_off = 0;
    c->no_body = strcmp(r->method, "HEAD") == 0;
    return 0;
}

static void stop_issuing(struct lg *lg)
{
    uint64_t now = now_ns();

    if (!lg->issuing)
        return;
    lg->issuing = false;
    lg->stopped_ns = now;
    if (lg->cfg->rate <= 0 || now < lg->stop_ns) {
        uint64_t hard = now + (uint64_t)(lg->cfg->drain_s * 1e9);
        if (hard < lg->hard_ns)
            lg->hard_ns = hard;
    }
}

static void request_failed(struct lg *lg, struct conn *c)
{
    lg->res->io_errors++;
    lg->res->kind[c->kind].errors++;
    lg->inflight--;
    c->slot.last_status = -1;
    conn_down(lg, c, false);
}

static void conn_flush(struct lg *lg, struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(
            c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_watch(lg, c, EPOLLIN | EPOLLOUT);
            return;
        }
        request_failed(lg, c);
        return;
    }
    conn_watch(lg, c, EPOLLIN);
}

/* Ask the callback for the next request and send it on c; sched_ns is
 * the open-loop due time (0 in closed loop).
 */
static void request_issue(struct lg *lg, struct conn *c, uint64_t sched_ns)
{
    struct lg_request *r = &lg->req;

    r->kind = 0;
    r->method = "GET";
    r->path[0] = '\0';
    r->token = NULL;
    r->body_len = 0;
    r->close = false;
    c->slot.seq = lg->seq;
    int rc = lg->cfg->make(lg->cfg->arg, &c->slot, r);
    if (rc == LG_END) {
        stop_issuing(lg);
        return;
    }
    if (rc == LG_IDLE)
        return; /* the slot stays idle */
    if (rc < 0 || request_format(lg, c) < 0) {
        if (rc < 0)
            errprintf(lg->errp, "the scenario aborted the run");
        lg->aborted = true;
        stop_issuing(lg);
        return;
    }
    uint64_t now = now_ns();
    lg->seq++;
    c->slot.slot_seq++;
    c->kind = r->kind;
    c->start_ns = sched_ns ? sched_ns : now;
    if (sched_ns && now > sched_ns
        && (now - sched_ns) / 1000 > lg->res->late_us_max)
        lg->res->late_us_max = (now - sched_ns) / 1000;
    c->state = C_BUSY;
    c->ps = P_HEAD;
    c->status = 0;
    c->close_after = false;
    c->has_server = false;
    c->bad_len = 0;
    lg->inflight++;
    lg->res->kind[c->kind].sent++;
    if (lg->cfg->max_requests && lg->seq >= lg->cfg->max_requests)
        stop_issuing(lg);
    conn_flush(lg, c);
}

/* Open loop: send every due request that has an idle connection. */
static void open_dispatch(struct lg *lg)
{
    uint64_t now = now_ns();

    if (!lg->issuing)
        return;
    uint64_t due = (now - lg->start_ns) / lg->interval_ns + 1;
    if (due > lg->planned)
        due = lg->planned;
    while (lg->issuing && lg->seq < due) {
        struct conn *c = NULL;
        for (int i = 0; i < lg->nconn; i++) {
            struct conn *t = &lg->conns[(lg->rr + i) % lg->nconn];
            if (t->state == C_IDLE) {
                c = t;
                lg->rr = (int)(t - lg->conns + 1) % lg->nconn;
                break;
            }
        }
        if (!c)
            return;
        uint64_t seq = lg->seq;
        request_issue(lg, c, lg->start_ns + lg->seq * lg->interval_ns);
        if (lg->seq == seq)
            return; /* LG_IDLE: nothing due can go out now */
    }
    if (lg->seq >= lg->planned)
        stop_issuing(lg);
}

static void conn_connected(struct lg *lg, struct conn *c)
{
    c->state = C_IDLE;
    c->backoff_ns = 0;
    c->in_len = 0;
    lg->res->connects++;
    conn_watch(lg, c, EPOLLIN);
    if (!lg->running || !lg->issuing)
        return;
    if (lg->cfg->rate > 0)
        open_dispatch(lg);
    else
        request_issue(lg, c, 0);
}

/* ---- answers ---------------------------------------------------------- */

static const char *find_crlf(const char *p, const char *end)
{
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n')
            return p;
    return NULL;
}

static const char *find_head_end(const char *p, const char *end)
{
    for (; p + 3 < end; p++)
        if (p[0] == '\r' && p[1] == '\n' && p[2] == '\r' && p[3] == '\n')
            return p;
    return NULL;
}

/* Case-insensitive search for word in [p, end). */
static bool has_token(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    for (; p + n <= end; p++)
        if (strncasecmp(p, word, n) == 0)
            return true;
    return false;
}

/* Server-Timing: a comma-separated list of metrics with ;params.  Takes
 * the dur of the one named "app".
 */
static void parse_server_timing(struct conn *c, const char *p, const char *end)
{
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item_end = comma ? comma : end;
        while (p < item_end && (*p == ' ' || *p == '\t'))
            p++;
        const char *name_end = p;
        while (name_end < item_end && *name_end != ';' && *name_end != ' ')
            name_end++;
        if (name_end - p == 3 && strncasecmp(p, "app", 3) == 0) {
            for (const char *q = name_end; q + 4 <= item_end; q++) {
                if (strncasecmp(q, "dur=", 4) == 0) {
                    char num[32];
                    size_t len = (size_t)(item_end - q - 4);
                    if (len >= sizeof(num))
                        len = sizeof(num) - 1;
                    memcpy(num, q + 4, len);
                    num[len] = '\0';
                    char *e = NULL;
                    double ms = strtod(num, &e);
                    if (e != num && ms >= 0 && isfinite(ms)) {
                        c->server_ms = ms;
                        c->has_server = true;
                    }
                    return;
                }
            }
        }
        p = comma ? comma + 1 : end;
    }
}

/* Parse the status line and headers in [p, end) (without the final CRLF
 * CRLF).  Returns 0 or -1 for a malformed answer.
 */
static int parse_head(struct conn *c, const char *p, const char *end)
{
    const char *eol = find_crlf(p, end);
    const char *line_end = eol ? eol : end;
    bool http10, chunked = false, has_length = false;
    uint64_t length = 0;

    if (line_end - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
        return -1;
    http10 = p[7] == '0';
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        status = status * 10 + (p[i] - '0');
    }
    c->status = status;
    c->close_after = http10;
    p = eol ? eol + 2 : end;
    while (p < end) {
        eol = find_crlf(p, end);
        line_end = eol ? eol : end;
        const char *colon = memchr(p, ':', (size_t)(line_end - p));
        if (!colon)
            return -1;
        const char *v = colon + 1;
        while (v < line_end && (*v == ' ' || *v == '\t'))
            v++;
        size_t name_len = (size_t)(colon - p);
#define IS(name) \
    (name_len == sizeof(name) - 1 && strncasecmp(p, name, name_len) == 0)
        if (IS("content-length")) {
            char *e = NULL;
            char num[24];
            size_t len = (size_t)(line_end - v);
            if (len == 0 || len >= sizeof(num))
                return -1;
            memcpy(num, v, len);
            num[len] = '\0';
            length = strtoull(num, &e, 10);
            if (*e && *e != ' ' && *e != '\t')
                return -1;
            has_length = true;
        } else if (IS("transfer-encoding")) {
            chunked = has_token(v, line_end, "chunked");
        } else if (IS("connection")) {
            if (has_token(v, line_end, "close"))
                c->close_after = true;
            else if (has_token(v, line_end, "keep-alive"))
                c->close_after = false;
        } else if (IS("server-timing")) {
            parse_server_timing(c, v, line_end);
        }
#undef IS
        p = eol ? eol + 2 : end;
    }
    if (c->no_body || status == 204 || status == 304) {
        c->ps = P_BODY;
        c->remaining = 0;
    } else if (chunked) {
        c->ps = P_CHUNK_SIZE;
    } else if (has_length) {
        c->ps = P_BODY;
        c->remaining = length;
    } else {
        c->ps = P_UNTIL_CLOSE;
        c->close_after = true;
    }
    return 0;
}

/* Keep the start of a non-2xx body for the report. */
static void capture(struct conn *c, const char *p, size_t n)
{
    if (c->status >= 200 && c->status < 300)
        return;
    size_t room = sizeof(c->bad) - 1 - c->bad_len;
    if (n > room)
        n = room;
    memcpy(c->bad + c->bad_len, p, n);
    c->bad_len += n;
    c->bad[c->bad_len] = '\0';
}

static void answer_complete(struct lg *lg, struct conn *c)
{
    uint64_t now = now_ns();
    struct lg_kind_stats *ks = &lg->res->kind[c->kind];

    ks->done++;
    if (c->status >= 200 && c->status < 300) {
        ks->ok++;
    } else {
        ks->non2xx++;
        if (!ks->first_bad_status) {
            ks->first_bad_status = c->status;
            snprintf(
                ks->first_bad_body, sizeof(ks->first_bad_body), "%s", c->bad);
        }
    }
    lg_hist_add(&ks->latency, (now - c->start_ns + 500) / 1000);
    if (c->has_server)
        lg_hist_add(&ks->server, (uint64_t)(c->server_ms * 1000 + 0.5));
    lg->last_done_ns = now;
    lg->inflight--;
    c->slot.last_status = c->status;
    c->state = C_IDLE;
}

/* Parse what is buffered.  Returns 1 when an answer completed, 0 when more
 * bytes are needed, -1 for a protocol error.
 */
static int parse_input(struct conn *c)
{
    const char *p = c->in;
    const char *end = c->in + c->in_len;
    int done = 0;

    while (!done) {
        size_t avail = (size_t)(end - p);
        if (c->ps == P_HEAD) {
            const char *he = find_head_end(p, end);
            if (!he) {
                if (avail > HEAD_MAX)
                    return -1;
                break;
            }
            if (parse_head(c, p, he) < 0)
                return -1;
            p = he + 4;
            if (c->status >= 100 && c->status < 200) {
                c->ps = P_HEAD; /* an interim answer: the real one follows */
                continue;
            }
            if (c->ps == P_BODY && c->remaining == 0)
                done = 1;
        } else if (c->ps == P_BODY || c->ps == P_CHUNK_DATA) {
            if (avail == 0)
                break;
            size_t take = avail < c->remaining ? avail : (size_t)c->remaining;
            capture(c, p, take);
            p += take;
            c->remaining -= take;
            if (c->remaining == 0) {
                if (c->ps == P_BODY)
                    done = 1;
                else
                    c->ps = P_CHUNK_CRLF;
            }
        } else if (c->ps == P_CHUNK_SIZE) {
            const char *eol = find_crlf(p, end);
            if (!eol) {
                if (avail > 1024)
                    return -1;
                break;
            }
            char *e = NULL;
            unsigned long long size = strtoull(p, &e, 16);
            if (e == p || (e != eol && *e != ';' && *e != ' '))
                return -1;
            p = eol + 2;
            if (size == 0) {
                c->ps = P_TRAILER;
            } else {
                c->ps = P_CHUNK_DATA;
                c->remaining = size;
            }
        } else if (c->ps == P_CHUNK_CRLF) {
            if (avail < 2)
                break;
            if (p[0] != '\r' || p[1] != '\n')
                return -1;
            p += 2;
            c->ps = P_CHUNK_SIZE;
        } else if (c->ps == P_TRAILER) {
            const char *eol = find_crlf(p, end);
            if (!eol) {
                if (avail > HEAD_MAX)
                    return -1;
                break;
            }
            if (eol == p)
                done = 1;
            p = eol + 2;
        } else { /* P_UNTIL_CLOSE */
            capture(c, p, avail);
            p = end;
            break;
        }
    }
    c->in_len = (size_t)(end - p);
    memmove(c->in, p, c->in_len);
    return done;
}

/* After an answer: reconnect if the server asked for it, then send the
 * next request.
 */
static void after_answer(struct lg *lg, struct conn *c)
{
    if (c->close_after || c->in_len > 0) {
        if (c->in_len > 0)
            lg->res->io_errors++; /* bytes nobody asked for */
        conn_down(lg, c, false);
        return;
    }
    if (!lg->issuing)
        return;
    if (lg->cfg->rate > 0)
        open_dispatch(lg);
    else
        request_issue(lg, c, 0);
}

static void conn_readable(struct lg *lg, struct conn *c)
{
    for (;;) {
        size_t room = sizeof(c->in) - c->in_len;
        ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            if (c->state != C_BUSY) {
                conn_down(lg, c, false); /* an idle keep-alive closed */
            } else if (c->ps == P_UNTIL_CLOSE) {
                answer_complete(lg, c);
                conn_down(lg, c, false);
            } else {
                request_failed(lg, c);
            }
            return;
        }
        if (c->state != C_BUSY) {
            lg->res->io_errors++; /* an answer to nothing */
            conn_down(lg, c, false);
            return;
        }
        c->in_len += (size_t)n;
        int rc = parse_input(c);
        if (rc < 0) {
            request_failed(lg, c);
            return;
        }
        if (rc > 0) {
            answer_complete(lg, c);
            after_answer(lg, c);
            return;
        }
        if ((size_t)n < room)
            return;
    }
}

static void conn_event(struct lg *lg, struct conn *c, uint32_t events)
{
    if (c->state == C_DOWN)
        return; /* closed earlier in this batch of events */
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            lg->res->connect_errors++;
            conn_down(lg, c, true);
            return;
        }
        conn_connected(lg, c);
        return;
    }
    if (c->state == C_BUSY && (events & EPOLLOUT) && c->out_off < c->out_len) {
        conn_flush(lg, c);
        if (c->state != C_BUSY)
            return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        conn_readable(lg, c);
}

/* ---- the run ---------------------------------------------------------- */

static int wait_ms(const struct lg *lg, uint64_t now)
{
    uint64_t until = now + 50000000ULL;

    if (!lg->running) {
        until = now + 10000000ULL;
    } else {
        if (lg->hard_ns < until)
            until = lg->hard_ns;
        if (lg->issuing && lg->cfg->rate <= 0 && lg->stop_ns < until)
            until = lg->stop_ns;
    }
    if (lg->down > 0)
        for (int i = 0; i < lg->nconn; i++)
            if (lg->conns[i].state == C_DOWN && lg->conns[i].retry_ns < until)
                until = lg->conns[i].retry_ns;
    if (until <= now)
        return 0;
    return (int)((until - now + 999999) / 1000000);
}

static int start_timer(struct lg *lg)
{
    struct itimerspec its = {0};

    lg->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (lg->tfd < 0)
        return errprintf(lg->errp, "timerfd: %s", strerror(errno));
    its.it_interval.tv_sec = (time_t)(lg->interval_ns / 1000000000ULL);
    its.it_interval.tv_nsec = (long)(lg->interval_ns % 1000000000ULL);
    its.it_value = its.it_interval;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = TIMER_TAG};
    if (timerfd_settime(lg->tfd, 0, &its, NULL) < 0
        || epoll_ctl(lg->ep, EPOLL_CTL_ADD, lg->tfd, &ev) < 0)
        return errprintf(lg->errp, "timerfd: %s", strerror(errno));
    return 0;
}

static void begin(struct lg *lg)
{
    uint64_t now = now_ns();
    const struct lg_config *cfg = lg->cfg;

    lg->running = true;
    lg->issuing = true;
    lg->start_ns = now;
    lg->last_done_ns = now;
    lg->stop_ns = now + (uint64_t)(cfg->duration_s * 1e9);
    lg->hard_ns = lg->stop_ns + (uint64_t)(cfg->drain_s * 1e9);
    if (cfg->rate > 0) {
        open_dispatch(lg);
        return;
    }
    for (int i = 0; i < lg->nconn && lg->issuing; i++)
        if (lg->conns[i].state == C_IDLE)
            request_issue(lg, &lg->conns[i], 0);
}

static int validate(const struct lg_config *cfg, vnib_error_t *errp)
{
    if (cfg->connections < 1 || cfg->connections > 1024)
        return errprintf(errp, "connections must be 1-1024");
    if (!(cfg->duration_s > 0) || cfg->duration_s > 3600)
        return errprintf(errp, "duration must be in (0, 3600] seconds");
    if (!(cfg->drain_s >= 0) || cfg->drain_s > 600)
        return errprintf(errp, "drain must be in [0, 600] seconds");
    if (!(cfg->rate >= 0) || cfg->rate > 1e6)
        return errprintf(errp, "rate must be in [0, 1e6] per second");
    if (!cfg->make)
        return errprintf(errp, "no request callback");
    return 0;
}

int lg_run(const struct lg_config *cfg,
           struct lg_result *res,
           vnib_error_t *errp)
{
    struct lg lg = {.cfg = cfg, .res = res, .errp = errp, .ep = -1, .tfd = -1};
    struct epoll_event evs[256];
    int rc = -1;

    memset(res, 0, sizeof(*res));
    if (validate(cfg, errp) < 0 || parse_url(&lg, cfg->url) < 0)
        goto done;
    lg.nconn = cfg->connections;
    if (!(lg.conns = calloc((size_t)lg.nconn, sizeof(*lg.conns)))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    if ((lg.ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        errprintf(errp, "epoll: %s", strerror(errno));
        goto done;
    }
    if (cfg->rate > 0) {
        lg.interval_ns = (uint64_t)(1e9 / cfg->rate);
        if (lg.interval_ns == 0)
            lg.interval_ns = 1;
        lg.planned =
            (uint64_t)ceil(cfg->duration_s * 1e9 / (double)lg.interval_ns);
        if (cfg->max_requests && lg.planned > cfg->max_requests)
            lg.planned = cfg->max_requests;
    }
    for (int i = 0; i < lg.nconn; i++) {
        lg.conns[i].fd = -1;
        lg.conns[i].state = C_DOWN;
        lg.conns[i].slot.index = i;
        lg.down++;
        conn_open(&lg, &lg.conns[i]);
    }

    /* Connect everything before the clock starts. */
    uint64_t connect_until = now_ns() + CONNECT_PHASE_NS;
    for (;;) {
        int idle = 0;
        uint64_t now = now_ns();
        for (int i = 0; i < lg.nconn; i++) {
            struct conn *c = &lg.conns[i];
            if (c->state == C_IDLE)
                idle++;
            else if (c->state == C_DOWN && c->retry_ns <= now)
                conn_open(&lg, c);
        }
        if (idle == lg.nconn || now >= connect_until)
            break;
        int n = epoll_wait(lg.ep, evs, 256, wait_ms(&lg, now));
        for (int i = 0; i < n; i++)
            conn_event(&lg, &lg.conns[evs[i].data.u32], evs[i].events);
    }
    if (res->connects == 0) {
        errprintf(errp,
                  "cannot connect to %s (%llu attempts failed)",
                  cfg->url,
                  (unsigned long long)res->connect_errors);
        goto done;
    }
    if (cfg->rate > 0 && start_timer(&lg) < 0)
        goto done;
    begin(&lg);

    for (;;) {
        uint64_t now = now_ns();
        if (lg.issuing && cfg->rate <= 0 && now >= lg.stop_ns)
            stop_issuing(&lg);
        if (!lg.issuing && lg.inflight == 0)
            break;
        if (now >= lg.hard_ns) {
            if (lg.issuing && cfg->rate > 0) {
                /* due requests that never found a free connection */
                uint64_t due = (now - lg.start_ns) / lg.interval_ns + 1;
                if (due > lg.planned)
                    due = lg.planned;
                if (due > lg.seq)
                    res->unsent = due - lg.seq;
            }
            stop_issuing(&lg);
            for (int i = 0; i < lg.nconn; i++) {
                struct conn *c = &lg.conns[i];
                if (c->state == C_BUSY) {
                    res->timeouts++;
                    res->kind[c->kind].errors++;
                    lg.inflight--;
                    conn_down(&lg, c, false);
                }
            }
            break;
        }
        if (lg.down > 0)
            for (int i = 0; i < lg.nconn; i++)
                if (lg.conns[i].state == C_DOWN && lg.conns[i].retry_ns <= now)
                    conn_open(&lg, &lg.conns[i]);
        if (cfg->rate > 0)
            open_dispatch(&lg);
        int n = epoll_wait(lg.ep, evs, 256, wait_ms(&lg, now_ns()));
        if (n < 0 && errno != EINTR) {
            errprintf(errp, "epoll_wait: %s", strerror(errno));
            goto done;
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u32 == TIMER_TAG) {
                uint64_t ticks;
                ssize_t got = read(lg.tfd, &ticks, sizeof(ticks));
                (void)got; /* only the wake-up matters */
                continue;
            }
            conn_event(&lg, &lg.conns[evs[i].data.u32], evs[i].events);
        }
    }
    uint64_t end =
        lg.last_done_ns > lg.stopped_ns ? lg.last_done_ns : lg.stopped_ns;
    res->elapsed_s = (double)(end - lg.start_ns) / 1e9;
    rc = lg.aborted ? -1 : 0;
done:
    if (lg.conns)
        for (int i = 0; i < lg.nconn; i++)
            if (lg.conns[i].fd >= 0)
                close(lg.conns[i].fd);
    free(lg.conns);
    if (lg.tfd >= 0)
        close(lg.tfd);
    if (lg.ep >= 0)
        close(lg.ep);
    return rc;
}
