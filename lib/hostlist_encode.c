/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Encoding a list as a hostlist expression (see hostlist.c): names are
 * grouped by prefix and suffix, the numbers of a group gathered into runs
 * per zero-pad width, and each group printed as prefix[runs]suffix.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist_int.h"

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
    put(enc, buf, hostlist_fmt_u64(buf, v, width));
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
    unsigned nd = hostlist_ndigits(v);

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
    return a->dlen > 0 && b->dlen > 0 && hostlist_cmp_prefix(a, b) == 0
           && hostlist_cmp_suffix(a, b) == 0;
}

/* True when ents[0..n) is strictly increasing under cmp_encode. */
static bool in_encode_order(const struct hl_entry *ents, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (hostlist_cmp_encode(&ents[i - 1], &ents[i]) >= 0)
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
        n = hostlist_sort_unique(
            tmp, n, hostlist_cmp_encode, hostlist_qsort_encode);
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
