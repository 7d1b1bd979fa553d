/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for address blocks (lib/cidr.c): parsing (hosts, blocks,
 * both families, refusals naming the text) and matching, including an
 * IPv4 client seen by a dual-stack listener as ::ffff:a.b.c.d.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "vnib/cidr.h"

/* Whether the numeric address text lies in the block text. */
static bool in_block(const char *block, const char *addr)
{
    struct cidr c;
    vnib_error_t e = {0};
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

    assert_int_equal(cidr_parse(block, &c, &e), 0);
    if (inet_pton(AF_INET, addr, &in->sin_addr) == 1)
        in->sin_family = AF_INET;
    else {
        assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
        in6->sin6_family = AF_INET6;
    }
    return cidr_match(&c, (struct sockaddr *)&ss);
}

static void test_match(void **state)
{
    (void)state;
    assert_true(in_block("10.0.0.5", "10.0.0.5"));
    assert_false(in_block("10.0.0.5", "10.0.0.6"));
    assert_true(in_block("10.1.0.0/16", "10.1.255.7"));
    assert_false(in_block("10.1.0.0/16", "10.2.0.1"));
    assert_true(in_block("10.0.0.0/28", "10.0.0.15"));
    assert_false(in_block("10.0.0.0/28", "10.0.0.16"));
    assert_true(in_block("0.0.0.0/0", "192.0.2.1"));
    assert_true(in_block("10.0.0.5", "::ffff:10.0.0.5"));
    assert_false(in_block("10.0.0.5", "::1"));
    assert_true(in_block("2001:db8::/32", "2001:db8:1::7"));
    assert_false(in_block("2001:db8::/32", "2001:db9::1"));
    assert_false(in_block("2001:db8::/32", "10.0.0.1"));
    assert_true(in_block("::1", "::1"));
    assert_true(in_block("10.0.0.0/9", "10.127.0.1"));
    assert_false(in_block("10.0.0.0/9", "10.128.0.1"));
    assert_false(cidr_match(&(struct cidr){0}, NULL));
}

static void check_bad(const char *text, const char *want)
{
    struct cidr c;
    vnib_error_t e = {0};

    assert_int_equal(cidr_parse(text, &c, &e), -1);
    if (!strstr(e.text, want))
        fail_msg("'%s': got '%s', want '%s'", text, e.text, want);
}

static void test_refused(void **state)
{
    (void)state;
    check_bad("slurmctld", "'slurmctld' is not a numeric address");
    check_bad("", "is not a numeric address");
    check_bad("10.0.0.0/33", "not a numeric address");
    check_bad("10.0.0.0/", "not a numeric address");
    check_bad("10.0.0.0/-1", "not a numeric address");
    check_bad("10.0.0.0/8x", "not a numeric address");
    check_bad("/8", "not a numeric address");
    check_bad("2001:db8::/129", "not a numeric address");
    check_bad("10.1.2.3/16", "'10.1.2.3/16' has bits set past its /16 prefix");
    check_bad("2001:db8::1/64", "has bits set past its /64 prefix");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
