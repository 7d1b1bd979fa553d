/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for lib/hostlist.c: Slurm hostlist expressions.
 *
 * Covers every syntax form (plain names, ranges, lists, zero padding,
 * cartesian products, suffixes), the expansion bound and its checked
 * arithmetic, each malformed-input error with its errno and message,
 * exact encodings, the decode/encode round trip, and the list operations
 * (append, nth, uniq, contains).
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

#include "tests/unit/common/assert_fails.h"
#include "vnib/hostlist.h"

/* ---- helpers ----------------------------------------------------------- */

/* The names of hl joined by single spaces; caller frees. */
static char *join(const struct hostlist *hl)
{
    size_t size = 1;
    size_t n = hostlist_count(hl);
    char *s;

    for (size_t i = 0; i < n; i++)
        size += strlen(hostlist_nth(hl, i)) + 1;
    s = malloc(size);
    assert_non_null(s);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(s, " ");
        strcat(s, hostlist_nth(hl, i));
    }
    return s;
}

/* expr expands, in order, to the space-separated names in want, and
 * hostlist_count_expr agrees on the count.
 */
static void check_expand(const char *expr, const char *want)
{
    vnib_error_t e = {0};
    struct hostlist *hl = hostlist_decode(expr, HOSTLIST_DEFAULT_MAX_NAMES, &e);
    size_t count = 12345;
    char *got;

    if (!hl)
        fail_msg("decode '%s' failed: %s", expr, e.text);
    got = join(hl);
    if (strcmp(got, want) != 0)
        fail_msg("decode '%s': got '%s', want '%s'", expr, got, want);
    assert_int_equal(
        hostlist_count_expr(expr, HOSTLIST_DEFAULT_MAX_NAMES, &count, &e), 0);
    assert_int_equal(count, hostlist_count(hl));
    free(got);
    hostlist_destroy(hl);
}

/* expr encodes as want. */
static void check_encode(const char *expr, const char *want)
{
    vnib_error_t e = {0};
    struct hostlist *hl = hostlist_decode(expr, HOSTLIST_DEFAULT_MAX_NAMES, &e);
    char *got;

    if (!hl)
        fail_msg("decode '%s' failed: %s", expr, e.text);
    got = hostlist_encode(hl);
    assert_non_null(got);
    if (strcmp(got, want) != 0)
        fail_msg("encode '%s': got '%s', want '%s'", expr, got, want);
    free(got);
    hostlist_destroy(hl);
}

/* Both decode and count_expr refuse expr with errno err and a message
 * containing msg.
 */
static void check_fail(const char *expr, size_t max, int err, const char *msg)
{
    vnib_error_t e = {0};
    size_t count = 777;

    errno = 0;
    struct hostlist *hl = hostlist_decode(expr, max, &e);
    if (hl)
        fail_msg("decode '%s' succeeded, want error '%s'", expr, msg);
    if (errno != err)
        fail_msg("decode '%s': errno %d, want %d", expr, errno, err);
    if (!strstr(e.text, msg))
        fail_msg("decode '%s': message '%s' lacks '%s'", expr, e.text, msg);

    memset(&e, 0, sizeof(e));
    errno = 0;
    assert_int_equal(hostlist_count_expr(expr, max, &count, &e), -1);
    assert_int_equal(errno, err);
    assert_int_equal(count, 777); /* untouched on failure */
    if (!strstr(e.text, msg))
        fail_msg("count '%s': message '%s' lacks '%s'", expr, e.text, msg);

    /* A NULL error pointer is accepted. */
    errno = 0;
    assert_null(hostlist_decode(expr, max, NULL));
    assert_int_equal(errno, err);
}

/* Long names multiply the name bound into bytes: decoding is refused past
 * HOSTLIST_MAX_BYTES before anything is allocated, counting is not.
 */
