/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the TOML reader (lib/toml.c).
 *
 * Each accepted feature is checked by comparing the parsed tree with the
 * JSON it should equal (the refusals are in test_toml_errors.c).  The line
 * side table and toml_parse_file() have tests of their own, and a
 * realistic broker configuration ties everything together.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/toml.h"

/* ---- helpers --------------------------------------------------------- */

/* Parse NUL-terminated text named "t"; fail the test if it is refused. */
static json_t *parse_ok(const char *text, json_t **linesp)
{
    vnib_error_t err = {0};
    json_t *root = toml_parse("t", text, strlen(text), linesp, &err);

    if (!root)
        fail_msg("parse failed: %s", err.text);
    return root;
}

/* Check that `text` parses to the tree that `json` describes. */
static void check_tree(const char *text, const char *json)
{
    json_error_t jerr;
    json_t *expect = json_loads(json, 0, &jerr);
    json_t *got = parse_ok(text, NULL);

    if (!expect)
        fail_msg("bad expected JSON '%s': %s", json, jerr.text);
    if (!json_equal(expect, got)) {
        char *dump = json_dumps(got, JSON_SORT_KEYS);
        fail_msg("for %s\nexpected %s\n     got %s", text, json, dump);
    }
    json_decref(expect);
    json_decref(got);
}

/* Check one entry of the line table. */
static void check_line(json_t *lines, const char *path, int line)
{
    json_t *v = json_object_get(lines, path);

    if (!v)
        fail_msg("no line entry for '%s'", path);
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), line);
}

/* A key path and the line that lines gives it (0: it has no entry). */
struct key_line {
    const char *path;
    int line;
};

/* check_line for each of want, up to the entry with a NULL path. */
static void check_lines(json_t *lines, const struct key_line *want)
{
    for (; want->path; want++) {
        if (want->line)
            check_line(lines, want->path, want->line);
        else
            assert_null(json_object_get(lines, want->path));
    }
}

/* Write text to a new temporary file; returns its malloc'd path. */
static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/test_toml.XXXXXX");
    int fd;

    assert_non_null(path);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(close(fd), 0);
    return path;
}

/* ---- documents, keys and tables -------------------------------------- */

/* Documents with no key/value pairs are empty objects. */
static void test_empty(void **state)
{
    (void)state;
    check_tree("", "{}");
    check_tree("\n\n   \n\t\n", "{}");
    check_tree("# only a comment\n  # another\n", "{}");
    check_tree("# no trailing newline", "{}");

    /* A NULL buffer with length 0 is an empty document. */
    json_t *root = toml_parse("t", NULL, 0, NULL, NULL);
    assert_non_null(root);
    assert_int_equal(json_object_size(root), 0);
    json_decref(root);
}

/* Bare keys, "basic" and 'literal' quoted keys, and the empty key. */
static void test_bare_and_quoted_keys(void **state)
{
    (void)state;
    check_tree("key = 1\nbare_key = 2\nbare-key = 3\n1234 = 4\n",
               "{\"key\":1,\"bare_key\":2,\"bare-key\":3,\"1234\":4}");
    check_tree("\"127.0.0.1\" = 1\n\"ʎǝʞ\" = 2\n'quoted \"v\"' = 3\n",
               "{\"127.0.0.1\":1,\"ʎǝʞ\":2,\"quoted \\\"v\\\"\":3}");
    check_tree("\"\" = 1\n", "{\"\":1}");
    check_tree("\"a\\tb\" = 1\n", "{\"a\\tb\":1}");
    check_tree("k=1", "{\"k\":1}");
}

/* Dotted keys build nested tables; blanks around dots are allowed. */
static void test_dotted_keys(void **state)
{
    (void)state;
    check_tree("a.b.c = 1\na.b.d = 2\na.e = 3\n",
               "{\"a\":{\"b\":{\"c\":1,\"d\":2},\"e\":3}}");
    check_tree("site . \"google.com\" = true\n",
               "{\"site\":{\"google.com\":true}}");
    check_tree("3.14159 = \"pi\"\n", "{\"3\":{\"14159\":\"pi\"}}");
    /* Headers may add sub-tables to a table made by dotted keys. */
    check_tree(
        "[fruit]\napple.color = \"red\"\n[fruit.apple.texture]\n"
        "smooth = true\n",
        "{\"fruit\":{\"apple\":{\"color\":\"red\","
        "\"texture\":{\"smooth\":true}}}}");
}

