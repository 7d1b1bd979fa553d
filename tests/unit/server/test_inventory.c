/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the broker's inventory (server/inventory.c) and its
 * configuration keys: cluster.topology_file and reject_unknown_nodes,
 * hwcoll sizes no longer required with a topology file, HPE's rule with S
 * and s from the file (and an explicit min_job_size kept), the
 * --check-config report, and a bad file named with line and column.
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

#include "server/config.h"
#include "server/inventory.h"

/* A new file under /tmp holding text; the caller unlinks and frees the
 * name it returns.
 */
static char *temp_file_with(const char *text)
{
    char name[] = "/tmp/vnib-test-inventory.XXXXXX";
    FILE *f = fdopen(mkstemp(name), "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return strdup(name);
}

/* Four leaf switches of four nodes, one top switch. */
static const char topo_text[] =
    "SwitchName=s0 Nodes=tux[0-3]\nSwitchName=s1 Nodes=tux[4-7]\n"
    "SwitchName=s2 Nodes=tux[8-11]\nSwitchName=s3 Nodes=tux[12-15]\n"
    "SwitchName=s4 Switches=s[0-3]\n";

/* A configuration of hwcoll on (no FM auth) with extra lines. */
static struct config *load_config(const char *topo,
                                  const char *extra,
                                  vnib_error_t *e)
{
    char text[1024];
    snprintf(text,
             sizeof(text),
             "[cluster]\ntopology_file = \"%s\"\n[hwcoll]\nenabled = true\n"
             "fm_url = \"http://127.0.0.1:1\"\nauth = \"none\"\n"
             "token_key_file = \"/nonexistent\"\n%s",
             topo,
             extra);
    char *path = temp_file_with(text);
    struct config *cfg = config_load(path, e);
    unlink(path);
    free(path);
    return cfg;
}

static void test_keys(void **state)
{
    vnib_error_t e = {0};
    struct config *cfg;

    (void)state;
    cfg = config_defaults(&e);
    assert_non_null(cfg);
    assert_string_equal(cfg->cluster.topology_file, "");
    assert_int_equal(cfg->cluster.reject_unknown_nodes, 1);
    assert_false(cfg->min_job_size_set);
    config_destroy(cfg);

    /* Without a file, hwcoll still needs a size. */
    assert_null(load_config("", "", &e));
    assert_non_null(strstr(e.text, "cluster.topology_file to compute it"));
    /* With one, it does not. */
    cfg = load_config("/etc/slurm/topology.conf", "", &e);
    assert_non_null(cfg);
    assert_false(cfg->min_job_size_set);
    config_destroy(cfg);
    cfg = load_config("/etc/slurm/topology.conf", "min_job_size = 64\n", &e);
    assert_non_null(cfg);
    assert_true(cfg->min_job_size_set);
    config_destroy(cfg);
}

struct sizing_case {
    const char *extra;
    int want;
    long system_size, min_job_size;
};

static const struct sizing_case sizing_cases[] = {
    /* S = 16 from the file, S / s = 4 leaves: 4086 / 4. */
    {"", 1021, 16, 0},
    {"jobs_per_node = 2\n", 510, 16, 0},
    /* An explicit s: 4086 / (16 / 2). */
    {"min_job_size = 2\n", 510, 16, 2},
    /* An explicit S with the file's leaves. */
    {"system_size = 11136\n", 1021, 11136, 0},
    {"system_size = 11136\nmin_job_size = 64\n", 23, 11136, 64},
    /* A set addrs_per_job wins. */
    {"addrs_per_job = 8\n", 8, 16, 0},
};

static void test_sizing(void **state)
{
    char *topo = temp_file_with(topo_text);

    (void)state;
    for (size_t i = 0; i < sizeof(sizing_cases) / sizeof(sizing_cases[0]);
         i++) {
        const struct sizing_case *c = &sizing_cases[i];
        vnib_error_t e = {0};
        struct config *cfg = load_config(topo, c->extra, &e);
        if (!cfg)
            fail_msg("'%s': %s", c->extra, e.text);
        struct inventory *inv = inventory_create(cfg, &e);
        assert_non_null(inv);
        struct inventory_sizing sz;
        inventory_sizing(cfg, inv, &sz);
        if (sz.addrs_per_job != c->want || sz.system_size != c->system_size
            || sz.min_job_size != c->min_job_size)
            fail_msg("'%s': %d (S %ld, s %ld), want %d (S %ld, s %ld)",
                     c->extra,
                     sz.addrs_per_job,
                     sz.system_size,
                     sz.min_job_size,
                     c->want,
                     c->system_size,
                     c->min_job_size);
        assert_int_equal(sz.leaves, 4);
        inventory_destroy(inv);
        config_destroy(cfg);
    }
    unlink(topo);
    free(topo);
}

static void test_print(void **state)
{
    char *topo = temp_file_with(topo_text);
    vnib_error_t e = {0};
    char *buf = NULL;
    size_t len = 0;
    char want[512];

    (void)state;
    struct config *cfg = load_config(topo, "", &e);
    assert_non_null(cfg);
    struct inventory *inv = inventory_create(cfg, &e);
    assert_non_null(inv);
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    inventory_print(inv, cfg, out);
    fclose(out);
    snprintf(want,
             sizeof(want),
             "\n# inventory (cluster.topology_file): %s: 16 nodes on 4 leaf "
             "switches (5 switches); reservations naming other nodes are "
             "refused\n# hwcoll.addrs_per_job computed: 1021 = (M / (S / s)) "
             "/ j with M = 4086, S = 16 (%s), S / s = 4 leaf switches, j = "
             "1\n",
             topo,
             topo);
    assert_string_equal(buf, want);
    free(buf);
    inventory_destroy(inv);
    config_destroy(cfg);
    unlink(topo);
    free(topo);
}

static void test_bad_files(void **state)
{
    char *bad =
        temp_file_with("SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodez=n2\n");
    char *empty = temp_file_with("# no switches yet\n");
    vnib_error_t e = {0};
    char want[256];

    (void)state;
    struct config *cfg = load_config(bad, "", &e);
    assert_non_null(cfg);
    errno = 0;
    assert_null(inventory_create(cfg, &e));
    assert_int_equal(errno, EINVAL);
    snprintf(want,
             sizeof(want),
             "cluster.topology_file: %s:2:15: unknown key \"Nodez\"",
             bad);
    assert_string_equal(e.text, want);
    config_destroy(cfg);

    cfg = load_config(empty, "", &e);
    assert_non_null(cfg);
    assert_null(inventory_create(cfg, &e));
    snprintf(want,
             sizeof(want),
             "cluster.topology_file: %s lists no nodes (Nodes= of a "
             "SwitchName line)",
             empty);
    assert_string_equal(e.text, want);
    config_destroy(cfg);
    unlink(bad);
    unlink(empty);
    free(bad);
    free(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_sizing),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
