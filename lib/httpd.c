/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libmicrohttpd request pipeline (see httpd.h).
 *
 * libmicrohttpd calls on_request() several times per request: first with
 * no body (we allocate the request and call begin()), then once per chunk
 * of body (we append it, refusing more than body_max), then a last time
 * with nothing left (we call run(), which queues exactly one reply or
 * suspends the connection; after httpd_resume() libmicrohttpd calls
 * on_request() once more with nothing to upload, and run() again).
 * on_completed() runs when the reply has been sent or the connection
 * died; it calls done() and frees the request.
 *
 * Every open connection is kept in a list (httpd_on_connection()) with its
 * client's address and the time its current request began (its accept,
 * or the end of the previous reply on a kept-alive connection; 0 once the
 * request has fully arrived, while it is served).  Two things use it:
 *
 * - The request deadline: reaper_main() shuts down the sockets of the
 *   connections whose request is late.
 * - The connection budget: libmicrohttpd's own limit is set above
 *   max_connections, and a connection accepted past the budget displaces
 *   a waiting one (its request not yet in), chosen by budget_victim():
 *   first the oldest of the client address with the most new connections
 *   waiting, unless that is the newcomer's own address, when the
 *   newcomer is closed.
 *   So however many
 *   addresses hold slow connections, a client that sends its request at
 *   once gets in, and a connection being served is never cut.  Clients
 *   in the priority blocks have a budget of their own and are never
 *   displaced.
 *
 * Both connection notifications run on the connection's thread and the
 * socket is closed only after CLOSED has returned, so a shutdown() under
 * h->lock never touches a descriptor that has been closed and perhaps
 * reused; shutdown() makes libmicrohttpd see end-of-file and close the
 * connection itself.
 *
 * This file holds the request callbacks, the reaper and the daemon's start
 * and stop; httpd_conn.c keeps the connection list and the budget, and
 * httpd_reply.c the helpers a service calls on a request.  httpd_int.h is
 * what they share.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "vnib/cidr.h"
#include "vnib/monotime.h"
#include "httpd_int.h"

uint16_t httpd_port(const struct httpd *h)
{
    return h->port;
}

long httpd_inflight(const struct httpd *h)
{
    return atomic_load(&h->inflight);
}

long httpd_unanswered(struct httpd *h)
{
    long n = 0;

    if (h->deadline_ns <= 0)
        return 0;
    pthread_mutex_lock(&h->lock);
    for (struct conn *c = h->conns; c; c = c->next)
        if (!c->cut && atomic_load(&c->since_ns) != 0)
            n++;
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* The deadline bookkeeping of a libmicrohttpd connection, or NULL. */

/* Append a body chunk within r->body_max: 0, or -1 with errno E2BIG or
 * ENOMEM.
 */
static int body_append(struct httpd_req *r, const char *data, size_t len)
{
    size_t limit = r->body_max;
    if (len > limit || r->body_len > limit - len) {
        errno = E2BIG;
        return -1;
    }
    if (r->body_len + len + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 1024;
        while (cap < r->body_len + len + 1)
            cap *= 2;
        char *nb = realloc(r->body, cap);
        if (!nb) {
            errno = ENOMEM;
            return -1;
        }
        r->body = nb;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return 0;
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
    struct httpd *h = cls;
    struct httpd_req *r = *req_cls;

    (void)version;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        atomic_fetch_add(&h->inflight, 1);
        r->httpd = h;
        r->conn = conn;
        r->method = method;
        r->url = url;
        r->start_ns = monotime_ns();
        *req_cls = r;
        return h->handlers.begin(h->handlers.cls, r) < 0 ? MHD_NO : MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->responded || r->refused) {
            /* The rest of a refused body is read and dropped, within
             * reason; a client that sends more is cut off.
             */
            r->discarded += n;
            return r->discarded > r->discard_max ? MHD_NO : MHD_YES;
        }
        if (body_append(r, upload_data, n) < 0)
            r->refused = errno;
        return MHD_YES;
    }
    if (r->responded)
        return MHD_YES;
    /* The whole request is in: the service's time is not the client's. */
    httpd_conn_set_since(conn, 0, false);
    return h->handlers.run(h->handlers.cls, r) < 0 ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct httpd *h = cls;
    struct httpd_req *r = *req_cls;

    /* The next request on a kept-alive connection starts arriving now. */
    httpd_conn_set_since(conn, monotime_ns(), true);
    if (!r)
        return;
    h->handlers.done(h->handlers.cls, r, (int)toe);
    free(r->body);
    free(r);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
}

