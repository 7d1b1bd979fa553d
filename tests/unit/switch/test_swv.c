/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the switch plugin's Slurm-free parts
 * (plugins/slurm/switch/): SwitchParameters and --network parsing
 * (swv_opts.c), the jobinfo's wire form with and without a lease
 * (swv_jobinfo.c), the release spool record (swv_ctld.c, the hook's
 * format) and slurmctld's release outbox (swv_outbox.c) against a
 * stand-in for the broker (slurmctld's free count: test_swv_free.c).
 * The plugin's sources are compiled in: they are not part of any
 * library.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/slurm/switch/swv_conn.c"
#include "plugins/slurm/switch/swv_ctld.c"
#include "plugins/slurm/switch/swv_jobinfo.c"
#include "plugins/slurm/switch/swv_outbox.c"
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
    assert_int_equal(cfg.step_fallback, SWV_FALLBACK_JOB);
    assert_int_equal(cfg.timeout_ms, 5000);
    assert_int_equal(cfg.broker_hold_s, 60);
    assert_string_equal(cfg.warning, "");
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
    assert_string_equal(cfg.warning, "");
}

/* vnib_broker_hold_s: seconds 0-3600, decimal even with a leading zero;
 * a longer hold is read as 3600, with a line for the log. */
static void test_config_broker_hold(void **state)
{
    static const struct {
        const char *params;
        long hold_s;
        bool warned;
    } good[] = {
        {"vnib_broker_hold_s=0", 0, false},
        {"vnib_broker_hold_s=030", 30, false},
        {"vnib_broker_hold_s=3600", 3600, false},
        {"vnib_broker_hold_s=3601", 3600, true},
        {"vnib_broker_hold_s=99999999999999999999999", 3600, true},
    };
    static const char *const bad[] = {
        "vnib_broker_hold_s=-1",
        "vnib_broker_hold_s=",
        "vnib_broker_hold_s=+5",
        "vnib_broker_hold_s=5s",
        "vnib_broker_hold_s= 5",
        "vnib_broker_hold_s",
    };
    struct swv_config cfg;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        vnib_error_t err = {0};

        assert_int_equal(swv_config_parse(&cfg, good[i].params, &err), 0);
        assert_int_equal(cfg.broker_hold_s, good[i].hold_s);
        if (good[i].warned)
            assert_non_null(
                strstr(cfg.warning, "more than 3600 s; read as 3600"));
        else
            assert_string_equal(cfg.warning, "");
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vnib_error_t err = {0};

        assert_int_equal(swv_config_parse(&cfg, bad[i], &err), -1);
        assert_int_equal(errno, EINVAL);
        assert_non_null(strstr(err.text, "vnib_broker_hold_s"));
    }
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
        {"vnib_step_fallback=never", "want job, wait or fail, not 'never'"},
        {"vnib_step_fallback", "vnib_step_fallback needs a value"},
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

/* vnib_step_fallback and --network step_fallback: the site's default,
 * then the job's, then the step's. */
