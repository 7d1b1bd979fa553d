/* Unit tests for the TOML reader (lib/toml.c).
 *
 * Each accepted feature is checked by comparing the parsed tree with the
 * JSON it should equal; each refusal is checked for a NULL result, the
 * errno, and the "NAME:LINE: message" text.  The line side table and
 * toml_parse_file() have tests of their own, and a realistic broker
 * configuration ties everything together.
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
    vnib_error_t err = {{0}};
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

/* Check that len bytes of text are refused with errno `err` and a message
 * containing `msg`.  The input is named "x", so messages read "x:LINE:".
 */
static void check_error_len(const char *text,
                            size_t len,
                            int err,
                            const char *msg)
{
    vnib_error_t e = {{0}};
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

/* Check one entry of the line table. */
static void check_line(json_t *lines, const char *path, int line)
{
    json_t *v = json_object_get(lines, path);

    if (!v)
        fail_msg("no line entry for '%s'", path);
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), line);
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
    check_line(lines, "top", 1);
    check_line(lines, "server", 3);
    check_line(lines, "server.port", 4);
    check_line(lines, "server.tls", 5);
    check_line(lines, "server.tls.cert", 5);
    check_line(lines, "pool", 6);
    check_line(lines, "pool[0]", 6);
    check_line(lines, "pool[0].name", 7);
    check_line(lines, "pool[1]", 8);
    check_line(lines, "pool[1].name", 9);
    check_line(lines, "pool[1].range", 10);
    check_line(lines, "pool[1].range.lo", 11);
    check_line(lines, "x", 13); /* implied on 12, defined on 13 */
    check_line(lines, "x.y", 12);
    check_line(lines, "x.y.z", 12);
    check_line(lines, "x.inl", 14);
    check_line(lines, "x.inl.a", 14);
    check_line(lines, "x.inl.a.b", 14);
    check_line(lines, "x.inl.a.b.c", 14);
    check_line(lines, "x.inl.d", 14);
    check_line(lines, "x.inl.d[0]", 14);
    check_line(lines, "x.inl.d[0].e", 14);
    check_line(lines, "x.arr", 15);
    /* Scalars inside arrays get no entry (their array has one). */
    assert_null(json_object_get(lines, "x.arr[0]"));
    assert_null(json_object_get(lines, "x.arr[1]"));
    check_line(lines, "x.ml", 19);
    check_line(lines, "x.after", 22);
    assert_null(json_object_get(lines, "pool[2]"));
    assert_null(json_object_get(lines, ""));
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

    check_line(lines, "server", 3);
    check_line(lines, "server.listen", 4);
    check_line(lines, "server.tls.cert", 8);
    check_line(lines, "database", 10);
    check_line(lines, "database.retry_backoff", 13);
    check_line(lines, "log.syslog", 17);
    check_line(lines, "vni_pool[0]", 19);
    assert_null(json_object_get(lines, "vni_pool[0].ranges[1]"));
    check_line(lines, "vni_pool[1].name", 27);
    json_decref(root);
    json_decref(lines);
}

/* ---- errors ---------------------------------------------------------- */

/* A key may be defined once, wherever the definitions come from. */
static void test_err_duplicate_key(void **state)
{
    (void)state;
    check_error("a = 1\na = 2\n", EINVAL, "x:2: duplicate key 'a'");
    check_error("[server]\nport = 1\n\n# again\nport = 2\n",
                EINVAL,
                "x:5: duplicate key 'server.port'");
    check_error("a = 1\n\"a\" = 2\n", EINVAL, "x:2: duplicate key 'a'");
    check_error("a.b = 1\na.b = 2\n", EINVAL, "x:2: duplicate key 'a.b'");
    check_error("a.b = 1\na = 2\n", EINVAL, "x:2: duplicate key 'a'");
    check_error("t = {a = 1, a = 2}\n", EINVAL, "x:1: duplicate key 't.a'");
    check_error("[a.b]\n[a]\nb = 1\n", EINVAL, "x:3: duplicate key 'a.b'");
    check_error("[[p]]\nn = 1\nn = 2\n", EINVAL, "x:3: duplicate key 'p[0].n'");
}

/* Strings, arrays and inline tables that never close; unterminated
 * strings are reported on the line where they start. */