static void test_byte_bound(void **state)
{
    char expr[300];
    vnib_error_t e = {0};
    size_t count = 0;
    (void)state;

    memset(expr, 'x', 200);
    strcpy(expr + 200, "[0-999999]");
    errno = 0;
    assert_null(hostlist_decode(expr, HOSTLIST_DEFAULT_MAX_NAMES, &e));
    assert_int_equal(errno, E2BIG);
    assert_non_null(strstr(e.text, "bytes of names"));
    assert_int_equal(
        hostlist_count_expr(expr, HOSTLIST_DEFAULT_MAX_NAMES, &count, NULL), 0);
    assert_int_equal(count, 1000000);
    /* Short names at the same count stay well under the byte bound. */
    struct hostlist *hl = hostlist_decode("n[0-999999]", 1000000, NULL);
    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 1000000);
    hostlist_destroy(hl);
}

static size_t count_of(const char *expr, size_t max)
{
    vnib_error_t e = {0};
    size_t count = 0;
    if (hostlist_count_expr(expr, max, &count, &e) < 0)
        fail_msg("count '%s' failed: %s", expr, e.text);
    return count;
}

/* decode(encode(decode(x))) is decode(x) as a set, and encoding is
 * idempotent.
 */
static void check_round_trip(const char *expr)
{
    vnib_error_t e = {0};
    struct hostlist *a = hostlist_decode(expr, HOSTLIST_DEFAULT_MAX_NAMES, &e);
    struct hostlist *b;
    char *enc;
    char *enc2;

    if (!a)
        fail_msg("decode '%s' failed: %s", expr, e.text);
    enc = hostlist_encode(a);
    assert_non_null(enc);
    b = hostlist_decode(enc, HOSTLIST_DEFAULT_MAX_NAMES, &e);
    if (!b)
        fail_msg("re-decode '%s' (from '%s') failed: %s", enc, expr, e.text);
    hostlist_uniq(a);
    hostlist_uniq(b);
    if (hostlist_count(a) != hostlist_count(b))
        fail_msg("'%s' -> '%s': %zu names, then %zu",
                 expr,
                 enc,
                 hostlist_count(a),
                 hostlist_count(b));
    for (size_t i = 0; i < hostlist_count(a); i++)
        if (strcmp(hostlist_nth(a, i), hostlist_nth(b, i)) != 0)
            fail_msg("'%s' -> '%s': name %zu is %s, then %s",
                     expr,
                     enc,
                     i,
                     hostlist_nth(a, i),
                     hostlist_nth(b, i));
    enc2 = hostlist_encode(b);
    assert_non_null(enc2);
    if (strcmp(enc, enc2) != 0)
        fail_msg(
            "'%s': encode not idempotent: '%s' then '%s'", expr, enc, enc2);
    free(enc2);
    free(enc);
    hostlist_destroy(b);
    hostlist_destroy(a);
}

/* ---- syntax ------------------------------------------------------------ */

static void test_empty(void **state)
{
    (void)state;
    struct hostlist *hl = hostlist_decode("", 10, NULL);
    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 0);
    assert_null(hostlist_nth(hl, 0));
    assert_false(hostlist_contains(hl, "n1"));
    char *s = hostlist_encode(hl);
    assert_string_equal(s, "");
    free(s);
    hostlist_destroy(hl);
    assert_int_equal(count_of("", 0), 0);

    /* An empty list made by create also encodes as "". */
    hl = hostlist_create();
    assert_non_null(hl);
    s = hostlist_encode(hl);
    assert_string_equal(s, "");
    free(s);
    hostlist_destroy(hl);
}

static void test_plain_names(void **state)
{
    (void)state;
    check_expand("tux3", "tux3");
    check_expand("login", "login");
    check_expand("a.b_c-d", "a.b_c-d");
    check_expand("login1,compute3,gpu07", "login1 compute3 gpu07");
    check_expand("x1y2z3", "x1y2z3");
    check_expand("7", "7");
    check_expand("n1,n1,n1", "n1 n1 n1"); /* duplicates kept */
}

static void test_ranges(void **state)
{
    (void)state;
    check_expand("n[1-3]", "n1 n2 n3");
    check_expand("n[3]", "n3");
    check_expand("n[3-3]", "n3");
    check_expand("n[0-2]", "n0 n1 n2");
    check_expand("n[1,3,5]", "n1 n3 n5");
    check_expand("n[5,1,3]", "n5 n1 n3"); /* written order kept */
    check_expand("n[1-2,1-2]", "n1 n2 n1 n2");
    check_expand("[1-3]", "1 2 3");
    check_expand("n[1-2]x", "n1x n2x");
    check_expand("n[1-2]-ib", "n1-ib n2-ib");
    check_expand("a[1-2],b,c[7]", "a1 a2 b c7");
    check_expand("n1[0-2]", "n10 n11 n12");
}