/* The reaper: every tenth of the deadline (50 ms to 1 s), shut down the
 * socket of each connection whose request began longer than the deadline
 * ago and has not been answered; shutdown() makes libmicrohttpd see
 * end-of-file and close the connection itself.
 */
static void *reaper_main(void *arg)
{
    struct httpd *h = arg;
    int64_t period = h->deadline_ns / 10;

    if (period < 50 * 1000000LL)
        period = 50 * 1000000LL;
    if (period > 1000 * 1000000LL)
        period = 1000 * 1000000LL;
    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        struct timespec ts;
        int64_t until = monotime_ns() + period;
        ts.tv_sec = (time_t)(until / 1000000000);
        ts.tv_nsec = (long)(until % 1000000000);
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
        if (h->stopping)
            break;
        int64_t now = monotime_ns();
        long cut = 0;
        for (struct conn *c = h->conns; c; c = c->next) {
            int64_t since = atomic_load(&c->since_ns);
            if (c->cut || since == 0 || now - since < h->deadline_ns)
                continue;
            httpd_conn_cut(h, c);
            cut++;
        }
        h->stats.deadline_cut += cut;
        if (cut > 0)
            logger_printf(h->log,
                          LOG_NOTICE,
                          NULL,
                          "http: closed %ld connection%s whose request did "
                          "not arrive within %s (%lld ms)",
                          cut,
                          cut == 1 ? "" : "s",
                          h->deadline_name,
                          (long long)(h->deadline_ns / 1000000));
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Route libmicrohttpd's own diagnostics into the log, at most log_burst
 * lines a second when that is set.  It writes a line for each connection
 * refused past a limit or closed by its client, so a flood of
 * connections would otherwise become a flood of log lines; what is left
 * out is counted and reported once the next second begins.  The format
 * is libmicrohttpd's: the attribute checks the arguments it passes with
 * it, as for any vprintf-style function.
 */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct httpd *h = cls;
    char msg[512];
    long dropped = 0;
    bool print = true;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    if (h->log_burst > 0) {
        int64_t now = monotime_ns();
        pthread_mutex_lock(&h->log_lock);
        if (now - h->log_window_ns >= 1000000000) {
            dropped = h->log_dropped;
            h->log_dropped = 0;
            h->log_window_ns = now;
            h->log_count = 0;
        }
        print = h->log_count < h->log_burst;
        if (print)
            h->log_count++;
        else
            h->log_dropped++;
        pthread_mutex_unlock(&h->log_lock);
    }
    if (dropped > 0)
        logger_printf(h->log,
                      LOG_NOTICE,
                      NULL,
                      "http: %ld more libmicrohttpd messages left out "
                      "(more than %d a second; connection limits reached "
                      "or connections closed)",
                      dropped,
                      h->log_burst);
    if (print)
        logger_printf(h->log, LOG_INFO, NULL, "http: %s", msg);
}

/* Stop the reaper thread, if it runs. */
static void reaper_stop(struct httpd *h)
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

/* libmicrohttpd's connection limit: the budgets and room for the
 * connections shut down but not yet closed by libmicrohttpd, so that
 * it keeps accepting while the budget displaces; at its limit it stops
 * accepting and new clients wait in the kernel's backlog.
 */
static unsigned mhd_connection_limit(const struct httpd_config *cfg)
{
    unsigned slack = cfg->max_connections / 8;
    if (slack < 64)
        slack = 64;
    return cfg->max_connections + cfg->priority_connections + slack;
}