static void test_err_unterminated(void **state)
{
    (void)state;
    check_error("a = 1\nb = \"abc\n", EINVAL, "x:2: unterminated string");
    check_error("a = 1\nb = \"abc", EINVAL, "x:2: unterminated string");
    check_error("b = 'abc\nc = 1\n", EINVAL, "x:1: unterminated string");
    check_error(
        "\n\nb = \"\"\"abc\n\ndef\"\"\n", EINVAL, "x:3: unterminated string");
    check_error("b = '''abc\n", EINVAL, "x:1: unterminated string");
    check_error("\nb = \"abc\\", EINVAL, "x:2: unterminated string");
    check_error("a = [1, 2\n", EINVAL, "x:1: unterminated array");
    check_error("a = [1,\n\n", EINVAL, "x:1: unterminated array");
    check_error("a = {b = 1\n", EINVAL, "x:1: unterminated inline table");
    check_error("a = {b = 1", EINVAL, "x:1: unterminated inline table");
}

/* A table may be defined by one header, or by dotted keys, not both. */
static void test_err_table_twice(void **state)
{
    (void)state;
    check_error("[server]\na = 1\n[log]\n[server]\n",
                EINVAL,
                "x:4: table 'server' defined twice");
    check_error("[a.b]\n[a]\n[a]\n", EINVAL, "x:3: table 'a' defined twice");
    check_error(
        "[a]\n[a.b]\n[a.b]\n", EINVAL, "x:3: table 'a.b' defined twice");
    check_error("a.b = 1\n[a]\n",
                EINVAL,
                "x:2: table 'a' already defined by dotted keys");
    check_error("[fruit]\napple.color = 'red'\n[fruit.apple]\n",
                EINVAL,
                "x:3: table 'fruit.apple' already defined by dotted keys");
}

/* Malformed key/value lines. */
static void test_err_expected_equals(void **state)
{
    (void)state;
    check_error("[server]\n\n\nlisten \"0.0.0.0\"\n",
                EINVAL,
                "x:4: expected '=' after key 'listen'");
    check_error("a.b\n", EINVAL, "x:1: expected '=' after key 'a.b'");
    check_error("a = 1\nb\n", EINVAL, "x:2: expected '=' after key 'b'");
    check_error("= 1\n", EINVAL, "x:1: expected a key, found '='");
    check_error("a. = 1\n", EINVAL, "x:1: expected a key, found '='");
    check_error("a = \n", EINVAL, "x:1: expected a value, found end of line");
    check_error("a =", EINVAL, "x:1: expected a value, found end of input");
    check_error("\"\"\"k\"\"\" = 1\n",
                EINVAL,
                "x:1: a multi-line string cannot be a key");
}

/* Dates and times are valid TOML but refused by this reader. */
static void test_err_dates(void **state)
{
    (void)state;
    check_error("\n\n\n\nd = 1979-05-27\n",
                EINVAL,
                "x:5: dates and times are not supported");
    check_error("d = 1979-05-27T07:32:00Z\n",
                EINVAL,
                "x:1: dates and times are not supported");
    check_error("d = 1979-05-27 07:32:00\n",
                EINVAL,
                "x:1: dates and times are not supported");
    check_error(
        "t = 07:32:00\n", EINVAL, "x:1: dates and times are not supported");
    check_error("a = [1, 2020-01-01]\n",
                EINVAL,
                "x:1: dates and times are not supported");
}

/* Out-of-range and malformed integers. */
static void test_err_integers(void **state)
{
    (void)state;
    check_error("a = 1\nb = 9223372036854775808\n",
                EINVAL,
                "x:2: integer out of range");
    check_error(
        "b = -9223372036854775809\n", EINVAL, "x:1: integer out of range");
    check_error(
        "b = 0x8000000000000000\n", EINVAL, "x:1: integer out of range");
    check_error(
        "b = 99999999999999999999999\n", EINVAL, "x:1: integer out of range");
    check_error(
        "b = 0b1111111111111111111111111111111111111111111111111111111"
        "111111111\n",
        EINVAL,
        "x:1: integer out of range");
    check_error(
        "b = 012\n", EINVAL, "x:1: invalid number '012' (leading zeros");
    check_error("b = -01\n", EINVAL, "leading zeros");
    check_error("b = 0_1\n", EINVAL, "leading zeros");
    check_error("b = 1__2\n", EINVAL, "x:1: invalid number '1__2'");
    check_error("b = 1_\n", EINVAL, "x:1: invalid number '1_'");
    check_error("b = _1\n", EINVAL, "x:1: invalid value '_1'");
    check_error("b = +0x1\n", EINVAL, "no sign allowed");
    check_error("b = 0X1F\n", EINVAL, "x:1: invalid number '0X1F'");
    check_error("b = 0x\n", EINVAL, "x:1: invalid number '0x'");
    check_error("b = 0o8\n", EINVAL, "x:1: invalid number '0o8'");
    check_error("b = 0b102\n", EINVAL, "x:1: invalid number '0b102'");
    check_error("b = 0x_1\n", EINVAL, "x:1: invalid number '0x_1'");
    check_error("b = 12abc\n", EINVAL, "x:1: invalid number '12abc'");
    check_error("b = +\n", EINVAL, "x:1: invalid number '+'");
    check_error("b = 1 2\n", EINVAL, "x:1: unexpected text after value");
}

