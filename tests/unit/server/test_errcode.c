/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the error code table (server/http/errcode.c), and the
 * promise that server/api/openapi.yaml lists exactly its codes: the
 * Error schema's code enum, in the table's order, each line's comment the
 * code's HTTP status.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/http/errcode.h"

/* Every code has a snake_case name of its own, found again by that name,
 * a 4xx or 5xx status, and a Retry-After when it is a 503; ERRCODE_NONE
 * and values outside the enum have no name.
 */
static void test_table_rows(void **state)
{
    (void)state;
    for (int c = ERRCODE_NONE + 1; c < ERRCODE_COUNT; c++) {
        const char *name = errcode_name((enum errcode)c);
        assert_non_null(name);
        assert_true(name[0] >= 'a' && name[0] <= 'z');
        assert_int_equal(strspn(name, "abcdefghijklmnopqrstuvwxyz_"),
                         strlen(name));
        assert_int_equal(errcode_by_name(name), c);
        int status = errcode_status((enum errcode)c);
        assert_true(status >= 400 && status <= 599);
        /* Every 503, and only a 503, tells the client when to retry. */
        assert_int_equal(errcode_retry_after((enum errcode)c) > 0,
                         status == 503);
    }
    assert_int_equal(errcode_retry_after(ERRCODE_VNI_POOL_EXHAUSTED), 30);
    assert_int_equal(errcode_retry_after(ERRCODE_UNAVAILABLE), 1);
    assert_null(errcode_name(ERRCODE_NONE));
    assert_null(errcode_name(ERRCODE_COUNT));
    assert_int_equal(errcode_status(ERRCODE_NONE), 500);
    assert_int_equal(errcode_by_name("no_such_code"), ERRCODE_NONE);
    assert_int_equal(errcode_by_name(NULL), ERRCODE_NONE);
}

/* The errnos of the style guide's table, and the pipeline's own; an
 * errno the table does not name is internal_error.
 */
static void test_errno_defaults(void **state)
{
    static const struct {
        int errnum;
        const char *code;
        int status;
    } want[] = {
        {EINVAL, "bad_request", 400},
        {EPROTO, "invalid_json", 400},
        {EACCES, "unauthorized", 401},
        {EPERM, "forbidden", 403},
        {ENOENT, "not_found", 404},
        {EOPNOTSUPP, "method_not_allowed", 405},
        {EEXIST, "conflict", 409},
        {EALREADY, "conflict", 409},
        {E2BIG, "payload_too_large", 413},
        {EMSGSIZE, "payload_too_large", 413},
        {EPROTONOSUPPORT, "unsupported_media_type", 415},
        {EOVERFLOW, "header_fields_too_large", 431},
        {ENOSPC, "exhausted", 503},
        {EAGAIN, "unavailable", 503},
        {ETIMEDOUT, "unavailable", 503},
        {ESTALE, "schema_outdated", 503},
        {EDQUOT, "database_full", 503},
        {ECANCELED, "deadline_exceeded", 503},
        {EIO, "internal_error", 500},
        {ENOMEM, "internal_error", 500},
        {0, "internal_error", 500},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        enum errcode c = errcode_of_errno(want[i].errnum);
        assert_string_equal(errcode_name(c), want[i].code);
        assert_int_equal(errcode_status(c), want[i].status);
    }
}

/* The lines of the Error schema's code enum in doc: "- name  # status". */
static const char *openapi_enum(const char *doc)
{
    const char *at = strstr(doc, "\n    Error:\n");
    if (at)
        at = strstr(at, "\n            code:\n");
    if (at)
        at = strstr(at, "\n              enum:\n");
    return at ? strchr(at + 1, '\n') + 1 : NULL;
}

/* Compare the enum with the table, in both directions and in order. */
static void test_openapi_in_sync(void **state)
{
    const char *path = getenv("VNIB_OPENAPI");
    FILE *f = fopen(path ? path : "server/api/openapi.yaml", "r");
    char *doc = NULL;
    size_t len = 0;
    int c = ERRCODE_NONE + 1;
    (void)state;
    assert_non_null(f);
    assert_int_equal(getdelim(&doc, &len, '\0', f) > 0, 1);
    fclose(f);
    const char *line = openapi_enum(doc);
    if (!line) {
        fail_msg("openapi: Error's code has no enum");
        return; /* fail_msg does not return; the analyzer cannot tell */
    }
    for (; line && strncmp(line, "                - ", 18) == 0;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char name[64];
        int status = 0;
        if (sscanf(line + 18, "%63[a-z_] # %d", name, &status) != 2)
            fail_msg("openapi: a code enum line is not \"- code  # status\"");
        if (c >= ERRCODE_COUNT)
            fail_msg("openapi: %s is not in server/http/errcode.c", name);
        if (strcmp(name, errcode_name((enum errcode)c)) != 0)
            fail_msg("openapi: %s where errcode.c has %s",
                     name,
                     errcode_name((enum errcode)c));
        if (status != errcode_status((enum errcode)c))
            fail_msg("openapi: %s is %d, errcode.c says %d",
                     name,
                     status,
                     errcode_status((enum errcode)c));
        c++;
    }
    if (c < ERRCODE_COUNT)
        fail_msg("openapi: %s (errcode.c) is not documented",
                 errcode_name((enum errcode)c));
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_errno_defaults),
        cmocka_unit_test(test_openapi_in_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
