/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for job tokens (lib/token.c): "vnibjob.<resv_id>.<job_id>.<mac>"
 * with mac the base64url HMAC-SHA256 of "vnib-job:<resv_id>:<job_id>"
 * under the node key.  The MAC is recomputed here with OpenSSL alone, so
 * that the format is checked apart from the code under test; then a
 * round trip for job ids of every character the broker accepts, and the
 * refusals: another key, a changed job, reservation or MAC, malformed
 * tokens (a MAC right for what they say does not save them), node
 * tokens, and lengths past the limits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "tests/unit/common/assert_fails.h"
#include "vnib/token.h"

/* Two keys of KEYLEN bytes (the arrays' last byte is the literal's NUL). */
#define KEYLEN 32
static const unsigned char key[KEYLEN + 1] = "0123456789abcdef0123456789abcdef";
static const unsigned char other_key[KEYLEN + 1] =
    "fedcba9876543210fedcba9876543210";

/* base64url without padding of HMAC-SHA256(key, msg), by OpenSSL's own
 * base64 with the URL alphabet substituted.
 */
static void ref_mac(const unsigned char *k, const char *msg, char out[48])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    unsigned char b64[64];

    assert_non_null(HMAC(EVP_sha256(),
                         k,
                         KEYLEN,
                         (const unsigned char *)msg,
                         strlen(msg),
                         md,
                         &mdlen));
    int n = EVP_EncodeBlock(b64, md, (int)mdlen);
    int o = 0;
    for (int i = 0; i < n && b64[i] != '='; i++)
        out[o++] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : (char)b64[i];
    out[o] = '\0';
}

/* "vnibjob.<resv>.<job>.<mac of resv and job under k>": a token whose MAC
 * is right for what it says, whatever its form.
 */
static void forge(const unsigned char *k,
                  const char *resv,
                  const char *job,
                  char *out,
                  size_t size)
{
    char msg[512], mac[48];

    snprintf(msg, sizeof(msg), "vnib-job:%s:%s", resv, job);
    ref_mac(k, msg, mac);
    snprintf(out, size, "vnibjob.%s.%s.%s", resv, job, mac);
}

/* token verifies under key as reservation resv of job. */
static void assert_verifies(const char *token, long long resv, const char *job)
{
    char got[TOKEN_JOB_ID_MAX];
    long long id = 0;

    if (!token_job_verify(key, KEYLEN, token, &id, got, sizeof(got)))
        fail_msg("'%s' does not verify", token);
    assert_int_equal(id, resv);
    assert_string_equal(got, job);
}

static void assert_refused(const char *token)
{
    char got[TOKEN_JOB_ID_MAX] = "untouched";
    long long id = -5;

    if (token_job_verify(key, KEYLEN, token, &id, got, sizeof(got)))
        fail_msg("'%s' verifies", token);
    assert_int_equal(id, -5);
    assert_string_equal(got, "untouched");
}

static void test_format(void **state)
{
    char token[TOKEN_JOB_SIZE], want[TOKEN_JOB_SIZE];
    (void)state;

    assert_int_equal(
        token_job_derive(key, KEYLEN, 42, "1234", token, sizeof(token), NULL),
        0);
    forge(key, "42", "1234", want, sizeof(want));
    assert_string_equal(token, want);
    assert_true(token_is_job(token));
    assert_false(token_is_node(token));
    /* 8 + "42" + "." + "1234" + "." + 43 MAC characters. */
    assert_int_equal(strlen(token), 8 + 2 + 1 + 4 + 1 + 43);
    assert_verifies(token, 42, "1234");
}

static void test_round_trip(void **state)
{
    static const char *const jobs[] = {
        "1",
        "1234",
        "1234_7",
        "a.b.c",
        ".",
        "a.",
        "x-",
        "job:12@c1+2",
        "ABCxyz.09_:@+-",
        "12.34.56.78",
    };
    static const long long ids[] = {1, 9, 10, 123456789, INT64_MAX};
    char token[TOKEN_JOB_SIZE];
    char job[129];
    (void)state;

    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        for (size_t j = 0; j < sizeof(ids) / sizeof(ids[0]); j++) {
            assert_int_equal(
                token_job_derive(
                    key, KEYLEN, ids[j], jobs[i], token, sizeof(token), NULL),
                0);
            assert_verifies(token, ids[j], jobs[i]);
        }
    }
    /* The longest job id and reservation id fit TOKEN_JOB_SIZE. */
    memset(job, 'j', 128);
    job[128] = '\0';
    assert_int_equal(
        token_job_derive(
            key, KEYLEN, INT64_MAX, job, token, sizeof(token), NULL),
        0);
    assert_true(strlen(token) < TOKEN_JOB_SIZE);
    assert_verifies(token, INT64_MAX, job);
}

