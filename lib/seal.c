/* SPDX-License-Identifier: GPL-2.0-or-later */
/* AES-256-GCM sealing of small secrets (see seal.h), with OpenSSL's EVP
 * interface.  Nonces are random: with 96 bits and far fewer than 2^32
 * seals per key, a repeat is not a practical concern.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "vnib/seal.h"

#define NONCE_LEN 12
#define TAG_LEN 16

int seal_encrypt(const unsigned char key[SEAL_KEY_LEN],
                 const void *plain,
                 size_t len,
                 const void *aad,
                 size_t aadlen,
                 unsigned char **outp,
                 size_t *outlenp,
                 vnib_error_t *errp)
{
    EVP_CIPHER_CTX *ctx = NULL;
    unsigned char *out = NULL;
    int n, rc = -1;

    if (len > 1 << 20 || !(out = malloc(len + SEAL_OVERHEAD))
        || !(ctx = EVP_CIPHER_CTX_new())) {
        errno = ENOMEM;
        errprintf(errp, "seal: out of memory");
        goto done;
    }
    if (RAND_bytes(out, NONCE_LEN) != 1
        || EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, out) != 1
        || EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1
        || EVP_EncryptUpdate(ctx, out + NONCE_LEN, &n, plain, (int)len) != 1
        || EVP_EncryptFinal_ex(ctx, out + NONCE_LEN + n, &n) != 1
        || EVP_CIPHER_CTX_ctrl(
               ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + NONCE_LEN + len)
               != 1) {
        errno = EIO;
        errprintf(errp, "seal: encryption failed");
        goto done;
    }
    *outp = out;
    *outlenp = len + SEAL_OVERHEAD;
    out = NULL;
    rc = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    free(out);
    return rc;
}

int seal_decrypt(const unsigned char key[SEAL_KEY_LEN],
                 const unsigned char *sealed,
                 size_t len,
                 const void *aad,
                 size_t aadlen,
                 char **plainp,
                 size_t *plainlenp,
                 vnib_error_t *errp)
{
    EVP_CIPHER_CTX *ctx = NULL;
    char *plain = NULL;
    unsigned char tag[TAG_LEN];
    size_t plen;
    int n, rc = -1;

    if (len < SEAL_OVERHEAD) {
        errno = EBADMSG;
        return errprintf(errp, "seal: sealed value too short");
    }
    plen = len - SEAL_OVERHEAD;
    memcpy(tag, sealed + NONCE_LEN + plen, TAG_LEN);
    if (!(plain = malloc(plen + 1)) || !(ctx = EVP_CIPHER_CTX_new())) {
        errno = ENOMEM;
        errprintf(errp, "seal: out of memory");
        goto done;
    }
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, sealed) != 1
        || EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1
        || EVP_DecryptUpdate(
               ctx, (unsigned char *)plain, &n, sealed + NONCE_LEN, (int)plen)
               != 1
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) != 1
        || EVP_DecryptFinal_ex(ctx, (unsigned char *)plain + n, &n) != 1) {
        errno = EBADMSG;
        errprintf(errp, "seal: the sealed value does not open with this key");
        goto done;
    }
    plain[plen] = '\0';
    *plainp = plain;
    *plainlenp = plen;
    plain = NULL;
    rc = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    if (plain) {
        OPENSSL_cleanse(plain, plen + 1);
        free(plain);
    }
    return rc;
}
