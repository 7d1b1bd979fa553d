/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm hostlist expressions: parse, expand, count and compress.
 *
 * Schedulers name a job's nodes with compressed expressions such as
 * "tux[0-3,12,18-20]", "n[001-128]" or "login1,compute[1-4],gpu07".  The
 * broker stores and prints them compressed and checks node membership
 * against the expanded set.  Because an expression comes from the network,
 * expansion is bounded: a caller states the largest number of names it
 * accepts and the parser refuses anything larger before allocating it.
 */
#ifndef VNIB_HOSTLIST_H
#define VNIB_HOSTLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vnib/error.h"

/* Default bound on the names one expression may expand to. */
#define HOSTLIST_DEFAULT_MAX_NAMES 1000000u

/* Bound on the bytes of names one expression may expand to (each name
 * counted with its NUL), so that long names cannot multiply a name bound
 * into hundreds of megabytes.
 */
#define HOSTLIST_MAX_BYTES (64u * 1024 * 1024)

/* Longest host name accepted (bytes, without the NUL). */
#define HOSTLIST_MAX_NAME_LEN 255u

struct hostlist;

/* Create an empty list.  Returns NULL with errno set on failure. */
struct hostlist *hostlist_create(void) VNIB_MUST_CHECK;

/* Free a list (NULL is accepted).  errno is preserved. */
void hostlist_destroy(struct hostlist *hl);

/* Parse an expression into a new list, in the order the expression lists
 * the names (duplicates kept).  Syntax: comma-separated groups; a group is
 * a name with zero or more bracketed range lists, e.g. "rack[1-2]n[01-04]"
 * (several brackets expand as a cartesian product, leftmost slowest).  A
 * range list is comma-separated numbers or lo-hi ranges; a number written
 * with leading zeros fixes the width of the range ("n[001-128]").  Names
 * may hold letters, digits and "-_.".  Whitespace is not allowed.
 *
 * Fails with EINVAL (malformed: the message names the byte offset and the
 * reason) or E2BIG (more than max_names names, more than
 * HOSTLIST_MAX_BYTES of names, or a name longer than HOSTLIST_MAX_NAME_LEN).
 * The bound is checked before memory is taken.
 */
struct hostlist *hostlist_decode(const char *expr,
                                 size_t max_names,
                                 vnib_error_t *errp) VNIB_MUST_CHECK;

/* Count the names an expression expands to without expanding it.  Same
 * errors as hostlist_decode.  Returns 0 on success.
 */
int hostlist_count_expr(const char *expr,
                        size_t max_names,
                        size_t *countp,
                        vnib_error_t *errp);

/* Append one host name (validated as above).  Returns 0 or -1 (EINVAL). */
int hostlist_append(struct hostlist *hl, const char *name);

/* Number of names in the list. */
size_t hostlist_count(const struct hostlist *hl);

/* The n-th name (0-based), borrowed until the list changes; NULL past the
 * end.
 */
const char *hostlist_nth(const struct hostlist *hl, size_t n);

/* Sort the names (by prefix, then numerically by the trailing number,
 * then by the rest) and remove duplicates.
 */
void hostlist_uniq(struct hostlist *hl);

/* True when name is in the list.  After hostlist_uniq() this is a binary
 * search; otherwise a linear scan.
 */
bool hostlist_contains(const struct hostlist *hl, const char *name);

/* A host name split at its last run of digits, the unit in which node
 * lists are stored as ranges: "nid000042" is prefix "nid", number 42,
 * width 6; "n7-ib" is prefix "n", number 7, width 0, suffix "-ib"; "login"
 * has no number (width -1, number 0, prefix "login").  Two names are equal
 * exactly when their keys are, so a node belongs to a stored range when
 * prefix, suffix and width match and the number lies in the range.
 */
struct hostlist_key {
    size_t prefix_len;  /* bytes of name before the number */
    const char *suffix; /* the rest after the number, inside name */
    uint64_t num;       /* the number (0 without digits) */
    int width;          /* -1: no digits; 0: no leading zero; N: N digits,
                           zero-padded */
};

/* Split name (borrowed by the key).  A digit run longer than 18 digits is
 * not treated as a number.
 */
void hostlist_name_key(const char *name, struct hostlist_key *key);

/* The order of two byte strings (not NUL-terminated) that hostlist sorts
 * the parts of names in, and hostset the prefixes and suffixes of its
 * ranges: by their bytes, then the shorter first.  Inline, as it runs in
 * the sort of a million names.  Most suffixes are empty, and skipping the
 * call then keeps the comparison from touching the names at all (glibc's
 * vector memcmp reads them even for a zero length).
 */
static inline int hostlist_cmp_bytes(const char *a,
                                     size_t alen,
                                     const char *b,
                                     size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n > 0 ? memcmp(a, b, n) : 0;
    if (c != 0)
        return c;
    return (alen > blen) - (alen < blen);
}

/* Compress the list into an expression.  The list is not modified; the
 * result lists the same set of names (sorted, duplicates removed), grouping
 * names that differ only in their trailing number, with zero padding kept
 * ("n[001-003,010]").  Returns a string the caller frees, or NULL with
 * errno set.  An empty list encodes as "".
 */
char *hostlist_encode(const struct hostlist *hl) VNIB_MUST_CHECK;

#endif /* !VNIB_HOSTLIST_H */
