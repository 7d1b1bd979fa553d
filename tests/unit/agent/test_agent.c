/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the agent's pure parts: sizing a service from HPE's
 * table and scaling it back (agent/limits.c), the job environment and its
 * file format (agent/jobenv.c), and Slurm's CPUs-per-node list
 * (agent/slurmcpus.c).
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

#include "agent/jobenv.h"
#include "agent/jobstate.h"
#include "agent/limits.h"
#include "agent/slurmcpus.h"

static const struct nic_info dev = {
    .name = "cxi0",
    .cap = {2048, 1024, 512, 2047, 2047, 16384, 2048, 1022},
};

static void test_plan(void **state)
{
    struct nic_svc sys = {.svc_id = 2, .is_system = true};
    struct nic_svc req = {0};
    (void)state;

    sys.res[NIC_RSRC_TXQ] = 64;
    sys.use[NIC_RSRC_TXQ] = 100; /* use above res: use counts */
    sys.res[NIC_RSRC_PTE] = 48;
    assert_int_equal(limits_plan(&dev, &sys, 1, 128, NULL, &req, NULL), 0);
    assert_true(req.resource_limits);
    /* TXQ: 2/core = 256, max min(2048, 1024 - 100) = 924 */
    assert_int_equal(req.res[NIC_RSRC_TXQ], 256);
    assert_int_equal(req.max[NIC_RSRC_TXQ], 924);
    /* TGQ: max min(1024, 512) */
    assert_int_equal(req.max[NIC_RSRC_TGQ], 512);
    assert_int_equal(req.res[NIC_RSRC_TGQ], 128);
    /* PTE: 6/core = 768, max 2048 - 48 */
    assert_int_equal(req.res[NIC_RSRC_PTE], 768);
    assert_int_equal(req.max[NIC_RSRC_PTE], 2000);
    /* TLE: max = res = ncores */
    assert_int_equal(req.res[NIC_RSRC_TLE], 128);
    assert_int_equal(req.max[NIC_RSRC_TLE], 128);
    /* LE 16/core = 2048; AC 2/core = 256, max 1022 */
    assert_int_equal(req.res[NIC_RSRC_LE], 2048);
    assert_int_equal(req.max[NIC_RSRC_AC], 1022);

    /* Reserved is clamped to the maximum: 2000 cores. */
    assert_int_equal(limits_plan(&dev, &sys, 1, 2000, NULL, &req, NULL), 0);
    assert_int_equal(req.res[NIC_RSRC_TXQ], 924);
    assert_int_equal(req.res[NIC_RSRC_AC], 1022);
    assert_int_equal(req.res[NIC_RSRC_LE], 16384);
}

static void test_scale_back(void **state)
{
    struct nic_svc want = {0}, req;
    struct nic_fail fail = {0};
    vnib_error_t e = {0};
    char note[128];
    (void)state;

    assert_int_equal(limits_plan(&dev, NULL, 0, 64, NULL, &want, NULL), 0);
    req = want;
    for (int r = 0; r < NIC_RSRC_COUNT; r++)
        fail.avail[r] = 60000;
    fail.avail[NIC_RSRC_PTE] = 200; /* asked 384 */
    fail.avail[NIC_RSRC_LE] = 512;  /* asked 1024 */
    assert_int_equal(
        limits_scale_back(&want, &req, &fail, 25, note, sizeof(note), &e), 0);
    assert_string_equal(note, "pte 384->200 le 1024->512");
    assert_int_equal(req.res[NIC_RSRC_PTE], 200);
    assert_int_equal(req.res[NIC_RSRC_TXQ], want.res[NIC_RSRC_TXQ]);

    /* Below the floor (25% of 384 = 96). */
    req = want;
    fail.avail[NIC_RSRC_PTE] = 95;
    assert_int_equal(
        limits_scale_back(&want, &req, &fail, 25, note, sizeof(note), &e), -1);
    assert_int_equal(errno, ENOSPC);
    assert_string_equal(e.text,
                        "below the floor: pte 95 available, floor 96 (25% of "
                        "384)");

    /* A pool shortage cannot be helped by asking for less. */
    req = want;
    fail.no_tle_pools = true;
    assert_int_equal(
        limits_scale_back(&want, &req, &fail, 25, note, sizeof(note), &e), -1);
    assert_non_null(strstr(e.text, "no free TLE pool"));

    /* ENOSPC with nothing short: the caller retries. */
    req = want;
    memset(&fail, 0, sizeof(fail));
    for (int r = 0; r < NIC_RSRC_COUNT; r++)
        fail.avail[r] = 60000;
    assert_int_equal(
        limits_scale_back(&want, &req, &fail, 25, note, sizeof(note), &e), -1);
    assert_int_equal(errno, EAGAIN);
}

