/* In-process tests of the agent's commands (agent/commands.h).
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

#define NNICS 2
#define JOB "42"

/* The stand-in broker. */
struct fake_broker {
    json_t *reservation; /* what GET /v1/reservations/JOB answers */
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
    if (strcmp(path, "/v1/reservations/" JOB) != 0) {
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
                          json_pack("{s:s, s:s, s:s, s:I, s:s?, s:O?}",
                                    "job_id",
                                    r->job_id,
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
    vnib_error_t e = {""};
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
    vnib_error_t e = {""};

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prolog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epilog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphans, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
