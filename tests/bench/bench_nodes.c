/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The REST API benchmarks' scenarios of a full-machine job's nodes (see
 * bench_api.c): frag, a node's GET of a fragmented job against a compact
 * one; stepstorm, each step's fetch storm from every node; fullmachine,
 * every node of the job doing what its agent does; and drain, reserves
 * while the Fabric Manager's release queue drains.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/bench_api.h"

/* ---- frag: a node's GET of a fragmented job against a compact one ---- */

/* The two jobs of the frag scenarios, BIG_COUNT nodes each: "fragc" on
 * nid[000001-011136] (one range) and "fragf" on FRAG_RANGES ranges of 11
 * or 12 nodes one node apart (nid[000001-000012,000014-000025,...]), the
 * node list of a job placed on whatever nodes were free.
 */
#define FRAG_RANGES 1000
#define FRAG_COMPACT "fragc"
#define FRAG_RANGED "fragf"

/* Nodes in range r of job fragf: the first BIG_COUNT % FRAG_RANGES
 * ranges have one more than the others.
 */
static unsigned frag_range_size(unsigned r)
{
    return BIG_COUNT / FRAG_RANGES + (r < BIG_COUNT % FRAG_RANGES ? 1 : 0);
}

/* The number of node k (0-based) of job fragf: k + 1, plus the one node
 * left out after each range before it.
 */
static unsigned frag_number(unsigned k)
{
    unsigned r = 0, first = 0;

    while (first + frag_range_size(r) <= k)
        first += frag_range_size(r++);
    return k + r + 1;
}

/* Job fragf's node list, in a buffer the caller frees. */
static char *frag_expr(void)
{
    size_t size = 16 + (size_t)FRAG_RANGES * 16, len;
    char *buf = malloc(size);
    unsigned k = 0;

    if (!buf)
        return NULL;
    len = (size_t)snprintf(buf, size, "nid[");
    for (unsigned r = 0; r < FRAG_RANGES; r++) {
        unsigned lo = frag_number(k);
        len += (size_t)snprintf(buf + len,
                                size - len,
                                "%s%06u-%06u",
                                r ? "," : "",
                                lo,
                                lo + frag_range_size(r) - 1);
        k += frag_range_size(r);
    }
    snprintf(buf + len, size - len, "]");
    return buf;
}

/* One node token for each node of job (fragc or fragf), in node order. */
static int frag_tokens(struct bench *b, bool ranged)
{
    if (!(b->node_tokens = calloc(BIG_COUNT, sizeof(*b->node_tokens))))
        return -1;
    for (unsigned k = 0; k < BIG_COUNT; k++) {
        char node[16], tok[TOKEN_NODE_SIZE];
        snprintf(
            node, sizeof(node), "nid%06u", ranged ? frag_number(k) : k + 1);
        if (token_node_derive(b->key, b->key_len, node, tok, sizeof(tok), NULL)
                < 0
            || !(b->node_tokens[k] = strdup(tok)))
            return -1;
        b->ntokens++;
    }
    return 0;
}

int bnodes_frag_setup(struct bench *b, struct lg_result *res)
{
    struct lg_config one = {
        .connections = 1, .duration_s = 30, .make = breq_one_reserve};
    char *expr = frag_expr();
    int rc = -1;

    if (bapi_need_token(b) < 0 || !expr)
        goto done;
    b->job = FRAG_COMPACT;
    b->nodes = BIG_NODES;
    if (bapi_run(b, &one, res, "frag compact job") < 0
        || res->kind[K_RESERVE].ok != 1) {
        printf("#   frag: cannot reserve %s\n", FRAG_COMPACT);
        bout_detail(res);
        goto done;
    }
    b->job = FRAG_RANGED;
    b->nodes = expr;
    if (bapi_run(b, &one, res, "frag ranged job") < 0
        || res->kind[K_RESERVE].ok != 1) {
        printf("#   frag: cannot reserve %s\n", FRAG_RANGED);
        bout_detail(res);
        goto done;
    }
    printf("#   frag: %s on %s, %s on %d ranges (%zu bytes of node list)\n",
           FRAG_COMPACT,
           BIG_NODES,
           FRAG_RANGED,
           FRAG_RANGES,
           strlen(expr));
    rc = 0;
done:
    free(expr);
    return rc;
}