/* The daemon's flags and options for cfg, into opts (at least 16). */
static unsigned int daemon_options(const struct httpd_config *cfg,
                                   struct httpd *h,
                                   struct MHD_OptionItem *opts)
{
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO
                         | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    size_t n = 0;

    if (cfg->thread_per_connection)
        flags |= MHD_USE_THREAD_PER_CONNECTION;
    if (cfg->suspend)
        flags |= MHD_ALLOW_SUSPEND_RESUME;
    if (cfg->addr->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (cfg->tls_cert)
        flags |= MHD_USE_TLS;
    /* The logger first, to catch all. */
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, h};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_SOCK_ADDR, 0, (void *)(uintptr_t)cfg->addr};
    if (cfg->threads > 0 && !cfg->thread_per_connection)
        opts[n++] = (struct MHD_OptionItem){
            MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)cfg->threads, NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_LIMIT, (intptr_t)mhd_connection_limit(cfg), NULL};
    if (cfg->per_ip_connections > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            (intptr_t)cfg->per_ip_connections,
                                            NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)cfg->timeout_s, NULL};
    if (cfg->memory_limit > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                            (intptr_t)cfg->memory_limit,
                                            NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)httpd_on_connection, h};
    if (cfg->tls_cert) {
        opts[n++] = (struct MHD_OptionItem){
            MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)(uintptr_t)cfg->tls_cert};
        opts[n++] = (struct MHD_OptionItem){
            MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)(uintptr_t)cfg->tls_key};
        if (cfg->tls_priorities)
            opts[n++] =
                (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES,
                                        0,
                                        (void *)(uintptr_t)cfg->tls_priorities};
    }
    opts[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return flags;
}

struct httpd *httpd_start(const struct httpd_config *cfg, vnib_error_t *errp)
{
    struct httpd *h = calloc(1, sizeof(*h));
    struct MHD_OptionItem opts[16];

    if (!h) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    h->handlers = cfg->handlers;
    h->log = cfg->log;
    h->log_burst = cfg->log_burst;
    h->deadline_ns = cfg->deadline_ms * 1000000LL;
    h->budget = cfg->max_connections;
    h->prio_budget = cfg->npriority > 0 ? cfg->priority_connections : 0;
    h->npeers = 64;
    while (h->npeers < cfg->max_connections && h->npeers < (1u << 20))
        h->npeers *= 2;
    if (!(h->peers = calloc(h->npeers, sizeof(h->peers[0])))
        || (cfg->npriority > 0
            && !(h->prio = calloc(cfg->npriority, sizeof(h->prio[0]))))) {
        free(h->peers);
        free(h);
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    if (cfg->npriority > 0)
        memcpy(h->prio, cfg->priority, cfg->npriority * sizeof(h->prio[0]));
    h->nprio = cfg->npriority;
    snprintf(h->deadline_name,
             sizeof(h->deadline_name),
             "%s",
             cfg->deadline_name ? cfg->deadline_name : "the request deadline");
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->log_lock, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&h->wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    unsigned int flags = daemon_options(cfg, h, opts);
    h->daemon = MHD_start_daemon(flags,
                                 0,
                                 httpd_on_accept,
                                 h,
                                 on_request,
                                 h,
                                 MHD_OPTION_ARRAY,
                                 opts,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        errno = EADDRINUSE;
        errprintf(errp, "cannot listen");
        goto error;
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
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
    httpd_stop(h);
    return NULL;
}

void httpd_quiesce(struct httpd *h)
{
    MHD_socket fd = MHD_quiesce_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

void httpd_stop(struct httpd *h)
{
    int saved_errno = errno;
    if (h) {
        reaper_stop(h);
        if (h->daemon)
            MHD_stop_daemon(h->daemon);
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->lock);
        pthread_mutex_destroy(&h->log_lock);
        /* Every connection has been closed: the peers are gone too. */
        free(h->peers);
        free(h->prio);
        free(h);
    }
    errno = saved_errno;
}
