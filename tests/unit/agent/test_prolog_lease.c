/* SPDX-License-Identifier: GPL-2.0-or-later */
/* In-process tests of a job's start from a lease (`vnib-agent prolog
 * --lease`, agent/cmd_lease.c, and vnib_step_setup_lease), of the end of
 * a lease's reservation on a node (epilog, housekeeping), and of `flush`'s
 * sweep of the reservations that wait on a node that never ran them.
 *
 * The NICs are simulated (agent/nic_sim.c) and the broker a stand-in
 * (struct cmd_broker) that counts every request: a start from a lease must
 * make none, except the hardware collectives' fetch when the lease asks
 * for it.  Leases are signed here with lib/lease.c and keys made here;
 * each refusal (altered, expired, unknown key, another job, step, owner
 * or node, a reservation not active) must leave the NICs and the state
 * directory untouched.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "vnib/lease.h"
#include "agent/commands.h"
#include "agent/jobstate.h"
#include "agent/nic.h"
#include "agent/nic_sim.h"
#include "agent/services.h"
#include "agent/stepapi.h"

#define NNICS 2
#define JOB "42"

/* The stand-in broker: it answers from what a test sets and counts. */
struct fake_broker {
    json_t *reservation; /* GET /v1/reservations/JOB[/steps/S] answers it */
    int fetch_status;    /* -1: unreachable */
    json_t *node_view;   /* GET /v1/nodes/NODE */
    int report_status;
    json_t *reports; /* every report, in order */
    int gets;        /* GETs asked */
};

struct fixture {
    char dir[64];
    char nics[128], state[128], spool[128];
    char key[128], pub[128], other_key[128], other_pub[128];
    struct lease_signer *signer, *other;
    struct fake_broker broker;
    struct cmd_ctx ctx;
    struct cmd_opts opts;
    uid_t owner;
    char *out;
    size_t out_len;
};

static int fake_get(void *arg,
                    const char *path,
                    long deadline_ms,
                    json_t **replyp,
                    vnib_error_t *errp)
{
    struct fake_broker *b = arg;
    (void)deadline_ms;

    b->gets++;
    *replyp = NULL;
    if (!strncmp(path, "/v1/nodes/", 10)) {
        *replyp = json_incref(b->node_view);
        return 200;
    }
    if (b->fetch_status < 0) {
        errno = ECONNREFUSED;
        errprintf(errp, "connection refused");
        return -1;
    }
    if (b->fetch_status != 200 || !b->reservation
        || strncmp(path, "/v1/reservations/" JOB, 19) != 0) {
        errprintf(errp, "HTTP 404: no such reservation");
        return 404;
    }
    *replyp = json_incref(b->reservation);
    return 200;
}

static int fake_report(void *arg,
                       const struct vnib_report *r,
                       long deadline_ms,
                       vnib_error_t *errp)
{
    struct fake_broker *b = arg;
    (void)deadline_ms;

    json_array_append_new(b->reports,
                          json_pack("{s:s, s:s*, s:s, s:I, s:O?}",
                                    "job_id",
                                    r->job_id,
                                    "step_id",
                                    r->step_id,
                                    "cxi",
                                    r->cxi,
                                    "reservation",
                                    (json_int_t)r->reservation,
                                    "services",
                                    r->services));
    if (b->report_status != 200)
        errprintf(errp, "HTTP %d: refused", b->report_status);
    return b->report_status;
}

/* A new Ed25519 key, as openssl writes it: private (0600) and public. */
static void write_key(const char *priv, const char *pub)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    FILE *f;

    assert_non_null(k);
    assert_non_null(f = fopen(priv, "w"));
    assert_int_equal(fchmod(fileno(f), 0600), 0);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    assert_int_equal(fclose(f), 0);
    assert_non_null(f = fopen(pub, "w"));
    assert_int_equal(PEM_write_PUBKEY(f, k), 1);
    assert_int_equal(fclose(f), 0);
    EVP_PKEY_free(k);
}

