/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm's topology.conf (tree topology): the cluster's switches and nodes.
 *
 * A site that runs Slurm with TopologyPlugin=topology/tree already lists
 * every node under its leaf switch, one switch per line:
 *
 *     SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900
 *     SwitchName=s4 Switches=s[0-3]
 *
 * This module reads that file into an inventory the broker and vnibctl can
 * query: is a node known, which leaf switch holds it, and which leaf
 * switches a job's nodes span.  Keys are case-insensitive, '#' starts a
 * comment, a trailing backslash continues a line, and Nodes= and
 * Switches= are hostlist expressions (lib/hostlist.c).  The file comes
 * from an admin, but it is read by a daemon, so its sizes are bounded and
 * every error names the file, the line and the column:
 * "topology.conf:12:9: unknown key \"Nodez\"".
 *
 * A switch may be listed under several parents (redundant spine switches,
 * as in Slurm's own guide); a cycle, an unknown child switch, a switch
 * defined twice, a switch with both Nodes= and Switches=, and a node under
 * two leaf switches are errors.  Only tree topologies are read: BlockName=
 * and RingName= lines are refused as such.
 */
#ifndef VNIB_TOPOLOGY_H
#define VNIB_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include "vnib/error.h"

struct hostlist;

/* Where Slurm keeps the file (vnibctl's default). */
#define TOPOLOGY_DEFAULT_PATH "/etc/slurm/topology.conf"

/* Most switches one file may define. */
#define TOPOLOGY_MAX_SWITCHES 65536u

/* Largest file read (bytes). */
#define TOPOLOGY_MAX_FILE_BYTES (16u * 1024 * 1024)

struct topology;

/* Parse len bytes of text (need not be NUL-terminated) named name in
 * messages.  Every host and switch name the Nodes= and Switches= values
 * expand to counts against max_names (the broker passes
 * limits.hostlist_max_names).  Returns the inventory, or NULL with errno
 * EINVAL (a malformed or inconsistent file), E2BIG (past a bound) or
 * ENOMEM, and errp holding "NAME:LINE:COL: what is wrong".
 */
struct topology *topology_parse(const char *text,
                                size_t len,
                                const char *name,
                                size_t max_names,
                                vnib_error_t *errp) VNIB_MUST_CHECK;

/* Read and parse the file at path (named by path in messages).  A file
 * that cannot be read fails with its errno and "PATH: reason".
 */
struct topology *topology_load(const char *path,
                               size_t max_names,
                               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free (NULL accepted); errno is preserved. */
void topology_destroy(struct topology *t);

/* Switches defined, leaf switches (those with Nodes=), and nodes. */
size_t topology_switch_count(const struct topology *t);
size_t topology_leaf_count(const struct topology *t);
size_t topology_node_count(const struct topology *t);

/* One switch, in the file's order (0 <= i < topology_switch_count). */
struct topology_switch_info {
    const char *name; /* borrowed from t */
    bool leaf;        /* has Nodes= */
    size_t nodes;     /* nodes under it (leaf switches) */
    size_t children;  /* switches under it (others) */
    long link_speed;  /* LinkSpeed=, or -1 when not given */
    unsigned line;    /* where it is defined */
};
int topology_switch(const struct topology *t,
                    size_t i,
                    struct topology_switch_info *info);

/* Node i in the order of names (0 <= i < topology_node_count), with its
 * leaf switch in *leafp; both borrowed from t.  NULL past the end.
 */
const char *topology_node(const struct topology *t,
                          size_t i,
                          const char **leafp);

/* True when node is under a leaf switch. */
bool topology_has_node(const struct topology *t, const char *node);

/* The leaf switch holding node (borrowed from t), or NULL. */
const char *topology_leaf_of(const struct topology *t, const char *node);

/* A leaf switch a node list spans, with how many of the list's nodes are
 * under it.
 */
struct topology_span {
    const char *leaf; /* borrowed from t */
    size_t nodes;
};

/* What a node list spans (topology_span), freed with topology_spans_free. */
struct topology_spans {
    struct topology_span *v;   /* leaf switches, in the file's order */
    size_t n;                  /* entries of v */
    size_t unknown;            /* names no leaf switch holds */
    const char *first_unknown; /* the first of them in the list's order
                                  (borrowed from the list), or NULL */
};

/* The leaf switches the names of hl span, into *out.  A name listed twice
 * in hl counts twice: pass a uniq'd list.  Returns 0, or -1 with errno
 * ENOMEM (and *out empty).
 */
int topology_span(const struct topology *t,
                  const struct hostlist *hl,
                  struct topology_spans *out,
                  vnib_error_t *errp);

/* Free what topology_span put in *spans and empty it. */
void topology_spans_free(struct topology_spans *spans);

#endif /* !VNIB_TOPOLOGY_H */
