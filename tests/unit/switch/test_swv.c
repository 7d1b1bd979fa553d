/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the switch plugin's Slurm-free parts
 * (plugins/slurm/switch/): SwitchParameters and --network parsing
 * (swv_opts.c), the jobinfo's wire form (swv_jobinfo.c) and the release
 * spool record (swv_ctld.c, the hook's format).  The plugin's sources
 * are compiled in: they are not part of any library.
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

#include "plugins/slurm/switch/swv_ctld.c"
#include "plugins/slurm/switch/swv_jobinfo.c"
#include "plugins/slurm/switch/swv_opts.c"

static void test_config_defaults(void **state)
{
    struct swv_config cfg;
    vnib_error_t err = {0};

    (void)state;
    assert_int_equal(swv_config_parse(&cfg, NULL, &err), 0);
    assert_string_equal(cfg.url, "");
    assert_string_equal(cfg.token_file, "/etc/vnibroker/slurmctld.token");
    assert_string_equal(cfg.spool, "/var/spool/vnibroker/slurm/release");
    assert_int_equal(cfg.outage, SWV_OUTAGE_FAIL);
    assert_int_equal(cfg.vnis, -1);
    assert_int_equal(cfg.step_vnis, 0);
    assert_int_equal(cfg.timeout_ms, 5000);
}

static void test_config_keys(void **state)
{
    struct swv_config cfg;
    vnib_error_t err = {0};

    (void)state;
    assert_int_equal(
        swv_config_parse(&cfg,
                         "vnib_url=https://b:8443,vnib_outage=open,"
                         "vnib_vnis=2,vnib_step_vnis=1,vnib_hwcoll=off,"
                         "vnib_timeout_ms=1500,vnib_agent_config=/e/%n.toml",
                         &err),
        0);
    assert_string_equal(cfg.url, "https://b:8443");
    assert_int_equal(cfg.outage, SWV_OUTAGE_OPEN);
    assert_int_equal(cfg.vnis, 2);
    assert_int_equal(cfg.step_vnis, 1);
    assert_string_equal(cfg.hwcoll, "off");
    assert_int_equal(cfg.timeout_ms, 1500);
    assert_string_equal(cfg.agent_config, "/e/%n.toml");
}

static void test_config_refusals(void **state)
{
    static const char *const bad[][2] = {
        {"vnib_nope=1", "unknown key 'vnib_nope'"},
        {"fm_url=x", "unknown key 'fm_url'"},
        {"vnib_vnis=5", "vnib_vnis: want a number of VNIs 0-4"},
        {"vnib_outage=maybe", "want fail or open"},
        {"vnib_url", "vnib_url needs a value"},
        {"vnib_timeout_ms=0", "want milliseconds"},
        {"vnib_hwcoll=yes", "want on, off or auto"},
    };
    struct swv_config cfg;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vnib_error_t err = {0};

        assert_int_equal(swv_config_parse(&cfg, bad[i][0], &err), -1);
        assert_int_equal(errno, EINVAL);
        assert_non_null(strstr(err.text, bad[i][1]));
    }
}