static void path_in(char *buf, size_t size, const char *dir, const char *name)
{
    assert_true((size_t)snprintf(buf, size, "%s/%s", dir, name) < size);
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    vnib_error_t e = {0};

    assert_non_null(fx);
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/vnib-test-lease-prolog.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    path_in(fx->nics, sizeof(fx->nics), fx->dir, "nics");
    path_in(fx->state, sizeof(fx->state), fx->dir, "state");
    path_in(fx->spool, sizeof(fx->spool), fx->dir, "spool");
    path_in(fx->key, sizeof(fx->key), fx->dir, "lease.key");
    path_in(fx->pub, sizeof(fx->pub), fx->dir, "lease.pub");
    path_in(fx->other_key, sizeof(fx->other_key), fx->dir, "other.key");
    path_in(fx->other_pub, sizeof(fx->other_pub), fx->dir, "other.pub");
    write_key(fx->key, fx->pub);
    write_key(fx->other_key, fx->other_pub);
    assert_non_null(fx->signer = lease_signer_load(fx->key, &e));
    assert_non_null(fx->other = lease_signer_load(fx->other_key, &e));
    assert_int_equal(nic_sim_init(fx->nics, NNICS, &e), 0);
    assert_int_equal(mkdir(fx->spool, 0700), 0);

    fx->owner = geteuid();
    struct cmd_ctx *a = &fx->ctx;
    assert_non_null(a->cfg =
                        agentcfg_load("/nonexistent/agent.toml", false, &e));
    assert_int_equal(agentcfg_set(&a->cfg->backend, "sim"), 0);
    assert_int_equal(agentcfg_set(&a->cfg->sim_dir, fx->nics), 0);
    assert_int_equal(agentcfg_set(&a->cfg->state_dir, fx->state), 0);
    assert_int_equal(agentcfg_set(&a->cfg->spool_dir, fx->spool), 0);
    assert_int_equal(agentcfg_set(&a->cfg->lease_public_keys, fx->pub), 0);
    a->cfg->epilog_retry_busy_ms = 0;
    a->cfg->housekeeping_retry_busy_ms = 0;
    snprintf(a->node, sizeof(a->node), "n2");
    a->err = stderr;
    a->warnings = json_array();
    a->broker = (struct cmd_broker){fake_get, fake_report, &fx->broker};
    fx->broker.fetch_status = 200;
    fx->broker.report_status = 200;
    fx->broker.reports = json_array();
    fx->broker.node_view = json_pack("{s:[]}", "reservations");
    fx->opts = (struct cmd_opts){.job = JOB,
                                 .uid = (long)fx->owner,
                                 .ncores = 4,
                                 .retry_ms = -1,
                                 .format = "export",
                                 .nics = -1};
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    char cmd[160];

    cmd_ctx_fini(&fx->ctx);
    lease_signer_destroy(fx->signer);
    lease_signer_destroy(fx->other);
    json_decref(fx->broker.reservation);
    json_decref(fx->broker.node_view);
    json_decref(fx->broker.reports);
    free(fx->out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

/* The reservation of job 42 as a node's GET renders it (step NULL), or of
 * one of its steps: step VNIs 1030, the job's 1024 and 1025. */
static json_t *reservation(struct fixture *fx, const char *step)
{
    json_t *r = json_pack("{s:I, s:s, s:I, s:s, s:s, s:[I, I], s:s, s:s, s:{}}",
                          "id",
                          (json_int_t)(step ? 70 : 7),
                          "job_id",
                          JOB,
                          "uid",
                          (json_int_t)fx->owner,
                          "user",
                          "alice",
                          "nodes",
                          "n[1-3]",
                          "vnis",
                          (json_int_t)1024,
                          (json_int_t)1025,
                          "tcs_mask",
                          "0xa",
                          "state",
                          "active",
                          "environment");
    assert_non_null(r);
    if (step) {
        json_object_set_new(r, "step_id", json_string(step));
        json_object_set_new(r, "vnis", json_pack("[I]", (json_int_t)1030));
        json_object_set_new(r, "job_vnis", json_pack("[I, I]", 1024, 1025));
    }
    return r;
}

/* A lease of payload p (stolen), signed by s, issued at iat, for ttl s. */
static char *sign(const struct lease_signer *s, json_t *p, time_t iat, long ttl)
{
    vnib_error_t e = {0};
    char *lease = NULL;

    json_object_set_new(p, "hwcoll_fetch", json_false());
    assert_int_equal(lease_sign(s, p, iat, ttl, &lease, &e), 0);
    json_decref(p);
    return lease;
}

static int run(struct fixture *fx, cmd_fn *fn)
{
    free(fx->out);
    fx->out = NULL;
    assert_non_null(fx->ctx.out = open_memstream(&fx->out, &fx->out_len));
    fx->ctx.error.text[0] = '\0';
    fx->ctx.errnum = 0;
    int rc = fn(&fx->ctx, &fx->opts);
    assert_int_equal(fclose(fx->ctx.out), 0);
    fx->ctx.out = NULL;
    return rc;
}

/* Run the prolog with lease (which is freed). */
static int prolog(struct fixture *fx, char *lease)
{
    fx->opts.lease = lease;
    int rc = run(fx, cmd_prolog);
    fx->opts.lease = NULL;
    free(lease);
    return rc;
}

/* How many services on NIC d hold exactly vnis (n of them). */
static int services_with(struct fixture *fx, int d, const int *vnis, int n)
{
    struct nic_svc *svcs = NULL;
    int count = 0, found = 0;
    vnib_error_t e = {0};

    if (cmd_open_nics(&fx->ctx) != CMD_DONE)
        fail();
    assert_int_equal(
        nic_svc_list(fx->ctx.nb, &fx->ctx.devs[d], &svcs, &count, &e), 0);
    for (int i = 0; i < count; i++) {
        bool same =
            !svcs[i].is_system && svcs[i].svc_id != 1 && svcs[i].nvnis == n;
        for (int k = 0; same && k < n; k++)
            same = svcs[i].vnis[k] == vnis[k];
        found += same;
    }
    free(svcs);
    return found;
}

/* Services that are not the system's or the default one, on every NIC. */
static int user_services(struct fixture *fx)
{
    struct nic_svc *svcs = NULL;
    int count = 0, found = 0;
    vnib_error_t e = {0};

    if (cmd_open_nics(&fx->ctx) != CMD_DONE)
        fail();
    for (int d = 0; d < fx->ctx.ndev; d++) {
        assert_int_equal(
            nic_svc_list(fx->ctx.nb, &fx->ctx.devs[d], &svcs, &count, &e), 0);
        for (int i = 0; i < count; i++)
            found += !svcs[i].is_system && svcs[i].svc_id != 1;
        free(svcs);
    }
    return found;
}

static bool state_file(struct fixture *fx, const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof(path), "%s/jobs/%s", fx->state, name);
    return stat(path, &st) == 0;
}

static const int job_vnis[] = {1024, 1025};
static const int step_vnis[] = {1030, 1024, 1025};

/* A good lease: services, record and environment, and not one request. */
static void test_lease_prolog(void **state)
{
    struct fixture *fx = *state;
    vnib_error_t e = {0};
    struct jobenv env = {{NULL}};

    assert_int_equal(
        prolog(fx, sign(fx->signer, reservation(fx, NULL), time(NULL), 120)),
        CMD_DONE);
    assert_int_equal(fx->broker.gets, 0);
    assert_int_equal(json_array_size(fx->broker.reports), 0);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, job_vnis, 2), 1);
    assert_non_null(strstr(fx->out, "job 42: uid="));
    assert_non_null(strstr(fx->out, "vnis=2 services cxi0:"));

    /* The record names the reservation, for the end report. */
    json_t *rec = jobstate_load(fx->state, JOB, &e);
    assert_non_null(rec);
    assert_int_equal(json_integer_value(json_object_get(rec, "reservation_id")),
                     7);
    assert_true(json_is_true(json_object_get(rec, "presumed")));
    assert_int_equal(json_array_size(json_object_get(rec, "services")), NNICS);
    json_decref(rec);
    assert_int_equal(jobstate_read_env(fx->state, JOB, &env, &e), 0);
    assert_string_equal(env.value[0], "1024,1025");
    jobenv_clear(&env);

    /* A second start reuses them; the lease may come from a file. */
    char path[256];
    FILE *f;
    char *lease = sign(fx->signer, reservation(fx, NULL), time(NULL), 120);
    path_in(path, sizeof(path), fx->dir, "lease.txt");
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "%s\n", lease);
    assert_int_equal(fclose(f), 0);
    free(lease);
    char arg[300];
    snprintf(arg, sizeof(arg), "@%s", path);
    fx->opts.lease = arg;
    fx->opts.lease_arg = true;
    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    assert_non_null(strstr(fx->out, "(reused)"));
    /* ... but not through the in-process call's text. */
    fx->opts.lease_arg = false;
    assert_int_equal(run(fx, cmd_prolog), CMD_FAILED);
    assert_int_equal(fx->ctx.errnum, EINVAL);
    fx->opts.lease = NULL;
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, job_vnis, 2), 1);
    assert_int_equal(fx->broker.gets, 0);
    assert_int_equal(json_array_size(fx->broker.reports), 0);
}

