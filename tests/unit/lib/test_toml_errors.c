/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the TOML reader's refusals (lib/toml.c): each is
 * checked for a NULL result, the errno, and the "NAME:LINE: message" text.
 * Most are rows of one table, by topic (duplicate keys, numbers, escapes,
 * ...), a test per topic; the size limits and message truncation have
 * tests of their own.
 * What the reader accepts is tested in test_toml.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/toml.h"

/* Check that len bytes of text are refused with errno `err` and a message
 * containing `msg`.  The input is named "x", so messages read "x:LINE:".
 */
static void check_error_len(const char *text,
                            size_t len,
                            int err,
                            const char *msg)
{
    vnib_error_t e = {0};
    json_t *lines = json_object(); /* must be reset to NULL */
    json_t *lines_before = lines;
    json_t *root;

    errno = 0;
    root = toml_parse("x", text, len, &lines, &e);
    assert_null(root);
    assert_null(lines);
    assert_int_equal(errno, err);
    if (!strstr(e.text, msg))
        fail_msg("for %s\nexpected message containing '%s'\n got '%s'",
                 text,
                 msg,
                 e.text);
    json_decref(lines_before);
}

static void check_error(const char *text, int err, const char *msg)
{
    check_error_len(text, strlen(text), err, msg);
}

/* The topics of the refusals, one test each. */
enum topic {
    ERR_DUPLICATE_KEY,
    ERR_UNTERMINATED,
    ERR_TABLE_TWICE,
    ERR_EXPECTED_EQUALS,
    ERR_DATES,
    ERR_INTEGERS,
    ERR_FLOATS,
    ERR_BAD_VALUES,
    ERR_HEADERS,
    ERR_CONTROL_CHARS,
    ERR_NUL_AND_UTF8,
    ERR_ESCAPES,
    ERR_REDEFINE,
    ERR_INLINE_SEALED,
};

/* One refusal: len bytes of text (NULs included) are refused with EINVAL
 * and a message containing msg.
 */
struct refusal {
    enum topic topic;
    const char *text;
    size_t len;
    const char *msg;
};

#define REFUSAL(topic, text, msg)          \
    {                                      \
        topic, text, sizeof(text) - 1, msg \
    }

