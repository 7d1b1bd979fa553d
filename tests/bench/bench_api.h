/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the REST API benchmarks share: the state of a scenario (struct
 * bench), the request kinds, the table output (bench_output.c) and the
 * request producers handed to the load generator (bench_requests.c).
 * bench_api.c holds the command line and most scenarios, bench_nodes.c
 * those of a full-machine job's nodes.
 */
#ifndef VNIB_BENCH_API_H
#define VNIB_BENCH_API_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/bench/loadgen.h"
#include "vnib/token.h"

/* Request kinds, as indices into lg_result.kind. */
enum { K_RESERVE, K_RELEASE, K_GET, K_REPORT };

/* Everything a scenario needs; no state lives outside it. */
struct bench {
    const char *url; /* http://127.0.0.1:PORT */
    char *token;     /* scheduler token (secfile buffer) */
    size_t token_size;
    unsigned char *key; /* node key (secfile buffer) */
    size_t key_len;
    int conns;              /* -c, 0: the scenario's default */
    double duration;        /* -d, 0: the scenario's default */
    double rate;            /* -r, 0: the scenario's default */
    long count;             /* -n, 0: the scenario's default */
    long pid;               /* -p: the broker, for rss */
    double pg_tps;          /* -P: pgbench tps at the same clients */
    const char *stop_file;  /* -S: drain-load stops once this exists */
    const char *job_prefix; /* -x: pairs' job id prefix (runs that repeat) */
    const char *hwcoll_opt; /* -H: "on"/"off" in pairs and openloop reserves */

    /* per-scenario request state */
    const char *prefix; /* job id prefix */
    const char *nodes;  /* hostlist of reserve requests */
    const char *hwcoll; /* "on"/"off" in reserve requests, NULL: omitted */
    const char *job;    /* the one job of get and storm */
    const char *step;   /* stepstorm: the step of b->job now */
    uint64_t next_job;  /* next fresh job number */
    uint64_t limit;     /* populate/release: jobs to touch */
    char node_token[TOKEN_NODE_SIZE];
    char **node_tokens; /* storm: one per node */
    int ntokens;

    /* fullmachine: what each node does (-m), the reservation it names in
     * its reports (-i), and the next node to start
     */
    const char *mode;  /* lease, today, creating or end */
    long long resv_id; /* -i */
    uint64_t next_node;
};
/* ---- output (bench_output.c) ------------------------------------------ */

/* One table row, as bench_lib prints it.  A NAN figure (not measured) and
 * a figure from a run with too many failures (why_not) never meet the
 * target.
 */
void bout_row(const char *name,
              double figure,
              const char *unit,
              double target,
              bool lower_is_better,
              const char *why_not);

/* A figure with no target of its own (shown for comparison). */
void bout_reference(const char *name, double figure, const char *unit);

/* The detail of kind k of a run: "#" lines below the rows. */
void bout_detail_kind(const struct lg_result *res, int k);

/* The detail of every kind and of the connections. */
void bout_detail(const struct lg_result *res);

/* Why a run's figure is not credited (NULL: it is): more than 1% of the
 * requests of kind k (or of all kinds, k < 0) failed or were not sent.
 */
const char *bout_failures(const struct lg_result *res, int k);

/* ---- request producers (bench_requests.c) ----------------------------- */

/* Each is an lg_make_f whose arg is the struct bench. */
int breq_healthz(void *arg, struct lg_slot *slot, struct lg_request *req);
/* Each client reserves a fresh job <prefix>n, then releases it, and so on. */
int breq_pairs(void *arg, struct lg_slot *slot, struct lg_request *req);
/* Open loop: request k reserves job <prefix>k (k < limit, if limit). */
int breq_reserve_seq(void *arg, struct lg_slot *slot, struct lg_request *req);
/* breq_reserve_seq until the stop file appears. */
int breq_reserve_until(void *arg, struct lg_slot *slot, struct lg_request *req);
/* Populate: job <prefix>k on n[k-(k+3)], k = 1 .. limit. */
int breq_populate(void *arg, struct lg_slot *slot, struct lg_request *req);
/* Release job <prefix>k for k = 0 .. limit-1. */
int breq_release_seq(void *arg, struct lg_slot *slot, struct lg_request *req);
/* A node's own view, each request from another node n1 .. n<limit>. */
int breq_nodeview(void *arg, struct lg_slot *slot, struct lg_request *req);
/* Every node of the big job fetches it, cycling through the tokens. */
int breq_storm(void *arg, struct lg_slot *slot, struct lg_request *req);
/* Each node of the tokens fetches step b->step of job b->job once. */
int breq_step_storm(void *arg, struct lg_slot *slot, struct lg_request *req);
/* One reserve of step b->step of job b->job on b->nodes, one release. */
int breq_step_reserve(void *arg, struct lg_slot *slot, struct lg_request *req);
int breq_step_release(void *arg, struct lg_slot *slot, struct lg_request *req);
/* fullmachine: node k (0 .. ntokens-1) of job b->job, or of its step
 * b->step when not NULL, does what an agent does for b->mode, each node a
 * client of its own (its own connection, closed after its last request,
 * and its own token): lease, one GET of the reservation; today, GET, then
 * reports creating and created; creating, that report alone; end, the
 * report destroyed.  Reports name reservation b->resv_id.
 */
