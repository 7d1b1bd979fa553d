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
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/hex.h"
#include "vnib/toml.h"

/* Longest key path ("server.tls.cert") the reader accepts, in bytes. */
#define TOML_PATH_MAX 512

/* Longest excerpt of a key or token quoted in an error message. */
#define SHOW_MAX 48

/* How a table or array came to exist.  The kind decides what later lines
 * may do with it; 0 (no entry) means a plain value such as a static array.
 */
enum kind {
    KIND_NONE = 0,
    KIND_IMPLICIT,    /* made on the way to a header: "a" in [a.b] */
    KIND_HEADER,      /* defined by [header], or an [[array]] element */
    KIND_DOTTED,      /* made by a dotted key: "a" in a.b = 1 */
    KIND_INLINE,      /* an inline table { ... }: sealed once closed */
    KIND_TABLE_ARRAY, /* the array behind [[header]] */
};

/* A growable byte buffer, always NUL-terminated once allocated. */
struct buf {
    char *data; /* NULL until the first reservation */
    size_t len; /* bytes in use, not counting the NUL */
    size_t cap; /* bytes allocated */
};

/* A key as written: one or more parts joined by dots. */
struct key {
    char *part[TOML_MAX_DEPTH]; /* owned, NUL-terminated */
    size_t n;                   /* parts in use */
};

/* Parser state for one toml_parse() call. */
struct parser {
    const char *name;   /* prefix of error messages */
    const char *text;   /* input, not NUL-terminated */
    size_t len;         /* bytes in text */
    size_t pos;         /* next byte to read */
    int line;           /* 1-based line of text[pos] */
    json_t *root;       /* the document */
    json_t *lines;      /* path -> line, or NULL if not wanted */
    json_t *kinds;      /* "%p" of a container -> enum kind */
    json_t *cur;        /* table the current section fills */
    int cur_depth;      /* nesting depth of cur (root is 0) */
    struct buf path;    /* path of the key being defined */
    struct buf scratch; /* decoded text of the last string */
    vnib_error_t *errp; /* caller's message buffer, may be NULL */
    int err;            /* errno of the first error */
    bool failed;        /* an error has been recorded */
};

/* Record the first error as "NAME:LINE: message", set errno, return -1.
 * Later errors (typically ENOMEM while unwinding) are ignored.
 */
static int fail(struct parser *ps, int err, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct parser *ps, int err, int line, const char *fmt, ...)
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

/* Allocation failures all read the same; the line helps little, but the
 * message format stays uniform.
 */
static int oom(struct parser *ps)
{
    return fail(ps, ENOMEM, ps->line, "out of memory");
}

/* Copy s[0..n) into out for quoting in a message: bytes that are not
 * printable become '?', and text longer than the buffer is cut (at a
 * character boundary) and ends with "...".
 */
static const char *show(char out[SHOW_MAX], const char *s, size_t n)
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

/* The current key path, quoted for a message. */
static const char *show_path(const struct parser *ps, char out[SHOW_MAX])
{
    return show(out, ps->path.data, ps->path.len);
}

/* A key as written ("a.b.c"), quoted for a message. */
static const char *show_key(const struct key *k, char out[SHOW_MAX])
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
    return show(out, joined, len);
}

/* "an integer", "a table", ... for messages about clashing definitions. */
static const char *describe(const json_t *v)
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

/* The message for a key that holds v where a table should be. */
static int fail_not_table(struct parser *ps,
                          int line,
                          const char *path,
                          const json_t *v)
{
    return fail(ps,
                EINVAL,
                line,
                "key '%s' is already defined as %s, not a table",
                path,
                describe(v));
}

/* The message for a table header or dotted key reaching into an inline
 * table, which is complete where it stands.
 */
static int fail_inline(struct parser *ps, int line, const char *path)
{
    return fail(ps, EINVAL, line, "cannot extend inline table '%s'", path);
}

/* ---- buffers --------------------------------------------------------- */

/* Make room for `extra` more bytes plus the terminating NUL. */
static int buf_reserve(struct parser *ps, struct buf *b, size_t extra)
{
    size_t need, ncap;
    char *p;

    if (extra > SIZE_MAX / 2 - b->len)
        return oom(ps);
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap *= 2;
    if (!(p = realloc(b->data, ncap)))
        return oom(ps);
    b->data = p;
    b->cap = ncap;
    b->data[b->len] = '\0';
    return 0;
}

