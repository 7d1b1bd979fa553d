/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the route table and matcher (server/http/route.c,
 * server/api/routes.c), and the promise that server/api/openapi.yaml documents
 * every route.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#include <cmocka.h>

#include "server/api/routes.h"
#include "server/http/auth.h"
#include "server/http/route.h"

static void test_exact_match(void **state)
{
    struct route_params p;
    char allow[64];
    (void)state;
    int i =
        route_match(&api_routes, "GET", "/healthz", &p, allow, sizeof(allow));
    assert_true(i >= 0);
    assert_string_equal(api_routes.rows[i].pattern, "/healthz");
    assert_int_equal(p.count, 0);
}

static void test_not_found_and_method(void **state)
{
    struct route_params p;
    char allow[64];
    (void)state;
    assert_int_equal(
        route_match(&api_routes, "GET", "/nope", &p, allow, sizeof(allow)), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(
        route_match(&api_routes, "GET", "/healthz/", &p, allow, sizeof(allow)),
        -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(
        route_match(&api_routes, "GET", "", &p, allow, sizeof(allow)), -1);
    assert_int_equal(
        route_match(&api_routes, "POST", "/healthz", &p, allow, sizeof(allow)),
        -1);
    assert_int_equal(errno, EOPNOTSUPP);
    assert_string_equal(allow, "GET");
}

/* Every row is reachable: its own pattern (with sample parameter values)
 * matches that row and no earlier one.
 */
static void test_every_row_matches_itself(void **state)
{
    (void)state;
    for (size_t i = 0; i < api_routes.count; i++) {
        char path[256];
        size_t o = 0;
        for (const char *s = api_routes.rows[i].pattern;
             *s && o < sizeof(path) - 8;
             s++) {
            if (*s == '{') {
                s = strchr(s, '}');
                memcpy(path + o, "x1", 2);
                o += 2;
                continue;
            }
            path[o++] = *s;
        }
        path[o] = '\0';
        struct route_params p;
        char allow[64];
        assert_int_equal(route_match(&api_routes,
                                     api_routes.rows[i].method,
                                     path,
                                     &p,
                                     allow,
                                     sizeof(allow)),
                         (int)i);
    }
}

/* A job token (ROLE_JOB) reaches its job's steps and nothing else: the
 * PUT, GET and DELETE of one step, and no other row.
 */
static void test_job_role_only_steps(void **state)
{
    static const char steps[] = "/v1/reservations/{job_id}/steps/{step_id}";
    int found = 0;
    (void)state;
    for (size_t i = 0; i < api_routes.count; i++) {
        const struct route *r = &api_routes.rows[i];
        if (!(r->roles & ROLE_JOB))
            continue;
        if (strcmp(r->pattern, steps)
            || (strcmp(r->method, "PUT") && strcmp(r->method, "GET")
                && strcmp(r->method, "DELETE")))
            fail_msg("%s %s admits job tokens", r->method, r->pattern);
        found++;
    }
    assert_int_equal(found, 3);
}

/* The OpenAPI document lists every route: its path as a key under
 * `paths:` and the method as a key beneath it.
 */
static void test_openapi_in_sync(void **state)
{
    const char *path = getenv("VNIB_OPENAPI");
    FILE *f = fopen(path ? path : "server/api/openapi.yaml", "r");
    char *doc = NULL;
    size_t len = 0;
    (void)state;
    assert_non_null(f);
    assert_int_equal(getdelim(&doc, &len, '\0', f) > 0, 1);
    fclose(f);
    for (size_t i = 0; i < api_routes.count; i++) {
        char key[300];
        snprintf(key, sizeof(key), "\n  %s:\n", api_routes.rows[i].pattern);
        const char *at = strstr(doc, key);
        if (!at) {
            fail_msg("openapi: path %s is not documented",
                     api_routes.rows[i].pattern);
            return; /* fail_msg does not return; the analyzer cannot tell */
        }
        at += strlen(key);
        /* The path's block ends at the next line indented by two. */
        const char *end = at;
        while ((end = strchr(end, '\n')) && end[1] == ' ' && end[2] == ' '
               && end[3] == ' ')
            end++;
        char method[16];
        size_t m = 0;
        for (const char *s = api_routes.rows[i].method;
             *s && m < sizeof(method) - 1;
             s++)
            method[m++] = (char)tolower((unsigned char)*s);
        method[m] = '\0';
        snprintf(key, sizeof(key), "    %s:", method);
        const char *hit = strstr(at, key);
        if (!hit || (end && hit > end))
            fail_msg("openapi: %s %s is not documented",
                     api_routes.rows[i].method,
                     api_routes.rows[i].pattern);
    }
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_match),
        cmocka_unit_test(test_not_found_and_method),
        cmocka_unit_test(test_every_row_matches_itself),
        cmocka_unit_test(test_job_role_only_steps),
        cmocka_unit_test(test_openapi_in_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
