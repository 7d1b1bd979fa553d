/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for lib/hostset.c: node lists as ranges, never expanded.
 *
 * The set must agree with the expanded list (hostlist_contains after
 * hostlist_uniq) on every name of the list and on the names next to them:
 * the number one more or less, a digit more or less ("node1" and
 * "node10"), a leading zero more or less ("node01" and "node1"), another
 * prefix or suffix.  Checked on expressions chosen for each rule (padding,
 * suffixes, names without digits, groups that must be expanded) and on
 * generated ones; then the range counts that show nothing was expanded,
 * and the errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/hostset.h"

/* ---- helpers ----------------------------------------------------------- */

/* name with its last digit run changed: +1, -1, a digit appended or
 * dropped, a leading zero added or dropped; or "x" before or after.  Into
 * out (HOSTLIST_MAX_NAME_LEN + 8 bytes); false when the edit does not
 * apply.
 */
static bool neighbour(const char *name, int edit, char *out, size_t size)
{
    size_t len = strlen(name), end = len, start;

    while (end > 0 && !(name[end - 1] >= '0' && name[end - 1] <= '9'))
        end--;
    start = end;
    while (start > 0 && name[start - 1] >= '0' && name[start - 1] <= '9')
        start--;
    if (edit >= 6) {
        snprintf(out, size, edit == 6 ? "x%s" : "%sx", name);
        return true;
    }
    if (start == end || end - start > 17)
        return false;
    int dig = (int)(end - start);
    unsigned long long v = strtoull(name + start, NULL, 10);
    const char *pre = name, *suf = name + end;
    int plen = (int)start;
    switch (edit) {
        case 0: /* +1, same width */
            snprintf(out, size, "%.*s%0*llu%s", plen, pre, dig, v + 1, suf);
            return true;
        case 1: /* -1, same width */
            if (v == 0)
                return false;
            snprintf(out, size, "%.*s%0*llu%s", plen, pre, dig, v - 1, suf);
            return true;
        case 2: /* a digit appended: node1 -> node10 */
            snprintf(
                out, size, "%.*s%.*s0%s", plen, pre, dig, pre + start, suf);
            return true;
        case 3: /* the last digit dropped: node10 -> node1 */
            if (dig < 2)
                return false;
            snprintf(
                out, size, "%.*s%.*s%s", plen, pre, dig - 1, pre + start, suf);
            return true;
        case 4: /* a leading zero: node1 -> node01 */
            snprintf(
                out, size, "%.*s0%.*s%s", plen, pre, dig, pre + start, suf);
            return true;
        default: /* one leading zero dropped: node01 -> node1 */
            if (dig < 2 || name[start] != '0')
                return false;
            snprintf(out,
                     size,
                     "%.*s%.*s%s",
                     plen,
                     pre,
                     dig - 1,
                     pre + start + 1,
                     suf);
            return true;
    }
}

/* The set of expr agrees with its expanded list on every name and on
 * each name's neighbours.  Returns the set's range count.
 */
static size_t check_agrees(const char *expr)
{
    vnib_error_t e = {0};
    struct hostlist *hl = hostlist_decode(expr, 1000000, &e);
    struct hostset *hs;
    char buf[HOSTLIST_MAX_NAME_LEN + 32];

    if (!hl)
        fail_msg("decode '%s' failed: %s", expr, e.text);
    if (!(hs = hostset_decode(expr, 1000000, &e)))
        fail_msg("hostset '%s' failed: %s", expr, e.text);
    hostlist_uniq(hl);
    for (size_t i = 0; i < hostlist_count(hl); i++) {
        const char *name = hostlist_nth(hl, i);
        if (!hostset_contains(hs, name))
            fail_msg("'%s': member %s not found", expr, name);
        for (int edit = 0; edit < 8; edit++) {
            if (!neighbour(name, edit, buf, sizeof(buf)))
                continue;
            if (hostset_contains(hs, buf) != hostlist_contains(hl, buf))
                fail_msg("'%s': %s (next to %s) is %s the list but %s the set",
                         expr,
                         buf,
                         name,
                         hostlist_contains(hl, buf) ? "in" : "not in",
                         hostset_contains(hs, buf) ? "in" : "not in");
        }
    }
    size_t n = hostset_range_count(hs);
    hostset_destroy(hs);
    hostlist_destroy(hl);
    return n;
}

/* expr is held in want ranges. */
static void check_ranges(const char *expr, size_t want)
{
    size_t got = check_agrees(expr);
    if (got != want)
        fail_msg("'%s': %zu ranges, want %zu", expr, got, want);
}

/* ---- tests ------------------------------------------------------------- */

/* Names that differ by a digit, a leading zero, a prefix or a suffix. */
static void test_neighbours(void **state)
{
    (void)state;
    struct hostset *hs = hostset_decode(
        "node[1,3,5],node0[7-8],n[098-100],login,gpu7-ib", 100, NULL);
    static const char *const in[] = {"node1",
                                     "node3",
                                     "node5",
                                     "node07",
                                     "node08",
                                     "n098",
                                     "n099",
                                     "n100",
                                     "login",
                                     "gpu7-ib"};
    static const char *const out[] = {
        "node10", "node01",   "node2",  "node",   "node7",  "node8", "node007",
        "n98",    "n0100",    "n1000",  "n101",   "login1", "logi",  "gpu7",
        "gpu7-i", "gpu07-ib", "xnode1", "node1x", "",       "node15"};

    assert_non_null(hs);
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        if (!hostset_contains(hs, in[i]))
            fail_msg("%s should be in the set", in[i]);
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
        if (hostset_contains(hs, out[i]))
            fail_msg("%s should not be in the set", out[i]);
    assert_false(hostset_contains(hs, NULL));
    hostset_destroy(hs);
}