/* A lease the prolog must refuse, and how. */
struct refusal {
    char *lease;
    const char *step; /* --step */
    long uid;         /* --uid; -2: the owner's */
    int errnum;       /* for the in-process callers */
    const char *says;
};

/* Each refusal says which check failed, makes nothing, asks nothing. */
static void test_lease_refusals(void **state)
{
    struct fixture *fx = *state;
    time_t now = time(NULL);
    json_t *p;
    char *lease;

    struct refusal cases[16];
    int n = 0;

    /* Altered: another payload under a lease's signature. */
    p = reservation(fx, NULL);
    json_object_set_new(p, "uid", json_integer((json_int_t)fx->owner + 1));
    char *other = sign(fx->signer, p, now, 120);
    lease = sign(fx->signer, reservation(fx, NULL), now, 120);
    char *sig = strrchr(lease, '.'), *body_end = strrchr(other, '.');
    assert_true(sig && body_end);
    *body_end = '\0';
    char *altered = malloc(strlen(other) + strlen(sig) + 1);
    assert_non_null(altered);
    strcpy(altered, other);
    strcat(altered, sig);
    free(other);
    free(lease);
    cases[n++] = (struct refusal){altered,
                                  NULL,
                                  (long)fx->owner + 1,
                                  EACCES,
                                  "the signature does not verify"};
    cases[n++] = (struct refusal){
        sign(fx->signer, reservation(fx, NULL), now - 1000, 100),
        NULL,
        -2,
        EACCES,
        "expired"};
    cases[n++] = (struct refusal){
        sign(fx->signer, reservation(fx, NULL), now + 1000, 100),
        NULL,
        -2,
        EACCES,
        "in the future"};
    cases[n++] =
        (struct refusal){sign(fx->other, reservation(fx, NULL), now, 120),
                         NULL,
                         -2,
                         EACCES,
                         "which this node does not have"};
    p = reservation(fx, NULL);
    json_object_set_new(p, "job_id", json_string("43"));
    cases[n++] = (struct refusal){sign(fx->signer, p, now, 120),
                                  NULL,
                                  -2,
                                  EACCES,
                                  "it is for job 43, not 42"};
    cases[n++] =
        (struct refusal){sign(fx->signer, reservation(fx, NULL), now, 120),
                         "0",
                         -2,
                         EACCES,
                         "it is for the job, not for step 0"};
    cases[n++] =
        (struct refusal){sign(fx->signer, reservation(fx, "0"), now, 120),
                         "1",
                         -2,
                         EACCES,
                         "it is for step 0, not for step 1"};
    cases[n++] =
        (struct refusal){sign(fx->signer, reservation(fx, "0"), now, 120),
                         NULL,
                         -2,
                         EACCES,
                         "it is for step 0, not for the job"};
    cases[n++] =
        (struct refusal){sign(fx->signer, reservation(fx, NULL), now, 120),
                         NULL,
                         (long)fx->owner + 1,
                         EACCES,
                         "its owner is uid"};
    p = reservation(fx, NULL);
    json_object_set_new(p, "nodes", json_string("n[3-9],m2"));
    cases[n++] = (struct refusal){sign(fx->signer, p, now, 120),
                                  NULL,
                                  -2,
                                  EACCES,
                                  "this node, n2, is not in its node list"};
    p = reservation(fx, NULL);
    json_object_set_new(p, "state", json_string("releasing"));
    cases[n++] = (struct refusal){sign(fx->signer, p, now, 120),
                                  NULL,
                                  -2,
                                  EACCES,
                                  "its reservation 7 is releasing, not active"};
    p = reservation(fx, NULL);
    json_object_del(p, "uid");
    cases[n++] = (struct refusal){
        sign(fx->signer, p, now, 120), NULL, -2, EINVAL, "lacks"};
    p = reservation(fx, NULL);
    json_object_set_new(p, "vnis", json_pack("[i]", 10));
    cases[n++] = (struct refusal){sign(fx->signer, p, now, 120),
                                  NULL,
                                  -2,
                                  EINVAL,
                                  "the lease's reservation is malformed"};
    cases[n++] = (struct refusal){
        strdup("vnib1.bm90IGpzb24.AAAA"), NULL, -2, EINVAL, "malformed"};

    for (int i = 0; i < n; i++) {
        fx->opts.step = cases[i].step;
        fx->opts.uid = cases[i].uid == -2 ? (long)fx->owner : cases[i].uid;
        assert_int_equal(prolog(fx, cases[i].lease), CMD_FAILED);
        if (!strstr(fx->ctx.error.text, cases[i].says))
            fail_msg("case %d: '%s' does not say '%s'",
                     i,
                     fx->ctx.error.text,
                     cases[i].says);
        assert_non_null(strstr(fx->ctx.error.text, "no services created"));
        assert_int_equal(fx->ctx.errnum, cases[i].errnum);
        assert_int_equal(user_services(fx), 0);
        assert_false(state_file(fx, JOB ".json"));
        assert_false(state_file(fx, JOB ".env"));
        assert_false(state_file(fx, JOB "+0.json"));
        assert_false(state_file(fx, JOB "+1.json"));
    }
    assert_int_equal(fx->broker.gets, 0);
    assert_int_equal(json_array_size(fx->broker.reports), 0);
}

