/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Leases (see lease.h): Ed25519 signatures over a base64url JSON payload,
 * with OpenSSL's EVP interface (one-shot EVP_DigestSign/Verify, as
 * Ed25519 signs the message itself, not a digest).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "vnib/lease.h"
#include "vnib/secfile.h"

#define PREFIX "vnib1."
#define PREFIX_LEN (sizeof(PREFIX) - 1)
#define SIG_LEN 64
#define RAW_KEY_LEN 32
#define KEYRING_MAX 8

struct lease_signer {
    EVP_PKEY *key;
    char kid[LEASE_KID_SIZE];
};

struct lease_keyring {
    size_t n;
    EVP_PKEY *key[KEYRING_MAX];
    char kid[KEYRING_MAX][LEASE_KID_SIZE];
};

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64url of len bytes, no padding; NULL on allocation failure. */
static char *b64_encode(const unsigned char *in, size_t len)
{
    char *out = malloc(len / 3 * 4 + 5);
    size_t i, o = 0;

    if (!out)
        return NULL;
    for (i = 0; i + 2 < len; i += 3) {
        uint32_t v =
            (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
        out[o++] = b64url[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64url[v >> 18 & 63];
        out[o++] = b64url[v >> 12 & 63];
        out[o++] = b64url[v >> 6 & 63];
    }
    out[o] = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64url, c) : NULL;
    return p ? (int)(p - b64url) : -1;
}

/* Decode len characters of base64url (no padding) into *outp (caller
 * frees, NUL-terminated for text); -1 on a bad character or length. */
static int b64_decode(const char *in,
                      size_t len,
                      unsigned char **outp,
                      size_t *outlenp)
{
    unsigned char *out;
    size_t i, o = 0;
    uint32_t v = 0;
    int bits = 0;

    if (len % 4 == 1 || !(out = malloc(len / 4 * 3 + 4)))
        return -1;
    for (i = 0; i < len; i++) {
        int d = b64_value(in[i]);
        if (d < 0) {
            free(out);
            return -1;
        }
        v = v << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits & 0xff);
        }
    }
    /* The bits left over must be zero: one text, one encoding. */
    if (bits > 0 && (v & ((1u << bits) - 1)) != 0) {
        free(out);
        return -1;
    }
    out[o] = '\0';
    *outp = out;
    *outlenp = o;
    return 0;
}