static void test_jobenv(void **state)
{
    struct nic_info devs[2] = {{.name = "cxi0"}, {.name = "cxi1", .dev_id = 1}};
    int ids[2] = {5, -1};
    struct jobenv env, back;
    vnib_error_t e = {0};
    char *text = NULL;
    size_t size = 0;
    (void)state;

    json_t *res = json_pack("{s:[i,i], s:s, s:{s:s, s:s, s:s}}",
                            "vnis",
                            1024,
                            1025,
                            "tcs_mask",
                            "0xa",
                            "environment",
                            "FI_CXI_COLL_JOB_ID",
                            "c-42",
                            "FI_CXI_COLL_MCAST_TOKEN",
                            "a b'c",
                            "SLINGSHOT_VNIS",
                            "ignored: the agent builds its own");
    assert_int_equal(jobenv_build(&env, res, devs, ids, 2, &e), 0);
    FILE *f = open_memstream(&text, &size);
    assert_int_equal(jobenv_write(&env, "export", f, &e), 0);
    fclose(f);
    assert_string_equal(text,
                        "export SLINGSHOT_VNIS=1024,1025\n"
                        "export SLINGSHOT_DEVICES=cxi0,cxi1\n"
                        "export SLINGSHOT_SVC_IDS=5,-1\n"
                        "export SLINGSHOT_TCS=0xa\n"
                        "export FI_CXI_COLL_JOB_ID=c-42\n"
                        "unset FI_CXI_COLL_JOB_STEP_ID\n"
                        "export FI_CXI_COLL_MCAST_TOKEN='a b'\\''c'\n"
                        "unset FI_CXI_COLL_FABRIC_MGR_URL\n"
                        "unset FI_CXI_HWCOLL_ADDRS_PER_JOB\n"
                        "unset FI_CXI_HWCOLL_MIN_NODES\n");
    free(text);
    text = NULL;

    /* The taskprolog form reads back to the same values. */
    f = open_memstream(&text, &size);
    assert_int_equal(jobenv_write(&env, "slurm-taskprolog", f, &e), 0);
    fclose(f);
    assert_non_null(strstr(text, "export FI_CXI_COLL_MCAST_TOKEN=a b'c\n"));
    assert_int_equal(jobenv_parse(&back, text, "t.env", &e), 0);
    for (int i = 0; i < JOBENV_COUNT; i++) {
        if (env.value[i])
            assert_string_equal(back.value[i], env.value[i]);
        else
            assert_null(back.value[i]);
    }
    free(text);
    jobenv_clear(&back);
    jobenv_clear(&env);

    /* A broker value with a line break would forge lines: refused. */
    json_object_set_new(json_object_get(res, "environment"),
                        "FI_CXI_COLL_JOB_ID",
                        json_string("x\nexport LD_PRELOAD=/tmp/x"));
    assert_int_equal(jobenv_build(&env, res, devs, ids, 2, &e), -1);
    assert_int_equal(errno, EINVAL);
    json_object_set_new(json_object_get(res, "environment"),
                        "FI_CXI_COLL_JOB_ID",
                        json_string("c-42"));

    /* So would a tcs_mask that is not the broker's "0x" form. */
    static const char *bad_tcs[] = {"0xa\nexport LD_PRELOAD=/tmp/x",
                                    "0xA",
                                    "10",
                                    "0x",
                                    "0x123",
                                    "0xa ",
                                    "-0xa"};
    for (size_t i = 0; i < sizeof(bad_tcs) / sizeof(bad_tcs[0]); i++) {
        json_object_set_new(res, "tcs_mask", json_string(bad_tcs[i]));
        errno = 0;
        assert_int_equal(jobenv_build(&env, res, devs, ids, 2, &e), -1);
        assert_int_equal(errno, EINVAL);
        assert_null(env.value[0]);
    }
    json_object_set_new(res, "tcs_mask", json_string("0xf"));
    assert_int_equal(jobenv_build(&env, res, devs, ids, 2, &e), 0);
    jobenv_clear(&env);
    json_decref(res);

    /* Unknown names and other lines are refused with the line. */
    assert_int_equal(
        jobenv_parse(
            &back, "unset SLINGSHOT_VNIS\nexport PATH=/x\n", "t.env", &e),
        -1);
    assert_string_equal(e.text,
                        "t.env:2: expected 'export NAME=value' or 'unset "
                        "NAME' for a SLINGSHOT_* or FI_CXI_* variable");
    assert_int_equal(jobenv_write(&env, "yaml", stdout, &e), -1);
}

