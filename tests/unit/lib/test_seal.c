/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for sealing secrets at rest (lib/seal.c): a round trip, and
 * refusal of a wrong key, wrong associated data, and any altered byte.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vnib/seal.h"

static const unsigned char key[SEAL_KEY_LEN] =
    "0123456789abcdef0123456789abcdef";

static void test_round_trip(void **state)
{
    unsigned char *sealed;
    size_t slen, plen;
    char *plain;
    (void)state;
    assert_int_equal(
        seal_encrypt(key, "tok-123", 7, "42", 2, &sealed, &slen, NULL), 0);
    assert_int_equal(slen, 7 + SEAL_OVERHEAD);
    assert_null(memmem(sealed, slen, "tok-123", 7));
    assert_int_equal(
        seal_decrypt(key, sealed, slen, "42", 2, &plain, &plen, NULL), 0);
    assert_int_equal(plen, 7);
    assert_string_equal(plain, "tok-123");
    free(plain);
    free(sealed);
}

static void test_nonces_differ(void **state)
{
    unsigned char *a, *b;
    size_t alen, blen;
    (void)state;
    assert_int_equal(seal_encrypt(key, "x", 1, "1", 1, &a, &alen, NULL), 0);
    assert_int_equal(seal_encrypt(key, "x", 1, "1", 1, &b, &blen, NULL), 0);
    assert_memory_not_equal(a, b, alen);
    free(a);
    free(b);
}

static void test_refusals(void **state)
{
    unsigned char other[SEAL_KEY_LEN];
    unsigned char *sealed;
    size_t slen, plen;
    char *plain = NULL;
    vnib_error_t e = {0};
    (void)state;
    memcpy(other, key, sizeof(other));
    other[0] ^= 1;
    assert_int_equal(
        seal_encrypt(key, "secret", 6, "7", 1, &sealed, &slen, NULL), 0);
    assert_int_equal(
        seal_decrypt(other, sealed, slen, "7", 1, &plain, &plen, &e), -1);
    assert_int_equal(errno, EBADMSG);
    assert_non_null(strstr(e.text, "does not open"));
    assert_int_equal(
        seal_decrypt(key, sealed, slen, "8", 1, &plain, &plen, NULL), -1);
    for (size_t i = 0; i < slen; i++) {
        sealed[i] ^= 0x80;
        assert_int_equal(
            seal_decrypt(key, sealed, slen, "7", 1, &plain, &plen, NULL), -1);
        sealed[i] ^= 0x80;
    }
    assert_int_equal(seal_decrypt(key, sealed, 10, "7", 1, &plain, &plen, NULL),
                     -1);
    assert_null(plain);
    free(sealed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_nonces_differ),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