/* Every refusal, by topic. */
/* clang-format off */
static const struct refusal refusals[] = {
    /* A key may be defined once, wherever the definitions come from. */
    REFUSAL(ERR_DUPLICATE_KEY, "a = 1\na = 2\n", "x:2: duplicate key 'a'"),
    REFUSAL(ERR_DUPLICATE_KEY, "[server]\nport = 1\n\n# again\nport = 2\n", "x:5: duplicate key 'server.port'"),
    REFUSAL(ERR_DUPLICATE_KEY, "a = 1\n\"a\" = 2\n", "x:2: duplicate key 'a'"),
    REFUSAL(ERR_DUPLICATE_KEY, "a.b = 1\na.b = 2\n", "x:2: duplicate key 'a.b'"),
    REFUSAL(ERR_DUPLICATE_KEY, "a.b = 1\na = 2\n", "x:2: duplicate key 'a'"),
    REFUSAL(ERR_DUPLICATE_KEY, "t = {a = 1, a = 2}\n", "x:1: duplicate key 't.a'"),
    REFUSAL(ERR_DUPLICATE_KEY, "[a.b]\n[a]\nb = 1\n", "x:3: duplicate key 'a.b'"),
    REFUSAL(ERR_DUPLICATE_KEY, "[[p]]\nn = 1\nn = 2\n", "x:3: duplicate key 'p[0].n'"),
    /* Strings, arrays and inline tables that never close; unterminated
     * strings are reported on the line where they start. */
    REFUSAL(ERR_UNTERMINATED, "a = 1\nb = \"abc\n", "x:2: unterminated string"),
    REFUSAL(ERR_UNTERMINATED, "a = 1\nb = \"abc", "x:2: unterminated string"),
    REFUSAL(ERR_UNTERMINATED, "b = 'abc\nc = 1\n", "x:1: unterminated string"),
    REFUSAL(ERR_UNTERMINATED, "\n\nb = \"\"\"abc\n\ndef\"\"\n", "x:3: unterminated string"),
    REFUSAL(ERR_UNTERMINATED, "b = '''abc\n", "x:1: unterminated string"),
    REFUSAL(ERR_UNTERMINATED, "\nb = \"abc\\", "x:2: unterminated string"),
    REFUSAL(ERR_UNTERMINATED, "a = [1, 2\n", "x:1: unterminated array"),
    REFUSAL(ERR_UNTERMINATED, "a = [1,\n\n", "x:1: unterminated array"),
    REFUSAL(ERR_UNTERMINATED, "a = {b = 1\n", "x:1: unterminated inline table"),
    REFUSAL(ERR_UNTERMINATED, "a = {b = 1", "x:1: unterminated inline table"),
    /* A table may be defined by one header, or by dotted keys, not both. */
    REFUSAL(ERR_TABLE_TWICE, "[server]\na = 1\n[log]\n[server]\n", "x:4: table 'server' defined twice"),
    REFUSAL(ERR_TABLE_TWICE, "[a.b]\n[a]\n[a]\n", "x:3: table 'a' defined twice"),
    REFUSAL(ERR_TABLE_TWICE, "[a]\n[a.b]\n[a.b]\n", "x:3: table 'a.b' defined twice"),
    REFUSAL(ERR_TABLE_TWICE, "a.b = 1\n[a]\n", "x:2: table 'a' already defined by dotted keys"),
    REFUSAL(ERR_TABLE_TWICE, "[fruit]\napple.color = 'red'\n[fruit.apple]\n", "x:3: table 'fruit.apple' already defined by dotted keys"),
    /* Malformed key/value lines. */
    REFUSAL(ERR_EXPECTED_EQUALS, "[server]\n\n\nlisten \"0.0.0.0\"\n", "x:4: expected '=' after key 'listen'"),
    REFUSAL(ERR_EXPECTED_EQUALS, "a.b\n", "x:1: expected '=' after key 'a.b'"),
    REFUSAL(ERR_EXPECTED_EQUALS, "a = 1\nb\n", "x:2: expected '=' after key 'b'"),
    REFUSAL(ERR_EXPECTED_EQUALS, "= 1\n", "x:1: expected a key, found '='"),
    REFUSAL(ERR_EXPECTED_EQUALS, "a. = 1\n", "x:1: expected a key, found '='"),
    REFUSAL(ERR_EXPECTED_EQUALS, "a = \n", "x:1: expected a value, found end of line"),
    REFUSAL(ERR_EXPECTED_EQUALS, "a =", "x:1: expected a value, found end of input"),
    REFUSAL(ERR_EXPECTED_EQUALS, "\"\"\"k\"\"\" = 1\n", "x:1: a multi-line string cannot be a key"),
    /* Dates and times are valid TOML but refused by this reader. */
    REFUSAL(ERR_DATES, "\n\n\n\nd = 1979-05-27\n", "x:5: dates and times are not supported"),
    REFUSAL(ERR_DATES, "d = 1979-05-27T07:32:00Z\n", "x:1: dates and times are not supported"),
    REFUSAL(ERR_DATES, "d = 1979-05-27 07:32:00\n", "x:1: dates and times are not supported"),
    REFUSAL(ERR_DATES, "t = 07:32:00\n", "x:1: dates and times are not supported"),
    REFUSAL(ERR_DATES, "a = [1, 2020-01-01]\n", "x:1: dates and times are not supported"),
    /* Out-of-range and malformed integers. */
    REFUSAL(ERR_INTEGERS, "a = 1\nb = 9223372036854775808\n", "x:2: integer out of range"),
    REFUSAL(ERR_INTEGERS, "b = -9223372036854775809\n", "x:1: integer out of range"),
    REFUSAL(ERR_INTEGERS, "b = 0x8000000000000000\n", "x:1: integer out of range"),
    REFUSAL(ERR_INTEGERS, "b = 99999999999999999999999\n", "x:1: integer out of range"),
    REFUSAL(ERR_INTEGERS, "b = 0b1111111111111111111111111111111111111111111111111111111" "111111111\n", "x:1: integer out of range"),
    REFUSAL(ERR_INTEGERS, "b = 012\n", "x:1: invalid number '012' (leading zeros"),
    REFUSAL(ERR_INTEGERS, "b = -01\n", "leading zeros"),
    REFUSAL(ERR_INTEGERS, "b = 0_1\n", "leading zeros"),
    REFUSAL(ERR_INTEGERS, "b = 1__2\n", "x:1: invalid number '1__2'"),
    REFUSAL(ERR_INTEGERS, "b = 1_\n", "x:1: invalid number '1_'"),
    REFUSAL(ERR_INTEGERS, "b = _1\n", "x:1: invalid value '_1'"),
    REFUSAL(ERR_INTEGERS, "b = +0x1\n", "no sign allowed"),
    REFUSAL(ERR_INTEGERS, "b = 0X1F\n", "x:1: invalid number '0X1F'"),
    REFUSAL(ERR_INTEGERS, "b = 0x\n", "x:1: invalid number '0x'"),
    REFUSAL(ERR_INTEGERS, "b = 0o8\n", "x:1: invalid number '0o8'"),
    REFUSAL(ERR_INTEGERS, "b = 0b102\n", "x:1: invalid number '0b102'"),
    REFUSAL(ERR_INTEGERS, "b = 0x_1\n", "x:1: invalid number '0x_1'"),
    REFUSAL(ERR_INTEGERS, "b = 12abc\n", "x:1: invalid number '12abc'"),
    REFUSAL(ERR_INTEGERS, "b = +\n", "x:1: invalid number '+'"),
    REFUSAL(ERR_INTEGERS, "b = 1 2\n", "x:1: unexpected text after value"),
    /* Malformed floats, overflow, and the refused inf and nan. */
    REFUSAL(ERR_FLOATS, "f = 1.\n", "x:1: invalid number '1.'"),
    REFUSAL(ERR_FLOATS, "f = .5\n", "x:1: invalid number '.5'"),
    REFUSAL(ERR_FLOATS, "f = 1.e5\n", "x:1: invalid number '1.e5'"),
    REFUSAL(ERR_FLOATS, "f = 1e\n", "x:1: invalid number '1e'"),
    REFUSAL(ERR_FLOATS, "f = 1e_5\n", "x:1: invalid number '1e_5'"),
    REFUSAL(ERR_FLOATS, "f = 1.5.3\n", "x:1: invalid number '1.5.3'"),
    REFUSAL(ERR_FLOATS, "f = 03.14\n", "leading zeros"),
    REFUSAL(ERR_FLOATS, "f = 1e400\n", "x:1: float out of range"),
    REFUSAL(ERR_FLOATS, "f = inf\n", "x:1: inf and nan are not supported"),
    REFUSAL(ERR_FLOATS, "f = -inf\n", "x:1: inf and nan are not supported"),
    REFUSAL(ERR_FLOATS, "f = +nan\n", "x:1: inf and nan are not supported"),
    /* Unquoted strings, wrong-case booleans, broken arrays and inline
     * tables, and trailing text. */
    REFUSAL(ERR_BAD_VALUES, "a = hello\n", "x:1: invalid value 'hello' (strings must be quoted)"),
    REFUSAL(ERR_BAD_VALUES, "a = True\n", "x:1: invalid value 'True'"),
    REFUSAL(ERR_BAD_VALUES, "a = truex\n", "x:1: invalid value 'truex'"),
    REFUSAL(ERR_BAD_VALUES, "a = [1 2]\n", "x:1: expected ',' or ']' in array"),
    REFUSAL(ERR_BAD_VALUES, "a = [,]\n", "x:1: expected a value, found ','"),
    REFUSAL(ERR_BAD_VALUES, "a = [1,,2]\n", "x:1: expected a value, found ','"),
    REFUSAL(ERR_BAD_VALUES, "a = {b = 1,}\n", "x:1: trailing comma in inline table"),
    REFUSAL(ERR_BAD_VALUES, "a = {b = 1\n, c = 2}\n", "x:1: unterminated inline table"),
    REFUSAL(ERR_BAD_VALUES, "a = {\nb = 1}\n", "x:1: unterminated inline table"),
    REFUSAL(ERR_BAD_VALUES, "a = {b = 1,\nc = 2}\n", "x:1: unterminated inline table"),
    REFUSAL(ERR_BAD_VALUES, "a = {b = 1 c = 2}\n", "x:1: expected ',' or '}' in inline table, found 'c'"),
    REFUSAL(ERR_BAD_VALUES, "a = 'x' 'y'\n", "x:1: unexpected text after value"),
    REFUSAL(ERR_BAD_VALUES, "[a] b = 1\n", "x:1: unexpected text after table header"),
    REFUSAL(ERR_BAD_VALUES, "a = @\n", "x:1: expected a value, found '@'"),
    /* Malformed [table] and [[array]] headers. */
    REFUSAL(ERR_HEADERS, "[a\n", "x:1: expected ']' after table name 'a'"),
    REFUSAL(ERR_HEADERS, "[[a]\n", "x:1: expected ']]' after array of tables name 'a'"),
    REFUSAL(ERR_HEADERS, "[[a] ]\n", "x:1: expected ']]'"),
    REFUSAL(ERR_HEADERS, "[]\n", "x:1: expected a key, found ']'"),
    REFUSAL(ERR_HEADERS, "[a.]\n", "x:1: expected a key, found ']'"),
    REFUSAL(ERR_HEADERS, "[a]]\n", "x:1: unexpected text after table header"),
    /* Raw control characters in strings and comments; a lone CR. */
    REFUSAL(ERR_CONTROL_CHARS, "a = \"x\x01y\"\n", "x:1: control character in string"),
    REFUSAL(ERR_CONTROL_CHARS, "a = 'x\x7fy'\n", "x:1: control character in string"),
    REFUSAL(ERR_CONTROL_CHARS, "a = 1\nb = \"\"\"x\x1by\"\"\"\n", "x:2: control character in string"),
    REFUSAL(ERR_CONTROL_CHARS, "a = '''x\ry'''\n", "x:1: control character in string"),
    REFUSAL(ERR_CONTROL_CHARS, "a = 1 # bad \x02 comment\n", "x:1: control character in comment"),
    REFUSAL(ERR_CONTROL_CHARS, "# bad\rcomment\n", "x:1: control character in comment"),
    REFUSAL(ERR_CONTROL_CHARS, "a = 1\rb = 2\n", "x:1: unexpected text after value"),
    REFUSAL(ERR_CONTROL_CHARS, "\x01 = 1\n", "x:1: expected a key, found byte 0x01"),
    /* NUL bytes and each kind of invalid UTF-8, with the line. */
    REFUSAL(ERR_NUL_AND_UTF8, "a = 1\nb = \"x\0y\"\n", "x:2: NUL byte in input"),
    REFUSAL(ERR_NUL_AND_UTF8, "\0", "x:1: NUL byte in input"),
    REFUSAL(ERR_NUL_AND_UTF8, "a = 1\n\nb = '\xc3'\n", "x:3: invalid UTF-8 in input"),
    REFUSAL(ERR_NUL_AND_UTF8, "b = '\xc0\xaf'\n", "x:1: invalid UTF-8"),
    /* overlong */
    REFUSAL(ERR_NUL_AND_UTF8, "b = '\xe0\x80\xaf'\n", "x:1: invalid UTF-8"),
    /* overlong */
    REFUSAL(ERR_NUL_AND_UTF8, "b = '\xed\xa0\x80'\n", "x:1: invalid UTF-8"),
    /* surrogate */
    REFUSAL(ERR_NUL_AND_UTF8, "b = '\xf4\x90\x80\x80'\n", "x:1: invalid UTF-8"),
    REFUSAL(ERR_NUL_AND_UTF8, "b = '\xff'\n", "x:1: invalid UTF-8"),
    REFUSAL(ERR_NUL_AND_UTF8, "# \x80\n", "x:1: invalid UTF-8"),
    REFUSAL(ERR_NUL_AND_UTF8, "a = '\xe2\x82", "x:1: invalid UTF-8"),
    REFUSAL(ERR_NUL_AND_UTF8, "k\xc3\xa9y = 1\n", "x:1: expected '=' after key 'k'"),
    /* Unknown escapes, short \u escapes, surrogates, U+0000, too many
     * closing quotes. */
    REFUSAL(ERR_ESCAPES, "a = \"\\q\"\n", "x:1: invalid escape '\\q' in string"),
    REFUSAL(ERR_ESCAPES, "a = \"\\x41\"\n", "x:1: invalid escape '\\x'"),
    REFUSAL(ERR_ESCAPES, "a = \"\\e\"\n", "x:1: invalid escape '\\e'"),
    REFUSAL(ERR_ESCAPES, "a = \"\\ \"\n", "x:1: invalid escape in string"),
    REFUSAL(ERR_ESCAPES, "a = \"\"\"\\ x\"\"\"\n", "x:1: invalid escape in string"),
    REFUSAL(ERR_ESCAPES, "a = \"\\u12\"\n", "x:1: \\u escape needs 4 hex digits"),
    REFUSAL(ERR_ESCAPES, "a = \"\\U0001F60\"\n", "\\U escape needs 8 hex digits"),
    REFUSAL(ERR_ESCAPES, "a = \"\\uD800\"\n", "x:1: escape \\uD800 is not a Unicode scalar value"),
    REFUSAL(ERR_ESCAPES, "a = \"\\uDFFF\"\n", "not a Unicode scalar value"),
    REFUSAL(ERR_ESCAPES, "a = \"\\U00110000\"\n", "x:1: escape \\U00110000 is not a Unicode scalar value"),
    /* U+0000 is refused in keys and values alike. */
    REFUSAL(ERR_ESCAPES, "\"\\u0000\" = 1\n", "x:1: NUL character in string"),
    REFUSAL(ERR_ESCAPES, "a = \"x\\u0000y\"\n", "x:1: NUL character in string"),
    REFUSAL(ERR_ESCAPES, "a = \"\"\"\n\nx\\U00000000\"\"\"\n", "x:3: NUL character in string"),
    REFUSAL(ERR_ESCAPES, "a = \"\"\"x\"\"\"\"\"\"\n", "x:1: too many quotes at end of multi-line string"),
    /* Values redefined as tables, tables as arrays of tables, and the
     * reverse. */
    /* A value redefined as a table, and the reverse. */
    REFUSAL(ERR_REDEFINE, "a = 1\n[a]\n", "x:2: key 'a' is already defined as an integer, not a table"),
    REFUSAL(ERR_REDEFINE, "a = 1\n[a.b]\n", "x:2: key 'a' is already defined as an integer, not a table"),
    REFUSAL(ERR_REDEFINE, "a = 'x'\na.b = 1\n", "x:2: key 'a' is already defined as a string, not a table"),
    REFUSAL(ERR_REDEFINE, "[a]\nb = [1]\n[a.b.c]\n", "x:3: key 'a.b' is already defined as an array, not a table"),
    REFUSAL(ERR_REDEFINE, "[a]\nb = 1\n[[a.b]]\n", "x:3: key 'a.b' is already defined as an integer, not an " "array of tables"),
    /* Header tables cannot be extended with dotted keys. */
    REFUSAL(ERR_REDEFINE, "[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n", "x:4: cannot add to table 'a.b' with dotted keys"),
    REFUSAL(ERR_REDEFINE, "[a.b]\n[a]\nb.x = 1\n", "x:3: cannot add to table 'a.b' with dotted keys"),
    /* Arrays of tables versus tables. */
    REFUSAL(ERR_REDEFINE, "[[a]]\n[a]\n", "x:2: table 'a' is already an array of tables"),
    REFUSAL(ERR_REDEFINE, "[a]\n[[a]]\n", "x:2: key 'a' is already defined as a table, not an array of " "tables"),
    REFUSAL(ERR_REDEFINE, "a = []\n[[a]]\n", "x:2: cannot append to static array 'a'"),
    REFUSAL(ERR_REDEFINE, "a = [{b = 1}]\n\n[[a]]\n", "x:3: cannot append to static array 'a'"),
    REFUSAL(ERR_REDEFINE, "a = [{b = 1}]\n[a.c]\n", "x:2: key 'a' is already defined as an array, not a table"),
    /* Inline tables are sealed: neither headers nor dotted keys may add
     * to them or to tables inside them. */
    REFUSAL(ERR_INLINE_SEALED, "a = {b = 1}\n[a]\n", "x:2: table 'a' already defined as an inline table"),
    REFUSAL(ERR_INLINE_SEALED, "a = {b = 1}\n[a.c]\n", "x:2: cannot extend inline table 'a'"),
    REFUSAL(ERR_INLINE_SEALED, "a = {b = 1}\na.c = 2\n", "x:2: cannot extend inline table 'a'"),
    REFUSAL(ERR_INLINE_SEALED, "a = {b = {c = 1}, b.d = 2}\n", "x:1: cannot extend inline table 'a.b'"),
    REFUSAL(ERR_INLINE_SEALED, "a = {b = {c = 1}}\n[a.b]\n", "x:2: cannot extend inline table 'a'"),
    REFUSAL(ERR_INLINE_SEALED, "a = {b = {c = 1}}\n[[a.b.d]]\n", "x:2: cannot extend inline table 'a'"),
};
/* clang-format on */

