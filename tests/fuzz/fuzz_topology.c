/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for the topology.conf reader (lib/topology.c).
 *
 * The broker reads the file at start and vnibctl on request; a file an
 * admin edited by hand, or one cut short, must never crash either.
 * Beyond "does not crash under ASan and UBSan", this target checks what
 * the broker relies on and aborts when one fails:
 *   - a refusal sets errno and a message "fuzz.conf:LINE:COL: ..." (or
 *     "out of memory");
 *   - an accepted file's leaves hold as many nodes as the node count,
 *     every node is found under the leaf the index names, and the span
 *     of all the nodes is every leaf with its own node count.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/topology.h"

/* Small enough that one input never takes long to expand. */
#define FUZZ_MAX_NAMES 10000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(const vnib_error_t *e, int err)
{
    unsigned line = 0, col = 0;

    if (err == 0)
        abort();
    if (err == ENOMEM)
        return;
    if (sscanf(e->text, "fuzz.conf:%u:%u: ", &line, &col) != 2 || line == 0
        || col == 0)
        abort();
}

/* The span of every node is every leaf, with its own count. */
static void check_span(const struct topology *t, const struct hostlist *all)
{
    struct topology_spans sp;
    size_t k = 0;

    if (topology_span(t, all, &sp, NULL) < 0)
        return; /* out of memory */
    if (sp.unknown != 0 || sp.first_unknown || sp.n > topology_leaf_count(t))
        abort();
    for (size_t i = 0; i < topology_switch_count(t); i++) {
        struct topology_switch_info info;
        if (topology_switch(t, i, &info) < 0)
            abort();
        if (!info.leaf || info.nodes == 0)
            continue;
        if (k >= sp.n || strcmp(sp.v[k].leaf, info.name)
            || sp.v[k].nodes != info.nodes)
            abort();
        k++;
    }
    if (k != sp.n)
        abort();
    topology_spans_free(&sp);
}

static void check_inventory(const struct topology *t)
{
    struct hostlist *all = hostlist_create();
    size_t nodes = 0, leaves = 0;
    const char *leaf = NULL;
    const char *name;

    for (size_t i = 0; i < topology_switch_count(t); i++) {
        struct topology_switch_info info;
        if (topology_switch(t, i, &info) < 0 || !info.name)
            abort();
        leaves += info.leaf;
        nodes += info.nodes;
    }
    if (nodes != topology_node_count(t) || leaves != topology_leaf_count(t))
        abort();
    for (size_t i = 0; (name = topology_node(t, i, &leaf)); i++) {
        if (!topology_has_node(t, name)
            || strcmp(topology_leaf_of(t, name), leaf))
            abort();
        if (all && hostlist_append(all, name) < 0)
            abort();
    }
    if (all)
        check_span(t, all);
    hostlist_destroy(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vnib_error_t e = {0};
    struct topology *t;

    errno = 0;
    t = topology_parse(
        (const char *)data, size, "fuzz.conf", FUZZ_MAX_NAMES, &e);
    if (!t) {
        check_refusal(&e, errno);
        return 0;
    }
    check_inventory(t);
    topology_destroy(t);
    return 0;
}
