/* SPDX-License-Identifier: GPL-2.0-or-later */
/* In-process tests of the agent's commands (agent/commands.h), with and
 * without --step, and of the switch plugin's calls (agent/stepapi.h).
 *
 * Each test runs a command as vnib-agent would, but in this process: the
 * NICs are simulated ones in a temporary directory (agent/nic_sim.c), and
 * the broker is a stand-in (struct cmd_broker) that answers from the
 * reservation a test sets and keeps every report it is sent.  No
 * PostgreSQL and no HTTP: what the commands do with the NICs, the state
 * directory and the broker's answers is what is checked.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agent/commands.h"
#include "agent/jobstate.h"
#include "agent/nic.h"
#include "agent/nic_sim.h"
#include "agent/stepapi.h"

#define NNICS 2
#define JOB "42"

/* The stand-in broker. */
struct fake_broker {
    json_t *reservation; /* what GET /v1/reservations/JOB answers */
    json_t *steps;       /* {STEP: what GET .../JOB/steps/STEP answers} */
    int fetch_status;    /* its status; -1: unreachable */
    int report_status;   /* what every report gets */
    json_t *pool;        /* GET /v1/pool */
    json_t *node_view;   /* GET /v1/nodes/NODE */
    json_t *reports;     /* every report received, in order */
};

struct fixture {
    char dir[64];
    char path[3][128]; /* nics, state, spool */
    struct fake_broker broker;
    struct cmd_ctx ctx;
    struct cmd_opts opts;
    uid_t owner; /* the job's: this process's, so that its files can be
                  * given to it */
    char *out;   /* what the last command printed */
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

    *replyp = NULL;
    if (!strcmp(path, "/v1/pool")) {
        *replyp = json_incref(b->pool);
        return 200;
    }
    if (!strncmp(path, "/v1/nodes/", 10)) {
        *replyp = json_incref(b->node_view);
        return 200;
    }
    const char *sp = "/v1/reservations/" JOB "/steps/";
    json_t *step = NULL;
    if (!strncmp(path, sp, strlen(sp))
        && !(step = json_object_get(b->steps, path + strlen(sp)))) {
        errprintf(errp, "HTTP 404: no such step");
        return 404;
    }
    if (!step && strcmp(path, "/v1/reservations/" JOB) != 0) {
        errprintf(errp, "HTTP 404: no such reservation");
        return 404;
    }
    if (b->fetch_status < 0) {
        errno = ECONNREFUSED;
        errprintf(errp, "connection refused");
        return -1;
    }
    if (b->fetch_status != 200) {
        errprintf(
            errp, "HTTP %d: forbidden: not this node's job", b->fetch_status);
        return b->fetch_status;
    }
    *replyp = json_incref(step ? step : b->reservation);
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
                          json_pack("{s:s, s:s*, s:s, s:s, s:I, s:s?, s:O?}",
                                    "job_id",
                                    r->job_id,
                                    "step_id",
                                    r->step_id,
                                    "node",
                                    r->node,
                                    "cxi",
                                    r->cxi,
                                    "reservation",
                                    (json_int_t)r->reservation,
                                    "message",
                                    r->message,
                                    "services",
                                    r->services));
    if (b->report_status != 200)
        errprintf(errp, "HTTP %d: refused", b->report_status);
    return b->report_status;
}

