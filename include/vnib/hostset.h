/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of host names for membership tests, read from a hostlist
 * expression without expanding it.
 *
 * Every node fetch, node report and step reserve asks whether a node is in
 * a job's node list.  The list is kept as the expression hostlist_encode()
 * writes, "nid[000001-000012,000014-000025,...]": each element is a range
 * of trailing numbers between a fixed prefix and suffix, the unit in
 * which the database keeps node lists too (reservation_ranges).  A hostset
 * reads an expression straight into such ranges, sorted and merged, so
 * that building one costs what the expression's length costs, not the
 * number of names it stands for, and a lookup is a binary search over
 * the ranges.  Groups of another shape (several brackets, or a bracket
 * that is not the last run of digits of its names, "rack[1-2]n7") are
 * accepted too: only those groups are expanded, within the caller's bound.
 */
#ifndef VNIB_HOSTSET_H
#define VNIB_HOSTSET_H

#include <stdbool.h>
#include <stddef.h>

#include "vnib/error.h"

struct hostset;

/* The set of names expr expands to (hostlist_decode()'s syntax and
 * errors: EINVAL for a malformed expression, E2BIG beyond max_names
 * names; also ENOMEM).  Returns NULL with errno set on failure.
 */
struct hostset *hostset_decode(const char *expr,
                               size_t max_names,
                               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free a set (NULL accepted).  errno is preserved. */
void hostset_destroy(struct hostset *hs);

/* True when name is in the set: exactly when hostlist_contains() would
 * find it in the expression's decoded list.  O(log ranges).
 */
bool hostset_contains(const struct hostset *hs, const char *name);

/* The number of ranges the set is held in (names sharing prefix, suffix
 * and number width, with consecutive numbers, make one range).
 */
size_t hostset_range_count(const struct hostset *hs);

#endif /* !VNIB_HOSTSET_H */
