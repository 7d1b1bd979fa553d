/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Host name sets as sorted ranges of trailing numbers (see hostset.h).
 *
 * The expression is first validated and its names counted by
 * hostlist_count_expr(), which allocates nothing, so every group read
 * below is well formed.  A copy of the expression keeps the prefixes and
 * suffixes the ranges point into.  A group "P[elements]S" whose bracket is
 * the last run of digits of its names (P does not end in a digit, S holds
 * none) becomes one or two ranges per element; any other group is decoded
 * by hostlist_decode() and each of its names becomes a range of one,
 * copied into a hostlist whose names never move.  The ranges are then
 * sorted by prefix, suffix, width and first number, and merged where they
 * overlap or touch, so that a lookup finds at most one candidate.
 *
 * A range's names have the keys hostlist_name_key() gives them: an element
 * written with a leading zero ("n[098-100]") pads to its width, and the
 * numbers that need as many digits print unpadded, with width 0 ("n100"),
 * so such an element splits in two ranges at 10^(width-1).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/hostset.h"

struct hs_range {
    const char *prefix; /* bytes before the number (not NUL-terminated) */
    const char *suffix; /* bytes after it (not NUL-terminated) */
    uint64_t lo;        /* first number */
    uint64_t hi;        /* last number, >= lo */
    uint8_t prefix_len;
    uint8_t suffix_len;
    int16_t width; /* as hostlist_key.width: -1, 0 or the padded width */
};

