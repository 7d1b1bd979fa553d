/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small HTTP/1.1 load generator for the broker's benchmarks.
 *
 * One thread drives N keep-alive connections to 127.0.0.1 with epoll and
 * non-blocking sockets; each connection has at most one request in flight.
 * Two ways to pace the requests:
 *
 *   - closed loop (rate 0): every connection sends its next request as
 *     soon as the previous answer is in, so the figure is throughput;
 *   - open loop (rate > 0): request k is due at start + k / rate and goes
 *     out on the first idle connection.  Its latency is measured from that
 *     scheduled time, not from when it was written, so a server that
 *     stalls is charged for the queue it causes (no coordinated omission).
 *
 * A run always ends by itself: it stops issuing at the duration or the
 * request bound, then waits at most drain_s for the answers in flight and
 * counts the rest as timeouts.  Requests come from a callback, so each can
 * carry its own method, path, bearer token and body; answers are parsed for
 * the status, Content-Length or chunked framing, Connection: close and an
 * optional `Server-Timing: app;dur=<ms>` header, whose values form a second
 * ("server time") histogram.  Latencies go into log-linear histograms with
 * microsecond resolution up to 10 s.
 */
#ifndef VNIB_BENCH_LOADGEN_H
#define VNIB_BENCH_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"

/* ---- histograms ------------------------------------------------------- */

/* Values below 2^LG_HIST_SUB_BITS microseconds are exact; above, each
 * power of two is split into 2^LG_HIST_SUB_BITS buckets (< 1.6% error).
 */
#define LG_HIST_SUB_BITS 6
#define LG_HIST_MAX_US 10000000ULL /* 10 s; larger values are clamped */
#define LG_HIST_BUCKETS ((24 - LG_HIST_SUB_BITS + 1) << LG_HIST_SUB_BITS)

struct lg_hist {
    uint64_t count;                   /* values recorded */
    uint64_t clamped;                 /* of which above LG_HIST_MAX_US */
    uint64_t min_us;                  /* exact smallest value */
    uint64_t max_us;                  /* exact largest value (unclamped) */
    double sum_us;                    /* for the mean */
    uint64_t bucket[LG_HIST_BUCKETS]; /* counts per log-linear bucket */
};

/* Record one value in microseconds. */
void lg_hist_add(struct lg_hist *h, uint64_t us);

/* The value at quantile q (0..1) in microseconds: the midpoint of the
 * bucket holding the ceil(q * count)-th value, bounded by the exact max.
 * Returns 0 for an empty histogram.
 */
double lg_hist_quantile(const struct lg_hist *h, double q);

/* ---- requests --------------------------------------------------------- */

/* Requests are tagged with a kind (e.g. reserve, release) so that one run
 * can keep separate figures for each.
 */
#define LG_KINDS 4
#define LG_PATH_MAX 512
/* A reserve of a job of 1,000 node ranges ("frag" scenarios) is 14 KB. */
#define LG_BODY_MAX 16384

/* What the callback fills in.  token and method are borrowed and must
 * stay valid until the callback is called again.
 */
struct lg_request {
    int kind;               /* 0 .. LG_KINDS-1 */
    const char *method;     /* "GET", "POST", "DELETE", ... */
    char path[LG_PATH_MAX]; /* absolute path with query */
    const char *token;      /* bearer token, or NULL for none */
    char body[LG_BODY_MAX]; /* sent as application/json when body_len */
    size_t body_len;
    bool close; /* ask the server to close the connection after the
                   answer (Connection: close): the slot's next request
                   goes out on a new connection, as a new client's */
};

/* Where a request comes from, given to the callback. */
struct lg_slot {
    int index;         /* connection slot, 0 .. connections-1 */
    uint64_t seq;      /* requests issued by the whole run so far */
    uint64_t slot_seq; /* requests issued by this slot so far */
    int last_status;   /* status of this slot's previous answer, 0 if
                          none, -1 after a transport error */
    uint64_t user;     /* free for the callback; kept across calls */
};

/* Produce the next request.  Return 0 to send req, LG_END when there is
 * nothing more to send (the run stops issuing), LG_IDLE when this slot
 * has nothing to send while others may still (it stays idle; the run
 * ends at max_requests or the duration), -1 to abort the run.
 */
#define LG_END 1
#define LG_IDLE 2
typedef int (*lg_make_f)(void *arg,
                         struct lg_slot *slot,
                         struct lg_request *req);

/* ---- runs ------------------------------------------------------------- */

struct lg_config {
    const char *url;       /* "http://127.0.0.1:PORT"; nothing else */
    int connections;       /* 1 .. 1024 */
    double rate;           /* requests/s for open loop; 0: closed loop */
    double duration_s;     /* stop issuing after this long */
    uint64_t max_requests; /* and after this many (0: no bound) */
    double drain_s;        /* then wait this long for answers in flight */
    lg_make_f make;        /* request producer */
    void *arg;             /* passed to make */
    bool own_addresses;    /* each connection from a source address of its
                              own (127.1.0.0/16, in turn), as clients on
                              their own hosts: none of them is one of the
                              broker's priority addresses, and its
                              per-address limit applies to each alone */
};

/* Figures for one kind of request. */
struct lg_kind_stats {
    uint64_t sent;            /* requests written (at least partly) */
    uint64_t done;            /* answers received */
    uint64_t ok;              /* of which 2xx */
    uint64_t non2xx;          /* of which anything else */
    uint64_t errors;          /* transport errors and timeouts in flight */
    struct lg_hist latency;   /* client side, microseconds */
    struct lg_hist server;    /* Server-Timing app;dur, microseconds */
    int first_bad_status;     /* the first non-2xx status seen, or 0 */
    char first_bad_body[160]; /* and the start of its body */
};

struct lg_result {
    double elapsed_s;        /* from the first request to the last answer
                                or the end of issuing, if later */
    uint64_t connects;       /* connections established */
    uint64_t connect_errors; /* failed attempts (retried with backoff) */
    uint64_t io_errors;      /* resets, EOF or garbage mid-answer */
    uint64_t timeouts;       /* requests abandoned at the drain deadline */
    uint64_t unsent;         /* open loop: due but never sent */
    uint64_t late_us_max;    /* open loop: worst send delay behind schedule */
    struct lg_kind_stats kind[LG_KINDS];
};

/* Run one load: returns 0 when the run went through (whatever the
 * statuses), -1 with errp set for a bad configuration, no connection at
 * all, or a callback that aborted.  res is filled in either way.
 */
int lg_run(const struct lg_config *cfg,
           struct lg_result *res,
           vnib_error_t *errp);

/* Add the figures of s to sum (counts, histograms; the first bad status
 * if sum has none): one kind's over several runs.
 */
void lg_kind_add(struct lg_kind_stats *sum, const struct lg_kind_stats *s);

/* Sum of the figures over all kinds. */
void lg_result_totals(const struct lg_result *res, struct lg_kind_stats *sum);

#endif /* !VNIB_BENCH_LOADGEN_H */
