/* SPDX-License-Identifier: GPL-2.0-or-later */
/* TOML reader: TOML 1.0 text in, jansson tree out (see toml.h).
 *
 * The reader is a hand-written recursive-descent parser over a byte
 * buffer that is never assumed to be NUL-terminated.  Before parsing, one
 * pass rejects NUL bytes and invalid UTF-8, so the rest of the code can
 * treat every byte >= 0x80 as part of a valid character.  Recursion only
 * happens for arrays and inline tables, and every nested container counts
 * towards TOML_MAX_DEPTH, so the stack is bounded whatever the input.
 *
 * TOML's rules about which table may be defined or extended where cannot
 * be read off a JSON tree, so each table and array of tables carries a
 * "kind" (how it came to exist) in a side map keyed by the json_t pointer.
 *
 * Choices this reader makes where TOML leaves room, or where it is
 * stricter than the spec:
 *   - dates and times are refused ("dates and times are not supported");
 *   - inf and nan are refused: JSON cannot represent them;
 *   - dotted keys may only extend tables that dotted keys created; a table
 *     created by a [header] (even implicitly, as "a" in [a.b]) cannot be
 *     extended with dotted keys;
 *   - strings and keys may not contain U+0000 (written \u0000), which C
 *     code reading the tree would take for the end of the string;
 *   - a key path may not be longer than TOML_PATH_MAX bytes (E2BIG), which
 *     bounds the size of the line table;
 *   - inline tables must fit on one line, as TOML 1.0 says;
 *   - CRLF inside multi-line strings is returned as "\n";
 *   - a leading UTF-8 byte order mark is skipped;
 *   - floats are converted with strtod(), which assumes LC_NUMERIC is "C"
 *     (vnibroker never calls setlocale()).
 *
 * This file holds the parser's state helpers (errors, buffers, key paths,
 * the line table, container kinds) and toml_parse(); toml_lex.c reads
 * strings and keys, toml_value.c numbers, arrays and inline tables,
 * toml_table.c key/value lines, headers and the document, and
 * toml_file.c files.  toml_int.h is what they share.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml_int.h"

int toml_fail(struct parser *ps, int err, int line, const char *fmt, ...)
{
    char msg[sizeof(vnib_error_t)];
    va_list ap;

    if (!ps->failed) {
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        ps->failed = true;
        ps->err = err;
        errprintf(ps->errp, "%s:%d: %s", ps->name, line, msg);
    }
    errno = ps->err;
    return -1;
}

int toml_oom(struct parser *ps)
{
    return toml_fail(ps, ENOMEM, ps->line, "out of memory");
}

const char *toml_show(char out[SHOW_MAX], const char *s, size_t n)
{
    size_t i, o = 0;
    bool cut = n > SHOW_MAX - 1;

    if (cut) {
        n = SHOW_MAX - 4;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (cut) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

const char *toml_show_path(const struct parser *ps, char out[SHOW_MAX])
{
    return toml_show(out, ps->path.data, ps->path.len);
}

const char *toml_show_key(const struct key *k, char out[SHOW_MAX])
{
    char joined[SHOW_MAX + 1];
    size_t i, len = 0;

    for (i = 0; i < k->n && len < SHOW_MAX; i++) {
        size_t plen = strlen(k->part[i]);
        if (i > 0)
            joined[len++] = '.';
        if (plen > SHOW_MAX - len)
            plen = SHOW_MAX - len;
        memcpy(joined + len, k->part[i], plen);
        len += plen;
    }
    return toml_show(out, joined, len);
}

const char *toml_describe(const json_t *v)
{
    switch (json_typeof(v)) {
        case JSON_OBJECT:
            return "a table";
        case JSON_ARRAY:
            return "an array";
        case JSON_STRING:
            return "a string";
        case JSON_INTEGER:
            return "an integer";
        case JSON_REAL:
            return "a float";
        default:
            return "a boolean";
    }
}

int toml_fail_not_table(struct parser *ps,
                        int line,
                        const char *path,
                        const json_t *v)
{
    return toml_fail(ps,
                     EINVAL,
                     line,
                     "key '%s' is already defined as %s, not a table",
                     path,
                     toml_describe(v));
}

int toml_fail_inline(struct parser *ps, int line, const char *path)
{
    return toml_fail(ps, EINVAL, line, "cannot extend inline table '%s'", path);
}

/* ---- buffers --------------------------------------------------------- */

/* Make room for `extra` more bytes plus the terminating NUL. */
static int buf_reserve(struct parser *ps, struct buf *b, size_t extra)
{
    size_t need, ncap;
    char *p;

    if (extra > SIZE_MAX / 2 - b->len)
        return toml_oom(ps);
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap *= 2;
    if (!(p = realloc(b->data, ncap)))
        return toml_oom(ps);
    b->data = p;
    b->cap = ncap;
    b->data[b->len] = '\0';
    return 0;
}