static void test_network(void **state)
{
    struct swv_config cfg;
    struct swv_network net;
    vnib_error_t err = {0};

    (void)state;
    assert_int_equal(swv_config_parse(&cfg, "vnib_step_vnis=1", &err), 0);
    /* defaults */
    assert_int_equal(swv_network_parse(&cfg, NULL, NULL, &net, &err), 0);
    assert_int_equal(net.vnis, -1);
    assert_int_equal(net.step_vnis, 1);
    /* the job's keys from the job's --network, the step's from the step's */
    assert_int_equal(
        swv_network_parse(&cfg, "vnis=2,hwcoll", "step_vnis=2", &net, &err), 0);
    assert_int_equal(net.vnis, 2);
    assert_int_equal(net.step_vnis, 2);
    assert_string_equal(net.hwcoll, "on");
    /* job keys in a step's --network are ignored */
    assert_int_equal(
        swv_network_parse(&cfg, "vnis=1", "vnis=3,hwcoll=off", &net, &err), 0);
    assert_int_equal(net.vnis, 1);
    assert_string_equal(net.hwcoll, "");
    /* no_vni; job_vni; HPE's keys */
    assert_int_equal(swv_network_parse(&cfg, "no_vni", NULL, &net, &err), 0);
    assert_int_equal(net.vnis, 0);
    assert_int_equal(net.step_vnis, 0);
    assert_int_equal(
        swv_network_parse(
            &cfg, "job_vni,depth=4,def_les=3", "tcs=BULK_DATA", &net, &err),
        0);
    assert_int_equal(net.vnis, 1);
    assert_int_equal(swv_network_parse(&cfg, NULL, "hpe=1", &net, &err), -1);
    assert_non_null(strstr(err.text, "unknown option 'hpe'"));
    assert_int_equal(swv_network_parse(&cfg, "step_vnis=9", NULL, &net, &err),
                     -1);
}

static void test_expand_node(void **state)
{
    char out[32];

    (void)state;
    assert_int_equal(
        swv_expand_node("/e/%n/agent.toml", "n1", out, sizeof(out)), 0);
    assert_string_equal(out, "/e/n1/agent.toml");
    assert_int_equal(
        swv_expand_node("/a/very/long/%n/%n/%n", "node-0001", out, sizeof(out)),
        -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

static void test_jobinfo_round_trip(void **state)
{
    struct swv_jobinfo in = {SWV_JOBINFO_BUILT, 42, 7, 1001, 1002}, out;
    uint8_t wire[SWV_JOBINFO_WIRE];
    vnib_error_t err = {0};

    (void)state;
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), 0);
    /* Field by field: the struct's padding holds whatever the stack did. */
    assert_int_equal(out.flags, in.flags);
    assert_int_equal(out.job_id, in.job_id);
    assert_int_equal(out.step_id, in.step_id);
    assert_int_equal(out.job_resv, in.job_resv);
    assert_int_equal(out.step_resv, in.step_resv);
    /* each refusal */
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire) - 1, &out, &err),
                     -1);
    wire[0] ^= 1;
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "bad magic"));
    wire[0] ^= 1;
    wire[7] = 2;
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "version 2"));
    wire[7] = 1;
    wire[11] |= 0x80;
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    wire[11] &= 0x7f;
    in.step_resv = 0; /* built, not unisolated, without a step reservation */
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    in.flags |= SWV_JOBINFO_UNISOLATED;
    in.job_resv = 0;
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), 0);
}

static void test_spool(void **state)
{
    char dir[] = "/tmp/test_swv.XXXXXX", path[64], buf[256];
    vnib_error_t err = {0};
    struct stat st;
    FILE *f;
    size_t n;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/spool", dir);
    assert_int_equal(swv_ctld_spool(path, "17", "broker down\nreally", &err),
                     0);
    snprintf(path, sizeof(path), "%s/spool/17", dir);
    assert_non_null(f = fopen(path, "r"));
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_int_equal(strncmp(buf, "job 17\nfailed_at 20", 19), 0);
    assert_non_null(strstr(buf, "Z\nerror broker down really\n"));
    snprintf(path, sizeof(path), "%s/spool", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* not a job number; a directory others may write */
    assert_int_equal(swv_ctld_spool(path, "../x", "e", &err), -1);
    assert_int_equal(chmod(path, 0777), 0);
    assert_int_equal(swv_ctld_spool(path, "18", "e", &err), -1);
    assert_non_null(strstr(err.text, "writable by others"));
    snprintf(path, sizeof(path), "%s/spool/17", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/spool", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_network),
        cmocka_unit_test(test_expand_node),
        cmocka_unit_test(test_jobinfo_round_trip),
        cmocka_unit_test(test_spool),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
