/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the history client's files share (history.c: the load and its
 * jobs; hargs.c: its command line; hsteps.c: the jobs' steps, reserved with their job tokens; hview.c,
 * hview.h: the broker's view at the end, and the bench rows): the run as
 * the command line says it, a client thread, one HTTP attempt, one request
 * retried on the replicas.
 */
#ifndef VNIB_TESTS_HISTORY_H
#define VNIB_TESTS_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "tests/stress/hrec.h"
#include "vnib/httpc.h"

struct hnodes;

#define MAX_URLS 8
#define MAX_THREADS 256
#define REPLY_MAX (64u * 1024 * 1024)
#define NODE_TOKEN_SIZE 128

/* What the command line says; read-only once the threads run. */
struct run {
    const char *urls[MAX_URLS];
    int nurls;
    int threads;
    double seconds;
    int vni_count; /* 0: random 1-4 */
    const char *nodes_prefix;
    char job_prefix[32];
    char *sched;   /* tokens (secfile buffers) */
    size_t sched_size;
    char *admin;
    size_t admin_size;
    char *key; /* node key */
    size_t key_len;
    const char *log_path;
    const char *stop_file; /* the load ends early once this file exists */
    double settle;
    int attempts; /* per request, across the replicas */
    bool reports; /* the created and destroyed reports */
    bool hwcoll;  /* jobs ask for hardware collectives (two nodes each) */
    bool bench;
    bool outage; /* 503 unavailable is legitimate (a database failover) */
    int job_nodes; /* 0: 1-2 nodes a job, reporting one after the other */
    bool lease;    /* --job-nodes jobs reserve with a lease (presumed) */
    bool steps;    /* each job reserves 1-2 steps with its job token */
    /* --deadline-ms: deadline_pct % of the jobs send their reserves with
     * Vnib-Deadline-Ms drawn from [deadline_min_ms, deadline_max_ms]
     * (hdeadline.h); deadline_max_ms 0: none does */
    int deadline_min_ms, deadline_max_ms;
    int deadline_pct;
    int64_t start_mono, stop_mono;
};

/* One client thread (or the final checker, thread -1). */
struct client {
    const struct run *run;
    int index;
    CURL *curl;
    char errbuf[CURL_ERROR_SIZE];
    struct httpc_reply reply; /* filled by httpc_write_cb */
    uint64_t rng;
    struct hrec_log log;
    int64_t end_mono; /* when the thread's last job ended */
    uint64_t pairs;   /* jobs reserved and released */
    int failed;       /* out of memory or curl set-up */
    /* --hwcoll: reserves answered hwcoll "reserved", those read back with
     * GET, and those whose read-back state or session token differed
     * (the first such job in hw_bad).
     */
    uint64_t hw_told, hw_checked, hw_mismatch;
    char hw_bad[160];
    struct hnodes *hn; /* --job-nodes: the nodes' connections */
};

/* Sleep ms milliseconds (through signals). */
void history_sleep_ms(long ms);

/* The thread's next pseudo-random number (xorshift64; *s never 0). */
uint64_t history_rng(uint64_t *s);

/* One attempt of method path (body, or a GET) with token to the URL r->url
 * names: fills r's times, status and error fields; the reply's body stays
 * in c->reply.buf.  Returns the status (0: no reply).
 */
long history_attempt(struct client *c, struct hrec *r, const char *method,
                     const char *path, const char *body, const char *token);

/* A request with retries on the other replicas, as a scheduler (or a
 * job's step manager) would: sent again, with the same parameters, to the
 * next replica after a short sleep while it gets no reply or a 5xx other
 * than 503 vni_pool_exhausted, at most run->attempts times (a 503
 * deadline_exceeded, certainly not done, is retried without making the
 * request ambiguous, unless the job gives up then: hdeadline.h).  Records every
 * attempt for job (an index into the thread's jobs) and step (NULL: none)
 * and returns the last status, or -1 when the client broke (out of
 * memory); *first_send is the first attempt's send time (first_send may be
 * NULL), *ambiguous whether some attempt may have been carried out unseen,
 * *last the last attempt (valid until the next append to the log).
 */
long history_request(struct client *c, uint64_t job, enum hrec_op op,
                     const char *node, const char *step, const char *method,
                     const char *path, const char *body, const char *token,
                     int64_t *first_send, bool *ambiguous, struct hrec **last);

/* Read the command line into run (hargs.c), which holds the defaults.
 * 0, or -1 after the usage was printed to stderr (or a token file could
 * not be read).
 */
int history_parse_args(int argc, char **argv, struct run *run);

/* A reservation's id and VNIs (at most HREC_MAX_VNIS of them, *n) from
 * its JSON text buf (NULL: none).
 */
void history_parse_reservation(const char *buf, long long *id, int *vnis,
                               int *n);

#endif /* !VNIB_TESTS_HISTORY_H */
