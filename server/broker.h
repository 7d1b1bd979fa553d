/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The broker context handed to every request handler.
 *
 * vnibrokerd keeps no mutable globals: everything a handler may touch hangs
 * off this struct, which main() builds in a straight line at start-up and
 * tears down in reverse.  The members are thread-safe objects (the store
 * and metrics lock or use atomics internally; the configuration is
 * immutable), so libmicrohttpd's worker threads share one broker.
 */
#ifndef VNIB_SERVER_BROKER_H
#define VNIB_SERVER_BROKER_H

#include <time.h>

struct config;
struct logger;
struct store;
struct metrics;
struct http;
struct auth;
struct cache;
struct hwcoll;
struct gauges;
struct ratelimit;
struct inventory;
struct lease_signer;

struct broker {
    const struct config *cfg; /* immutable after load */
    struct logger *log;
    struct store *store;        /* PostgreSQL: all durable state */
    struct auth *auth;          /* bearer-token verification */
    struct cache *cache;        /* node fetches of active reservations */
    struct hwcoll *hwcoll;      /* Fabric Manager reservations */
    struct ratelimit *rl;       /* node reports, per node; NULL: no limit */
    struct inventory *inv;      /* cluster.topology_file; NULL in tests */
    struct lease_signer *lease; /* lease.key_file; NULL: no leases */
    struct metrics *metrics;    /* request counters for /metrics */
    struct gauges *gauges;      /* database figures for /metrics */
    struct http *http;          /* the listener (set once started) */
    time_t start_time;          /* for vnib_process_start_time_seconds */
};

#endif /* !VNIB_SERVER_BROKER_H */
