/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of small integers kept as sorted, disjoint, non-adjacent ranges.
 *
 * A VNI pool such as "1024-65535" is one range however many ids it holds,
 * so every operation here costs O(log r) or O(r) in the number of ranges r
 * and never O(ids).  The invariant, checked by the unit tests, is that
 * r[i].lo <= r[i].hi and r[i].hi + 1 < r[i + 1].lo: adding a range merges
 * every range it overlaps or touches, and removing one trims or splits.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/idset.h"

/* Longest piece of input quoted back in an error message. */
#define IDSET_QUOTE_MAX 32

struct idset_range {
    uint32_t lo; /* first member */
    uint32_t hi; /* last member, >= lo */
};

struct idset {
    uint32_t max_id;       /* members lie in [0, max_id] */
    struct idset_range *r; /* ranges, ascending */
    size_t n;              /* ranges in use */
    size_t cap;            /* ranges allocated */
};

struct idset *idset_create(uint32_t max_id)
{
    struct idset *set = calloc(1, sizeof(*set));
    if (set)
        set->max_id = max_id;
    return set;
}

void idset_destroy(struct idset *set)
{
    if (set) {
        int saved_errno = errno;
        free(set->r);
        free(set);
        errno = saved_errno;
    }
}

/* Make room for `extra` more ranges; the set is unchanged on failure. */
static int reserve(struct idset *set, size_t extra)
{
    struct idset_range *r;
    size_t cap;

    if (set->cap - set->n >= extra)
        return 0;
    cap = set->cap ? set->cap * 2 : 8;
    if (cap < set->n + extra)
        cap = set->n + extra;
    if (cap > SIZE_MAX / sizeof(*r)) {
        errno = ENOMEM;
        return -1;
    }
    if (!(r = realloc(set->r, cap * sizeof(*r))))
        return -1;
    set->r = r;
    set->cap = cap;
    return 0;
}

/* Index of the first range with hi >= key, or n.  The keys are uint64_t so
 * that callers can ask about id + 1 without wrapping.
 */