/* frag-get-compact and frag-get-ranged: every node of the job GETs it in
 * turn, closed loop on -c connections (1) for -d seconds (3); the row is
 * the client's p50, which run.sh compares between the two jobs.
 */
static int frag_get(struct bench *b, struct lg_result *res, bool ranged)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 1),
                            .duration_s = bapi_pickd(b->duration, 3),
                            .make = breq_storm};
    const char *name = ranged ? "node GET p50, 1,000-range job of 11,136 nodes"
                              : "node GET p50, compact job of 11,136 nodes";
    int rc = -1;

    if (bapi_need_key(b) < 0)
        return -1;
    b->job = ranged ? FRAG_RANGED : FRAG_COMPACT;
    if (frag_tokens(b, ranged) < 0) {
        printf("#   frag: cannot derive the node tokens\n");
        goto done;
    }
    if (bapi_run(b, &cfg, res, name) < 0) {
        bout_row(name, NAN, "ms", NAN, true, "could not run");
        goto done;
    }
    const struct lg_kind_stats *s = &res->kind[K_GET];
    const char *why = bout_failures(res, K_GET);
    bout_reference(name, why ? NAN : bapi_q_ms(&s->latency, 0.5), "ms");
    printf("#   server time p50 %.3f ms\n", bapi_q_ms(&s->server, 0.5));
    bout_detail(res);
    rc = 0;
done:
    bapi_free_tokens(b);
    return rc;
}

int bnodes_frag_get_compact(struct bench *b, struct lg_result *res)
{
    return frag_get(b, res, false);
}

int bnodes_frag_get_ranged(struct bench *b, struct lg_result *res)
{
    return frag_get(b, res, true);
}

int bnodes_frag_release(struct bench *b, struct lg_result *res)
{
    struct lg_config one = {
        .connections = 1, .duration_s = 30, .make = breq_one_release};
    int rc = 0;

    if (bapi_need_token(b) < 0)
        return -1;
    b->job = FRAG_COMPACT;
    if (bapi_run(b, &one, res, "frag compact release") < 0)
        rc = -1;
    b->job = FRAG_RANGED;
    if (bapi_run(b, &one, res, "frag ranged release") < 0)
        rc = -1;
    return rc;
}

/* ---- stepstorm: each step's node fetch storm, on a full-machine job --- */

/* The job of the stepstorm scenarios, on all BIG_COUNT nodes (BIG_NODES,
 * frag_tokens()'s compact job's), whose steps run on all of them.
 */
#define STEP_JOB "stepjob"
#define STEP_NAME_TIME "step storm: one step's 11,136 fetches, median"
#define STEP_TARGET_S 1.0

/* stepstorm-setup and stepstorm-release: reserve or release STEP_JOB. */
static int stepstorm_job(struct bench *b, struct lg_result *res, bool reserve)
{
    struct lg_config one = {
        .connections = 1,
        .duration_s = 30,
        .make = reserve ? breq_one_reserve : breq_one_release};
    int k = reserve ? K_RESERVE : K_RELEASE;

    if (bapi_need_token(b) < 0)
        return -1;
    b->job = STEP_JOB;
    b->nodes = BIG_NODES;
    if (bapi_run(b, &one, res, "stepstorm job") < 0 || res->kind[k].ok != 1) {
        printf("#   stepstorm: cannot %s %s\n",
               reserve ? "reserve" : "release",
               STEP_JOB);
        bout_detail(res);
        return -1;
    }
    return 0;
}

int bnodes_stepstorm_setup(struct bench *b, struct lg_result *res)
{
    return stepstorm_job(b, res, true);
}