/* The examples of the Slurm topology guide (seed 002). */
static void test_seed_examples(void **state)
{
    (void)state;
    check_expand("tux[0-3,12,18-20]",
                 "tux0 tux1 tux2 tux3 tux12 tux18 tux19 tux20");
    check_expand("s[0-2,4-8,12]", "s0 s1 s2 s4 s5 s6 s7 s8 s12");
    check_expand("node[01-08]",
                 "node01 node02 node03 node04 node05 node06 node07 node08");
    check_expand("tux[0-1]", "tux0 tux1");
    check_expand("s[0-3]", "s0 s1 s2 s3");
    check_expand("d[1-2]", "d1 d2");
    assert_int_equal(count_of("node[09-16]", 100), 8);
    assert_int_equal(count_of("node[01-32]", 100), 32);
    assert_int_equal(count_of("rack1-node[01-16]", 100), 16);
    assert_int_equal(count_of("rack2-node[01-16]", 100), 16);
    assert_int_equal(count_of("d[1-100]", 100), 100);
    assert_int_equal(count_of("tux[12-15]", 100), 4);

    struct hostlist *hl = hostlist_decode("rack1-node[01-16]", 100, NULL);
    assert_non_null(hl);
    assert_string_equal(hostlist_nth(hl, 0), "rack1-node01");
    assert_string_equal(hostlist_nth(hl, 9), "rack1-node10");
    assert_string_equal(hostlist_nth(hl, 15), "rack1-node16");
    hostlist_destroy(hl);

    hl = hostlist_decode("d[1-100]", 100, NULL);
    assert_non_null(hl);
    assert_string_equal(hostlist_nth(hl, 0), "d1");
    assert_string_equal(hostlist_nth(hl, 9), "d10");
    assert_string_equal(hostlist_nth(hl, 99), "d100");
    assert_null(hostlist_nth(hl, 100));
    hostlist_destroy(hl);
}

static void test_zero_padding(void **state)
{
    (void)state;
    check_expand("n[001-003]", "n001 n002 n003");
    check_expand("n[8-10]", "n8 n9 n10");
    check_expand("n[08-10]", "n08 n09 n10");
    check_expand("n[01-02,5]", "n01 n02 n5");
    check_expand("n[098-100]", "n098 n099 n100");
    check_expand("n[099-100]", "n099 n100");
    check_expand("n[001-5]", "n001 n002 n003 n004 n005");
    check_expand("n[1-003]", "n1 n2 n3"); /* only lo sets the width */
    check_expand("n[00-02]", "n00 n01 n02");
    check_expand("n[0-2]", "n0 n1 n2");
    check_expand("n[007]", "n007");
    check_expand("n[000000000000000001-000000000000000002]",
                 "n000000000000000001 n000000000000000002");

    struct hostlist *hl = hostlist_decode("n[099-1000]", 10000, NULL);
    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 902);
    assert_string_equal(hostlist_nth(hl, 901), "n1000");
    hostlist_destroy(hl);
}

static void test_cartesian(void **state)
{
    (void)state;
    check_expand("rack[1-2]n[01-04]",
                 "rack1n01 rack1n02 rack1n03 rack1n04"
                 " rack2n01 rack2n02 rack2n03 rack2n04");
    check_expand("a[1-2]b[3,5]c", "a1b3c a1b5c a2b3c a2b5c");
    check_expand("[1-2][1-2]", "11 12 21 22");
    check_expand("n[1,3-4][7]x[0-1]", "n17x0 n17x1 n37x0 n37x1 n47x0 n47x1");
    check_expand("r[1-2]n[1-2],z", "r1n1 r1n2 r2n1 r2n2 z");
    assert_int_equal(count_of("a[0-9]b[0-9]c[0-9]", 1000), 1000);
    assert_int_equal(count_of("a[0-9]b[0-9],c[0-9]", 1000), 110);
}