static void test_wrong_key(void **state)
{
    char token[TOKEN_JOB_SIZE], got[TOKEN_JOB_ID_MAX];
    long long id = 0;
    (void)state;

    assert_int_equal(
        token_job_derive(
            other_key, KEYLEN, 7, "77", token, sizeof(token), NULL),
        0);
    assert_refused(token);
    assert_true(
        token_job_verify(other_key, KEYLEN, token, &id, got, sizeof(got)));
    /* A short key verifies nothing, even the token it would derive. */
    assert_false(token_job_verify(key, 16, token, &id, got, sizeof(got)));
}

static void test_tampered(void **state)
{
    char token[TOKEN_JOB_SIZE], t[TOKEN_JOB_SIZE + 16], mac[48];
    (void)state;

    assert_int_equal(
        token_job_derive(key, KEYLEN, 42, "1234.5", token, sizeof(token), NULL),
        0);
    const char *m = strrchr(token, '.') + 1;
    snprintf(mac, sizeof(mac), "%s", m);

    /* Another job, reservation, or both, under the same MAC. */
    snprintf(t, sizeof(t), "vnibjob.42.1235.5.%s", mac);
    assert_refused(t);
    snprintf(t, sizeof(t), "vnibjob.42.1234.%s", mac);
    assert_refused(t);
    snprintf(t, sizeof(t), "vnibjob.42.1234.5x.%s", mac);
    assert_refused(t);
    snprintf(t, sizeof(t), "vnibjob.43.1234.5.%s", mac);
    assert_refused(t);
    snprintf(t, sizeof(t), "vnibjob.420.1234.5.%s", mac);
    assert_refused(t);
    snprintf(t, sizeof(t), "vnibjob.042.1234.5.%s", mac);
    assert_refused(t);
    snprintf(t, sizeof(t), "vnibjob.4.21234.5.%s", mac);
    assert_refused(t);
    /* Each MAC character changed, one at a time. */
    for (size_t i = 0; mac[i]; i++) {
        snprintf(t, sizeof(t), "%s", token);
        char *c = strrchr(t, '.') + 1 + i;
        *c = *c == 'A' ? 'B' : 'A';
        assert_refused(t);
    }
    /* The MAC cut short, or lengthened. */
    snprintf(t, sizeof(t), "%s", token);
    t[strlen(t) - 1] = '\0';
    assert_refused(t);
    snprintf(t, sizeof(t), "%sA", token);
    assert_refused(t);
    /* The node prefix, or another case of the job prefix. */
    snprintf(t, sizeof(t), "vnibnode.%s", token + 8);
    assert_false(token_is_job(t));
    assert_refused(t);
    snprintf(t, sizeof(t), "VNIBJOB.%s", token + 8);
    assert_refused(t);
}

