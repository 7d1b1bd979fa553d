/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libmicrohttpd request pipeline that the broker and fmsim share.
 *
 * An httpd is one libmicrohttpd daemon and the stages every request runs
 * through, whatever the service: begin() once the request line and
 * headers are in (route, authenticate, check the announced body size; it
 * may reply at once), the body gathered up to the request's body_max, and
 * run() once the whole request is in (it replies, or suspends the
 * connection and replies after httpd_resume()).  done() runs when the
 * reply has been sent or the connection died, and frees what begin() and
 * run() kept.  A body over body_max is read and dropped up to discard_max
 * bytes (libmicrohttpd cannot answer in the middle of an upload), then
 * run() sees refused = E2BIG; a client that sends more is cut off.
 *
 * A request deadline (deadline_ms) protects against clients that trickle
 * their request: libmicrohttpd's idle timeout restarts on every byte, so
 * a reaper thread shuts down the sockets of connections whose request has
 * not fully arrived in time.  A connection budget (max_connections)
 * protects against many addresses doing so at once: past it, a new
 * connection displaces the oldest new connection still waiting for its
 * first request from the address that has the most (or is itself closed
 * when its own address is that one), else the connection idle the
 * longest since its last answer, so a client that sends its request at
 * once always gets in.  Addresses in the priority blocks
 * have a budget of their own (priority_connections) and are never
 * displaced.  libmicrohttpd's own diagnostics go to the logger, at most
 * log_burst lines a second.
 *
 * This is the only module that includes microhttpd.h.
 */
#ifndef VNIB_HTTPD_H
#define VNIB_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/cidr.h"
#include "vnib/error.h"
#include "vnib/logger.h"

struct sockaddr;
struct httpd;

/* One request in the pipeline. */
struct httpd_req {
    /* Set by httpd. */
    struct httpd *httpd;
    const char *method; /* borrowed from libmicrohttpd */
    const char *url;    /* decoded path, borrowed */
    char *body;         /* NUL-terminated, or NULL */
    size_t body_len;
    int64_t start_ns; /* monotonic arrival time (monotime_ns) */
    int status;       /* status sent; 0 until a reply is queued */
    bool responded;   /* a reply is queued */
    int refused;      /* errno of a body refused mid-upload, or 0 */

    /* Set by the service (begin()). */
    size_t body_max;    /* largest body taken (0: none) */
    size_t discard_max; /* refused body read and dropped before hanging up */
    void *data;         /* the service's own request state */

    /* Internal to the httpd module (lib/httpd*.c). */
    void *conn; /* struct MHD_Connection */
    size_t body_cap;
    size_t discarded;
};

/* The service's stages.  begin() and run() return 0 to go on, or -1 to
 * close the connection without a reply.  done()'s term is libmicrohttpd's
 * termination code: 0 when the reply was sent.
 */
struct httpd_handlers {
    int (*begin)(void *cls, struct httpd_req *r);
    int (*run)(void *cls, struct httpd_req *r);
    void (*done)(void *cls, struct httpd_req *r, int term);
    void *cls;
};

struct httpd_config {
    const struct sockaddr *addr; /* AF_INET or AF_INET6; port 0: any */
    unsigned threads;            /* polling threads (0: one) */
    bool thread_per_connection;  /* a thread per connection instead */
    bool suspend;                /* httpd_suspend() is used */
    unsigned max_connections;    /* the budget outside the priority blocks */
    unsigned per_ip_connections; /* 0: no limit */
    const struct cidr *priority; /* the priority blocks (copied) */
    size_t npriority;
    unsigned priority_connections; /* their own budget */
    unsigned timeout_s;            /* idle timeout */
    size_t memory_limit;           /* per connection; 0: libmicrohttpd's */
    const char *tls_cert;          /* PEM in memory; NULL: plain HTTP */
    const char *tls_key;           /* PEM in memory */
    const char *tls_priorities;    /* GnuTLS priorities; NULL: default */
    int64_t deadline_ms;           /* request deadline; 0: none */
    const char *deadline_name;     /* its setting, named in the log */
    struct logger *log;
    int log_burst; /* libmicrohttpd lines a second; 0: all */
    struct httpd_handlers handlers;
};

/* Start the daemon.  Returns NULL with errp set: errno EADDRINUSE when
 * libmicrohttpd cannot listen (address in use, bad certificate, key or
 * priorities), another errno when a thread or memory is missing.
 * Strings in cfg are copied or used only during the call.
 */
struct httpd *httpd_start(const struct httpd_config *cfg,
                          vnib_error_t *errp) VNIB_MUST_CHECK;

