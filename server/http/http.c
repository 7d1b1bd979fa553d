/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The broker's request pipeline (see http.h) on lib/httpd.c.
 *
 * httpd calls on_begin() once the request line and headers are in (we
 * allocate the request, match the route, authenticate and authorise the
 * caller and check the announced Content-Length, so that a refused
 * request is answered before any body is read), gathers the body up to
 * what the route allows, then calls on_run() (we run the handler and
 * queue exactly one reply).  on_done() runs when the reply has been sent
 * or the connection died; it records metrics, writes the access log line
 * and frees the request.
 *
 * First tries.  A route may have a first try (route.first), run on the
 * libmicrohttpd thread before any worker: it answers from memory (a
 * node's fetch of a cached job), or hands the request on to another
 * thread that finishes it later (request_defer(), request_finish(): a
 * node report waits for its group on the store's threads, not on a
 * worker), or passes it to the handler.  A deferred request is suspended
 * as a queued one is, and owned by the thread that finishes it.
 *
 * Suspension.  A handler that may wait (the route says ROUTE_WORKER)
 * does not run on the libmicrohttpd thread, which also polls many other
 * connections: on_run() suspends the connection and queues the request
 * for a request worker (workers.c).  The worker runs the handler, stores
 * its outcome in the request (result, out, text, error) and resumes the
 * connection; httpd then calls on_run() once more, and that call sends
 * the stored outcome.  From the submit to the resume the worker alone
 * owns the request; it never touches it after httpd_resume().  A
 * suspended connection is not polled, so a client that hangs up
 * meanwhile is noticed only after the resume: on_done(), which frees the
 * request, cannot run while a worker holds it.  When the queue is full
 * the request is answered 503 unavailable at once, through the same
 * store-and-resume path.
 *
 * Limits that protect the broker from slow or hostile clients are all set
 * here: threads, request workers and their queue, connection count,
 * connections per client address, idle timeout, per-connection memory
 * for the request line and headers, body sizes per route, and the
 * request deadline (server.request_deadline_ms, enforced by httpd's
 * reaper: libmicrohttpd's idle timeout restarts on every byte received,
 * so it cannot stop a client that trickles a byte every few seconds).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vnib/client.h"
#include "vnib/monotime.h"
#include "vnib/hex.h"
#include "vnib/httpd.h"
#include "vnib/logger.h"
#include "vnib/secfile.h"
#include "server/config.h"
#include "server/http/http.h"
#include "server/http/metrics.h"
#include "server/http/reply.h"
#include "server/http/workers.h"

struct http {
    struct broker *broker;
    const struct route_table *routes; /* the API's, matched in order */
    struct httpd *httpd;
    struct workers *workers; /* run the ROUTE_WORKER handlers */
    int nworkers;            /* their threads */
    atomic_ullong expired;   /* requests not run: their deadline passed */
    atomic_long deferred;    /* requests handed on (request_defer) and not
                                finished yet */
    atomic_bool stopping;    /* http_destroy has begun: no more hand-offs */
};

/* Where a request stands in the hand-off to a worker (request.queued). */
enum {
    REQ_INLINE = 0, /* not handed off: the libmicrohttpd thread owns it */
    REQ_QUEUED,     /* suspended; a worker owns it until it resumes */
    REQ_DONE,       /* resumed: the outcome is stored, to be sent */
};

/* libmicrohttpd's own diagnostics are logged at most this many lines a
 * second: it writes a line for each connection refused past a limit or
 * closed by its client, so a flood of connections would otherwise become
 * a flood of log lines.
 */
#define HTTP_LOG_BURST 10

int request_fail(struct request *req,
                 int errnum,
                 enum errcode code,
                 vnib_error_t *errp,
                 const char *fmt,
                 ...)
{
    va_list ap;

    va_start(ap, fmt);
    verrprintf(errp, fmt, ap);
    va_end(ap);
    req->error_code = code;
    errno = errnum;
    return -1;
}

int request_code_if(struct request *req, int errnum, enum errcode code)
{
    if (errno == errnum)
        req->error_code = code;
    return -1;
}

bool request_can_defer(const struct request *req)
{
    return req->http && req->hr && !atomic_load(&req->http->stopping);
}

int request_defer(struct request *req)
{
    struct http *h = req->http;

    if (!h || !req->hr) {
        errno = ESHUTDOWN;
        return -1;
    }
    /* Counted before the check: http_destroy sets stopping, then waits
     * for the count, so either it waits for this request or this request
     * sees it stopping.
     */
    atomic_fetch_add(&h->deferred, 1);
    if (atomic_load(&h->stopping)) {
        atomic_fetch_sub(&h->deferred, 1);
        errno = ESHUTDOWN;
        return -1;
    }
    req->queued = REQ_QUEUED;
    httpd_suspend(req->hr);
    return 0;
}

void request_finish(struct request *req, int status, json_t *out, int errnum)
{
    struct http *h = req->http;
    struct httpd_req *hr = req->hr;

    req->result = status;
    req->out = out;
    req->result_errno = status < 0 ? (errnum ? errnum : EIO) : 0;
    req->handler_ns = monotime_ns() - req->handler_start_ns;
    if (status < 0 && req->result_errno == ECANCELED)
        atomic_fetch_add(&h->expired, 1);
    req->queued = REQ_DONE;
    httpd_resume(hr);
    /* req may be gone now; h stays until the count is back to 0. */
    atomic_fetch_sub(&h->deferred, 1);
}

int request_json(struct request *req, json_t **objp, vnib_error_t *errp)
{
    if (httpd_json_object(req->body, req->body_len, "request body", objp, errp)
        < 0) {
        req->error_code = ERRCODE_INVALID_JSON;
        return -1;
    }
    return 0;
}

/* The value of name in a request's own table (see struct request). */
static const char *table_lookup(const char *const *table, const char *name)
{
    for (size_t i = 0; table && table[i] && table[i + 1]; i += 2)
        if (strcasecmp(table[i], name) == 0)
            return table[i + 1];
    return NULL;
}

const char *request_header(const struct request *req, const char *name)
{
    if (!req->hr)
        return table_lookup(req->headers, name);
    return httpd_header(req->hr, name);
}

const char *request_query(const struct request *req, const char *name)
{
    if (!req->hr)
        return table_lookup(req->query, name);
    return httpd_query(req->hr, name);
}

int request_error_status(const struct request *req,
                         int errnum,
                         enum errcode *codep)
{
    *codep = req->error_code != ERRCODE_NONE ? req->error_code
                                             : errcode_of_errno(errnum);
    return errcode_status(*codep);
}

long http_inflight(const struct http *h)
{
    return httpd_inflight(h->httpd);
}

int http_worker_count(const struct http *h)
{
    return h->nworkers;
}

void http_write_metrics(struct http *h, FILE *f)
{
    struct httpd_stats st;

    httpd_get_stats(h->httpd, &st);
    fprintf(f,
            "# HELP vnib_http_connections Connections open now, by budget: "
            "server.max_connections (other) or "
            "server.priority_connections (priority).\n"
            "# TYPE vnib_http_connections gauge\n"
            "vnib_http_connections{budget=\"other\"} %ld\n"
            "vnib_http_connections{budget=\"priority\"} %ld\n"
            "# HELP vnib_http_connections_closed_total Connections the broker "
            "closed before their request was in: displaced (the budget was "
            "full: closed to make room for a newer one), refused (full: a "
            "new one closed at once, its address at the top or nothing to "
            "displace), deadline (server.request_deadline_ms).\n"
            "# TYPE vnib_http_connections_closed_total counter\n"
            "vnib_http_connections_closed_total{reason=\"displaced\"} %llu\n"
            "vnib_http_connections_closed_total{reason=\"refused\"} %llu\n"
            "vnib_http_connections_closed_total{reason=\"deadline\"} %llu\n"
            "# HELP vnib_http_requests_expired_total Requests answered 503 "
            "deadline_exceeded without running: their deadline passed "
            "while they waited for a worker, or for their group to be "
            "written.\n"
            "# TYPE vnib_http_requests_expired_total counter\n"
            "vnib_http_requests_expired_total %llu\n",
            st.open,
            st.priority_open,
            st.displaced,
            st.refused,
            st.deadline_cut,
            (unsigned long long)atomic_load(&h->expired));
}

long http_queue_depth(const struct http *h)
{
    return h->workers ? workers_depth(h->workers) : 0;
}

uint16_t http_port(const struct http *h)
{
    return httpd_port(h->httpd);
}

static void request_id_new(char *id)
{
    unsigned char raw[8];
    if (getrandom(raw, sizeof(raw), GRND_NONBLOCK) != (ssize_t)sizeof(raw)) {
        /* Ids only correlate log lines; uniqueness suffices. */
        uint64_t t = (uint64_t)monotime_ns() ^ ((uint64_t)getpid() << 48);
        memcpy(raw, &t, sizeof(raw));
    }
    hex_encode(raw, sizeof(raw), id);
}

/* Authenticate, then authorise by the route's roles.  Finer checks (a
 * node asking about its own jobs) are the handler's.  Called as soon as
 * the headers are complete, before any body is read: an unauthenticated
 * client is answered 401 at once and cannot make the broker buffer a
 * body.  On refusal, returns -1 with errno EACCES (401) or EPERM (403).
 */
static int authorize(struct request *req, vnib_error_t *errp)
{
    if (req->route->roles == ROUTE_PUBLIC)
        return 0;
    const char *hdr = request_header(req, "Authorization");
    if (auth_check(req->broker->auth, hdr, &req->who, errp) < 0) {
        errno = EACCES;
        return -1;
    }
    if (!(req->route->roles & req->who.role)) {
        /* Logged with the reply, by reply_error(). */
        errprintf(errp, "this token's role may not use this endpoint");
        errno = EPERM;
        return -1;
    }
    return 0;
}

/* Run the matched route's handler and keep its outcome in the request.
 * No libmicrohttpd call: this runs on a worker thread as well.
 */
static void run_handler(struct request *req)
{
    errno = 0;
    req->handler_start_ns = monotime_ns();
    req->result = req->route->handler(req, &req->out, &req->error);
    req->result_errno = errno ? errno : EIO;
    req->handler_ns = monotime_ns() - req->handler_start_ns;
}

/* Run the route's first try on this (libmicrohttpd) thread: its status
 * kept as run_handler() keeps a handler's, or ROUTE_PASS or
 * ROUTE_DEFERRED (after which req is no longer this thread's).
 */
static int run_first(struct request *req)
{
    errno = 0;
    req->handler_start_ns = monotime_ns();
    int st = req->route->first(req, &req->out, &req->error);
    if (st == ROUTE_PASS || st == ROUTE_DEFERRED)
        return st;
    req->result = st;
    req->result_errno = errno ? errno : EIO;
    req->handler_ns = monotime_ns() - req->handler_start_ns;
    return st;
}

/* Send the outcome run_handler() kept. */
static int send_result(struct request *req)
{
    json_t *out = req->out;

    req->out = NULL;
    if (req->result < 0) {
        json_decref(out);
        return reply_error(req,
                           req->result_errno,
                           req->error.text,
                           req->error.public_text,
                           NULL);
    }
    if (req->text) {
        json_decref(out);
        char *text = req->text;
        req->text = NULL;
        return reply_text(req,
                          req->result,
                          text,
                          req->text_len,
                          req->content_type ? req->content_type : "text/plain",
                          NULL);
    }
    if (!out)
        out = json_object();
    return reply_json(req, req->result, out, NULL);
}

/* A request worker's job: run the handler of a suspended request, keep
 * the outcome, resume the connection.  After the resume the request may
 * be sent, completed and freed at any moment by the libmicrohttpd
 * thread: nothing here reads it once httpd_resume() is called.
 */
static void request_run(void *arg, int64_t wait_ns, bool cancelled)
{
    struct request *req = arg;
    struct httpd_req *hr = req->hr;

    metrics_observe_queue_wait(req->broker->metrics, wait_ns);
    if (!cancelled && req->deadline_ns > 0
        && monotime_ns() > req->deadline_ns) {
        /* The client has given up (or the server's maximum wait has
         * passed): its request is not run, so nothing it was told
         * failed is done behind its back.
         */
        req->result = request_fail(req,
                                   ECANCELED,
                                   ERRCODE_DEADLINE_EXCEEDED,
                                   &req->error,
                                   "the request waited %lld ms for a worker, "
                                   "past its deadline; it was not run",
                                   (long long)(wait_ns / 1000000));
        req->result_errno = ECANCELED;
    } else if (cancelled) {
        req->result = request_fail(req,
                                   EAGAIN,
                                   ERRCODE_UNAVAILABLE,
                                   &req->error,
                                   "the broker is shutting down");
        req->result_errno = EAGAIN;
    } else {
        run_handler(req);
    }
    if (req->result < 0 && req->result_errno == ECANCELED)
        atomic_fetch_add(&req->broker->http->expired, 1);
    req->queued = REQ_DONE;
    httpd_resume(hr);
}

/* Hand a request whose handler may block to the workers.  The connection
 * is suspended first, since a worker may finish and resume it before
 * this returns.  A full queue (or a pool being stopped) is answered 503
 * through the same path, so that it never waits here.
 */
static int request_queue(struct http *h, struct request *req)
{
    req->queued = REQ_QUEUED;
    httpd_suspend(req->hr);
    if (workers_submit(h->workers, request_run, req) == 0)
        return 0; /* the request is the worker's until it resumes */
    /* The 503 is logged by on_done(), as every 5xx. */
    int e = errno;
    req->result = request_fail(req,
                               EAGAIN,
                               ERRCODE_UNAVAILABLE,
                               &req->error,
                               e == EAGAIN ? "the broker is busy; retry later"
                                           : "the broker is shutting down");
    req->result_errno = EAGAIN;
    req->queued = REQ_DONE;
    httpd_resume(req->hr);
    return 0;
}

/* The route's body limit, capped by server.max_body_bytes. */
static size_t body_limit(const struct request *req)
{
    size_t cap = (size_t)req->broker->cfg->server.max_body_bytes;
    return req->route->max_body < cap ? req->route->max_body : cap;
}

/* The request's deadline: server.queue_deadline_ms after its arrival,
 * or sooner when the client says it waits less (VNIB_DEADLINE_HEADER,
 * whole milliseconds).  A malformed value is refused (EINVAL).
 */
static int request_deadline(struct request *req, vnib_error_t *errp)
{
    long long ms = req->broker->cfg->server.queue_deadline_ms;
    const char *v = request_header(req, VNIB_DEADLINE_HEADER);

    if (v) {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (*v < '0' || *v > '9' || *end || errno || n < 1
            || n > VNIB_DEADLINE_MAX_MS)
            return request_fail(req,
                                EINVAL,
                                ERRCODE_INVALID_HEADER,
                                errp,
                                "%s must be a whole number of milliseconds "
                                "from 1 to %d",
                                VNIB_DEADLINE_HEADER,
                                VNIB_DEADLINE_MAX_MS);
        if (n < ms)
            ms = n;
    }
    req->deadline_ns = req->start_ns + ms * 1000000LL;
    return 0;
}

/* httpd's first call for a request: allocate, match, check the announced
 * size.
 */
static int on_begin(void *cls, struct httpd_req *hr)
{
    struct http *h = cls;
    const struct config *cfg = h->broker->cfg;
    struct request *req = calloc(1, sizeof(*req));
    char allow[128];

    /* libmicrohttpd cannot answer in the middle of a chunked upload, so
     * the rest of a refused body is read and dropped, up to the largest
     * body any route takes; a client that sends more is cut off.
     */
    hr->discard_max = (size_t)cfg->server.max_body_bytes;
    if (!req)
        return -1;
    req->broker = h->broker;
    req->http = h;
    req->hr = hr;
    req->method = hr->method;
    req->path = hr->url;
    req->start_ns = hr->start_ns;
    req->route_index = (int)h->routes->count;
    request_id_new(req->id);
    hr->data = req;

    /* libmicrohttpd's own 431 is an HTML page without our headers; its
     * buffer is larger than server.max_header_bytes (see http_create) so
     * that this check answers first, in the documented format.
     */
    if (httpd_header_size(hr) > (size_t)cfg->server.max_header_bytes)
        return reply_error(req,
                           EOVERFLOW,
                           "request line and headers are larger than the "
                           "broker accepts",
                           NULL,
                           NULL);

    /* HEAD is answered as GET (RFC 9110, 9.3.2): libmicrohttpd sends the
     * headers and drops the body.
     */
    int idx =
        route_match(h->routes,
                    strcmp(req->method, "HEAD") == 0 ? "GET" : req->method,
                    req->path,
                    &req->params,
                    allow,
                    sizeof(allow));
    if (idx < 0) {
        if (errno == EOPNOTSUPP)
            return reply_error(req,
                               EOPNOTSUPP,
                               "method not allowed on this path",
                               NULL,
                               allow);
        return reply_error(req, ENOENT, "no such endpoint", NULL, NULL);
    }
    req->route_index = idx;
    req->route = &h->routes->rows[idx];
    hr->body_max = body_limit(req);

    /* The caller is known before a byte of body is read; a refusal is
     * sent now and libmicrohttpd closes the connection without reading
     * the body.
     */
    vnib_error_t error = {0};
    if (authorize(req, &error) < 0 || request_deadline(req, &error) < 0)
        return reply_error(req, errno, error.text, error.public_text, NULL);

    if (httpd_length_over(hr, body_limit(req)))
        return reply_error(req,
                           E2BIG,
                           req->route->max_body
                               ? "request body is larger than this endpoint "
                                 "accepts"
                               : "this endpoint takes no request body",
                           NULL,
                           NULL);
    /* Bodies are JSON.  A form or text body (what `curl -d` sends without
     * -H) is refused rather than parsed as if it were.
     */
    if (req->route->max_body > 0 && httpd_has_body(hr)
        && !httpd_media_type_is_json(request_header(req, "Content-Type")))
        return reply_error(req,
                           EPROTONOSUPPORT,
                           "request bodies must be sent as Content-Type: "
                           "application/json",
                           NULL,
                           NULL);
    return 0;
}

/* httpd's call once the whole request is in, and again after a worker
 * resumed the connection.
 */
static int on_run(void *cls, struct httpd_req *hr)
{
    struct http *h = cls;
    struct request *req = hr->data;

    if (req->queued == REQ_DONE)
        return send_result(req);
    req->body = hr->body;
    req->body_len = hr->body_len;
    if (hr->refused)
        return reply_error(req,
                           hr->refused,
                           hr->refused == E2BIG ? "request body is larger than "
                                                  "this endpoint accepts"
                                                : "out of memory",
                           NULL,
                           NULL);
    if (req->route->first) {
        int st = run_first(req);
        if (st == ROUTE_DEFERRED)
            return 0; /* suspended: request_finish() resumes it */
        if (st != ROUTE_PASS)
            return send_result(req);
    }
    if (req->route->runs == ROUTE_WORKER)
        return request_queue(h, req);
    run_handler(req);
    return send_result(req);
}

static void on_done(void *cls, struct httpd_req *hr, int term)
{
    struct http *h = cls;
    struct request *req = hr->data;

    if (!req)
        return;
    int64_t ns = monotime_ns() - req->start_ns;
    int status = hr->status;
    if (status > 0) {
        metrics_observe(h->broker->metrics, req->route_index, status, ns);
        int level = status >= 500 ? LOG_WARNING : LOG_DEBUG;
        /* A 503 is logged without its duration, so that the logger can
         * fold the same answer repeated (a database outage answers every
         * /readyz probe 503) into one line and a count.
         */
        if (status == 503 && level < LOG_DEBUG)
            logger_printf(h->broker->log,
                          level,
                          req->id,
                          "%s %s %d",
                          req->method,
                          req->path,
                          status);
        else if (logger_enabled(h->broker->log, level))
            logger_printf(h->broker->log,
                          level,
                          req->id,
                          "%s %s %d %.3fms",
                          req->method,
                          req->path,
                          status,
                          (double)ns / 1e6);
    } else if (term != 0) {
        logger_printf(h->broker->log,
                      LOG_DEBUG,
                      req->id,
                      "%s %s: connection closed before a reply (%d)",
                      req->method,
                      req->path,
                      term);
    }
    json_decref(req->out);
    free(req->text);
    free(req);
    hr->data = NULL;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

/* libmicrohttpd's per-connection memory: the request line and headers
 * are read into it, and the reply's headers are built in it.  Twice
 * server.max_header_bytes lets on_begin() see, and refuse in JSON,
 * headers up to that size; only larger ones meet libmicrohttpd's own
 * (HTML) 431, or a closed connection.
 */
static size_t mhd_memory_limit(const struct config *cfg)
{
    return 2 * (size_t)cfg->server.max_header_bytes + 16384;
}

/* server.workers, or by default one per pooled database connection plus
 * one per reserve that may wait on the Fabric Manager inside a request
 * (setup->fm_workers): those wait for seconds, and must not leave the
 * database's work without a thread.
 */
static int http_workers(const struct config *cfg,
                        const struct http_setup *setup)
{
    if (cfg->server.workers > 0)
        return (int)cfg->server.workers;
    return (int)cfg->database.pool_size + setup->fm_workers;
}

/* server.queue_limit, or server.max_connections: each connection has at
 * most one request in the queue, so that default never refuses.
 */
static int http_queue_limit(const struct config *cfg)
{
    return (int)(cfg->server.queue_limit > 0 ? cfg->server.queue_limit
                                             : cfg->server.max_connections);
}

struct http *http_create(struct broker *broker,
                         const struct http_setup *setup,
                         vnib_error_t *errp)
{
    const struct config *cfg = broker->cfg;
    struct http *h = NULL;
    char *cert = NULL, *key = NULL;
    size_t cert_len = 0, key_len = 0;
    struct sockaddr_storage ss = {0};

    if (!(h = calloc(1, sizeof(*h)))) {
        errprintf(errp, "out of memory");
        goto error;
    }
    h->broker = broker;
    h->routes = setup->routes;

    if (inet_pton(AF_INET6,
                  cfg->server.address,
                  &((struct sockaddr_in6 *)&ss)->sin6_addr)
        == 1) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)cfg->server.port);
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)cfg->server.port);
        if (inet_pton(AF_INET, cfg->server.address, &in->sin_addr) != 1) {
            errno = EINVAL;
            errprintf(errp,
                      "server.address '%s' is not a numeric address",
                      cfg->server.address);
            goto error;
        }
    }

    if (cfg->server.tls_cert[0]) {
        if (secfile_read_public(cfg->server.tls_cert, &cert, &cert_len, errp)
            < 0)
            goto error;
        if (secfile_read_owned(cfg->server.tls_key, &key, &key_len, errp) < 0)
            goto error;
    } else if (!is_loopback((struct sockaddr *)&ss)) {
        logger_printf(broker->log,
                      LOG_WARNING,
                      NULL,
                      "server: plain HTTP on non-loopback address %s: bearer "
                      "tokens cross the network in clear text; set "
                      "server.tls_cert and server.tls_key",
                      cfg->server.address);
    }

    h->nworkers = http_workers(cfg, setup);
    if (!(h->workers =
              workers_create(h->nworkers, http_queue_limit(cfg), errp)))
        goto error;

    struct httpd_config hc = {
        .addr = (struct sockaddr *)&ss,
        .threads = (unsigned int)cfg->server.threads,
        .suspend = true,
        .max_connections = (unsigned int)cfg->server.max_connections,
        .per_ip_connections = (unsigned int)cfg->server.per_ip_connections,
        .priority = cfg->priority,
        .npriority = cfg->npriority,
        .priority_connections = (unsigned int)cfg->server.priority_connections,
        .timeout_s = (unsigned int)cfg->server.connection_timeout_s,
        .memory_limit = mhd_memory_limit(cfg),
        .tls_cert = cert,
        .tls_key = key,
        .tls_priorities = cfg->server.tls_priorities,
        .deadline_ms = cfg->server.request_deadline_ms,
        .deadline_name = "server.request_deadline_ms",
        .log = broker->log,
        .log_burst = HTTP_LOG_BURST,
        .handlers = {on_begin, on_run, on_done, h},
    };
    if (!(h->httpd = httpd_start(&hc, errp))) {
        if (errno == EADDRINUSE)
            errprintf(errp,
                      "cannot listen on %s port %ld%s (address in use, or a "
                      "bad certificate, key or server.tls_priorities?)",
                      cfg->server.address,
                      cfg->server.port,
                      cert ? " with TLS" : "");
        goto error;
    }
    /* libmicrohttpd has loaded the key into its TLS credentials. */
    secfile_free(key, key_len);
    secfile_free(cert, cert_len);
    return h;
