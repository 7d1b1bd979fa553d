/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cluster's inventory: the broker's use of Slurm's topology.conf.
 *
 * With cluster.topology_file set, the broker reads the file at start
 * (lib/topology.c; there is no reload: a changed file takes a restart)
 * and uses it twice.  A reservation must name nodes the file lists: one
 * that does not is refused with 400 invalid_field naming the first
 * unknown node, or, with cluster.reject_unknown_nodes = false, accepted
 * with one warning in the log.  And hardware collectives' HPE rule
 * (M / (S / s)) / j takes S, the node count, from the file when
 * hwcoll.system_size is 0, and S / s, the number of smallest collective
 * jobs that fit, as the number of leaf switches unless
 * hwcoll.min_job_size is set in the configuration file.
 */
#ifndef VNIB_SERVER_INVENTORY_H
#define VNIB_SERVER_INVENTORY_H

#include <stddef.h>
#include <stdio.h>

#include "vnib/error.h"

struct config;
struct hostlist;
struct logger;
struct inventory;

/* Read cluster.topology_file.  Returns the inventory (one that knows no
 * file and admits every node when the key is ""), or NULL with errno set
 * and errp holding "cluster.topology_file: FILE:LINE:COL: ...".  A file
 * that lists no node is refused too.
 */
struct inventory *inventory_create(const struct config *cfg,
                                   vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free (NULL accepted); errno is preserved. */
void inventory_destroy(struct inventory *inv);

/* What inventory_check found, for inventory_warn. */
struct inventory_verdict {
    size_t unknown;    /* nodes the file does not list */
    size_t nodes;      /* nodes checked */
    const char *first; /* the first unknown one (borrowed), or NULL */
};

/* Check a reservation's nodes (a uniq'd list) against inv (NULL: no
 * file).  Returns 0 (every node is known, there is no file, or unknown
 * nodes are only to be warned about: see *verdict), or -1 with errno
 * EINVAL and errp naming the first unknown node and how many are unknown
 * (the handler answers 400 invalid_field).
 */
int inventory_check(const struct inventory *inv,
                    const struct hostlist *hosts,
                    struct inventory_verdict *verdict,
                    vnib_error_t *errp);

/* Whether the inventory lists node: 1 yes, 0 no, -1 when there is no
 * inventory to ask (cluster.topology_file is "", or inv is NULL).
 */
int inventory_lists(const struct inventory *inv, const char *node);

/* After a new reservation of job_id was committed: the warning of a
 * verdict with unknown nodes (nothing otherwise), once per reservation,
 * on the log line of request request_id.
 */
void inventory_warn(struct logger *log,
                    const char *request_id,
                    const char *job_id,
                    const struct inventory_verdict *verdict);

/* HPE's rule with its inputs, as the broker applies it. */
struct inventory_sizing {
    int addrs_per_job;  /* the result (or hwcoll.addrs_per_job when set) */
    long total_addrs;   /* M */
    long system_size;   /* S */
    long min_job_size;  /* s; 0 when S / s is the leaf count */
    long leaves;        /* leaf switches (0 without a file) */
    long jobs_per_node; /* j */
    const char *source; /* where S came from: "hwcoll.system_size" or the
                           topology file */
};

/* Multicast addresses per job: hwcoll.addrs_per_job when it is set,
 * otherwise (M / (S / s)) / j with S and s as the header says.
 */
void inventory_sizing(const struct config *cfg,
                      const struct inventory *inv,
                      struct inventory_sizing *out);

/* One line for the log: "FILE: N nodes on L leaf switches (T switches)",
 * or "" without a file.
 */
void inventory_describe(const struct inventory *inv, char *buf, size_t size);

/* The `--check-config` report, as TOML comments: the inventory and, with
 * hwcoll on and addrs_per_job computed, the rule's inputs and result.
 */
void inventory_print(const struct inventory *inv,
                     const struct config *cfg,
                     FILE *out);

#endif /* !VNIB_SERVER_INVENTORY_H */