struct hostset {
    char *text;             /* the expression, its groups NUL-terminated */
    struct hostlist *names; /* names of the groups expanded one by one */
    struct hs_range *r;     /* sorted, merged */
    size_t n;
    size_t cap;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Append a range; no side effects on failure. */
static int add_range(struct hostset *hs,
                     const char *prefix,
                     size_t prefix_len,
                     const char *suffix,
                     size_t suffix_len,
                     int width,
                     uint64_t lo,
                     uint64_t hi)
{
    if (hs->n == hs->cap) {
        size_t cap = hs->cap ? hs->cap * 2 : 16;
        struct hs_range *r;
        if (cap > SIZE_MAX / sizeof(*r)
            || !(r = realloc(hs->r, cap * sizeof(*r)))) {
            errno = ENOMEM;
            return -1;
        }
        hs->r = r;
        hs->cap = cap;
    }
    hs->r[hs->n++] = (struct hs_range){.prefix = prefix,
                                       .suffix = suffix,
                                       .lo = lo,
                                       .hi = hi,
                                       .prefix_len = (uint8_t)prefix_len,
                                       .suffix_len = (uint8_t)suffix_len,
                                       .width = (int16_t)width};
    return 0;
}

/* The range of one name (NUL-terminated, stable while hs lives). */
static int add_name(struct hostset *hs, const char *name)
{
    struct hostlist_key k;

    hostlist_name_key(name, &k);
    return add_range(hs,
                     name,
                     k.prefix_len,
                     k.suffix,
                     strlen(k.suffix),
                     k.width,
                     k.num,
                     k.num);
}

/* Read a run of digits at *p (at most 18, as pass 1 checked). */
static uint64_t read_number(const char **p, size_t *ndig)
{
    const char *s = *p;
    uint64_t v = 0;

    while (is_digit(**p))
        v = v * 10 + (uint64_t)(*(*p)++ - '0');
    *ndig = (size_t)(*p - s);
    return v;
}

/* The ranges of "prefix[elements]suffix", the bracket at
 * prefix + prefix_len, whose numbers are the names' last digit run.
 */
static int add_bracket(struct hostset *hs,
                       const char *prefix,
                       size_t prefix_len,
                       const char *suffix)
{
    const char *p = prefix + prefix_len + 1;
    size_t suffix_len = strlen(suffix);

    for (;;) {
        size_t lo_dig, hi_dig;
        const char *lo_text = p;
        uint64_t lo = read_number(&p, &lo_dig);
        uint64_t hi = lo;
        if (*p == '-') {
            p++;
            hi = read_number(&p, &hi_dig);
        }
        /* A leading zero fixes the element's width, as hostlist_decode
         * reads it; numbers of that many digits print without padding.
         */
        int width = (lo_dig > 1 && lo_text[0] == '0') ? (int)lo_dig : 0;
        uint64_t unpadded = 0;
        if (width > 0) {
            unpadded = 1;
            for (int i = 1; i < width; i++)
                unpadded *= 10;
        }
        if (width > 0 && lo < unpadded
            && add_range(hs,
                         prefix,
                         prefix_len,
                         suffix,
                         suffix_len,
                         width,
                         lo,
                         hi < unpadded ? hi : unpadded - 1)
                   < 0)
            return -1;
        if (hi >= unpadded
            && add_range(hs,
                         prefix,
                         prefix_len,
                         suffix,
                         suffix_len,
                         0,
                         lo > unpadded ? lo : unpadded,
                         hi)
                   < 0)
            return -1;
        if (*p != ',')
            return 0; /* the ']' */
        p++;
    }
}

/* Every name of a group of another shape, one range each. */
static int add_expanded(struct hostset *hs,
                        const char *group,
                        size_t max_names,
                        vnib_error_t *errp)
{
    struct hostlist *hl = hostlist_decode(group, max_names, errp);
    int rc = -1;

    if (!hl)
        return -1;
    if (!hs->names && !(hs->names = hostlist_create()))
        goto done;
    for (size_t i = 0; i < hostlist_count(hl); i++) {
        size_t at = hostlist_count(hs->names);
        if (hostlist_append(hs->names, hostlist_nth(hl, i)) < 0
            || add_name(hs, hostlist_nth(hs->names, at)) < 0)
            goto done;
    }
    rc = 0;
done:
    hostlist_destroy(hl);
    return rc;
}

/* One group (NUL-terminated, validated). */
static int add_group(struct hostset *hs,
                     const char *g,
                     size_t max_names,
                     vnib_error_t *errp)
{
    const char *open = strchr(g, '[');

    if (!open)
        return add_name(hs, g);
    const char *close = strchr(open, ']');
    const char *suffix = close + 1;
    bool direct = !strchr(suffix, '[') && (open == g || !is_digit(open[-1]));
    for (const char *s = suffix; direct && *s; s++)
        if (is_digit(*s))
            direct = false;
    if (!direct)
        return add_expanded(hs, g, max_names, errp);
    return add_bracket(hs, g, (size_t)(open - g), suffix);
}

/* Order of names' keys without the number: prefix, suffix, width. */
static int cmp_key(const struct hs_range *a, const struct hs_range *b)
{
    int c =
        hostlist_cmp_bytes(a->prefix, a->prefix_len, b->prefix, b->prefix_len);
    if (c == 0)
        c = hostlist_cmp_bytes(
            a->suffix, a->suffix_len, b->suffix, b->suffix_len);
    if (c == 0)
        c = (a->width > b->width) - (a->width < b->width);
    return c;
}

static int qsort_range(const void *x, const void *y)
{
    const struct hs_range *a = x;
    const struct hs_range *b = y;
    int c = cmp_key(a, b);
    if (c != 0)
        return c;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

/* Sort, then merge the ranges of one key that overlap or touch. */
static void sort_merge(struct hostset *hs)
{
    size_t j = 0;

    if (hs->n == 0)
        return;
    qsort(hs->r, hs->n, sizeof(hs->r[0]), qsort_range);
    for (size_t i = 0; i < hs->n; i++) {
        struct hs_range *last = j > 0 ? &hs->r[j - 1] : NULL;
        if (last && cmp_key(last, &hs->r[i]) == 0
            && hs->r[i].lo <= last->hi + 1) {
            if (hs->r[i].hi > last->hi)
                last->hi = hs->r[i].hi;
            continue;
        }
        hs->r[j++] = hs->r[i];
    }
    hs->n = j;
}

struct hostset *hostset_decode(const char *expr,
                               size_t max_names,
                               vnib_error_t *errp)
{
    struct hostset *hs = NULL;
    size_t count;

    if (hostlist_count_expr(expr, max_names, &count, errp) < 0)
        return NULL;
    if (!(hs = calloc(1, sizeof(*hs))) || !(hs->text = strdup(expr)))
        goto nomem;
    /* Cut the copy into groups at the commas outside brackets. */
    char *g = hs->text;
    while (*g) {
        char *end = g;
        bool inside = false;
        while (*end && (inside || *end != ',')) {
            if (*end == '[')
                inside = true;
            else if (*end == ']')
                inside = false;
            end++;
        }
        bool last = *end == '\0';
        *end = '\0';
        if (add_group(hs, g, max_names, errp) < 0) {
            if (errno == ENOMEM)
                goto nomem;
            goto error; /* hostlist_decode's error (the byte bound) */
        }
        g = last ? end : end + 1;
    }
    sort_merge(hs);
    return hs;
nomem:
    errno = ENOMEM;
    errprintf(errp, "hostset: out of memory");
error:
    hostset_destroy(hs);
    return NULL;
}

void hostset_destroy(struct hostset *hs)
{
    if (hs) {
        int saved_errno = errno;
        free(hs->r);
        hostlist_destroy(hs->names);
        free(hs->text);
        free(hs);
        errno = saved_errno;
    }
}

bool hostset_contains(const struct hostset *hs, const char *name)
{
    struct hostlist_key k;
    size_t len, lo = 0, hi;

    if (!hs || !name || hs->n == 0)
        return false;
    len = strnlen(name, HOSTLIST_MAX_NAME_LEN + 1);
    if (len == 0 || len > HOSTLIST_MAX_NAME_LEN)
        return false;
    hostlist_name_key(name, &k);
    struct hs_range want = {.prefix = name,
                            .suffix = k.suffix,
                            .prefix_len = (uint8_t)k.prefix_len,
                            .suffix_len = (uint8_t)strlen(k.suffix),
                            .width = (int16_t)k.width};
    /* The first range after the name: its key is greater, or equal with
     * a first number above the name's.
     */
    hi = hs->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_key(&hs->r[mid], &want);
        if (c < 0 || (c == 0 && hs->r[mid].lo <= k.num))
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Only the range before it may hold the name. */
    return lo > 0 && cmp_key(&hs->r[lo - 1], &want) == 0
           && hs->r[lo - 1].hi >= k.num;
}

size_t hostset_range_count(const struct hostset *hs)
{
    return hs ? hs->n : 0;
}
