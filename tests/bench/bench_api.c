/* SPDX-License-Identifier: GPL-2.0-or-later */
/* REST API benchmarks: the scenarios of `make bench` that need a running
 * broker.
 *
 * tests/bench/run.sh starts a private PostgreSQL and vnibrokerd, then runs
 * this program once per scenario.  Each scenario drives the broker with the
 * load generator (loadgen.c) and prints table rows in the format of
 * bench_lib: scenario, figure, unit, <= or >=, target, met or NOT MET,
 * followed by "#" lines with the detail (counts, rate, percentiles, non-2xx
 * and transport errors, server time).  A missed target is reported, never
 * an error; the exit status is non-zero only when the harness itself could
 * not run the scenario (bad arguments, no broker).
 *
 * A figure is only credited when nearly every request succeeded: a broker
 * that answers 500 quickly must not meet a latency target.  The few helper
 * commands (freeport, nodekey, token) exist so that run.sh needs no other
 * tools to prepare the broker's credentials.  The table output is in
 * bench_output.c, the requests each scenario sends in bench_requests.c,
 * the scenarios of a full-machine job's nodes in bench_nodes.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/bench/bench_api.h"
#include "vnib/secfile.h"
#include "vnib/token.h"

/* ---- scenarios -------------------------------------------------------- */

int bapi_pick(int given, int def)
{
    return given > 0 ? given : def;
}

double bapi_pickd(double given, double def)
{
    return given > 0 ? given : def;
}

int bapi_run(struct bench *b,
             struct lg_config *cfg,
             struct lg_result *res,
             const char *what)
{
    vnib_error_t err = {0};

    cfg->url = b->url;
    cfg->arg = b;
    if (cfg->drain_s == 0)
        cfg->drain_s = 10;
    if (lg_run(cfg, res, &err) < 0) {
        printf("#   %s: %s\n", what, err.text);
        fflush(stdout);
        return -1;
    }
    return 0;
}

double bapi_q_ms(const struct lg_hist *h, double q)
{
    return h->count ? lg_hist_quantile(h, q) / 1e3 : NAN;
}

void bapi_row_p99(const char *name,
                  const struct lg_result *res,
                  int k,
                  double target)
{
    bout_row(name,
             bapi_q_ms(&res->kind[k].latency, 0.99),
             "ms",
             target,
             true,
             bout_failures(res, k));
}

double bapi_rate_of(const struct lg_result *res, uint64_t n)
{
    return res->elapsed_s > 0 ? (double)n / res->elapsed_s : NAN;
}

int bapi_need_token(const struct bench *b)
{
    if (!b->token) {
        fprintf(stderr, "bench_api: this scenario needs -T TOKEN-FILE\n");
        return -1;
    }
    return 0;
}

int bapi_need_key(const struct bench *b)
{
    if (!b->key) {
        fprintf(stderr, "bench_api: this scenario needs -k NODE-KEY-FILE\n");
        return -1;
    }
    return 0;
}

/* The load generator against the cheapest route: closed loop (rate), or
 * with -r open loop (p99 at that rate).  Sanity rows that run before the
 * reservation API exists.
 */
static int sc_healthz(struct bench *b, struct lg_result *res)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 32),
                            .rate = b->rate,
                            .duration_s = bapi_pickd(b->duration, 3),
                            .make = breq_healthz};
    bool open = cfg.rate > 0;
    char name[64];

    if (open)
        snprintf(name,
                 sizeof(name),
                 "healthz: p99 at %.0f/s open loop (sanity)",
                 cfg.rate);
    else
        snprintf(name,
                 sizeof(name),
                 "healthz: requests/s, %d connections (sanity)",
                 cfg.connections);
    if (bapi_run(b, &cfg, res, "healthz") < 0) {
        bout_row(name,
                 NAN,
                 open ? "ms" : "req/s",
                 open ? 10 : 5000,
                 open,
                 "could not run");
        return -1;
    }
    if (open)
        bapi_row_p99(name, res, K_GET, 10);
    else
        bout_row(name,
                 bapi_rate_of(res, res->kind[K_GET].ok),
                 "req/s",
                 5000,
                 false,
                 bout_failures(res, -1));
    bout_detail(res);
    return 0;
}