static void test_slurmcpus(void **state)
{
    vnib_error_t e = {0};
    unsigned n = 0;
    (void)state;

    assert_int_equal(slurmcpus_for_node("72(x2),36", "n[1-3]", "n2", &n, &e),
                     0);
    assert_int_equal(n, 72);
    assert_int_equal(slurmcpus_for_node("72(x2),36", "n[1-3]", "n3", &n, &e),
                     0);
    assert_int_equal(n, 36);
    assert_int_equal(slurmcpus_for_node("4", "n7", "n7", &n, &e), 0);
    assert_int_equal(n, 4);
    assert_int_equal(slurmcpus_for_node("72(x2),36", "n[1-3]", "n4", &n, &e),
                     -1);
    assert_string_equal(e.text, "node n4 is not in SLURM_JOB_NODELIST");
    assert_int_equal(slurmcpus_for_node("72(x2)", "n[1-3]", "n1", &n, &e), -1);
    assert_int_equal(slurmcpus_for_node("72(x2", "n[1-3]", "n1", &n, &e), -1);
    assert_int_equal(slurmcpus_for_node("0,1", "n[1-2]", "n1", &n, &e), -1);
    assert_int_equal(slurmcpus_for_node("a", "n1", "n1", &n, &e), -1);
}

/* Tombstones of reservations ended here: in force until their time,
 * beside the spooled reports (which do not list them), pruned after it;
 * one others may write is not one. */