/* [table] headers, implied super-tables defined later, empty tables. */
static void test_tables(void **state)
{
    (void)state;
    check_tree("[server]\nport = 8080\n\n[database]\nurl = \"pg\"\n",
               "{\"server\":{\"port\":8080},\"database\":{\"url\":\"pg\"}}");
    check_tree("[a.b.c]\nx = 1\n[a]\ny = 2\n",
               "{\"a\":{\"b\":{\"c\":{\"x\":1}},\"y\":2}}");
    check_tree("[ a . \"b c\" ]  # comment\n", "{\"a\":{\"b c\":{}}}");
    check_tree("top = 0\n[empty]\n[other]\nz = 1\n",
               "{\"top\":0,\"empty\":{},\"other\":{\"z\":1}}");
    check_tree("  [indented]\n  k = 'v'\n", "{\"indented\":{\"k\":\"v\"}}");
}

/* [[array]] headers, with sub-tables and nested arrays of tables
 * belonging to the last element. */
static void test_array_of_tables(void **state)
{
    (void)state;
    check_tree("[[pool]]\nname = \"a\"\n[[pool]]\n[[pool]]\nname = \"c\"\n",
               "{\"pool\":[{\"name\":\"a\"},{},{\"name\":\"c\"}]}");
    check_tree(
        "[[fruit]]\nname = \"apple\"\n[fruit.physical]\n"
        "color = \"red\"\n[[fruit.variety]]\nname = \"red\"\n"
        "[[fruit.variety]]\nname = \"granny\"\n"
        "[[fruit]]\nname = \"banana\"\n[[fruit.variety]]\n"
        "name = \"plantain\"\n",
        "{\"fruit\":[{\"name\":\"apple\",\"physical\":{\"color\":"
        "\"red\"},\"variety\":[{\"name\":\"red\"},{\"name\":"
        "\"granny\"}]},{\"name\":\"banana\",\"variety\":[{\"name\":"
        "\"plantain\"}]}]}");
    check_tree("[[a.b]]\nx = 1\n[a]\ny = 2\n",
               "{\"a\":{\"b\":[{\"x\":1}],\"y\":2}}");
}

/* Inline tables, nested, with dotted keys and arrays inside. */
static void test_inline_tables(void **state)
{
    (void)state;
    check_tree("name = { first = \"Tom\", last = \"Preston-Werner\" }\n",
               "{\"name\":{\"first\":\"Tom\",\"last\":\"Preston-Werner\"}}");
    check_tree("a = {}\n", "{\"a\":{}}");
    check_tree("a = {b = 1, c.d = \"x\", c.e = [1, {f = 2}]}\n",
               "{\"a\":{\"b\":1,\"c\":{\"d\":\"x\",\"e\":[1,{\"f\":2}]}}}");
    check_tree("p = {x={y={z=true}}}", "{\"p\":{\"x\":{\"y\":{\"z\":true}}}}");
    check_tree("[t]\ni = { k = 1 }\n", "{\"t\":{\"i\":{\"k\":1}}}");
}

/* ---- strings --------------------------------------------------------- */

/* One-line basic strings with the short escapes and raw UTF-8. */
static void test_basic_strings(void **state)
{
    (void)state;
    check_tree("s = \"plain\"\n", "{\"s\":\"plain\"}");
    check_tree("s = \"\"\n", "{\"s\":\"\"}");
    check_tree("s = \"tab\\there\"\n", "{\"s\":\"tab\\there\"}");
    check_tree("s = \"\\b\\t\\n\\f\\r\\\"\\\\\"\n",
               "{\"s\":\"\\b\\t\\n\\f\\r\\\"\\\\\"}");
    check_tree("s = \"raw\ttab and # not a comment\"\n",
               "{\"s\":\"raw\\ttab and # not a comment\"}");
    check_tree("s = \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n",
               "{\"s\":\"caf\\u00e9 \\u20ac \\ud83d\\ude00\"}");
}