static int sc_pairs(struct bench *b, struct lg_result *res)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 8),
                            .duration_s = bapi_pickd(b->duration, 10),
                            .make = breq_pairs};
    char prefix[32], name[3][64];
    int rc = 0;

    if (bapi_need_token(b) < 0)
        return -1;
    if (b->job_prefix)
        snprintf(prefix, sizeof(prefix), "%s", b->job_prefix);
    else
        snprintf(prefix, sizeof(prefix), "b%d-", cfg.connections);
    b->prefix = prefix;
    b->nodes = "n[1-4]";
    b->hwcoll = b->hwcoll_opt;
    b->next_job = 1;
    snprintf(name[0],
             sizeof(name[0]),
             "reserve+release pairs/s, %d clients",
             cfg.connections);
    snprintf(name[1],
             sizeof(name[1]),
             "pgbench 1-row INSERT tps, %d clients",
             cfg.connections);
    snprintf(name[2],
             sizeof(name[2]),
             "pairs/s / pgbench tps, %d clients",
             cfg.connections);
    double pairs = NAN;
    const char *why = "could not run";
    if (bapi_run(b, &cfg, res, "pairs") == 0) {
        pairs = bapi_rate_of(res, res->kind[K_RELEASE].ok);
        why = bout_failures(res, -1);
    } else {
        rc = -1;
    }
    double tps = b->pg_tps > 0 ? b->pg_tps : NAN;
    if (b->pg_tps > 0) {
        bout_row(name[0], pairs, "pair/s", 0.5 * tps, false, why);
        bout_reference(name[1], tps, "tps");
        bout_row(name[2], pairs / tps, "ratio", 0.5, false, why);
    } else {
        /* no comparison given: run.sh compares runs with each other */
        bout_reference(name[0], why ? NAN : pairs, "pair/s");
    }
    if (rc == 0) {
        /* the slowest request of either kind, for run.sh's max row */
        uint64_t mx = res->kind[K_RESERVE].latency.max_us;
        if (res->kind[K_RELEASE].latency.max_us > mx)
            mx = res->kind[K_RELEASE].latency.max_us;
        printf("#   largest single request: %.3f ms\n", (double)mx / 1e3);
        bout_detail(res);
    }
    return rc;
}

static int sc_openloop(struct bench *b, struct lg_result *res)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 64),
                            .rate = bapi_pickd(b->rate, 1000),
                            .duration_s = bapi_pickd(b->duration, 10),
                            .make = breq_reserve_seq};
    char name[64];

    if (bapi_need_token(b) < 0)
        return -1;
    b->prefix = b->job_prefix ? b->job_prefix : "o";
    b->nodes = "n[1-4]";
    b->hwcoll = b->hwcoll_opt;
    b->limit = 0;
    snprintf(name,
             sizeof(name),
             "reserve p99 latency at %.0f/s (open loop)",
             cfg.rate);
    if (bapi_run(b, &cfg, res, "open loop") < 0) {
        bout_row(name, NAN, "ms", 10, true, "could not run");
        return -1;
    }
    const struct lg_kind_stats *s = &res->kind[K_RESERVE];
    const char *why = bout_failures(res, K_RESERVE);
    double cli = bapi_q_ms(&s->latency, 0.99),
           srv = bapi_q_ms(&s->server, 0.99);
    bout_row(name, cli, "ms", 10, true, why);
    /* The broker's own time (Server-Timing, from the request's arrival
     * to its answer) beside the client's: what is left is queueing
     * before the broker reads the request, and the client and network.
     */
    snprintf(name,
             sizeof(name),
             "reserve server p99 at %.0f/s (Server-Timing)",
             cfg.rate);
    bout_reference(name, srv, "ms");
    snprintf(name, sizeof(name), "client p99 / server p99 at %.0f/s", cfg.rate);
    bout_row(name,
             cli / srv,
             "ratio",
             2,
             true,
             s->server.count ? why : "no Server-Timing header");
    bout_detail(res);

    /* Release what was reserved so the pool and the later rows are not
     * affected.
     */
    struct lg_config rel = {
        .connections = 8, .duration_s = 120, .make = breq_release_seq};
    b->limit = res->kind[K_RESERVE].sent;
    if (bapi_run(b, &rel, res, "release") < 0)
        return -1;
    printf("#   released the open-loop jobs:\n");
    bout_detail_kind(res, K_RELEASE);
    return 0;
}