static void test_ended(void **state)
{
    (void)state;
    char dir[] = "/tmp/vnib-ended-XXXXXX";
    char spool[64], path[128];
    vnib_error_t error = {0};
    json_t *list;

    assert_non_null(mkdtemp(dir));
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    assert_int_equal(jobstate_ended_check(spool, 7, 1000, &error), 0);
    assert_int_equal(jobstate_ended_put(spool, 7, 1000, &error), 0);
    assert_int_equal(jobstate_ended_put(spool, 8, 2000, &error), 0);
    assert_int_equal(jobstate_ended_check(spool, 7, 999, &error), 1);
    assert_int_equal(jobstate_ended_check(spool, 7, 1000, &error), 1);
    assert_int_equal(jobstate_ended_check(spool, 7, 1001, &error), 0);
    assert_int_equal(jobstate_ended_check(spool, 9, 1, &error), 0);
    assert_int_equal(jobstate_ended_check(spool, 0, 1, &error), -1);
    list = jobstate_spool_list(spool, NULL, &error);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    assert_int_equal(jobstate_ended_prune(spool, 1500), 1);
    assert_int_equal(jobstate_ended_check(spool, 7, 1, &error), 0);
    assert_int_equal(jobstate_ended_check(spool, 8, 1500, &error), 1);
    snprintf(path, sizeof(path), "%s/8.ended", spool);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(jobstate_ended_check(spool, 8, 1500, &error), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(jobstate_ended_prune(spool, 5000), 0);
    assert_int_equal(rmdir(spool), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* The report spool: one file per job and reservation, oldest reservation
 * first, a newer report of the same pair replacing the older, unsafe
 * files skipped and named, an unsafe directory refused. */
static void test_spool(void **state)
{
    (void)state;
    char dir[] = "/tmp/vnib-spool-XXXXXX";
    char spool[64], path[128];
    vnib_error_t error = {0};
    json_t *list, *bad;

    mode_t umask_was = umask(022); /* as slurmd runs its Prolog */
    assert_non_null(mkdtemp(dir));
    /* Its parent is missing too, as /var/spool/vnibroker on a new node. */
    snprintf(spool, sizeof(spool), "%s/v/spool", dir);
    list = jobstate_spool_list(spool, NULL, &error);
    assert_non_null(list); /* no spool yet: nothing spooled */
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);

    const long long ids[] = {100, 9, 100};
    const char *cxi[] = {"failed", "destroyed", "destroyed"};
    for (int i = 0; i < 3; i++) {
        json_t *r = json_pack("{s:s, s:s, s:I, s:s}",
                              "job_id",
                              i == 1 ? "7.batch" : "42",
                              "node",
                              "n1",
                              "reservation_id",
                              (json_int_t)ids[i],
                              "cxi",
                              cxi[i]);
        assert_int_equal(jobstate_spool_put(spool, r, &error), 0);
        json_decref(r);
    }
    struct stat st;
    assert_int_equal(stat(spool, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    snprintf(path, sizeof(path), "%s/v", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    list = jobstate_spool_list(spool, NULL, &error);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 2);
    /* 9 before 100: ordered as numbers, not as text. */
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(list, 0), "job_id")),
        "7.batch");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(list, 1), "cxi")),
        "destroyed");
    json_decref(list);

    /* A file others may write is skipped and named; so is garbage. */
    snprintf(path, sizeof(path), "%s/00000000000000000001_x.json", spool);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"job_id\":\"x\",\"cxi\":\"destroyed\"}", f);
    fclose(f);
    assert_int_equal(chmod(path, 0666), 0);
    snprintf(path, sizeof(path), "%s/00000000000000000002_y.json", spool);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("not json", f);
    fclose(f);
    bad = json_array();
    list = jobstate_spool_list(spool, bad, &error);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 2);
    assert_int_equal(json_array_size(bad), 2);
    assert_non_null(strstr(json_string_value(json_array_get(bad, 0)),
                           "only its owner may write"));
    assert_non_null(
        strstr(json_string_value(json_array_get(bad, 1)), "not a spooled"));
    json_decref(list);
    json_decref(bad);
    unlink(path);
    snprintf(path, sizeof(path), "%s/00000000000000000001_x.json", spool);
    unlink(path);

    jobstate_spool_remove(spool, "42", 100);
    jobstate_spool_remove(spool, "42", 100); /* absent: fine */
    list = jobstate_spool_list(spool, NULL, &error);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);

    /* A directory others may write is refused, for reading and writing. */
    assert_int_equal(chmod(spool, 0777), 0);
    assert_null(jobstate_spool_list(spool, NULL, &error));
    assert_int_equal(errno, EPERM);
    json_t *r = json_pack("{s:s, s:I, s:s}",
                          "job_id",
                          "1",
                          "reservation_id",
                          (json_int_t)1,
                          "cxi",
                          "destroyed");
    assert_int_equal(jobstate_spool_put(spool, r, &error), -1);
    assert_non_null(strstr(error.text, "only its owner may write"));
    /* A job id that cannot name a file is refused. */
    assert_int_equal(chmod(spool, 0700), 0);
    json_object_set_new(r, "job_id", json_string("../x"));
    assert_int_equal(jobstate_spool_put(spool, r, &error), -1);
    assert_int_equal(errno, EINVAL);
    json_decref(r);

    jobstate_spool_remove(spool, "7.batch", 9);
    assert_int_equal(rmdir(spool), 0);
    snprintf(path, sizeof(path), "%s/v", dir);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(rmdir(dir), 0);
    umask(umask_was);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_scale_back),
        cmocka_unit_test(test_jobenv),
        cmocka_unit_test(test_slurmcpus),
        cmocka_unit_test(test_spool),
        cmocka_unit_test(test_ended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
