/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for lib/topology.c: Slurm's topology.conf as an inventory.
 *
 * Tables of good files (the three examples of Slurm's topology guide
 * among them) with their switch, leaf and node counts; a table of bad
 * files, each with the exact "NAME:LINE:COL: message" it must produce and
 * its errno; the queries (membership, leaf of a node, the leaf switches a
 * node list spans); the name budget; and topology_load on real files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vnib/hostlist.h"
#include "vnib/topology.h"

#define MAX_NAMES 100000

/* Slurm's topology guide, first example: three levels, two children each. */
static const char seed_three_levels[] =
    "# topology.conf\n"
    "# Switch Configuration\n"
    "SwitchName=s0 Nodes=tux[0-1]\n"
    "SwitchName=s1 Nodes=tux[2-3]\n"
    "SwitchName=s2 Nodes=tux[4-5]\n"
    "SwitchName=s3 Nodes=tux[6-7]\n"
    "SwitchName=s4 Switches=s[0-1]\n"
    "SwitchName=s5 Switches=s[2-3]\n"
    "SwitchName=s6 Switches=s[4-5]\n";

/* Second example: four spine switches, each above every leaf. */
static const char seed_two_levels[] =
    "# topology.conf\n"
    "# Switch Configuration\n"
    "SwitchName=s0 Nodes=tux[0-3]   LinkSpeed=900\n"
    "SwitchName=s1 Nodes=tux[4-7]   LinkSpeed=900\n"
    "SwitchName=s2 Nodes=tux[8-11]  LinkSpeed=900\n"
    "SwitchName=s3 Nodes=tux[12-15] LinkSpeed=1800\n"
    "SwitchName=s4 Switches=s[0-3]  LinkSpeed=1800\n"
    "SwitchName=s5 Switches=s[0-3]  LinkSpeed=1800\n"
    "SwitchName=s6 Switches=s[0-3]  LinkSpeed=1800\n"
    "SwitchName=s7 Switches=s[0-3]  LinkSpeed=1800\n";

/* Third example: the leaves and one top switch. */
static const char seed_leaves_top[] =
    "# topology.conf\n"
    "# Switch Configuration\n"
    "SwitchName=s0 Nodes=tux[0-3]\n"
    "SwitchName=s1 Nodes=tux[4-7]\n"
    "SwitchName=s2 Nodes=tux[8-11]\n"
    "SwitchName=s3 Nodes=tux[12-15]\n"
    "SwitchName=s4 Switches=s[0-3]\n";

struct good_case {
    const char *what;
    const char *text;
    size_t switches, leaves, nodes;
};

static const struct good_case good_cases[] = {
    {"seed: three levels", seed_three_levels, 7, 4, 8},
    {"seed: four spines over every leaf", seed_two_levels, 8, 4, 16},
    {"seed: leaves and one top switch", seed_leaves_top, 5, 4, 16},
    {"empty file", "", 0, 0, 0},
    {"comments and blank lines only", "# nothing\n\n   \n\t# more\n", 0, 0, 0},
    {"no final newline", "SwitchName=a Nodes=n1", 1, 1, 1},
    {"CRLF lines",
     "SwitchName=a Nodes=n[1-2]\r\nSwitchName=b Switches=a\r\n",
     2,
     1,
     2},
    {"keys in any case",
     "switchname=a NODES=n1 linkspeed=5\nSWITCHNAME=b "
     "switches=a\n",
     2,
     1,
     1},
    {"comment after the values", "SwitchName=a Nodes=n1 # leaf a\n", 1, 1, 1},
    {"backslash continues a line",
     "SwitchName=a \\\n   Nodes=n[1-3]\n",
     1,
     1,
     3},
    {"leaves without a common parent",
     "SwitchName=a Nodes=x[1-2]\n"
     "SwitchName=b Nodes=y[1-2]\n",
     2,
     2,
     4},
    {"child defined after its parent",
     "SwitchName=top Switches=l[1-2]\n"
     "SwitchName=l1 Nodes=n[1-2]\nSwitchName=l2 Nodes=n[3-4]\n",
     3,
     2,
     4},
    {"a node listed twice under one leaf",
     "SwitchName=a Nodes=n[1-3],n2\n",
     1,
     1,
     3},
    {"a child listed twice under one parent",
     "SwitchName=a Nodes=n1\n"
     "SwitchName=b Switches=a,a\n",
     2,
     1,
     1},
    {"irregular hostlists",
     "SwitchName=a Nodes=tux[0-3,12,18-20]\n"
     "SwitchName=b Nodes=login1,gpu07\nSwitchName=c Switches=a,b\n",
     3,
     2,
     10},
};