static int sc_bigjob(struct bench *b, struct lg_result *res)
{
    long cycles = b->count > 0 ? b->count : 50;
    struct lg_config cfg = {.connections = 1,
                            .duration_s = bapi_pickd(b->duration, 120),
                            .max_requests = (uint64_t)cycles * 2,
                            .make = breq_pairs};
    const char *srv_name = "reserve 11,136 nodes: server time p50";
    const char *cli_name = "reserve 11,136 nodes: client latency p50";

    if (bapi_need_token(b) < 0)
        return -1;
    b->prefix = "big";
    b->nodes = BIG_NODES;
    b->next_job = 1;
    if (bapi_run(b, &cfg, res, "big job") < 0) {
        bout_row(srv_name, NAN, "ms", 5, true, "could not run");
        return -1;
    }
    const struct lg_kind_stats *s = &res->kind[K_RESERVE];
    const char *why = bout_failures(res, -1);
    bout_row(srv_name,
             bapi_q_ms(&s->server, 0.5),
             "ms",
             5,
             true,
             s->server.count ? why : "no Server-Timing header");
    bout_row(cli_name, bapi_q_ms(&s->latency, 0.5), "ms", 5, true, why);
    bout_detail(res);
    return 0;
}

static int sc_populate(struct bench *b, struct lg_result *res)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 8),
                            .duration_s = bapi_pickd(b->duration, 300),
                            .make = breq_populate};
    char name[64];

    if (bapi_need_token(b) < 0)
        return -1;
    b->prefix = "a";
    b->limit = (uint64_t)(b->count > 0 ? b->count : POPULATE_DEFAULT);
    cfg.max_requests = b->limit;
    snprintf(name,
             sizeof(name),
             "setup: %llu active reservations on n[k-(k+3)]",
             (unsigned long long)b->limit);
    if (bapi_run(b, &cfg, res, "populate") < 0) {
        bout_row(name, NAN, "resv", (double)b->limit, false, "could not run");
        return -1;
    }
    bout_row(name,
             (double)res->kind[K_RESERVE].ok,
             "resv",
             (double)b->limit,
             false,
             NULL);
    bout_detail(res);
    return 0;
}

static int sc_nodeview(struct bench *b, struct lg_result *res)
{
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 1),
                            .duration_s = bapi_pickd(b->duration, 5),
                            .make = breq_nodeview};
    const char *names[2] = {"GET /v1/nodes/{node}, 10k active: p50",
                            "GET /v1/nodes/{node}, 10k active: p99"};

    if (bapi_need_key(b) < 0)
        return -1;
    b->limit = (uint64_t)(b->count > 0 ? b->count : POPULATE_DEFAULT);
    if (bapi_run(b, &cfg, res, "node view") < 0) {
        bout_row(names[0], NAN, "ms", 2, true, "could not run");
        return -1;
    }
    const struct lg_kind_stats *s = &res->kind[K_GET];
    const char *why = bout_failures(res, K_GET);
    bout_row(names[0], bapi_q_ms(&s->latency, 0.5), "ms", 2, true, why);
    bout_row(names[1], bapi_q_ms(&s->latency, 0.99), "ms", 2, true, why);
    bout_detail(res);
    return 0;
}

static int sc_rss(struct bench *b, struct lg_result *res)
{
    char path[64], line[256];
    double mib = NAN;
    const char *name = "memory: broker VmRSS with 10k active reservations";

    (void)res;
    if (b->pid <= 0) {
        fprintf(stderr, "bench_api: rss needs -p PID\n");
        return -1;
    }
    snprintf(path, sizeof(path), "/proc/%ld/status", b->pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        bout_row(name, NAN, "MiB", 64, true, "no such process");
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long kb;
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            mib = (double)kb / 1024;
    }
    fclose(f);
    bout_row(name, mib, "MiB", 64, true, NULL);
    return 0;
}

void bapi_free_tokens(struct bench *b)
{
    for (int i = 0; i < b->ntokens; i++)
        free(b->node_tokens[i]);
    free(b->node_tokens);
    b->node_tokens = NULL;
    b->ntokens = 0;
}

static int sc_storm(struct bench *b, struct lg_result *res)
{
    struct lg_config one = {.connections = 1, .duration_s = 30};
    struct lg_config cfg = {.connections = bapi_pick(b->conns, 48),
                            .duration_s = bapi_pickd(b->duration, 10),
                            .make = breq_storm};
    char name[64];
    int rc = -1;

    if (bapi_need_token(b) < 0 || bapi_need_key(b) < 0)
        return -1;
    snprintf(name,
             sizeof(name),
             "node fetch storm: 11,136 tokens, %d conns",
             cfg.connections);
    b->job = "storm";
    b->nodes = BIG_NODES;
    one.make = breq_one_reserve;
    if (bapi_run(b, &one, res, "storm job") < 0
        || res->kind[K_RESERVE].ok != 1) {
        bout_row(name, NAN, "req/s", 20000, false, "could not reserve the job");
        bout_detail(res);
        return -1;
    }
    if (!(b->node_tokens = calloc(BIG_COUNT, sizeof(*b->node_tokens))))
        goto done;
    for (int i = 0; i < BIG_COUNT; i++) {
        char node[16], tok[TOKEN_NODE_SIZE];
        snprintf(node, sizeof(node), "nid%06d", i + 1);
        if (token_node_derive(b->key, b->key_len, node, tok, sizeof(tok), NULL)
                < 0
            || !(b->node_tokens[i] = strdup(tok)))
            goto done;
        b->ntokens++;
    }
    if (bapi_run(b, &cfg, res, "storm") < 0) {
        bout_row(name, NAN, "req/s", 20000, false, "could not run");
        goto done;
    }
    bout_row(name,
             bapi_rate_of(res, res->kind[K_GET].ok),
             "req/s",
             20000,
             false,
             bout_failures(res, K_GET));
    bout_detail(res);
    rc = 0;
done:
    if (rc < 0 && b->ntokens < BIG_COUNT)
        printf("#   storm: cannot derive the node tokens\n");
    bapi_free_tokens(b);
    one.make = breq_one_release;
    (void)bapi_run(b, &one, res, "storm release");
    return rc;
}