/* ---- bounds ------------------------------------------------------------ */

static void test_count_without_expansion(void **state)
{
    (void)state;
    /* Counts far beyond anything that could be expanded in memory. */
    assert_int_equal(count_of("n[0-999999999999999999]", SIZE_MAX),
                     (size_t)1000000000000000000ull);
    assert_int_equal(count_of("a[0-999999]b[0-999999]", SIZE_MAX),
                     (size_t)1000000000000ull);
    assert_int_equal(count_of("a[1-1000000],b[1-1000000]", SIZE_MAX), 2000000);
    assert_int_equal(count_of("a[0-999]b[0-999]", HOSTLIST_DEFAULT_MAX_NAMES),
                     1000000);
    assert_int_equal(count_of("n[1-100]", 100), 100);
    assert_int_equal(count_of("n[1-50],m[1-50]", 100), 100);

    /* The product 10^27 overflows 64 bits: refused, not wrapped. */
    check_fail("a[0-999999999]b[0-999999999]c[0-999999999]",
               SIZE_MAX,
               E2BIG,
               "expands to more than");
    /* So does the sum of many large ranges in one bracket. */
    check_fail(
        "n[0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999,"
        "0-999999999999999999,0-999999999999999999]",
        SIZE_MAX,
        E2BIG,
        "expands to more than");
}

static void test_e2big(void **state)
{
    (void)state;
    check_fail("n[1-101]", 100, E2BIG, "expands to more than 100 names");
    check_fail("n[1-50],m[1-51]", 100, E2BIG, "more than 100 names");
    check_fail("n[1-10]m[1-11]", 100, E2BIG, "more than 100 names");
    check_fail("n[1-60,61-101]", 100, E2BIG, "more than 100 names");
    check_fail("n1", 0, E2BIG, "more than 0 names");
    check_fail("n[0-99999999999]",
               HOSTLIST_DEFAULT_MAX_NAMES,
               E2BIG,
               "expands to more than 1000000 names");
    check_fail("a[0-999]b[0-999]c[0-999]",
               HOSTLIST_DEFAULT_MAX_NAMES,
               E2BIG,
               "expands to more than");
    check_fail(
        "a[0-999]b[0-999],c", HOSTLIST_DEFAULT_MAX_NAMES, E2BIG, "more than");

    /* Exactly at the bound is fine. */
    struct hostlist *hl = hostlist_decode("n[1-100]", 100, NULL);
    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 100);
    hostlist_destroy(hl);
}

static void test_name_length(void **state)
{
    (void)state;
    char buf[600];
    struct hostlist *hl;

    /* 255 bytes is the longest name. */
    memset(buf, 'a', 255);
    buf[255] = '\0';
    hl = hostlist_decode(buf, 10, NULL);
    assert_non_null(hl);
    assert_int_equal(strlen(hostlist_nth(hl, 0)), 255);
    hostlist_destroy(hl);

    memset(buf, 'a', 256);
    buf[256] = '\0';
    check_fail(buf, 10, E2BIG, "name at offset 0 is longer than 255 bytes");

    /* The longest rendering of a bracket counts: 253 + "99" fits, 253 +
     * "100" does not, and a padded width counts even for small values.
     */
    memset(buf, 'a', 253);
    strcpy(buf + 253, "[1-99]");
    assert_int_equal(count_of(buf, 1000), 99);
    strcpy(buf + 253, "[1-100]");
    check_fail(buf, 1000, E2BIG, "longer than 255 bytes");
    strcpy(buf + 253, "[001]");
    check_fail(buf, 1000, E2BIG, "longer than 255 bytes");

    /* The offset names the group at fault. */
    memset(buf, 'a', 300);
    memcpy(buf, "ok,", 3);
    buf[300] = '\0';
    check_fail(buf, 10, E2BIG, "name at offset 3 is longer");
}

/* A row of test_malformed (text: the message) and test_encode (text: the
 * encoding).
 */
struct expr_case {
    const char *expr;
    const char *text;
};

