/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The history client's command line (see history.c): its usage text and
 * the options read into struct run.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stress/history.h"
#include "vnib/client.h"
#include "vnib/secfile.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: history --url URL [--url URL2 ...] --sched-token-file FILE\n"
        "               [--admin-token-file FILE] [--node-key-file FILE]\n"
        "               [--threads N] [--seconds S] [--vni-count N]\n"
        "               [--nodes-prefix P] [--job-prefix P] [--settle S]\n"
        "               [--attempts N] [--no-reports] [--hwcoll] [--bench]\n"
        "               [--outage] [--job-nodes N [--lease]] [--log FILE]\n"
        "               [--stop-file FILE] [--steps]\n"
        "               [--deadline-ms MIN-MAX [--deadline-pct PCT]]\n"
        "  --vni-count 0 (default) draws 1-4 per job; --no-reports skips\n"
        "  the node reports (release is then immediate; no key needed).\n"
        "  --hwcoll: two-node jobs with hardware collectives, and every\n"
        "  session token a reserve reports is read back and compared.\n"
        "  --job-nodes N: jobs of N nodes (3-%d) reporting all at once\n"
        "  (creating, created, destroyed), each on its own connection;\n"
        "  what each was told is compared with the broker's node reports.\n"
        "  --lease: those jobs reserve with a lease (presumed): no report\n"
        "  at the start, and every node holds until its destroyed.\n"
        "  --outage: the database fails over during the run, so 503\n"
        "  unavailable is legitimate (retried like any 5xx; raise\n"
        "  --attempts to outlast the failover).\n"
        "  --stop-file FILE: the load ends before --seconds once FILE\n"
        "  exists (checked before each job).\n"
        "  --steps: each job reserves 1-2 steps with VNIs of their own with\n"
        "  its job token (as Slurm's stepmgr), reads them back and ends\n"
        "  them before its release; their invariants are checked too\n"
        "  (the broker needs a node key to give job tokens; --vni-count\n"
        "  at most 3; not with --job-nodes or --hwcoll).\n"
        "  --deadline-ms MIN-MAX: PCT%% of the jobs (--deadline-pct, default\n"
        "  50) send each reserve attempt with Vnib-Deadline-Ms drawn from\n"
        "  MIN-MAX (1-3600000), so that some expire while queued for a\n"
        "  group commit (503 deadline_exceeded: retried, or for half of\n"
        "  those jobs the job is given up); the checker holds every such\n"
        "  reply to \"nothing was written\" (hdeadline.h).\n"
        "  Exit 0: every invariant held; 1: one failed; 2: usage/set-up.\n",
        HREC_MAX_NODES);
}

static int read_token(const char *path, char **buf, size_t *size)
{
    vnib_error_t err = {0};

    if (secfile_read(path, buf, size, &err) < 0) {
        fprintf(stderr, "history: %s\n", err.text);
        return -1;
    }
    (*buf)[strcspn(*buf, "\r\n \t")] = '\0';
    return 0;
}

static double num(const char *s, bool *bad)
{
    char *end = NULL;

    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0))
        *bad = true;
    return v;
}

/* "MIN-MAX" as two whole milliseconds, 1 <= MIN <= MAX <= the header's
 * maximum.  -1 when malformed.
 */
static int range(const char *s, int *lo, int *hi)
{
    char *end = NULL;
    long a, b;

    errno = 0;
    a = strtol(s, &end, 10);
    if (errno || end == s || *end != '-')
        return -1;
    s = end + 1;
    b = strtol(s, &end, 10);
    if (errno || end == s || *end || a < 1 || b < a
        || b > VNIB_DEADLINE_MAX_MS)
        return -1;
    *lo = (int)a;
    *hi = (int)b;
    return 0;
}

