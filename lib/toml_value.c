/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The TOML reader's values (see toml.c): integers, floats, booleans and
 * the bare words it refuses (dates, inf, nan), then arrays, inline tables
 * and the choice between them all at the start of a value.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hex.h"
#include "toml_int.h"

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

    toml_fail(ps,
              EINVAL,
              ps->line,
              "invalid number '%s'%s",
              toml_show(shown, s, n),
              why);
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
            toml_fail(ps, EINVAL, ps->line, "integer out of range");
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
        toml_oom(ps);
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
        toml_oom(ps);
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
        toml_fail(ps, EINVAL, ps->line, "float out of range");
    else if (!(result = json_real(d)))
        toml_oom(ps);
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
    return toml_is_bare(c) || c == '+' || c == '.' || c == ':';
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

    while (is_token(toml_peek(ps)))
        ps->pos++;
    n = ps->pos - start;
    if (token_is(s, n, "true"))
        return json_true();
    if (token_is(s, n, "false"))
        return json_false();
    if (is_date_or_time(s, n)) {
        toml_fail(ps, EINVAL, ps->line, "dates and times are not supported");
        return NULL;
    }
    if (token_is(s, n, "inf") || token_is(s, n, "+inf")
        || token_is(s, n, "-inf") || token_is(s, n, "nan")
        || token_is(s, n, "+nan") || token_is(s, n, "-nan")) {
        toml_fail(ps, EINVAL, ps->line, "inf and nan are not supported");
        return NULL;
    }
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '+' || s[0] == '-'
          || s[0] == '.')) {
        toml_fail(ps,
                  EINVAL,
                  ps->line,
                  "invalid value '%s' (strings must be quoted)",
                  toml_show(shown, s, n));
        return NULL;
    }
    return parse_number(ps, s, n);
}

/* ---- values, arrays and inline tables -------------------------------- */

/* Parse [ v, v, ... ] at depth `depth`.  Newlines, comments and a
 * trailing comma are allowed; element types may be mixed.
 */
static json_t *parse_array(struct parser *ps, int depth)
{
    json_t *arr = NULL;
    int start = ps->line;

    if (toml_check_depth(ps, depth) < 0)
        return NULL;
    if (!(arr = json_array())) {
        toml_oom(ps);
        return NULL;
    }
    ps->pos++;
    for (;;) {
        json_t *v;
        size_t save;
        int line;

        if (toml_skip_filler(ps) < 0)
            goto error;
        if (toml_peek(ps) == ']')
            break;
        if (toml_peek(ps) < 0) {
            toml_fail(ps, EINVAL, start, "unterminated array");
            goto error;
        }
        line = ps->line;
        if (toml_path_push_index(ps, json_array_size(arr), &save) < 0)
            goto error;
        if (!(v = toml_parse_value(ps, depth + 1)))
            goto error;
        if (json_array_append_new(arr, v) < 0) {
            toml_oom(ps);
            goto error;
        }
        /* Only tables in arrays get a line entry: scalars in a hostile
         * array of millions would otherwise cost a map entry each.
         */
        if (json_is_object(v) && toml_record_line(ps, line, true) < 0)
            goto error;
        toml_buf_truncate(&ps->path, save);
        if (toml_skip_filler(ps) < 0)
            goto error;
        if (toml_peek(ps) == ',') {
            ps->pos++;
            continue;
        }
        if (toml_peek(ps) == ']')
            break;
        if (toml_peek(ps) < 0)
            toml_fail(ps, EINVAL, start, "unterminated array");
        else
            toml_fail(ps, EINVAL, ps->line, "expected ',' or ']' in array");
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

    if (toml_check_depth(ps, depth) < 0)
        return NULL;
    if (!(tbl = json_object())) {
        toml_oom(ps);
        return NULL;
    }
    ps->pos++;
    toml_skip_ws(ps);
    if (toml_peek(ps) == '}') {
        ps->pos++;
        goto done;
    }
    for (;;) {
        int c;

        toml_skip_ws(ps);
        if (toml_peek(ps) < 0 || toml_newline_len(ps) > 0) {
            toml_fail(ps,
                      EINVAL,
                      ps->line,
                      "unterminated inline table (it must fit on one line)");
            goto error;
        }
        if (toml_parse_keyval(ps, tbl, depth) < 0)
            goto error;
        toml_skip_ws(ps);
        c = toml_peek(ps);
        if (c == '}') {
            ps->pos++;
            break;
        }
        if (c != ',') {
            if (c < 0 || toml_newline_len(ps) > 0)
                toml_fail(
                    ps,
                    EINVAL,
                    ps->line,
                    "unterminated inline table (it must fit on one line)");
            else
                toml_fail(ps,
                          EINVAL,
                          ps->line,
                          "expected ',' or '}' in inline table, found %s",
                          toml_found(ps, what));
            goto error;
        }
        ps->pos++;
        toml_skip_ws(ps);
        if (toml_peek(ps) == '}') {
            toml_fail(ps, EINVAL, ps->line, "trailing comma in inline table");
            goto error;
        }
    }
done:
    if (toml_kind_set(ps, tbl, KIND_INLINE) < 0)
        goto error;
    return tbl;
error:
    json_decref(tbl);
    return NULL;
}

json_t *toml_parse_value(struct parser *ps, int depth)
{
    int c = toml_peek(ps);
    char what[16];
    json_t *v;

    if (c == '"' || c == '\'') {
        if (toml_parse_string(ps) < 0)
            return NULL;
        if (!(v = json_stringn(ps->scratch.data, ps->scratch.len)))
            toml_oom(ps);
        return v;
    }
    if (c == '[')
        return parse_array(ps, depth);
    if (c == '{')
        return parse_inline_table(ps, depth);
    if (is_token(c))
        return parse_bare_value(ps);
    toml_fail(ps,
              EINVAL,
              ps->line,
              "expected a value, found %s",
              toml_found(ps, what));
    return NULL;
}
