/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Leases: a reservation's launch data, signed by the broker, that travel
 * to the nodes with the scheduler's own launch (Slurm's step switch data,
 * the Flux job's event) instead of each node asking the broker.
 *
 * A lease is the text "vnib1." B "." S, where B is the base64url (no
 * padding) of a JSON object, the payload, and S the base64url of the
 * Ed25519 signature of the ASCII bytes "vnib1." B.  The payload carries
 * "v" (1), "kid" (the signing key's id: the first 8 bytes of the SHA-256
 * of its raw public key, as 16 hex digits), "iat" and "exp" (Unix
 * seconds: issued, expires), and the reservation's fields a node needs
 * (docs/node-path.md lists them).  Nothing in it is secret: it may be
 * shown to the job's owner; the Fabric Manager's session token is never
 * in a lease.
 *
 * The broker signs with its private key (lease.key_file); nodes verify
 * with a keyring of public keys (the current one, and during a rotation
 * the next or the previous).  A lease is only as good as its checks by
 * the node: the signature, the key, the expiry, and then (the caller's)
 * that the job, step, owner and node are the ones being launched.
 */
#ifndef VNIB_LEASE_H
#define VNIB_LEASE_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "vnib/error.h"

/* The longest lease accepted (a fragmented full-machine node list fits). */
#define LEASE_MAX_LEN (256u * 1024)
/* A key id: 16 hex digits and a NUL. */
#define LEASE_KID_SIZE 17

struct lease_signer;
struct lease_keyring;

/* Load the broker's Ed25519 private key from a PEM file (PKCS#8, as
 * `openssl genpkey -algorithm ed25519` writes it), read as the caller's
 * own credential (secfile_read_owned: mode 0600 or stricter).  NULL with
 * errno and errp on failure.
 */
struct lease_signer *lease_signer_load(const char *path, vnib_error_t *errp);
void lease_signer_destroy(struct lease_signer *s);

/* The signer's key id (16 hex digits). */
const char *lease_signer_kid(const struct lease_signer *s);

/* Sign payload (a JSON object; its "v", "kid", "iat" and "exp" are set
 * here: iat = now, exp = now + ttl_s).  *leasep (caller frees) is the
 * lease text.  Returns 0, or -1 with errno and errp.
 */
int lease_sign(const struct lease_signer *s,
               json_t *payload,
               time_t now,
               long ttl_s,
               char **leasep,
               vnib_error_t *errp);

/* An empty keyring; NULL with errno on failure. */
struct lease_keyring *lease_keyring_create(void);
void lease_keyring_destroy(struct lease_keyring *r);

/* Add the public key of a PEM file: a public key (`openssl pkey -pubout`)
 * or a private key, whose public half is taken.  A public key file needs
 * no particular mode; a private one is read as a secret
 * (secfile_read).  Returns 0, or -1 with errno and errp (the message
 * names the file).
 */
int lease_keyring_add_file(struct lease_keyring *r,
                           const char *path,
                           vnib_error_t *errp);

/* The number of keys in the ring. */
size_t lease_keyring_count(const struct lease_keyring *r);

/* Verify a lease and decode its payload.  It must be well formed, at most
 * LEASE_MAX_LEN bytes, signed by a key of the ring (the payload's kid
 * names it), issued no later than now + skew_s and not expired before
 * now - skew_s.  On success *payloadp is a new reference to the payload
 * object.  Returns 0, or -1 with errno and errp: EINVAL (malformed),
 * ENOKEY (no key of the ring has its kid), EBADMSG (the signature does
 * not verify), EKEYEXPIRED (expired, or issued in the future).
 */
int lease_verify(const struct lease_keyring *r,
                 const char *lease,
                 time_t now,
                 long skew_s,
                 json_t **payloadp,
                 vnib_error_t *errp);

/* Decode a lease's payload without verifying it (vnibctl lease show with
 * no key): well formed as lease_verify wants it, or -1 with errno EINVAL
 * and errp.  Nothing in the payload is to be trusted.  On success
 * *payloadp is a new reference.
 */
int lease_decode(const char *lease, json_t **payloadp, vnib_error_t *errp);

#endif /* !VNIB_LEASE_H */