/* Fresh NICs, directories, configuration and broker for every test. */
static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    vnib_error_t e = {0};
    static const char *const names[] = {"nics", "state", "spool"};

    assert_non_null(fx);
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/vnib-test-commands.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    for (int i = 0; i < 3; i++) {
        char *p = fx->path[i];
        size_t n = strlen(fx->dir);
        /* Copy then append: GCC's -Wrestrict cannot tell that dir and
         * path are distinct members of one struct.
         */
        assert_true(n + 1 + strlen(names[i]) < sizeof(fx->path[i]));
        memcpy(p, fx->dir, n);
        p[n] = '/';
        strcpy(p + n + 1, names[i]);
    }
    assert_int_equal(nic_sim_init(fx->path[0], NNICS, &e), 0);
    assert_int_equal(mkdir(fx->path[2], 0700), 0);

    fx->owner = geteuid();
    struct cmd_ctx *a = &fx->ctx;
    a->cfg = agentcfg_load("/nonexistent/agent.toml", false, &e);
    assert_non_null(a->cfg);
    assert_int_equal(agentcfg_set(&a->cfg->backend, "sim"), 0);
    assert_int_equal(agentcfg_set(&a->cfg->sim_dir, fx->path[0]), 0);
    assert_int_equal(agentcfg_set(&a->cfg->state_dir, fx->path[1]), 0);
    assert_int_equal(agentcfg_set(&a->cfg->spool_dir, fx->path[2]), 0);
    a->cfg->epilog_retry_busy_ms = 0;
    a->cfg->housekeeping_retry_busy_ms = 0;
    snprintf(a->node, sizeof(a->node), "n1");
    a->err = stderr;
    a->warnings = json_array();
    a->broker = (struct cmd_broker){fake_get, fake_report, &fx->broker};

    fx->broker.reservation = json_pack("{s:I, s:s, s:s, s:I, s:[I, I], s:s}",
                                       "id",
                                       (json_int_t)7,
                                       "job_id",
                                       JOB,
                                       "state",
                                       "active",
                                       "uid",
                                       (json_int_t)fx->owner,
                                       "vnis",
                                       (json_int_t)1024,
                                       (json_int_t)1025,
                                       "tcs_mask",
                                       "0xa");
    /* Steps 0 and 1 have a VNI of their own; step 2 has none. */
    fx->broker.steps = json_object();
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "%d", i);
        json_t *st = json_deep_copy(fx->broker.reservation);
        assert_non_null(st);
        json_object_set_new(st, "id", json_integer(70 + i));
        json_object_set_new(st, "step_id", json_string(id));
        json_object_set_new(st, "job_vnis", json_pack("[I, I]", 1024, 1025));
        json_object_set_new(
            st,
            "vnis",
            i < 2 ? json_pack("[I]", (json_int_t)1030 + i) : json_array());
        json_object_set_new(fx->broker.steps, id, st);
    }
    fx->broker.fetch_status = 200;
    fx->broker.report_status = 200;
    fx->broker.pool = json_pack("{s:s}", "ranges", "1024-2047");
    fx->broker.node_view = json_pack("{s:[]}", "reservations");
    fx->broker.reports = json_array();
    fx->opts = (struct cmd_opts){.job = JOB,
                                 .uid = -1,
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
    json_decref(fx->broker.reservation);
    json_decref(fx->broker.steps);
    json_decref(fx->broker.pool);
    json_decref(fx->broker.node_view);
    json_decref(fx->broker.reports);
    free(fx->out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

/* Run a command with its output in fx->out. */
static int run(struct fixture *fx, cmd_fn *fn)
{
    free(fx->out);
    fx->out = NULL;
    fx->ctx.out = open_memstream(&fx->out, &fx->out_len);
    assert_non_null(fx->ctx.out);
    fx->ctx.error.text[0] = '\0';
    int rc = fn(&fx->ctx, &fx->opts);
    assert_int_equal(fclose(fx->ctx.out), 0);
    fx->ctx.out = NULL;
    return rc;
}

/* The job's services (its owner's, VNIs 1024 and 1025) on NIC d. */
static int job_services(struct fixture *fx, int d)
{
    struct nic_svc *svcs = NULL;
    int n = 0, found = 0;
    vnib_error_t e = {0};

    assert_int_equal(nic_svc_list(fx->ctx.nb, &fx->ctx.devs[d], &svcs, &n, &e),
                     0);
    for (int i = 0; i < n; i++)
        if (svcs[i].has_uid && svcs[i].uid == fx->owner && svcs[i].nvnis == 2
            && svcs[i].vnis[0] == 1024 && svcs[i].vnis[1] == 1025)
            found++;
    free(svcs);
    return found;
}

static const char *report_cxi(struct fixture *fx, size_t i)
{
    json_t *r = json_array_get(fx->broker.reports, i);
    return json_string_value(json_object_get(r, "cxi"));
}

static void test_prolog(void **state)
{
    struct fixture *fx = *state;
    char path[256], line[64];
    struct stat st;

    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    assert_int_equal(fx->ctx.ndev, NNICS);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 1);
    /* The broker heard "creating" before any NIC was touched, then
     * "created" naming one service per NIC. */
    assert_int_equal(json_array_size(fx->broker.reports), 2);
    assert_string_equal(report_cxi(fx, 0), "creating");
    assert_string_equal(report_cxi(fx, 1), "created");
    json_t *created = json_array_get(fx->broker.reports, 1);
    assert_int_equal(json_array_size(json_object_get(created, "services")),
                     NNICS);
    assert_int_equal(
        json_integer_value(json_object_get(created, "reservation")), 7);
    snprintf(line,
             sizeof(line),
             "job 42: uid=%ld ncores=4 vnis=2 services cxi0:",
             (long)fx->owner);
    assert_non_null(strstr(fx->out, line));
    assert_non_null(strstr(fx->out, "cxi0:"));
    assert_non_null(strstr(fx->out, "cxi1:"));
    snprintf(path, sizeof(path), "%s/jobs/" JOB ".env", fx->path[1]);
    assert_int_equal(stat(path, &st), 0);

    /* A second run reuses what the first made. */
    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 1);
    assert_non_null(strstr(fx->out, "(reused)"));

    /* And the environment names the VNIs and every NIC's service. */
    assert_int_equal(run(fx, cmd_env), CMD_DONE);
    assert_non_null(strstr(fx->out, "export SLINGSHOT_VNIS=1024,1025\n"));
    assert_non_null(strstr(fx->out, "export SLINGSHOT_DEVICES=cxi0,cxi1\n"));
    assert_non_null(strstr(fx->out, "export SLINGSHOT_TCS=0xa\n"));
}

