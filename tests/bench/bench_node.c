/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a job's start from a lease costs one node (issue 43's per-node
 * target): `vnib-agent prolog --lease` on a node of 4 simulated NICs, run
 * as a scheduler runs it (a new process, its exit awaited), against
 * creating the same 4 services alone (the NICs opened, listed, and one
 * service sized and made on each, in this process).  What the agent adds
 * over the services is its start, its configuration, the lease's
 * signature and checks, its record and the job environment; the target
 * is at most 20 ms.
 *
 * The two runs alternate, each round starting with the other one, and
 * every service is destroyed between runs (not timed), so that each run
 * finds the NICs as a job's start does.  The node's files are on tmpfs
 * (/dev/shm), as its state directory is (/run).  Usage: bench_node AGENT
 * [ROUNDS] (default 30).  Prints the rows of tests/bench/run.sh's table: median
 * and range of each, and of the difference of the two within a round.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "vnib/lease.h"
#include "agent/jobstate.h"
#include "agent/nic.h"
#include "agent/nic_sim.h"
#include "agent/services.h"

#define NICS 4
#define JOB "bench1"
#define UID 1000
#define NCORES 64
#define TARGET_MS 20.0
#define MAX_ROUNDS 1000

extern char **environ;

/* On tmpfs, as a node's state directory is (/run), and as the NICs keep
 * their services (in the kernel, not in files). */
static char dir[64];
static char sim[128], state[128], conf[128], lease_arg[160];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_node: %s: %s\n", what, why);
    exit(1);
}

static void path(char *buf, size_t size, const char *name)
{
    if ((size_t)snprintf(buf, size, "%s/%s", dir, name) >= size)
        die(name, "path too long");
}

static void write_file(const char *name, mode_t mode, const char *text)
{
    char p[160];
    FILE *f;

    path(p, sizeof(p), name);
    if (!(f = fopen(p, "w")) || fchmod(fileno(f), mode) < 0
        || fputs(text, f) < 0 || fclose(f) != 0)
        die(p, strerror(errno));
}