/* Check every refusal of topic t. */
static void check_refusals(enum topic t)
{
    size_t n = 0;

    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        if (refusals[i].topic != t)
            continue;
        check_error_len(
            refusals[i].text, refusals[i].len, EINVAL, refusals[i].msg);
        n++;
    }
    assert_true(n > 0);
}

static void test_err_duplicate_key(void **state)
{
    (void)state;
    check_refusals(ERR_DUPLICATE_KEY);
}

static void test_err_unterminated(void **state)
{
    (void)state;
    check_refusals(ERR_UNTERMINATED);
}

static void test_err_table_twice(void **state)
{
    (void)state;
    check_refusals(ERR_TABLE_TWICE);
}

static void test_err_expected_equals(void **state)
{
    (void)state;
    check_refusals(ERR_EXPECTED_EQUALS);
}

static void test_err_dates(void **state)
{
    (void)state;
    check_refusals(ERR_DATES);
}

static void test_err_integers(void **state)
{
    (void)state;
    check_refusals(ERR_INTEGERS);
}

static void test_err_floats(void **state)
{
    (void)state;
    check_refusals(ERR_FLOATS);
}

static void test_err_bad_values(void **state)
{
    (void)state;
    check_refusals(ERR_BAD_VALUES);
}

static void test_err_headers(void **state)
{
    (void)state;
    check_refusals(ERR_HEADERS);
}