static void test_epilog(void **state)
{
    struct fixture *fx = *state;

    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 0);
    assert_string_equal(fx->out, "job 42: destroyed 2 service(s)\n");
    size_t n = json_array_size(fx->broker.reports);
    assert_int_equal(n, 3);
    assert_string_equal(report_cxi(fx, n - 1), "destroyed");

    /* The record is gone, and the broker has no reservation any more:
     * nothing to destroy, and no NIC is touched. */
    fx->broker.fetch_status = 404;
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_string_equal(fx->out,
                        "job 42: no reservation here; nothing to destroy\n");
}

static void test_broker_errors(void **state)
{
    struct fixture *fx = *state;

    fx->broker.fetch_status = 403;
    assert_int_equal(run(fx, cmd_prolog), CMD_FAILED);
    assert_string_equal(
        fx->ctx.error.text,
        "prolog: refused: HTTP 403: forbidden: not this node's job");
    assert_int_equal(json_array_size(fx->broker.reports), 0);

    fx->broker.fetch_status = -1;
    assert_int_equal(run(fx, cmd_prolog), CMD_UNREACHABLE);
    assert_string_equal(fx->ctx.error.text,
                        "prolog: broker unreachable: connection refused");
    assert_null(fx->ctx.nb); /* no NIC was opened */

    /* The broker answers but will not take the "creating" report: no
     * service is made. */
    fx->broker.fetch_status = 200;
    fx->broker.report_status = 409;
    assert_int_equal(run(fx, cmd_prolog), CMD_FAILED);
    assert_string_equal(fx->ctx.error.text,
                        "prolog: report creating: refused: HTTP 409: refused");
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 0);

    /* A reservation that is not active makes nothing either. */
    fx->broker.report_status = 200;
    json_object_set_new(fx->broker.reservation, "state", json_string("ended"));
    assert_int_equal(run(fx, cmd_prolog), CMD_FAILED);
    assert_string_equal(fx->ctx.error.text,
                        "job 42: reservation 7 is ended, not active; no "
                        "services created");
}