static void test_good_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
        const struct good_case *c = &good_cases[i];
        vnib_error_t e = {0};
        struct topology *t =
            topology_parse(c->text, strlen(c->text), "t.conf", MAX_NAMES, &e);
        if (!t)
            fail_msg("%s: refused: %s", c->what, e.text);
        if (topology_switch_count(t) != c->switches
            || topology_leaf_count(t) != c->leaves
            || topology_node_count(t) != c->nodes)
            fail_msg(
                "%s: %zu switches, %zu leaves, %zu nodes; want %zu, "
                "%zu, %zu",
                c->what,
                topology_switch_count(t),
                topology_leaf_count(t),
                topology_node_count(t),
                c->switches,
                c->leaves,
                c->nodes);
        topology_destroy(t);
    }
}

struct bad_case {
    const char *what;
    const char *text;
    int err;
    const char *msg; /* the whole message */
};

static const struct bad_case bad_cases[] = {
    {"unknown key",
     "SwitchName=s0 Nodes=n1\n\nSwitchName=s1 Nodez=n2\n",
     EINVAL,
     "t.conf:3:15: unknown key \"Nodez\""},
    {"unknown first key",
     "  Frob=1\n",
     EINVAL,
     "t.conf:1:3: unknown key \"Frob\""},
    {"line not starting with SwitchName",
     "Nodes=n1 SwitchName=a\n",
     EINVAL,
     "t.conf:1:1: a line must start with SwitchName=, not Nodes"},
    {"block topology",
     "BlockName=b1 Nodes=n[1-4]\n",
     EINVAL,
     "t.conf:1:1: BlockName: only tree topologies (SwitchName=) are read"},
    {"ring topology",
     "RingName=ring0 Nodes=node[01-08]\n",
     EINVAL,
     "t.conf:1:1: RingName: only tree topologies (SwitchName=) are read"},
    {"no equals sign",
     "SwitchName=a Nodes n1\n",
     EINVAL,
     "t.conf:1:14: expected KEY=VALUE, found \"Nodes\""},
    {"empty key",
     "SwitchName=a =n1\n",
     EINVAL,
     "t.conf:1:14: expected KEY=VALUE, found \"=n1\""},
    {"empty value",
     "SwitchName=a Nodes=\n",
     EINVAL,
     "t.conf:1:20: Nodes has no value"},
    {"key twice",
     "SwitchName=a Nodes=n1 Nodes=n2\n",
     EINVAL,
     "t.conf:1:23: Nodes given twice for switch a"},
    {"SwitchName twice",
     "SwitchName=a SwitchName=b Nodes=n1\n",
     EINVAL,
     "t.conf:1:14: SwitchName given twice for switch a"},
    {"Nodes and Switches",
     "SwitchName=b Nodes=n1\nSwitchName=a Nodes=n2 "
     "Switches=b\n",
     EINVAL,
     "t.conf:2:23: switch a has both Nodes= and Switches="},
    {"neither Nodes nor Switches",
     "SwitchName=a LinkSpeed=5\n",
     EINVAL,
     "t.conf:1:12: switch a has neither Nodes= nor Switches="},
    {"bad switch name",
     "SwitchName=s[0-1] Nodes=n1\n",
     EINVAL,
     "t.conf:1:13: SwitchName: '[' is not allowed in a switch name "
     "(letters, digits, '-', '_', '.')"},
    {"bad LinkSpeed",
     "SwitchName=a Nodes=n1 LinkSpeed=fast\n",
     EINVAL,
     "t.conf:1:33: LinkSpeed: not a number in 0-999999999"},
    {"bad hostlist, column of the byte",
     "SwitchName=a Nodes=n[1-2,x]\n",
     EINVAL,
     "t.conf:1:26: Nodes: expected a number at offset 6, found 'x'"},
    {"duplicate switch",
     "SwitchName=a Nodes=n1\n# again\nSwitchName=a "
     "Nodes=n2\n",
     EINVAL,
     "t.conf:3:12: switch a is defined twice (first on line 1)"},
    {"unknown child switch",
     "SwitchName=a Nodes=n1\nSwitchName=top "
     "Switches=a,b9\n",
     EINVAL,
     "t.conf:2:25: Switches: switch b9 is not defined"},
    {"node under two leaf switches",
     "SwitchName=a Nodes=n[1-4]\nSwitchName=b "
     "Nodes=n[4-8]\n",
     EINVAL,
     "t.conf:2:20: Nodes: node n4 is under two leaf switches, a (line 1) "
     "and b"},
    {"cycle of two",
     "SwitchName=l Nodes=n1\nSwitchName=x Switches=y,l\n"
     "SwitchName=y Switches=x\n",
     EINVAL,
     "t.conf:3:23: Switches: switch cycle x -> y -> x"},
    {"switch under itself",
     "SwitchName=x Switches=x\n",
     EINVAL,
     "t.conf:1:23: Switches: switch cycle x -> x"},
    {"NUL byte",
     "SwitchName=a Nodes=n1\n#x\0y\n",
     EINVAL,
     "t.conf:2:3: NUL byte"},
    {"position after a continuation",
     "SwitchName=a \\\n  Nodes=n1 Foo=2\n",
     EINVAL,
     "t.conf:2:12: unknown key \"Foo\""},
};