/* Stop accepting connections; those open go on. */
void httpd_quiesce(struct httpd *h);

/* Stop the daemon, waiting for its threads, and free it (NULL accepted). */
void httpd_stop(struct httpd *h);

/* The bound port. */
uint16_t httpd_port(const struct httpd *h);

/* Requests between begin() and done(). */
long httpd_inflight(const struct httpd *h);

/* Connections whose request is arriving or not yet answered, those just
 * accepted included (a request not begun yet is not in flight): after
 * httpd_quiesce() a graceful stop waits for these too, or a request that
 * was on its way when the listener closed would find the workers gone.
 * Counted only when a request deadline is set.
 */
long httpd_unanswered(struct httpd *h);

/* What the connection budget and the deadline did (counters since the
 * start) and the connections open in each budget now.
 */
struct httpd_stats {
    long open;                       /* counted in max_connections */
    long priority_open;              /* counted in priority_connections */
    unsigned long long displaced;    /* cut to make room for a newer one */
    unsigned long long refused;      /* cut at once: nothing to displace */
    unsigned long long deadline_cut; /* cut at the request deadline */
};

void httpd_get_stats(struct httpd *h, struct httpd_stats *st);

/* Queue a reply with Content-Type (when content_type is not NULL), the
 * headers in hdrs (name, value, ..., NULL; NULL values skipped; hdrs may
 * be NULL), and Cache-Control: no-store unless hdrs names a Cache-Control.
 * Takes ownership of body (malloc'd; NULL when len is 0).  Returns 0, or -1:
 * close the connection.
 */
int httpd_reply(struct httpd_req *r,
                int status,
                char *body,
                size_t len,
                const char *content_type,
                const char *const *hdrs);

/* val as httpd_reply_json() sends it: compact JSON and a newline, with
 * its length in *lenp.  A string the caller frees, or NULL (no memory).
 * For a reply rendered once and sent many times (httpd_reply() with
 * "application/json").
 */
char *httpd_json_text(const json_t *val, size_t *lenp) VNIB_MUST_CHECK;

/* Reply with val as compact JSON and a newline.  Steals val (NULL: -1). */
int httpd_reply_json(struct httpd_req *r,
                     int status,
                     json_t *val,
                     const char *const *hdrs);

/* Suspend the connection before handing the request to another thread,
 * which calls httpd_resume() when its outcome is kept in the request;
 * run() is then called again.  Only with cfg.suspend.  After the resume
 * the request may be completed and freed at any moment.
 */
void httpd_suspend(struct httpd_req *r);
void httpd_resume(struct httpd_req *r);

/* A request header (case-insensitive name), or NULL. */
const char *httpd_header(const struct httpd_req *r, const char *name);

/* A query-string argument, or NULL. */
const char *httpd_query(const struct httpd_req *r, const char *name);

/* The request's HTTP Basic credentials as new strings, which the caller
 * burns (vnib_memburn) and frees: 0, or -1 when there are none (or
 * memory is short).
 */
int httpd_basic_auth(const struct httpd_req *r, char **userp, char **passp);

/* Whether Content-Length is over limit (or not a number). */
bool httpd_length_over(const struct httpd_req *r, size_t limit);

/* Whether the request announces a body: a non-zero Content-Length or a
 * Transfer-Encoding.
 */
bool httpd_has_body(const struct httpd_req *r);

/* The size of the request line and headers as received, near enough. */
size_t httpd_header_size(const struct httpd_req *r);

/* True when a Content-Type value names JSON: "application/json", any
 * case, optionally followed by parameters ("; charset=utf-8").
 */
bool httpd_media_type_is_json(const char *ct);

/* The client's address, numeric ("192.0.2.7", "2001:db8::1"), or
 * "unknown", into buf.
 */
void httpd_client_address(const struct httpd_req *r, char *buf, size_t size);

/* A request body (len bytes) as a JSON object (duplicate keys refused).
 * Returns 0 with *objp a new reference, or -1 with errno EPROTO and errp
 * naming the line and column; `what` names the body in the messages
 * ("request body").
 */
int httpd_json_object(const char *body,
                      size_t len,
                      const char *what,
                      json_t **objp,
                      vnib_error_t *errp);

/* One row of a service's errno to HTTP status table. */
struct httpd_status {
    int errnum;
    int status;
    const char *code; /* the service's error code, or NULL */
};

/* The row of map (n rows) for errnum, or NULL. */
const struct httpd_status *httpd_status_of(const struct httpd_status *map,
                                           size_t n,
                                           int errnum);

#endif /* !VNIB_HTTPD_H */
