/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the configuration table (server/config.c): defaults,
 * values from a file, strict refusal of unknown keys and bad values with
 * file:line, and masking of database passwords.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "server/config.h"

/* Write text to a fresh temporary file; returns its malloc'd path. */
static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/vnib-test-config.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static struct config *load_text(const char *text, vnib_error_t *e, char **pathp)
{
    char *path = write_temp(text);
    struct config *cfg = config_load(path, e);
    if (pathp)
        *pathp = path;
    else {
        unlink(path);
        free(path);
    }
    return cfg;
}

static void test_defaults(void **state)
{
    vnib_error_t e = {0};
    (void)state;
    struct config *cfg = load_text("", &e, NULL);
    assert_non_null(cfg);
    assert_string_equal(cfg->server.address, "127.0.0.1");
    assert_int_equal(cfg->server.port, 8080);
    assert_int_equal(cfg->server.threads, 8);
    assert_int_equal(cfg->server.workers, 0);
    assert_int_equal(cfg->server.queue_limit, 0);
    assert_string_equal(cfg->database.conninfo, "dbname=vnibroker");
    assert_int_equal(cfg->limits.hostlist_max_names, 1000000);
    assert_string_equal(cfg->log.level, "info");
    config_destroy(cfg);
}

static void test_values(void **state)
{
    vnib_error_t e = {0};
    (void)state;
    struct config *cfg = load_text(
        "# comment\n"
        "[server]\n"
        "address = \"::1\"\n"
        "port = 9443\n"
        "threads = 2\n"
        "[log]\n"
        "level = \"debug\"\n",
        &e,
        NULL);
    assert_non_null(cfg);
    assert_string_equal(cfg->server.address, "::1");
    assert_int_equal(cfg->server.port, 9443);
    assert_int_equal(cfg->server.threads, 2);
    assert_int_equal(cfg->log_level, 7);
    config_destroy(cfg);
}

struct bad_case {
    const char *text;
    const char *expect; /* substring after "PATH:" */
};

static void test_errors_name_file_and_line(void **state)
{
    static const struct bad_case cases[] = {
        {"[server]\nport = 1\nbogus = 2\n", ":3: server.bogus: unknown key"},
        {"\n[nosuch]\n", ":2: nosuch: unknown table"},
        {"port = 1\n", ":1: port: unknown key"},
        {"[server]\nport = true\n", ":2: server.port: expected an integer"},
        {"[server]\nport = -1\n",
         ":2: server.port: -1 is out of range 0-65535"},
        {"[server]\naddress = 5\n", ":2: server.address: expected a string"},
        {"[server]\naddress = \"example.org\"\n",
         ":2: server.address: 'example.org'"},
        {"[server]\nthreads = 8\nmax_connections = 4\n",
         ":3: server.max_connections: 4 is less than server.threads"},
        {"[server]\ntls_key = \"/k\"\n",
         ":2: server.tls_cert and server.tls_key"},
        {"[log]\nlevel = \"chatty\"\n", ":2: log.level: 'chatty'"},
        {"[database]\nconninfo = \"\"\n",
         ":2: database.conninfo: must not be empty"},
        {"[database]\npool_size = 0\n",
         ":2: database.pool_size: 0 is out of range"},
        {"[server]\nworkers = 1025\n",
         ":2: server.workers: 1025 is out of range 0-1024"},
        {"[server]\nqueue_limit = -1\n",
         ":2: server.queue_limit: -1 is out of range"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        vnib_error_t e = {0};
        char *path;
        struct config *cfg = load_text(cases[i].text, &e, &path);
        if (cfg)
            fail_msg("case %zu accepted: %s", i, cases[i].text);
        assert_int_equal(errno, EINVAL);
        char want[256];
        snprintf(want, sizeof(want), "%s%s", path, cases[i].expect);
        if (strncmp(e.text, want, strlen(want)) != 0)
            fail_msg("case %zu: got '%s', want prefix '%s'", i, e.text, want);
        unlink(path);
        free(path);
    }
}

static void test_missing_file(void **state)
{
    vnib_error_t e = {0};
    (void)state;
    assert_null(config_load("/nonexistent/vnib.toml", &e));
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(e.text, "/nonexistent/vnib.toml"));
}