/* Malformed floats, overflow, and the refused inf and nan. */
static void test_err_floats(void **state)
{
    (void)state;
    check_error("f = 1.\n", EINVAL, "x:1: invalid number '1.'");
    check_error("f = .5\n", EINVAL, "x:1: invalid number '.5'");
    check_error("f = 1.e5\n", EINVAL, "x:1: invalid number '1.e5'");
    check_error("f = 1e\n", EINVAL, "x:1: invalid number '1e'");
    check_error("f = 1e_5\n", EINVAL, "x:1: invalid number '1e_5'");
    check_error("f = 1.5.3\n", EINVAL, "x:1: invalid number '1.5.3'");
    check_error("f = 03.14\n", EINVAL, "leading zeros");
    check_error("f = 1e400\n", EINVAL, "x:1: float out of range");
    check_error("f = inf\n", EINVAL, "x:1: inf and nan are not supported");
    check_error("f = -inf\n", EINVAL, "x:1: inf and nan are not supported");
    check_error("f = +nan\n", EINVAL, "x:1: inf and nan are not supported");
}

/* Unquoted strings, wrong-case booleans, broken arrays and inline
 * tables, and trailing text. */
static void test_err_bad_values(void **state)
{
    (void)state;
    check_error("a = hello\n",
                EINVAL,
                "x:1: invalid value 'hello' (strings must be quoted)");
    check_error("a = True\n", EINVAL, "x:1: invalid value 'True'");
    check_error("a = truex\n", EINVAL, "x:1: invalid value 'truex'");
    check_error("a = [1 2]\n", EINVAL, "x:1: expected ',' or ']' in array");
    check_error("a = [,]\n", EINVAL, "x:1: expected a value, found ','");
    check_error("a = [1,,2]\n", EINVAL, "x:1: expected a value, found ','");
    check_error(
        "a = {b = 1,}\n", EINVAL, "x:1: trailing comma in inline table");
    check_error(
        "a = {b = 1\n, c = 2}\n", EINVAL, "x:1: unterminated inline table");
    check_error("a = {\nb = 1}\n", EINVAL, "x:1: unterminated inline table");
    check_error(
        "a = {b = 1,\nc = 2}\n", EINVAL, "x:1: unterminated inline table");
    check_error("a = {b = 1 c = 2}\n",
                EINVAL,
                "x:1: expected ',' or '}' in inline table, found 'c'");
    check_error("a = 'x' 'y'\n", EINVAL, "x:1: unexpected text after value");
    check_error(
        "[a] b = 1\n", EINVAL, "x:1: unexpected text after table header");
    check_error("a = @\n", EINVAL, "x:1: expected a value, found '@'");
}

/* Malformed [table] and [[array]] headers. */
static void test_err_headers(void **state)
{
    (void)state;
    check_error("[a\n", EINVAL, "x:1: expected ']' after table name 'a'");
    check_error(
        "[[a]\n", EINVAL, "x:1: expected ']]' after array of tables name 'a'");
    check_error("[[a] ]\n", EINVAL, "x:1: expected ']]'");
    check_error("[]\n", EINVAL, "x:1: expected a key, found ']'");
    check_error("[a.]\n", EINVAL, "x:1: expected a key, found ']'");
    check_error("[a]]\n", EINVAL, "x:1: unexpected text after table header");
}