/* The node: its NICs, agent.toml, token, the broker's key and a lease. */
static void node_setup(void)
{
    vnib_error_t e = {0};
    char key[160], pub[160], text[1024];
    struct lease_signer *s;
    EVP_PKEY *k;
    FILE *f;
    char *lease = NULL;

    struct stat st;
    snprintf(dir,
             sizeof(dir),
             "%s/vnib-bench-node.XXXXXX",
             stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm"
                                                               : "/tmp");
    if (!mkdtemp(dir))
        die(dir, strerror(errno));
    path(sim, sizeof(sim), "sim");
    path(state, sizeof(state), "state");
    path(conf, sizeof(conf), "agent.toml");
    path(key, sizeof(key), "lease.key");
    path(pub, sizeof(pub), "lease.pub");
    if (nic_sim_init(sim, NICS, &e) < 0)
        die("sim-init", e.text);
    if (!(k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")))
        die("key", "cannot make an Ed25519 key");
    if (!(f = fopen(key, "w")) || fchmod(fileno(f), 0600) < 0
        || PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) != 1
        || fclose(f) != 0 || !(f = fopen(pub, "w"))
        || PEM_write_PUBKEY(f, k) != 1 || fclose(f) != 0)
        die(key, "cannot write the key");
    EVP_PKEY_free(k);
    /* The token only names the node: nothing is sent to a broker. */
    write_file("token",
               0600,
               "vnibnode.bn1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n");
    snprintf(text,
             sizeof(text),
             "[broker]\nurl = \"http://127.0.0.1:9\"\n"
             "token_file = \"%s/token\"\n"
             "[node]\nstate_dir = \"%s\"\nspool_dir = \"%s/spool\"\n"
             "[nic]\nbackend = \"sim\"\nsim_dir = \"%s\"\n"
             "[lease]\npublic_keys = [\"%s\"]\n",
             dir,
             state,
             dir,
             sim,
             pub);
    write_file("agent.toml", 0644, text);

    json_t *p = json_pack(
        "{s:I, s:s, s:I, s:s, s:s, s:[I, I], s:s, s:s, "
        "s:{}, s:b}",
        "id",
        (json_int_t)1,
        "job_id",
        JOB,
        "uid",
        (json_int_t)UID,
        "user",
        "bench",
        "nodes",
        "bn[1-4]",
        "vnis",
        (json_int_t)2000,
        (json_int_t)2001,
        "tcs_mask",
        "0xa",
        "state",
        "active",
        "environment",
        "hwcoll_fetch",
        0);
    if (!p)
        die("lease", "cannot build the payload");
    if (!(s = lease_signer_load(key, &e))
        || lease_sign(s, p, time(NULL), 3600, &lease, &e) < 0)
        die("lease", e.text);
    lease_signer_destroy(s);
    json_decref(p);
    write_file("lease", 0644, lease);
    free(lease);
    lease_arg[0] = '@';
    path(lease_arg + 1, sizeof(lease_arg) - 1, "lease");
}

static bool pick_job(const struct nic_svc *svc, const void *arg)
{
    (void)arg;
    return !svc->is_system && svc->svc_id != 1;
}

/* Back to a node without the job: its services and files gone. */
static void node_reset(void)
{
    vnib_error_t e = {0};
    struct nic_backend *nb = nic_create("sim", sim, &e);
    struct nic_info *devs = NULL;
    int ndev = 0;
    json_t *done = json_array(), *left = json_array();

    if (!nb || nic_list(nb, &devs, &ndev, &e) < 0
        || services_destroy(
               nb, devs, ndev, pick_job, NULL, 0, false, done, left, &e)
               != 0)
        die("reset", e.text[0] ? e.text : "services left");
    jobstate_remove(state, JOB, true);
    json_decref(done);
    json_decref(left);
    free(devs);
    nic_destroy(nb);
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* `vnib-agent prolog --lease`, a process of its own; its time in ms, and
 * the CPU time it took in *cpu. */
static double run_prolog(const char *agent, double *cpu)
{
    char *argv[] = {(char *)"vnib-agent",
                    (char *)"--config",
                    conf,
                    (char *)"prolog",
                    (char *)"--job",
                    (char *)JOB,
                    (char *)"--uid",
                    (char *)"1000",
                    (char *)"--ncores",
                    (char *)"64",
                    (char *)"--lease",
                    lease_arg,
                    NULL};
    posix_spawn_file_actions_t fa;
    struct rusage ru;
    pid_t pid;
    int status;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    double t0 = now_ms();
    if ((errno = posix_spawn(&pid, agent, &fa, NULL, argv, environ)) != 0)
        die(agent, strerror(errno));
    if (wait4(pid, &status, 0, &ru) < 0)
        die(agent, strerror(errno));
    double t1 = now_ms();
    *cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3
           + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die(agent, "prolog --lease failed");
    return t1 - t0;
}

/* The 4 services alone, as the prolog makes them; the time in ms, and
 * the CPU time in *cpu. */
static double run_services(double *cpu)
{
    struct services_job job = {.uid = UID,
                               .nvnis = 2,
                               .vnis = {2000, 2001},
                               .tcs_mask = 0xa,
                               .ncores = NCORES,
                               .floor_percent = 25};
    vnib_error_t e = {0};
    struct nic_info *devs = NULL;
    int ndev = 0, ids[NICS + 1];
    bool created[NICS + 1];

    double t0 = now_ms(), c0 = cpu_ms();
    struct nic_backend *nb = nic_create("sim", sim, &e);
    if (!nb || nic_list(nb, &devs, &ndev, &e) < 0 || ndev != NICS
        || services_create(nb, devs, ndev, &job, ids, created, stderr, &e) < 0)
        die("services", e.text);
    free(devs);
    nic_destroy(nb);
    *cpu = cpu_ms() - c0;
    return now_ms() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, least and largest of n figures (sorted in place). */
static void stats(double *v, int n, double *med, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    *med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    *lo = v[0];
    *hi = v[n - 1];
}

/* A row of run.sh's table: NAME FIGURE ms, with target (< 0: none). */
static void row(const char *name, double fig, double target, const char *note)
{
    if (target < 0)
        printf("%-52s %12.3f %-6s %2s %10s  ref (%s)\n",
               name,
               fig,
               "ms",
               "",
               "-",
               note);
    else
        printf("%-52s %12.3f %-6s %2s %10.3f  %s (%s)\n",
               name,
               fig,
               "ms",
               "<=",
               target,
               fig <= target ? "met" : "NOT MET",
               note);
}

int main(int argc, char **argv)
{
    enum { PROLOG, ALONE, DIFF, PROLOG_CPU, ALONE_CPU, DIFF_CPU, N };
    static double v[N][MAX_ROUNDS];
    int rounds = argc > 2 ? atoi(argv[2]) : 30;
    double m[N], lo[N], hi[N], ignore;
    char note[200];

    if (argc < 2 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(
            stderr, "usage: bench_node AGENT [ROUNDS (1-%d)]\n", MAX_ROUNDS);
        return 2;
    }
    node_setup();
    /* One of each, not counted: the files and the caches warm. */
    run_prolog(argv[1], &ignore);
    node_reset();
    run_services(&ignore);
    node_reset();
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            v[PROLOG][r] = run_prolog(argv[1], &v[PROLOG_CPU][r]);
            node_reset();
            v[ALONE][r] = run_services(&v[ALONE_CPU][r]);
        } else {
            v[ALONE][r] = run_services(&v[ALONE_CPU][r]);
            node_reset();
            v[PROLOG][r] = run_prolog(argv[1], &v[PROLOG_CPU][r]);
        }
        node_reset();
        v[DIFF][r] = v[PROLOG][r] - v[ALONE][r];
        v[DIFF_CPU][r] = v[PROLOG_CPU][r] - v[ALONE_CPU][r];
    }
    for (int i = 0; i < N; i++)
        stats(v[i], rounds, &m[i], &lo[i], &hi[i]);
    snprintf(note,
             sizeof(note),
             "%.3f-%.3f, %d rounds alternated",
             lo[ALONE],
             hi[ALONE],
             rounds);
    row("node: 4 services created alone (sim NICs)", m[ALONE], -1, note);
    snprintf(note, sizeof(note), "%.3f-%.3f", lo[PROLOG], hi[PROLOG]);
    row("node: vnib-agent prolog --lease, 4 NICs (process)",
        m[PROLOG],
        -1,
        note);
    snprintf(note,
             sizeof(note),
             "%.3f-%.3f; median of per-round differences",
             lo[DIFF],
             hi[DIFF]);
    row("node: prolog --lease minus the services alone",
        m[DIFF],
        TARGET_MS,
        note);
    printf(
        "#   CPU time: prolog --lease %.3f ms (%.3f-%.3f), the services "
        "alone %.3f ms (%.3f-%.3f), difference %.3f ms (%.3f-%.3f)\n",
        m[PROLOG_CPU],
        lo[PROLOG_CPU],
        hi[PROLOG_CPU],
        m[ALONE_CPU],
        lo[ALONE_CPU],
        hi[ALONE_CPU],
        m[DIFF_CPU],
        lo[DIFF_CPU],
        hi[DIFF_CPU]);
    snprintf(note, sizeof(note), "rm -rf '%s'", dir);
    if (system(note) != 0)
        fprintf(stderr, "bench_node: could not remove %s\n", dir);
    return 0;
}