/* Services the node has no record of (a prolog that died after making
 * them, or a node that was reinstalled) are found and removed. */
static void test_orphans(void **state)
{
    struct fixture *fx = *state;

    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    jobstate_remove(fx->ctx.cfg->state_dir, JOB, true);
    assert_int_equal(run(fx, cmd_housekeeping), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 0);
    assert_string_equal(fx->out, "job 42: destroyed 2 service(s)\n");

    /* clean --all: every service with VNIs in the pool, and every
     * reservation the broker thinks this node holds is reported. */
    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    jobstate_remove(fx->ctx.cfg->state_dir, JOB, true);
    json_decref(fx->broker.node_view);
    fx->broker.node_view = json_pack("{s:[{s:s, s:I, s:b, s:[I, I], s:I}]}",
                                     "reservations",
                                     "job_id",
                                     JOB,
                                     "id",
                                     (json_int_t)7,
                                     "cleanup_needed",
                                     1,
                                     "vnis",
                                     (json_int_t)1024,
                                     (json_int_t)1025,
                                     "uid",
                                     (json_int_t)fx->owner);
    size_t before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_clean), CMD_USAGE); /* --all is needed */
    fx->opts.all = true;
    assert_int_equal(run(fx, cmd_clean), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 0);
    assert_string_equal(
        fx->out,
        "clean: destroyed 2 service(s), 0 remain; 1 job(s) reported\n");
    assert_int_equal(json_array_size(fx->broker.reports), before + 1);
    assert_string_equal(report_cxi(fx, before), "destroyed");
}

/* ---- steps (--step) and the switch plugin's calls ----------------------- */

/* Run a command with --step step (which stays set). */
static int run_step(struct fixture *fx, cmd_fn *fn, const char *step)
{
    fx->opts.step = step;
    return run(fx, fn);
}

/* Services on NIC d of the owner holding exactly vnis (n of them). */
static int services_with(struct fixture *fx, int d, const int *vnis, int n)
{
    struct nic_svc *svcs = NULL;
    int count = 0, found = 0;
    vnib_error_t e = {0};

    assert_int_equal(
        nic_svc_list(fx->ctx.nb, &fx->ctx.devs[d], &svcs, &count, &e), 0);
    for (int i = 0; i < count; i++) {
        bool same =
            svcs[i].has_uid && svcs[i].uid == fx->owner && svcs[i].nvnis == n;
        for (int k = 0; same && k < n; k++)
            same = svcs[i].vnis[k] == vnis[k];
        found += same;
    }
    free(svcs);
    return found;
}

static const int step0_vnis[] = {1030, 1024, 1025};
static const int step1_vnis[] = {1031, 1024, 1025};
/* Where a job VNI is in another service already, as libcxi up to SHS
 * 14.0.0 (and the simulated NICs) allow a VNI in one service per NIC. */
static const int step0_own[] = {1030};
static const int step1_own[] = {1031};

/* The last report's step ("" for the job's route) and reservation. */
static void assert_report(struct fixture *fx,
                          size_t i,
                          const char *cxi,
                          const char *step,
                          long long res_id)
{
    json_t *r = json_array_get(fx->broker.reports, i);
    const char *got = json_string_value(json_object_get(r, "step_id"));
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "cxi")), cxi);
    assert_string_equal(got ? got : "", step);
    assert_int_equal(json_integer_value(json_object_get(r, "reservation")),
                     res_id);
}

static bool state_file(struct fixture *fx, const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof(path), "%s/jobs/%s", fx->path[1], name);
    return stat(path, &st) == 0;
}

/* prolog --step: the step's VNIs first, then the job's, on every NIC; its
 * own record; reports on the step's route.  Two steps of one job keep
 * distinct services and records; the second, whose job VNIs the NICs
 * already hold in the first's service, gets its own VNIs only. */