/* ---- helpers for run.sh ----------------------------------------------- */

static int cmd_freeport(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    int rc = -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0
        || getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        perror("bench_api: freeport");
        goto done;
    }
    printf("%u\n", (unsigned)ntohs(sa.sin_port));
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    return rc;
}

static bool edge_space(unsigned char c)
{
    return c == '\0' || c == ' ' || (c >= '\t' && c <= '\r');
}

/* Write a fresh secret to a new file of mode 0600. */
static int write_secret(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = -1;

    if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
        fprintf(stderr, "bench_api: %s: %s\n", path, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (fd >= 0 && close(fd) < 0)
        rc = -1;
    return rc;
}

/* 32 random bytes.  Keys whose first or last byte is white space or NUL
 * are drawn again, so a reader that trims the file sees the same key.
 */
static int cmd_nodekey(const char *path)
{
    unsigned char key[TOKEN_KEY_MIN];
    vnib_error_t err = {0};
    int rc;

    do {
        if (token_key_generate(key, sizeof(key), &err) < 0) {
            fprintf(stderr, "bench_api: %s\n", err.text);
            return -1;
        }
    } while (edge_space(key[0]) || edge_space(key[sizeof(key) - 1]));
    rc = write_secret(path, key, sizeof(key));
    vnib_memburn(key, sizeof(key));
    return rc;
}

static int cmd_token(const char *path)
{
    char tok[TOKEN_SIZE];
    vnib_error_t err = {0};
    int rc;

    if (token_generate(tok, sizeof(tok), &err) < 0) {
        fprintf(stderr, "bench_api: %s\n", err.text);
        return -1;
    }
    rc = write_secret(path, tok, strlen(tok));
    vnib_memburn(tok, sizeof(tok));
    return rc;
}

/* ---- main ------------------------------------------------------------- */

struct scenario {
    const char *name;
    int (*fn)(struct bench *b, struct lg_result *res);
    const char *help;
};

static const struct scenario scenarios[] = {
    {"healthz", sc_healthz, "GET /healthz rate, -c 32 -d 3 (-r: p99 at rate)"},
    {"pairs",
     sc_pairs,
     "reserve+release pairs/s, -c 8 -d 10 [-P TPS] [-x PFX]"},
    {"openloop", sc_openloop, "reserve p99 at -r 1000/s for -d 10, released"},
    {"bigjob", sc_bigjob, "-n 50 reserve+release cycles of 11,136 nodes"},
    {"populate", sc_populate, "create -n 10000 reservations a<k> on n[k-k+3]"},
    {"nodeview", sc_nodeview, "GET /v1/nodes/n<k> with node tokens, -d 5"},
    {"rss", sc_rss, "VmRSS of -p PID"},
    {"storm", sc_storm, "11,136 node tokens GET one job, -c 48 -d 10"},
    {"frag-setup", bnodes_frag_setup, "reserve fragc (1 range), fragf (1,000)"},
    {"frag-get-compact", bnodes_frag_get_compact, "nodes GET fragc, -c 1 -d 3"},
    {"frag-get-ranged", bnodes_frag_get_ranged, "nodes GET fragf, -c 1 -d 3"},
    {"frag-release", bnodes_frag_release, "release fragc and fragf"},
    {"stepstorm-setup",
     bnodes_stepstorm_setup,
     "reserve stepjob, 11,136 nodes"},
    {"stepstorm",
     bnodes_stepstorm,
     "-n 100 steps of stepjob, each GET once per node, -c 48 [-x PFX]"},
    {"stepstorm-release", bnodes_stepstorm_release, "release stepjob"},
    {"fullmachine",
     bnodes_fullmachine,
     "-m MODE -x JOB [-s STEP] -i RES: each of 11,136 nodes, -c 256"},
    {"drain-fill", bnodes_drain_fill, "reserve -n 10000 jobs d<k>, hwcoll on"},
    {"drain-release", bnodes_drain_release, "release -n 10000 jobs d<k>"},
    {"drain-load",
     bnodes_drain_load,
     "reserve p99, -r 200, until -S FILE exists"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: bench_api [-u URL] [-T TOKEN-FILE] [-k NODE-KEY-FILE]\n"
            "                 [-c CONNS] [-d SECONDS] [-r RATE] [-n COUNT]\n"
            "                 [-p PID] [-P PGBENCH-TPS] [-S STOP-FILE]\n"
            "                 [-x JOB-PREFIX] [-H on|off] [-m MODE]\n"
            "                 [-s STEP] [-i RESERVATION]\n"
            "                 SCENARIO\n"
            "       bench_api freeport | nodekey FILE | token FILE\n"
            "URL must be http://127.0.0.1:PORT.  Scenarios:\n");
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        fprintf(f, "  %-13s %s\n", scenarios[i].name, scenarios[i].help);
}

static double num_arg(const char *s, bool *bad)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0))
        *bad = true;
    return v;
}