int bnodes_stepstorm_release(struct bench *b, struct lg_result *res)
{
    return stepstorm_job(b, res, false);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One step of STEP_JOB on all its nodes: reserved, fetched once by each
 * node (the storm, closed loop on cfg's connections; its GETs added to
 * *all, its time to *secp), released.  0, or -1 after saying why.
 */
static int stepstorm_step(struct bench *b,
                          struct lg_result *res,
                          const struct lg_config *cfg,
                          struct lg_kind_stats *all,
                          double *secp)
{
    struct lg_config one = {
        .connections = 1, .duration_s = 30, .make = breq_step_reserve};

    if (bapi_run(b, &one, res, "step reserve") < 0
        || res->kind[K_RESERVE].ok != 1) {
        printf("#   stepstorm: cannot reserve step %s\n", b->step);
        bout_detail(res);
        return -1;
    }
    struct lg_config storm = *cfg;
    if (bapi_run(b, &storm, res, "step storm") < 0)
        return -1;
    lg_kind_add(all, &res->kind[K_GET]);
    *secp = res->elapsed_s;
    one.make = breq_step_release;
    if (bapi_run(b, &one, res, "step release") < 0
        || res->kind[K_RELEASE].ok != 1) {
        printf("#   stepstorm: cannot release step %s\n", b->step);
        bout_detail(res);
        return -1;
    }
    return 0;
}

int bnodes_stepstorm(struct bench *b, struct lg_result *res)
{
    long steps = b->count > 0 ? b->count : 100;
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 48),
                            .duration_s = 120,
                            .max_requests = BIG_COUNT,
                            .make = breq_step_storm};
    struct lg_kind_stats *all = calloc(1, sizeof(*all));
    double *secs = calloc((size_t)steps, sizeof(*secs));
    double total_s = 0;
    char step[80], name[64];
    long done = 0;
    int rc = -1;

    if (bapi_need_token(b) < 0 || bapi_need_key(b) < 0)
        goto out;
    if (!all || !secs || frag_tokens(b, false) < 0) {
        printf("#   stepstorm: cannot derive the node tokens\n");
        goto out;
    }
    b->job = STEP_JOB;
    b->nodes = BIG_NODES;
    b->step = step;
    for (; done < steps; done++) {
        snprintf(step,
                 sizeof(step),
                 "%s%ld",
                 b->job_prefix ? b->job_prefix : "s",
                 done);
        if (stepstorm_step(b, res, &cfg, all, &secs[done]) < 0)
            break;
        total_s += secs[done];
    }
    rc = done == steps ? 0 : -1;
out:
    snprintf(name, sizeof(name), "step storm: fetches/s over %ld steps", steps);
    if (rc < 0) {
        bout_row(
            STEP_NAME_TIME, NAN, "s", STEP_TARGET_S, true, "could not run");
    } else {
        memset(res, 0, sizeof(*res));
        res->kind[K_GET] = *all;
        res->elapsed_s = total_s;
        const char *why = bout_failures(res, K_GET);
        qsort(secs, (size_t)steps, sizeof(*secs), cmp_double);
        double median = steps % 2 ? secs[steps / 2]
                                  : (secs[steps / 2 - 1] + secs[steps / 2]) / 2;
        bout_row(STEP_NAME_TIME, median, "s", STEP_TARGET_S, true, why);
        bout_reference(name, why ? NAN : bapi_rate_of(res, all->ok), "req/s");
        bout_reference(
            "step storm: fetch p50", bapi_q_ms(&all->latency, 0.5), "ms");
        bout_reference(
            "step storm: fetch p99", bapi_q_ms(&all->latency, 0.99), "ms");
        printf(
            "#   stepstorm: %ld steps of %d fetches; a step's storm s "
            "min %.3f median %.3f max %.3f\n",
            steps,
            BIG_COUNT,
            secs[0],
            median,
            secs[steps - 1]);
        bout_detail_kind(res, K_GET);
    }
    bapi_free_tokens(b);
    free(all);
    free(secs);
    return rc;
}

/* ---- fullmachine: a full-machine job's nodes, as their agents ------- */

