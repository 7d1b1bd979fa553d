/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The TOML reader's lexing (see toml.c): the input's encoding check,
 * whitespace, comments and line ends, basic and literal strings with their
 * escapes, and keys, bare, quoted and dotted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hex.h"
#include "toml_int.h"

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

int toml_check_encoding(struct parser *ps)
{
    const unsigned char *s = (const unsigned char *)ps->text;
    size_t i = 0, n;
    int line = 1;

    while (i < ps->len) {
        if (s[i] == '\0')
            return toml_fail(ps, EINVAL, line, "NUL byte in input");
        if (s[i] == '\n')
            line++;
        if (!(n = utf8_len(s + i, ps->len - i)))
            return toml_fail(ps, EINVAL, line, "invalid UTF-8 in input");
        i += n;
    }
    return 0;
}

/* ---- lexical helpers ------------------------------------------------- */

int toml_peek(const struct parser *ps)
{
    return ps->pos < ps->len ? (unsigned char)ps->text[ps->pos] : -1;
}

int toml_peek_at(const struct parser *ps, size_t off)
{
    if (off >= ps->len - ps->pos)
        return -1;
    return (unsigned char)ps->text[ps->pos + off];
}

size_t toml_newline_len(const struct parser *ps)
{
    if (toml_peek(ps) == '\n')
        return 1;
    if (toml_peek(ps) == '\r' && toml_peek_at(ps, 1) == '\n')
        return 2;
    return 0;
}

void toml_skip_ws(struct parser *ps)
{
    while (toml_peek(ps) == ' ' || toml_peek(ps) == '\t')
        ps->pos++;
}

