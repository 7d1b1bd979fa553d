/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the httpd module's files (httpd.c, httpd_conn.c, httpd_reply.c)
 * share: the server's state, its connections and their client addresses,
 * and the helpers one file defines and the others call.  Private to lib/:
 * callers have vnib/httpd.h.
 */
#ifndef VNIB_HTTPD_INT_H
#define VNIB_HTTPD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "vnib/cidr.h"
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

/* Start (since_ns > 0) or stop (0) the deadline clock of a connection
 * (served: a reply has just been sent), and count it in its address's
 * share of the budget while it is new and its first request is not in.
 */
void httpd_conn_set_since(struct MHD_Connection *mc,
                          int64_t since_ns,
                          bool served);

/* Shut c's socket down; libmicrohttpd sees end-of-file and closes it.
 * Under h->lock.
 */
void httpd_conn_cut(struct httpd *h, struct conn *c);

/* libmicrohttpd's accept policy, called before it sets a connection up:
 * while the budget is full, a connection from an address past its fair
 * share would be closed by budget_victim() at once, so it is refused
 * here, for the price of an accept() and a close() (a client that
 * reconnects as soon as it is refused makes this the common case).
 */
enum MHD_Result httpd_on_accept(void *cls,
                                const struct sockaddr *sa,
                                socklen_t len);

/* libmicrohttpd's connection notification: a connection that starts joins
 * the list and is counted in the budget; one that closes leaves both.
 */
void httpd_on_connection(void *cls,
                         struct MHD_Connection *mc,
                         void **socket_context,
                         enum MHD_ConnectionNotificationCode toe);

#endif /* VNIB_HTTPD_INT_H */