static void test_step_prolog(void **state)
{
    struct fixture *fx = *state;

    assert_int_equal(run_step(fx, cmd_prolog, "0"), CMD_DONE);
    assert_int_equal(json_array_size(fx->ctx.warnings), 0);
    assert_int_equal(run_step(fx, cmd_prolog, "1"), CMD_DONE);
    assert_int_equal(json_array_size(fx->ctx.warnings), 1);
    assert_non_null(
        strstr(json_string_value(json_array_get(fx->ctx.warnings, 0)),
               "so the step gets its own VNIs, without the job's"));
    for (int d = 0; d < NNICS; d++) {
        assert_int_equal(services_with(fx, d, step0_vnis, 3), 1);
        assert_int_equal(services_with(fx, d, step1_own, 1), 1);
        assert_int_equal(job_services(fx, d), 0);
    }
    assert_int_equal(json_array_size(fx->broker.reports), 4);
    assert_report(fx, 0, "creating", "0", 70);
    assert_report(fx, 1, "created", "0", 70);
    assert_report(fx, 2, "creating", "1", 71);
    assert_report(fx, 3, "created", "1", 71);
    assert_non_null(strstr(fx->out, "job 42 step 1: uid="));
    assert_true(state_file(fx, JOB "+0.json"));
    assert_true(state_file(fx, JOB "+1.json"));
    assert_true(state_file(fx, JOB "+1.env"));
    assert_false(state_file(fx, JOB ".json"));

    /* Each step's environment names its own VNIs. */
    assert_int_equal(run_step(fx, cmd_env, "0"), CMD_DONE);
    assert_non_null(strstr(fx->out, "export SLINGSHOT_VNIS=1030,1024,1025\n"));
    assert_int_equal(run_step(fx, cmd_env, "1"), CMD_DONE);
    assert_non_null(strstr(fx->out, "export SLINGSHOT_VNIS=1031\n"));

    /* A second prolog of a step reuses its services. */
    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    assert_non_null(strstr(fx->out, "(reused)"));
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step1_own, 1), 1);

    /* An unknown step: the broker says 404, nothing is made. */
    assert_int_equal(run_step(fx, cmd_prolog, "9"), CMD_FAILED);
    assert_int_equal(fx->ctx.status, 404);
}

/* epilog --step destroys that step's services only. */
static void test_step_epilog(void **state)
{
    struct fixture *fx = *state;

    assert_int_equal(run(fx, cmd_prolog), CMD_DONE); /* the job's */
    assert_int_equal(run_step(fx, cmd_prolog, "0"), CMD_DONE);
    assert_int_equal(run_step(fx, cmd_prolog, "1"), CMD_DONE);
    assert_int_equal(run_step(fx, cmd_epilog, "0"), CMD_DONE);
    assert_string_equal(fx->out, "job 42 step 0: destroyed 2 service(s)\n");
    for (int d = 0; d < NNICS; d++) {
        assert_int_equal(services_with(fx, d, step0_own, 1), 0);
        assert_int_equal(services_with(fx, d, step1_own, 1), 1);
        assert_int_equal(job_services(fx, d), 1);
    }
    size_t n = json_array_size(fx->broker.reports);
    assert_report(fx, n - 1, "destroyed", "0", 70);
    assert_false(state_file(fx, JOB "+0.json"));
    assert_true(state_file(fx, JOB "+1.json"));
    assert_true(state_file(fx, JOB ".json"));
}

/* A step without VNIs of its own uses the job's service, which its end
 * leaves to the job. */
static void test_step_shared(void **state)
{
    struct fixture *fx = *state;

    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    assert_int_equal(run_step(fx, cmd_prolog, "2"), CMD_DONE);
    assert_non_null(strstr(fx->out, "(reused)"));
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_non_null(strstr(fx->out, "still in use; left in place"));
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 1);
    size_t n = json_array_size(fx->broker.reports);
    assert_report(fx, n - 1, "destroyed", "2", 72);

    fx->opts.step = NULL;
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(job_services(fx, d), 0);
}

/* Step services without a record are found through the broker, and a
 * job's end ends the steps it still has records of. */