/* The keys: read when a lease is verified, a bad file named (exit 2). */
static void test_lease_keys(void **state)
{
    struct fixture *fx = *state;
    struct cmd_ctx *a = &fx->ctx;
    char bad[256];
    FILE *f;

    assert_int_equal(
        agentcfg_set(&a->cfg->lease_public_keys, "/nonexistent/lease.pub"), 0);
    assert_int_equal(
        prolog(fx, sign(fx->signer, reservation(fx, NULL), time(NULL), 120)),
        CMD_USAGE);
    assert_non_null(strstr(a->error.text, "/nonexistent/lease.pub"));

    path_in(bad, sizeof(bad), fx->dir, "bad.pub");
    assert_non_null(f = fopen(bad, "w"));
    fputs("not a key\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(agentcfg_set(&a->cfg->lease_public_keys, bad), 0);
    assert_int_equal(
        prolog(fx, sign(fx->signer, reservation(fx, NULL), time(NULL), 120)),
        CMD_USAGE);
    assert_non_null(strstr(a->error.text, "bad.pub: not an Ed25519 key"));

    assert_int_equal(agentcfg_set(&a->cfg->lease_public_keys, ""), 0);
    assert_int_equal(
        prolog(fx, sign(fx->signer, reservation(fx, NULL), time(NULL), 120)),
        CMD_USAGE);
    assert_non_null(strstr(a->error.text, "lease.public_keys is empty"));
    assert_int_equal(user_services(fx), 0);

    /* Two keys (a rotation): a lease of either verifies. */
    char both[300];
    snprintf(both, sizeof(both), "%s\x1f%s", fx->other_pub, fx->pub);
    assert_int_equal(agentcfg_set(&a->cfg->lease_public_keys, both), 0);
    assert_int_equal(
        prolog(fx, sign(fx->signer, reservation(fx, NULL), time(NULL), 120)),
        CMD_DONE);
    assert_int_equal(fx->broker.gets, 0);
}

/* hwcoll_fetch: the variables come from the broker's reservation, never
 * the lease's; without the broker the job starts without them. */
static void test_lease_hwcoll(void **state)
{
    struct fixture *fx = *state;
    struct jobenv env = {{NULL}};
    vnib_error_t e = {0};
    char *lease;

    /* A lease with a stale variable, which must not survive. */
    json_t *p = reservation(fx, NULL);
    json_object_set_new(
        p,
        "environment",
        json_pack("{s:s, s:s}", "FI_CXI_COLL_JOB_ID", "stale", "OTHER", "x"));
    json_object_set_new(p, "hwcoll_fetch", json_true());
    lease = NULL;
    assert_int_equal(lease_sign(fx->signer, p, time(NULL), 120, &lease, &e), 0);
    json_decref(p);

    fx->broker.reservation = reservation(fx, NULL);
    json_object_set_new(fx->broker.reservation,
                        "environment",
                        json_pack("{s:s, s:s, s:s}",
                                  "FI_CXI_COLL_JOB_ID",
                                  "77",
                                  "FI_CXI_COLL_MCAST_TOKEN",
                                  "secret",
                                  "FI_CXI_HWCOLL_MIN_NODES",
                                  "2"));
    assert_int_equal(prolog(fx, strdup(lease)), CMD_DONE);
    assert_int_equal(fx->broker.gets, 1);
    assert_int_equal(json_array_size(fx->broker.reports), 0);
    assert_int_equal(jobstate_read_env(fx->state, JOB, &env, &e), 0);
    assert_string_equal(env.value[4], "77"); /* FI_CXI_COLL_JOB_ID */
    assert_string_equal(env.value[6], "secret");
    assert_string_equal(env.value[9], "2");
    jobenv_clear(&env);

    /* The broker's reservation is another one (the job was requeued): the
     * job starts without hardware collectives. */
    json_object_set_new(fx->broker.reservation, "id", json_integer(8));
    assert_int_equal(prolog(fx, strdup(lease)), CMD_DONE);
    assert_non_null(
        strstr(json_string_value(json_array_get(fx->ctx.warnings, 0)),
               "the broker's reservation is 8, the lease's 7); the job starts "
               "WITHOUT hardware collectives"));
    assert_int_equal(jobstate_read_env(fx->state, JOB, &env, &e), 0);
    for (int i = 4; i < JOBENV_COUNT; i++)
        assert_null(env.value[i]);
    assert_string_equal(env.value[0], "1024,1025");
    jobenv_clear(&env);

    /* The broker unreachable: the same, and still no failure. */
    fx->broker.fetch_status = -1;
    assert_int_equal(prolog(fx, lease), CMD_DONE);
    assert_non_null(
        strstr(json_string_value(json_array_get(fx->ctx.warnings, 1)),
               "(connection refused); the job starts WITHOUT hardware"));
    assert_int_equal(fx->broker.gets, 3);
    assert_int_equal(json_array_size(fx->broker.reports), 0);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, job_vnis, 2), 1);
}

