/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm hostlist expressions: bounded parsing, expansion and compression.
 *
 * An expression arrives from the network, so decoding works in two passes.
 * The first pass validates the syntax and counts the names with checked
 * arithmetic without allocating anything; only when the count fits the
 * caller's bound does the second pass expand the text into the list.
 * hostlist_count_expr() is the first pass on its own.
 *
 * Names are stored in a chain of arena chunks that never move, so a name
 * returned by hostlist_nth() stays valid while more names are appended.
 * Each entry caches how its name splits into prefix, range field (the last
 * run of digits) and suffix, so sorting and compressing never re-parse a
 * name.  Both are O(n log n) at worst and O(n) on input that is already in
 * order, which is the usual case for a decoded expression.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* 10^0 .. 10^18 for counting decimal digits. */
static const uint64_t pow10_tab[HL_MAX_DIGITS + 1] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
};

/* ---- characters and numbers -------------------------------------------- */

/* Explicit ranges rather than <ctype.h>: the syntax is ASCII whatever the
 * locale, and a negative char must never index a ctype table.
 */
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c)
           || c == '-' || c == '_' || c == '.';
}

/* Any byte that may appear somewhere in an expression. */
static bool is_expr_char(char c)
{
    return is_name_char(c) || c == '[' || c == ']' || c == ',';
}

/* Decimal digits needed to print v (v < 10^19). */
static unsigned ndigits(uint64_t v)
{
    unsigned n = 1;
    while (n <= HL_MAX_DIGITS && v >= pow10_tab[n])
        n++;
    return n;
}

/* Print v in decimal, zero-padded to width, into dst (which must hold
 * max (width, 20) bytes).  Returns the number of bytes written, no NUL.
 */
static size_t fmt_u64(char *dst, uint64_t v, unsigned width)
{
    char tmp[20];
    size_t n = 0;
    size_t len = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (len + n < width)
        dst[len++] = '0';
    while (n > 0)
        dst[len++] = tmp[--n];
    return len;
}

/* Quote byte c for an error message: 'x' or '\xNN'. */
static void describe_byte(char *buf, size_t size, char c)
{
    unsigned char u = (unsigned char)c;
    if (u >= 0x20 && u < 0x7f)
        snprintf(buf, size, "'%c'", c);
    else
        snprintf(buf, size, "'\\x%02x'", u);
}

/* ---- entries and the arena --------------------------------------------- */

/* Fill in e->head.  Sorting a million names compares prefixes twenty
 * million times; with the head cached in the entry most comparisons never
 * touch the arena and its cache misses.
 */
static void entry_head(struct hl_entry *e)
{
    e->head = 0;
    for (size_t i = 0; i < HL_HEAD_LEN; i++) {
        unsigned char c = i < e->plen ? (unsigned char)e->name[i] : 0;
        e->head = e->head << 8 | c;
    }
}

/* Split name into prefix, range field and suffix.  The range field is the
 * last run of digits, so "rack1-node01" has prefix "rack1-node" and "n1a"
 * has suffix "a".  A name without digits, or whose last run is too long
 * for a bracket, has no range field and its prefix is the whole name.
 */
static void entry_key(struct hl_entry *e, const char *name, size_t len)
{
    size_t end = len;
    size_t start;

    e->name = name;
    e->len = (uint8_t)len;
    e->plen = (uint8_t)len;
    e->dlen = 0;
    e->num = 0;

    while (end > 0 && !is_digit(name[end - 1]))
        end--;
    start = end;
    while (start > 0 && is_digit(name[start - 1]))
        start--;
    if (end == 0 || end - start > HL_MAX_DIGITS)
        goto done;
    e->plen = (uint8_t)start;
    e->dlen = (uint8_t)(end - start);
    for (size_t i = start; i < end; i++)
        e->num = e->num * 10 + (uint64_t)(name[i] - '0');
done:
    entry_head(e);
}

/* Copy len bytes plus a NUL into the arena.  Chunks are never moved or
 * freed before the list is, so the returned pointer stays valid.
 */
