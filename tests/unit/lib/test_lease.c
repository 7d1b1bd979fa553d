/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for leases (lib/lease.c): a round trip through keys written
 * as openssl writes them; refusal of any altered byte, an unknown key, an
 * expired lease or one from the future, and malformed text; key rotation
 * (a ring of two), the file checks of a private key, and decoding
 * without a key.
 */
#define _GNU_SOURCE
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
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "vnib/lease.h"

static char dir[] = "/tmp/vnib-test-lease.XXXXXX";
static char key1[256], pub1[256], key2[256], pub2[256];

/* A new Ed25519 key as PEM: private to priv (0600), public to pub. */
static void write_key(const char *priv, const char *pub)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    FILE *f;

    assert_non_null(k);
    assert_non_null(f = fopen(priv, "w"));
    assert_int_equal(fchmod(fileno(f), 0600), 0);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
    assert_non_null(f = fopen(pub, "w"));
    assert_int_equal(PEM_write_PUBKEY(f, k), 1);
    fclose(f);
    EVP_PKEY_free(k);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(key1, sizeof(key1), "%s/k1.key", dir);
    snprintf(pub1, sizeof(pub1), "%s/k1.pub", dir);
    snprintf(key2, sizeof(key2), "%s/k2.key", dir);
    snprintf(pub2, sizeof(pub2), "%s/k2.pub", dir);
    write_key(key1, pub1);
    write_key(key2, pub2);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(key1);
    unlink(pub1);
    unlink(key2);
    unlink(pub2);
    rmdir(dir);
    return 0;
}

static char *sign_one(const char *keyfile, time_t now, long ttl)
{
    vnib_error_t e = {0};
    struct lease_signer *s = lease_signer_load(keyfile, &e);
    json_t *p = json_pack("{s:I, s:s, s:i, s:[i,i], s:s}",
                          "id",
                          (json_int_t)42,
                          "job_id",
                          "4711",
                          "uid",
                          1000,
                          "vnis",
                          1024,
                          1025,
                          "nodes",
                          "n[1-3]");
    char *lease = NULL;

    assert_non_null(s);
    assert_int_equal(lease_sign(s, p, now, ttl, &lease, &e), 0);
    assert_non_null(lease);
    json_decref(p);
    lease_signer_destroy(s);
    return lease;
}

static struct lease_keyring *ring_of(const char *a, const char *b)
{
    vnib_error_t e = {0};
    struct lease_keyring *r = lease_keyring_create();

    assert_non_null(r);
    assert_int_equal(lease_keyring_add_file(r, a, &e), 0);
    if (b)
        assert_int_equal(lease_keyring_add_file(r, b, &e), 0);
    return r;
}

static void test_round_trip(void **state)
{
    struct lease_keyring *r = ring_of(pub1, NULL);
    char *lease = sign_one(key1, 1000000, 300);
    json_t *p = NULL;
    vnib_error_t e = {0};
    (void)state;

    assert_int_equal(strncmp(lease, "vnib1.", 6), 0);
    assert_int_equal(lease_verify(r, lease, 1000100, 60, &p, &e), 0);
    assert_string_equal(json_string_value(json_object_get(p, "job_id")),
                        "4711");
    assert_int_equal(json_integer_value(json_object_get(p, "id")), 42);
    assert_int_equal(json_integer_value(json_object_get(p, "iat")), 1000000);
    assert_int_equal(json_integer_value(json_object_get(p, "exp")), 1000300);
    assert_int_equal(json_integer_value(json_object_get(p, "v")), 1);
    assert_int_equal(strlen(json_string_value(json_object_get(p, "kid"))), 16);
    json_decref(p);
    free(lease);
    lease_keyring_destroy(r);
}

/* Every single-byte change of the text is refused. */
static void test_tampered(void **state)
{
    struct lease_keyring *r = ring_of(pub1, NULL);
    char *lease = sign_one(key1, 1000000, 300);
    size_t len = strlen(lease);
    json_t *p = NULL;
    vnib_error_t e = {0};
    (void)state;

    for (size_t i = 0; i < len; i++) {
        char saved = lease[i];
        lease[i] = saved == 'A' ? 'B' : 'A';
        if (lease[i] == saved)
            continue;
        assert_int_equal(lease_verify(r, lease, 1000000, 60, &p, &e), -1);
        assert_null(p);
        lease[i] = saved;
    }
    /* Truncated, or with more after it. */
    lease[len - 1] = '\0';
    assert_int_equal(lease_verify(r, lease, 1000000, 60, &p, &e), -1);
    free(lease);
    lease_keyring_destroy(r);
}

