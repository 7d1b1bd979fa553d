/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sealing small secrets at rest with AES-256-GCM.
 *
 * Fabric Manager session tokens are stored in PostgreSQL so that every
 * replica can hand them out, but a database dump must not leak them: the
 * broker seals each with a 32-byte key kept in a file only the broker can
 * read.  A sealed value is nonce (12 bytes) || ciphertext || tag (16
 * bytes); the reservation's id is bound as associated data, so a sealed
 * token copied onto another row does not open.
 */
#ifndef VNIB_SEAL_H
#define VNIB_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"

#define SEAL_KEY_LEN 32
#define SEAL_OVERHEAD (12 + 16)

/* Seal len bytes of plain under key, binding aad.  *outp (caller frees)
 * receives len + SEAL_OVERHEAD bytes.  Returns 0 or -1 with errp.
 */
int seal_encrypt(const unsigned char key[SEAL_KEY_LEN],
                 const void *plain,
                 size_t len,
                 const void *aad,
                 size_t aadlen,
                 unsigned char **outp,
                 size_t *outlenp,
                 vnib_error_t *errp);

/* Open a sealed value; *plainp (caller wipes and frees) is NUL-terminated.
 * Fails with EBADMSG when the value was altered, or sealed under another
 * key or for another aad.
 */
int seal_decrypt(const unsigned char key[SEAL_KEY_LEN],
                 const unsigned char *sealed,
                 size_t len,
                 const void *aad,
                 size_t aadlen,
                 char **plainp,
                 size_t *plainlenp,
                 vnib_error_t *errp);

#endif /* !VNIB_SEAL_H */