/* Characters TOML forbids raw in strings and comments (tab is allowed). */
static bool is_control(int c)
{
    return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

bool toml_is_bare(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
           || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int toml_skip_comment(struct parser *ps)
{
    ps->pos++;
    while (ps->pos < ps->len && toml_newline_len(ps) == 0) {
        if (is_control(toml_peek(ps)))
            return toml_fail(
                ps, EINVAL, ps->line, "control character in comment");
        ps->pos++;
    }
    return 0;
}

int toml_skip_filler(struct parser *ps)
{
    for (;;) {
        size_t nl;

        toml_skip_ws(ps);
        if (toml_peek(ps) == '#') {
            if (toml_skip_comment(ps) < 0)
                return -1;
        } else if ((nl = toml_newline_len(ps)) > 0) {
            ps->pos += nl;
            ps->line++;
        } else
            return 0;
    }
}

int toml_end_of_line(struct parser *ps, const char *after)
{
    size_t nl;

    toml_skip_ws(ps);
    if (toml_peek(ps) == '#' && toml_skip_comment(ps) < 0)
        return -1;
    if (ps->pos == ps->len)
        return 0;
    if ((nl = toml_newline_len(ps)) > 0) {
        ps->pos += nl;
        ps->line++;
        return 0;
    }
    return toml_fail(ps, EINVAL, ps->line, "unexpected text after %s", after);
}

const char *toml_found(const struct parser *ps, char out[16])
{
    int c = toml_peek(ps);

    if (c < 0)
        return "end of input";
    if (toml_newline_len(ps) > 0)
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
        int h = hex_digit(toml_peek_at(ps, 2 + i));
        if (h < 0)
            return toml_fail(ps,
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
        return toml_fail(ps, EINVAL, ps->line, "NUL character in string");
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return toml_fail(ps,
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
    return toml_buf_add(ps, &ps->scratch, out, n);
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
    int c = toml_peek_at(ps, 1);
    const char *hit = c > 0 ? strchr(from, c) : NULL;

    if (hit) {
        ps->pos += 2;
        return toml_buf_addc(ps, &ps->scratch, to[hit - from]);
    }
    if (c == 'u' || c == 'U')
        return parse_unicode_escape(ps, c == 'u' ? 4 : 8);
    if (multiline) {
        size_t save = ps->pos;

        ps->pos++;
        toml_skip_ws(ps);
        if (toml_newline_len(ps) > 0) {
            size_t nl;
            for (;;) {
                toml_skip_ws(ps);
                if (!(nl = toml_newline_len(ps)))
                    break;
                ps->pos += nl;
                ps->line++;
            }
            return 0;
        }
        ps->pos = save;
    }
    if (c > 0x20 && c < 0x7f)
        return toml_fail(
            ps, EINVAL, ps->line, "invalid escape '\\%c' in string", c);
    return toml_fail(ps, EINVAL, ps->line, "invalid escape in string");
}

int toml_parse_string(struct parser *ps)
{
    char quote = ps->text[ps->pos];
    bool literal = quote == '\'';
    bool multiline =
        toml_peek_at(ps, 1) == quote && toml_peek_at(ps, 2) == quote;
    int start = ps->line;

    toml_buf_truncate(&ps->scratch, 0);
    if (multiline) {
        size_t nl;

        ps->pos += 3;
        /* A newline right after the opening delimiter is trimmed. */
        if ((nl = toml_newline_len(ps)) > 0) {
            ps->pos += nl;
            ps->line++;
        }
    } else
        ps->pos++;

    /* Copy byte by byte: the input is valid UTF-8 already, so multi-byte
     * characters pass through intact.
     */
    for (;;) {
        int c = toml_peek(ps);
        size_t nl;

        if (c < 0)
            return toml_fail(ps, EINVAL, start, "unterminated string");
        if (c == quote) {
            size_t q = 1;

            if (!multiline) {
                ps->pos++;
                return 0;
            }
            /* Up to two quotes may sit just before the closing three. */
            while (toml_peek_at(ps, q) == quote)
                q++;
            if (q > 5)
                return toml_fail(ps,
                                 EINVAL,
                                 ps->line,
                                 "too many quotes at end of multi-line string");
            if (q >= 3) {
                /* The last three quotes close; any before them are text. */
                ps->pos += q;
                for (q -= 3; q > 0; q--)
                    if (toml_buf_addc(ps, &ps->scratch, quote) < 0)
                        return -1;
                return 0;
            }
            /* One or two quotes inside a multi-line string are text. */
            if (toml_buf_add(ps, &ps->scratch, ps->text + ps->pos, q) < 0)
                return -1;
            ps->pos += q;
            continue;
        }
        if (c == '\\' && !literal) {
            if (toml_peek_at(ps, 1) < 0)
                return toml_fail(ps, EINVAL, start, "unterminated string");
            if (parse_escape(ps, multiline) < 0)
                return -1;
            continue;
        }
        /* Newlines end a one-line string too early, and are kept (as LF)
         * in a multi-line one.
         */
        if ((nl = toml_newline_len(ps)) > 0) {
            if (!multiline)
                return toml_fail(ps, EINVAL, start, "unterminated string");
            if (toml_buf_addc(ps, &ps->scratch, '\n') < 0)
                return -1;
            ps->pos += nl;
            ps->line++;
            continue;
        }
        if (is_control(c))
            return toml_fail(
                ps, EINVAL, ps->line, "control character in string");
        if (toml_buf_addc(ps, &ps->scratch, (char)c) < 0)
            return -1;
        ps->pos++;
    }
}

/* ---- keys ------------------------------------------------------------ */

void toml_key_free(struct key *k)
{
    while (k->n > 0)
        free(k->part[--k->n]);
}

/* Parse one part of a key (bare, "basic" or 'literal') into *partp. */
static int parse_simple_key(struct parser *ps, char **partp)
{
    int c = toml_peek(ps);
    const char *s;
    size_t n;
    char *part;
    char what[16];

    if (c == '"' || c == '\'') {
        if (toml_peek_at(ps, 1) == c && toml_peek_at(ps, 2) == c)
            return toml_fail(
                ps, EINVAL, ps->line, "a multi-line string cannot be a key");
        if (toml_parse_string(ps) < 0)
            return -1;
        s = ps->scratch.data;
        n = ps->scratch.len;
    } else if (toml_is_bare(c)) {
        s = ps->text + ps->pos;
        for (n = 0; toml_is_bare(toml_peek(ps)); n++)
            ps->pos++;
    } else
        return toml_fail(ps,
                         EINVAL,
                         ps->line,
                         "expected a key, found %s",
                         toml_found(ps, what));

    if (!(part = malloc(n + 1)))
        return toml_oom(ps);
    memcpy(part, s, n);
    part[n] = '\0';
    *partp = part;
    return 0;
}

int toml_parse_key(struct parser *ps, struct key *k)
{
    for (;;) {
        if (k->n == TOML_MAX_DEPTH)
            return toml_fail(ps,
                             E2BIG,
                             ps->line,
                             "key has more than %d parts",
                             TOML_MAX_DEPTH);
        if (parse_simple_key(ps, &k->part[k->n]) < 0)
            return -1;
        k->n++;
        toml_skip_ws(ps);
        if (toml_peek(ps) != '.')
            return 0;
        ps->pos++;
        toml_skip_ws(ps);
    }
}