/* Each shape of group agrees with the expanded list. */
static void test_shapes(void **state)
{
    (void)state;
    check_ranges("n1", 1);
    check_ranges("login,admin", 2);
    check_ranges("nid[000001-000012,000014-000025]", 2);
    check_ranges("n[1-3],n[4-6]", 1);    /* touching: merged */
    check_ranges("n[1-5],n[3-9],n4", 1); /* overlapping, unsorted */
    check_ranges("n[09-10]", 2);         /* n09 padded, n10 plain */
    check_ranges("n[098-100]", 2);       /* n100 has no padding */
    check_ranges("n[0-9],n[00-09],n[000-009]", 3);
    check_ranges("n[1-3]-ib,n[1-3]-eth", 2); /* suffixes */
    check_ranges("[1-5]", 1);                /* no prefix */
    check_ranges("a[1-2]b[1-3]", 2);         /* expanded, a1b[1-3] a2b[1-3] */
    check_ranges("n1[0-5]", 1);              /* expanded: n10-n15 */
    check_ranges("a[1-3]b2", 3);             /* expanded: digits after */
    check_ranges("rack[1-2]n[01-04]", 2);
    check_ranges("n1234567890123456789012,n1", 2); /* too many digits */
    check_ranges("x-y_z.1,x-y_z.[2-3]", 1);
}

/* Generated expressions: prefixes, widths, suffixes and groups mixed. */
static void test_generated(void **state)
{
    static const char *const prefixes[] = {"n", "nid", "a1b", "x-", ""};
    static const char *const suffixes[] = {"", "-ib", "x2", "."};
    uint32_t seed = 12345;
    char expr[2048];

    (void)state;
#define RAND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (int round = 0; round < 300; round++) {
        size_t len = 0;
        int groups = 1 + (int)(RAND() % 4);
        for (int g = 0; g < groups; g++) {
            const char *pre = prefixes[RAND() % 5];
            const char *suf = suffixes[RAND() % 4];
            int width = (RAND() % 3 == 0) ? 2 + (int)(RAND() % 3) : 0;
            int elems = 1 + (int)(RAND() % 5);
            len += (size_t)snprintf(
                expr + len, sizeof(expr) - len, "%s%s[", g ? "," : "", pre);
            for (int k = 0; k < elems; k++) {
                unsigned lo = RAND() % 120, hi = lo + RAND() % 15;
                len += (size_t)snprintf(expr + len,
                                        sizeof(expr) - len,
                                        "%s%0*u-%0*u",
                                        k ? "," : "",
                                        width,
                                        lo,
                                        width,
                                        hi);
            }
            len += (size_t)snprintf(expr + len,
                                    sizeof(expr) - len,
                                    "]%s%s",
                                    RAND() % 7 == 0 ? "[1-2]" : "",
                                    suf);
        }
        (void)check_agrees(expr);
    }
#undef RAND
}

/* A job of 1,000 ranges is held in 1,000 ranges, a million names in one. */
static void test_not_expanded(void **state)
{
    char *expr = malloc(20000);
    size_t len = 0;
    unsigned n = 1;

    (void)state;
    assert_non_null(expr);
    len += (size_t)snprintf(expr, 20000, "nid[");
    for (int r = 0; r < 1000; r++, n += 12)
        len += (size_t)snprintf(
            expr + len, 20000 - len, "%s%06u-%06u", r ? "," : "", n, n + 10);
    snprintf(expr + len, 20000 - len, "]");
    check_ranges(expr, 1000);
    struct hostset *hs = hostset_decode(expr, 1000000, NULL);
    assert_non_null(hs);
    assert_true(hostset_contains(hs, "nid000001"));
    assert_true(hostset_contains(hs, "nid011999"));
    assert_false(hostset_contains(hs, "nid000012"));
    assert_false(hostset_contains(hs, "nid11999"));
    hostset_destroy(hs);
    free(expr);

    hs = hostset_decode("n[1-100000000]", 100000000, NULL);
    assert_non_null(hs);
    assert_int_equal(hostset_range_count(hs), 1);
    assert_true(hostset_contains(hs, "n99999999"));
    assert_false(hostset_contains(hs, "n100000001"));
    hostset_destroy(hs);
}

/* hostlist_decode's errors, with its messages. */
static void test_errors(void **state)
{
    vnib_error_t e = {0};

    (void)state;
    errno = 0;
    assert_null(hostset_decode("n[1-", 100, &e));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "hostlist:"));
    errno = 0;
    assert_null(hostset_decode("n[1-101]", 100, NULL));
    assert_int_equal(errno, E2BIG);
    errno = 0;
    assert_null(hostset_decode(NULL, 100, NULL));
    assert_int_equal(errno, EINVAL);
    /* The empty expression is the empty set. */
    struct hostset *hs = hostset_decode("", 100, NULL);
    assert_non_null(hs);
    assert_int_equal(hostset_range_count(hs), 0);
    assert_false(hostset_contains(hs, "n1"));
    hostset_destroy(hs);
    hostset_destroy(NULL);
    assert_false(hostset_contains(NULL, "n1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neighbours),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_not_expanded),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