/* \u and \U escapes at each UTF-8 length boundary. */
static void test_unicode_escapes(void **state)
{
    json_t *root;
    const char *s;

    (void)state;
    root = parse_ok("a = \"\\u00E9\\u20AC\\U0001F600\\u0041\"\n", NULL);
    s = json_string_value(json_object_get(root, "a"));
    assert_string_equal(s,
                        "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                        "A");
    json_decref(root);

    root = parse_ok("a = \"\\U0010FFFF\\u007F\\u0080\\u07FF\\u0800\"\n", NULL);
    s = json_string_value(json_object_get(root, "a"));
    assert_string_equal(s, "\xf4\x8f\xbf\xbf\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80");
    json_decref(root);
}

/* Literal strings take backslashes and quotes as they are. */
static void test_literal_strings(void **state)
{
    (void)state;
    check_tree("p = 'C:\\Users\\nodejs\\templates'\n",
               "{\"p\":\"C:\\\\Users\\\\nodejs\\\\templates\"}");
    check_tree("q = 'Tom \"Dubs\" Preston'\n",
               "{\"q\":\"Tom \\\"Dubs\\\" Preston\"}");
    check_tree("e = ''\n", "{\"e\":\"\"}");
}

/* Multi-line basic strings: first newline trimmed, line-ending
 * backslashes, quotes next to the closing delimiter, CRLF. */
static void test_multiline_basic(void **state)
{
    (void)state;
    /* The newline after the opening delimiter is trimmed. */
    check_tree("s = \"\"\"\nRoses are red\nViolets are blue\"\"\"\n",
               "{\"s\":\"Roses are red\\nViolets are blue\"}");
    check_tree("s = \"\"\"one\"\"\"\n", "{\"s\":\"one\"}");
    /* Line-ending backslashes eat the newline and following blanks. */
    check_tree(
        "s = \"\"\"\nThe quick brown \\\n\n\n  fox jumps \\\n"
        "    over the lazy dog.\"\"\"\n",
        "{\"s\":\"The quick brown fox jumps over the lazy dog.\"}");
    check_tree("s = \"\"\"\\\n       The quick \\   \n  fox.\\\n   \"\"\"\n",
               "{\"s\":\"The quick fox.\"}");
    /* One or two quotes may precede the closing delimiter. */
    check_tree("s = \"\"\"Here are two quotation marks: \"\". Simple.\"\"\"\n",
               "{\"s\":\"Here are two quotation marks: \\\"\\\". Simple.\"}");
    check_tree("s = \"\"\"\"This,\" she said, \"is just a pointless.\"\"\"\"\n",
               "{\"s\":\"\\\"This,\\\" she said, \\\"is just a "
               "pointless.\\\"\"}");
    check_tree("s = \"\"\"a\"\"\"\"\"\n", "{\"s\":\"a\\\"\\\"\"}");
    check_tree("s = \"\"\"esc \\\"\\\"\\\" \\u0041\"\"\"\n",
               "{\"s\":\"esc \\\"\\\"\\\" A\"}");
    /* CRLF inside is returned as LF. */
    check_tree("s = \"\"\"\r\na\r\nb\"\"\"\r\n", "{\"s\":\"a\\nb\"}");
}

/* Multi-line literal strings: no escapes, same delimiter rules. */
static void test_multiline_literal(void **state)
{
    (void)state;
    check_tree("re = '''I [dw]on't need \\d{2} apples'''\n",
               "{\"re\":\"I [dw]on't need \\\\d{2} apples\"}");
    check_tree("lines = '''\nThe first newline is\ntrimmed.\n'''\n",
               "{\"lines\":\"The first newline is\\ntrimmed.\\n\"}");
    check_tree("q = ''''That,' she said, 'is still pointless.''''\n",
               "{\"q\":\"'That,' she said, 'is still pointless.'\"}");
    check_tree("t = '''tab\there \\ no escape'''\n",
               "{\"t\":\"tab\\there \\\\ no escape\"}");
}

/* ---- numbers, booleans, arrays --------------------------------------- */

/* Decimal, signed, underscored, hex, octal and binary integers, and the
 * int64 extremes. */
static void test_integers(void **state)
{
    json_t *root;

    (void)state;
    check_tree("a = +99\nb = 42\nc = 0\nd = -17\ne = +0\nf = -0\n",
               "{\"a\":99,\"b\":42,\"c\":0,\"d\":-17,\"e\":0,\"f\":0}");
    check_tree("a = 1_000\nb = 5_349_221\nc = 1_2_3_4_5\n",
               "{\"a\":1000,\"b\":5349221,\"c\":12345}");
    check_tree(
        "h1 = 0xDEADBEEF\nh2 = 0xdead_beef\nh3 = 0x00ff\n"
        "o1 = 0o01234567\no2 = 0o755\nb1 = 0b11010110\n",
        "{\"h1\":3735928559,\"h2\":3735928559,\"h3\":255,"
        "\"o1\":342391,\"o2\":493,\"b1\":214}");

    root = parse_ok(
        "max = 9223372036854775807\nmin = -9223372036854775808\n"
        "hmax = 0x7FFFFFFFFFFFFFFF\n",
        NULL);
    assert_true(json_integer_value(json_object_get(root, "max")) == INT64_MAX);
    assert_true(json_integer_value(json_object_get(root, "min")) == INT64_MIN);
    assert_true(json_integer_value(json_object_get(root, "hmax")) == INT64_MAX);
    json_decref(root);
}

/* Floats with fractions, exponents and underscores. */
static void test_floats(void **state)
{
    json_t *root;

    (void)state;
    check_tree("a = +1.0\nb = 3.1415\nc = -0.01\n",
               "{\"a\":1.0,\"b\":3.1415,\"c\":-0.01}");
    check_tree("a = 5e+22\nb = 1e06\nc = -2E-2\nd = 6.626e-34\n",
               "{\"a\":5e22,\"b\":1e6,\"c\":-0.02,\"d\":6.626e-34}");
    check_tree("a = 224_617.445_991_228\nb = 0.0\nc = -0.0\nd = 0e0\n",
               "{\"a\":224617.445991228,\"b\":0.0,\"c\":0.0,\"d\":0.0}");

    root = parse_ok("f = 1e1_0\n", NULL);
    assert_true(json_is_real(json_object_get(root, "f")));
    assert_true(json_real_value(json_object_get(root, "f")) == 1e10);
    json_decref(root);
}

/* true and false, alone and in arrays. */
static void test_booleans(void **state)
{
    (void)state;
    check_tree("t = true\nf = false\n", "{\"t\":true,\"f\":false}");
    check_tree("a = [true,false]\n", "{\"a\":[true,false]}");
}

/* Arrays: nested, mixed types, multi-line with comments, trailing comma. */
static void test_arrays(void **state)
{
    (void)state;
    check_tree("a = [ 1, 2, 3 ]\nb = []\nc = [ \"x\", 'y' ]\n",
               "{\"a\":[1,2,3],\"b\":[],\"c\":[\"x\",\"y\"]}");
    check_tree("n = [ [ 1, 2 ], [\"a\", \"b\", \"c\"] ]\n",
               "{\"n\":[[1,2],[\"a\",\"b\",\"c\"]]}");
    check_tree("mixed = [ 0.1, 1, \"s\", true, [], {x = 1} ]\n",
               "{\"mixed\":[0.1,1,\"s\",true,[],{\"x\":1}]}");
    check_tree("a = [\n  1,  # one\n  2   # two\n  ,\n  # alone\n  3,\n]\n",
               "{\"a\":[1,2,3]}");
    check_tree("a = [\n]\n", "{\"a\":[]}");
    check_tree("a = [1,]\n", "{\"a\":[1]}");
}

/* CRLF line endings everywhere, and line numbers counted across them. */
static void test_crlf(void **state)
{
    json_t *lines = NULL;
    json_t *root;

    (void)state;
    check_tree("# c\r\n[s]\r\na = 1\r\nb = [\r\n 2,\r\n]\r\nc = 'x' # c\r\n",
               "{\"s\":{\"a\":1,\"b\":[2],\"c\":\"x\"}}");
    root = parse_ok("a = 1\r\n\r\nb = 2\r\n", &lines);
    check_line(lines, "a", 1);
    check_line(lines, "b", 3);
    json_decref(root);
    json_decref(lines);
}

/* A leading byte order mark is skipped; UTF-8 in comments is fine. */
static void test_bom_and_utf8(void **state)
{
    (void)state;
    check_tree(
        "\xef\xbb\xbf"
        "a = 1\n",
        "{\"a\":1}");
    check_tree("# comment with \xe2\x82\xac\na = '\xf0\x9f\x98\x80'\n",
               "{\"a\":\"\\ud83d\\ude00\"}");
}

/* ---- the line side table --------------------------------------------- */

/* Every kind of definition gets the right entry in the line table. */
static void test_lines(void **state)
{
    json_t *lines = NULL;
    json_t *root;

    (void)state;
    root = parse_ok(
        "top = 1\n"                              /* 1 */
        "\n"                                     /* 2 */
        "[server]\n"                             /* 3 */
        "port = 8080\n"                          /* 4 */
        "tls.cert = \"c.pem\"\n"                 /* 5 */
        "[[pool]]\n"                             /* 6 */
        "name = \"a\"\n"                         /* 7 */
        "[[pool]]\n"                             /* 8 */
        "name = \"b\"\n"                         /* 9 */
        "[pool.range]\n"                         /* 10 */
        "lo = 1\n"                               /* 11 */
        "[x.y.z]\n"                              /* 12 */
        "[x]\n"                                  /* 13 */
        "inl = { a.b.c = 1, d = [ {e = 2} ] }\n" /* 14 */
        "arr = [\n"                              /* 15 */
        "  10,\n"                                /* 16 */
        "  20,\n"                                /* 17 */
        "]\n"                                    /* 18 */
        "ml = \"\"\"\n"                          /* 19 */
        "\n"                                     /* 20 */
        "\"\"\"\n"                               /* 21 */
        "after = true\n",                        /* 22 */
        &lines);
    check_lines(
        lines,
        (const struct key_line[]){
            {"top", 1},
            {"server", 3},
            {"server.port", 4},
            {"server.tls", 5},
            {"server.tls.cert", 5},
            {"pool", 6},
            {"pool[0]", 6},
            {"pool[0].name", 7},
            {"pool[1]", 8},
            {"pool[1].name", 9},
            {"pool[1].range", 10},
            {"pool[1].range.lo", 11},
            {"x", 13}, /* implied on 12, defined on 13 */
            {"x.y", 12},
            {"x.y.z", 12},
            {"x.inl", 14},
            {"x.inl.a", 14},
            {"x.inl.a.b", 14},
            {"x.inl.a.b.c", 14},
            {"x.inl.d", 14},
            {"x.inl.d[0]", 14},
            {"x.inl.d[0].e", 14},
            {"x.arr", 15},
            /* Scalars inside arrays get no entry (their array has one). */
            {"x.arr[0]", 0},
            {"x.arr[1]", 0},
            {"x.ml", 19},
            {"x.after", 22},
            {"pool[2]", 0},
            {"", 0},
            {NULL, 0}});
    assert_int_equal(json_object_size(lines), 25);
    json_decref(root);
    json_decref(lines);
}

/* The line table and the error buffer are optional. */
static void test_lines_optional(void **state)
{
    json_t *root;

    (void)state;
    /* linesp and errp may both be NULL. */
    root = toml_parse("t", "a.b = 1\n", 8, NULL, NULL);
    assert_non_null(root);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(root, "a"), "b")),
        1);
    json_decref(root);
    errno = 0;
    assert_null(toml_parse("t", "a = \n", 5, NULL, NULL));
    assert_int_equal(errno, EINVAL);
}

