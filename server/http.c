/* libmicrohttpd listener and request pipeline (see http.h).
 *
 * libmicrohttpd calls on_request() several times per request: first with
 * no body (we allocate the request, match the route, authenticate and
 * authorise the caller and check the announced Content-Length, so that
 * a refused request is answered before any body is read), then once per
 * chunk of body (we append it, refusing more than the route allows), then
 * a last time with nothing left (we run the handler and queue exactly one
 * reply).  on_completed() runs when the reply has been sent or the
 * connection died; it records metrics, writes the access log line and
 * frees the request.
 *
 * Suspension.  A handler that may wait (the route says ROUTE_WORKER)
 * does not run on the libmicrohttpd thread, which also polls many other
 * connections: the last call suspends the connection and queues the
 * request for a request worker (workers.c).  The worker runs the handler,
 * stores its outcome in the request (result, out, text, error) and
 * resumes the connection; libmicrohttpd then calls on_request() once more
 * with nothing to upload, and that call sends the stored outcome.  From
 * the submit to the resume the worker alone owns the request; it never
 * touches it after MHD_resume_connection().  A suspended connection is
 * not polled, so a client that hangs up meanwhile is noticed only after
 * the resume: on_completed(), which frees the request, cannot run while
 * a worker holds it.  When the queue is full the request is answered 503
 * unavailable at once, through the same store-and-resume path.
 *
 * Limits that protect the broker from slow or hostile clients are all set
 * here: threads, request workers and their queue, connection count,
 * connections per client address, idle timeout, per-connection memory
 * for the request line and headers, body sizes per route, and the
 * request deadline.  libmicrohttpd's idle
 * timeout restarts on every byte received, so it cannot stop a client
 * that trickles a byte every few seconds; a reaper thread (reaper_main)
 * closes connections whose request has not fully arrived within
 * server.request_deadline_ms of its start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
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

#include <microhttpd.h>

#include "vnib/logger.h"
#include "vnib/secfile.h"
#include "server/config.h"
#include "server/http.h"
#include "server/hwcoll.h"
#include "server/metrics.h"
#include "server/store.h"
#include "server/workers.h"

/* One open connection, for the request deadline.  `since` is when the
 * request now arriving began: the connection's accept, or the end of the
 * previous reply on a kept-alive connection; 0 once the request has
 * fully arrived (while the handler runs and the reply is sent), when no
 * deadline applies.
 */
struct conn {
    struct conn *prev, *next;
    MHD_socket fd;
    atomic_llong since_ns;
    bool cut; /* shut down by the reaper; libmicrohttpd has yet to notice */
};

struct http {
    struct broker *broker;
    struct MHD_Daemon *daemon;
    struct workers *workers; /* run the ROUTE_WORKER handlers */
    int nworkers;            /* their threads */
    uint16_t port;
    atomic_long inflight; /* requests between first call and completion */

    /* The deadline reaper: a thread that shuts down the sockets of
     * connections whose request has not fully arrived in time.
     */
    int64_t deadline_ns;  /* server.request_deadline_ms; 0: no reaper */
    pthread_mutex_t lock; /* guards conns and stopping */
    pthread_cond_t wake;
    struct conn *conns;
    bool stopping;
    bool reaper_started;
    pthread_t reaper;

    /* on_mhd_log's rate limit. */
    pthread_mutex_t log_lock;
    int64_t log_window_ns; /* start of the current one-second window */
    int log_count;         /* lines written in it */
    long log_dropped;      /* lines left out since the last report */
};

/* Where a request stands in the hand-off to a worker (request.queued). */
enum {
    REQ_INLINE = 0, /* not handed off: the libmicrohttpd thread owns it */
    REQ_QUEUED,     /* suspended; a worker owns it until it resumes */
    REQ_DONE,       /* resumed: the outcome is stored, to be sent */
};

/* errno to HTTP status and default error code: the one place where this
 * mapping lives.  Handlers may override the code with request_fail().
 */
