/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Bearer token formats and their cryptography (see token.h): named
 * tokens, and the node and job tokens derived under the node key.
 *
 * OpenSSL supplies SHA-256, HMAC, randomness and a constant-time compare.
 * Buffers that held key material or MACs are wiped before they go out of
 * scope.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "vnib/hex.h"
#include "vnib/token.h"

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url of len bytes; out needs 4*ceil(len/3)+1 bytes. */
static void b64url_encode(const unsigned char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        if (i + 1 < len)
            out[o++] = b64url[(v >> 6) & 63];
        if (i + 2 < len)
            out[o++] = b64url[v & 63];
    }
    out[o] = '\0';
}

int token_generate(char *buf, size_t size, vnib_error_t *errp)
{
    unsigned char raw[32];
    char enc[48];

    if (size < TOKEN_SIZE) {
        errno = EINVAL;
        return errprintf(errp, "token buffer too small");
    }
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        errno = EIO;
        return errprintf(errp, "no randomness available (OpenSSL RAND_bytes)");
    }
    b64url_encode(raw, sizeof(raw), enc);
    snprintf(buf, size, "%s%s", TOKEN_PREFIX, enc);
    OPENSSL_cleanse(raw, sizeof(raw));
    OPENSSL_cleanse(enc, sizeof(enc));
    return 0;
}

void token_hash_hex(const char *token, char hex[TOKEN_HASH_HEX_SIZE])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), md);
    hex_encode(md, sizeof(md), hex);
}

bool token_hash_valid(const char *hex)
{
    size_t n = 0;
    for (; hex[n]; n++) {
        char c = hex[n];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
              || (c >= 'A' && c <= 'F')))
            return false;
    }
    return n == 64;
}