static const char *env_get(char **env, const char *name)
{
    size_t n = strlen(name);
    for (char **p = env; *p; p++)
        if (!strncmp(*p, name, n) && (*p)[n] == '=')
            return *p + n + 1;
    return NULL;
}

/* A step from its lease through the switch plugin's calls: the step's
 * VNIs then the job's; errno says a refusal from a malformed lease; the
 * step's end reports on its route, to its reservation. */
static void test_lease_step(void **state)
{
    struct fixture *fx = *state;
    vnib_error_t e = {0};
    char **env = NULL;
    char *lease = sign(fx->signer, reservation(fx, "0"), time(NULL), 120);

    fx->opts.step = "0";
    fx->opts.lease = lease;
    assert_int_equal(vnib_step_setup_opts(&fx->ctx, &fx->opts, &env, &e), 0);
    assert_string_equal(env_get(env, "SLINGSHOT_VNIS"), "1030,1024,1025");
    vnib_step_env_free(env);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step_vnis, 3), 1);
    assert_true(state_file(fx, JOB "+0.json"));

    fx->opts.step = "1";
    assert_int_equal(vnib_step_setup_opts(&fx->ctx, &fx->opts, &env, &e), -1);
    assert_int_equal(errno, EACCES);
    assert_non_null(strstr(e.text, "it is for step 0, not for step 1"));
    assert_null(env);
    fx->opts.lease = "vnib1.x";
    assert_int_equal(vnib_step_setup_opts(&fx->ctx, &fx->opts, &env, &e), -1);
    assert_int_equal(errno, EINVAL);
    fx->opts.lease = NULL;
    assert_int_equal(fx->broker.gets, 0);
    assert_int_equal(json_array_size(fx->broker.reports), 0);

    fx->opts.step = "0";
    assert_int_equal(vnib_step_teardown_opts(&fx->ctx, &fx->opts, &e), 0);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step_vnis, 3), 0);
    assert_int_equal(fx->broker.gets, 0);
    json_t *r = json_array_get(fx->broker.reports, 0);
    assert_string_equal(json_string_value(json_object_get(r, "cxi")),
                        "destroyed");
    assert_string_equal(json_string_value(json_object_get(r, "step_id")), "0");
    assert_int_equal(json_integer_value(json_object_get(r, "reservation")), 70);
    free(lease);

    /* The public call needs a uid and a lease. */
    assert_int_equal(
        vnib_step_setup_lease(NULL, JOB, "0", -1, 0, NULL, "vnib1.x", &env, &e),
        -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(
        vnib_step_setup_lease(NULL, JOB, "0", 1000, 0, NULL, NULL, &env, &e),
        -1);
    assert_int_equal(errno, EINVAL);
}