static const struct {
    int errnum;
    int status;
    const char *code;
} error_map[] = {
    {EINVAL, 400, "bad_request"},
    {EPROTO, 400, "invalid_json"},
    {EACCES, 401, "unauthorized"},
    {EPERM, 403, "forbidden"},
    {ENOENT, 404, "not_found"},
    {EOPNOTSUPP, 405, "method_not_allowed"},
    {EEXIST, 409, "conflict"},
    {EALREADY, 409, "conflict"},
    {E2BIG, 413, "payload_too_large"},
    {EMSGSIZE, 413, "payload_too_large"},
    {ENOSPC, 503, "exhausted"},
    {EAGAIN, 503, "unavailable"},
    {ETIMEDOUT, 503, "unavailable"},
    {ESTALE, 503, "schema_outdated"},
    {EDQUOT, 503, "database_full"},
    {EPROTONOSUPPORT, 415, "unsupported_media_type"},
    {EOVERFLOW, 431, "header_fields_too_large"},
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int request_fail(struct request *req,
                 int errnum,
                 const char *code,
                 vnib_error_t *errp,
                 const char *fmt,
                 ...)
{
    if (errp) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errp->text, sizeof(errp->text), fmt, ap);
        va_end(ap);
    }
    req->error_code = code;
    errno = errnum;
    return -1;
}

int request_json(struct request *req, json_t **objp, vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *obj;

    if (!req->body || req->body_len == 0)
        return request_fail(req,
                            EPROTO,
                            "invalid_json",
                            errp,
                            "a JSON object is required as the request body");
    obj = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return request_fail(req,
                            EPROTO,
                            "invalid_json",
                            errp,
                            "invalid JSON at line %d, column %d: %s",
                            jerr.line,
                            jerr.column,
                            jerr.text);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return request_fail(req,
                            EPROTO,
                            "invalid_json",
                            errp,
                            "the request body must be a JSON object");
    }
    *objp = obj;
    return 0;
}