static size_t first_hi_at_least(const struct idset *set, uint64_t key)
{
    size_t lo = 0;
    size_t hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set->r[mid].hi < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the first range with lo > key, or n. */
static size_t first_lo_above(const struct idset *set, uint64_t key)
{
    size_t lo = 0;
    size_t hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set->r[mid].lo <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Replace ranges [i, j) by the `k` ranges in repl (k <= j - i + 1, with
 * room reserved by the caller when k > j - i).
 */
static void splice(struct idset *set,
                   size_t i,
                   size_t j,
                   const struct idset_range *repl,
                   size_t k)
{
    memmove(&set->r[i + k], &set->r[j], (set->n - j) * sizeof(set->r[0]));
    if (k > 0)
        memcpy(&set->r[i], repl, k * sizeof(repl[0]));
    set->n = set->n - (j - i) + k;
}

static int check_range(const struct idset *set, uint32_t lo, uint32_t hi)
{
    if (!set || lo > hi || hi > set->max_id) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int idset_add_range(struct idset *set, uint32_t lo, uint32_t hi)
{
    struct idset_range m = {lo, hi};
    size_t i;
    size_t j;

    if (check_range(set, lo, hi) < 0)
        return -1;
    /* Ranges [i, j) overlap [lo, hi] or touch it at either end. */
    i = first_hi_at_least(set, lo == 0 ? 0 : (uint64_t)lo - 1);
    j = first_lo_above(set, (uint64_t)hi + 1);
    if (i == j) {
        if (reserve(set, 1) < 0)
            return -1;
    } else {
        if (set->r[i].lo < m.lo)
            m.lo = set->r[i].lo;
        if (set->r[j - 1].hi > m.hi)
            m.hi = set->r[j - 1].hi;
    }
    splice(set, i, j, &m, 1);
    return 0;
}

int idset_remove_range(struct idset *set, uint32_t lo, uint32_t hi)
{
    struct idset_range keep[2];
    size_t k = 0;
    size_t i;
    size_t j;

    if (check_range(set, lo, hi) < 0)
        return -1;
    /* Ranges [i, j) overlap [lo, hi]; their parts outside it survive. */
    i = first_hi_at_least(set, lo);
    j = first_lo_above(set, hi);
    if (i == j)
        return 0;
    if (set->r[i].lo < lo)
        keep[k++] = (struct idset_range){set->r[i].lo, lo - 1};
    if (set->r[j - 1].hi > hi)
        keep[k++] = (struct idset_range){hi + 1, set->r[j - 1].hi};
    if (k > j - i && reserve(set, k - (j - i)) < 0)
        return -1;
    splice(set, i, j, keep, k);
    return 0;
}

bool idset_contains(const struct idset *set, uint32_t id)
{
    size_t i;

    if (!set)
        return false;
    i = first_hi_at_least(set, id);
    return i < set->n && set->r[i].lo <= id;
}

size_t idset_count(const struct idset *set)
{
    size_t total = 0;

    if (!set)
        return 0;
    for (size_t i = 0; i < set->n; i++)
        total += (size_t)(set->r[i].hi - set->r[i].lo) + 1;
    return total;
}

int idset_first(const struct idset *set, uint32_t *idp)
{
    if (!set || !idp || set->n == 0) {
        errno = ENOENT;
        return -1;
    }
    *idp = set->r[0].lo;
    return 0;
}

int idset_last(const struct idset *set, uint32_t *idp)
{
    if (!set || !idp || set->n == 0) {
        errno = ENOENT;
        return -1;
    }
    *idp = set->r[set->n - 1].hi;
    return 0;
}

int idset_next_after(const struct idset *set, uint32_t cursor, uint32_t *idp)
{
    size_t i;

    if (!set || !idp || set->n == 0) {
        errno = ENOENT;
        return -1;
    }
    i = first_hi_at_least(set, (uint64_t)cursor + 1);
    if (i == set->n)
        *idp = set->r[0].lo; /* wrap round */
    else if (set->r[i].lo > cursor)
        *idp = set->r[i].lo;
    else
        *idp = cursor + 1; /* cursor < r[i].hi, so this cannot wrap */
    return 0;
}

size_t idset_range_count(const struct idset *set)
{
    return set ? set->n : 0;
}

int idset_range(const struct idset *set, size_t i, uint32_t *lop, uint32_t *hip)
{
    if (!set || !lop || !hip || i >= set->n) {
        errno = EINVAL;
        return -1;
    }
    *lop = set->r[i].lo;
    *hip = set->r[i].hi;
    return 0;
}

char *idset_encode(const struct idset *set)
{
    char *out;
    size_t size;
    size_t len = 0;

    if (!set) {
        errno = EINVAL;
        return NULL;
    }
    /* "4294967295-4294967295," is 22 bytes. */
    if (set->n > (SIZE_MAX - 1) / 22) {
        errno = ENOMEM;
        return NULL;
    }
    size = set->n * 22 + 1;
    if (!(out = malloc(size)))
        return NULL;
    out[0] = '\0';
    for (size_t i = 0; i < set->n; i++) {
        const struct idset_range *r = &set->r[i];
        const char *sep = i > 0 ? "," : "";
        int n;
        if (r->lo == r->hi)
            n = snprintf(
                out + len, size - len, "%s%lu", sep, (unsigned long)r->lo);
        else
            n = snprintf(out + len,
                         size - len,
                         "%s%lu-%lu",
                         sep,
                         (unsigned long)r->lo,
                         (unsigned long)r->hi);
        len += (size_t)n;
    }
    return out;
}

/* ---- decoding ---------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Length of s[0..len) to quote in a message. */
static int quote_len(size_t len)
{
    return len > IDSET_QUOTE_MAX ? IDSET_QUOTE_MAX : (int)len;
}

/* Parse the decimal number s[0..len), which must be digits only, as an id
 * no larger than max_id.  Saturates instead of overflowing, so a long run
 * of digits is reported as out of range.
 */
static int parse_id(const char *s,
                    size_t len,
                    uint32_t max_id,
                    uint32_t *idp,
                    vnib_error_t *errp)
{
    uint64_t v = 0;

    for (size_t i = 0; i < len; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > UINT32_MAX)
            v = (uint64_t)UINT32_MAX + 1;
    }
    if (v > max_id) {
        errno = EINVAL;
        return errprintf(errp,
                         "idset: '%.*s' is out of range 0-%lu",
                         quote_len(len),
                         s,
                         (unsigned long)max_id);
    }
    *idp = (uint32_t)v;
    return 0;
}

/* Parse one item s[0..len) (already trimmed): "a" or "a-b". */
static int parse_item(struct idset *set,
                      const char *s,
                      size_t len,
                      vnib_error_t *errp)
{
    size_t a = 0;
    size_t b;
    uint32_t lo = 0;
    uint32_t hi = 0;

    while (a < len && is_digit(s[a]))
        a++;
    if (a == 0)
        goto invalid;
    if (a == len) {
        if (parse_id(s, a, set->max_id, &lo, errp) < 0)
            return -1;
        hi = lo;
    } else {
        if (s[a] != '-')
            goto invalid;
        b = a + 1;
        while (b < len && is_digit(s[b]))
            b++;
        if (b == a + 1 || b != len)
            goto invalid;
        if (parse_id(s, a, set->max_id, &lo, errp) < 0
            || parse_id(s + a + 1, len - a - 1, set->max_id, &hi, errp) < 0)
            return -1;
        if (lo > hi) {
            errno = EINVAL;
            return errprintf(
                errp, "idset: reversed range '%.*s'", quote_len(len), s);
        }
    }
    if (idset_add_range(set, lo, hi) < 0)
        return errprintf(errp, "idset: out of memory");
    return 0;
invalid:
    errno = EINVAL;
    return errprintf(errp, "idset: invalid item '%.*s'", quote_len(len), s);
}

struct idset *idset_decode(const char *s, uint32_t max_id, vnib_error_t *errp)
{
    struct idset *set = NULL;
    size_t pos = 0;

    if (!s) {
        errno = EINVAL;
        errprintf(errp, "idset: no input");
        return NULL;
    }
    if (!(set = idset_create(max_id))) {
        errprintf(errp, "idset: out of memory");
        return NULL;
    }
    while (is_space(s[pos]))
        pos++;
    if (s[pos] == '\0')
        return set; /* "" and all-blank strings are the empty set */
    for (pos = 0;;) {
        size_t start = pos;
        size_t end;

        while (s[pos] != '\0' && s[pos] != ',')
            pos++;
        end = pos;
        while (start < end && is_space(s[start]))
            start++;
        while (end > start && is_space(s[end - 1]))
            end--;
        if (start == end) {
            errno = EINVAL;
            errprintf(errp, "idset: empty item at offset %zu", start);
            goto error;
        }
        if (parse_item(set, s + start, end - start, errp) < 0)
            goto error;
        if (s[pos] == '\0')
            break;
        pos++;
    }
    return set;
error:
    idset_destroy(set);
    return NULL;
}