bool token_node_name_valid(const char *node)
{
    size_t n = 0;
    if (!node || node[0] == '.' || node[0] == '-')
        return false;
    for (; node[n]; n++) {
        char c = node[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return n > 0 && n < TOKEN_NODE_MAX;
}

/* base64url HMAC-SHA256 of msg under key into out (at least 44 bytes). */
static int mac_of(const unsigned char *key,
                  size_t keylen,
                  const char *msg,
                  char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (!HMAC(EVP_sha256(),
              key,
              (int)keylen,
              (const unsigned char *)msg,
              strlen(msg),
              md,
              &mdlen))
        return -1;
    b64url_encode(md, mdlen, out);
    OPENSSL_cleanse(md, sizeof(md));
    return 0;
}

/* base64url MAC of "vnib-node:<node>" into out (at least 44 bytes). */
static int node_mac(const unsigned char *key,
                    size_t keylen,
                    const char *node,
                    char *out)
{
    char msg[TOKEN_NODE_MAX + 16];

    snprintf(msg, sizeof(msg), "vnib-node:%s", node);
    return mac_of(key, keylen, msg, out);
}

/* What every derived token checks before its MAC: the key's length and
 * the buffer's.  0, or -1 with errno EINVAL and errp.
 */
static int derive_check(size_t keylen,
                        size_t size,
                        size_t need,
                        vnib_error_t *errp)
{
    errno = EINVAL;
    if (keylen < TOKEN_KEY_MIN)
        return errprintf(errp,
                         "node key is %zu bytes; at least %d are needed",
                         keylen,
                         TOKEN_KEY_MIN);
    if (size < need)
        return errprintf(errp, "token buffer too small");
    errno = 0;
    return 0;
}

/* A MAC computation failed: -1 with errno EIO and errp. */
static int mac_failed(vnib_error_t *errp)
{
    errno = EIO;
    return errprintf(errp, "HMAC failed");
}

int token_node_derive(const unsigned char *key,
                      size_t keylen,
                      const char *node,
                      char *buf,
                      size_t size,
                      vnib_error_t *errp)
{
    char mac[48];

    if (!token_node_name_valid(node)) {
        errno = EINVAL;
        return errprintf(errp, "'%s' is not a valid node name", node);
    }
    if (derive_check(keylen, size, TOKEN_NODE_SIZE, errp) < 0)
        return -1;
    if (node_mac(key, keylen, node, mac) < 0)
        return mac_failed(errp);
    snprintf(buf, size, "%s%s.%s", TOKEN_NODE_PREFIX, node, mac);
    OPENSSL_cleanse(mac, sizeof(mac));
    return 0;
}

bool token_is_node(const char *token)
{
    return strncmp(token, TOKEN_NODE_PREFIX, strlen(TOKEN_NODE_PREFIX)) == 0;
}

bool token_node_verify(const unsigned char *key,
                       size_t keylen,
                       const char *token,
                       char *node,
                       size_t nodesize)
{
    char name[TOKEN_NODE_MAX];
    char want[48];
    bool ok = false;

    if (!token_is_node(token) || keylen < TOKEN_KEY_MIN)
        return false;
    const char *start = token + strlen(TOKEN_NODE_PREFIX);
    const char *dot = strrchr(start, '.');
    if (!dot || dot == start || (size_t)(dot - start) >= sizeof(name))
        return false;
    memcpy(name, start, (size_t)(dot - start));
    name[dot - start] = '\0';
    if (!token_node_name_valid(name) || strlen(name) >= nodesize)
        return false;
    if (node_mac(key, keylen, name, want) < 0)
        return false;
    size_t len = strlen(want);
    if (strlen(dot + 1) == len && CRYPTO_memcmp(dot + 1, want, len) == 0) {
        snprintf(node, nodesize, "%s", name);
        ok = true;
    }
    OPENSSL_cleanse(want, sizeof(want));
    return ok;
}

bool token_job_id_valid(const char *job_id)
{
    size_t n = job_id ? strspn(job_id, TOKEN_JOB_ID_CHARS) : 0;
    return n > 0 && n < TOKEN_JOB_ID_MAX && job_id[n] == '\0'
           && job_id[0] != '-';
}

/* base64url MAC of "vnib-job:<resv>:<job_id>" into out (at least 44
 * bytes); resv is the reservation id's decimal digits.  The id's digits
 * end at the first ':', so no two (resv, job_id) pairs share a message.
 */
static int job_mac(const unsigned char *key,
                   size_t keylen,
                   const char *resv,
                   const char *job_id,
                   char *out)
{
    char msg[16 + TOKEN_RESV_DIGITS + TOKEN_JOB_ID_MAX];

    snprintf(msg, sizeof(msg), "vnib-job:%s:%s", resv, job_id);
    return mac_of(key, keylen, msg, out);
}

int token_job_derive(const unsigned char *key,
                     size_t keylen,
                     long long resv_id,
                     const char *job_id,
                     char *buf,
                     size_t size,
                     vnib_error_t *errp)
{
    char resv[TOKEN_RESV_DIGITS + 2];
    char mac[48];

    if (!token_job_id_valid(job_id)) {
        errno = EINVAL;
        return errprintf(
            errp, "'%.40s' is not a valid job id", job_id ? job_id : "");
    }
    if (resv_id < 1) {
        errno = EINVAL;
        return errprintf(errp, "reservation id %lld is not positive", resv_id);
    }
    if (derive_check(keylen, size, TOKEN_JOB_SIZE, errp) < 0)
        return -1;
    snprintf(resv, sizeof(resv), "%lld", resv_id);
    if (job_mac(key, keylen, resv, job_id, mac) < 0)
        return mac_failed(errp);
    snprintf(buf, size, "%s%s.%s.%s", TOKEN_JOB_PREFIX, resv, job_id, mac);
    OPENSSL_cleanse(mac, sizeof(mac));
    return 0;
}

bool token_is_job(const char *token)
{
    return strncmp(token, TOKEN_JOB_PREFIX, strlen(TOKEN_JOB_PREFIX)) == 0;
}

/* The reservation id of a job token's digits [s, end): 1-19 decimal
 * digits without a leading zero, at most INT64_MAX; 0 when not.
 */
static long long resv_of(const char *s, const char *end)
{
    long long v = 0;
    size_t n = (size_t)(end - s);

    if (n == 0 || n > TOKEN_RESV_DIGITS || s[0] == '0')
        return 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    return v;
}

bool token_job_verify(const unsigned char *key,
                      size_t keylen,
                      const char *token,
                      long long *resv_idp,
                      char *job_id,
                      size_t jobsize)
{
    char resv[TOKEN_RESV_DIGITS + 1];
    char job[TOKEN_JOB_ID_MAX];
    char want[48];
    bool ok = false;

    if (!token_is_job(token) || keylen < TOKEN_KEY_MIN)
        return false;
    const char *start = token + strlen(TOKEN_JOB_PREFIX);
    const char *first = strchr(start, '.');
    const char *last = strrchr(start, '.');
    /* resv_id, a dot, at least one character of job id, a dot. */
    if (!first || last - first < 2)
        return false;
    long long id = resv_of(start, first);
    if (id == 0)
        return false;
    memcpy(resv, start, (size_t)(first - start));
    resv[first - start] = '\0';
    size_t joblen = (size_t)(last - first - 1);
    if (joblen >= sizeof(job) || joblen >= jobsize)
        return false;
    memcpy(job, first + 1, joblen);
    job[joblen] = '\0';
    if (!token_job_id_valid(job))
        return false;
    if (job_mac(key, keylen, resv, job, want) < 0)
        return false;
    size_t len = strlen(want);
    if (strlen(last + 1) == len && CRYPTO_memcmp(last + 1, want, len) == 0) {
        *resv_idp = id;
        snprintf(job_id, jobsize, "%s", job);
        ok = true;
    }
    OPENSSL_cleanse(want, sizeof(want));
    return ok;
}

int token_key_generate(unsigned char *key, size_t len, vnib_error_t *errp)
{
    if (RAND_bytes(key, (int)len) != 1) {
        errno = EIO;
        return errprintf(errp, "no randomness available (OpenSSL RAND_bytes)");
    }
    return 0;
}