/* Append n bytes; returns 0, or -1 after recording ENOMEM. */
static int buf_add(struct parser *ps, struct buf *b, const char *s, size_t n)
{
    if (buf_reserve(ps, b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Append one byte. */
static int buf_addc(struct parser *ps, struct buf *b, char c)
{
    return buf_add(ps, b, &c, 1);
}

/* Cut back to len bytes (len <= b->len): how path pushes are undone. */
static void buf_truncate(struct buf *b, size_t len)
{
    b->len = len;
    if (b->data)
        b->data[len] = '\0';
}

/* ---- key paths and the line table ------------------------------------ */

/* Append ".key" (just "key" at the root) to the current path.  The old
 * length goes to *savep so that the caller can undo the push.
 */
static int path_push_key(struct parser *ps, const char *key, size_t *savep)
{
    size_t dot = ps->path.len > 0 ? 1 : 0;
    size_t n = strlen(key);

    *savep = ps->path.len;
    if (n + dot > TOML_PATH_MAX - ps->path.len)
        return fail(ps,
                    E2BIG,
                    ps->line,
                    "key path longer than %d bytes",
                    TOML_PATH_MAX);
    if (dot && buf_addc(ps, &ps->path, '.') < 0)
        return -1;
    return buf_add(ps, &ps->path, key, n);
}

/* Append "[idx]" to the current path, as for pool[2]. */
static int path_push_index(struct parser *ps, size_t idx, size_t *savep)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "[%zu]", idx);

    *savep = ps->path.len;
    if ((size_t)n > TOML_PATH_MAX - ps->path.len)
        return fail(ps,
                    E2BIG,
                    ps->line,
                    "key path longer than %d bytes",
                    TOML_PATH_MAX);
    return buf_add(ps, &ps->path, tmp, (size_t)n);
}

/* Note that the current path was defined on `line`.  A definition
 * replaces an earlier entry; an implicit mention (the "a" of [a.b]) only
 * fills a gap.
 */
static int record_line(struct parser *ps, int line, bool replace)
{
    if (!ps->lines)
        return 0;
    if (!replace && json_object_get(ps->lines, ps->path.data))
        return 0;
    if (json_object_set_new(ps->lines, ps->path.data, json_integer(line)) < 0)
        return oom(ps);
    return 0;
}

/* ---- container kinds ------------------------------------------------- */

/* The kind map is keyed by the container's address printed with "%p".
 * That is unambiguous where a key path would not be ("a.b" could be one
 * quoted key or two), and safe because no container is freed while the
 * parse goes on: any failure abandons the whole tree.
 */

/* Kind of a table or array, KIND_NONE for anything not registered. */
static enum kind kind_get(const struct parser *ps, const json_t *v)
{
    char key[32];
    json_t *k;

    snprintf(key, sizeof(key), "%p", (const void *)v);
    if (!(k = json_object_get(ps->kinds, key)))
        return KIND_NONE;
    return (enum kind)json_integer_value(k);
}

/* Register or change the kind of a table or array. */
static int kind_set(struct parser *ps, const json_t *v, enum kind kind)
{
    char key[32];

    snprintf(key, sizeof(key), "%p", (const void *)v);
    if (json_object_set_new(ps->kinds, key, json_integer(kind)) < 0)
        return oom(ps);
    return 0;
}

/* Create an empty table of the given kind as parent[key].  Returns a
 * borrowed reference, or NULL on failure.
 */
static json_t *add_table(struct parser *ps,
                         json_t *parent,
                         const char *key,
                         enum kind kind)
{
    json_t *t = json_object();

    if (json_object_set_new(parent, key, t) < 0) {
        oom(ps);
        return NULL;
    }
    if (kind_set(ps, t, kind) < 0)
        return NULL;
    return t;
}

/* Containers nest at most TOML_MAX_DEPTH deep (the root table is 0). */
static int check_depth(struct parser *ps, int depth)
{
    if (depth > TOML_MAX_DEPTH)
        return fail(ps,
                    E2BIG,
                    ps->line,
                    "nesting deeper than %d levels",
                    TOML_MAX_DEPTH);
    return 0;
}

/* ---- input encoding -------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n > 0 bytes available), or 0
 * if it is malformed, overlong, a surrogate or beyond U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char lo = 0x80, hi = 0xBF;
    size_t need, i;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        need = 1;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        need = 2;
        if (s[0] == 0xE0)
            lo = 0xA0; /* overlong */
        if (s[0] == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        need = 3;
        if (s[0] == 0xF0)
            lo = 0x90; /* overlong */
        if (s[0] == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else
        return 0;
    if (n <= need || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i <= need; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return need + 1;
}

/* Refuse NUL bytes and invalid UTF-8 anywhere in the input. */
static int check_encoding(struct parser *ps)
{
    const unsigned char *s = (const unsigned char *)ps->text;
    size_t i = 0, n;
    int line = 1;

    while (i < ps->len) {
        if (s[i] == '\0')
            return fail(ps, EINVAL, line, "NUL byte in input");
        if (s[i] == '\n')
            line++;
        if (!(n = utf8_len(s + i, ps->len - i)))
            return fail(ps, EINVAL, line, "invalid UTF-8 in input");
        i += n;
    }
    return 0;
}

/* ---- lexical helpers ------------------------------------------------- */

/* Byte at pos, or -1 at the end of the input. */
static int peek(const struct parser *ps)
{
    return ps->pos < ps->len ? (unsigned char)ps->text[ps->pos] : -1;
}

/* Byte at pos + off, or -1 past the end of the input. */
static int peek_at(const struct parser *ps, size_t off)
{
    if (off >= ps->len - ps->pos)
        return -1;
    return (unsigned char)ps->text[ps->pos + off];
}

/* Length of the newline at pos: 1 for LF, 2 for CRLF, 0 for anything
 * else (a lone CR is not a newline in TOML).
 */
static size_t newline_len(const struct parser *ps)
{
    if (peek(ps) == '\n')
        return 1;
    if (peek(ps) == '\r' && peek_at(ps, 1) == '\n')
        return 2;
    return 0;
}

/* Skip blanks: TOML whitespace is only space and tab. */
static void skip_ws(struct parser *ps)
{
    while (peek(ps) == ' ' || peek(ps) == '\t')
        ps->pos++;
}

/* Characters TOML forbids raw in strings and comments (tab is allowed). */
static bool is_control(int c)
{
    return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

/* Characters of a bare key: A-Z a-z 0-9 _ - */
static bool is_bare(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
           || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Skip a comment from '#' up to (not including) the end of the line. */
static int skip_comment(struct parser *ps)
{
    ps->pos++;
    while (ps->pos < ps->len && newline_len(ps) == 0) {
        if (is_control(peek(ps)))
            return fail(ps, EINVAL, ps->line, "control character in comment");
        ps->pos++;
    }
    return 0;
}

/* Skip blanks, comments and newlines, as allowed between array items. */
static int skip_filler(struct parser *ps)
{
    for (;;) {
        size_t nl;

        skip_ws(ps);
        if (peek(ps) == '#') {
            if (skip_comment(ps) < 0)
                return -1;
        } else if ((nl = newline_len(ps)) > 0) {
            ps->pos += nl;
            ps->line++;
        } else
            return 0;
    }
}

/* Finish a line after a header or key/value: blanks, an optional
 * comment, then a newline or the end of the input.
 */
static int end_of_line(struct parser *ps, const char *after)
{
    size_t nl;

    skip_ws(ps);
    if (peek(ps) == '#' && skip_comment(ps) < 0)
        return -1;
    if (ps->pos == ps->len)
        return 0;
    if ((nl = newline_len(ps)) > 0) {
        ps->pos += nl;
        ps->line++;
        return 0;
    }
    return fail(ps, EINVAL, ps->line, "unexpected text after %s", after);
}

/* Describe the byte at pos for "expected X, found Y" messages. */
static const char *found(const struct parser *ps, char out[16])
{
    int c = peek(ps);

    if (c < 0)
        return "end of input";
    if (newline_len(ps) > 0)
        return "end of line";
    if (c >= 0x20 && c < 0x7f)
        snprintf(out, 16, "'%c'", c);
    else
        snprintf(out, 16, "byte 0x%02x", (unsigned)c);
    return out;
}

/* ---- strings --------------------------------------------------------- */

/* Decode \uXXXX (ndigits 4) or \UXXXXXXXX (8) at pos into UTF-8. */
static int parse_unicode_escape(struct parser *ps, size_t ndigits)
{
    uint32_t cp = 0;
    char out[4];
    size_t i, n;

    for (i = 0; i < ndigits; i++) {
        int h = hex_digit(peek_at(ps, 2 + i));
        if (h < 0)
            return fail(ps,
                        EINVAL,
                        ps->line,
                        "\\%c escape needs %zu hex digits",
                        ndigits == 4 ? 'u' : 'U',
                        ndigits);
        cp = (cp << 4) | (uint32_t)h;
    }
    /* U+0000 is valid TOML, but C consumers of the tree would silently
     * cut the string there ("/etc/a\u0000/../b"), so it is refused.
     */
    if (cp == 0)
        return fail(ps, EINVAL, ps->line, "NUL character in string");
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return fail(ps,
                    EINVAL,
                    ps->line,
                    "escape \\%c%0*X is not a Unicode scalar value",
                    ndigits == 4 ? 'u' : 'U',
                    (int)ndigits,
                    (unsigned)cp);
    ps->pos += 2 + ndigits;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return buf_add(ps, &ps->scratch, out, n);
}

/* Decode the escape whose backslash is at pos.  In a multi-line string a
 * backslash ending a line (blanks may follow it) swallows the newline and
 * all blanks and newlines after it.
 */
static int parse_escape(struct parser *ps, bool multiline)
{
    /* The one-letter escapes, and what each stands for. */
    static const char from[] = "btnfr\"\\";
    static const char to[] = "\b\t\n\f\r\"\\";
    int c = peek_at(ps, 1);
    const char *hit = c > 0 ? strchr(from, c) : NULL;

    if (hit) {
        ps->pos += 2;
        return buf_addc(ps, &ps->scratch, to[hit - from]);
    }
    if (c == 'u' || c == 'U')
        return parse_unicode_escape(ps, c == 'u' ? 4 : 8);
    if (multiline) {
        size_t save = ps->pos;

        ps->pos++;
        skip_ws(ps);
        if (newline_len(ps) > 0) {
            size_t nl;
            for (;;) {
                skip_ws(ps);
                if (!(nl = newline_len(ps)))
                    break;
                ps->pos += nl;
                ps->line++;
            }
            return 0;
        }
        ps->pos = save;
    }
    if (c > 0x20 && c < 0x7f)
        return fail(ps, EINVAL, ps->line, "invalid escape '\\%c' in string", c);
    return fail(ps, EINVAL, ps->line, "invalid escape in string");
}

/* Parse a basic or literal string, single- or multi-line, starting at the
 * opening quote.  The decoded text is left in ps->scratch.
 */
static int parse_string(struct parser *ps)
{
    char quote = ps->text[ps->pos];
    bool literal = quote == '\'';
    bool multiline = peek_at(ps, 1) == quote && peek_at(ps, 2) == quote;
    int start = ps->line;

    buf_truncate(&ps->scratch, 0);
    if (multiline) {
        size_t nl;

        ps->pos += 3;
        /* A newline right after the opening delimiter is trimmed. */
        if ((nl = newline_len(ps)) > 0) {
            ps->pos += nl;
            ps->line++;
        }
    } else
        ps->pos++;

    /* Copy byte by byte: the input is valid UTF-8 already, so multi-byte
     * characters pass through intact.
     */
    for (;;) {
        int c = peek(ps);
        size_t nl;

        if (c < 0)
            return fail(ps, EINVAL, start, "unterminated string");
        if (c == quote) {
            size_t q = 1;

            if (!multiline) {
                ps->pos++;
                return 0;
            }
            /* Up to two quotes may sit just before the closing three. */
            while (peek_at(ps, q) == quote)
                q++;
            if (q > 5)
                return fail(ps,
                            EINVAL,
                            ps->line,
                            "too many quotes at end of multi-line string");
            if (q >= 3) {
                /* The last three quotes close; any before them are text. */
                ps->pos += q;
                for (q -= 3; q > 0; q--)
                    if (buf_addc(ps, &ps->scratch, quote) < 0)
                        return -1;
                return 0;
            }
            /* One or two quotes inside a multi-line string are text. */
            if (buf_add(ps, &ps->scratch, ps->text + ps->pos, q) < 0)
                return -1;
            ps->pos += q;
            continue;
        }
        if (c == '\\' && !literal) {
            if (peek_at(ps, 1) < 0)
                return fail(ps, EINVAL, start, "unterminated string");
            if (parse_escape(ps, multiline) < 0)
                return -1;
            continue;
        }
        /* Newlines end a one-line string too early, and are kept (as LF)
         * in a multi-line one.
         */
        if ((nl = newline_len(ps)) > 0) {
            if (!multiline)
                return fail(ps, EINVAL, start, "unterminated string");
            if (buf_addc(ps, &ps->scratch, '\n') < 0)
                return -1;
            ps->pos += nl;
            ps->line++;
            continue;
        }
        if (is_control(c))
            return fail(ps, EINVAL, ps->line, "control character in string");
        if (buf_addc(ps, &ps->scratch, (char)c) < 0)
            return -1;
        ps->pos++;
    }
}

/* ---- keys ------------------------------------------------------------ */

/* Free the parts of a key (safe on a partly parsed key). */
static void key_free(struct key *k)
{
    while (k->n > 0)
        free(k->part[--k->n]);
}

/* Parse one part of a key (bare, "basic" or 'literal') into *partp. */
static int parse_simple_key(struct parser *ps, char **partp)
{
    int c = peek(ps);
    const char *s;
    size_t n;
    char *part;
    char what[16];

    if (c == '"' || c == '\'') {
        if (peek_at(ps, 1) == c && peek_at(ps, 2) == c)
            return fail(
                ps, EINVAL, ps->line, "a multi-line string cannot be a key");
        if (parse_string(ps) < 0)
            return -1;
        s = ps->scratch.data;
        n = ps->scratch.len;
    } else if (is_bare(c)) {
        s = ps->text + ps->pos;
        for (n = 0; is_bare(peek(ps)); n++)
            ps->pos++;
    } else
        return fail(
            ps, EINVAL, ps->line, "expected a key, found %s", found(ps, what));

    if (!(part = malloc(n + 1)))
        return oom(ps);
    memcpy(part, s, n);
    part[n] = '\0';
    *partp = part;
    return 0;
}

/* Parse a possibly dotted key, and the blanks after it. */
static int parse_key(struct parser *ps, struct key *k)
{
    for (;;) {
        if (k->n == TOML_MAX_DEPTH)
            return fail(ps,
                        E2BIG,
                        ps->line,
                        "key has more than %d parts",
                        TOML_MAX_DEPTH);
        if (parse_simple_key(ps, &k->part[k->n]) < 0)
            return -1;
        k->n++;
        skip_ws(ps);
        if (peek(ps) != '.')
            return 0;
        ps->pos++;
        skip_ws(ps);
    }
}

/* ---- numbers and other bare values ----------------------------------- */

/* Scan digits of `base` from s[*ip], allowing single underscores between
 * digits.  Returns the number of digits; *ip ends on the first byte that
 * does not belong.
 */
static size_t scan_digits(const char *s, size_t n, size_t *ip, int base)
{
    size_t i = *ip, digits = 0;

    while (i < n) {
        int d = hex_digit((unsigned char)s[i]);
        if (d >= 0 && d < base) {
            digits++;
            i++;
        } else if (s[i] == '_' && digits > 0 && i + 1 < n
                   && hex_digit((unsigned char)s[i + 1]) >= 0
                   && hex_digit((unsigned char)s[i + 1]) < base)
            i++;
        else
            break;
    }
    *ip = i;
    return digits;
}

/* Does the decimal number at s[i] start with a zero followed by more
 * digits ("012", "0_1")?  TOML forbids that; a lone "0" is fine.
 */
static bool has_leading_zero(const char *s, size_t n, size_t i)
{
    return i + 1 < n && s[i] == '0'
           && ((s[i + 1] >= '0' && s[i + 1] <= '9') || s[i + 1] == '_');
}

/* Report a malformed number, quoting it; `why` is "" or a " (reason)".
 * Always returns NULL.
 */
static json_t *invalid_number(struct parser *ps,
                              const char *s,
                              size_t n,
                              const char *why)
{
    char shown[SHOW_MAX];

    fail(ps, EINVAL, ps->line, "invalid number '%s'%s", show(shown, s, n), why);
    return NULL;
}

/* Integer digits s[i..n) in `base`, already known to be well formed up to
 * underscores.  Values outside int64_t are refused.
 */
static json_t *parse_integer(
    struct parser *ps, const char *s, size_t n, size_t i, int base, bool neg)
{
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    size_t j = i;
    json_t *result;

    if (scan_digits(s, n, &j, base) == 0 || j != n)
        return invalid_number(ps, s, n, "");
    /* Accumulate the magnitude, refusing to step past the limit: the
     * test v * base + d > limit is rearranged so that it cannot overflow.
     * A negative number may reach 2^63, one more than a positive one.
     */
    for (j = i; j < n; j++) {
        uint64_t d;
        if (s[j] == '_')
            continue;
        d = (uint64_t)hex_digit((unsigned char)s[j]);
        if (v > (limit - d) / (uint64_t)base) {
            fail(ps, EINVAL, ps->line, "integer out of range");
            return NULL;
        }
        v = v * (uint64_t)base + d;
    }
    if (!neg)
        result = json_integer((json_int_t)v);
    else if (v == (uint64_t)INT64_MAX + 1) /* -v would overflow */
        result = json_integer((json_int_t)INT64_MIN);
    else
        result = json_integer(-(json_int_t)v);
    if (!result)
        oom(ps);
    return result;
}

/* A float: integer part, optional fraction, optional exponent. */
static json_t *parse_float(struct parser *ps, const char *s, size_t n, size_t i)
{
    size_t j = i, k, o = 0;
    char *clean = NULL;
    char *end;
    double d;
    json_t *result = NULL;

    /* Integer part: same rules as a decimal integer. */
    if (has_leading_zero(s, n, j))
        return invalid_number(ps, s, n, " (leading zeros are not allowed)");
    if (scan_digits(s, n, &j, 10) == 0)
        return invalid_number(ps, s, n, "");
    /* Fraction: a dot needs digits on both sides ("1." and ".5" are not
     * floats).  Exponent: leading zeros are allowed there ("1e06").
     */
    if (j < n && s[j] == '.') {
        j++;
        if (scan_digits(s, n, &j, 10) == 0)
            return invalid_number(ps, s, n, "");
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        j++;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            j++;
        if (scan_digits(s, n, &j, 10) == 0)
            return invalid_number(ps, s, n, "");
    }
    if (j != n)
        return invalid_number(ps, s, n, "");

    /* strtod() wants the text without underscores, NUL-terminated. */
    if (!(clean = malloc(n + 1))) {
        oom(ps);
        return NULL;
    }
    for (k = 0; k < n; k++)
        if (s[k] != '_')
            clean[o++] = s[k];
    clean[o] = '\0';
    d = strtod(clean, &end);
    if (*end != '\0') /* only if LC_NUMERIC is not "C" */
        invalid_number(ps, s, n, "");
    else if (!isfinite(d)) /* underflow to 0 or a subnormal is fine */
        fail(ps, EINVAL, ps->line, "float out of range");
    else if (!(result = json_real(d)))
        oom(ps);
    free(clean);
    return result;
}

/* Dispatch a number token s[0..n) to the integer or float parser. */
static json_t *parse_number(struct parser *ps, const char *s, size_t n)
{
    size_t i = 0;
    bool neg = false;

    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    /* 0x, 0o and 0b numbers are unsigned and may have leading zeros. */
    if (n - i >= 2 && s[i] == '0'
        && (s[i + 1] == 'x' || s[i + 1] == 'o' || s[i + 1] == 'b')) {
        int base = s[i + 1] == 'x' ? 16 : s[i + 1] == 'o' ? 8 : 2;
        if (i > 0)
            return invalid_number(
                ps, s, n, " (no sign allowed with 0x, 0o or 0b)");
        return parse_integer(ps, s, n, 2, base, false);
    }
    /* A dot or an exponent makes a float; anything else is decimal. */
    if (memchr(s + i, '.', n - i) || memchr(s + i, 'e', n - i)
        || memchr(s + i, 'E', n - i))
        return parse_float(ps, s, n, i);
    if (has_leading_zero(s, n, i))
        return invalid_number(ps, s, n, " (leading zeros are not allowed)");
    return parse_integer(ps, s, n, i, 10, neg);
}

/* Characters that may make up a bare value.  The set is wider than any
 * one kind of value needs so that "1979-05-27", "0x1F" or "hello" is read
 * as one token and refused as a whole, with the token in the message.
 */
static bool is_token(int c)
{
    return is_bare(c) || c == '+' || c == '.' || c == ':';
}

/* Is the token s[0..n) exactly `word`? */
static bool token_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(s, word, n) == 0;
}

/* Does the token look like a date (1979-05-27) or a time (07:32:00)? */
static bool is_date_or_time(const char *s, size_t n)
{
    size_t d = 0;

    while (d < n && s[d] >= '0' && s[d] <= '9')
        d++;
    return d < n && ((d == 4 && s[d] == '-') || (d == 2 && s[d] == ':'));
}

/* Parse a bare value: boolean, number, or one of the refused kinds. */
static json_t *parse_bare_value(struct parser *ps)
{
    size_t start = ps->pos, n;
    const char *s = ps->text + start;
    char shown[SHOW_MAX];

    while (is_token(peek(ps)))
        ps->pos++;
    n = ps->pos - start;
    if (token_is(s, n, "true"))
        return json_true();
    if (token_is(s, n, "false"))
        return json_false();
    if (is_date_or_time(s, n)) {
        fail(ps, EINVAL, ps->line, "dates and times are not supported");
        return NULL;
    }
    if (token_is(s, n, "inf") || token_is(s, n, "+inf")
        || token_is(s, n, "-inf") || token_is(s, n, "nan")
        || token_is(s, n, "+nan") || token_is(s, n, "-nan")) {
        fail(ps, EINVAL, ps->line, "inf and nan are not supported");
        return NULL;
    }
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '+' || s[0] == '-'
          || s[0] == '.')) {
        fail(ps,
             EINVAL,
             ps->line,
             "invalid value '%s' (strings must be quoted)",
             show(shown, s, n));
        return NULL;
    }
    return parse_number(ps, s, n);
}

/* ---- values, arrays and inline tables -------------------------------- */

static json_t *parse_value(struct parser *ps, int depth);
static int parse_keyval(struct parser *ps, json_t *tbl, int depth);

/* Parse [ v, v, ... ] at depth `depth`.  Newlines, comments and a
 * trailing comma are allowed; element types may be mixed.
 */
static json_t *parse_array(struct parser *ps, int depth)
{
    json_t *arr = NULL;
    int start = ps->line;

    if (check_depth(ps, depth) < 0)
        return NULL;
    if (!(arr = json_array())) {
        oom(ps);
        return NULL;
    }
    ps->pos++;
    for (;;) {
        json_t *v;
        size_t save;
        int line;

        if (skip_filler(ps) < 0)
            goto error;
        if (peek(ps) == ']')
            break;
        if (peek(ps) < 0) {
            fail(ps, EINVAL, start, "unterminated array");
            goto error;
        }
        line = ps->line;
        if (path_push_index(ps, json_array_size(arr), &save) < 0)
            goto error;
        if (!(v = parse_value(ps, depth + 1)))
            goto error;
        if (json_array_append_new(arr, v) < 0) {
            oom(ps);
            goto error;
        }
        /* Only tables in arrays get a line entry: scalars in a hostile
         * array of millions would otherwise cost a map entry each.
         */
        if (json_is_object(v) && record_line(ps, line, true) < 0)
            goto error;
        buf_truncate(&ps->path, save);
        if (skip_filler(ps) < 0)
            goto error;
        if (peek(ps) == ',') {
            ps->pos++;
            continue;
        }
        if (peek(ps) == ']')
            break;
        if (peek(ps) < 0)
            fail(ps, EINVAL, start, "unterminated array");
        else
            fail(ps, EINVAL, ps->line, "expected ',' or ']' in array");
        goto error;
    }
    ps->pos++;
    return arr;
error:
    json_decref(arr);
    return NULL;
}

/* Parse { k = v, ... } at depth `depth`.  TOML 1.0 inline tables sit on
 * one line and have no trailing comma.  Once closed, the table is sealed.
 */
static json_t *parse_inline_table(struct parser *ps, int depth)
{
    json_t *tbl = NULL;
    char what[16];

    if (check_depth(ps, depth) < 0)
        return NULL;
    if (!(tbl = json_object())) {
        oom(ps);
        return NULL;
    }
    ps->pos++;
    skip_ws(ps);
    if (peek(ps) == '}') {
        ps->pos++;
        goto done;
    }
    for (;;) {
        int c;

        skip_ws(ps);
        if (peek(ps) < 0 || newline_len(ps) > 0) {
            fail(ps,
                 EINVAL,
                 ps->line,
                 "unterminated inline table (it must fit on one line)");
            goto error;
        }
        if (parse_keyval(ps, tbl, depth) < 0)
            goto error;
        skip_ws(ps);
        c = peek(ps);
        if (c == '}') {
            ps->pos++;
            break;
        }
        if (c != ',') {
            if (c < 0 || newline_len(ps) > 0)
                fail(ps,
                     EINVAL,
                     ps->line,
                     "unterminated inline table (it must fit on one line)");
            else
                fail(ps,
                     EINVAL,
                     ps->line,
                     "expected ',' or '}' in inline table, found %s",
                     found(ps, what));
            goto error;
        }
        ps->pos++;
        skip_ws(ps);
        if (peek(ps) == '}') {
            fail(ps, EINVAL, ps->line, "trailing comma in inline table");
            goto error;
        }
    }
done:
    if (kind_set(ps, tbl, KIND_INLINE) < 0)
        goto error;
    return tbl;
error:
    json_decref(tbl);
    return NULL;
}

/* Parse the value at pos.  `depth` is the depth the value would have if
 * it is a container.  Returns a new reference or NULL.
 */
static json_t *parse_value(struct parser *ps, int depth)
{
    int c = peek(ps);
    char what[16];
    json_t *v;

    if (c == '"' || c == '\'') {
        if (parse_string(ps) < 0)
            return NULL;
        if (!(v = json_stringn(ps->scratch.data, ps->scratch.len)))
            oom(ps);
        return v;
    }
    if (c == '[')
        return parse_array(ps, depth);
    if (c == '{')
        return parse_inline_table(ps, depth);
    if (is_token(c))
        return parse_bare_value(ps);
    fail(ps, EINVAL, ps->line, "expected a value, found %s", found(ps, what));
    return NULL;
}

/* Parse "key = value" into `tbl` (at depth `depth`).  Dotted keys create
 * tables on the way, and may only pass through tables that dotted keys
 * made.  The path buffer is restored before returning.
 */
static int parse_keyval(struct parser *ps, json_t *tbl, int depth)
{
    struct key k = {.n = 0};
    char shown[SHOW_MAX];
    size_t save = ps->path.len, unused, i;
    json_t *t = tbl, *v;
    int line = ps->line;
    int rc = -1;

    if (parse_key(ps, &k) < 0)
        goto done;
    if (peek(ps) != '=') {
        fail(ps,
             EINVAL,
             line,
             "expected '=' after key '%s'",
             show_key(&k, shown));
        goto done;
    }
    ps->pos++;
    skip_ws(ps);

    /* Every part but the last names a table.  A missing one is created;
     * an existing one must have been made by dotted keys too.  Tables
     * from headers and sealed inline tables cannot be reopened this way.
     */
    for (i = 0; i + 1 < k.n; i++) {
        json_t *next;
        enum kind kind;

        if (path_push_key(ps, k.part[i], &unused) < 0)
            goto done;
        if (!(next = json_object_get(t, k.part[i]))) {
            if (check_depth(ps, depth + (int)i + 1) < 0
                || !(next = add_table(ps, t, k.part[i], KIND_DOTTED))
                || record_line(ps, line, false) < 0)
                goto done;
        } else if (!json_is_object(next)) {
            fail_not_table(ps, line, show_path(ps, shown), next);
            goto done;
        } else if ((kind = kind_get(ps, next)) == KIND_INLINE) {
            fail_inline(ps, line, show_path(ps, shown));
            goto done;
        } else if (kind != KIND_DOTTED) {
            fail(ps,
                 EINVAL,
                 line,
                 "cannot add to table '%s' with dotted keys: it is defined"
                 " by a header",
                 show_path(ps, shown));
            goto done;
        }
        t = next;
    }
    /* The last part must be new: TOML never lets a key be set twice,
     * whether the first definition was a value or a table.  Checking
     * before the value is parsed reports the key's own line.
     */
    if (path_push_key(ps, k.part[k.n - 1], &unused) < 0)
        goto done;
    if (json_object_get(t, k.part[k.n - 1])) {
        fail(ps, EINVAL, line, "duplicate key '%s'", show_path(ps, shown));
        goto done;
    }
    if (!(v = parse_value(ps, depth + (int)k.n)))
        goto done;
    if (json_object_set_new(t, k.part[k.n - 1], v) < 0) {
        oom(ps);
        goto done;
    }
    if (record_line(ps, line, true) < 0)
        goto done;
    rc = 0;
done:
    buf_truncate(&ps->path, save);
    key_free(&k);
    return rc;
}

/* ---- headers and the document ---------------------------------------- */

/* Make the last part of a [[header]]: append a new table to the array of
 * tables parent[name] (creating it), and return the new element.
 */
static json_t *append_table(
    struct parser *ps, json_t *parent, const char *name, int line, int *depthp)
{
    json_t *arr = json_object_get(parent, name);
    json_t *elem;
    char shown[SHOW_MAX];
    size_t unused;

    if (!arr) {
        arr = json_array();
        if (json_object_set_new(parent, name, arr) < 0) {
            oom(ps);
            return NULL;
        }
        if (kind_set(ps, arr, KIND_TABLE_ARRAY) < 0
            || record_line(ps, line, false) < 0)
            return NULL;
    } else if (kind_get(ps, arr) != KIND_TABLE_ARRAY) {
        if (json_is_array(arr))
            fail(ps,
                 EINVAL,
                 line,
                 "cannot append to static array '%s'",
                 show_path(ps, shown));
        else
            fail(ps,
                 EINVAL,
                 line,
                 "key '%s' is already defined as %s, not an array of tables",
                 show_path(ps, shown),
                 describe(arr));
        return NULL;
    }
    if (path_push_index(ps, json_array_size(arr), &unused) < 0
        || check_depth(ps, ++*depthp) < 0)
        return NULL;
    elem = json_object();
    if (json_array_append_new(arr, elem) < 0) {
        oom(ps);
        return NULL;
    }
    if (kind_set(ps, elem, KIND_HEADER) < 0 || record_line(ps, line, true) < 0)
        return NULL;
    return elem;
}

/* Make the last part of a [header]: parent[name] must be new, or a table
 * so far only implied by an earlier header.
 */
static json_t *define_table(struct parser *ps,
                            json_t *parent,
                            const char *name,
                            int line)
{
    json_t *t = json_object_get(parent, name);
    char shown[SHOW_MAX];
    const char *path = show_path(ps, shown);

    if (!t) {
        if (!(t = add_table(ps, parent, name, KIND_HEADER)))
            return NULL;
    } else if (!json_is_object(t)) {
        if (kind_get(ps, t) == KIND_TABLE_ARRAY)
            fail(ps,
                 EINVAL,
                 line,
                 "table '%s' is already an array of tables",
                 path);
        else
            fail_not_table(ps, line, path, t);
        return NULL;
    } else {
        switch (kind_get(ps, t)) {
            case KIND_IMPLICIT:
                if (kind_set(ps, t, KIND_HEADER) < 0)
                    return NULL;
                break;
            case KIND_DOTTED:
                fail(ps,
                     EINVAL,
                     line,
                     "table '%s' already defined by dotted keys",
                     path);
                return NULL;
            case KIND_INLINE:
                fail(ps,
                     EINVAL,
                     line,
                     "table '%s' already defined as an inline table",
                     path);
                return NULL;
            default:
                fail(ps, EINVAL, line, "table '%s' defined twice", path);
                return NULL;
        }
    }
    if (record_line(ps, line, true) < 0)
        return NULL;
    return t;
}

/* Parse a [table] or [[array.of.tables]] header and make it the current
 * section.  Tables on the way are created (implicitly) or entered; for an
 * array of tables on the way, its last element is entered.
 */
static int parse_header(struct parser *ps)
{
    struct key k = {.n = 0};
    char shown[SHOW_MAX];
    json_t *t = ps->root;
    int line = ps->line, depth = 0, rc = -1;
    size_t i, unused;
    bool aot;

    ps->pos++;
    if ((aot = peek(ps) == '['))
        ps->pos++;
    skip_ws(ps);
    if (parse_key(ps, &k) < 0)
        goto done;
    if (peek(ps) != ']' || (aot && peek_at(ps, 1) != ']')) {
        fail(ps,
             EINVAL,
             line,
             aot ? "expected ']]' after array of tables name '%s'"
                 : "expected ']' after table name '%s'",
             show_key(&k, shown));
        goto done;
    }
    ps->pos += aot ? 2 : 1;

    /* Walk from the root: a header names its table absolutely.  Each part
     * deepens the nesting by one, and entering an array of tables by one
     * more (the array, then its element).
     */
    buf_truncate(&ps->path, 0);
    for (i = 0; i < k.n; i++) {
        const char *name = k.part[i];
        json_t *next;
        enum kind kind;

        if (path_push_key(ps, name, &unused) < 0
            || check_depth(ps, ++depth) < 0)
            goto done;
        /* The last part is the table being defined. */
        if (i + 1 == k.n) {
            t = aot ? append_table(ps, t, name, line, &depth)
                    : define_table(ps, t, name, line);
            if (!t)
                goto done;
            break;
        }
        /* Parts on the way may be created, entered (any table not sealed
         * as inline, including dotted-key tables), or followed into the
         * last element of an array of tables.
         */
        if (!(next = json_object_get(t, name))) {
            if (!(next = add_table(ps, t, name, KIND_IMPLICIT))
                || record_line(ps, line, false) < 0)
                goto done;
        } else if ((kind = kind_get(ps, next)) == KIND_TABLE_ARRAY) {
            /* [a.b] after [[a]] means b in the last element of a. */
            size_t last = json_array_size(next) - 1;
            if (path_push_index(ps, last, &unused) < 0
                || check_depth(ps, ++depth) < 0)
                goto done;
            next = json_array_get(next, last);
        } else if (!json_is_object(next)) {
            fail_not_table(ps, line, show_path(ps, shown), next);
            goto done;
        } else if (kind == KIND_INLINE) {
            fail_inline(ps, line, show_path(ps, shown));
            goto done;
        }
        t = next;
    }
    /* Key/value lines that follow fill this table; the path buffer keeps
     * its path as the prefix of theirs.
     */
    ps->cur = t;
    ps->cur_depth = depth;
    rc = 0;
done:
    key_free(&k);
    return rc;
}

/* Parse the whole input, line by line.  Each line is blank, a comment, a
 * table header or a key/value pair; the last two may carry a trailing
 * comment.  Multi-line strings and arrays span lines inside a value.
 */
static int parse_document(struct parser *ps)
{
    /* A byte order mark is not TOML, but editors add it; skip it. */
    if (ps->len >= 3 && memcmp(ps->text, "\xEF\xBB\xBF", 3) == 0)
        ps->pos = 3;
    for (;;) {
        size_t nl;
        int c;

        skip_ws(ps);
        if ((c = peek(ps)) < 0)
            return 0;
        if (c == '#') {
            if (skip_comment(ps) < 0)
                return -1;
        } else if ((nl = newline_len(ps)) > 0) {
            ps->pos += nl;
            ps->line++;
        } else if (c == '[') {
            if (parse_header(ps) < 0 || end_of_line(ps, "table header") < 0)
                return -1;
        } else {
            /* The path holds the section's path between lines. */
            if (parse_keyval(ps, ps->cur, ps->cur_depth) < 0
                || end_of_line(ps, "value") < 0)
                return -1;
        }
    }
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
    if (check_encoding(&ps) < 0)
        goto done;
    if (!(ps.root = json_object()) || !(ps.kinds = json_object())
        || (linesp && !(ps.lines = json_object()))) {
        oom(&ps);
        goto done;
    }
    /* The root counts as defined: "[]" is not a header anyway. */
    if (kind_set(&ps, ps.root, KIND_HEADER) < 0
        || buf_reserve(&ps, &ps.path, 0) < 0
        || buf_reserve(&ps, &ps.scratch, 0) < 0)
        goto done;
    ps.cur = ps.root;
    if (parse_document(&ps) < 0)
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

/* A file that says what a root process loads or runs must be one only
 * root (or the user running it) could have written.
 */
static int check_trusted(const char *path,
                         const struct stat *st,
                         vnib_error_t *errp)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        errno = EPERM;
        return errprintf(errp,
                         "%s: refused: owned by uid %u, not by root or this "
                         "user (uid %u)",
                         path,
                         (unsigned)st->st_uid,
                         (unsigned)geteuid());
    }
    if (st->st_mode & 022) {
        errno = EPERM;
        return errprintf(errp,
                         "%s: refused: mode %04o lets group or others write "
                         "it (chmod go-w)",
                         path,
                         (unsigned)(st->st_mode & 07777));
    }
    return 0;
}

static json_t *parse_file(const char *path,
                          bool trusted,
                          json_t **linesp,
                          vnib_error_t *errp)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0, cap;
    int fd = -1, saved_errno;
    json_t *root = NULL;

    if (linesp)
        *linesp = NULL;
    /* O_NONBLOCK keeps open() from hanging on a FIFO; fstat() then
     * refuses anything that is not a regular file.
     */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0
        || fstat(fd, &st) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        errprintf(errp, "%s: not a regular file", path);
        goto done;
    }
    if (trusted && check_trusted(path, &st, errp) < 0)
        goto done;
    if (st.st_size > (off_t)TOML_MAX_FILE_SIZE) {
        errno = E2BIG;
        errprintf(
            errp, "%s: file is larger than %u bytes", path, TOML_MAX_FILE_SIZE);
        goto done;
    }
    /* One spare byte shows whether the file grew since fstat(). */
    cap = (size_t)st.st_size + 1;
    for (;;) {
        ssize_t n;

        if (!buf || len == cap) {
            char *nbuf;

            if (buf && cap > TOML_MAX_FILE_SIZE) {
                errno = E2BIG;
                errprintf(errp,
                          "%s: file is larger than %u bytes",
                          path,
                          TOML_MAX_FILE_SIZE);
                goto done;
            }
            /* The file grew after fstat(): read on, up to the limit. */
            if (buf)
                cap = cap * 2 > TOML_MAX_FILE_SIZE + 1 ? TOML_MAX_FILE_SIZE + 1
                                                       : cap * 2;
            if (!(nbuf = realloc(buf, cap))) {
                errno = ENOMEM;
                errprintf(errp, "%s: out of memory", path);
                goto done;
            }
            buf = nbuf;
        }
        if ((n = read(fd, buf + len, cap - len)) < 0) {
            if (errno == EINTR)
                continue;
            errprintf(errp, "%s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    root = toml_parse(path, buf, len, linesp, errp);
done:
    /* free() and close() must not clobber the errno being reported. */
    saved_errno = errno;
    free(buf);
    if (fd >= 0)
        close(fd);
    errno = saved_errno;
    return root;
}

json_t *toml_parse_file(const char *path, json_t **linesp, vnib_error_t *errp)
{
    return parse_file(path, false, linesp, errp);
}

json_t *toml_parse_trusted_file(const char *path,
                                json_t **linesp,
                                vnib_error_t *errp)
{
    return parse_file(path, true, linesp, errp);
}