static const char *arena_store(struct hostlist *hl, const char *s, size_t len)
{
    struct hl_chunk *c = hl->chunk;

    if (!c || c->size - c->used < len + 1) {
        size_t size = c ? c->size * 2 : HL_CHUNK_MIN;
        if (size > HL_CHUNK_MAX)
            size = HL_CHUNK_MAX;
        if (size < len + 1)
            size = len + 1;
        if (!(c = malloc(sizeof(*c) + size)))
            return NULL;
        c->prev = hl->chunk;
        c->size = size;
        c->used = 0;
        hl->chunk = c;
    }
    char *dst = c->data + c->used;
    memcpy(dst, s, len);
    dst[len] = '\0';
    c->used += len + 1;
    return dst;
}

/* Make room for at least `want` entries.  Leaves the list unchanged on
 * failure.
 */
static int reserve_entries(struct hostlist *hl, size_t want)
{
    struct hl_entry *ents;

    if (want <= hl->cap)
        return 0;
    if (want > SIZE_MAX / sizeof(*ents)) {
        errno = ENOMEM;
        return -1;
    }
    if (!(ents = realloc(hl->ents, want * sizeof(*ents))))
        return -1;
    hl->ents = ents;
    hl->cap = want;
    return 0;
}

/* Append a name already known to be valid.  No side effects on failure. */
static int add_name(struct hostlist *hl, const char *s, size_t len)
{
    const char *name;

    if (hl->count == hl->cap) {
        size_t want = hl->cap ? hl->cap * 2 : 16;
        if (want < hl->cap || reserve_entries(hl, want) < 0) {
            errno = ENOMEM;
            return -1;
        }
    }
    if (!(name = arena_store(hl, s, len)))
        return -1;
    entry_key(&hl->ents[hl->count++], name, len);
    hl->sorted = false;
    return 0;
}

/* ---- ordering ---------------------------------------------------------- */

/* Compare prefixes.  Name bytes are never NUL, so comparing the
 * zero-padded heads orders prefixes exactly as hostlist_cmp_bytes would,
 * as far as the heads reach.
 */
static int cmp_prefix(const struct hl_entry *a, const struct hl_entry *b)
{
    int c;

    if (a->head != b->head)
        return a->head < b->head ? -1 : 1;
    if (a->plen > HL_HEAD_LEN && b->plen > HL_HEAD_LEN)
        c = hostlist_cmp_bytes(a->name + HL_HEAD_LEN,
                               a->plen - HL_HEAD_LEN,
                               b->name + HL_HEAD_LEN,
                               b->plen - HL_HEAD_LEN);
    else
        c = (a->plen > b->plen) - (a->plen < b->plen);
    return c;
}

/* Numeric value of the range field, then its width ("1" before "01").  A
 * name without a range field has num 0 and dlen 0, so it sorts before the
 * numbered names sharing its prefix ("n" before "n0").
 */
static int cmp_number(const struct hl_entry *a, const struct hl_entry *b)
{
    if (a->num != b->num)
        return a->num < b->num ? -1 : 1;
    return (a->dlen > b->dlen) - (a->dlen < b->dlen);
}

static int cmp_suffix(const struct hl_entry *a, const struct hl_entry *b)
{
    size_t aoff = (size_t)a->plen + a->dlen;
    size_t boff = (size_t)b->plen + b->dlen;
    return hostlist_cmp_bytes(
        a->name + aoff, a->len - aoff, b->name + boff, b->len - boff);
}

/* The order of hostlist_uniq(): prefix, number, then the rest.  Two
 * entries compare equal only when their names are equal, because prefix,
 * value, width and suffix together spell the name.
 */
static int cmp_uniq(const struct hl_entry *a, const struct hl_entry *b)
{
    int c;
    if ((c = cmp_prefix(a, b)) != 0 || (c = cmp_number(a, b)) != 0)
        return c;
    return cmp_suffix(a, b);
}

/* The order encoding needs: names that differ only in their number are
 * adjacent ("n1-ib,n2-ib" must not be split by "n1-eth").  It equals the
 * uniq order whenever no name has a suffix.
 */