const char *request_header(const struct request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *request_query(const struct request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

long http_inflight(const struct http *h)
{
    return atomic_load(&h->inflight);
}

int http_worker_count(const struct http *h)
{
    return h->nworkers;
}

long http_queue_depth(const struct http *h)
{
    return h->workers ? workers_depth(h->workers) : 0;
}

uint16_t http_port(const struct http *h)
{
    return h->port;
}

static void request_id_new(char *id)
{
    unsigned char raw[8];
    if (getrandom(raw, sizeof(raw), GRND_NONBLOCK) != (ssize_t)sizeof(raw)) {
        /* Ids only correlate log lines; uniqueness suffices. */
        uint64_t t = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 48);
        memcpy(raw, &t, sizeof(raw));
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(id + 2 * i, 3, "%02x", raw[i]);
}

/* The deadline bookkeeping of a libmicrohttpd connection, or NULL. */
static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Start (since_ns > 0) or stop (0) the deadline clock of a connection. */
static void conn_set_since(struct MHD_Connection *mc, int64_t since_ns)
{
    struct conn *c = conn_of(mc);
    if (c)
        atomic_store(&c->since_ns, since_ns);
}

/* Queue a reply with the standard headers.  Takes ownership of body. */
static enum MHD_Result send_reply(struct request *req,
                                  int status,
                                  char *body,
                                  size_t len,
                                  const char *content_type,
                                  const char *allow)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Request-Id", req->id);
    if (req->handler_ns > 0) {
        /* The handler's own time, so that benchmarks can tell server time
         * from transport (https://www.w3.org/TR/server-timing/).
         */
        char st[48];
        snprintf(st, sizeof(st), "app;dur=%.3f", (double)req->handler_ns / 1e6);
        MHD_add_response_header(resp, "Server-Timing", st);
    }
    if (allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (req->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", req->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    ret = MHD_queue_response(req->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    conn_set_since(req->conn, 0); /* the request is in; no deadline now */
    req->status = status;
    req->responded = true;
    return ret;
}

/* Render a JSON value as the reply body.  Steals val. */
static enum MHD_Result send_json(struct request *req,
                                 int status,
                                 json_t *val,
                                 const char *allow)
{
    char *body = json_dumps(val, JSON_COMPACT);
    json_decref(val);
    if (!body)
        return MHD_NO;
    size_t len = strlen(body);
    char *nl = realloc(body, len + 2);
    if (nl) {
        body = nl;
        body[len++] = '\n';
        body[len] = '\0';
    }
    return send_reply(req, status, body, len, "application/json", allow);
}

/* The client's address, numeric ("192.0.2.7", "2001:db8::1"), into buf. */
static void client_address(const struct request *req, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    snprintf(buf, size, "unknown");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET,
                  &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
                  buf,
                  (socklen_t)size);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6,
                  &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                  buf,
                  (socklen_t)size);
}

/* Log a refusal (401, 403) at notice, with the client's address and, once
 * a token was recognised, its name and role; never the token itself.  The
 * logger folds repeats of the same refusal, so a client retrying a bad
 * token makes one line per window, not one per request.
 */
static void log_refusal(const struct request *req,
                        int status,
                        const char *message)
{
    char addr[INET6_ADDRSTRLEN];

    if (!logger_enabled(req->broker->log, LOG_NOTICE))
        return;
    client_address(req, addr, sizeof(addr));
    if (req->who.role)
        logger_printf(req->broker->log,
                      LOG_NOTICE,
                      req->id,
                      "refused %d %s %s from %s token '%s' (%s): %s",
                      status,
                      req->method,
                      req->route ? req->route->pattern : req->path,
                      addr,
                      req->who.name,
                      auth_role_name(req->who.role),
                      message && *message ? message : "forbidden");
    else
        logger_printf(req->broker->log,
                      LOG_NOTICE,
                      req->id,
                      "refused %d %s %s from %s: %s",
                      status,
                      req->method,
                      req->route ? req->route->pattern : req->path,
                      addr,
                      message && *message ? message : "unauthorized");
}

/* Turn errno (and the request's code, if a handler chose one) into the
 * error reply.  Server-side failures get a generic message: the details
 * are in the log, under the request id.
 */
static enum MHD_Result send_error(struct request *req,
                                  int errnum,
                                  const char *message,
                                  const char *allow)
{
    int status = 500;
    const char *code = "internal_error";

    for (size_t i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++) {
        if (error_map[i].errnum == errnum) {
            status = error_map[i].status;
            code = error_map[i].code;
            break;
        }
    }
    if (req->error_code)
        code = req->error_code;
    if (status == 401 || status == 403)
        log_refusal(req, status, message);
    const char *fixed = store_public_message(message);
    if (fixed) {
        /* libpq's or the server's own words name hosts, sockets, users
         * and tables: they go to the log, the client gets a fixed text.
         */
        logger_printf(req->broker->log,
                      status == 500 ? LOG_ERR : LOG_WARNING,
                      req->id,
                      "%s %s: %s",
                      req->method,
                      req->path,
                      message);
        message = fixed;
    }
    if (status == 500 && !fixed) {
        logger_printf(req->broker->log,
                      LOG_ERR,
                      req->id,
                      "%s %s: %s (%s)",
                      req->method,
                      req->path,
                      message && *message ? message : "error",
                      strerror(errnum));
        message = "internal error; see the broker log for this request id";
    }
    if (status == 503 && !req->retry_after)
        req->retry_after = 1;
    json_t *err = json_pack("{s:{s:s, s:s, s:s}}",
                            "error",
                            "code",
                            code,
                            "message",
                            message && *message ? message : code,
                            "request_id",
                            req->id);
    if (!err)
        return MHD_NO;
    return send_json(req, status, err, allow);
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
    const char *hdr = request_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth_check(req->broker->auth, hdr, &req->who, errp) < 0) {
        errno = EACCES;
        return -1;
    }
    if (!(req->route->roles & req->who.role)) {
        /* Logged with the reply, by send_error(). */
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
    req->handler_start_ns = mono_ns();
    req->result = req->route->handler(req, &req->out, &req->error);
    req->result_errno = errno ? errno : EIO;
    req->handler_ns = mono_ns() - req->handler_start_ns;
}

/* Send the outcome run_handler() kept. */
static enum MHD_Result send_result(struct request *req)
{
    json_t *out = req->out;

    req->out = NULL;
    if (req->result < 0) {
        json_decref(out);
        return send_error(req, req->result_errno, req->error.text, NULL);
    }
    if (req->text) {
        json_decref(out);
        char *text = req->text;
        req->text = NULL;
        return send_reply(req,
                          req->result,
                          text,
                          req->text_len,
                          req->content_type ? req->content_type : "text/plain",
                          NULL);
    }
    if (!out)
        out = json_object();
    return send_json(req, req->result, out, NULL);
}

/* A request worker's job: run the handler of a suspended request, keep
 * the outcome, resume the connection.  After the resume the request may
 * be sent, completed and freed at any moment by the libmicrohttpd
 * thread: nothing here reads it once MHD_resume_connection() is called.
 */
static void request_run(void *arg, int64_t wait_ns, bool cancelled)
{
    struct request *req = arg;
    struct MHD_Connection *conn = req->conn;

    metrics_observe_queue_wait(req->broker->metrics, wait_ns);
    if (cancelled) {
        req->result = request_fail(req,
                                   EAGAIN,
                                   "unavailable",
                                   &req->error,
                                   "the broker is shutting down");
        req->result_errno = EAGAIN;
    } else {
        run_handler(req);
    }
    req->queued = REQ_DONE;
    MHD_resume_connection(conn);
}

/* Hand a request whose handler may block to the workers.  The connection
 * is suspended first, since a worker may finish and resume it before
 * this returns.  A full queue (or a pool being stopped) is answered 503
 * through the same path, so that it never waits here.
 */
static enum MHD_Result request_queue(struct http *h,
                                     struct MHD_Connection *conn,
                                     struct request *req)
{
    req->queued = REQ_QUEUED;
    MHD_suspend_connection(conn);
    if (workers_submit(h->workers, request_run, req) == 0)
        return MHD_YES; /* the request is the worker's until it resumes */
    /* The 503 is logged by on_completed(), as every 5xx. */
    int e = errno;
    req->result = request_fail(req,
                               EAGAIN,
                               "unavailable",
                               &req->error,
                               e == EAGAIN ? "the broker is busy; retry later"
                                           : "the broker is shutting down");
    req->result_errno = EAGAIN;
    req->retry_after = 1;
    req->queued = REQ_DONE;
    MHD_resume_connection(conn);
    return MHD_YES;
}

/* The route's body limit, capped by server.max_body_bytes. */
static size_t body_limit(const struct request *req)
{
    size_t cap = (size_t)req->broker->cfg->server.max_body_bytes;
    return req->route->max_body < cap ? req->route->max_body : cap;
}

/* Append a body chunk, enforcing the route's limit. */
static int body_append(struct request *req, const char *data, size_t len)
{
    size_t limit = body_limit(req);
    if (len > limit || req->body_len > limit - len) {
        errno = E2BIG;
        return -1;
    }
    if (req->body_len + len + 1 > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap : 1024;
        while (cap < req->body_len + len + 1)
            cap *= 2;
        char *nb = realloc(req->body, cap);
        if (!nb)
            return -1;
        req->body = nb;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, len);
    req->body_len += len;
    req->body[req->body_len] = '\0';
    return 0;
}

/* True when a Content-Type value names JSON: "application/json", any
 * case, optionally followed by parameters ("; charset=utf-8").
 */
static bool media_type_is_json(const char *ct)
{
    static const char json[] = "application/json";
    size_t n = sizeof(json) - 1;

    if (!ct)
        return false;
    ct += strspn(ct, " \t");
    if (strncasecmp(ct, json, n) != 0)
        return false;
    ct += n;
    ct += strspn(ct, " \t");
    return *ct == '\0' || *ct == ';';
}

/* Whether the request announces a body: a non-zero Content-Length or a
 * Transfer-Encoding (chunked).
 */
static bool has_body(struct MHD_Connection *conn)
{
    const char *clen = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (MHD_lookup_connection_value(
            conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        return true;
    return clen && strtoull(clen, NULL, 10) > 0;
}

static enum MHD_Result header_size_add(void *cls,
                                       enum MHD_ValueKind kind,
                                       const char *key,
                                       const char *value)
{
    size_t *total = cls;
    (void)kind;
    /* "Name: value\r\n" on the wire; query arguments "&k=v". */
    *total += strlen(key) + (value ? strlen(value) : 0) + 4;
    return MHD_YES;
}

/* The size of the request line and headers as received, near enough:
 * libmicrohttpd has parsed them, so it is recomputed from the parts.
 */
static size_t header_size(struct MHD_Connection *conn,
                          const char *method,
                          const char *url)
{
    size_t total = strlen(method) + strlen(url) + sizeof(" HTTP/1.1\r\n");
    MHD_get_connection_values(
        conn, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, header_size_add, &total);
    return total;
}

/* First call for a request: allocate, match, check announced size. */
static enum MHD_Result request_begin(struct http *h,
                                     struct MHD_Connection *conn,
                                     const char *url,
                                     const char *method,
                                     void **req_cls)
{
    struct request *req = calloc(1, sizeof(*req));
    char allow[128];

    if (!req)
        return MHD_NO;
    atomic_fetch_add(&h->inflight, 1);
    req->broker = h->broker;
    req->conn = conn;
    req->method = method;
    req->path = url;
    req->start_ns = mono_ns();
    req->route_index = (int)routes_count;
    request_id_new(req->id);
    *req_cls = req;

    /* libmicrohttpd's own 431 is an HTML page without our headers; its
     * buffer is larger than server.max_header_bytes (see http_create) so
     * that this check answers first, in the documented format.
     */
    if (header_size(conn, method, url)
        > (size_t)h->broker->cfg->server.max_header_bytes)
        return send_error(req,
                          EOVERFLOW,
                          "request line and headers are larger than the "
                          "broker accepts",
                          NULL);

    int idx = routes_match(method, url, &req->params, allow, sizeof(allow));
    if (idx < 0) {
        if (errno == EOPNOTSUPP)
            return send_error(
                req, EOPNOTSUPP, "method not allowed on this path", allow);
        return send_error(req, ENOENT, "no such endpoint", NULL);
    }
    req->route_index = idx;
    req->route = &routes[idx];

    /* The caller is known before a byte of body is read; a refusal is
     * sent now and libmicrohttpd closes the connection without reading
     * the body.
     */
    vnib_error_t error = {""};
    if (authorize(req, &error) < 0)
        return send_error(req, errno, error.text, NULL);

    const char *clen = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (clen) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(clen, &end, 10);
        if (errno || *end || n > body_limit(req)) {
            return send_error(
                req,
                E2BIG,
                req->route->max_body
                    ? "request body is larger than this endpoint accepts"
                    : "this endpoint takes no request body",
                NULL);
        }
    }
    /* Bodies are JSON.  A form or text body (what `curl -d` sends without
     * -H) is refused rather than parsed as if it were.
     */
    if (req->route->max_body > 0 && has_body(conn)
        && !media_type_is_json(
            request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE)))
        return send_error(req,
                          EPROTONOSUPPORT,
                          "request bodies must be sent as Content-Type: "
                          "application/json",
                          NULL);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **req_cls)
{
    struct http *h = cls;
    struct request *req = *req_cls;

    (void)version;
    if (!req)
        return request_begin(h, conn, url, method, req_cls);
    if (req->responded) {
        *upload_data_size = 0; /* discard the rest of a refused body */
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->refused) {
            /* libmicrohttpd cannot answer in the middle of a chunked
             * upload, so the rest is read and dropped, up to the largest
             * body any route takes; a client that sends more is cut off.
             */
            req->discarded += n;
            if (req->discarded > (size_t)h->broker->cfg->server.max_body_bytes)
                return MHD_NO;
            return MHD_YES;
        }
        if (body_append(req, upload_data, n) < 0)
            req->refused = errno;
        return MHD_YES;
    }
    /* Called again after a worker resumed the connection. */
    if (req->queued == REQ_DONE)
        return send_result(req);
    /* The whole request is in: the handler's time is not the client's. */
    conn_set_since(conn, 0);
    if (req->refused)
        return send_error(req,
                          req->refused,
                          req->refused == E2BIG ? "request body is larger than "
                                                  "this endpoint accepts"
                                                : "out of memory",
                          NULL);
    if (req->route->runs == ROUTE_WORKER)
        return request_queue(h, conn, req);
    run_handler(req);
    return send_result(req);
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http *h = cls;
    struct request *req = *req_cls;

    /* The next request on a kept-alive connection starts arriving now. */
    conn_set_since(conn, mono_ns());
    if (!req)
        return;
    int64_t ns = mono_ns() - req->start_ns;
    if (req->status > 0) {
        metrics_observe(h->broker->metrics, req->route_index, req->status, ns);
        int level = req->status >= 500 ? LOG_WARNING : LOG_DEBUG;
        /* A 503 is logged without its duration, so that the logger can
         * fold the same answer repeated (a database outage answers every
         * /readyz probe 503) into one line and a count.
         */
        if (req->status == 503 && level < LOG_DEBUG)
            logger_printf(h->broker->log,
                          level,
                          req->id,
                          "%s %s %d",
                          req->method,
                          req->path,
                          req->status);
        else if (logger_enabled(h->broker->log, level))
            logger_printf(h->broker->log,
                          level,
                          req->id,
                          "%s %s %d %.3fms",
                          req->method,
                          req->path,
                          req->status,
                          (double)ns / 1e6);
    } else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        logger_printf(h->broker->log,
                      LOG_DEBUG,
                      req->id,
                      "%s %s: connection closed before a reply (%d)",
                      req->method,
                      req->path,
                      (int)toe);
    }
    json_decref(req->out);
    free(req->body);
    free(req->text);
    free(req);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
}