static void test_err_control_chars(void **state)
{
    (void)state;
    check_refusals(ERR_CONTROL_CHARS);
}

static void test_err_nul_and_utf8(void **state)
{
    (void)state;
    check_refusals(ERR_NUL_AND_UTF8);
}

static void test_err_escapes(void **state)
{
    (void)state;
    check_refusals(ERR_ESCAPES);
}

static void test_err_redefine(void **state)
{
    (void)state;
    check_refusals(ERR_REDEFINE);
}

static void test_err_inline_sealed(void **state)
{
    (void)state;
    check_refusals(ERR_INLINE_SEALED);
}

/* Nesting depth, key parts, key path length and input size limits. */
static void test_err_limits(void **state)
{
    char text[1024];
    size_t i, n;
    char *big;
    json_t *root;

    (void)state;
    /* 64 nested arrays are fine, 65 are not. */
    n = (size_t)snprintf(text, sizeof(text), "a = ");
    for (i = 0; i < TOML_MAX_DEPTH; i++)
        text[n++] = '[';
    for (i = 0; i < TOML_MAX_DEPTH; i++)
        text[n++] = ']';
    text[n] = '\0';
    root = toml_parse("x", text, strlen(text), NULL, NULL);
    assert_non_null(root);
    json_decref(root);

    n = (size_t)snprintf(text, sizeof(text), "\na = ");
    for (i = 0; i < TOML_MAX_DEPTH + 1; i++)
        text[n++] = '[';
    text[n] = '\0';
    check_error(text, E2BIG, "x:2: nesting deeper than 64 levels");

    /* The same bound holds for inline tables and for headers. */
    n = (size_t)snprintf(text, sizeof(text), "a = ");
    for (i = 0; i < TOML_MAX_DEPTH + 1; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "{b=");
    text[n] = '\0';
    check_error(text, E2BIG, "nesting deeper than 64 levels");

    /* [a.a...] with 64 parts is fine; under [[a]] it is one too deep. */
    n = (size_t)snprintf(text, sizeof(text), "[a");
    for (i = 0; i < TOML_MAX_DEPTH - 1; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, ".a");
    snprintf(text + n, sizeof(text) - n, "]\nk = 1\n");
    root = toml_parse("x", text, strlen(text), NULL, NULL);
    assert_non_null(root);
    json_decref(root);
    n = (size_t)snprintf(text, sizeof(text), "[[a]]\n[a");
    for (i = 0; i < TOML_MAX_DEPTH - 1; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, ".a");
    snprintf(text + n, sizeof(text) - n, "]\n");
    check_error(text, E2BIG, "x:2: nesting deeper than 64 levels");

    n = 0;
    for (i = 0; i < TOML_MAX_DEPTH + 1; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "k.");
    snprintf(text + n, sizeof(text) - n, "k = 1\n");
    check_error(text, E2BIG, "x:1: key has more than 64 parts");

    /* [[a]] nests an array and a table. */
    n = (size_t)snprintf(text, sizeof(text), "[[a");
    for (i = 0; i < TOML_MAX_DEPTH - 1; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, ".a");
    snprintf(text + n, sizeof(text) - n, "]]\n");
    check_error(text, E2BIG, "x:1: nesting deeper than 64 levels");

    /* Key paths are bounded. */
    n = (size_t)snprintf(text, sizeof(text), "a = 1\n\"");
    memset(text + n, 'k', 600);
    n += 600;
    snprintf(text + n, sizeof(text) - n, "\" = 1\n");
    check_error(text, E2BIG, "x:2: key path longer than 512 bytes");

    /* Input past TOML_MAX_FILE_SIZE is refused before it is read. */
    big = malloc(TOML_MAX_FILE_SIZE + 1);
    assert_non_null(big);
    memset(big, '#', TOML_MAX_FILE_SIZE + 1);
    check_error_len(
        big, TOML_MAX_FILE_SIZE + 1, E2BIG, "x: input is larger than");
    /* ...and exactly the limit is accepted (one long comment). */
    root = toml_parse("x", big, TOML_MAX_FILE_SIZE, NULL, NULL);
    assert_non_null(root);
    json_decref(root);
    free(big);
}