static int cmp_encode(const struct hl_entry *a, const struct hl_entry *b)
{
    int c;
    if ((c = cmp_prefix(a, b)) != 0 || (c = cmp_suffix(a, b)) != 0)
        return c;
    return cmp_number(a, b);
}

static int qsort_uniq(const void *a, const void *b)
{
    return cmp_uniq(a, b);
}

static int qsort_encode(const void *a, const void *b)
{
    return cmp_encode(a, b);
}

/* Sort by cmp (skipping the sort when already in order, so a decoded
 * range costs O(n)) and drop duplicates.  Returns the new count.
 */
static size_t sort_unique(struct hl_entry *ents,
                          size_t n,
                          int (*cmp)(const struct hl_entry *,
                                     const struct hl_entry *),
                          int (*qcmp)(const void *, const void *))
{
    size_t i;
    size_t j;

    for (i = 1; i < n; i++)
        if (cmp(&ents[i - 1], &ents[i]) > 0)
            break;
    if (i < n)
        qsort(ents, n, sizeof(ents[0]), qcmp);
    for (i = 0, j = 0; i < n; i++)
        if (j == 0 || cmp(&ents[j - 1], &ents[i]) != 0)
            ents[j++] = ents[i];
    return j;
}

/* ---- pass 1: validate and count ---------------------------------------- */

struct hl_scan {
    const char *expr;   /* the whole expression, for offsets */
    size_t pos;         /* offset of the next byte to read */
    size_t bracket;     /* offset of the open '[' while inside one */
    size_t max_names;   /* the caller's bound, for messages */
    vnib_error_t *errp; /* where messages go (may be NULL) */
};

/* Report the byte at off inside a bracket, which is not what the grammar
 * allows there.  Always returns -1 with errno EINVAL.
 */
static int bracket_error(struct hl_scan *sc, size_t off, const char *expected)
{
    char c = sc->expr[off];
    char what[16];

    errno = EINVAL;
    if (c == '\0')
        return errprintf(
            sc->errp, "hostlist: unbalanced '[' at offset %zu", sc->bracket);
    if (c == '[')
        return errprintf(sc->errp, "hostlist: nested '[' at offset %zu", off);
    describe_byte(what, sizeof(what), c);
    if (!is_expr_char(c))
        return errprintf(sc->errp,
                         "hostlist: invalid character %s at offset %zu",
                         what,
                         off);
    return errprintf(sc->errp,
                     "hostlist: expected %s at offset %zu, found %s",
                     expected,
                     off,
                     what);
}

static int too_many(struct hl_scan *sc)
{
    errno = E2BIG;
    return errprintf(sc->errp,
                     "hostlist: expression expands to more than %zu names",
                     sc->max_names);
}

/* Read a run of at most HL_MAX_DIGITS digits. */
static int scan_number(struct hl_scan *sc, uint64_t *valp, size_t *ndigp)
{
    size_t start = sc->pos;
    uint64_t v = 0;

    /* The -1 is spelt out: clang's analyzer, this deep in calls, no longer
     * follows bracket_error to see that *valp is set whenever 0 is returned.
     */
    if (!is_digit(sc->expr[sc->pos])) {
        bracket_error(sc, sc->pos, "a number");
        return -1;
    }
    while (is_digit(sc->expr[sc->pos])) {
        if (sc->pos - start == HL_MAX_DIGITS) {
            errno = EINVAL;
            return errprintf(sc->errp,
                             "hostlist: number at offset %zu has more than"
                             " %d digits",
                             start,
                             HL_MAX_DIGITS);
        }
        v = v * 10 + (uint64_t)(sc->expr[sc->pos++] - '0');
    }
    *valp = v;
    *ndigp = sc->pos - start;
    return 0;
}

/* Read "[a,b-c,...]" starting at the '['.  Sets *countp to the number of
 * values (at most budget, else E2BIG) and *lenp to the longest rendering.
 */