/* libmicrohttpd opens or closes a connection.  Both run on the
 * connection's worker thread; the socket is closed only after CLOSED has
 * returned, so the reaper, which shuts sockets down under h->lock, never
 * touches a descriptor that has been closed and perhaps reused.
 */
static void on_connection(void *cls,
                          struct MHD_Connection *mc,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http *h = cls;
    struct conn *c = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(c = calloc(1, sizeof(*c))))
            return; /* untracked: only the idle timeout applies */
        c->fd = ci->connect_fd;
        atomic_init(&c->since_ns, mono_ns());
        pthread_mutex_lock(&h->lock);
        c->next = h->conns;
        if (h->conns)
            h->conns->prev = c;
        h->conns = c;
        pthread_mutex_unlock(&h->lock);
        *socket_context = c;
        return;
    }
    if (!c)
        return;
    pthread_mutex_lock(&h->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&h->lock);
    free(c);
    *socket_context = NULL;
}

/* The reaper: every tenth of the deadline (50 ms to 1 s), shut down the
 * socket of each connection whose request began longer than the deadline
 * ago and has not been answered.  libmicrohttpd's idle timeout restarts
 * on every byte, so a client trickling its headers or body would
 * otherwise hold the connection for ever; shutdown() makes the worker
 * see end-of-file and close the connection itself.
 */