static void test_step_fallback(void **state)
{
    struct swv_config cfg;
    struct swv_network net;
    vnib_error_t err = {0};

    (void)state;
    assert_int_equal(swv_config_parse(&cfg, "vnib_step_fallback=wait", &err),
                     0);
    assert_int_equal(cfg.step_fallback, SWV_FALLBACK_WAIT);
    assert_int_equal(swv_config_parse(&cfg, "vnib_step_fallback=fail", &err),
                     0);
    assert_int_equal(cfg.step_fallback, SWV_FALLBACK_FAIL);
    assert_int_equal(swv_network_parse(&cfg, NULL, NULL, &net, &err), 0);
    assert_int_equal(net.step_fallback, SWV_FALLBACK_FAIL);
    assert_int_equal(
        swv_network_parse(&cfg, "step_fallback=job", NULL, &net, &err), 0);
    assert_int_equal(net.step_fallback, SWV_FALLBACK_JOB);
    assert_int_equal(swv_network_parse(&cfg,
                                       "step_fallback=job,step_vnis=1",
                                       "step_fallback=wait",
                                       &net,
                                       &err),
                     0);
    assert_int_equal(net.step_fallback, SWV_FALLBACK_WAIT);
    assert_int_equal(net.step_vnis, 1);
    assert_int_equal(
        swv_network_parse(&cfg, NULL, "step_fallback=maybe", &net, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(err.text, "--network step_fallback"));
    assert_int_equal(swv_network_parse(&cfg, "step_fallback", NULL, &net, &err),
                     -1);
    assert_string_equal(swv_step_fallback_name(SWV_FALLBACK_JOB), "job");
    assert_string_equal(swv_step_fallback_name(SWV_FALLBACK_WAIT), "wait");
    assert_string_equal(swv_step_fallback_name(SWV_FALLBACK_FAIL), "fail");
}

/* HPE's NIC limits: SwitchParameters def_/res_/max_<rsrc>, --network the
 * same and depth, the step's over the job's over the site's. */
static void test_limits(void **state)
{
    static const char *const bad[][2] = {
        {"def_foos=1", "def_foos: no such resource"},
        {"res_tles=-1", "res_tles: want a number 0-65535"},
        {"max_les=65536", "max_les: want a number 0-65535"},
        {"depth=0", "depth: want a number 1-1024"},
        {"depth=1025", "depth: want a number 1-1024"},
        {"res_ptes", "res_ptes: want a number"},
    };
    struct swv_config cfg;
    struct swv_network net;
    vnib_error_t err = {0};

    (void)state;
    assert_int_equal(swv_config_parse(&cfg, "", &err), 0);
    for (int r = 0; r < SWV_RSRC_COUNT; r++) {
        assert_int_equal(cfg.limits.def[r], -1);
        assert_int_equal(cfg.limits.res[r], -1);
        assert_int_equal(cfg.limits.max[r], -1);
    }
    assert_int_equal(cfg.limits.depth, -1);
    assert_int_equal(
        swv_config_parse(
            &cfg, "vnib_vnis=1,def_tles=2,res_les=64,max_acs=8", &err),
        0);
    assert_int_equal(cfg.limits.def[6], 2);  /* tles */
    assert_int_equal(cfg.limits.res[5], 64); /* les */
    assert_int_equal(cfg.limits.max[7], 8);  /* acs */
    assert_string_equal(swv_rsrc_names[6], "tles");
    /* depth belongs to --network only, as in HPE's plugin */
    assert_int_equal(swv_config_parse(&cfg, "depth=2", &err), -1);
    assert_int_equal(swv_config_parse(&cfg, "def_tles=2,res_les=64", &err), 0);
    assert_int_equal(swv_network_parse(&cfg, NULL, NULL, &net, &err), 0);
    assert_int_equal(net.limits.def[6], 2);
    assert_int_equal(net.limits.res[5], 64);
    /* the job's over the site's, the step's over both */
    assert_int_equal(swv_network_parse(&cfg,
                                       "def_tles=4,depth=8,res_ptes=10",
                                       "def_tles=1,max_txqs=3",
                                       &net,
                                       &err),
                     0);
    assert_int_equal(net.limits.def[6], 1);
    assert_int_equal(net.limits.depth, 8);
    assert_int_equal(net.limits.res[0], 10);
    assert_int_equal(net.limits.max[1], 3);
    assert_int_equal(net.limits.res[5], 64);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(swv_network_parse(&cfg, bad[i][0], NULL, &net, &err),
                         -1);
        assert_int_equal(errno, EINVAL);
        assert_non_null(strstr(err.text, bad[i][1]));
        if (strncmp(bad[i][0], "depth", 5) != 0) {
            assert_int_equal(swv_config_parse(&cfg, bad[i][0], &err), -1);
            assert_non_null(strstr(err.text, bad[i][1]));
        }
    }
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
    struct swv_jobinfo in = {.flags = SWV_JOBINFO_BUILT,
                             .job_id = 42,
                             .step_id = 7,
                             .job_resv = 1001,
                             .step_resv = 1002},
                       out;
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
    wire[7] = 4;
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "version 4"));
    wire[7] = 3; /* version 3 is 140 bytes and more */
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
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
    /* a step on its job's VNIs alone: only on a reserved step */
    in.flags = SWV_JOBINFO_BUILT | SWV_JOBINFO_FALLBACK;
    in.job_resv = 1001;
    in.step_resv = 1002;
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), 0);
    assert_int_equal(out.flags, SWV_JOBINFO_BUILT | SWV_JOBINFO_FALLBACK);
    in.flags = SWV_JOBINFO_FALLBACK;
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "fallback on a step that is not"));
    in.flags =
        SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED | SWV_JOBINFO_FALLBACK;
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    in.flags = SWV_JOBINFO_BUILT | 0x10u;
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, sizeof(wire), &out, &err), -1);
    assert_non_null(strstr(err.text, "unknown flags 0x11"));
}