static int scan_bracket(struct hl_scan *sc,
                        uint64_t budget,
                        uint64_t *countp,
                        size_t *lenp)
{
    uint64_t total = 0;
    size_t maxlen = 0;

    sc->bracket = sc->pos++;
    if (sc->expr[sc->pos] == ']') {
        errno = EINVAL;
        return errprintf(
            sc->errp, "hostlist: empty brackets at offset %zu", sc->bracket);
    }
    for (;;) {
        size_t lo_off = sc->pos;
        size_t lo_dig;
        size_t hi_dig;
        uint64_t lo;
        uint64_t hi;

        if (scan_number(sc, &lo, &lo_dig) < 0)
            return -1;
        hi = lo;
        hi_dig = lo_dig;
        if (sc->expr[sc->pos] == '-') {
            size_t hi_off = ++sc->pos;
            if (scan_number(sc, &hi, &hi_dig) < 0)
                return -1;
            if (lo > hi) {
                errno = EINVAL;
                return errprintf(sc->errp,
                                 "hostlist: range %.*s-%.*s is reversed at"
                                 " offset %zu",
                                 (int)lo_dig,
                                 sc->expr + lo_off,
                                 (int)hi_dig,
                                 sc->expr + hi_off,
                                 lo_off);
            }
        }
        /* A leading zero fixes the width of the whole element. */
        size_t width = (lo_dig > 1 && sc->expr[lo_off] == '0') ? lo_dig : 0;
        size_t len = ndigits(hi);
        if (len < width)
            len = width;
        if (len > maxlen)
            maxlen = len;

        /* Both terms are at most budget, so neither step can overflow. */
        uint64_t n = hi - lo + 1;
        if (n > budget || total > budget - n)
            return too_many(sc);
        total += n;

        if (sc->expr[sc->pos] == ',') {
            sc->pos++;
            continue;
        }
        if (sc->expr[sc->pos] == ']') {
            sc->pos++;
            break;
        }
        return bracket_error(sc, sc->pos, "',', '-' or ']'");
    }
    *countp = total;
    *lenp = maxlen;
    return 0;
}

/* Read one comma-delimited group and count the names it expands to, at
 * most budget.  Leaves sc->pos on the ',' or NUL that ends it.
 */
static int scan_group(struct hl_scan *sc,
                      uint64_t budget,
                      uint64_t *countp,
                      size_t *lenp)
{
    size_t start = sc->pos;
    uint64_t count = 1;
    size_t len = 0;
    char what[16];

    for (;;) {
        char c = sc->expr[sc->pos];

        if (c == '\0' || c == ',')
            break;
        if (c == '[') {
            uint64_t n = 1;
            size_t blen = 0;
            if (scan_bracket(sc, budget, &n, &blen) < 0)
                return -1;
            if (count > budget / n)
                return too_many(sc);
            count *= n;
            len += blen;
        } else if (c == ']') {
            errno = EINVAL;
            return errprintf(
                sc->errp, "hostlist: unbalanced ']' at offset %zu", sc->pos);
        } else if (is_name_char(c)) {
            sc->pos++;
            len++;
        } else {
            errno = EINVAL;
            describe_byte(what, sizeof(what), c);
            return errprintf(sc->errp,
                             "hostlist: invalid character %s at offset %zu",
                             what,
                             sc->pos);
        }
        if (len > HOSTLIST_MAX_NAME_LEN) {
            errno = E2BIG;
            return errprintf(sc->errp,
                             "hostlist: name at offset %zu is longer than"
                             " %u bytes",
                             start,
                             HOSTLIST_MAX_NAME_LEN);
        }
    }
    if (sc->pos == start) {
        errno = EINVAL;
        return errprintf(sc->errp, "hostlist: empty name at offset %zu", start);
    }
    if (count > budget)
        return too_many(sc);
    *countp = count;
    *lenp = len;
    return 0;
}