static void *reaper_main(void *arg)
{
    struct http *h = arg;
    int64_t period = h->deadline_ns / 10;

    if (period < 50 * 1000000LL)
        period = 50 * 1000000LL;
    if (period > 1000 * 1000000LL)
        period = 1000 * 1000000LL;
    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t until = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + period;
        ts.tv_sec = (time_t)(until / 1000000000);
        ts.tv_nsec = (long)(until % 1000000000);
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
        if (h->stopping)
            break;
        int64_t now = mono_ns();
        long cut = 0;
        for (struct conn *c = h->conns; c; c = c->next) {
            int64_t since = atomic_load(&c->since_ns);
            if (c->cut || since == 0 || now - since < h->deadline_ns)
                continue;
            shutdown(c->fd, SHUT_RDWR);
            c->cut = true;
            cut++;
        }
        if (cut > 0)
            logger_printf(h->broker->log,
                          LOG_NOTICE,
                          NULL,
                          "http: closed %ld connection%s whose request did "
                          "not arrive within server.request_deadline_ms "
                          "(%lld ms)",
                          cut,
                          cut == 1 ? "" : "s",
                          (long long)(h->deadline_ns / 1000000));
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Route libmicrohttpd's own diagnostics into our log, at most
 * MHD_LOG_BURST lines a second.  It writes a line for each connection
 * refused past a limit or closed by its client, so a flood of
 * connections would otherwise become a flood of log lines; what is left
 * out is counted and reported once the next second begins.
 */
#define MHD_LOG_BURST 10

/* The format is libmicrohttpd's: the attribute checks the arguments it
 * passes with it, as for any vprintf-style function. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct http *h = cls;
    char msg[512];
    long dropped = 0;
    bool print;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    int64_t now = mono_ns();
    pthread_mutex_lock(&h->log_lock);
    if (now - h->log_window_ns >= 1000000000) {
        dropped = h->log_dropped;
        h->log_dropped = 0;
        h->log_window_ns = now;
        h->log_count = 0;
    }
    print = h->log_count < MHD_LOG_BURST;
    if (print)
        h->log_count++;
    else
        h->log_dropped++;
    pthread_mutex_unlock(&h->log_lock);
    if (dropped > 0)
        logger_printf(h->broker->log,
                      LOG_NOTICE,
                      NULL,
                      "http: %ld more libmicrohttpd messages left out "
                      "(more than %d a second; connection limits reached "
                      "or connections closed)",
                      dropped,
                      MHD_LOG_BURST);
    if (print)
        logger_printf(h->broker->log, LOG_INFO, NULL, "http: %s", msg);
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
 * server.max_header_bytes lets request_begin() see, and refuse in JSON,
 * headers up to that size; only larger ones meet libmicrohttpd's own
 * (HTML) 431, or a closed connection.
 */
static size_t mhd_memory_limit(const struct config *cfg)
{
    return 2 * (size_t)cfg->server.max_header_bytes + 16384;
}

/* server.workers, or by default one per pooled database connection plus
 * one per reserve that may wait on the Fabric Manager inside a request
 * (hwcoll.request_concurrency, resolved): those wait for seconds, and
 * must not leave the database's work without a thread.
 */
static int http_workers(const struct broker *broker)
{
    const struct config *cfg = broker->cfg;

    if (cfg->server.workers > 0)
        return (int)cfg->server.workers;
    return (int)cfg->database.pool_size
           + (broker->hwcoll ? hwcoll_request_concurrency(broker->hwcoll) : 0);
}

/* server.queue_limit, or server.max_connections: each connection has at
 * most one request in the queue, so that default never refuses.
 */
static int http_queue_limit(const struct config *cfg)
{
    return (int)(cfg->server.queue_limit > 0 ? cfg->server.queue_limit
                                             : cfg->server.max_connections);
}

struct http *http_create(struct broker *broker, vnib_error_t *errp)
{
    const struct config *cfg = broker->cfg;
    struct http *h = NULL;
    char *cert = NULL, *key = NULL;
    size_t cert_len = 0, key_len = 0;
    struct sockaddr_storage ss = {0};
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO
                         | MHD_USE_ITC | MHD_USE_ERROR_LOG
                         | MHD_ALLOW_SUSPEND_RESUME;

    if (!(h = calloc(1, sizeof(*h)))) {
        errprintf(errp, "out of memory");
        goto error;
    }
    h->broker = broker;
    h->deadline_ns = cfg->server.request_deadline_ms * 1000000LL;
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->log_lock, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&h->wake, &ca);
        pthread_condattr_destroy(&ca);
    }

    if (inet_pton(AF_INET6,
                  cfg->server.address,
                  &((struct sockaddr_in6 *)&ss)->sin6_addr)
        == 1) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)cfg->server.port);
        flags |= MHD_USE_IPv6;
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
        if (secfile_read(cfg->server.tls_key, &key, &key_len, errp) < 0)
            goto error;
        flags |= MHD_USE_TLS;
    } else if (!is_loopback((struct sockaddr *)&ss)) {
        logger_printf(broker->log,
                      LOG_WARNING,
                      NULL,
                      "server: plain HTTP on non-loopback address %s: bearer "
                      "tokens cross the network in clear text; set "
                      "server.tls_cert and server.tls_key",
                      cfg->server.address);
    }

    h->nworkers = http_workers(broker);
    if (!(h->workers =
              workers_create(h->nworkers, http_queue_limit(cfg), errp)))
        goto error;

    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, key},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, cfg->server.tls_priorities},
        {MHD_OPTION_END, 0, NULL},
    };
    h->daemon = MHD_start_daemon(flags,
                                 0,
                                 NULL,
                                 NULL,
                                 on_request,
                                 h,
                                 MHD_OPTION_EXTERNAL_LOGGER,
                                 on_mhd_log,
                                 h, /* first, to catch all */
                                 MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&ss,
                                 MHD_OPTION_THREAD_POOL_SIZE,
                                 (unsigned int)cfg->server.threads,
                                 MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned int)cfg->server.max_connections,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                 (unsigned int)cfg->server.per_ip_connections,
                                 MHD_OPTION_CONNECTION_TIMEOUT,
                                 (unsigned int)cfg->server.connection_timeout_s,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                 mhd_memory_limit(cfg),
                                 MHD_OPTION_NOTIFY_COMPLETED,
                                 on_completed,
                                 h,
                                 MHD_OPTION_NOTIFY_CONNECTION,
                                 on_connection,
                                 h,
                                 MHD_OPTION_ARRAY,
                                 cert ? tls_opts : tls_opts + 3,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        errprintf(errp,
                  "cannot listen on %s port %ld%s (address in use, or a bad "
                  "certificate, key or server.tls_priorities?)",
                  cfg->server.address,
                  cfg->server.port,
                  cert ? " with TLS" : "");
        goto error;
    }
    /* libmicrohttpd has loaded the key into its TLS credentials. */
    secfile_free(key, key_len);
    secfile_free(cert, cert_len);
    key = cert = NULL;
    key_len = cert_len = 0;
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : (uint16_t)cfg->server.port;
    if (h->deadline_ns > 0) {
        int e = pthread_create(&h->reaper, NULL, reaper_main, h);
        if (e != 0) {
            errno = e;
            errprintf(errp, "cannot start the request deadline thread");
            goto error;
        }
        h->reaper_started = true;
    }
    return h;
