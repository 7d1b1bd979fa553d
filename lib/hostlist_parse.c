/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Decoding a hostlist expression (see hostlist.c): pass 1 validates the
 * text and counts its names without allocating, with checked arithmetic
 * and a message that points at the offending byte; pass 2, run only once
 * the count fits the caller's bound, expands each group bracket by
 * bracket into the list.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist_int.h"

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
    hostlist_describe_byte(what, sizeof(what), c);
    if (!hostlist_is_expr_char(c))
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
    if (!hostlist_is_digit(sc->expr[sc->pos])) {
        bracket_error(sc, sc->pos, "a number");
        return -1;
    }
    while (hostlist_is_digit(sc->expr[sc->pos])) {
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
        size_t len = hostlist_ndigits(hi);
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
        } else if (hostlist_is_name_char(c)) {
            sc->pos++;
            len++;
        } else {
            errno = EINVAL;
            hostlist_describe_byte(what, sizeof(what), c);
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

    while (hostlist_is_digit(*p))
        lo = lo * 10 + (uint64_t)(*p++ - '0');
    b->width = (p - s > 1 && s[0] == '0') ? (unsigned)(p - s) : 0;
    hi = lo;
    if (*p == '-') {
        hi = 0;
        p++;
        while (hostlist_is_digit(*p))
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
                len += hostlist_fmt_u64(name + len, br[i].cur, br[i].width);
                if (len > HOSTLIST_MAX_NAME_LEN)
                    goto inval;
            }
        }
        if (hostlist_add_name(hl, name, len) < 0)
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
    if (hostlist_reserve_entries(hl, (size_t)count) < 0)
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