/* ---- malformed input --------------------------------------------------- */

static void test_malformed(void **state)
{
    (void)state;
    static const struct expr_case cases[] = {
        {"n[1-3", "hostlist: unbalanced '[' at offset 1"},
        {"abc[", "hostlist: unbalanced '[' at offset 3"},
        {"n[1,", "hostlist: unbalanced '[' at offset 1"},
        {"n[1-", "hostlist: unbalanced '[' at offset 1"},
        {"n]", "hostlist: unbalanced ']' at offset 1"},
        {"n1]", "hostlist: unbalanced ']' at offset 2"},
        {"n[1]]", "hostlist: unbalanced ']' at offset 4"},
        {"]", "hostlist: unbalanced ']' at offset 0"},
        {",", "hostlist: empty name at offset 0"},
        {",n1", "hostlist: empty name at offset 0"},
        {"n1,", "hostlist: empty name at offset 3"},
        {"n1,,n2", "hostlist: empty name at offset 3"},
        {"abc, d", "hostlist: invalid character ' ' at offset 4"},
        {" n1", "hostlist: invalid character ' ' at offset 0"},
        {"n1 ", "hostlist: invalid character ' ' at offset 2"},
        {"n\t1", "hostlist: invalid character '\\x09' at offset 1"},
        {"n\xff", "hostlist: invalid character '\\xff' at offset 1"},
        {"n/1", "hostlist: invalid character '/' at offset 1"},
        {"n[1 ]", "hostlist: invalid character ' ' at offset 3"},
        {"n[ 1]", "hostlist: invalid character ' ' at offset 2"},
        {"n[5-2]", "hostlist: range 5-2 is reversed at offset 2"},
        {"n[3-2]", "hostlist: range 3-2 is reversed at offset 2"},
        {"n[10-09]", "hostlist: range 10-09 is reversed at offset 2"},
        {"a,n[1,05-002]", "hostlist: range 05-002 is reversed at offset 6"},
        {"n[1[2]]", "hostlist: nested '[' at offset 3"},
        {"n[[1]]", "hostlist: nested '[' at offset 2"},
        {"n[1-[2]]", "hostlist: nested '[' at offset 4"},
        {"n[]", "hostlist: empty brackets at offset 1"},
        {"n[1-]", "hostlist: expected a number at offset 4, found ']'"},
        {"n[-1]", "hostlist: expected a number at offset 2, found '-'"},
        {"n[,1]", "hostlist: expected a number at offset 2, found ','"},
        {"n[1,]", "hostlist: expected a number at offset 4, found ']'"},
        {"n[1,,2]", "hostlist: expected a number at offset 4, found ','"},
        {"n[a]", "hostlist: expected a number at offset 2, found 'a'"},
        {"n[1x]", "hostlist: expected ',', '-' or ']' at offset 3, found 'x'"},
        {"n[1-2-3]",
         "hostlist: expected ',', '-' or ']' at offset 5, found '-'"},
        {"n[0x10]",
         "hostlist: expected ',', '-' or ']' at offset 3, found 'x'"},
        {"n[1234567890123456789]",
         "hostlist: number at offset 2 has more than 18 digits"},
        {"n[0-9999999999999999999]",
         "hostlist: number at offset 4 has more than 18 digits"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_fail(
            cases[i].expr, HOSTLIST_DEFAULT_MAX_NAMES, EINVAL, cases[i].text);

    /* Syntax is checked left to right: the first problem is reported. */
    check_fail("n[5-2],n[1-999999]", 10, EINVAL, "reversed");
    check_fail("n[1-999999],n[5-2]", 10, E2BIG, "more than 10 names");
}

static void test_null_args(void **state)
{
    (void)state;
    vnib_error_t e = {0};
    size_t count;

    errno = 0;
    assert_null(hostlist_decode(NULL, 10, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "hostlist: no expression");
    assert_fails(hostlist_count_expr(NULL, 10, &count, NULL), EINVAL);
    assert_fails(hostlist_count_expr("n1", 10, NULL, NULL), EINVAL);

    assert_int_equal(hostlist_count(NULL), 0);
    assert_null(hostlist_nth(NULL, 0));
    assert_false(hostlist_contains(NULL, "n1"));
    hostlist_uniq(NULL);
    errno = 0;
    assert_null(hostlist_encode(NULL));
    assert_int_equal(errno, EINVAL);
    assert_fails(hostlist_append(NULL, "n1"), EINVAL);

    /* destroy accepts NULL and preserves errno. */
    errno = ENOSPC;
    hostlist_destroy(NULL);
    assert_int_equal(errno, ENOSPC);
    struct hostlist *hl = hostlist_decode("n[1-3]", 10, NULL);
    assert_non_null(hl);
    errno = EPERM;
    hostlist_destroy(hl);
    assert_int_equal(errno, EPERM);
}

/* ---- encoding ---------------------------------------------------------- */

static void test_encode(void **state)
{
    (void)state;
    static const struct expr_case cases[] = {
        {"", ""},
        {"tux3", "tux3"},
        {"login", "login"},
        {"tux[0-3,12,18-20]", "tux[0-3,12,18-20]"},
        {"tux20,tux0,tux12,tux3,tux1,tux19,tux2,tux18", "tux[0-3,12,18-20]"},
        {"s[0-2,4-8,12]", "s[0-2,4-8,12]"},
        {"node[01-08]", "node[01-08]"},
        {"node[01-08],node[09-16]", "node[01-16]"},
        {"rack1-node[01-16]", "rack1-node[01-16]"},
        {"rack1-node[01-16],rack2-node[01-16]",
         "rack1-node[01-16],rack2-node[01-16]"},
        {"d[1-100]", "d[1-100]"},
        {"d[1-2]", "d[1-2]"},
        {"login1,compute[1-4],gpu07", "compute[1-4],gpu07,login1"},
        {"n[001-128]", "n[001-128]"},
        {"n[098-100]", "n[098-100]"},
        {"n[8-10]", "n[8-10]"},
        {"n[08-10]", "n[08-10]"},
        {"n[01-02,5]", "n[01-02,5]"},
        {"n[01-02],n1", "n[1,01-02]"},
        {"n9,n09,n10", "n[9-10,09]"},
        {"n[00-02],n0", "n[0,00-02]"},
        {"n[001-003,010]", "n[001-003,010]"},
        {"n[1-3,2-4]", "n[1-4]"},
        {"n[3,1,2,1]", "n[1-3]"},
        {"n1,n1", "n1"},
        {"n[0-0]", "n0"},
        {"n00", "n00"},
        {"rack[1-2]n[01-04]", "rack1n[01-04],rack2n[01-04]"},
        {"n[1-3][1-2]", "n[11-12,21-22,31-32]"},
        {"n[1-3]a,n[2-4]b", "n[1-3]a,n[2-4]b"},
        {"n[1-3]-ib,n[1-3]-eth", "n[1-3]-eth,n[1-3]-ib"},
        {"[1-3]", "[1-3]"},
        {"a,b,a", "a,b"},
        {"n,n1,n2", "n,n[1-2]"},
        {"x1y2z3,x1y2z4", "x1y2z[3-4]"},
        {"n1a,n1", "n1,n1a"},
        {"b1,a1,c,a2", "a[1-2],b1,c"},
        {"n[1-5,7,9-10]", "n[1-5,7,9-10]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_encode(cases[i].expr, cases[i].text);
}

/* A name whose last digit run is too long for a bracket stands alone, and
 * is printed verbatim.
 */
static void test_encode_long_digits(void **state)
{
    (void)state;
    check_encode("n1234567890123456789012,n1234567890123456789013",
                 "n1234567890123456789012,n1234567890123456789013");
    check_encode("n[999999999999999998-999999999999999999]",
                 "n[999999999999999998-999999999999999999]");
    check_encode("n[1-2][100000000000000000-100000000000000001]",
                 "n1100000000000000000,n1100000000000000001,"
                 "n2100000000000000000,n2100000000000000001");
    check_round_trip("n[1-2][100000000000000000-100000000000000001]");
}

static void test_round_trip(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "",
        "tux[0-3,12,18-20]",
        "s[0-2,4-8,12]",
        "node[01-08]",
        "node[09-16]",
        "node[01-32]",
        "rack1-node[01-16]",
        "rack2-node[01-16]",
        "rack1-node[01-16],rack2-node[01-16]",
        "d[1-100]",
        "d[1-2]",
        "tux[0-1],tux[2-3],tux[4-5],tux[6-7]",
        "s[0-1],s[2-3],s[4-5]",
        "login1,compute[1-4],gpu07",
        "n[001-128]",
        "rack[1-2]n[01-04]",
        "n[8-10]",
        "n[01-02,5]",
        "n[01-02],n1",
        "n9,n09,n10,n010,n0010",
        "n[098-1000]",
        "n[0-5],n[00-05],n[000-005]",
        "n[1-3][1-2]",
        "[1-3][0-2]",
        "a[1-2]b[3-4]c[5-6]",
        "n[1-3]a,n[2-4]b,n[1-5]",
        "n[1-3]-ib,n[1-3]-eth,n1",
        "x1y2z3,x1y2z4,x2y2z3",
        "a.b_c-d,a.b_c-d1",
        "n,n1,n01,n001",
        "rack1-node01,rack1-node1,rack10-node01",
        "n[5,3,1,3,5]",
        "n[0-99999]",
        "n1234567890123456789012,n1",
    };
    for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++)
        check_round_trip(exprs[i]);
}

/* ---- list operations --------------------------------------------------- */

static void test_append(void **state)
{
    (void)state;
    struct hostlist *hl = hostlist_create();
    char buf[300];

    assert_non_null(hl);
    assert_int_equal(hostlist_append(hl, "n2"), 0);
    assert_int_equal(hostlist_append(hl, "n1"), 0);
    assert_int_equal(hostlist_append(hl, "a.b-c_d"), 0);
    assert_int_equal(hostlist_count(hl), 3);
    assert_string_equal(hostlist_nth(hl, 1), "n1");

    static const char *const bad[] = {
        "", "n 1", "n[1]", "n,1", "n]", "n/1", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errno = 0;
        assert_int_equal(hostlist_append(hl, bad[i]), -1);
        assert_int_equal(errno, EINVAL);
    }
    assert_fails(hostlist_append(hl, NULL), EINVAL);

    memset(buf, 'x', 256);
    buf[256] = '\0';
    assert_fails(hostlist_append(hl, buf), EINVAL);
    buf[255] = '\0';
    assert_int_equal(hostlist_append(hl, buf), 0);
    assert_int_equal(hostlist_count(hl), 4); /* failures added nothing */

    char *s = hostlist_encode(hl);
    assert_non_null(s);
    assert_int_equal(strncmp(s, "a.b-c_d,n[1-2],xxx", 18), 0);
    free(s);
    hostlist_destroy(hl);
}

/* Borrowed names stay valid while the list grows. */
static void test_nth_stable(void **state)
{
    (void)state;
    struct hostlist *hl = hostlist_create();
    char name[32];

    assert_non_null(hl);
    assert_int_equal(hostlist_append(hl, "first"), 0);
    const char *first = hostlist_nth(hl, 0);
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(hostlist_append(hl, name), 0);
    }
    assert_ptr_equal(hostlist_nth(hl, 0), first);
    assert_string_equal(first, "first");
    assert_string_equal(hostlist_nth(hl, 100000), "n99999");
    assert_null(hostlist_nth(hl, 100001));
    hostlist_destroy(hl);
}

static void test_uniq(void **state)
{
    (void)state;
    struct hostlist *hl = hostlist_decode(
        "n10,n2,n1,n01,b,n2,a1,n,n1-ib,n1-eth,n1,n001", 100, NULL);
    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 12);
    hostlist_uniq(hl);
    char *got = join(hl);
    /* prefix, then the number (value, then width), then the suffix */
    assert_string_equal(got, "a1 b n n1 n1-eth n1-ib n01 n001 n2 n10");
    free(got);
    hostlist_uniq(hl); /* idempotent */
    assert_int_equal(hostlist_count(hl), 10);
    hostlist_destroy(hl);

    /* Already sorted, with adjacent duplicates. */
    hl = hostlist_decode("n[1-3],n3,n[4-5]", 100, NULL);
    assert_non_null(hl);
    hostlist_uniq(hl);
    got = join(hl);
    assert_string_equal(got, "n1 n2 n3 n4 n5");
    free(got);
    hostlist_destroy(hl);
}

static void test_contains(void **state)
{
    (void)state;
    struct hostlist *hl =
        hostlist_decode("tux[0-3,12,18-20],n[01-02],login", 100, NULL);
    static const char *const yes[] = {
        "tux0",
        "tux3",
        "tux12",
        "tux20",
        "n01",
        "n02",
        "login",
    };
    static const char *const no[] = {
        "tux4",
        "tux",
        "tux00",
        "n1",
        "n2",
        "n001",
        "login1",
        "",
        "x",
        "tux21",
    };
    char big[300];

    assert_non_null(hl);
    memset(big, 'a', 299);
    big[299] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0 scans linearly; pass 1 searches the sorted list */
        if (pass == 1)
            hostlist_uniq(hl);
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
            if (!hostlist_contains(hl, yes[i]))
                fail_msg("pass %d: %s missing", pass, yes[i]);
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
            if (hostlist_contains(hl, no[i]))
                fail_msg("pass %d: %s present", pass, no[i]);
        assert_false(hostlist_contains(hl, NULL));
        assert_false(hostlist_contains(hl, big));
    }

    /* Appending after uniq must not break lookups of the new name, which
     * is out of order.
     */
    assert_int_equal(hostlist_append(hl, "aaa"), 0);
    assert_true(hostlist_contains(hl, "aaa"));
    assert_true(hostlist_contains(hl, "tux19"));
    hostlist_uniq(hl);
    assert_true(hostlist_contains(hl, "aaa"));
    assert_string_equal(hostlist_nth(hl, 0), "aaa");
    hostlist_destroy(hl);
}

