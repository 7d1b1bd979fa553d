/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the text of `vnibctl status` (cli/statusfmt.c): RFC 3339
 * times, ages, the share in use, and the whole summary of a reply, with
 * its limits' hints, text from the broker made harmless, and members the
 * reply lacks.  The module and its table helper are compiled in.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/statusfmt.c"
#include "cli/table.c"
#include "tests/unit/common/assert_fails.h"

static void test_parse_time(void **state)
{
    vnib_error_t err = {0};
    double t = 0;

    (void)state;
    assert_int_equal(statusfmt_parse_time("2026-05-01T10:00:00Z", &t, &err), 0);
    assert_true(t == 1777629600.0);
    assert_int_equal(statusfmt_parse_time("2026-05-01T10:00:00.25Z", &t, &err),
                     0);
    assert_true(t == 1777629600.25);
    assert_int_equal(
        statusfmt_parse_time("2026-05-01T12:30:00+02:30", &t, &err), 0);
    assert_true(t == 1777629600.0);
    assert_int_equal(
        statusfmt_parse_time("2026-05-01T09:00:00-01:00", &t, &err), 0);
    assert_true(t == 1777629600.0);
    static const char *const bad[] = {
        "",
        "2026-05-01",
        "2026-05-01T10:00:00",
        "2026-05-01T10:00:00ZZ",
        "2026-13-01T10:00:00Z",
        "2026-05-00T10:00:00Z",
        "2026-05-01T24:00:00Z",
        "2026-05-01T10:00:00.Z",
        "2026-05-01T10:00:00+2:00",
        "2026-5-01T10:00:00Z",
        "20260501T100000Z",
        "now",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_fails(statusfmt_parse_time(bad[i], &t, &err), EINVAL);
        assert_non_null(strstr(err.text, "not an RFC 3339 time"));
    }
    assert_fails(statusfmt_parse_time(NULL, &t, NULL), EINVAL);
}

static void test_age(void **state)
{
    static const struct {
        double s;
        const char *text;
    } cases[] = {
        {0, "0s"},
        {-5, "0s"},
        {0.9, "0s"},
        {59.9, "59s"},
        {60, "1m00s"},
        {302, "5m02s"},
        {3599, "59m59s"},
        {3600, "1h00m"},
        {11100, "3h05m"},
        {86399, "23h59m"},
        {86400 + 3 * 3600 + 59, "1d03h"},
        {400 * 86400.0, "400d00h"},
    };
    char buf[24];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(statusfmt_age(cases[i].s, buf, sizeof(buf)),
                            cases[i].text);
    assert_string_equal(statusfmt_age(NAN, buf, sizeof(buf)), "0s");
    assert_string_equal(statusfmt_age(INFINITY, buf, sizeof(buf)), "0s");
}

static void test_used_percent(void **state)
{
    (void)state;
    assert_int_equal(statusfmt_used_percent(6, 10), 40);
    assert_int_equal(statusfmt_used_percent(0, 3), 100);
    assert_int_equal(statusfmt_used_percent(3, 3), 0);
    assert_int_equal(statusfmt_used_percent(2, 3), 33);
    assert_int_equal(statusfmt_used_percent(1, 3), 67);
    assert_int_equal(statusfmt_used_percent(0, 0), 0);
    assert_int_equal(statusfmt_used_percent(5, 4), 0);
}

/* statusfmt_write of the JSON text into a new string (the caller frees). */
static char *summary(const char *text, int *rcp, vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *st = json_loads(text, JSON_DECODE_ANY, &jerr);
    char *s = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&s, &size);

    assert_non_null(st);
    assert_non_null(f);
    *rcp = statusfmt_write(f, st, errp);
    assert_int_equal(fclose(f), 0);
    json_decref(st);
    return s;
}

static const char full_reply[] =
    "{\"time\": \"2026-05-01T10:00:00Z\", \"replica\": \"b1:42\","
    " \"version\": \"1.2.3\","
    " \"pool\": {\"total\": 64, \"free\": 48, \"active\": 10,"
    "  \"quarantined\": 6, \"outside_pool\": 1},"
    " \"history\": {\"interval_s\": 5, \"samples\": []},"
    " \"quarantine\": {\"reservations\": 3, \"vnis\": 6,"
    "  \"oldest_since\": \"2026-05-01T06:55:00.5Z\","
    "  \"items\": ["
    "   {\"job_id\": \"77\", \"reservation_id\": 1, \"vnis\": [1030, 1031],"
    "    \"since\": \"2026-05-01T06:55:00.5Z\","
    "    \"waiting\": {\"count\": 2, \"nodes\": \"n[5,13]\"}},"
    "   {\"job_id\": \"78\", \"step_id\": \"0\", \"reservation_id\": 2,"
    "    \"vnis\": [1040], \"since\": \"2026-05-01T09:59:58Z\","
    "    \"waiting\": {\"count\": 1, \"nodes\": \"n7\"}}]},"
    " \"drained\": {\"count\": 1, \"nodes\": \"n5\", \"items\": ["
    "   {\"node\": \"n5\", \"reason\": \"EBUSY\\u001b[2J\\nx\","
    "    \"since\": \"2026-04-29T09:00:00Z\"}]},"
    " \"fabric_manager\": {\"connection\": \"down\","
    "  \"last_success\": \"2026-05-01T09:59:30Z\","
    "  \"last_error\": {\"time\": \"2026-05-01T09:59:55Z\","
    "   \"message\": \"connect failed\"},"
    "  \"queue\": {\"depth\": 1, \"oldest_s\": 12.7},"
    "  \"last_reconcile\": {\"at\": \"2026-05-01T09:58:00Z\","
    "   \"released\": 2, \"lost\": 0, \"foreign\": 1, \"error\": null},"
    "  \"leader\": {\"replica\": \"b2:7\", \"since\": "
    "\"2026-05-01T09:00:00Z\"}, \"replica\": \"b1:42\", \"leading\": false},"
    " \"database\": {\"up\": true, \"figures_age_s\": 2.4}}";