/* Pass 1 over a whole expression: validate it and count its names. */
static int scan_expr(const char *expr,
                     size_t max_names,
                     bool bound_bytes,
                     uint64_t *countp,
                     vnib_error_t *errp)
{
    struct hl_scan sc = {
        .expr = expr,
        .max_names = max_names,
        .errp = errp,
    };
    uint64_t total = 0;
    uint64_t bytes = 0;

    if (!expr) {
        errno = EINVAL;
        return errprintf(errp, "hostlist: no expression");
    }
    if (expr[0] != '\0') {
        for (;;) {
            uint64_t n = 0;
            size_t len = 0;
            if (scan_group(&sc, (uint64_t)max_names - total, &n, &len) < 0)
                return -1;
            total += n;
            /* n <= max_names and len <= 255, so this cannot overflow. */
            bytes += n * (len + 1);
            if (bound_bytes && bytes > HOSTLIST_MAX_BYTES) {
                errno = E2BIG;
                return errprintf(errp,
                                 "hostlist: expression expands to more than"
                                 " %u bytes of names",
                                 HOSTLIST_MAX_BYTES);
            }
            if (expr[sc.pos] != ',')
                break;
            sc.pos++;
        }
    }
    *countp = total;
    return 0;
}

int hostlist_count_expr(const char *expr,
                        size_t max_names,
                        size_t *countp,
                        vnib_error_t *errp)
{
    uint64_t count;

    if (!countp) {
        errno = EINVAL;
        return errprintf(errp, "hostlist: no count pointer");
    }
    if (scan_expr(expr, max_names, false, &count, errp) < 0)
        return -1;
    *countp = (size_t)count; /* at most max_names */
    return 0;
}

/* ---- pass 2: expand ---------------------------------------------------- */

/* Odometer state for one bracket of a group being expanded. */
struct hl_bracket {
    const char *first; /* first element, just after the '[' */
    const char *next;  /* byte after the current element: ',' or ']' */
    uint64_t cur;      /* value to emit next */
    uint64_t hi;       /* last value of the current element */
    unsigned width;    /* zero-pad width of the current element, or 0 */
};

/* Load the element at s (already validated by pass 1) into b. */
static void load_element(struct hl_bracket *b, const char *s)
{
    const char *p = s;
    uint64_t lo = 0;
    uint64_t hi;

    while (is_digit(*p))
        lo = lo * 10 + (uint64_t)(*p++ - '0');
    b->width = (p - s > 1 && s[0] == '0') ? (unsigned)(p - s) : 0;
    hi = lo;
    if (*p == '-') {
        hi = 0;
        p++;
        while (is_digit(*p))
            hi = hi * 10 + (uint64_t)(*p++ - '0');
    }
    b->cur = lo;
    b->hi = hi;
    b->next = p;
}

/* Append every name of the group g[0..glen) (validated by pass 1), the
 * rightmost bracket varying fastest.
 */
static int expand_group(struct hostlist *hl, const char *g, size_t glen)
{
    const char *lit[HL_MAX_BRACKETS + 1];
    size_t litlen[HL_MAX_BRACKETS + 1];
    struct hl_bracket br[HL_MAX_BRACKETS];
    char name[HOSTLIST_MAX_NAME_LEN + 24];
    const char *end = g + glen;
    const char *p = g;
    const char *ls = g;
    size_t nb = 0;

    /* Split into literal, bracket, literal, ..., literal. */
    while (p < end) {
        if (*p != '[') {
            p++;
            continue;
        }
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (nb == HL_MAX_BRACKETS || !close)
            goto inval;
        lit[nb] = ls;
        litlen[nb] = (size_t)(p - ls);
        br[nb].first = p + 1;
        load_element(&br[nb], p + 1);
        nb++;
        p = ls = close + 1;
    }
    lit[nb] = ls;
    litlen[nb] = (size_t)(end - ls);

    for (;;) {
        size_t len = 0;
        size_t i;

        for (i = 0; i <= nb; i++) {
            if (litlen[i] > HOSTLIST_MAX_NAME_LEN - len)
                goto inval;
            memcpy(name + len, lit[i], litlen[i]);
            len += litlen[i];
            if (i < nb) {
                len += fmt_u64(name + len, br[i].cur, br[i].width);
                if (len > HOSTLIST_MAX_NAME_LEN)
                    goto inval;
            }
        }
        if (add_name(hl, name, len) < 0)
            return -1;

        /* Advance the odometer from the rightmost bracket. */
        for (i = nb; i > 0; i--) {
            struct hl_bracket *b = &br[i - 1];
            if (b->cur < b->hi) {
                b->cur++;
                break;
            }
            if (*b->next == ',') {
                load_element(b, b->next + 1);
                break;
            }
            load_element(b, b->first);
        }
        if (i == 0)
            break;
    }
    return 0;
inval:
    /* Unreachable after a successful pass 1; kept so that a mismatch
     * between the passes fails safely instead of overrunning name[].
     */
    errno = EINVAL;
    return -1;
}