static const char *last_cxi(struct fixture *fx)
{
    size_t n = json_array_size(fx->broker.reports);
    json_t *r = json_array_get(fx->broker.reports, n - 1);
    return n ? json_string_value(json_object_get(r, "cxi")) : "";
}

/* The job's reservation as reservation() makes it, but numbered id: a
 * reservation that ended on a node leaves a tombstone there, so each new
 * start of the job below is a new reservation, as a requeue's is. */
static json_t *reservation_numbered(struct fixture *fx, json_int_t id)
{
    json_t *r = reservation(fx, NULL);

    json_object_set_new(r, "id", json_integer(id));
    return r;
}

/* The end of a lease's reservation on a node: from the record (no
 * request but the report); without one, through the broker, and a node
 * that holds nothing still says "destroyed". */
static void test_lease_end(void **state)
{
    struct fixture *fx = *state;
    char *lease = sign(fx->signer, reservation(fx, NULL), time(NULL), 120);

    assert_int_equal(prolog(fx, strdup(lease)), CMD_DONE);
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_int_equal(fx->broker.gets, 0);
    assert_int_equal(json_array_size(fx->broker.reports), 1);
    assert_string_equal(last_cxi(fx), "destroyed");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(fx->broker.reports, 0), "reservation")),
                     7);
    assert_int_equal(user_services(fx), 0);

    /* A prolog killed after its services but before their record: the
     * record (written first) names none, the housekeeping finds them by
     * owner and VNIs. The same lease again is refused: its reservation
     * ended here. */
    assert_int_equal(prolog(fx, strdup(lease)), CMD_FAILED);
    assert_non_null(strstr(fx->ctx.error.text, "already ended on this node"));
    assert_int_equal(user_services(fx), 0);
    free(lease);
    lease = sign(fx->signer, reservation_numbered(fx, 8), time(NULL), 120);
    assert_int_equal(prolog(fx, strdup(lease)), CMD_DONE);
    vnib_error_t e = {0};
    json_t *rec = jobstate_load(fx->state, JOB, &e);
    json_object_set_new(rec, "services", json_array());
    assert_int_equal(jobstate_save(fx->state, JOB, rec, &e), 0);
    json_decref(rec);
    assert_int_equal(run(fx, cmd_housekeeping), CMD_DONE);
    assert_string_equal(fx->out, "job 42: destroyed 2 service(s)\n");
    assert_string_equal(last_cxi(fx), "destroyed");
    assert_int_equal(user_services(fx), 0);

    /* No record (the state directory was lost): the broker is asked, the
     * services found by owner and VNIs. */
    free(lease);
    lease = sign(fx->signer, reservation_numbered(fx, 9), time(NULL), 120);
    assert_int_equal(prolog(fx, strdup(lease)), CMD_DONE);
    jobstate_remove(fx->state, JOB, true);
    fx->broker.reservation = reservation_numbered(fx, 9);
    json_object_set_new(fx->broker.reservation, "presumed", json_true());
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_int_equal(fx->broker.gets, 1);
    assert_string_equal(fx->out, "job 42: destroyed 2 service(s)\n");
    assert_int_equal(user_services(fx), 0);

    /* No record and nothing held: "destroyed" all the same. */
    size_t before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_string_equal(fx->out, "job 42: destroyed 0 service(s)\n");
    assert_int_equal(json_array_size(fx->broker.reports), before + 1);
    assert_string_equal(last_cxi(fx), "destroyed");

    /* A lease with no VNIs leaves a record, whose end reports without
     * asking the broker; a presumed reservation with no VNIs too. */
    json_t *p = reservation_numbered(fx, 10);
    json_object_set_new(p, "vnis", json_array());
    free(lease);
    assert_int_equal(prolog(fx, sign(fx->signer, p, time(NULL), 120)),
                     CMD_DONE);
    assert_true(state_file(fx, JOB ".json"));
    int gets = fx->broker.gets;
    before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_int_equal(fx->broker.gets, gets);
    assert_int_equal(json_array_size(fx->broker.reports), before + 1);
    assert_string_equal(last_cxi(fx), "destroyed");
    assert_false(state_file(fx, JOB ".json"));
    json_object_set_new(fx->broker.reservation, "vnis", json_array());
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_int_equal(json_array_size(fx->broker.reports), before + 2);
    /* ... but a reservation of old, not presumed, waits on nothing. */
    json_object_set_new(fx->broker.reservation, "presumed", json_false());
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_string_equal(fx->out, "job 42: no VNIs; nothing to destroy\n");
    assert_int_equal(json_array_size(fx->broker.reports), before + 2);
}

