/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the settings-table walk (lib/cfgtable.c): defaults, each
 * type, bounds, unknown tables and keys, and wrong types, every refusal
 * naming the file and the line of the key.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vnib/cfgtable.h"
#include "vnib/toml.h"

struct demo {
    char *name;
    char *secret;
    char *list;
    long port;
    long on;
};

/* clang-format off */
static const struct cfgtable_row demo_rows[] = {
    { "a.name", CFGTABLE_STRING, offsetof (struct demo, name), 0, 0, "x", 0, 0, NULL },
    { "a.secret", CFGTABLE_STRING, offsetof (struct demo, secret), 0, 0, "", 0, CFGTABLE_SECRET, NULL },
    { "a.list", CFGTABLE_STRINGS, offsetof (struct demo, list), 0, 0, "p" CFGTABLE_LIST_SEP "q", 0, 0, NULL },
    { "b.port", CFGTABLE_INT, offsetof (struct demo, port), 1, 100, NULL, 7, 0, NULL },
    { "b.on", CFGTABLE_BOOL, offsetof (struct demo, on), 0, 1, NULL, 1, 0, NULL },
};
/* clang-format on */

static const struct cfgtable demo = {demo_rows,
                                     sizeof(demo_rows) / sizeof(demo_rows[0])};

/* Apply text (named "demo.toml") over the defaults; returns the result of
 * cfgtable_apply and leaves the settings in *d for the caller to free.
 */
static int apply_text(const char *text, struct demo *d, vnib_error_t *e)
{
    json_t *lines = NULL;
    json_t *root;
    int rc;

    memset(d, 0, sizeof(*d));
    assert_int_equal(cfgtable_defaults(&demo, d, e), 0);
    root = toml_parse("demo.toml", text, strlen(text), &lines, e);
    assert_non_null(root);
    errno = 0;
    rc = cfgtable_apply(&demo, d, "demo.toml", root, lines, e);
    json_decref(root);
    json_decref(lines);
    return rc;
}

static void test_defaults(void **state)
{
    vnib_error_t e = {0};
    struct demo d;
    (void)state;
    assert_int_equal(apply_text("", &d, &e), 0);
    assert_string_equal(d.name, "x");
    assert_string_equal(d.secret, "");
    assert_string_equal(d.list, "p\x1fq");
    assert_int_equal(d.port, 7);
    assert_int_equal(d.on, 1);
    cfgtable_free(&demo, &d);
    assert_null(d.name);
    assert_null(d.list);
}

static void test_types(void **state)
{
    vnib_error_t e = {0};
    struct demo d;
    (void)state;
    assert_int_equal(apply_text("[a]\nname = \"n\"\nsecret = \"s\"\n"
                                "list = [\"u\", \"v\", \"w\"]\n"
                                "[b]\nport = 100\non = false\n",
                                &d,
                                &e),
                     0);
    assert_string_equal(d.name, "n");
    assert_string_equal(d.secret, "s");
    assert_string_equal(d.list, "u\x1fv\x1fw");
    assert_int_equal(d.port, 100);
    assert_int_equal(d.on, 0);
    assert_ptr_equal(cfgtable_find(&demo, "b.port"), &demo_rows[3]);
    assert_null(cfgtable_find(&demo, "b"));
    assert_null(cfgtable_find(&demo, "b.nope"));
    assert_int_equal(cfgtable_long_value(&d, &demo_rows[3]), 100);
    assert_string_equal(cfgtable_str_value(&d, &demo_rows[0]), "n");
    cfgtable_free(&demo, &d);
}

/* Each refusal: text, the message expected, EINVAL. */
static void refused(const char *text, const char *want)
{
    vnib_error_t e = {0};
    struct demo d;
    assert_int_equal(apply_text(text, &d, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, want);
    cfgtable_free(&demo, &d);
}

static void test_bounds(void **state)
{
    (void)state;
    refused("[b]\nport = 0\n", "demo.toml:2: b.port: 0 is out of range 1-100");
    refused("\n[b]\n\nport = 101\n",
            "demo.toml:4: b.port: 101 is out of range 1-100");
    refused("[b]\nport = -5\n",
            "demo.toml:2: b.port: -5 is out of range 1-100");
}

static void test_unknown(void **state)
{
    (void)state;
    refused("[a]\nname = \"n\"\nnmae = \"n\"\n",
            "demo.toml:3: a.nmae: unknown key");
    refused("\n\n[c]\nport = 1\n", "demo.toml:3: c: unknown table");
    refused("a = 1\n", "demo.toml:1: a: unknown key");
    /* A table's name must be whole: "an" is not the "a" of "a.name". */
    refused("[an]\nx = 1\n", "demo.toml:1: an: unknown table");
    /* A subtable is a key of its table, and no row is a table. */
    refused("[a.n]\nx = 1\n", "demo.toml:1: a.n: unknown key");
}

static void test_wrong_type(void **state)
{
    (void)state;
    refused("[a]\nname = 5\n", "demo.toml:2: a.name: expected a string");
    refused("[b]\n\nport = \"80\"\n",
            "demo.toml:3: b.port: expected an integer");
    refused("[b]\nport = 1.5\n", "demo.toml:2: b.port: expected an integer");
    refused("[b]\non = 1\n", "demo.toml:2: b.on: expected true or false");
    refused("[a]\nlist = \"u\"\n",
            "demo.toml:2: a.list: expected an array of strings");
    refused("[a]\nlist = [\"u\", 2]\n",
            "demo.toml:2: a.list: item 2 must be a non-empty string "
            "without control character 0x1f");
    refused("[a]\nlist = [\"\"]\n",
            "demo.toml:2: a.list: item 1 must be a non-empty string "
            "without control character 0x1f");
}

/* A failure keeps what was set before it, and free still frees it all. */
static void test_partial(void **state)
{
    vnib_error_t e = {0};
    struct demo d;
    (void)state;
    assert_int_equal(
        apply_text("[a]\nname = \"kept\"\n[b]\nport = 999\n", &d, &e), -1);
    assert_string_equal(d.name, "kept");
    assert_int_equal(d.port, 7);
    cfgtable_free(&demo, &d);
    cfgtable_free(&demo, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_partial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