/* Raw control characters in strings and comments; a lone CR. */
static void test_err_control_chars(void **state)
{
    (void)state;
    check_error("a = \"x\x01y\"\n", EINVAL, "x:1: control character in string");
    check_error("a = 'x\x7fy'\n", EINVAL, "x:1: control character in string");
    check_error("a = 1\nb = \"\"\"x\x1by\"\"\"\n",
                EINVAL,
                "x:2: control character in string");
    check_error("a = '''x\ry'''\n", EINVAL, "x:1: control character in string");
    check_error("a = 1 # bad \x02 comment\n",
                EINVAL,
                "x:1: control character in comment");
    check_error(
        "# bad\rcomment\n", EINVAL, "x:1: control character in comment");
    check_error("a = 1\rb = 2\n", EINVAL, "x:1: unexpected text after value");
    check_error("\x01 = 1\n", EINVAL, "x:1: expected a key, found byte 0x01");
}

/* NUL bytes and each kind of invalid UTF-8, with the line. */
static void test_err_nul_and_utf8(void **state)
{
    (void)state;
    static const char nul[] = "a = 1\nb = \"x\0y\"\n";

    check_error_len(nul, sizeof(nul) - 1, EINVAL, "x:2: NUL byte in input");
    check_error_len("\0", 1, EINVAL, "x:1: NUL byte in input");
    check_error("a = 1\n\nb = '\xc3'\n", EINVAL, "x:3: invalid UTF-8 in input");
    check_error(
        "b = '\xc0\xaf'\n", EINVAL, "x:1: invalid UTF-8"); /* overlong */
    check_error(
        "b = '\xe0\x80\xaf'\n", EINVAL, "x:1: invalid UTF-8"); /* overlong */
    check_error(
        "b = '\xed\xa0\x80'\n", EINVAL, "x:1: invalid UTF-8"); /* surrogate */
    check_error("b = '\xf4\x90\x80\x80'\n", EINVAL, "x:1: invalid UTF-8");
    check_error("b = '\xff'\n", EINVAL, "x:1: invalid UTF-8");
    check_error("# \x80\n", EINVAL, "x:1: invalid UTF-8");
    check_error_len("a = '\xe2\x82", 7, EINVAL, "x:1: invalid UTF-8");
    check_error("k\xc3\xa9y = 1\n", EINVAL, "x:1: expected '=' after key 'k'");
}

/* Unknown escapes, short \u escapes, surrogates, U+0000, too many
 * closing quotes. */
static void test_err_escapes(void **state)
{
    (void)state;
    check_error("a = \"\\q\"\n", EINVAL, "x:1: invalid escape '\\q' in string");
    check_error("a = \"\\x41\"\n", EINVAL, "x:1: invalid escape '\\x'");
    check_error("a = \"\\e\"\n", EINVAL, "x:1: invalid escape '\\e'");
    check_error("a = \"\\ \"\n", EINVAL, "x:1: invalid escape in string");
    check_error(
        "a = \"\"\"\\ x\"\"\"\n", EINVAL, "x:1: invalid escape in string");
    check_error(
        "a = \"\\u12\"\n", EINVAL, "x:1: \\u escape needs 4 hex digits");
    check_error(
        "a = \"\\U0001F60\"\n", EINVAL, "\\U escape needs 8 hex digits");
    check_error("a = \"\\uD800\"\n",
                EINVAL,
                "x:1: escape \\uD800 is not a Unicode scalar value");
    check_error("a = \"\\uDFFF\"\n", EINVAL, "not a Unicode scalar value");
    check_error("a = \"\\U00110000\"\n",
                EINVAL,
                "x:1: escape \\U00110000 is not a Unicode scalar value");
    /* U+0000 is refused in keys and values alike. */
    check_error("\"\\u0000\" = 1\n", EINVAL, "x:1: NUL character in string");
    check_error("a = \"x\\u0000y\"\n", EINVAL, "x:1: NUL character in string");
    check_error("a = \"\"\"\n\nx\\U00000000\"\"\"\n",
                EINVAL,
                "x:3: NUL character in string");
    check_error("a = \"\"\"x\"\"\"\"\"\"\n",
                EINVAL,
                "x:1: too many quotes at end of multi-line string");
}

/* Values redefined as tables, tables as arrays of tables, and the
 * reverse. */
