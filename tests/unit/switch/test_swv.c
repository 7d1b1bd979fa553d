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
#include "plugins/slurm/switch/swv_free.c"
#include "plugins/slurm/switch/swv_jobinfo.c"
#include "plugins/slurm/switch/swv_opts.c"

/* The client of the broker is vnib-agent-broker.so beside the helper:
 * none here (the tests below make no request). */
const struct swv_client_api *swv_broker_client(vnib_error_t *errp)
{
    errno = ENOENT;
    errprintf(errp, "no client of the broker in the unit tests");
    return NULL;
}

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
    struct swv_jobinfo in = {SWV_JOBINFO_BUILT, 42, 7, 1001, 1002, NULL}, out;
    uint8_t wire[SWV_JOBINFO_WIRE];
    vnib_error_t err = {0};

    (void)state;
    assert_int_equal(swv_jobinfo_wire_size(&in), SWV_JOBINFO_WIRE);
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), 0);
    /* Field by field: the struct's padding holds whatever the stack did. */
    assert_int_equal(out.flags, in.flags);
    assert_int_equal(out.job_id, in.job_id);
    assert_int_equal(out.step_id, in.step_id);
    assert_int_equal(out.job_resv, in.job_resv);
    assert_int_equal(out.step_resv, in.step_resv);
    assert_null(out.lease);
    /* each refusal */
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire) - 1, &out, &err),
                     -1);
    wire[0] ^= 1;
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "bad magic"));
    wire[0] ^= 1;
    wire[7] = 3;
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "version 3"));
    wire[7] = 2; /* version 2 is 40 bytes and more */
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
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

/* Version 2, with the step's lease: round trip, copy, and each refusal;
 * version 1 still decodes (a step packed before leases). */
static void test_jobinfo_lease(void **state)
{
    static const char lease[] = "vnib1.eyJ2IjoxfQ.c2ln-_";
    struct swv_jobinfo in = {SWV_JOBINFO_BUILT, 42, 7, 1001, 1002, NULL};
    struct swv_jobinfo out, copy;
    uint8_t *wire, *bad;
    vnib_error_t err = {0};
    size_t n;

    (void)state;
    in.lease = strdup(lease);
    assert_non_null(in.lease);
    n = swv_jobinfo_wire_size(&in);
    assert_int_equal(n, SWV_JOBINFO_WIRE_LEASE + strlen(lease));
    wire = malloc(n);
    bad = malloc(n);
    assert_non_null(wire);
    assert_non_null(bad);
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(wire[7], 2);
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), 0);
    assert_int_equal(out.job_id, 42);
    assert_int_equal(out.step_resv, 1002);
    assert_string_equal(out.lease, lease);
    assert_int_equal(swv_jobinfo_copy(&copy, &out), 0);
    assert_string_equal(copy.lease, lease);
    assert_ptr_not_equal(copy.lease, out.lease);
    swv_jobinfo_clear(&copy);
    assert_null(copy.lease);
    swv_jobinfo_clear(&out);

    /* a length that disagrees with the bytes, either way */
    assert_int_equal(swv_jobinfo_decode(wire, n - 1, &out, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_null(out.lease);
    memcpy(bad, wire, n);
    bad[39] += 1;
    assert_int_equal(swv_jobinfo_decode(bad, n, &out, &err), -1);
    /* not a lease's text: prefix, a byte outside base64url and "." */
    memcpy(bad, wire, n);
    bad[SWV_JOBINFO_WIRE_LEASE] = 'w';
    assert_int_equal(swv_jobinfo_decode(bad, n, &out, &err), -1);
    assert_non_null(strstr(err.text, "not a lease"));
    memcpy(bad, wire, n);
    bad[n - 1] = '=';
    assert_int_equal(swv_jobinfo_decode(bad, n, &out, &err), -1);
    memcpy(bad, wire, n);
    bad[n - 2] = 0;
    assert_int_equal(swv_jobinfo_decode(bad, n, &out, &err), -1);
    /* a lease on a step that is not reserved, or unisolated */
    in.flags = SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED;
    swv_jobinfo_encode(&in, bad);
    assert_int_equal(swv_jobinfo_decode(bad, n, &out, &err), -1);
    in.flags = 0;
    swv_jobinfo_encode(&in, bad);
    assert_int_equal(swv_jobinfo_decode(bad, n, &out, &err), -1);
    /* version 2 of 40 bytes: an empty lease */
    memcpy(bad, wire, SWV_JOBINFO_WIRE_LEASE);
    memset(bad + 36, 0, 4);
    assert_int_equal(
        swv_jobinfo_decode(bad, SWV_JOBINFO_WIRE_LEASE, &out, &err), -1);
    /* too long a lease is refused before anything is allocated */
    memcpy(bad, wire, SWV_JOBINFO_WIRE_LEASE);
    bad[36] = 0x00;
    bad[37] = 0x04; /* 256 KiB + 1 */
    bad[38] = 0x00;
    bad[39] = 0x01;
    assert_int_equal(
        swv_jobinfo_decode(bad,
                           SWV_JOBINFO_WIRE_LEASE + SWV_JOBINFO_LEASE_MAX + 1,
                           &out,
                           &err),
        -1);
    free(in.lease);
    free(wire);
    free(bad);
}

/* The job-level data: round trip, and every malformed form refused. */
static void test_jobdata(void **state)
{
    struct swv_jobdata jd = {.job_resv = 42}, out;
    uint8_t wire[SWV_JOBDATA_WIRE_MAX], bad[SWV_JOBDATA_WIRE_MAX];
    vnib_error_t err = {0};
    size_t n;

    (void)state;
    snprintf(jd.token, sizeof(jd.token), "vnibjob.42.7.abcDEF-_x");
    n = swv_jobdata_encode(&jd, wire);
    assert_int_equal(n, 18 + strlen(jd.token));
    assert_int_equal(swv_jobdata_decode(wire, n, &out, &err), 0);
    assert_int_equal(out.job_resv, 42);
    assert_string_equal(out.token, jd.token);

    /* a length that disagrees with the token's, either way */
    assert_int_equal(swv_jobdata_decode(wire, n - 1, &out, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(out.token, "");
    assert_int_equal(swv_jobdata_decode(wire, 17, &out, &err), -1);
    /* magic, version */
    memcpy(bad, wire, n);
    bad[0] ^= 1;
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), -1);
    memcpy(bad, wire, n);
    bad[7] = 2;
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), -1);
    /* a control byte or a space in the token */
    memcpy(bad, wire, n);
    bad[20] = ' ';
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), -1);
    memcpy(bad, wire, n);
    bad[20] = 0;
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), -1);
    /* a token without a reservation, a negative reservation */
    jd.job_resv = 0;
    n = swv_jobdata_encode(&jd, bad);
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), -1);
    jd.job_resv = -5;
    n = swv_jobdata_encode(&jd, bad);
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), -1);
    /* none at all is fine */
    memset(&jd, 0, sizeof(jd));
    n = swv_jobdata_encode(&jd, bad);
    assert_int_equal(n, 18);
    assert_int_equal(swv_jobdata_decode(bad, n, &out, &err), 0);
    assert_int_equal(out.job_resv, 0);
}

