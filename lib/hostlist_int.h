/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the hostlist module's files (hostlist.c, hostlist_parse.c,
 * hostlist_encode.c) share: the list's layout, its arena and the helpers
 * one file defines and the others call.  Private to lib/: callers have
 * vnib/hostlist.h.
 */
#ifndef VNIB_HOSTLIST_INT_H
#define VNIB_HOSTLIST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnib/hostlist.h"

/* Numbers in brackets have at most 18 digits, so every value and every
 * hi - lo + 1 fits a uint64_t with room to spare.  A name whose last digit
 * run is longer is treated as having no range field at all.
 */
#define HL_MAX_DIGITS 18

/* Arena chunks start small and double up to this size. */
#define HL_CHUNK_MIN 4096u
#define HL_CHUNK_MAX (1u << 20)

/* Every bracket adds at least one byte to a name, so a valid group never
 * has more brackets than the longest name has bytes.
 */
#define HL_MAX_BRACKETS HOSTLIST_MAX_NAME_LEN

struct hl_chunk {
    struct hl_chunk *prev; /* previously filled chunk, or NULL */
    size_t size;           /* bytes in data[] */
    size_t used;           /* bytes handed out so far */
    char data[];
};

/* Bytes of the prefix cached in hl_entry.head. */
#define HL_HEAD_LEN 8

struct hl_entry {
    const char *name; /* NUL-terminated, inside an arena chunk */
    uint64_t num;     /* value of the range field; 0 when dlen == 0 */
    uint64_t head;    /* first HL_HEAD_LEN prefix bytes, big-endian, 0-padded */
    uint8_t len;      /* strlen (name) */
    uint8_t plen;     /* bytes before the range field (len when none) */
    uint8_t dlen;     /* digits in the range field; 0 when there is none */
};

struct hostlist {
    struct hl_chunk *chunk; /* arena chunk being filled (chain head) */
    struct hl_entry *ents;  /* names, in list order */
    size_t count;           /* entries in use */
    size_t cap;             /* entries allocated */
    bool sorted;            /* sorted by cmp_uniq, without duplicates */
};

/* Explicit ranges rather than <ctype.h>: the syntax is ASCII whatever the
 * locale, and a negative char must never index a ctype table.
 */
bool hostlist_is_digit(char c);

bool hostlist_is_name_char(char c);

/* Any byte that may appear somewhere in an expression. */
bool hostlist_is_expr_char(char c);

/* Decimal digits needed to print v (v < 10^19). */
unsigned hostlist_ndigits(uint64_t v);

/* Print v in decimal, zero-padded to width, into dst (which must hold
 * max (width, 20) bytes).  Returns the number of bytes written, no NUL.
 */
size_t hostlist_fmt_u64(char *dst, uint64_t v, unsigned width);

/* Quote byte c for an error message: 'x' or '\xNN'. */
void hostlist_describe_byte(char *buf, size_t size, char c);

/* Make room for at least `want` entries.  Leaves the list unchanged on
 * failure.
 */
int hostlist_reserve_entries(struct hostlist *hl, size_t want);

/* Append a name already known to be valid.  No side effects on failure. */
int hostlist_add_name(struct hostlist *hl, const char *s, size_t len);

/* Compare prefixes.  Name bytes are never NUL, so comparing the
 * zero-padded heads orders prefixes exactly as hostlist_cmp_bytes would,
 * as far as the heads reach.
 */
int hostlist_cmp_prefix(const struct hl_entry *a, const struct hl_entry *b);

int hostlist_cmp_suffix(const struct hl_entry *a, const struct hl_entry *b);

/* The order encoding needs: names that differ only in their number are
 * adjacent ("n1-ib,n2-ib" must not be split by "n1-eth").  It equals the
 * uniq order whenever no name has a suffix.
 */
int hostlist_cmp_encode(const struct hl_entry *a, const struct hl_entry *b);

int hostlist_qsort_encode(const void *a, const void *b);

/* Sort by cmp (skipping the sort when already in order, so a decoded
 * range costs O(n)) and drop duplicates.  Returns the new count.
 */
size_t hostlist_sort_unique(struct hl_entry *ents,
                            size_t n,
                            int (*cmp)(const struct hl_entry *,
                                       const struct hl_entry *),
                            int (*qcmp)(const void *, const void *));

#endif /* VNIB_HOSTLIST_INT_H */
