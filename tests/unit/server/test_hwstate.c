/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the hardware-collectives state and cause tables
 * (server/hwstate.c): each C table lists exactly the values that the
 * migrations' CHECK constraints allow (read from the schema compiled into
 * the binary, the last migration that states each list), so that a value
 * added on one side only fails here rather than in the database; and the
 * reasons of failed Fabric Manager calls, which name the class and the
 * HTTP status and never the FM's text.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/hwstate.h"
#include "server/store/schema.h"

/* The quoted values of the last "CHECK (<column> IN (...))" in the
 * migrations, into vals (n at most max); returns how many.
 */
static size_t check_list(const char *column, char vals[][64], size_t max)
{
    char key[96];
    const char *list = NULL;
    size_t n = 0;

    snprintf(key, sizeof(key), "CHECK (%s IN (", column);
    for (size_t i = 0; i < schema_migrations_count; i++)
        for (const char *p = schema_migrations[i].sql;
             (p = strstr(p, key)) != NULL;
             p++)
            list = p + strlen(key);
    /* Returns after fail_msg() too, for the static analyzer's sake. */
    if (!list) {
        fail_msg("no \"%s\" in the migrations", key);
        return 0;
    }
    const char *end = strstr(list, "))");
    if (!end) {
        fail_msg("\"%s\" is not closed by \"))\"", key);
        return 0;
    }
    for (const char *p = list; (p = memchr(p, '\'', (size_t)(end - p)));) {
        const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));
        assert_non_null(q);
        assert_true(n < max && (size_t)(q - p - 1) < 64);
        memcpy(vals[n], p + 1, (size_t)(q - p - 1));
        vals[n][q - p - 1] = '\0';
        n++;
        p = q + 1;
    }
    return n;
}

static bool listed(char vals[][64], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(vals[i], name))
            return true;
    return false;
}

static void test_states_match_check(void **state)
{
    char vals[32][64];
    size_t n = check_list("hwcoll_state", vals, 32);
    (void)state;

    assert_int_equal(n, HWSTATE_COUNT);
    for (int s = 0; s < HWSTATE_COUNT; s++) {
        enum hwstate back;
        assert_non_null(hwstate_name((enum hwstate)s));
        assert_true(listed(vals, n, hwstate_name((enum hwstate)s)));
        assert_true(hwstate_parse(hwstate_name((enum hwstate)s), &back));
        assert_int_equal(back, s);
    }
    enum hwstate ignore;
    assert_false(hwstate_parse("timed out", &ignore));
    assert_false(hwstate_parse(NULL, &ignore));
    assert_null(hwstate_name(HWSTATE_COUNT));
}

static void test_causes_match_check(void **state)
{
    char vals[32][64];
    size_t n = check_list("hwcoll_cause", vals, 32);
    (void)state;

    /* NONE is SQL NULL, which the CHECK lets through unlisted. */
    assert_int_equal(n, HWSTATE_CAUSE_COUNT - 1);
    assert_null(hwstate_cause_code(HWSTATE_CAUSE_NONE));
    assert_null(hwstate_cause_phrase(HWSTATE_CAUSE_NONE));
    for (int c = 1; c < HWSTATE_CAUSE_COUNT; c++) {
        const char *code = hwstate_cause_code((enum hwstate_cause)c);
        assert_non_null(code);
        assert_true(listed(vals, n, code));
        /* A fixed reason for the causes no failed call explains. */
        bool of_call =
            c == HWSTATE_CAUSE_TIMEOUT || c == HWSTATE_CAUSE_UNREACHABLE
            || c == HWSTATE_CAUSE_NO_ADDRESSES || c == HWSTATE_CAUSE_REFUSED;
        if (of_call)
            assert_null(hwstate_cause_phrase((enum hwstate_cause)c));
        else
            assert_non_null(hwstate_cause_phrase((enum hwstate_cause)c));
        for (int d = 1; d < c; d++)
            assert_string_not_equal(code,
                                    hwstate_cause_code((enum hwstate_cause)d));
    }
}

/* The stored causes of a failed call, from its errno, are those of
 * earlier releases; and the fixed reasons of the causes no call explains,
 * word for word.
 */