static void test_err_redefine(void **state)
{
    (void)state;
    /* A value redefined as a table, and the reverse. */
    check_error("a = 1\n[a]\n",
                EINVAL,
                "x:2: key 'a' is already defined as an integer, not a table");
    check_error("a = 1\n[a.b]\n",
                EINVAL,
                "x:2: key 'a' is already defined as an integer, not a table");
    check_error("a = 'x'\na.b = 1\n",
                EINVAL,
                "x:2: key 'a' is already defined as a string, not a table");
    check_error("[a]\nb = [1]\n[a.b.c]\n",
                EINVAL,
                "x:3: key 'a.b' is already defined as an array, not a table");
    check_error("[a]\nb = 1\n[[a.b]]\n",
                EINVAL,
                "x:3: key 'a.b' is already defined as an integer, not an "
                "array of tables");
    /* Header tables cannot be extended with dotted keys. */
    check_error("[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n",
                EINVAL,
                "x:4: cannot add to table 'a.b' with dotted keys");
    check_error("[a.b]\n[a]\nb.x = 1\n",
                EINVAL,
                "x:3: cannot add to table 'a.b' with dotted keys");
    /* Arrays of tables versus tables. */
    check_error(
        "[[a]]\n[a]\n", EINVAL, "x:2: table 'a' is already an array of tables");
    check_error("[a]\n[[a]]\n",
                EINVAL,
                "x:2: key 'a' is already defined as a table, not an array of "
                "tables");
    check_error(
        "a = []\n[[a]]\n", EINVAL, "x:2: cannot append to static array 'a'");
    check_error("a = [{b = 1}]\n\n[[a]]\n",
                EINVAL,
                "x:3: cannot append to static array 'a'");
    check_error("a = [{b = 1}]\n[a.c]\n",
                EINVAL,
                "x:2: key 'a' is already defined as an array, not a table");
}

/* Inline tables are sealed: neither headers nor dotted keys may add
 * to them or to tables inside them. */
static void test_err_inline_sealed(void **state)
{
    (void)state;
    check_error("a = {b = 1}\n[a]\n",
                EINVAL,
                "x:2: table 'a' already defined as an inline table");
    check_error(
        "a = {b = 1}\n[a.c]\n", EINVAL, "x:2: cannot extend inline table 'a'");
    check_error("a = {b = 1}\na.c = 2\n",
                EINVAL,
                "x:2: cannot extend inline table 'a'");
    check_error("a = {b = {c = 1}, b.d = 2}\n",
                EINVAL,
                "x:1: cannot extend inline table 'a.b'");
    check_error("a = {b = {c = 1}}\n[a.b]\n",
                EINVAL,
                "x:2: cannot extend inline table 'a'");
    check_error("a = {b = {c = 1}}\n[[a.b.d]]\n",
                EINVAL,
                "x:2: cannot extend inline table 'a'");
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
    root = parse_ok(text, NULL);
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
    root = parse_ok(text, NULL);
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

/* ---- toml_parse_file() ----------------------------------------------- */

/* toml_parse_file() reads a file and names it in messages. */
static void test_file(void **state)
{
    char *path = write_temp("[server]\nport = 8080\n");
    json_t *lines = NULL;
    vnib_error_t e = {{0}};
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

/* toml_parse_file() refusals: missing, directory, device, too large,
 * unreadable. */
static void test_file_errors(void **state)
{
    vnib_error_t e = {{0}};
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

    errno = 0;
    assert_null(toml_parse_file("/tmp", NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "/tmp: not a regular file");

    errno = 0;
    assert_null(toml_parse_file("/dev/null", NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "/dev/null: not a regular file");

    /* A sparse file one byte past the limit. */
    path = write_temp("");
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, TOML_MAX_FILE_SIZE + 1), 0);
    close(fd);
    errno = 0;
    assert_null(toml_parse_file(path, NULL, &e));
    assert_int_equal(errno, E2BIG);
    assert_non_null(strstr(e.text, ": file is larger than 4194304 bytes"));
    unlink(path);
    free(path);

    /* Unreadable file: open fails with EACCES unless we are root. */
    if (geteuid() != 0) {
        path = write_temp("a = 1\n");
        assert_int_equal(chmod(path, 0), 0);
        errno = 0;
        assert_null(toml_parse_file(path, NULL, &e));
        assert_int_equal(errno, EACCES);
        assert_non_null(strstr(e.text, ": Permission denied"));
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
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