error:
    if (h && h->daemon)
        MHD_stop_daemon(h->daemon);
    if (h)
        workers_destroy(h->workers);
    secfile_free(key, key_len);
    secfile_free(cert, cert_len);
    if (h) {
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->lock);
        pthread_mutex_destroy(&h->log_lock);
    }
    free(h);
    return NULL;
}

/* Stop the reaper thread, if it runs. */
static void reaper_stop(struct http *h)
{
    if (!h->reaper_started)
        return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->reaper, NULL);
    h->reaper_started = false;
}

void http_destroy(struct http *h, int timeout_s)
{
    int saved_errno = errno;
    if (h) {
        if (h->daemon) {
            /* Stop accepting, then let queued and running requests
             * finish.
             */
            MHD_socket fd = MHD_quiesce_daemon(h->daemon);
            if (fd != MHD_INVALID_SOCKET)
                close(fd);
            int64_t deadline = mono_ns() + (int64_t)timeout_s * 1000000000;
            while (atomic_load(&h->inflight) > 0 && mono_ns() < deadline) {
                struct timespec ts = {0, 10 * 1000000};
                nanosleep(&ts, NULL);
            }
            long left = atomic_load(&h->inflight);
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
            /* Give the libmicrohttpd threads a moment to send those
             * replies.
             */
            deadline = mono_ns() + 1000000000;
            while (atomic_load(&h->inflight) > 0 && mono_ns() < deadline) {
                struct timespec ts = {0, 10 * 1000000};
                nanosleep(&ts, NULL);
            }
            reaper_stop(h);
            MHD_stop_daemon(h->daemon);
        }
        workers_destroy(h->workers);
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->lock);
        pthread_mutex_destroy(&h->log_lock);
        free(h);
    }
    errno = saved_errno;
}