/* ---- realistic configuration ----------------------------------------- */

/* A broker configuration, read the way the config loader will read it. */
static void test_realistic_config(void **state)
{
    const char *text =
        "# vnibroker configuration\n"
        "\n"
        "[server]\n"
        "listen = \"0.0.0.0:8443\"   # all interfaces\n"
        "threads = 8\n"
        "request_timeout = 30\n"
        "max_body = 65_536\n"
        "tls = { cert = \"/etc/vnib/cert.pem\", key = '/etc/vnib/key.pem' }\n"
        "\n"
        "[database]\n"
        "conninfo = \"host=db.example.org dbname=vnib user=vnib\"\n"
        "pool_size = 4\n"
        "retry_backoff = 0.25\n"
        "\n"
        "[log]\n"
        "level = \"info\"\n"
        "syslog = true\n"
        "\n"
        "[[vni_pool]]\n"
        "name = \"tenants\"\n"
        "ranges = [\n"
        "    \"1024-2047\",\n"
        "    \"4096-8191\",   # second block\n"
        "]\n"
        "\n"
        "[[vni_pool]]\n"
        "name = \"infra\"\n"
        "ranges = [\"100-199\"]\n";
    json_t *lines = NULL;
    json_t *root = parse_ok(text, &lines);
    json_t *server, *db, *log, *pools;

    (void)state;
    server = json_object_get(root, "server");
    db = json_object_get(root, "database");
    log = json_object_get(root, "log");
    pools = json_object_get(root, "vni_pool");
    assert_int_equal(json_object_size(root), 4);
    assert_string_equal(json_string_value(json_object_get(server, "listen")),
                        "0.0.0.0:8443");
    assert_int_equal(json_integer_value(json_object_get(server, "threads")), 8);
    assert_int_equal(json_integer_value(json_object_get(server, "max_body")),
                     65536);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(server, "tls"), "key")),
                        "/etc/vnib/key.pem");
    assert_int_equal(json_integer_value(json_object_get(db, "pool_size")), 4);
    assert_true(json_real_value(json_object_get(db, "retry_backoff")) == 0.25);
    assert_string_equal(json_string_value(json_object_get(log, "level")),
                        "info");
    assert_true(json_is_true(json_object_get(log, "syslog")));
    assert_int_equal(json_array_size(pools), 2);
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_array_get(pools, 0), "ranges"), 1)),
        "4096-8191");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(pools, 1), "name")),
        "infra");

    /* A strict unpack, as the config loader will do it. */
    {
        const char *listen = NULL, *conninfo = NULL, *level = NULL;
        int threads = 0, timeout = 0, max_body = 0, pool_size = 0;
        int syslog_on = 0;
        double backoff = 0;
        json_t *tls = NULL;
        json_error_t jerr;

        assert_int_equal(json_unpack_ex(root,
                                        &jerr,
                                        JSON_STRICT,
                                        "{s:{s:s s:i s:i s:i s:o}"
                                        " s:{s:s s:i s:f}"
                                        " s:{s:s s:b} s:o}",
                                        "server",
                                        "listen",
                                        &listen,
                                        "threads",
                                        &threads,
                                        "request_timeout",
                                        &timeout,
                                        "max_body",
                                        &max_body,
                                        "tls",
                                        &tls,
                                        "database",
                                        "conninfo",
                                        &conninfo,
                                        "pool_size",
                                        &pool_size,
                                        "retry_backoff",
                                        &backoff,
                                        "log",
                                        "level",
                                        &level,
                                        "syslog",
                                        &syslog_on,
                                        "vni_pool",
                                        &pools),
                         0);
        assert_int_equal(timeout, 30);
        assert_true(syslog_on);
    }

    check_lines(lines,
                (const struct key_line[]){{"server", 3},
                                          {"server.listen", 4},
                                          {"server.tls.cert", 8},
                                          {"database", 10},
                                          {"database.retry_backoff", 13},
                                          {"log.syslog", 17},
                                          {"vni_pool[0]", 19},
                                          {"vni_pool[0].ranges[1]", 0},
                                          {"vni_pool[1].name", 27},
                                          {NULL, 0}});
    json_decref(root);
    json_decref(lines);
}