static void test_step_orphans(void **state)
{
    struct fixture *fx = *state;
    char key[JOBSTATE_KEY_MAX];
    vnib_error_t e = {0};

    assert_int_equal(run_step(fx, cmd_prolog, "0"), CMD_DONE);
    assert_int_equal(jobstate_key(key, sizeof(key), JOB, "0", &e), 0);
    jobstate_remove(fx->ctx.cfg->state_dir, key, true);
    assert_int_equal(run(fx, cmd_housekeeping), CMD_DONE);
    assert_string_equal(fx->out, "job 42 step 0: destroyed 2 service(s)\n");
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step0_vnis, 3), 0);

    /* The job's housekeeping ends step 1, whose own end never ran. */
    fx->opts.step = NULL;
    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    assert_int_equal(run_step(fx, cmd_prolog, "1"), CMD_DONE);
    fx->opts.step = NULL;
    size_t before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_housekeeping), CMD_DONE);
    for (int d = 0; d < NNICS; d++) {
        assert_int_equal(services_with(fx, d, step1_own, 1), 0);
        assert_int_equal(job_services(fx, d), 0);
    }
    assert_int_equal(json_array_size(fx->broker.reports), before + 2);
    assert_report(fx, before, "destroyed", "1", 71);
    assert_report(fx, before + 1, "destroyed", "", 7);
    assert_false(state_file(fx, JOB "+1.json"));

    /* clean --all settles a step reservation on the step's route. */
    assert_int_equal(run_step(fx, cmd_prolog, "0"), CMD_DONE);
    json_decref(fx->broker.node_view);
    fx->broker.node_view =
        json_pack("{s:[{s:s, s:s, s:I, s:b, s:[I], s:[I, I], s:I}]}",
                  "reservations",
                  "job_id",
                  JOB,
                  "step_id",
                  "0",
                  "id",
                  (json_int_t)70,
                  "cleanup_needed",
                  1,
                  "vnis",
                  (json_int_t)1030,
                  "job_vnis",
                  (json_int_t)1024,
                  (json_int_t)1025,
                  "uid",
                  (json_int_t)fx->owner);
    fx->opts.step = NULL;
    fx->opts.all = true;
    before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_clean), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step0_vnis, 3), 0);
    assert_report(fx, before, "destroyed", "0", 70);
    assert_false(state_file(fx, JOB "+0.json"));
}

/* The one report in the spool (a new reference). */
static json_t *spooled_one(struct fixture *fx)
{
    vnib_error_t e = {0};
    json_t *list = jobstate_spool_list(fx->path[2], NULL, &e);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 1);
    json_t *entry = json_incref(json_array_get(list, 0));
    json_decref(list);
    return entry;
}

static const char *field(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Step 1's services are gone from every NIC, and its report is the one in
 * the spool, with member key want.
 */
static void assert_step1_spooled(struct fixture *fx,
                                 const char *key,
                                 const char *want)
{
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step1_vnis, 3), 0);
    json_t *entry = spooled_one(fx);
    assert_string_equal(field(entry, "step_id"), "1");
    assert_string_equal(field(entry, key), want);
    json_decref(entry);
}

/* A step's end report the broker cannot take is spooled with its step,
 * and flushed to the step's route. */
static void test_step_spool(void **state)
{
    struct fixture *fx = *state;
    vnib_error_t e = {0};

    assert_int_equal(run_step(fx, cmd_prolog, "1"), CMD_DONE);
    fx->broker.report_status = 503;
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    assert_step1_spooled(fx, "cxi", "destroyed");

    fx->broker.report_status = 200;
    size_t before = json_array_size(fx->broker.reports);
    assert_int_equal(run(fx, cmd_flush), CMD_DONE);
    assert_report(fx, before, "destroyed", "1", 71);
    json_t *list = jobstate_spool_list(fx->path[2], NULL, &e);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);

    /* A job's report is spooled as before: no step_id at all. */
    fx->opts.step = NULL;
    assert_int_equal(run(fx, cmd_prolog), CMD_DONE);
    fx->broker.report_status = 503;
    assert_int_equal(run(fx, cmd_epilog), CMD_DONE);
    json_t *entry = spooled_one(fx);
    assert_null(json_object_get(entry, "step_id"));
    assert_string_equal(field(entry, "job_id"), JOB);
    json_decref(entry);
}

