/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A NIC that runs out (issue 45, part 5): the agent's limits and what a
 * step's start does when its service does not fit.
 *
 * HPE's def_/res_/max_/depth as limits_plan applies them; then steps
 * started in this process (cmd_prolog with --step, as the switch plugin
 * calls it) on simulated NICs, which like Cassini hold 3 services that
 * reserve TLEs: the fourth step fails alone with the pool named, leaves
 * no service of its own on any NIC and reports "destroyed" (so that its
 * reservation's quarantine ends and the broker drains nothing); a service
 * it made but could not destroy is reported "failed" with its id.  The
 * broker is a stand-in that keeps every report.
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
#include "agent/limits.h"
#include "agent/nic.h"
#include "agent/nic_sim.h"

#define NNICS 2
#define JOB "42"
#define NSTEPS 5

static const struct nic_info cassini = {
    .name = "cxi0",
    .cap = {2048, 1024, 512, 2047, 2047, 16384, 2048, 1022},
};

struct fixture {
    char dir[64];
    char nics[96], state_dir[96];
    json_t *steps;   /* {STEP: its reservation} */
    json_t *reports; /* every report, in order */
    struct cmd_ctx ctx;
    struct cmd_opts opts;
};

static int fake_get(void *arg,
                    const char *path,
                    long deadline_ms,
                    json_t **replyp,
                    vnib_error_t *errp)
{
    struct fixture *fx = arg;
    const char *sp = "/v1/reservations/" JOB "/steps/";
    json_t *st = NULL;
    (void)deadline_ms;

    *replyp = NULL;
    if (!strncmp(path, sp, strlen(sp)))
        st = json_object_get(fx->steps, path + strlen(sp));
    if (!st) {
        errprintf(errp, "HTTP 404: no such reservation");
        return 404;
    }
    *replyp = json_incref(st);
    return 200;
}

static int fake_report(void *arg,
                       const struct vnib_report *r,
                       long deadline_ms,
                       vnib_error_t *errp)
{
    struct fixture *fx = arg;
    (void)deadline_ms;
    (void)errp;

    json_array_append_new(fx->reports,
                          json_pack("{s:s*, s:s, s:s?, s:O?}",
                                    "step_id",
                                    r->step_id,
                                    "cxi",
                                    r->cxi,
                                    "message",
                                    r->message,
                                    "services",
                                    r->services));
    return 200;
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    vnib_error_t e = {0};
    struct cmd_ctx *a;

    assert_non_null(fx);
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/vnib-test-niclim.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->nics, sizeof(fx->nics), "%s/nics", fx->dir);
    snprintf(fx->state_dir, sizeof(fx->state_dir), "%s/state", fx->dir);
    assert_int_equal(nic_sim_init(fx->nics, NNICS, &e), 0);
    a = &fx->ctx;
    a->cfg = agentcfg_load("/nonexistent/agent.toml", false, &e);
    assert_non_null(a->cfg);
    assert_int_equal(agentcfg_set(&a->cfg->backend, "sim"), 0);
    assert_int_equal(agentcfg_set(&a->cfg->sim_dir, fx->nics), 0);
    assert_int_equal(agentcfg_set(&a->cfg->state_dir, fx->state_dir), 0);
    a->cfg->epilog_retry_busy_ms = 0;
    snprintf(a->node, sizeof(a->node), "n1");
    a->err = stderr;
    a->warnings = json_array();
    a->broker = (struct cmd_broker){fake_get, fake_report, fx};
    /* Each step has a VNI of its own, so each needs its own service. */
    fx->steps = json_object();
    for (int i = 0; i < NSTEPS; i++) {
        char id[16];
        snprintf(id, sizeof(id), "%d", i);
        json_object_set_new(
            fx->steps,
            id,
            json_pack("{s:I, s:s, s:s, s:s, s:I, s:[I], s:[I,I], s:s}",
                      "id",
                      (json_int_t)70 + i,
                      "job_id",
                      JOB,
                      "step_id",
                      id,
                      "state",
                      "active",
                      "uid",
                      (json_int_t)geteuid(),
                      "vnis",
                      (json_int_t)1030 + i,
                      "job_vnis",
                      (json_int_t)1024,
                      (json_int_t)1025,
                      "tcs_mask",
                      "0xa"));
    }
    fx->reports = json_array();
    fx->opts = (struct cmd_opts){.job = JOB,
                                 .uid = -1,
                                 .ncores = 16,
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
    json_decref(fx->steps);
    json_decref(fx->reports);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

static int prolog(struct fixture *fx, const char *step)
{
    FILE *null = fopen("/dev/null", "w");
    int rc;

    assert_non_null(null);
    fx->ctx.out = null;
    fx->ctx.error.text[0] = '\0';
    fx->ctx.errnum = 0;
    fx->opts.step = step;
    rc = cmd_prolog(&fx->ctx, &fx->opts);
    fclose(null);
    fx->ctx.out = NULL;
    return rc;
}

/* Services on NIC d that hold VNI vni. */
static int holding(struct fixture *fx, int d, unsigned vni)
{
    struct nic_svc *svcs = NULL;
    vnib_error_t e = {0};
    int n = 0, found = 0;

    assert_int_equal(nic_svc_list(fx->ctx.nb, &fx->ctx.devs[d], &svcs, &n, &e),
                     0);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < svcs[i].nvnis; j++)
            found += svcs[i].vnis[j] == vni;
    free(svcs);
    return found;
}

static json_t *last_report(struct fixture *fx)
{
    return json_array_get(fx->reports, json_array_size(fx->reports) - 1);
}

static const char *field(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* HPE's def_/res_/max_/depth over the table, and a res_ the NIC lacks. */
static void test_plan_limits(void **state)
{
    struct nic_svc sys = {.svc_id = 2, .is_system = true}, req = {0};
    struct limits_want w;
    vnib_error_t e = {0};
    (void)state;

    limits_want_init(&w);
    assert_true(limits_want_empty(&w));
    assert_int_equal(limits_plan(&cassini, NULL, 0, 16, &w, &req, &e), 0);
    assert_int_equal(req.res[NIC_RSRC_PTE], 96); /* 6 per core */
    assert_int_equal(req.res[NIC_RSRC_TLE], 16);

    /* def_ per core; depth instead of the cores; res_ over def_; max_. */
    w.def[NIC_RSRC_PTE] = 2;
    w.depth = 4;
    w.res[NIC_RSRC_LE] = 100;
    w.max[NIC_RSRC_TXQ] = 3; /* def 2 x depth 4 = 8, lowered to 3 */
    w.res[NIC_RSRC_TLE] = 20;
    assert_false(limits_want_empty(&w));
    assert_int_equal(limits_plan(&cassini, NULL, 0, 16, &w, &req, &e), 0);
    assert_int_equal(req.res[NIC_RSRC_PTE], 8);
    assert_int_equal(req.res[NIC_RSRC_LE], 100);
    assert_int_equal(req.max[NIC_RSRC_TXQ], 3);
    assert_int_equal(req.res[NIC_RSRC_TXQ], 3);
    assert_int_equal(req.res[NIC_RSRC_TLE], 20);
    assert_int_equal(req.max[NIC_RSRC_TLE], 20);
    assert_int_equal(req.res[NIC_RSRC_AC], 8); /* the table's 2 x depth */

    /* A res_ above what the NIC has left once system services took
     * theirs, or above its max_: an error naming both. */
    sys.res[NIC_RSRC_PTE] = 2000;
    w.res[NIC_RSRC_PTE] = 100;
    w.res[NIC_RSRC_TXQ] = 5;
    assert_int_equal(limits_plan(&cassini, &sys, 1, 16, &w, &req, &e), -1);
    assert_int_equal(errno, ENOSPC);
    assert_non_null(strstr(e.text, "the NIC cxi0 cannot give"));
    assert_non_null(strstr(e.text, "res_ptes=100: it has 48"));
    assert_non_null(strstr(e.text, "res_txqs=5: its maximum is 3"));
}

/* More steps than TLE pools: the fourth fails alone, naming the pool,
 * with errnum ENOSPC; nothing of it stays on a NIC; it reports
 * "destroyed" with why, never "failed" (which drains the node). */
static void test_fourth_step(void **state)
{
    struct fixture *fx = *state;
    const char *steps[] = {"0", "1", "2"};

    for (int i = 0; i < 3; i++)
        assert_int_equal(prolog(fx, steps[i]), CMD_DONE);
    size_t before = json_array_size(fx->reports);
    assert_int_equal(prolog(fx, "3"), CMD_FAILED);
    assert_int_equal(fx->ctx.errnum, ENOSPC);
    assert_non_null(strstr(fx->ctx.error.text,
                           "the NIC cxi0 has no free TLE pool (3 in use by "
                           "other services)"));
    assert_int_equal(json_array_size(fx->reports), before + 2);
    assert_string_equal(field(json_array_get(fx->reports, before), "cxi"),
                        "creating");
    json_t *r = last_report(fx);
    assert_string_equal(field(r, "step_id"), "3");
    assert_string_equal(field(r, "cxi"), "destroyed");
    assert_non_null(strstr(field(r, "message"), "no free TLE pool"));
    assert_non_null(
        strstr(field(r, "message"), "nothing of it is left on this node"));
    for (int d = 0; d < NNICS; d++) {
        assert_int_equal(holding(fx, d, 1033), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(holding(fx, d, 1030 + (unsigned)i), 1);
    }
    /* Once a step ends, the next one fits. */
    fx->opts.step = "0";
    fx->opts.retry_ms = 0;
    FILE *null = fopen("/dev/null", "w");
    fx->ctx.out = null;
    assert_int_equal(cmd_epilog(&fx->ctx, &fx->opts), CMD_DONE);
    fclose(null);
    fx->ctx.out = NULL;
    assert_int_equal(prolog(fx, "4"), CMD_DONE);
    for (int d = 0; d < NNICS; d++)
        assert_int_equal(holding(fx, d, 1034), 1);
}

/* A service made on cxi0, then cxi1 refuses: cxi0's is destroyed and
 * checked gone, "destroyed".  When cxi0's cannot be destroyed (busy), the
 * report is "failed" and names it: the one case that drains the node. */
static void test_undo(void **state)
{
    struct fixture *fx = *state;
    char path[160];
    json_t *root;

    /* cxi1 answers ENOSPC with nothing short, every time. */
    snprintf(path, sizeof(path), "%s/cxi1.json", fx->nics);
    root = json_load_file(path, 0, NULL);
    assert_non_null(root);
    json_object_set_new(
        json_object_get(root, "faults"), "alloc_error", json_string("ENOSPC"));
    json_object_set_new(
        json_object_get(root, "faults"), "alloc_error_count", json_integer(8));
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);

    assert_int_equal(prolog(fx, "0"), CMD_FAILED);
    assert_string_equal(field(last_report(fx), "cxi"), "destroyed");
    assert_int_equal(holding(fx, 0, 1030), 0);

    /* Now cxi0's destroy is busy longer than anyone retries. */
    snprintf(path, sizeof(path), "%s/cxi0.json", fx->nics);
    root = json_load_file(path, 0, NULL);
    assert_non_null(root);
    json_object_set_new(
        json_object_get(root, "faults"), "destroy_ebusy", json_integer(5));
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    assert_int_equal(prolog(fx, "1"), CMD_FAILED);
    json_t *r = last_report(fx);
    assert_string_equal(field(r, "cxi"), "failed");
    assert_non_null(strstr(field(r, "message"), "services left"));
    json_t *svc = json_array_get(json_object_get(r, "services"), 0);
    assert_string_equal(field(svc, "device"), "cxi0");
    assert_int_equal(json_array_size(json_object_get(r, "services")), 1);
    assert_int_equal(holding(fx, 0, 1031), 1);
    assert_int_not_equal(fx->ctx.errnum, ENOSPC);
}

/* A res_ the NIC cannot give fails the step before any alloc, naming it. */
static void test_res_too_big(void **state)
{
    struct fixture *fx = *state;
    struct limits_want w;

    limits_want_init(&w);
    w.res[NIC_RSRC_AC] = 2000; /* 1022, 16 of them the system services' */
    fx->opts.limits = &w;
    assert_int_equal(prolog(fx, "0"), CMD_FAILED);
    assert_non_null(strstr(fx->ctx.error.text, "res_acs=2000: it has 1006"));
    assert_string_equal(field(last_report(fx), "cxi"), "destroyed");
    assert_int_equal(fx->ctx.errnum, ENOSPC);

    /* Limits that fit are applied. */
    w.res[NIC_RSRC_AC] = 10;
    assert_int_equal(prolog(fx, "1"), CMD_DONE);
    struct nic_svc *svcs = NULL;
    vnib_error_t e = {0};
    int n = 0, seen = 0;
    assert_int_equal(nic_svc_list(fx->ctx.nb, &fx->ctx.devs[0], &svcs, &n, &e),
                     0);
    for (int i = 0; i < n; i++)
        if (svcs[i].nvnis > 0 && svcs[i].vnis[0] == 1031) {
            assert_int_equal(svcs[i].res[NIC_RSRC_AC], 10);
            seen++;
        }
    free(svcs);
    assert_int_equal(seen, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_limits),
        cmocka_unit_test_setup_teardown(test_fourth_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_res_too_big, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