struct hostlist *hostlist_decode(const char *expr,
                                 size_t max_names,
                                 vnib_error_t *errp)
{
    struct hostlist *hl = NULL;
    uint64_t count;
    size_t pos = 0;

    if (scan_expr(expr, max_names, true, &count, errp) < 0)
        return NULL;
    if (!(hl = hostlist_create()))
        goto nomem;
    if (reserve_entries(hl, (size_t)count) < 0)
        goto nomem;
    while (expr[pos] != '\0') {
        size_t start = pos;
        bool inside = false;

        while (expr[pos] != '\0' && (inside || expr[pos] != ',')) {
            if (expr[pos] == '[')
                inside = true;
            else if (expr[pos] == ']')
                inside = false;
            pos++;
        }
        if (expand_group(hl, expr + start, pos - start) < 0) {
            if (errno == ENOMEM)
                goto nomem;
            errprintf(
                errp, "hostlist: internal error expanding offset %zu", start);
            goto error;
        }
        if (expr[pos] == ',')
            pos++;
    }
    return hl;
nomem:
    errno = ENOMEM;
    errprintf(errp, "hostlist: out of memory");
error:
    hostlist_destroy(hl);
    return NULL;
}

/* ---- list operations --------------------------------------------------- */

struct hostlist *hostlist_create(void)
{
    return calloc(1, sizeof(struct hostlist));
}

void hostlist_destroy(struct hostlist *hl)
{
    if (hl) {
        int saved_errno = errno;
        struct hl_chunk *c = hl->chunk;
        while (c) {
            struct hl_chunk *prev = c->prev;
            free(c);
            c = prev;
        }
        free(hl->ents);
        free(hl);
        errno = saved_errno;
    }
}

int hostlist_append(struct hostlist *hl, const char *name)
{
    size_t len;

    if (!hl || !name) {
        errno = EINVAL;
        return -1;
    }
    len = strnlen(name, HOSTLIST_MAX_NAME_LEN + 1);
    if (len == 0 || len > HOSTLIST_MAX_NAME_LEN) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (!is_name_char(name[i])) {
            errno = EINVAL;
            return -1;
        }
    }
    return add_name(hl, name, len);
}

size_t hostlist_count(const struct hostlist *hl)
{
    return hl ? hl->count : 0;
}

const char *hostlist_nth(const struct hostlist *hl, size_t n)
{
    if (!hl || n >= hl->count)
        return NULL;
    return hl->ents[n].name;
}

void hostlist_uniq(struct hostlist *hl)
{
    if (!hl || hl->sorted)
        return;
    hl->count = sort_unique(hl->ents, hl->count, cmp_uniq, qsort_uniq);
    hl->sorted = true;
}

static int bsearch_uniq(const void *key, const void *elem)
{
    return cmp_uniq(key, elem);
}

bool hostlist_contains(const struct hostlist *hl, const char *name)
{
    struct hl_entry key;
    size_t len;

    if (!hl || !name || hl->count == 0)
        return false;
    len = strnlen(name, HOSTLIST_MAX_NAME_LEN + 1);
    if (len == 0 || len > HOSTLIST_MAX_NAME_LEN)
        return false;
    if (!hl->sorted) {
        for (size_t i = 0; i < hl->count; i++)
            if (hl->ents[i].len == len
                && memcmp(hl->ents[i].name, name, len) == 0)
                return true;
        return false;
    }
    entry_key(&key, name, len);
    return bsearch(&key, hl->ents, hl->count, sizeof(key), bsearch_uniq)
           != NULL;
}