int breq_full(void *arg, struct lg_slot *slot, struct lg_request *req);
/* The requests each node makes in mode (0 for an unknown mode). */
int breq_full_steps(const char *mode);
/* One reserve, then one release, of the fixed job b->job. */
int breq_one_reserve(void *arg, struct lg_slot *slot, struct lg_request *req);
int breq_one_release(void *arg, struct lg_slot *slot, struct lg_request *req);

/* ---- scenarios (bench_api.c, bench_nodes.c) --------------------------- */

/* The full-machine job of the big scenarios: every node of the machine. */
#define BIG_NODES "nid[000001-011136]"
#define BIG_COUNT 11136

/* Jobs a scenario reserves or touches (populate, drain) without -n. */
#define POPULATE_DEFAULT 10000

/* given when positive, else the scenario's default def. */
int bapi_pick(int given, int def);

/* The same for a double. */
double bapi_pickd(double given, double def);

/* Run one load; on a harness error print it and return -1. */
int bapi_run(struct bench *b,
             struct lg_config *cfg,
             struct lg_result *res,
             const char *what);

/* Quantile q of h in milliseconds; NAN when nothing was recorded. */
double bapi_q_ms(const struct lg_hist *h, double q);

/* The row "p99 latency of kind k, in ms, at most target". */
void bapi_row_p99(const char *name,
                  const struct lg_result *res,
                  int k,
                  double target);

/* n per second of the run's elapsed time; NAN for an empty run. */
double bapi_rate_of(const struct lg_result *res, uint64_t n);

/* -1 with a message when the scenario was given no -T TOKEN-FILE. */
int bapi_need_token(const struct bench *b);

/* -1 with a message when the scenario was given no -k NODE-KEY-FILE. */
int bapi_need_key(const struct bench *b);

/* Free the node tokens of b (storm, frag, stepstorm, fullmachine). */
void bapi_free_tokens(struct bench *b);

/* frag-setup: reserve fragc and fragf. */
int bnodes_frag_setup(struct bench *b, struct lg_result *res);

/* frag-get-compact, frag-get-ranged: a node's GET of fragc or fragf. */
int bnodes_frag_get_compact(struct bench *b, struct lg_result *res);

int bnodes_frag_get_ranged(struct bench *b, struct lg_result *res);

/* frag-release: release fragc and fragf. */
int bnodes_frag_release(struct bench *b, struct lg_result *res);

/* stepstorm-setup, stepstorm-release: reserve or release "stepjob" on
 * every node. */
int bnodes_stepstorm_setup(struct bench *b, struct lg_result *res);

int bnodes_stepstorm_release(struct bench *b, struct lg_result *res);

/* stepstorm: -n steps (100) of "stepjob", one after another, each on all
 * 11,136 nodes: reserved, fetched once by every node (11,136 node tokens,
 * -c connections, 48, closed loop), released.  Step ids are
 * <-x prefix><k>, so that runs on one job never reuse one.  Rows: a
 * step's storm time, median over the steps (target <= STEP_TARGET_S, 1 s);
 * fetches per second over all the storms; the fetches' p50 and p99.
 * run.sh adds the database reads per step from the broker's /metrics.
 */
int bnodes_stepstorm(struct bench *b, struct lg_result *res);

/* fullmachine -m MODE -x JOB [-s STEP] -i RESERVATION: every one of the
 * BIG_COUNT nodes of job JOB (on BIG_NODES, reserved by run.sh), or of
 * its step STEP, does what its agent does in MODE (breq_full), each node
 * a client of its own, -c (256) at a time: when one node is done the
 * next one starts, on a new connection from an address of its own (as
 * nodes are, none of them the broker's priority address).  Prints one row, the
 * time from the first request to the last answer (the broker's work for the
 * whole start or end; n/a unless every request was answered 2xx), and the
 * detail of each kind of request.
 */
int bnodes_fullmachine(struct bench *b, struct lg_result *res);

/* drain-fill, drain-release, drain-load: the drain scenario's steps. */
int bnodes_drain_fill(struct bench *b, struct lg_result *res);

int bnodes_drain_release(struct bench *b, struct lg_result *res);

int bnodes_drain_load(struct bench *b, struct lg_result *res);

#endif