/* Version 3, a step with NIC limits: round trip with and without a
 * lease, and the refusals of limits out of range or without the flag. */
static void test_jobinfo_limits(void **state)
{
    static char lease[] = "vnib1.eyJ2IjoxfQ.c2ln-_";
    struct swv_jobinfo in = {.flags = SWV_JOBINFO_BUILT | SWV_JOBINFO_LIMITS,
                             .job_id = 42,
                             .step_id = 7,
                             .job_resv = 1001,
                             .step_resv = 1002},
                       out;
    uint8_t wire[SWV_JOBINFO_WIRE_LIMITS + sizeof(lease)];
    vnib_error_t err = {0};
    size_t n;

    (void)state;
    for (int r = 0; r < SWV_RSRC_COUNT; r++)
        in.limits.def[r] = in.limits.res[r] = in.limits.max[r] = -1;
    in.limits.depth = 4;
    in.limits.res[6] = 8;     /* res_tles */
    in.limits.max[5] = 65535; /* max_les */
    n = swv_jobinfo_wire_size(&in);
    assert_int_equal(n, SWV_JOBINFO_WIRE_LIMITS);
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(wire[7], 3);
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), 0);
    assert_null(out.lease);
    assert_int_equal(out.flags, in.flags);
    assert_int_equal(out.step_resv, 1002);
    assert_int_equal(out.limits.depth, 4);
    assert_int_equal(out.limits.res[6], 8);
    assert_int_equal(out.limits.max[5], 65535);
    assert_int_equal(out.limits.def[0], -1);
    /* with a lease */
    in.lease = lease;
    n = swv_jobinfo_wire_size(&in);
    assert_int_equal(n, SWV_JOBINFO_WIRE_LIMITS + strlen(lease));
    swv_jobinfo_encode(&in, wire);
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), 0);
    assert_string_equal(out.lease, lease);
    assert_int_equal(out.limits.res[6], 8);
    swv_jobinfo_clear(&out);
    assert_int_equal(swv_jobinfo_decode(wire, n - 1, &out, &err), -1);
    /* a res_ above 65535 */
    wire[36 + 4 * 14] = 1;
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), -1);
    assert_non_null(strstr(err.text, "limit out of range"));
    wire[36 + 4 * 14] = 0;
    /* depth 0 */
    wire[36 + 4 * 24 + 3] = 0;
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), -1);
    wire[36 + 4 * 24 + 3] = 4;
    /* the flag without version 3, version 3 without the flag */
    wire[11] &= (uint8_t)~SWV_JOBINFO_LIMITS;
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), -1);
    assert_non_null(strstr(err.text, "limits flag"));
    wire[11] |= SWV_JOBINFO_LIMITS;
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), 0);
    swv_jobinfo_clear(&out);
    /* limits on a step that is not reserved */
    wire[11] |= SWV_JOBINFO_UNISOLATED;
    assert_int_equal(swv_jobinfo_decode(wire, n, &out, &err), -1);
    assert_non_null(strstr(err.text, "not reserved"));
}

/* Version 2, with the step's lease: round trip, copy, and each refusal;
 * version 1 still decodes (a step packed before leases). */