/* Make a service of uid holding vnis on every NIC, as a prolog that died
 * would have left it. */
static void leave_service(struct fixture *fx, int v0, int v1)
{
    struct services_job job = {.uid = fx->owner,
                               .nvnis = v1 ? 2 : 1,
                               .vnis = {(uint16_t)v0, (uint16_t)v1},
                               .tcs_mask = 0xa,
                               .ncores = 1,
                               .floor_percent = 25};
    int ids[NNICS];
    bool created[NNICS];
    vnib_error_t e = {0};

    assert_int_equal(cmd_open_nics(&fx->ctx), CMD_DONE);
    assert_int_equal(services_create(fx->ctx.nb,
                                     fx->ctx.devs,
                                     fx->ctx.ndev,
                                     &job,
                                     ids,
                                     created,
                                     stderr,
                                     &e),
                     0);
}

/* A reservation of the node's view. */
static json_t *held(
    const char *job, const char *step, long long id, const char *state, int vni)
{
    return json_pack("{s:s, s:s*, s:I, s:s, s:b, s:[i], s:i}",
                     "job_id",
                     job,
                     "step_id",
                     step,
                     "id",
                     (json_int_t)id,
                     "state",
                     state,
                     "cleanup_needed",
                     1,
                     "vnis",
                     vni,
                     "uid",
                     1000);
}

