/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of small non-negative integers, written as range lists.
 *
 * VNI pools are configured as strings like "1024-65535" or
 * "1024-2047,4096-8191".  An idset holds such a set as sorted, disjoint,
 * non-adjacent ranges, which keeps membership, counting and the
 * round-robin "next free after the cursor" search cheap however large the
 * pool is.
 */
#ifndef VNIB_IDSET_H
#define VNIB_IDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"

struct idset;

/* Create an empty set whose members must lie in [0, max_id].
 * Returns NULL with errno set on failure.
 */
struct idset *idset_create(uint32_t max_id) VNIB_MUST_CHECK;

/* Free a set (NULL accepted).  errno is preserved. */
void idset_destroy(struct idset *set);

/* Parse "a-b,c,d-e" (whitespace around items allowed; ranges may overlap
 * or come in any order; "" is the empty set).  Every id must be in
 * [0, max_id] and lo <= hi.  Fails with EINVAL, and a message naming the
 * offending item.
 */
struct idset *idset_decode(const char *s,
                           uint32_t max_id,
                           vnib_error_t *errp) VNIB_MUST_CHECK;

/* Render as a canonical range list ("1024-2047,4096"); caller frees. */
char *idset_encode(const struct idset *set) VNIB_MUST_CHECK;

/* Add or remove an inclusive range.  Returns 0, or -1 with errno EINVAL
 * (lo > hi or hi > max_id) or ENOMEM.
 */
int idset_add_range(struct idset *set, uint32_t lo, uint32_t hi);
int idset_remove_range(struct idset *set, uint32_t lo, uint32_t hi);

/* Membership and size. */
bool idset_contains(const struct idset *set, uint32_t id);
size_t idset_count(const struct idset *set);

/* Smallest and largest member; -1 with errno ENOENT when empty. */
int idset_first(const struct idset *set, uint32_t *idp);
int idset_last(const struct idset *set, uint32_t *idp);

/* The smallest member strictly greater than cursor, wrapping round to the
 * smallest member when there is none.  With an empty set returns -1 and
 * errno ENOENT.  This is the round-robin step for VNI allocation.
 */
int idset_next_after(const struct idset *set, uint32_t cursor, uint32_t *idp);

/* Number of disjoint ranges and the i-th one (for rendering and SQL). */
size_t idset_range_count(const struct idset *set);
int idset_range(const struct idset *set,
                size_t i,
                uint32_t *lop,
                uint32_t *hip);

#endif /* !VNIB_IDSET_H */
