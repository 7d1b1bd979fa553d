/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Bearer tokens: generation, hashing, and per-node and per-job derivation.
 *
 * Three kinds of token authenticate to the broker:
 *
 *   - Named tokens for schedulers, admins and monitors: "vnib1." followed
 *     by 43 base64url characters (32 random bytes).  The broker never
 *     stores them: its tokens file holds "ROLE NAME SHA256HEX" lines, so
 *     a leaked file grants nothing.
 *
 *   - Node tokens: "vnibnode.<node>.<mac>" where mac is the base64url
 *     HMAC-SHA256 of "vnib-node:<node>" under the cluster's node key.
 *     Thousands of nodes need no per-node state: the broker recomputes
 *     the MAC from the name the token carries and compares in constant
 *     time.  Node names may contain dots; the MAC never does.
 *
 *   - Job tokens: "vnibjob.<resv_id>.<job_id>.<mac>" where mac is the
 *     base64url HMAC-SHA256 of "vnib-job:<resv_id>:<job_id>" under the
 *     same node key.  The broker hands one out with each reservation it
 *     makes (resv_id is that reservation's id), for Slurm's step manager
 *     (enable_stepmgr), which runs on a compute node and reserves and
 *     releases the job's steps without the scheduler's token.  Job ids may
 *     contain dots: resv_id ends at the first dot after the prefix, the
 *     MAC starts after the last.  Like node tokens they need no state, and
 *     one dies with the node key; that it dies with its reservation is the
 *     broker's check, not the format's.
 *
 * The same code is used by vnibrokerd to verify and by vnibctl to mint,
 * so the two can never disagree on the format.
 */
#ifndef VNIB_TOKEN_H
#define VNIB_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include "vnib/error.h"

#define TOKEN_PREFIX "vnib1."
#define TOKEN_NODE_PREFIX "vnibnode."
#define TOKEN_JOB_PREFIX "vnibjob."

/* Buffer sizes, including the NUL. */
#define TOKEN_SIZE 64          /* a named token (49 characters) */
#define TOKEN_HASH_HEX_SIZE 65 /* SHA-256 as lower-case hex */
#define TOKEN_NODE_MAX 256     /* longest node name, plus NUL */
#define TOKEN_NODE_SIZE (sizeof(TOKEN_NODE_PREFIX) + TOKEN_NODE_MAX + 1 + 44)
#define TOKEN_JOB_ID_MAX 129 /* longest job id (128), plus NUL */
#define TOKEN_RESV_DIGITS 19 /* digits of the largest reservation id */
#define TOKEN_JOB_SIZE                                                       \
    (sizeof(TOKEN_JOB_PREFIX) + TOKEN_RESV_DIGITS + 1 + TOKEN_JOB_ID_MAX + 1 \
     + 44)

/* The characters of a job id, the broker's rule (server/http/params.c):
 * 1-128 of them, the first not '-'.
 */
#define TOKEN_JOB_ID_CHARS                                 \
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" \
    "0123456789._:@+-"

/* Node keys are at least this many bytes of secret. */
#define TOKEN_KEY_MIN 32

/* Longest token accepted in an Authorization header. */
#define TOKEN_MAX_LEN 512

/* Write a new random named token into buf (at least TOKEN_SIZE bytes).
 * Returns 0, or -1 with errp set when the system has no randomness.
 */
int token_generate(char *buf, size_t size, vnib_error_t *errp);

/* SHA-256 of a token as 64 lower-case hex digits plus NUL. */
void token_hash_hex(const char *token, char hex[TOKEN_HASH_HEX_SIZE]);

/* True when hex is 64 lower- or upper-case hex digits. */
bool token_hash_valid(const char *hex);

/* True when node is a plausible host name: 1-255 bytes of letters,
 * digits, '-', '_' and '.', not starting with '.' or '-'.
 */
bool token_node_name_valid(const char *node);

/* Derive the token of `node` under key (keylen >= TOKEN_KEY_MIN) into buf
 * (at least TOKEN_NODE_SIZE bytes).  Returns 0 or -1 (EINVAL: bad name or
 * short key).
 */
int token_node_derive(const unsigned char *key,
                      size_t keylen,
                      const char *node,
                      char *buf,
                      size_t size,
                      vnib_error_t *errp);

/* Verify a node token: it must have the node form, a valid node name, and
 * the right MAC (compared in constant time).  On success copies the node
 * name into node (at least TOKEN_NODE_MAX bytes) and returns true.
 */
bool token_node_verify(const unsigned char *key,
                       size_t keylen,
                       const char *token,
                       char *node,
                       size_t nodesize);

/* True when token has the node form (says nothing of its validity). */
bool token_is_node(const char *token);

/* True when job_id is a job id the broker accepts: 1-128 characters of
 * TOKEN_JOB_ID_CHARS, not starting with '-'.
 */
bool token_job_id_valid(const char *job_id);

/* Derive the token of reservation resv_id (>= 1) of job_id under key
 * (keylen >= TOKEN_KEY_MIN) into buf (at least TOKEN_JOB_SIZE bytes).
 * Returns 0 or -1 (EINVAL: bad job id or reservation id, short key, small
 * buffer).
 */
int token_job_derive(const unsigned char *key,
                     size_t keylen,
                     long long resv_id,
                     const char *job_id,
                     char *buf,
                     size_t size,
                     vnib_error_t *errp);

/* Verify a job token: it must have the job form (resv_id: decimal without
 * a leading zero, 1 to INT64_MAX; a valid job id), and the right MAC
 * (compared in constant time).  On success sets *resv_idp, copies the job
 * id into job_id (at least TOKEN_JOB_ID_MAX bytes) and returns true.
 */
bool token_job_verify(const unsigned char *key,
                      size_t keylen,
                      const char *token,
                      long long *resv_idp,
                      char *job_id,
                      size_t jobsize);

/* True when token has the job form's prefix (says nothing of validity). */
bool token_is_job(const char *token);

/* Fill key with len random bytes.  Returns 0 or -1. */
int token_key_generate(unsigned char *key, size_t len, vnib_error_t *errp);

#endif /* !VNIB_TOKEN_H */
