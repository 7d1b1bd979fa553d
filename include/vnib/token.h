/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Bearer tokens: generation, hashing, and per-node derivation.
 *
 * Two kinds of token authenticate to the broker:
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

/* Buffer sizes, including the NUL. */
#define TOKEN_SIZE 64          /* a named token (49 characters) */
#define TOKEN_HASH_HEX_SIZE 65 /* SHA-256 as lower-case hex */
#define TOKEN_NODE_MAX 256     /* longest node name, plus NUL */
#define TOKEN_NODE_SIZE (sizeof(TOKEN_NODE_PREFIX) + TOKEN_NODE_MAX + 1 + 44)

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

/* Fill key with len random bytes.  Returns 0 or -1. */
int token_key_generate(unsigned char *key, size_t len, vnib_error_t *errp);

#endif /* !VNIB_TOKEN_H */