/* Long names and keys keep messages within the fixed buffer. */
static void test_err_message_truncated(void **state)
{
    vnib_error_t e;
    char name[300];
    json_t *root;

    (void)state;
    /* A long name does not overflow the buffer; the cut is marked. */
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    root = toml_parse(name, "a =", 3, NULL, &e);
    assert_null(root);
    assert_int_equal(strlen(e.text), sizeof(e.text) - 1);
    assert_int_equal(e.text[sizeof(e.text) - 2], '+');

    /* Long keys are cut in messages, not passed through whole. */
    memset(name, 'a', 100);
    name[100] = '\n';
    root = toml_parse("x", name, 101, NULL, &e);
    assert_null(root);
    assert_non_null(strstr(e.text, "x:1: expected '=' after key 'aaaa"));
    assert_non_null(strstr(e.text, "...'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_duplicate_key),
        cmocka_unit_test(test_err_unterminated),
        cmocka_unit_test(test_err_table_twice),
        cmocka_unit_test(test_err_expected_equals),
        cmocka_unit_test(test_err_dates),
        cmocka_unit_test(test_err_integers),
        cmocka_unit_test(test_err_floats),
        cmocka_unit_test(test_err_bad_values),
        cmocka_unit_test(test_err_headers),
        cmocka_unit_test(test_err_control_chars),
        cmocka_unit_test(test_err_nul_and_utf8),
        cmocka_unit_test(test_err_escapes),
        cmocka_unit_test(test_err_redefine),
        cmocka_unit_test(test_err_inline_sealed),
        cmocka_unit_test(test_err_limits),
        cmocka_unit_test(test_err_message_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