static void test_causes(void **state)
{
    (void)state;

    assert_int_equal(hwstate_cause_of_errno(ETIMEDOUT), HWSTATE_CAUSE_TIMEOUT);
    assert_int_equal(hwstate_cause_of_errno(ECONNREFUSED),
                     HWSTATE_CAUSE_UNREACHABLE);
    assert_int_equal(hwstate_cause_of_errno(ENOSPC),
                     HWSTATE_CAUSE_NO_ADDRESSES);
    assert_int_equal(hwstate_cause_of_errno(EPROTO), HWSTATE_CAUSE_REFUSED);
    assert_int_equal(hwstate_cause_of_errno(EACCES), HWSTATE_CAUSE_REFUSED);
    assert_int_equal(hwstate_cause_of_errno(EIO), HWSTATE_CAUSE_REFUSED);
    assert_string_equal(
        hwstate_cause_phrase(HWSTATE_CAUSE_TIMEOUT_NO_RESERVATION),
        "timeout; the Fabric Manager made no reservation");
    assert_string_equal(
        hwstate_cause_phrase(HWSTATE_CAUSE_TIMEOUT_LATE_DELETED),
        "timeout; the late Fabric Manager reservation was deleted");
    assert_string_equal(hwstate_cause_phrase(HWSTATE_CAUSE_JOB_ENDED),
                        "the job ended before the Fabric Manager was asked");
}

/* What a reservation says of a failed call: the class and the status (or
 * a timeout's limit), never the message, which may quote the FM.
 */
static void test_fault_reasons(void **state)
{
    static const struct {
        enum fmc_fault fault;
        long status;
        long timeout_ms;
        const char *want;
    } cases[] = {
        {FMC_FAULT_CREDENTIALS,
         401,
         0,
         "Fabric Manager refused our credentials (HTTP 401)"},
        {FMC_FAULT_CREDENTIALS,
         403,
         0,
         "Fabric Manager refused our credentials (HTTP 403)"},
        {FMC_FAULT_REQUEST,
         400,
         0,
         "Fabric Manager refused the request (HTTP 400)"},
        {FMC_FAULT_NOT_FOUND,
         404,
         0,
         "Fabric Manager has no such job (HTTP 404)"},
        {FMC_FAULT_NO_ADDRESSES,
         507,
         0,
         "Fabric Manager out of multicast addresses (HTTP 507)"},
        {FMC_FAULT_UNAVAILABLE,
         503,
         0,
         "Fabric Manager unavailable (HTTP 503)"},
        {FMC_FAULT_UNAVAILABLE,
         500,
         0,
         "Fabric Manager unavailable (HTTP 500)"},
        {FMC_FAULT_REPLY,
         200,
         0,
         "Fabric Manager sent a reply the broker cannot use (HTTP 200)"},
        {FMC_FAULT_REPLY,
         0,
         0,
         "Fabric Manager sent a reply the broker cannot use"},
        {FMC_FAULT_TIMEOUT, 0, 2000, "Fabric Manager timed out after 2000 ms"},
        {FMC_FAULT_TIMEOUT, 0, 0, "Fabric Manager timed out"},
        {FMC_FAULT_CONN_REFUSED,
         0,
         0,
         "Fabric Manager unreachable (connection refused)"},
        {FMC_FAULT_HOST_UNKNOWN,
         0,
         0,
         "Fabric Manager unreachable (host name not resolved)"},
        {FMC_FAULT_UNREACHABLE,
         0,
         0,
         "Fabric Manager unreachable (no connection)"},
        {FMC_FAULT_DROPPED,
         0,
         0,
         "Fabric Manager unreachable (connection dropped)"},
        {FMC_FAULT_TLS_VERIFY,
         0,
         0,
         "Fabric Manager not trusted (its TLS certificate did not verify)"},
        {FMC_FAULT_TLS, 0, 0, "Fabric Manager TLS handshake failed"},
        {FMC_FAULT_OTHER, 0, 0, "Fabric Manager call failed in the broker"},
        {(enum fmc_fault)99, 0, 0, "Fabric Manager call failed in the broker"},
    };
    char buf[HWSTATE_REASON_MAX];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fmc_error e = {.fault = cases[i].fault,
                              .status = cases[i].status,
                              .timeout_ms = cases[i].timeout_ms};
        snprintf(e.msg.text,
                 sizeof(e.msg.text),
                 "FM POST /fabric/collectives/jobs: HTTP %ld: BODY-MARKER",
                 cases[i].status);
        hwstate_fault_reason(&e, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
        assert_null(strstr(buf, "BODY-MARKER"));
    }
    /* A 401 and a 503 never read alike. */
    struct fmc_error a = {.fault = FMC_FAULT_CREDENTIALS, .status = 401};
    struct fmc_error b = {.fault = FMC_FAULT_UNAVAILABLE, .status = 503};
    char other[HWSTATE_REASON_MAX];
    hwstate_fault_reason(&a, buf, sizeof(buf));
    hwstate_fault_reason(&b, other, sizeof(other));
    assert_string_not_equal(buf, other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states_match_check),
        cmocka_unit_test(test_causes_match_check),
        cmocka_unit_test(test_causes),
        cmocka_unit_test(test_fault_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