static void test_bad_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *c = &bad_cases[i];
        vnib_error_t e = {0};
        /* The NUL case's text goes on past its NUL. */
        size_t len = strlen(c->text);
        if (!strcmp(c->what, "NUL byte"))
            len += 3;
        errno = 0;
        struct topology *t =
            topology_parse(c->text, len, "t.conf", MAX_NAMES, &e);
        if (t)
            fail_msg("%s: accepted", c->what);
        if (errno != c->err)
            fail_msg("%s: errno %d, want %d", c->what, errno, c->err);
        if (strcmp(e.text, c->msg) != 0)
            fail_msg("%s:\n got '%s'\nwant '%s'", c->what, e.text, c->msg);
    }
}

/* The file's names count against max_names; so do the switches'. */
static void test_budget(void **state)
{
    static const char text[] =
        "SwitchName=a Nodes=n[1-10]\nSwitchName=b Nodes=n[11-20]\n"
        "SwitchName=c Switches=a,b\n";
    vnib_error_t e = {0};
    struct topology *t;

    (void)state;
    t = topology_parse(text, strlen(text), "t.conf", 22, &e);
    assert_non_null(t);
    topology_destroy(t);
    errno = 0;
    t = topology_parse(text, strlen(text), "t.conf", 21, &e);
    assert_null(t);
    assert_int_equal(errno, E2BIG);
    assert_string_equal(e.text,
                        "t.conf:3:23: Switches: the file names more than 21 "
                        "hosts and switches");
    t = topology_parse(text, strlen(text), "t.conf", 15, &e);
    assert_null(t);
    assert_string_equal(e.text,
                        "t.conf:2:20: Nodes: the file names more than 15 "
                        "hosts and switches");
}

/* More than TOPOLOGY_MAX_SWITCHES switches. */
static void test_switch_limit(void **state)
{
    size_t n = TOPOLOGY_MAX_SWITCHES + 1;
    char *text = malloc(n * 32);
    size_t len = 0;
    vnib_error_t e = {0};
    char want[96];

    (void)state;
    assert_non_null(text);
    for (size_t i = 0; i < n; i++)
        len +=
            (size_t)sprintf(text + len, "SwitchName=s%zu Nodes=n%zu\n", i, i);
    errno = 0;
    assert_null(topology_parse(text, len, "t.conf", 1000000, &e));
    assert_int_equal(errno, E2BIG);
    snprintf(want,
             sizeof(want),
             "t.conf:%zu:1: more than %u switches",
             n,
             TOPOLOGY_MAX_SWITCHES);
    assert_string_equal(e.text, want);
    free(text);
}

static struct topology *parse_ok(const char *text)
{
    vnib_error_t e = {0};
    struct topology *t =
        topology_parse(text, strlen(text), "t.conf", MAX_NAMES, &e);
    if (!t)
        fail_msg("refused: %s", e.text);
    return t;
}

static void test_membership(void **state)
{
    struct topology *t = parse_ok(seed_two_levels);
    struct topology_switch_info info;

    (void)state;
    assert_true(topology_has_node(t, "tux0"));
    assert_true(topology_has_node(t, "tux15"));
    assert_false(topology_has_node(t, "tux16"));
    assert_false(topology_has_node(t, "s0")); /* a switch is not a node */
    assert_false(topology_has_node(t, ""));
    assert_string_equal(topology_leaf_of(t, "tux0"), "s0");
    assert_string_equal(topology_leaf_of(t, "tux7"), "s1");
    assert_string_equal(topology_leaf_of(t, "tux12"), "s3");
    assert_null(topology_leaf_of(t, "tux99"));

    assert_int_equal(topology_switch(t, 0, &info), 0);
    assert_string_equal(info.name, "s0");
    assert_true(info.leaf);
    assert_int_equal(info.nodes, 4);
    assert_int_equal(info.link_speed, 900);
    assert_int_equal(info.line, 3);
    assert_int_equal(topology_switch(t, 7, &info), 0);
    assert_string_equal(info.name, "s7");
    assert_false(info.leaf);
    assert_int_equal(info.children, 4);
    errno = 0;
    assert_int_equal(topology_switch(t, 8, &info), -1);
    assert_int_equal(errno, ENOENT);
    topology_destroy(t);
}