static void test_keys(void **state)
{
    struct lease_keyring *r1 = ring_of(pub1, NULL);
    struct lease_keyring *both = ring_of(pub2, key1);
    char *lease = sign_one(key1, 1000000, 300);
    char *lease2 = sign_one(key2, 1000000, 300);
    json_t *p = NULL;
    vnib_error_t e = {0};
    (void)state;

    /* Key 2's lease on a node that has only key 1. */
    assert_int_equal(lease_verify(r1, lease2, 1000000, 60, &p, &e), -1);
    assert_int_equal(errno, ENOKEY);
    assert_non_null(strstr(e.text, "does not have"));
    /* During a rotation both verify (a private key file gives its public
     * half). */
    assert_int_equal(lease_keyring_count(both), 2);
    assert_int_equal(lease_verify(both, lease, 1000000, 60, &p, &e), 0);
    json_decref(p);
    assert_int_equal(lease_verify(both, lease2, 1000000, 60, &p, &e), 0);
    json_decref(p);
    free(lease);
    free(lease2);
    lease_keyring_destroy(r1);
    lease_keyring_destroy(both);
}

static void test_times(void **state)
{
    struct lease_keyring *r = ring_of(pub1, NULL);
    char *lease = sign_one(key1, 1000000, 300);
    json_t *p = NULL;
    vnib_error_t e = {0};
    (void)state;

    /* Within the skew on either side. */
    assert_int_equal(lease_verify(r, lease, 1000300 + 60, 60, &p, &e), 0);
    json_decref(p);
    assert_int_equal(lease_verify(r, lease, 1000000 - 60, 60, &p, &e), 0);
    json_decref(p);
    assert_int_equal(lease_verify(r, lease, 1000300 + 61, 60, &p, &e), -1);
    assert_int_equal(errno, EKEYEXPIRED);
    assert_non_null(strstr(e.text, "expired"));
    assert_int_equal(lease_verify(r, lease, 1000000 - 61, 60, &p, &e), -1);
    assert_int_equal(errno, EKEYEXPIRED);
    assert_non_null(strstr(e.text, "future"));
    free(lease);
    lease_keyring_destroy(r);
}

static void test_malformed(void **state)
{
    struct lease_keyring *r = ring_of(pub1, NULL);
    const char *bad[] = {"",
                         "vnib1.",
                         "vnib1..",
                         "vnib2.e30.AAAA",
                         "vnib1.e30",
                         "vnib1.e30.!!!!",
                         "vnib1.e30.AAAA",
                         "eyJ2IjoxfQ.x"};
    json_t *p = NULL;
    vnib_error_t e = {0};
    char *big;
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(lease_verify(r, bad[i], 1000000, 60, &p, &e), -1);
        assert_int_equal(errno, EINVAL);
        assert_null(p);
    }
    assert_int_equal(lease_verify(r, NULL, 1000000, 60, &p, &e), -1);
    big = malloc(LEASE_MAX_LEN + 2);
    assert_non_null(big);
    memcpy(big, "vnib1.", 6);
    memset(big + 6, 'A', LEASE_MAX_LEN - 4);
    big[LEASE_MAX_LEN + 1] = '\0';
    assert_int_equal(lease_verify(r, big, 1000000, 60, &p, &e), -1);
    assert_non_null(strstr(e.text, "longer"));
    free(big);
    lease_keyring_destroy(r);
}

/* lease_decode reads a payload with no key and whatever its time, and
 * refuses what lease_verify refuses as malformed. */
static void test_decode(void **state)
{
    char *lease = sign_one(key2, 1000, 60);
    json_t *p = NULL;
    vnib_error_t e = {0};
    (void)state;

    assert_int_equal(lease_decode(lease, &p, &e), 0);
    assert_string_equal(json_string_value(json_object_get(p, "job_id")),
                        "4711");
    assert_int_equal(json_integer_value(json_object_get(p, "exp")), 1060);
    json_decref(p);
    p = NULL;
    lease[strlen(lease) - 1] = '!';
    assert_int_equal(lease_decode(lease, &p, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_null(p);
    assert_int_equal(lease_decode("vnib1.e30.AAAA", &p, &e), -1);
    assert_int_equal(errno, EINVAL);
    free(lease);
}

/* The broker's key is a credential: group- or world-readable is refused;
 * a public key needs no particular mode; a key of another type is not
 * taken. */
static void test_files(void **state)
{
    char rsa[300];
    vnib_error_t e = {0};
    struct lease_keyring *r = lease_keyring_create();
    EVP_PKEY *k;
    FILE *f;
    (void)state;

    assert_int_equal(chmod(key1, 0644), 0);
    assert_null(lease_signer_load(key1, &e));
    assert_int_equal(lease_keyring_add_file(r, key1, &e), -1);
    assert_int_equal(chmod(key1, 0600), 0);
    assert_int_equal(chmod(pub1, 0644), 0);
    assert_int_equal(lease_keyring_add_file(r, pub1, &e), 0);
    snprintf(rsa, sizeof(rsa), "%s/ec.pub", dir);
    assert_non_null(k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"));
    assert_non_null(f = fopen(rsa, "w"));
    assert_int_equal(PEM_write_PUBKEY(f, k), 1);
    fclose(f);
    EVP_PKEY_free(k);
    assert_int_equal(lease_keyring_add_file(r, rsa, &e), -1);
    assert_non_null(strstr(e.text, "not an Ed25519 key"));
    unlink(rsa);
    lease_keyring_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_decode),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