static void test_mask_conninfo(void **state)
{
    static const char *cases[][2] = {
        {"dbname=x", "dbname=x"},
        {"host=h password=secret dbname=x", "password=*** dbname=x host=h"},
        {"password = 'a b\\' c' user=u", "user=u password=***"},
        {"password=", "password=***"},
        {"postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"},
        {"postgres://u@h/db?password=pw&sslmode=require",
         "postgres://u:***@h/db?sslmode=require"},
        {"passfile=/x", "passfile=/x"},
        {"user=mypassword", "user=mypassword"},
        {"application_name='a b'", "application_name='a b'"},
        /* Forms libpq accepts that a textual mask missed. */
        {"host=h\tpassword=tabbed", "password=*** host=h"},
        {"host=h\npassword=newline", "password=*** host=h"},
        {"password=a\\ b host=h", "password=*** host=h"},
        {"sslpassword=keypass host=h", "host=h sslpassword=***"},
        {"password='quoted value'", "password=***"},
        {"postgresql://u:s%40cret@h/db", "postgresql://u:***@h/db"},
        {"postgresql://h/db?pass%77ord=enc", "postgresql://:***@h/db"},
        {"postgresql:///db?sslpassword=kp", "postgresql:///db?sslpassword=***"},
        /* Unparseable: nothing of it is shown. */
        {"password=secret bogus", "***"},
        {"password='unterminated", "***"},
    };
    static const char *secrets[] = {"secret",
                                    "pw",
                                    "tabbed",
                                    "newline",
                                    "a\\ b",
                                    "keypass",
                                    "quoted",
                                    "s%40cret",
                                    "cret",
                                    "enc",
                                    "kp",
                                    "unterminated"};
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *m = config_mask_conninfo(cases[i][0]);
        assert_non_null(m);
        for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
            if (strstr(m, secrets[k]))
                fail_msg("case %zu: '%s' shows '%s'", i, m, secrets[k]);
        assert_string_equal(m, cases[i][1]);
        /* What is shown is a string libpq reads back. */
        if (strcmp(m, "***") != 0) {
            PQconninfoOption *o = PQconninfoParse(m, NULL);
            assert_non_null(o);
            PQconninfoFree(o);
        }
        free(m);
    }
}

static void test_print_masks_secrets(void **state)
{
    vnib_error_t e = {0};
    char *buf = NULL;
    size_t len = 0;
    (void)state;
    struct config *cfg =
        load_text("[database]\nconninfo = \"password=hunter2\"\n", &e, NULL);
    assert_non_null(cfg);
    FILE *f = open_memstream(&buf, &len);
    config_print(cfg, f);
    fclose(f);
    assert_null(strstr(buf, "hunter2"));
    assert_non_null(strstr(buf, "conninfo = \"password=***\""));
    assert_non_null(strstr(buf, "[limits]\n"));
    free(buf);
    config_destroy(cfg);
}

/* The base URL's trailing slashes go, or FI_CXI_COLL_FABRIC_MGR_URL and
 * every Fabric Manager path would get "//".
 */
static void test_fm_url_trailing_slash(void **state)
{
    vnib_error_t e = {0};
    (void)state;
    struct config *cfg =
        load_text("[hwcoll]\nfm_url = \"http://fm:8000//\"\n", &e, NULL);
    assert_non_null(cfg);
    assert_string_equal(cfg->hwcoll.fm_url, "http://fm:8000");
    config_destroy(cfg);
    cfg = load_text("[hwcoll]\nfm_url = \"https://fm/api/\"\n", &e, NULL);
    assert_non_null(cfg);
    assert_string_equal(cfg->hwcoll.fm_url, "https://fm/api");
    config_destroy(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_mask_conninfo),
        cmocka_unit_test(test_print_masks_secrets),
        cmocka_unit_test(test_fm_url_trailing_slash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