/* The key id of key: SHA-256 of its raw public key, first 8 bytes, hex. */
static int key_id(EVP_PKEY *key, char kid[LEASE_KID_SIZE])
{
    unsigned char raw[RAW_KEY_LEN], md[SHA256_DIGEST_LENGTH];
    size_t len = sizeof(raw);

    if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 || len != RAW_KEY_LEN)
        return -1;
    SHA256(raw, len, md);
    for (int i = 0; i < 8; i++)
        snprintf(kid + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* A PEM key of text: private when want_private, else public (or the
 * public half of a private one).  Only Ed25519 keys are taken. */
static EVP_PKEY *pem_key(const char *text, size_t len, int want_private)
{
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    EVP_PKEY *key = NULL;

    if (!bio)
        return NULL;
    if (want_private)
        key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    else if (!(key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL))) {
        (void)BIO_reset(bio);
        key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    }
    BIO_free(bio);
    if (key && EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    return key;
}

struct lease_signer *lease_signer_load(const char *path, vnib_error_t *errp)
{
    struct lease_signer *s = NULL;
    char *text = NULL;
    size_t len = 0;

    if (secfile_read_owned(path, &text, &len, errp) < 0)
        return NULL;
    if (!(s = calloc(1, sizeof(*s)))) {
        errno = ENOMEM;
        errprintf(errp, "%s: out of memory", path);
        goto done;
    }
    if (!(s->key = pem_key(text, len, 1)) || key_id(s->key, s->kid) < 0) {
        lease_signer_destroy(s);
        s = NULL;
        errno = EINVAL;
        errprintf(errp,
                  "%s: not an Ed25519 private key in PEM (make one with "
                  "`openssl genpkey -algorithm ed25519`)",
                  path);
    }
done:
    secfile_free(text, len);
    return s;
}

void lease_signer_destroy(struct lease_signer *s)
{
    if (!s)
        return;
    EVP_PKEY_free(s->key);
    free(s);
}

const char *lease_signer_kid(const struct lease_signer *s)
{
    return s->kid;
}

int lease_sign(const struct lease_signer *s,
               json_t *payload,
               time_t now,
               long ttl_s,
               char **leasep,
               vnib_error_t *errp)
{
    EVP_MD_CTX *ctx = NULL;
    char *body = NULL, *b64 = NULL, *sig64 = NULL, *out = NULL;
    unsigned char sig[SIG_LEN];
    size_t siglen = sizeof(sig), len;
    int rc = -1;

    *leasep = NULL;
    if (!json_is_object(payload)
        || json_object_set_new(payload, "v", json_integer(1)) < 0
        || json_object_set_new(payload, "kid", json_string(s->kid)) < 0
        || json_object_set_new(payload, "iat", json_integer((json_int_t)now))
               < 0
        || json_object_set_new(
               payload, "exp", json_integer((json_int_t)(now + ttl_s)))
               < 0
        || !(body = json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS))
        || !(b64 = b64_encode((unsigned char *)body, strlen(body)))) {
        errno = ENOMEM;
        errprintf(errp, "lease: out of memory");
        goto done;
    }
    len = PREFIX_LEN + strlen(b64);
    if (len + 1 + 88 > LEASE_MAX_LEN) {
        errno = E2BIG;
        errprintf(errp, "lease: %zu bytes, more than %u", len, LEASE_MAX_LEN);
        goto done;
    }
    if (!(out = malloc(len + 1 + 88))) {
        errno = ENOMEM;
        errprintf(errp, "lease: out of memory");
        goto done;
    }
    memcpy(out, PREFIX, PREFIX_LEN);
    memcpy(out + PREFIX_LEN, b64, len - PREFIX_LEN + 1);
    if (!(ctx = EVP_MD_CTX_new())
        || EVP_DigestSignInit(ctx, NULL, NULL, NULL, s->key) != 1
        || EVP_DigestSign(ctx, sig, &siglen, (unsigned char *)out, len) != 1
        || siglen != SIG_LEN || !(sig64 = b64_encode(sig, siglen))) {
        errno = EIO;
        errprintf(errp, "lease: signing failed");
        goto done;
    }
    out[len] = '.';
    memcpy(out + len + 1, sig64, strlen(sig64) + 1);
    *leasep = out;
    out = NULL;
    rc = 0;
done:
    EVP_MD_CTX_free(ctx);
    free(body);
    free(b64);
    free(sig64);
    free(out);
    return rc;
}

struct lease_keyring *lease_keyring_create(void)
{
    struct lease_keyring *r = calloc(1, sizeof(*r));
    if (!r)
        errno = ENOMEM;
    return r;
}

void lease_keyring_destroy(struct lease_keyring *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        EVP_PKEY_free(r->key[i]);
    free(r);
}

size_t lease_keyring_count(const struct lease_keyring *r)
{
    return r->n;
}

int lease_keyring_add_file(struct lease_keyring *r,
                           const char *path,
                           vnib_error_t *errp)
{
    EVP_PKEY *key = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = -1;

    if (r->n >= KEYRING_MAX) {
        errno = E2BIG;
        return errprintf(
            errp, "%s: more than %d lease keys", path, KEYRING_MAX);
    }
    if (secfile_read_public(path, &text, &len, errp) < 0)
        return -1;
    if (strstr(text, "PRIVATE KEY")) {
        /* A private key here must be as private as the broker's. */
        secfile_free(text, len);
        text = NULL;
        if (secfile_read(path, &text, &len, errp) < 0)
            return -1;
    }
    if (!(key = pem_key(text, len, 0))) {
        errno = EINVAL;
        errprintf(errp,
                  "%s: not an Ed25519 key in PEM (the broker's public key: "
                  "`openssl pkey -in lease.key -pubout`)",
                  path);
        goto done;
    }
    if (key_id(key, r->kid[r->n]) < 0) {
        errno = EINVAL;
        errprintf(errp, "%s: cannot read the key", path);
        goto done;
    }
    r->key[r->n++] = key;
    key = NULL;
    rc = 0;
done:
    EVP_PKEY_free(key);
    secfile_free(text, len);
    return rc;
}

static int fail(vnib_error_t *errp, int err, const char *what)
{
    errno = err;
    return errprintf(errp, "lease: %s", what);
}

/* Split lease into its payload (*payloadp, a new reference, with its
 * "v", "iat", "exp" and "kid" checked), its signature (*sigp, SIG_LEN
 * bytes, caller frees) and the length of its signed part (*signedp).
 * Returns 0, or -1 with errno EINVAL and errp.
 */
