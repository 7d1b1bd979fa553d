/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Token buckets per key (node reports per node name), in bounded memory.
 *
 * Each key has a bucket of `burst` tokens that refills at `rate` per
 * second; a request takes one token or is refused with the seconds until
 * one is back.  The buckets live in a fixed table (keys are 64-bit hashes
 * of the names, so the table holds no strings): a new key takes a free
 * slot, or one whose bucket has refilled completely (which is the same as
 * no bucket), or else the least recently used slot of its probe window.
 * Memory is therefore fixed whatever the number of names; with more busy
 * names than slots an evicted name starts again with a full bucket, which
 * errs on the side of letting reports through.
 *
 * Thread-safe: one mutex, held for a few dozen instructions.
 */
#ifndef VNIB_SERVER_RATELIMIT_H
#define VNIB_SERVER_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"

struct ratelimit;

/* A limiter of rate tokens per second and burst at once, over at least
 * `slots` buckets (rounded up to a power of two).  NULL with errno ENOMEM
 * or EINVAL (rate or burst not positive).
 */
struct ratelimit *ratelimit_create(double rate,
                                   double burst,
                                   size_t slots) VNIB_MUST_CHECK;

/* Free (NULL accepted). */
void ratelimit_destroy(struct ratelimit *rl);

/* Take a token of key's bucket at now_ms (a monotonic clock): true when
 * taken; false when the bucket is empty, with *retry_after_s the whole
 * seconds (at least 1) until a token is back.
 */
bool ratelimit_take(struct ratelimit *rl,
                    const char *key,
                    int64_t now_ms,
                    int *retry_after_s);

/* Slots in the table (for tests and the log). */
size_t ratelimit_slots(const struct ratelimit *rl);

#endif /* !VNIB_SERVER_RATELIMIT_H */