/* ---- encoding ---------------------------------------------------------- */

/* A run of consecutive values printed as one bracket element. */
struct hl_run {
    uint64_t lo;    /* first value */
    uint64_t hi;    /* last value */
    unsigned width; /* zero-pad width, or 0 for plain numbers */
    bool open;      /* (open runs only) the slot is in use */
};

struct hl_encoder {
    char *out;           /* the expression being built */
    size_t len;          /* bytes used in out, without the NUL */
    size_t cap;          /* bytes allocated for out */
    bool failed;         /* an allocation failed; out is incomplete */
    struct hl_run *runs; /* finished runs of the current group */
    size_t nruns;
    size_t runs_cap;
    /* The run each width is extending; index 0 holds plain numbers, index
     * w the runs zero-padded to w digits.
     */
    struct hl_run open[HL_MAX_DIGITS + 1];
};

/* Append n bytes.  Failure is sticky and checked once at the end. */
static void put(struct hl_encoder *enc, const char *s, size_t n)
{
    if (enc->failed)
        return;
    if (enc->cap - enc->len < n + 1) {
        size_t cap = enc->cap ? enc->cap : 64;
        while (cap - enc->len < n + 1) {
            if (cap > SIZE_MAX / 2) {
                enc->failed = true;
                return;
            }
            cap *= 2;
        }
        char *out = realloc(enc->out, cap);
        if (!out) {
            enc->failed = true;
            return;
        }
        enc->out = out;
        enc->cap = cap;
    }
    memcpy(enc->out + enc->len, s, n);
    enc->len += n;
    enc->out[enc->len] = '\0';
}

static void put_number(struct hl_encoder *enc, uint64_t v, unsigned width)
{
    char buf[HL_MAX_DIGITS + 4];
    put(enc, buf, fmt_u64(buf, v, width));
}

static void push_run(struct hl_encoder *enc, const struct hl_run *r)
{
    if (enc->nruns == enc->runs_cap) {
        size_t cap = enc->runs_cap ? enc->runs_cap * 2 : 16;
        struct hl_run *runs;
        if (cap > SIZE_MAX / sizeof(*runs)
            || !(runs = realloc(enc->runs, cap * sizeof(*runs)))) {
            enc->failed = true;
            return;
        }
        enc->runs = runs;
        enc->runs_cap = cap;
    }
    enc->runs[enc->nruns++] = *r;
}

/* Extend or start run r with value v. */
static void run_add(struct hl_encoder *enc,
                    struct hl_run *r,
                    uint64_t v,
                    unsigned width)
{
    if (r->open && r->hi + 1 == v) {
        r->hi = v;
        return;
    }
    if (r->open)
        push_run(enc, r);
    r->lo = r->hi = v;
    r->width = width;
    r->open = true;
}

/* Place one member of a group; members arrive sorted by value, then
 * width.  A zero-padded member (more digits than its value needs) only
 * joins a run of its own width.  A plain member joins the plain run, or a
 * padded run that it continues, since padding a number to fewer digits
 * than it has prints it unchanged ("n[098-100]" holds the plain "n100").
 */
static void add_member(struct hl_encoder *enc, uint64_t v, unsigned dlen)
{
    unsigned nd = ndigits(v);

    if (dlen > nd) {
        run_add(enc, &enc->open[dlen], v, dlen);
        return;
    }
    if (!(enc->open[0].open && enc->open[0].hi + 1 == v)) {
        for (unsigned w = 2; w <= nd; w++) {
            struct hl_run *r = &enc->open[w];
            if (r->open && r->hi + 1 == v) {
                r->hi = v;
                return;
            }
        }
    }
    run_add(enc, &enc->open[0], v, 0);
}

static int qsort_run(const void *a, const void *b)
{
    const struct hl_run *x = a;
    const struct hl_run *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x->width > y->width) - (x->width < y->width);
}

/* Print a group of n >= 2 distinct names sharing prefix and suffix as
 * "prefix[ranges]suffix", ranges ordered by their first value.
 */