int toml_buf_add(struct parser *ps, struct buf *b, const char *s, size_t n)
{
    if (buf_reserve(ps, b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int toml_buf_addc(struct parser *ps, struct buf *b, char c)
{
    return toml_buf_add(ps, b, &c, 1);
}

void toml_buf_truncate(struct buf *b, size_t len)
{
    b->len = len;
    if (b->data)
        b->data[len] = '\0';
}

/* ---- key paths and the line table ------------------------------------ */

int toml_path_push_key(struct parser *ps, const char *key, size_t *savep)
{
    size_t dot = ps->path.len > 0 ? 1 : 0;
    size_t n = strlen(key);

    *savep = ps->path.len;
    if (n + dot > TOML_PATH_MAX - ps->path.len)
        return toml_fail(ps,
                         E2BIG,
                         ps->line,
                         "key path longer than %d bytes",
                         TOML_PATH_MAX);
    if (dot && toml_buf_addc(ps, &ps->path, '.') < 0)
        return -1;
    return toml_buf_add(ps, &ps->path, key, n);
}

int toml_path_push_index(struct parser *ps, size_t idx, size_t *savep)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "[%zu]", idx);

    *savep = ps->path.len;
    if ((size_t)n > TOML_PATH_MAX - ps->path.len)
        return toml_fail(ps,
                         E2BIG,
                         ps->line,
                         "key path longer than %d bytes",
                         TOML_PATH_MAX);
    return toml_buf_add(ps, &ps->path, tmp, (size_t)n);
}

int toml_record_line(struct parser *ps, int line, bool replace)
{
    if (!ps->lines)
        return 0;
    if (!replace && json_object_get(ps->lines, ps->path.data))
        return 0;
    if (json_object_set_new(ps->lines, ps->path.data, json_integer(line)) < 0)
        return toml_oom(ps);
    return 0;
}

/* ---- container kinds ------------------------------------------------- */

/* The kind map is keyed by the container's address printed with "%p".
 * That is unambiguous where a key path would not be ("a.b" could be one
 * quoted key or two), and safe because no container is freed while the
 * parse goes on: any failure abandons the whole tree.
 */

enum kind toml_kind_get(const struct parser *ps, const json_t *v)
{
    char key[32];
    json_t *k;

    snprintf(key, sizeof(key), "%p", (const void *)v);
    if (!(k = json_object_get(ps->kinds, key)))
        return KIND_NONE;
    return (enum kind)json_integer_value(k);
}

int toml_kind_set(struct parser *ps, const json_t *v, enum kind kind)
{
    char key[32];

    snprintf(key, sizeof(key), "%p", (const void *)v);
    if (json_object_set_new(ps->kinds, key, json_integer(kind)) < 0)
        return toml_oom(ps);
    return 0;
}

json_t *toml_add_table(struct parser *ps,
                       json_t *parent,
                       const char *key,
                       enum kind kind)
{
    json_t *t = json_object();

    if (json_object_set_new(parent, key, t) < 0) {
        toml_oom(ps);
        return NULL;
    }
    if (toml_kind_set(ps, t, kind) < 0)
        return NULL;
    return t;
}

int toml_check_depth(struct parser *ps, int depth)
{
    if (depth > TOML_MAX_DEPTH)
        return toml_fail(ps,
                         E2BIG,
                         ps->line,
                         "nesting deeper than %d levels",
                         TOML_MAX_DEPTH);
    return 0;
}

json_t *toml_parse(const char *name,
                   const char *text,
                   size_t len,
                   json_t **linesp,
                   vnib_error_t *errp)
{
    struct parser ps = {
        .name = name ? name : "<toml>",
        .text = text,
        .len = len,
        .line = 1,
        .errp = errp,
    };
    json_t *result = NULL;

    /* Limits first: nothing is allocated for input that is refused. */
    if (linesp)
        *linesp = NULL;
    if (!text && len > 0) {
        errno = EINVAL;
        errprintf(errp, "%s: no input buffer", ps.name);
        return NULL;
    }
    if (len > TOML_MAX_FILE_SIZE) {
        errno = E2BIG;
        errprintf(errp,
                  "%s: input is larger than %u bytes",
                  ps.name,
                  TOML_MAX_FILE_SIZE);
        return NULL;
    }
    if (toml_check_encoding(&ps) < 0)
        goto done;
    if (!(ps.root = json_object()) || !(ps.kinds = json_object())
        || (linesp && !(ps.lines = json_object()))) {
        toml_oom(&ps);
        goto done;
    }
    /* The root counts as defined: "[]" is not a header anyway. */
    if (toml_kind_set(&ps, ps.root, KIND_HEADER) < 0
        || buf_reserve(&ps, &ps.path, 0) < 0
        || buf_reserve(&ps, &ps.scratch, 0) < 0)
        goto done;
    ps.cur = ps.root;
    if (toml_parse_document(&ps) < 0)
        goto done;
    /* Hand over the trees; whatever is left is freed below. */
    result = ps.root;
    ps.root = NULL;
    if (linesp) {
        *linesp = ps.lines;
        ps.lines = NULL;
    }
done:
    /* On failure this drops a partial tree; no other reference exists. */
    json_decref(ps.root);
    json_decref(ps.lines);
    json_decref(ps.kinds);
    free(ps.path.data);
    free(ps.scratch.data);
    if (!result)
        errno = ps.err;
    return result;
}