error:
    if (h)
        workers_destroy(h->workers);
    secfile_free(key, key_len);
    secfile_free(cert, cert_len);
    free(h);
    return NULL;
}

/* Sleep until no request is in flight or deadline (monotonic ns) passes;
 * with `arriving`, until no connection's request is on its way either.
 */
static void wait_inflight(const struct http *h, int64_t deadline, bool arriving)
{
    while ((httpd_inflight(h->httpd) > 0
            || (arriving && httpd_unanswered(h->httpd) > 0))
           && monotime_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Wait until every deferred request is finished (DEFERRED_WAIT_S at the
 * most, logged: past it something holds one beyond every timeout).
 */
#define DEFERRED_WAIT_S 120
static void wait_deferred(struct http *h)
{
    int64_t deadline = monotime_ns() + (int64_t)DEFERRED_WAIT_S * 1000000000;

    while (atomic_load(&h->deferred) > 0 && monotime_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    long left = atomic_load(&h->deferred);
    if (left > 0)
        logger_printf(h->broker->log,
                      LOG_ERR,
                      NULL,
                      "http: %ld deferred requests still unfinished after "
                      "%d s",
                      left,
                      DEFERRED_WAIT_S);
}

void http_destroy(struct http *h, int timeout_s)
{
    int saved_errno = errno;
    if (h) {
        atomic_store(&h->stopping, true);
        if (h->httpd) {
            /* Stop accepting, then let queued and running requests
             * finish, and those on connections accepted already (a
             * connection that never sends its request is closed by the
             * request deadline's reaper).
             */
            httpd_quiesce(h->httpd);
            wait_inflight(
                h, monotime_ns() + (int64_t)timeout_s * 1000000000, true);
            long left = httpd_inflight(h->httpd);
            if (left > 0)
                logger_printf(h->broker->log,
                              LOG_WARNING,
                              NULL,
                              "http: %ld requests still in flight after %ds; "
                              "answering the queued ones 503 and waiting for "
                              "the running ones",
                              left,
                              timeout_s);
            /* Requests still queued are answered 503 without running;
             * running handlers end within their own timeouts (database,
             * Fabric Manager) and are waited for.  Every suspended
             * connection has been resumed once this returns, as
             * MHD_stop_daemon() requires; later requests on kept-alive
             * connections are answered 503 (ESHUTDOWN from the pool).
             */
            workers_stop(h->workers);
            /* Deferred requests (node reports in their groups) end within
             * their deadlines and the database's timeouts: wait for them
             * too, since each is a suspended connection.
             */
            wait_deferred(h);
            /* Give the libmicrohttpd threads a moment to send those
             * replies.
             */
            wait_inflight(h, monotime_ns() + 1000000000, false);
            httpd_stop(h->httpd);
        }
        workers_destroy(h->workers);
        free(h);
    }
    errno = saved_errno;
}
