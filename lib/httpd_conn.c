/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The httpd module's connections (see httpd.c): the list of open
 * connections with each one's deadline clock, and the connection budget:
 * the count per client address, the priority blocks' own budget, and the
 * choice of a waiting connection to cut when a newcomer is over it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vnib/monotime.h"
#include "httpd_int.h"

static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void httpd_conn_set_since(struct MHD_Connection *mc,
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

void httpd_conn_cut(struct httpd *h, struct conn *c)
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
        httpd_conn_cut(h, c); /* no memory to account for it: not taken */
        return;
    }
    c->peer->count++;
    c->peer->waiting++;
    c->waiting = true;
    h->counted++;
    if (h->counted <= h->budget)
        return;
    struct conn *victim = budget_victim(h, c);
    httpd_conn_cut(h, victim);
    if (victim == c)
        h->stats.refused++;
    else
        h->stats.displaced++;
}

enum MHD_Result httpd_on_accept(void *cls,
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

void httpd_on_connection(void *cls,
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