static void test_bad_forms(void **state)
{
    char t[512];
    (void)state;

    static const char *const plain[] = {
        "",
        "vnibjob",
        "vnibjob.",
        "vnibjob..",
        "vnibjob...",
        "vnibjob.42",
        "vnibjob.42.",
        "vnibjob.42.1234",
        "vnibjob.42..mac",
        "vnibjob..1234.mac",
        "vnib1.AAAA",
        "vnibnode.n1.AAAA",
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        assert_refused(plain[i]);

    /* Well-formed MACs of ill-formed fields: still refused. */
    static const struct {
        const char *resv, *job;
    } forms[] = {
        {"0", "1234"},                    /* reservation ids start at 1 */
        {"-1", "1234"},                   /* not digits */
        {"+1", "1234"},                   /* not digits */
        {"4x", "1234"},                   /* not digits */
        {" 42", "1234"},                  /* not digits */
        {"042", "1234"},                  /* a leading zero */
        {"9223372036854775808", "1234"},  /* INT64_MAX + 1 */
        {"99999999999999999999", "1234"}, /* 20 digits */
        {"42", "-1234"},                  /* a job id starting '-' */
        {"42", "12 34"},                  /* characters no job id has */
        {"42", "12/34"},
        {"42", "12#34"},
        {"42", "12%34"},
        {"42", "ü"},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        forge(key, forms[i].resv, forms[i].job, t, sizeof(t));
        assert_refused(t);
    }
    /* An empty job id has only one dot between its fields. */
    forge(key, "42", "", t, sizeof(t));
    assert_refused(t);
    /* The forger's own well-formed token is fine: forge() is right. */
    forge(key, "42", "1234", t, sizeof(t));
    assert_verifies(t, 42, "1234");
}

static void test_node_tokens_are_not_job_tokens(void **state)
{
    char node[TOKEN_NODE_SIZE], t[TOKEN_NODE_SIZE + 8];
    char got[TOKEN_NODE_MAX];
    (void)state;

    /* A node named like a job token's fields: its MAC is of "vnib-node:",
     * so it verifies as neither the job token nor the other way round.
     */
    assert_int_equal(
        token_node_derive(key, KEYLEN, "42.1234", node, sizeof(node), NULL), 0);
    snprintf(t, sizeof(t), "vnibjob.%s", node + strlen(TOKEN_NODE_PREFIX));
    assert_refused(t);
    assert_int_equal(
        token_job_derive(key, KEYLEN, 42, "1234", t, sizeof(t), NULL), 0);
    assert_false(token_node_verify(key, KEYLEN, t, got, sizeof(got)));
}

static void test_overlong(void **state)
{
    char token[TOKEN_JOB_SIZE], got[TOKEN_JOB_ID_MAX], t[512];
    char job[200];
    long long id = 0;
    (void)state;

    /* A 129-character job id: not derived, and not accepted with a
     * right MAC either.
     */
    memset(job, 'j', 129);
    job[129] = '\0';
    assert_fails(
        token_job_derive(key, KEYLEN, 1, job, token, sizeof(token), NULL),
        EINVAL);
    forge(key, "1", job, t, sizeof(t));
    assert_refused(t);
    /* A job id longer than the caller's buffer. */
    assert_int_equal(
        token_job_derive(key, KEYLEN, 1, "123456", token, sizeof(token), NULL),
        0);
    assert_false(token_job_verify(key, KEYLEN, token, &id, got, 6));
    assert_true(token_job_verify(key, KEYLEN, token, &id, got, 7));
    assert_string_equal(got, "123456");
    /* A token of 1000 dots and digits. */
    memset(t, '.', sizeof(t) - 1);
    memcpy(t, "vnibjob.1", 9);
    t[sizeof(t) - 1] = '\0';
    assert_refused(t);
}

static void test_derive_refusals(void **state)
{
    vnib_error_t e = {0};
    char token[TOKEN_JOB_SIZE];
    (void)state;

    assert_fails(
        token_job_derive(key, KEYLEN, 0, "1", token, sizeof(token), &e),
        EINVAL);
    assert_non_null(strstr(e.text, "reservation id 0"));
    assert_fails(
        token_job_derive(key, KEYLEN, -3, "1", token, sizeof(token), &e),
        EINVAL);
    assert_fails(
        token_job_derive(key, KEYLEN, 1, "-1", token, sizeof(token), &e),
        EINVAL);
    assert_non_null(strstr(e.text, "not a valid job id"));
    assert_fails(token_job_derive(key, KEYLEN, 1, "", token, sizeof(token), &e),
                 EINVAL);
    assert_fails(
        token_job_derive(key, KEYLEN, 1, NULL, token, sizeof(token), &e),
        EINVAL);
    assert_fails(token_job_derive(key, 31, 1, "1", token, sizeof(token), &e),
                 EINVAL);
    assert_non_null(strstr(e.text, "at least 32"));
    assert_fails(
        token_job_derive(key, KEYLEN, 1, "1", token, TOKEN_JOB_SIZE - 1, &e),
        EINVAL);
    assert_string_equal(e.text, "token buffer too small");
}

static void test_job_id_valid(void **state)
{
    char job[130];
    (void)state;

    assert_true(token_job_id_valid("1"));
    assert_true(token_job_id_valid("a-"));
    assert_true(token_job_id_valid(".x:y@z+w_v"));
    assert_false(token_job_id_valid(NULL));
    assert_false(token_job_id_valid(""));
    assert_false(token_job_id_valid("-a"));
    assert_false(token_job_id_valid("a b"));
    assert_false(token_job_id_valid("a/b"));
    memset(job, '7', 128);
    job[128] = '\0';
    assert_true(token_job_id_valid(job));
    job[128] = '7';
    job[129] = '\0';
    assert_false(token_job_id_valid(job));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_bad_forms),
        cmocka_unit_test(test_node_tokens_are_not_job_tokens),
        cmocka_unit_test(test_overlong),
        cmocka_unit_test(test_derive_refusals),
        cmocka_unit_test(test_job_id_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