static void test_write_full(void **state)
{
    vnib_error_t err = {0};
    int rc;
    char *s = summary(full_reply, &rc, &err);

    (void)state;
    assert_int_equal(rc, 0);
    assert_string_equal(
        s,
        "broker:        b1:42 (vnibrokerd 1.2.3) at 2026-05-01T10:00:00Z\n"
        "pool:          48 free, 10 active, 6 quarantined, 1 outside, 64 "
        "total: 25% in use\n"
        "quarantine:    3 reservations, 6 VNIs, oldest 3h04m\n"
        "drained:       1 node: n5\n"
        "fm:            down, last success 30s ago\n"
        "fm queue:      1 operation, oldest 12s\n"
        "fm last error: 5s ago: connect failed\n"
        "fm reconcile:  2m00s ago: 2 released, 0 lost, 1 foreign\n"
        "leader:        b2:7 for 1h00m; this replica follows\n"
        "database:      up, figures read 2s ago\n"
        "\n"
        "quarantined reservations, oldest first (the oldest 2 of 3: "
        "--quarantine-limit N lists more):\n"
        "JOB_ID  STEP  VNIS       AGE    WAITING  NODES\n"
        "77      -     1030,1031  3h04m  2        n[5,13]\n"
        "78      0     1040       2s     1        n7\n"
        "\n"
        "drained nodes, newest first:\n"
        "NODE  FOR    SINCE                 REASON\n"
        "n5    2d01h  2026-04-29T09:00:00Z  EBUSY?[2J?x\n");
    free(s);
}

/* An idle broker: nothing quarantined or drained, no FM, no leader, and
 * a reply that lacks members prints "-" for them.
 */
static void test_write_sparse(void **state)
{
    vnib_error_t err = {0};
    int rc;
    char *s = summary(
        "{\"time\": \"2026-05-01T10:00:00Z\", \"pool\": {\"total\": 0,"
        " \"free\": 0}, \"quarantine\": {\"reservations\": 0, \"vnis\": 0,"
        " \"oldest_since\": null, \"items\": []}, \"drained\": {\"count\": 0,"
        " \"nodes\": \"\", \"items\": []}, \"fabric_manager\": "
        "{\"connection\": \"disabled\", \"last_success\": null, "
        "\"last_error\": null, \"queue\": {\"depth\": 0, \"oldest_s\": 0},"
        " \"last_reconcile\": null, \"leader\": null, \"leading\": false},"
        " \"database\": {\"up\": false, \"figures_age_s\": null}}",
        &rc,
        &err);

    (void)state;
    assert_int_equal(rc, 0);
    /* Line by line, and nothing after the last: no empty tables. */
    static const char *const want[] = {
        "broker:        - (vnibrokerd -) at 2026-05-01T10:00:00Z",
        ("pool:          0 free, - active, - quarantined, - outside, 0 "
         "total: 0% in use"),
        "quarantine:    0 reservations, 0 VNIs, oldest -",
        "drained:       0 nodes",
        "fm:            disabled",
        "fm queue:      0 operations, oldest 0s",
        "fm last error: -",
        "fm reconcile:  -",
        "leader:        none; this replica follows",
        "database:      down",
    };
    const char *p = s;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t n = strlen(want[i]);
        assert_memory_equal(p, want[i], n);
        assert_int_equal(p[n], '\n');
        p += n + 1;
    }
    assert_string_equal(p, "");
    free(s);
}

static void test_write_refuses(void **state)
{
    vnib_error_t err = {0};
    int rc;
    char *s;

    (void)state;
    errno = 0;
    s = summary("[1, 2]", &rc, &err);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EPROTO);
    assert_non_null(strstr(err.text, "not a JSON object"));
    free(s);
    /* Without the reply's time, ages are unknown, not made up. */
    s = summary(
        "{\"quarantine\": {\"reservations\": 1, \"vnis\": 1,"
        " \"oldest_since\": \"2026-05-01T06:55:00Z\"}}",
        &rc,
        &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(s,
                           "quarantine:    1 reservation, 1 VNI, "
                           "oldest -\n"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_age),
        cmocka_unit_test(test_used_percent),
        cmocka_unit_test(test_write_full),
        cmocka_unit_test(test_write_sparse),
        cmocka_unit_test(test_write_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
