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
 *
 * This file holds the characters, the arena, the ordering and the list's
 * own operations; hostlist_parse.c decodes expressions and
 * hostlist_encode.c writes them.  hostlist_int.h is what they share.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist_int.h"

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

bool hostlist_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool hostlist_is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || hostlist_is_digit(c) || c == '-' || c == '_' || c == '.';
}

bool hostlist_is_expr_char(char c)
{
    return hostlist_is_name_char(c) || c == '[' || c == ']' || c == ',';
}

unsigned hostlist_ndigits(uint64_t v)
{
    unsigned n = 1;
    while (n <= HL_MAX_DIGITS && v >= pow10_tab[n])
        n++;
    return n;
}

size_t hostlist_fmt_u64(char *dst, uint64_t v, unsigned width)
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

void hostlist_describe_byte(char *buf, size_t size, char c)
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

    while (end > 0 && !hostlist_is_digit(name[end - 1]))
        end--;
    start = end;
    while (start > 0 && hostlist_is_digit(name[start - 1]))
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

int hostlist_reserve_entries(struct hostlist *hl, size_t want)
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

int hostlist_add_name(struct hostlist *hl, const char *s, size_t len)
{
    const char *name;

    if (hl->count == hl->cap) {
        size_t want = hl->cap ? hl->cap * 2 : 16;
        if (want < hl->cap || hostlist_reserve_entries(hl, want) < 0) {
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

int hostlist_cmp_prefix(const struct hl_entry *a, const struct hl_entry *b)
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

int hostlist_cmp_suffix(const struct hl_entry *a, const struct hl_entry *b)
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
    if ((c = hostlist_cmp_prefix(a, b)) != 0 || (c = cmp_number(a, b)) != 0)
        return c;
    return hostlist_cmp_suffix(a, b);
}

int hostlist_cmp_encode(const struct hl_entry *a, const struct hl_entry *b)
{
    int c;
    if ((c = hostlist_cmp_prefix(a, b)) != 0
        || (c = hostlist_cmp_suffix(a, b)) != 0)
        return c;
    return cmp_number(a, b);
}

static int qsort_uniq(const void *a, const void *b)
{
    return cmp_uniq(a, b);
}

int hostlist_qsort_encode(const void *a, const void *b)
{
    return hostlist_cmp_encode(a, b);
}

size_t hostlist_sort_unique(struct hl_entry *ents,
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
        if (!hostlist_is_name_char(name[i])) {
            errno = EINVAL;
            return -1;
        }
    }
    return hostlist_add_name(hl, name, len);
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
    hl->count = hostlist_sort_unique(hl->ents, hl->count, cmp_uniq, qsort_uniq);
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