/* slurmctld's free count: admits while the count allows, counts what
 * started jobs claimed, forgets claims after claim_ms, admits everything
 * when the count is unknown or stale, and asks for a scheduling pass
 * once VNIs come back for a refused job. */
static void test_free_count(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;

    (void)state;
    assert_null(swv_free_create(0, 1000, NULL, NULL, NULL, NULL, &err));
    f = swv_free_create(1000, 3200, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    /* never fetched: admitted, count unknown, nothing claimed */
    assert_true(swv_free_admit_at(f, 4, 5000, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_claim_at(f, 4, 5000);

    swv_free_update_at(f, 5, 2, 10000);
    /* the test alone claims nothing: asked twice, the same answer */
    assert_true(swv_free_admit_at(f, 5, 10000, &free_vnis));
    assert_true(swv_free_admit_at(f, 5, 10000, &free_vnis));
    assert_int_equal(free_vnis, 5);
    swv_free_claim_at(f, 2, 10000);
    swv_free_claim_at(f, -1, 10100); /* the default, 2 */
    assert_true(swv_free_admit_at(f, 1, 10200, &free_vnis));
    assert_int_equal(free_vnis, 1);
    assert_false(swv_free_admit_at(f, 2, 10200, &free_vnis));
    assert_false(swv_free_admit_at(f, -1, 10200, &free_vnis));
    swv_free_claim_at(f, 1, 10300);
    assert_false(swv_free_admit_at(f, 1, 10400, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* a job needing none always starts */
    assert_true(swv_free_admit_at(f, 0, 10400, &free_vnis));

    /* no nudge while nothing came back */
    swv_free_update_at(f, 5, 2, 11000);
    assert_false(swv_free_should_nudge(f, 11000));
    assert_false(swv_free_admit_at(f, 1, 11000, &free_vnis));
    /* after claim_ms (plus one bucket) the claims are gone: VNIs came
     * back for the refused jobs, one nudge */
    swv_free_update_at(f, 5, 2, 13700);
    assert_true(swv_free_should_nudge(f, 13700));
    assert_false(swv_free_should_nudge(f, 13700));
    assert_true(swv_free_admit_at(f, 5, 13700, &free_vnis));
    assert_int_equal(free_vnis, 5);

    /* stale after 3 intervals without a fetch: admitted, unknown */
    assert_true(swv_free_admit_at(f, 4, 13700 + 3001, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_destroy(f);
}

static int fetches;

static int fake_fetch(void *arg, long *freep, long *defp, vnib_error_t *errp)
{
    (void)arg;
    (void)errp;
    fetches++;
    *freep = 3;
    *defp = 1;
    return 0;
}

/* The poll thread fetches at once, then every interval, and stops. */
static void test_free_thread(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;
    int i;

    (void)state;
    f = swv_free_create(20, 1000, fake_fetch, NULL, NULL, NULL, &err);
    assert_non_null(f);
    for (i = 0; i < 200 && fetches < 3; i++)
        usleep(10000);
    assert_true(fetches >= 3);
    assert_false(swv_free_admit(f, 4, &free_vnis));
    assert_int_equal(free_vnis, 3);
    swv_free_destroy(f);
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
        cmocka_unit_test(test_jobinfo_lease),
        cmocka_unit_test(test_jobdata),
        cmocka_unit_test(test_free_count),
        cmocka_unit_test(test_free_thread),
        cmocka_unit_test(test_spool),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