static int read_secret(const char *path, char **buf, size_t *len)
{
    vnib_error_t err = {0};

    if (secfile_read(path, buf, len, &err) < 0) {
        fprintf(stderr, "bench_api: %s\n", err.text);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b = {.url = "http://127.0.0.1:8080"};
    struct lg_result *res = NULL;
    char *key = NULL;
    bool bad = false;
    int opt, rc = 1;

    while ((opt = getopt(argc, argv, "u:T:k:c:d:r:n:p:P:S:x:H:m:s:i:h"))
           != -1) {
        switch (opt) {
            case 'u':
                b.url = optarg;
                break;
            case 'T':
                if (b.token || read_secret(optarg, &b.token, &b.token_size) < 0)
                    goto done;
                /* one line; drop the newline and anything after it */
                b.token[strcspn(b.token, "\r\n \t")] = '\0';
                break;
            case 'k':
                if (key || read_secret(optarg, &key, &b.key_len) < 0)
                    goto done;
                b.key = (unsigned char *)key;
                break;
            case 'c':
                b.conns = (int)num_arg(optarg, &bad);
                break;
            case 'd':
                b.duration = num_arg(optarg, &bad);
                break;
            case 'r':
                b.rate = num_arg(optarg, &bad);
                break;
            case 'n':
                b.count = (long)num_arg(optarg, &bad);
                break;
            case 'p':
                b.pid = (long)num_arg(optarg, &bad);
                break;
            case 'P':
                b.pg_tps = num_arg(optarg, &bad);
                break;
            case 'S':
                b.stop_file = optarg;
                break;
            case 'x':
                b.job_prefix = optarg;
                break;
            case 'H':
                if (strcmp(optarg, "on") && strcmp(optarg, "off"))
                    bad = true;
                b.hwcoll_opt = optarg;
                break;
            case 'm':
                b.mode = optarg;
                break;
            case 's':
                b.step = optarg;
                break;
            case 'i':
                b.resv_id = (long long)num_arg(optarg, &bad);
                break;
            case 'h':
                usage(stdout);
                rc = 0;
                goto done;
            default:
                bad = true;
        }
    }
    if (bad || optind >= argc) {
        usage(stderr);
        goto done;
    }
    const char *cmd = argv[optind];
    if (strcmp(cmd, "freeport") == 0) {
        rc = cmd_freeport() < 0;
        goto done;
    }
    if (strcmp(cmd, "nodekey") == 0 || strcmp(cmd, "token") == 0) {
        if (optind + 1 >= argc) {
            usage(stderr);
            goto done;
        }
        rc = (cmd[0] == 'n' ? cmd_nodekey(argv[optind + 1])
                            : cmd_token(argv[optind + 1]))
             < 0;
        goto done;
    }
    if (!(res = calloc(1, sizeof(*res)))) {
        fprintf(stderr, "bench_api: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        if (strcmp(cmd, scenarios[i].name) == 0) {
            rc = scenarios[i].fn(&b, res) < 0;
            goto done;
        }
    }
    fprintf(stderr, "bench_api: unknown scenario '%s'\n", cmd);
    usage(stderr);
done:
    free(res);
    if (b.token)
        secfile_free(b.token, b.token_size);
    if (key)
        secfile_free(key, b.key_len);
    return rc;
}