/* ---- toml_parse_file() ----------------------------------------------- */

/* toml_parse_file() reads a file and names it in messages. */
static void test_file(void **state)
{
    char *path = write_temp("[server]\nport = 8080\n");
    json_t *lines = NULL;
    vnib_error_t e = {0};
    json_t *root;

    (void)state;
    root = toml_parse_file(path, &lines, &e);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(root, "server"), "port")),
                     8080);
    check_line(lines, "server.port", 2);
    json_decref(root);
    json_decref(lines);
    unlink(path);
    free(path);

    /* Errors name the file. */
    path = write_temp("a = 1\nport = 1\nport = 2\n");
    errno = 0;
    assert_null(toml_parse_file(path, NULL, &e));
    assert_int_equal(errno, EINVAL);
    {
        char expect[200];
        snprintf(expect, sizeof(expect), "%s:3: duplicate key 'port'", path);
        assert_string_equal(e.text, expect);
    }
    unlink(path);
    free(path);

    /* An empty file is an empty document. */
    path = write_temp("");
    root = toml_parse_file(path, NULL, &e);
    assert_non_null(root);
    assert_int_equal(json_object_size(root), 0);
    json_decref(root);
    unlink(path);
    free(path);
}

/* toml_parse_file(path) fails with errno err and the message
 * "path: why".
 */