int history_parse_args(int argc, char **argv, struct run *run)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},
        {"threads", required_argument, NULL, 't'},
        {"seconds", required_argument, NULL, 's'},
        {"vni-count", required_argument, NULL, 'v'},
        {"nodes-prefix", required_argument, NULL, 'N'},
        {"job-prefix", required_argument, NULL, 'J'},
        {"sched-token-file", required_argument, NULL, 'S'},
        {"admin-token-file", required_argument, NULL, 'A'},
        {"node-key-file", required_argument, NULL, 'K'},
        {"log", required_argument, NULL, 'l'},
        {"settle", required_argument, NULL, 'w'},
        {"attempts", required_argument, NULL, 'a'},
        {"no-reports", no_argument, NULL, 'R'},
        {"hwcoll", no_argument, NULL, 'H'},
        {"bench", no_argument, NULL, 'B'},
        {"outage", no_argument, NULL, 'O'},
        {"job-nodes", required_argument, NULL, 'n'},
        {"lease", no_argument, NULL, 'L'},
        {"stop-file", required_argument, NULL, 'X'},
        {"steps", no_argument, NULL, 'T'},
        {"deadline-ms", required_argument, NULL, 'D'},
        {"deadline-pct", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bool bad = false;
    int opt;
    vnib_error_t err = {0};

    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
            case 'u':
                if (run->nurls == MAX_URLS)
                    bad = true;
                else
                    run->urls[run->nurls++] = optarg;
                break;
            case 't':
                run->threads = (int)num(optarg, &bad);
                break;
            case 's':
                run->seconds = num(optarg, &bad);
                break;
            case 'v':
                run->vni_count = (int)num(optarg, &bad);
                break;
            case 'N':
                run->nodes_prefix = optarg;
                break;
            case 'J':
                snprintf(run->job_prefix, sizeof(run->job_prefix), "%s",
                         optarg);
                break;
            case 'S':
                if (run->sched
                    || read_token(optarg, &run->sched, &run->sched_size) < 0)
                    return -1;
                break;
            case 'A':
                if (run->admin
                    || read_token(optarg, &run->admin, &run->admin_size) < 0)
                    return -1;
                break;
            case 'K':
                if (run->key
                    || secfile_read(optarg, &run->key, &run->key_len, &err)
                           < 0) {
                    fprintf(stderr, "history: %s\n", err.text);
                    return -1;
                }
                break;
            case 'l':
                run->log_path = optarg;
                break;
            case 'w':
                run->settle = num(optarg, &bad);
                break;
            case 'a':
                run->attempts = (int)num(optarg, &bad);
                break;
            case 'R':
                run->reports = false;
                break;
            case 'H':
                run->hwcoll = true;
                break;
            case 'B':
                run->bench = true;
                break;
            case 'O':
                run->outage = true;
                break;
            case 'n':
                run->job_nodes = (int)num(optarg, &bad);
                break;
            case 'L':
                run->lease = true;
                break;
            case 'X':
                run->stop_file = optarg;
                break;
            case 'T':
                run->steps = true;
                break;
            case 'D':
                if (range(optarg, &run->deadline_min_ms,
                          &run->deadline_max_ms) < 0)
                    bad = true;
                break;
            case 'P':
                run->deadline_pct = (int)num(optarg, &bad);
                break;
            case 'h':
                usage(stdout);
                exit(0);
            default:
                bad = true;
        }
    }
    if (bad || optind != argc || run->nurls == 0 || !run->sched
        || (run->reports && !run->key) || run->threads < 1
        || run->threads > MAX_THREADS || run->seconds <= 0
        || run->vni_count > 4 || run->attempts < 1
        || strlen(run->nodes_prefix) > 16 || !run->nodes_prefix[0]
        || (run->job_nodes
            && (run->job_nodes < 3 || run->job_nodes > HREC_MAX_NODES
                || !run->reports || run->hwcoll))
        || (run->lease && !run->job_nodes)
        || (run->steps
            && (run->job_nodes || run->hwcoll
                || run->vni_count >= HREC_MAX_VNIS))
        || run->deadline_pct > 100) {
        usage(stderr);
        return -1;
    }
    return 0;
}