static void test_jobinfo_lease(void **state)
{
    static const char lease[] = "vnib1.eyJ2IjoxfQ.c2ln-_";
    struct swv_jobinfo in = {.flags = SWV_JOBINFO_BUILT,
                             .job_id = 42,
                             .step_id = 7,
                             .job_resv = 1001,
                             .step_resv = 1002};
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

/* ---- the release outbox (swv_outbox.c) ------------------------------------
 * A stand-in for the broker: it answers `status` (-1: no answer), and
 * while `hold` is set it waits before answering, so that the test knows
 * which release the thread is sending. */
struct fake_broker {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool hold;
    bool holding; /* a send waits on hold */
    int status;
    char sent[16][32]; /* what was sent, in order */
    int nsent;
    int done; /* done callbacks of answered releases */
};

static int fake_send(void *arg, const struct swv_release *r, vnib_error_t *errp)
{
    struct fake_broker *b = arg;
    int status;

    pthread_mutex_lock(&b->lock);
    b->holding = true;
    pthread_cond_broadcast(&b->cond);
    while (b->hold)
        pthread_cond_wait(&b->cond, &b->lock);
    b->holding = false;
    status = b->status;
    if (b->nsent < 16)
        entry_name(r, b->sent[b->nsent++], sizeof(b->sent[0]));
    pthread_mutex_unlock(&b->lock);
    if (status < 0) {
        errno = ECONNREFUSED;
        errprintf(errp, "no broker");
    }
    return status;
}

static void fake_done(void *arg,
                      const struct swv_release *r,
                      int status,
                      double ms,
                      const char *error)
{
    struct fake_broker *b = arg;

    (void)r;
    (void)ms;
    (void)error;
    pthread_mutex_lock(&b->lock);
    if (status >= 100)
        b->done++;
    pthread_mutex_unlock(&b->lock);
}

static bool exists(const char *dir, const char *name)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* Wait (at most 10 s) until the outbox holds n releases. */
static void wait_pending(struct swv_outbox *ob, int n)
{
    for (int i = 0; i < 1000 && swv_outbox_pending(ob) != n; i++)
        usleep(10000);
    assert_int_equal(swv_outbox_pending(ob), n);
}

/* Releases are files until the broker answered; a job's release drops
 * its steps' pending ones; what one slurmctld left, the next sends, in
 * order; a refusal (4xx) is an answer, no answer is retried. */
static void test_outbox(void **state)
{
    char dir[] = "/tmp/test_swv_ob.XXXXXX", sub[64];
    struct fake_broker b = {.lock = PTHREAD_MUTEX_INITIALIZER,
                            .cond = PTHREAD_COND_INITIALIZER,
                            .hold = true,
                            .status = -1};
    struct swv_release plug = {.job_id = 4, .resv = 40};
    struct swv_release s50 = {.step = true, .job_id = 5, .step_id = 0};
    struct swv_release s61 = {.step = true, .job_id = 6, .step_id = 1};
    struct swv_release j5 = {.job_id = 5, .resv = 77};
    vnib_error_t err = {0};
    struct swv_outbox *ob;
    struct stat st;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/outbox", dir);
    ob = swv_outbox_create(sub, fake_send, fake_done, &b, &err);
    assert_non_null(ob);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* The thread takes the first release and waits in the broker. */
    assert_int_equal(swv_outbox_add(ob, &plug, &err), 0);
    pthread_mutex_lock(&b.lock);
    while (!b.holding)
        pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    assert_int_equal(swv_outbox_add(ob, &s50, &err), 0);
    usleep(10000);
    assert_int_equal(swv_outbox_add(ob, &s61, &err), 0);
    usleep(10000);
    assert_true(exists(sub, "step.5.0"));
    assert_int_equal(swv_outbox_add(ob, &j5, &err), 0);
    assert_false(exists(sub, "step.5.0")); /* released with its job */
    assert_true(exists(sub, "job.4.40"));
    assert_true(exists(sub, "step.6.1"));
    assert_true(exists(sub, "job.5.77"));
    assert_int_equal(swv_outbox_pending(ob), 3);
    /* a job ended twice (the second time not knowing its reservation) */
    j5.resv = 0;
    assert_int_equal(swv_outbox_add(ob, &j5, &err), 0);
    assert_false(exists(sub, "job.5.0"));
    assert_int_equal(swv_outbox_pending(ob), 3);
    /* No answer: everything stays, for the next slurmctld. */
    pthread_mutex_lock(&b.lock);
    b.hold = false;
    pthread_cond_broadcast(&b.cond);
    pthread_mutex_unlock(&b.lock);
    swv_outbox_destroy(ob);
    assert_true(exists(sub, "job.4.40"));
    assert_true(exists(sub, "step.6.1"));
    assert_true(exists(sub, "job.5.77"));

    /* The next one sends them in their order; a 400 is an answer too. */
    b.nsent = 0;
    b.status = 400;
    ob = swv_outbox_create(sub, fake_send, fake_done, &b, &err);
    assert_non_null(ob);
    wait_pending(ob, 0);
    assert_int_equal(b.nsent, 3);
    assert_string_equal(b.sent[0], "job.4.40");
    assert_string_equal(b.sent[1], "step.6.1");
    assert_string_equal(b.sent[2], "job.5.77");
    assert_int_equal(b.done, 3);
    assert_false(exists(sub, "job.4.40"));
    assert_false(exists(sub, "job.5.77"));
    swv_outbox_destroy(ob);
    assert_int_equal(rmdir(sub), 0); /* nothing else was left in it */
    rmdir(dir);
}

/* A step's release being sent when its job's release comes is dropped
 * after that send, answered or not: the job's release covers it. */
static void test_outbox_superseded(void **state)
{
    char dir[] = "/tmp/test_swv_su.XXXXXX", sub[64], path[128];
    struct fake_broker b = {.lock = PTHREAD_MUTEX_INITIALIZER,
                            .cond = PTHREAD_COND_INITIALIZER,
                            .hold = true,
                            .status = -1};
    struct swv_release s30 = {.step = true, .job_id = 3, .step_id = 0};
    struct swv_release j3 = {.job_id = 3, .resv = 30};
    vnib_error_t err = {0};
    struct swv_outbox *ob;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/outbox", dir);
    ob = swv_outbox_create(sub, fake_send, fake_done, &b, &err);
    assert_non_null(ob);
    assert_int_equal(swv_outbox_add(ob, &s30, &err), 0);
    pthread_mutex_lock(&b.lock);
    while (!b.holding)
        pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    assert_int_equal(swv_outbox_add(ob, &j3, &err), 0);
    assert_true(exists(sub, "step.3.0")); /* being sent */
    pthread_mutex_lock(&b.lock);
    b.hold = false;
    pthread_cond_broadcast(&b.cond);
    pthread_mutex_unlock(&b.lock);
    wait_pending(ob, 1);
    assert_false(exists(sub, "step.3.0"));
    assert_true(exists(sub, "job.3.30"));
    swv_outbox_destroy(ob);
    snprintf(path, sizeof(path), "%s/job.3.30", sub);
    unlink(path);
    rmdir(sub);
    rmdir(dir);
}

/* Before a job is reserved again, its pending releases go first, from
 * the caller's thread, whatever the outbox's thread is doing. */
static void test_outbox_drain(void **state)
{
    char dir[] = "/tmp/test_swv_dr.XXXXXX", sub[64];
    struct fake_broker down = {.lock = PTHREAD_MUTEX_INITIALIZER,
                               .cond = PTHREAD_COND_INITIALIZER,
                               .status = -1};
    struct fake_broker up = {.lock = PTHREAD_MUTEX_INITIALIZER,
                             .cond = PTHREAD_COND_INITIALIZER,
                             .status = 202};
    struct swv_release j9 = {.job_id = 9, .resv = 3};
    struct swv_release j8 = {.job_id = 8, .resv = 2};
    vnib_error_t err = {0};
    struct swv_outbox *ob;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/outbox", dir);
    ob = swv_outbox_create(sub, fake_send, fake_done, &down, &err);
    assert_non_null(ob);
    assert_int_equal(swv_outbox_add(ob, &j9, &err), 0);
    assert_int_equal(swv_outbox_add(ob, &j8, &err), 0);
    /* no answer from the drain's broker either: it stays */
    assert_int_equal(swv_outbox_drain(ob, 9, fake_send, &down, &err), -1);
    assert_true(exists(sub, "job.9.3"));
    /* answered: gone, the other job's kept */
    assert_int_equal(swv_outbox_drain(ob, 9, fake_send, &up, &err), 0);
    assert_false(exists(sub, "job.9.3"));
    assert_true(exists(sub, "job.8.2"));
    assert_int_equal(swv_outbox_pending(ob), 1);
    assert_int_equal(swv_outbox_drain(ob, 7, fake_send, &up, &err), 0);
    swv_outbox_destroy(ob);
    {
        char path[128];

        snprintf(path, sizeof(path), "%s/job.8.2", sub);
        unlink(path);
    }
    rmdir(sub);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_config_broker_hold),
        cmocka_unit_test(test_network),
        cmocka_unit_test(test_step_fallback),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_jobinfo_limits),
        cmocka_unit_test(test_expand_node),
        cmocka_unit_test(test_jobinfo_round_trip),
        cmocka_unit_test(test_jobinfo_lease),
        cmocka_unit_test(test_jobdata),
        cmocka_unit_test(test_spool),
        cmocka_unit_test(test_outbox),
        cmocka_unit_test(test_outbox_superseded),
        cmocka_unit_test(test_outbox_drain),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