static void parse_file_fails(const char *path, int err, const char *why)
{
    vnib_error_t e = {0};
    char want[sizeof(e.text)];

    snprintf(want, sizeof(want), "%s: %s", path, why);
    errno = 0;
    assert_null(toml_parse_file(path, NULL, &e));
    assert_int_equal(errno, err);
    assert_string_equal(e.text, want);
}

/* toml_parse_file() refusals: missing, directory, device, too large,
 * unreadable. */
static void test_file_errors(void **state)
{
    vnib_error_t e = {0};
    json_t *lines = json_object();
    json_t *lines_before = lines;
    char *path;
    int fd;

    (void)state;
    errno = 0;
    assert_null(toml_parse_file("/nonexistent/vnib.toml", &lines, &e));
    assert_int_equal(errno, ENOENT);
    assert_null(lines);
    assert_string_equal(e.text,
                        "/nonexistent/vnib.toml: No such file or directory");
    json_decref(lines_before);

    parse_file_fails("/tmp", EINVAL, "not a regular file");
    parse_file_fails("/dev/null", EINVAL, "not a regular file");

    /* A sparse file one byte past the limit. */
    path = write_temp("");
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, TOML_MAX_FILE_SIZE + 1), 0);
    close(fd);
    parse_file_fails(path, E2BIG, "file is larger than 4194304 bytes");
    unlink(path);
    free(path);

    /* Unreadable file: open fails with EACCES unless we are root. */
    if (geteuid() != 0) {
        path = write_temp("a = 1\n");
        assert_int_equal(chmod(path, 0), 0);
        parse_file_fails(path, EACCES, "Permission denied");
        unlink(path);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_bare_and_quoted_keys),
        cmocka_unit_test(test_dotted_keys),
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_array_of_tables),
        cmocka_unit_test(test_inline_tables),
        cmocka_unit_test(test_basic_strings),
        cmocka_unit_test(test_unicode_escapes),
        cmocka_unit_test(test_literal_strings),
        cmocka_unit_test(test_multiline_basic),
        cmocka_unit_test(test_multiline_literal),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_booleans),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_bom_and_utf8),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_lines_optional),
        cmocka_unit_test(test_realistic_config),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
