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
 * Every open connection is kept in a list (on_connection()) with its
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
#include "vnib/httpd.h"

/* One client address and the connections it holds in the budget. */
struct peer {
    struct peer *next; /* hash chain */
    unsigned char addr[16];
    int len;      /* 4 or 16 */
    long count;   /* its connections counted in the budget */
    long waiting; /* of those, new ones waiting for their first request */
};

/* One open connection.  since_ns is 0 while no deadline applies (the
 * request is in; the reply is being made or sent).
 */
struct conn {
    struct conn *prev, *next;
    struct httpd *httpd;
    MHD_socket fd;
    atomic_llong since_ns;
    struct peer *peer; /* NULL: not counted (priority, or cut) */
    bool served;       /* a request of it has been answered */
    bool waiting;      /* counted in peer->waiting: new, request not in */
    bool priority;     /* counted in the priority budget */
    bool cut;          /* shut down by us; libmicrohttpd has yet to notice */
};

struct httpd {
    struct httpd_handlers handlers;
    struct logger *log;
    struct MHD_Daemon *daemon;
    uint16_t port;
    atomic_long inflight; /* requests between begin() and done() */

    /* Open connections (the deadline reaper and the budget). */
    pthread_mutex_t lock; /* guards everything to reaper below */
    struct conn *conns;
    struct peer **peers; /* hash of client addresses, npeers buckets */
    size_t npeers;
    long budget;       /* connections outside the priority blocks */
    long prio_budget;  /* connections from the priority blocks */
    long counted;      /* counted in budget now */
    long npeers_live;  /* addresses with connections counted */
    long prio_counted; /* counted in prio_budget now */
    struct cidr *prio; /* the priority blocks */
    size_t nprio;
    struct httpd_stats stats;

    /* The deadline reaper. */
    int64_t deadline_ns; /* 0: no reaper */
    char deadline_name[64];
    pthread_cond_t wake;
    bool stopping;
    bool reaper_started;
    pthread_t reaper;

    /* on_mhd_log's rate limit. */
    int log_burst;
    pthread_mutex_t log_lock;
    int64_t log_window_ns; /* start of the current one-second window */
    int log_count;         /* lines written in it */
    long log_dropped;      /* lines left out since the last report */
};

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
static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Start (since_ns > 0) or stop (0) the deadline clock of a connection
 * (served: a reply has just been sent), and count it in its address's
 * share of the budget while it is new and its first request is not in.
 */
static void conn_set_since(struct MHD_Connection *mc,
                           int64_t since_ns,
                           bool served)
{
    struct conn *c = conn_of(mc);
    if (!c)
        return;
    struct httpd *h = c->httpd;
    pthread_mutex_lock(&h->lock);
    atomic_store(&c->since_ns, since_ns);
    c->served = c->served || served;
    bool waiting = since_ns != 0 && !c->served;
    if (c->peer && c->waiting != waiting) {
        c->waiting = waiting;
        c->peer->waiting += waiting ? 1 : -1;
    }
    pthread_mutex_unlock(&h->lock);
}