struct span_case {
    const char *nodes;
    const char *want; /* "leaf:count,..." in the file's order */
    size_t unknown;
    const char *first_unknown;
};

static const struct span_case span_cases[] = {
    {"tux[0-3]", "s0:4", 0, NULL},
    {"tux[2-9]", "s0:2,s1:4,s2:2", 0, NULL},
    {"tux[15,0]", "s0:1,s3:1", 0, NULL},
    {"tux[14-17],gpu1", "s3:2", 3, "gpu1"},
    {"other[1-3]", "", 3, "other1"},
};

static void test_span(void **state)
{
    struct topology *t = parse_ok(seed_leaves_top);

    (void)state;
    for (size_t i = 0; i < sizeof(span_cases) / sizeof(span_cases[0]); i++) {
        const struct span_case *c = &span_cases[i];
        struct hostlist *hl = hostlist_decode(c->nodes, 1000, NULL);
        struct topology_spans sp;
        char got[256] = "";
        size_t used = 0;

        assert_non_null(hl);
        hostlist_uniq(hl);
        assert_int_equal(topology_span(t, hl, &sp, NULL), 0);
        for (size_t k = 0; k < sp.n; k++)
            used += (size_t)snprintf(got + used,
                                     sizeof(got) - used,
                                     "%s%s:%zu",
                                     k ? "," : "",
                                     sp.v[k].leaf,
                                     sp.v[k].nodes);
        if (strcmp(got, c->want) != 0)
            fail_msg("%s: spans '%s', want '%s'", c->nodes, got, c->want);
        assert_int_equal(sp.unknown, c->unknown);
        if (c->first_unknown)
            assert_string_equal(sp.first_unknown, c->first_unknown);
        else
            assert_null(sp.first_unknown);
        topology_spans_free(&sp);
        assert_null(sp.v);
        hostlist_destroy(hl);
    }
    topology_destroy(t);
}

/* A file as big as a large machine: lookups still answer. */
static void test_large(void **state)
{
    size_t leaves = 696, per = 16; /* 11,136 nodes */
    char *text = malloc(leaves * 64 + 64);
    size_t len = 0;

    (void)state;
    assert_non_null(text);
    for (size_t i = 0; i < leaves; i++)
        len += (size_t)sprintf(text + len,
                               "SwitchName=l%zu Nodes=nid[%06zu-%06zu]\n",
                               i,
                               i * per,
                               i * per + per - 1);
    len += (size_t)sprintf(text + len, "SwitchName=top Switches=l[0-695]\n");
    struct topology *t = topology_parse(text, len, "big.conf", 1000000, NULL);
    assert_non_null(t);
    assert_int_equal(topology_node_count(t), 11136);
    assert_int_equal(topology_leaf_count(t), 696);
    assert_string_equal(topology_leaf_of(t, "nid011135"), "l695");
    assert_string_equal(topology_leaf_of(t, "nid000016"), "l1");
    topology_destroy(t);
    free(text);
}

static void test_load(void **state)
{
    char path[] = "/tmp/test_topology.XXXXXX";
    vnib_error_t e = {0};
    int fd = mkstemp(path);
    struct topology *t;

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, seed_three_levels, strlen(seed_three_levels)),
                     (ssize_t)strlen(seed_three_levels));
    close(fd);
    t = topology_load(path, MAX_NAMES, &e);
    assert_non_null(t);
    assert_int_equal(topology_node_count(t), 8);
    topology_destroy(t);

    /* Errors name the path as given. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodez=n2\n", f);
    fclose(f);
    assert_null(topology_load(path, MAX_NAMES, &e));
    char want[128];
    snprintf(want, sizeof(want), "%s:2:15: unknown key \"Nodez\"", path);
    assert_string_equal(e.text, want);
    unlink(path);

    errno = 0;
    assert_null(topology_load(path, MAX_NAMES, &e));
    assert_int_equal(errno, ENOENT);
    snprintf(want, sizeof(want), "%s: No such file or directory", path);
    assert_string_equal(e.text, want);

    errno = 0;
    assert_null(topology_load("/tmp", MAX_NAMES, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "/tmp: not a regular file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_files),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_switch_limit),
        cmocka_unit_test(test_membership),
        cmocka_unit_test(test_span),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