static int parse(const char *lease,
                 json_t **payloadp,
                 unsigned char **sigp,
                 size_t *signedp,
                 vnib_error_t *errp)
{
    unsigned char *body = NULL, *sig = NULL;
    size_t len, bodylen = 0, siglen = 0;
    const char *dot;
    json_t *p = NULL;
    int rc = -1;

    len = lease ? strnlen(lease, LEASE_MAX_LEN + 1) : 0;
    if (len > LEASE_MAX_LEN)
        return fail(errp, EINVAL, "longer than the longest lease accepted");
    if (len < PREFIX_LEN || memcmp(lease, PREFIX, PREFIX_LEN) != 0
        || !(dot = strchr(lease + PREFIX_LEN, '.')))
        return fail(errp, EINVAL, "not a lease (want vnib1.PAYLOAD.SIGNATURE)");
    if (b64_decode(lease + PREFIX_LEN,
                   (size_t)(dot - lease) - PREFIX_LEN,
                   &body,
                   &bodylen)
            < 0
        || b64_decode(dot + 1, len - (size_t)(dot + 1 - lease), &sig, &siglen)
               < 0
        || siglen != SIG_LEN || memchr(body, '\0', bodylen)) {
        fail(errp, EINVAL, "malformed encoding");
        goto done;
    }
    if (!(p = json_loadb((char *)body, bodylen, JSON_REJECT_DUPLICATES, NULL))
        || !json_is_object(p)
        || json_integer_value(json_object_get(p, "v")) != 1
        || !json_is_integer(json_object_get(p, "iat"))
        || !json_is_integer(json_object_get(p, "exp"))
        || !json_is_string(json_object_get(p, "kid"))) {
        fail(errp, EINVAL, "malformed payload");
        goto done;
    }
    *payloadp = p;
    *sigp = sig;
    *signedp = (size_t)(dot - lease);
    p = NULL;
    sig = NULL;
    rc = 0;
done:
    json_decref(p);
    free(body);
    free(sig);
    return rc;
}

int lease_decode(const char *lease, json_t **payloadp, vnib_error_t *errp)
{
    unsigned char *sig = NULL;
    size_t signed_len;

    *payloadp = NULL;
    if (parse(lease, payloadp, &sig, &signed_len, errp) < 0)
        return -1;
    free(sig);
    return 0;
}

int lease_verify(const struct lease_keyring *r,
                 const char *lease,
                 time_t now,
                 long skew_s,
                 json_t **payloadp,
                 vnib_error_t *errp)
{
    EVP_MD_CTX *ctx = NULL;
    unsigned char *sig = NULL;
    size_t signed_len = 0, i;
    const char *kid;
    json_t *p = NULL;
    json_int_t iat, exp;
    EVP_PKEY *key = NULL;
    int rc = -1;

    *payloadp = NULL;
    if (parse(lease, &p, &sig, &signed_len, errp) < 0)
        return -1;
    kid = json_string_value(json_object_get(p, "kid"));
    for (i = 0; i < r->n && !key; i++)
        if (strcmp(r->kid[i], kid) == 0)
            key = r->key[i];
    if (!key) {
        errno = ENOKEY;
        errprintf(errp,
                  "lease: signed by key %.16s, which this node does not have",
                  kid);
        goto done;
    }
    if (!(ctx = EVP_MD_CTX_new())
        || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) != 1
        || EVP_DigestVerify(
               ctx, sig, SIG_LEN, (const unsigned char *)lease, signed_len)
               != 1) {
        fail(errp, EBADMSG, "the signature does not verify");
        goto done;
    }
    iat = json_integer_value(json_object_get(p, "iat"));
    exp = json_integer_value(json_object_get(p, "exp"));
    if (iat > (json_int_t)now + skew_s) {
        errno = EKEYEXPIRED;
        errprintf(errp,
                  "lease: issued %lld s in the future (clocks differ?)",
                  (long long)(iat - (json_int_t)now));
        goto done;
    }
    if (exp < (json_int_t)now - skew_s) {
        errno = EKEYEXPIRED;
        errprintf(errp,
                  "lease: expired %lld s ago",
                  (long long)((json_int_t)now - exp));
        goto done;
    }
    *payloadp = p;
    p = NULL;
    rc = 0;
done:
    EVP_MD_CTX_free(ctx);
    json_decref(p);
    free(sig);
    return rc;
}