int httpd_reply(struct httpd_req *r,
                int status,
                char *body,
                size_t len,
                const char *content_type,
                const char *const *hdrs)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_buffer(
        len, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return -1;
    }
    if (content_type)
        MHD_add_response_header(
            resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    bool cache_control = false;
    for (size_t i = 0; hdrs && hdrs[i]; i += 2) {
        if (!hdrs[i + 1])
            continue;
        MHD_add_response_header(resp, hdrs[i], hdrs[i + 1]);
        if (strcasecmp(hdrs[i], MHD_HTTP_HEADER_CACHE_CONTROL) == 0)
            cache_control = true;
    }
    if (!cache_control)
        MHD_add_response_header(
            resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    conn_set_since(r->conn, 0, false); /* the request is in; no deadline now */
    r->status = status;
    r->responded = true;
    return ret == MHD_YES ? 0 : -1;
}

char *httpd_json_text(const json_t *val, size_t *lenp)
{
    char *body = json_dumps(val, JSON_COMPACT);
    if (!body)
        return NULL;
    size_t len = strlen(body);
    char *nl = realloc(body, len + 2);
    if (nl) {
        body = nl;
        body[len++] = '\n';
        body[len] = '\0';
    }
    *lenp = len;
    return body;
}

int httpd_reply_json(struct httpd_req *r,
                     int status,
                     json_t *val,
                     const char *const *hdrs)
{
    size_t len = 0;
    char *body = val ? httpd_json_text(val, &len) : NULL;
    json_decref(val);
    if (!body)
        return -1;
    return httpd_reply(r, status, body, len, "application/json", hdrs);
}

void httpd_suspend(struct httpd_req *r)
{
    MHD_suspend_connection(r->conn);
}

void httpd_resume(struct httpd_req *r)
{
    MHD_resume_connection(r->conn);
}

const char *httpd_header(const struct httpd_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *httpd_query(const struct httpd_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int httpd_basic_auth(const struct httpd_req *r, char **userp, char **passp)
{
    char *pass = NULL;
    char *name = MHD_basic_auth_get_username_password(r->conn, &pass);
    int rc = -1;

    *userp = *passp = NULL;
    if (name && pass && (*userp = strdup(name)) && (*passp = strdup(pass)))
        rc = 0;
    if (rc < 0) {
        free(*userp);
        *userp = NULL;
    }
    if (pass) {
        vnib_memburn(pass, strlen(pass));
        MHD_free(pass);
    }
    if (name)
        MHD_free(name);
    return rc;
}

bool httpd_length_over(const struct httpd_req *r, size_t limit)
{
    const char *clen = httpd_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!clen)
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(clen, &end, 10);
    return errno || *end || n > limit;
}

bool httpd_has_body(const struct httpd_req *r)
{
    const char *clen = httpd_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (httpd_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING))
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

/* libmicrohttpd has parsed the request line and headers, so their size
 * is recomputed from the parts.
 */
size_t httpd_header_size(const struct httpd_req *r)
{
    size_t total = strlen(r->method) + strlen(r->url) + sizeof(" HTTP/1.1\r\n");
    MHD_get_connection_values(r->conn,
                              MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND,
                              header_size_add,
                              &total);
    return total;
}

bool httpd_media_type_is_json(const char *ct)
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

void httpd_client_address(const struct httpd_req *r, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
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

int httpd_json_object(const char *body,
                      size_t len,
                      const char *what,
                      json_t **objp,
                      vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *obj;

    errno = EPROTO;
    if (!body || len == 0)
        return errprintf(errp, "a JSON object is required as the %s", what);
    obj = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj) {
        errno = EPROTO;
        return errprintf(errp,
                         "invalid JSON at line %d, column %d: %s",
                         jerr.line,
                         jerr.column,
                         jerr.text);
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        errno = EPROTO;
        return errprintf(errp, "the %s must be a JSON object", what);
    }
    *objp = obj;
    return 0;
}

const struct httpd_status *httpd_status_of(const struct httpd_status *map,
                                           size_t n,
                                           int errnum)
{
    for (size_t i = 0; i < n; i++) {
        if (map[i].errnum == errnum)
            return &map[i];
    }
    return NULL;
}

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
    conn_set_since(conn, 0, false);
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
    conn_set_since(conn, monotime_ns(), true);
    if (!r)
        return;
    h->handlers.done(h->handlers.cls, r, (int)toe);
    free(r->body);
    free(r);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
}

void httpd_get_stats(struct httpd *h, struct httpd_stats *st)
{
    pthread_mutex_lock(&h->lock);
    *st = h->stats;
    st->open = h->counted;
    st->priority_open = h->prio_counted;
    pthread_mutex_unlock(&h->lock);
}

/* FNV-1a over an address, for the peer hash. */
static size_t peer_hash(const unsigned char *addr, int len)
{
    uint32_t x = 2166136261u;
    for (int i = 0; i < len; i++)
        x = (x ^ addr[i]) * 16777619u;
    return x;
}

/* The peer of an address, or NULL.  Under h->lock. */
static struct peer *peer_find(struct httpd *h,
                              const unsigned char *addr,
                              int len)
{
    struct peer *p = h->peers[peer_hash(addr, len) & (h->npeers - 1)];
    while (p && (p->len != len || memcmp(p->addr, addr, (size_t)len) != 0))
        p = p->next;
    return p;
}

/* The peer of an address, created with count 0 if new; NULL when memory
 * is short.  Under h->lock.
 */
static struct peer *peer_get(struct httpd *h,
                             const unsigned char *addr,
                             int len)
{
    struct peer **slot = &h->peers[peer_hash(addr, len) & (h->npeers - 1)];
    struct peer *p = peer_find(h, addr, len);
    if (p)
        return p;
    p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    memcpy(p->addr, addr, (size_t)len);
    p->len = len;
    p->next = *slot;
    *slot = p;
    h->npeers_live++;
    return p;
}

/* Take c out of the budget it is counted in.  Under h->lock. */
static void conn_uncount(struct httpd *h, struct conn *c)
{
    if (c->priority) {
        h->prio_counted--;
        c->priority = false;
    }
    struct peer *p = c->peer;
    if (!p)
        return;
    c->peer = NULL;
    h->counted--;
    if (c->waiting) {
        c->waiting = false;
        p->waiting--;
    }
    if (--p->count > 0)
        return;
    h->npeers_live--;
    struct peer **slot =
        &h->peers[peer_hash(p->addr, p->len) & (h->npeers - 1)];
    while (*slot != p)
        slot = &(*slot)->next;
    *slot = p->next;
    free(p);
}

/* Shut c's socket down; libmicrohttpd sees end-of-file and closes it.
 * Under h->lock.
 */
static void conn_cut(struct httpd *h, struct conn *c)
{
    shutdown(c->fd, SHUT_RDWR);
    c->cut = true;
    conn_uncount(h, c);
}

/* The connection to close when the newest, c, exceeds the budget.  An
 * address's share is its new connections whose first request is not in
 * (peer->waiting): a kept-alive connection that has been answered holds
 * no share, so a client's pool of idle connections does not make it look
 * like an attacker.  A connection whose request is in is never closed.
 *
 * - When c's address already waits on more than c and on as many as any
 *   other address, c itself: an address at the top refills nothing, so a
 *   client that reconnects at once after each cut costs an accept, not
 *   another's place.  Past its fair share (the budget over the addresses
 *   counted) that is decided at once, without a look at the others: the
 *   usual case of a flood.
 * - Else the oldest new waiting connection of the address that has the
 *   most, when that is more than one: a client that sends its request at
 *   once gets in, however many addresses the slow connections come from.
 * - Else the connection idle (or between requests) the longest, answered
 *   before: it only costs its client a reconnect.
 * - Else the oldest new waiting connection, or c when there is none.
 *
 * Under h->lock.
 */
static struct conn *budget_victim(struct httpd *h, struct conn *c)
{
    struct conn *fresh = NULL, *idle = NULL;
    long n = c->peer->waiting;
    long most = 0;
    int64_t fsince = 0, isince = 0;

    if (n > 1 && n * h->npeers_live > h->budget)
        return c;
    for (struct conn *o = h->conns; o; o = o->next)
        if (o->peer && o->peer != c->peer && o->peer->waiting > most)
            most = o->peer->waiting;
    if (n > 1 && n >= most)
        return c;
    most = 0;
    for (struct conn *o = h->conns; o; o = o->next) {
        int64_t since = atomic_load(&o->since_ns);
        if (o == c || !o->peer || o->cut || since == 0)
            continue;
        if (!o->waiting) {
            if (!idle || since < isince) {
                idle = o;
                isince = since;
            }
        } else if (!fresh || o->peer->waiting > most
                   || (o->peer->waiting == most && since < fsince)) {
            fresh = o;
            most = o->peer->waiting;
            fsince = since;
        }
    }
    if (fresh && most > 1)
        return fresh;
    if (idle)
        return idle;
    return fresh ? fresh : c;
}

/* Whether sa lies in one of the priority blocks. */
static bool is_priority(const struct httpd *h, const struct sockaddr *sa)
{
    for (size_t i = 0; i < h->nprio; i++)
        if (cidr_match(&h->prio[i], sa))
            return true;
    return false;
}

/* Count a new connection in its budget, displacing another when that is
 * full.  Under h->lock.
 */
static void conn_count(struct httpd *h,
                       struct conn *c,
                       const struct sockaddr *sa)
{
    unsigned char addr[16];
    int len;

    if (h->prio_budget > 0 && is_priority(h, sa)
        && h->prio_counted < h->prio_budget) {
        c->priority = true;
        h->prio_counted++;
        return;
    }
    if (!cidr_address(sa, addr, &len)) {
        memset(addr, 0, sizeof(addr));
        len = 4;
    }
    if (!(c->peer = peer_get(h, addr, len))) {
        conn_cut(h, c); /* no memory to account for it: not taken */
        return;
    }
    c->peer->count++;
    c->peer->waiting++;
    c->waiting = true;
    h->counted++;
    if (h->counted <= h->budget)
        return;
    struct conn *victim = budget_victim(h, c);
    conn_cut(h, victim);
    if (victim == c)
        h->stats.refused++;
    else
        h->stats.displaced++;
}

/* libmicrohttpd's accept policy, called before it sets a connection up:
 * while the budget is full, a connection from an address past its fair
 * share would be closed by budget_victim() at once, so it is refused
 * here, for the price of an accept() and a close() (a client that
 * reconnects as soon as it is refused makes this the common case).
 */
static enum MHD_Result on_accept(void *cls,
                                 const struct sockaddr *sa,
                                 socklen_t len)
{
    struct httpd *h = cls;
    unsigned char addr[16];
    int alen;
    bool refuse = false;

    (void)len;
    if (!cidr_address(sa, addr, &alen))
        return MHD_YES;
    pthread_mutex_lock(&h->lock);
    if (h->counted >= h->budget && !is_priority(h, sa)) {
        struct peer *p = peer_find(h, addr, alen);
        long n = p ? p->waiting + 1 : 1;
        long live = h->npeers_live + (p ? 0 : 1);
        refuse = n > 1 && n * live > h->budget;
        if (refuse)
            h->stats.refused++;
    }
    pthread_mutex_unlock(&h->lock);
    return refuse ? MHD_NO : MHD_YES;
}

static void on_connection(void *cls,
                          struct MHD_Connection *mc,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct httpd *h = cls;
    struct conn *c = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (!ci || !(c = calloc(1, sizeof(*c))))
            return; /* untracked: only the idle timeout applies */
        c->fd = ci->connect_fd;
        c->httpd = h;
        atomic_init(&c->since_ns, monotime_ns());
        pthread_mutex_lock(&h->lock);
        c->next = h->conns;
        if (h->conns)
            h->conns->prev = c;
        h->conns = c;
        conn_count(h, c, ai ? ai->client_addr : NULL);
        pthread_mutex_unlock(&h->lock);
        *socket_context = c;
        return;
    }
    if (!c)
        return;
    pthread_mutex_lock(&h->lock);
    conn_uncount(h, c);
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
            conn_cut(h, c);
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
        MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h};
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
                                 on_accept,
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