/* flush's sweep: each releasing reservation that waits on this node and
 * of which it has no record is ended here. */
static void test_flush_sweep(void **state)
{
    struct fixture *fx = *state;
    static const int v43[] = {1040}, v44[] = {1050, 1051}, v42[] = {1024, 1025};

    /* Job 42 ran here from its lease (a record), 43 left a service and no
     * record, 44's step 0 too (its VNIs, then the job's), 45 nothing at
     * all, 46 is still active. */
    assert_int_equal(
        prolog(fx, sign(fx->signer, reservation(fx, NULL), time(NULL), 120)),
        CMD_DONE);
    leave_service(fx, 1040, 0);
    leave_service(fx, 1050, 1051);
    json_decref(fx->broker.node_view);
    fx->broker.node_view = json_pack("{s:[o, o, o, o, o]}",
                                     "reservations",
                                     held(JOB, NULL, 7, "releasing", 1024),
                                     held("43", NULL, 9, "releasing", 1040),
                                     held("44", "0", 11, "releasing", 1050),
                                     held("45", NULL, 12, "releasing", 1060),
                                     held("46", NULL, 13, "active", 1070));

    fx->ctx.dry_run = true;
    assert_int_equal(run(fx, cmd_flush), CMD_DONE);
    fx->ctx.dry_run = false;
    assert_non_null(strstr(fx->out,
                           "sweep: job 43 (reservation 9): would destroy 2 "
                           "service(s); would report destroyed\n"));
    assert_non_null(strstr(fx->out, "sweep: job 42: this node has its record"));
    assert_int_equal(json_array_size(fx->broker.reports), 0);
    assert_int_equal(user_services(fx), 3 * NNICS);

    /* A busy service is reported failed, with what is left. */
    assert_int_equal(run(fx, cmd_flush), CMD_DONE);
    assert_non_null(strstr(fx->out, "flush: 0 sent, 0 dropped, 0 left\n"));
    assert_non_null(strstr(fx->out,
                           "sweep: job 44 step 0 (reservation 11): destroyed "
                           "2 service(s); report destroyed\n"));
    assert_int_equal(json_array_size(fx->broker.reports), 3);
    for (int i = 0; i < 3; i++) {
        json_t *r = json_array_get(fx->broker.reports, (size_t)i);
        static const long long ids[] = {9, 11, 12};
        assert_string_equal(json_string_value(json_object_get(r, "cxi")),
                            "destroyed");
        assert_int_equal(json_integer_value(json_object_get(r, "reservation")),
                         ids[i]);
    }
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(fx->broker.reports, 1), "step_id")),
                        "0");
    for (int d = 0; d < NNICS; d++) {
        assert_int_equal(services_with(fx, d, v43, 1), 0);
        assert_int_equal(services_with(fx, d, v44, 2), 0);
        assert_int_equal(services_with(fx, d, v42, 2), 1); /* its record */
    }

    /* A service that stays busy: "failed", naming it, and exit 1. */
    leave_service(fx, 1040, 0);
    char path[256];
    path_in(path, sizeof(path), fx->nics, "cxi1.json");
    char cmd[1200];
    snprintf(cmd,
             sizeof(cmd),
             "jq '.services |= map(if .vnis == [1040] then .lnis = 1 else . "
             "end)' %s > %s.new && mv %s.new %s",
             path,
             path,
             path,
             path);
    assert_int_equal(system(cmd), 0);
    size_t before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_flush), CMD_FAILED);
    assert_non_null(strstr(fx->ctx.error.text, "1 CXI service(s) remain busy"));
    json_t *r = json_array_get(fx->broker.reports, before);
    assert_string_equal(json_string_value(json_object_get(r, "cxi")), "failed");
    assert_int_equal(json_array_size(json_object_get(r, "services")), 1);
    assert_int_equal(services_with(fx, 0, v43, 1), 0);
    assert_int_equal(services_with(fx, 1, v43, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lease_prolog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_hwcoll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_sweep, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