/* The one spool entry of a report: what the agent and the switch plugin's
 * sender write (jobstate_spool_report), with its services, message and
 * why; and which answers are worth spooling. */
static void test_spool_report(void **state)
{
    struct fixture *fx = *state;
    vnib_error_t e = {0};
    json_t *services = json_pack("[{s:s, s:i}]", "device", "cxi0", "svc_id", 7);
    struct vnib_report r = {.job_id = "77",
                            .step_id = "2",
                            .node = "n9",
                            .cxi = "destroyed",
                            .services = services,
                            .message = "gone",
                            .reservation = 12};

    assert_non_null(services);
    assert_int_equal(
        jobstate_spool_report(fx->path[2], &r, "503 unavailable", &e), 0);
    json_t *entry = spooled_one(fx);
    assert_string_equal(field(entry, "job_id"), "77");
    assert_string_equal(field(entry, "step_id"), "2");
    assert_string_equal(field(entry, "node"), "n9");
    assert_string_equal(field(entry, "cxi"), "destroyed");
    assert_string_equal(field(entry, "message"), "gone");
    assert_string_equal(field(entry, "error"), "503 unavailable");
    assert_int_equal(
        json_integer_value(json_object_get(entry, "reservation_id")), 12);
    assert_true(json_equal(json_object_get(entry, "services"), services));
    json_decref(entry);
    json_decref(services);

    static const int worth[] = {-1, 401, 403, 429, 500, 502, 503, 504};
    static const int final[] = {200, 400, 404, 409, 410, 422};
    for (size_t i = 0; i < sizeof(worth) / sizeof(worth[0]); i++)
        assert_true(jobstate_spool_worth(worth[i]));
    for (size_t i = 0; i < sizeof(final) / sizeof(final[0]); i++)
        assert_false(jobstate_spool_worth(final[i]));
}

/* vnib_step_setup and _teardown on the fixture's context, with --step. */
static int step_setup(struct fixture *fx,
                      const char *step,
                      char ***envp,
                      vnib_error_t *e)
{
    fx->opts.step = step;
    return vnib_step_setup_opts(&fx->ctx, &fx->opts, envp, e);
}

static int step_teardown(struct fixture *fx, const char *step, vnib_error_t *e)
{
    fx->opts.step = step;
    return vnib_step_teardown_opts(&fx->ctx, &fx->opts, e);
}

static const char *env_get(char **env, const char *name)
{
    size_t n = strlen(name);
    for (char **p = env; *p; p++)
        if (!strncmp(*p, name, n) && (*p)[n] == '=')
            return *p + n + 1;
    return NULL;
}