/* Larger lists: the sizes the broker sees, and an unsorted input that
 * forces the encoder to sort.
 */
static void test_large(void **state)
{
    (void)state;
    struct hostlist *hl =
        hostlist_decode("n[1-11136]", HOSTLIST_DEFAULT_MAX_NAMES, NULL);
    char *s;
    char name[32];

    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 11136);
    hostlist_uniq(hl);
    assert_int_equal(hostlist_count(hl), 11136);
    assert_true(hostlist_contains(hl, "n11136"));
    assert_false(hostlist_contains(hl, "n11137"));
    s = hostlist_encode(hl);
    assert_string_equal(s, "n[1-11136]");
    free(s);
    hostlist_destroy(hl);

    hl = hostlist_decode("n[1-1000000]", HOSTLIST_DEFAULT_MAX_NAMES, NULL);
    assert_non_null(hl);
    assert_int_equal(hostlist_count(hl), 1000000);
    assert_string_equal(hostlist_nth(hl, 999999), "n1000000");
    s = hostlist_encode(hl);
    assert_string_equal(s, "n[1-1000000]");
    free(s);
    hostlist_destroy(hl);

    hl = hostlist_create();
    assert_non_null(hl);
    for (int i = 5000; i >= 1; i--) {
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(hostlist_append(hl, name), 0);
        if (i % 7 == 0)
            assert_int_equal(hostlist_append(hl, name), 0);
    }
    s = hostlist_encode(hl);
    assert_string_equal(s, "n[1-5000]");
    free(s);
    assert_string_equal(hostlist_nth(hl, 0), "n5000"); /* list untouched */
    hostlist_uniq(hl);
    assert_int_equal(hostlist_count(hl), 5000);
    assert_string_equal(hostlist_nth(hl, 0), "n1");
    hostlist_destroy(hl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_bound),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_plain_names),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_seed_examples),
        cmocka_unit_test(test_zero_padding),
        cmocka_unit_test(test_cartesian),
        cmocka_unit_test(test_count_without_expansion),
        cmocka_unit_test(test_e2big),
        cmocka_unit_test(test_name_length),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_null_args),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_encode_long_digits),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_nth_stable),
        cmocka_unit_test(test_uniq),
        cmocka_unit_test(test_contains),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