int bnodes_fullmachine(struct bench *b, struct lg_result *res)
{
    int steps = breq_full_steps(b->mode);
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 256),
                            .duration_s = bapi_pickd(b->duration, 300),
                            .max_requests = (uint64_t)steps * BIG_COUNT,
                            .make = breq_full,
                            .own_addresses = true};
    char name[64], why[64];
    int rc = -1;

    if (bapi_need_token(b) < 0 || bapi_need_key(b) < 0)
        return -1;
    b->job = b->job_prefix;
    if (!steps || !b->job || b->resv_id < 1) {
        fprintf(stderr,
                "bench_api: fullmachine needs -m lease|today|creating|end, "
                "-x JOB and -i RESERVATION\n");
        return -1;
    }
    snprintf(name,
             sizeof(name),
             "fullmachine: %s %s, 11,136 nodes",
             b->step ? "step" : "job",
             b->mode);
    if (frag_tokens(b, false) < 0) {
        printf("#   fullmachine: cannot derive the node tokens\n");
        goto done;
    }
    b->next_node = 0;
    if (bapi_run(b, &cfg, res, "fullmachine") < 0)
        goto done;
    struct lg_kind_stats all;
    lg_result_totals(res, &all);
    uint64_t bad = all.non2xx + all.errors + res->timeouts;
    snprintf(why,
             sizeof(why),
             "%llu of %llu requests failed",
             (unsigned long long)bad,
             (unsigned long long)cfg.max_requests);
    /* A run with a failed request measured something else: no figure. */
    bool failed = bad || all.sent < cfg.max_requests;
    bout_reference(name, failed ? NAN : res->elapsed_s, "s");
    if (failed)
        printf("#   fullmachine: %s\n", why);
    bout_detail(res);
    rc = 0;
done:
    bapi_free_tokens(b);
    return rc;
}

/* The FM release-queue drain (run.sh's "drain"), in three steps run.sh
 * sequences around broker restarts and fmsim faults:
 *   drain-fill    reserve -n jobs d0 .. d<n-1> with "hwcoll":"on"
 *   drain-release release them (with no hwcoll broker running they queue)
 *   drain-load    while the queue drains: open-loop reserves of fresh jobs
 *                 with "hwcoll":"off" at -r/s until the -S file exists (or
 *                 -d s), p99 row; then the load's jobs are released.
 * run.sh prints the drain rate row itself (it polls fm_queue).
 */
static int sc_drain_step(struct bench *b, struct lg_result *res, bool fill)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 16),
                            .duration_s = bapi_pickd(b->duration, 300),
                            .make = fill ? breq_reserve_seq : breq_release_seq};
    char name[64];
    int k = fill ? K_RESERVE : K_RELEASE;

    if (bapi_need_token(b) < 0)
        return -1;
    b->prefix = "d";
    b->nodes = "n[1-4]";
    b->hwcoll = "on";
    b->limit = (uint64_t)(b->count > 0 ? b->count : POPULATE_DEFAULT);
    cfg.max_requests = b->limit;
    snprintf(name,
             sizeof(name),
             fill ? "setup: %llu reservations with hwcoll on"
                  : "setup: %llu releases queued for the FM",
             (unsigned long long)b->limit);
    if (bapi_run(b, &cfg, res, fill ? "drain fill" : "drain release") < 0) {
        bout_row(name, NAN, "resv", (double)b->limit, false, "could not run");
        return -1;
    }
    bout_row(
        name, (double)res->kind[k].ok, "resv", (double)b->limit, false, NULL);
    bout_detail(res);
    return 0;
}

int bnodes_drain_fill(struct bench *b, struct lg_result *res)
{
    return sc_drain_step(b, res, true);
}

int bnodes_drain_release(struct bench *b, struct lg_result *res)
{
    return sc_drain_step(b, res, false);
}

int bnodes_drain_load(struct bench *b, struct lg_result *res)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 32),
                            .rate = bapi_pickd(b->rate, 200),
                            .duration_s = bapi_pickd(b->duration, 125),
                            .make = breq_reserve_until};
    const char *name = "reserve p99 during the drain";

    if (bapi_need_token(b) < 0)
        return -1;
    b->prefix = "dl";
    b->nodes = "n[1-4]";
    b->hwcoll = "off";
    b->limit = 0;
    if (bapi_run(b, &cfg, res, "drain load") < 0) {
        bout_row(name, NAN, "ms", 20, true, "could not run");
        return -1;
    }
    bapi_row_p99(name, res, K_RESERVE, 20);
    bout_detail(res);

    struct lg_config rel = {
        .connections = 8, .duration_s = 120, .make = breq_release_seq};
    b->limit = res->kind[K_RESERVE].sent;
    if (b->limit == 0)
        return 0;
    if (bapi_run(b, &rel, res, "release") < 0)
        return -1;
    printf("#   released the drain-load jobs:\n");
    bout_detail_kind(res, K_RELEASE);
    return 0;
}