/* vnib_step_setup's environment, and its errno on failures. */
static void test_stepapi_setup(void **state)
{
    struct fixture *fx = *state;
    vnib_error_t e = {0};
    char **env = NULL;

    json_object_set_new(json_object_get(fx->broker.steps, "0"),
                        "environment",
                        json_pack("{s:s, s:s}",
                                  "FI_CXI_COLL_JOB_ID",
                                  "42",
                                  "FI_CXI_COLL_MCAST_TOKEN",
                                  "tok"));
    fx->opts.uid = (long)fx->owner;
    assert_int_equal(step_setup(fx, "0", &env, &e), 0);
    assert_non_null(env);
    assert_string_equal(env_get(env, "SLINGSHOT_VNIS"), "1030,1024,1025");
    assert_string_equal(env_get(env, "SLINGSHOT_DEVICES"), "cxi0,cxi1");
    assert_non_null(env_get(env, "SLINGSHOT_SVC_IDS"));
    assert_string_equal(env_get(env, "SLINGSHOT_TCS"), "0xa");
    assert_string_equal(env_get(env, "FI_CXI_COLL_JOB_ID"), "42");
    assert_string_equal(env_get(env, "FI_CXI_COLL_JOB_STEP_ID"), "0");
    assert_string_equal(env_get(env, "FI_CXI_COLL_MCAST_TOKEN"), "tok");
    assert_null(env_get(env, "FI_CXI_HWCOLL_MIN_NODES"));
    vnib_step_env_free(env);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(services_with(fx, d, step0_vnis, 3), 1);
    assert_string_equal(vnib_step_env_name(0), "SLINGSHOT_VNIS");
    assert_null(vnib_step_env_name(10));

    /* Step 1 has no collectives: no FI_CXI_* at all; step 0 holds the
     * job's VNIs, so step 1 gets only its own. */
    assert_int_equal(step_setup(fx, "1", &env, &e), 0);
    assert_string_equal(env_get(env, "SLINGSHOT_VNIS"), "1031");
    assert_null(env_get(env, "FI_CXI_COLL_JOB_STEP_ID"));
    vnib_step_env_free(env);

    assert_int_equal(step_teardown(fx, "0", &e), 0);
    for (int d = 0; d < NNICS; d++) {
        assert_int_equal(services_with(fx, d, step0_vnis, 3), 0);
        assert_int_equal(services_with(fx, d, step1_own, 1), 1);
    }

    /* Failures say what kind they are. */
    assert_int_equal(step_setup(fx, "9", &env, &e), -1);
    assert_int_equal(errno, ENOENT);
    assert_null(env);
    fx->broker.fetch_status = 403;
    assert_int_equal(step_setup(fx, "0", &env, &e), -1);
    assert_int_equal(errno, EACCES);
    fx->broker.fetch_status = -1;
    assert_int_equal(step_setup(fx, "0", &env, &e), -1);
    assert_int_equal(errno, EHOSTUNREACH);
    assert_non_null(strstr(e.text, "broker unreachable"));
    assert_int_equal(step_setup(fx, "a+b", &env, &e), -1);
    assert_int_equal(errno, EINVAL);
}

/* The public calls read agent.toml; with the broker unreachable, setup
 * fails with EHOSTUNREACH and teardown destroys and spools. */
static void test_stepapi_unreachable(void **state)
{
    struct fixture *fx = *state;
    vnib_error_t e = {0};
    char conf[256], token[256];
    char **env = NULL;
    FILE *f;

    /* The step's services and record, made with the stand-in broker. */
    assert_int_equal(step_setup(fx, "1", &env, &e), 0);
    vnib_step_env_free(env);

    snprintf(token, sizeof(token), "%s/node.token", fx->dir);
    f = fopen(token, "w");
    assert_non_null(f);
    fputs("vnibnode.n1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(token, 0600), 0);
    snprintf(conf, sizeof(conf), "%s/agent.toml", fx->dir);
    f = fopen(conf, "w");
    assert_non_null(f);
    /* Port 9 on loopback: nothing listens, the connection is refused. */
    fprintf(f,
            "[broker]\nurl = \"http://127.0.0.1:9\"\ntoken_file = \"%s\"\n"
            "fetch_timeout_ms = 300\nspool_after_ms = 300\n"
            "[node]\nstate_dir = \"%s\"\nspool_dir = \"%s\"\n"
            "[nic]\nbackend = \"sim\"\nsim_dir = \"%s\"\n"
            "epilog_retry_busy_ms = 0\n",
            token,
            fx->path[1],
            fx->path[2],
            fx->path[0]);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(conf, 0600), 0);

    assert_int_equal(vnib_step_setup(conf, JOB, "0", -1, 0, NULL, &env, &e),
                     -1);
    assert_int_equal(errno, EHOSTUNREACH);
    assert_null(env);

    assert_int_equal(vnib_step_teardown(conf, JOB, "1", -1, &e), 0);
    assert_step1_spooled(fx, "node", "n1");

    /* A config that is not there is EINVAL, naming it. */
    assert_int_equal(
        vnib_step_teardown("/nonexistent/agent.toml", JOB, "1", -1, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "/nonexistent/agent.toml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prolog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epilog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_prolog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_epilog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_orphans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_spool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spool_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stepapi_setup, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_stepapi_unreachable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