static void encode_group(struct hl_encoder *enc,
                         const struct hl_entry *g,
                         size_t n)
{
    size_t soff = (size_t)g->plen + g->dlen;

    enc->nruns = 0;
    memset(enc->open, 0, sizeof(enc->open));
    for (size_t i = 0; i < n; i++)
        add_member(enc, g[i].num, g[i].dlen);
    for (size_t w = 0; w <= HL_MAX_DIGITS; w++)
        if (enc->open[w].open)
            push_run(enc, &enc->open[w]);
    if (enc->failed)
        return;
    qsort(enc->runs, enc->nruns, sizeof(enc->runs[0]), qsort_run);

    put(enc, g->name, g->plen);
    put(enc, "[", 1);
    for (size_t i = 0; i < enc->nruns; i++) {
        const struct hl_run *r = &enc->runs[i];
        if (i > 0)
            put(enc, ",", 1);
        put_number(enc, r->lo, r->width);
        if (r->hi != r->lo) {
            put(enc, "-", 1);
            put_number(enc, r->hi, r->width);
        }
    }
    put(enc, "]", 1);
    put(enc, g->name + soff, g->len - soff);
}

/* True when b can share a bracket with a: both have a range field and the
 * same text around it.
 */
static bool same_group(const struct hl_entry *a, const struct hl_entry *b)
{
    return a->dlen > 0 && b->dlen > 0 && cmp_prefix(a, b) == 0
           && cmp_suffix(a, b) == 0;
}

/* True when ents[0..n) is strictly increasing under cmp_encode. */
static bool in_encode_order(const struct hl_entry *ents, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (cmp_encode(&ents[i - 1], &ents[i]) >= 0)
            return false;
    return true;
}

char *hostlist_encode(const struct hostlist *hl)
{
    struct hl_encoder enc = {0};
    struct hl_entry *tmp = NULL;
    const struct hl_entry *ents;
    size_t n;

    if (!hl) {
        errno = EINVAL;
        return NULL;
    }
    put(&enc, "", 0); /* an empty list encodes as "" */
    ents = hl->ents;
    n = hl->count;
    /* The list must not change, so sort a copy unless it is in order
     * already, as a decoded range or a uniq'd list usually is.
     */
    if (n > 0 && !in_encode_order(ents, n)) {
        if (!(tmp = malloc(n * sizeof(*tmp))))
            goto error;
        memcpy(tmp, hl->ents, n * sizeof(*tmp));
        n = sort_unique(tmp, n, cmp_encode, qsort_encode);
        ents = tmp;
    }
    for (size_t i = 0; i < n && !enc.failed;) {
        size_t j = i + 1;
        while (j < n && same_group(&ents[i], &ents[j]))
            j++;
        if (i > 0)
            put(&enc, ",", 1);
        if (j - i == 1)
            put(&enc, ents[i].name, ents[i].len);
        else
            encode_group(&enc, &ents[i], j - i);
        i = j;
    }
    if (enc.failed)
        goto error;
    free(enc.runs);
    free(tmp);
    return enc.out;
error:
    free(enc.runs);
    free(enc.out);
    free(tmp);
    errno = ENOMEM;
    return NULL;
}

void hostlist_name_key(const char *name, struct hostlist_key *key)
{
    size_t len = strlen(name);
    size_t end = len;

    /* The last digit run ends at end, and starts at start. */
    while (end > 0 && !(name[end - 1] >= '0' && name[end - 1] <= '9'))
        end--;
    size_t start = end;
    while (start > 0 && name[start - 1] >= '0' && name[start - 1] <= '9')
        start--;
    if (end == 0 || end - start > 18) {
        key->prefix_len = len;
        key->suffix = name + len;
        key->num = 0;
        key->width = -1;
        return;
    }
    uint64_t num = 0;
    for (size_t i = start; i < end; i++)
        num = num * 10 + (uint64_t)(name[i] - '0');
    key->prefix_len = start;
    key->suffix = name + end;
    key->num = num;
    key->width =
        (name[start] == '0' && end - start > 1) ? (int)(end - start) : 0;
}
