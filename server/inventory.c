/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The broker's inventory of nodes (see inventory.h): the topology file
 * loaded once at start, the reserve handler's check against it, and the
 * sizing of hardware collectives it feeds.
 *
 * The inventory is immutable after inventory_create, so request workers
 * read it without locks, as they read the configuration.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/fmclient.h"
#include "vnib/hostlist.h"
#include "vnib/logger.h"
#include "vnib/topology.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/inventory.h"

struct inventory {
    const char *path;      /* cluster.topology_file (borrowed), or NULL */
    struct topology *topo; /* NULL without a file */
    bool reject;           /* cluster.reject_unknown_nodes */
};

struct inventory *inventory_create(const struct config *cfg, vnib_error_t *errp)
{
    struct inventory *inv = calloc(1, sizeof(*inv));
    vnib_error_t why = {0};

    if (!inv) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    inv->reject = cfg->cluster.reject_unknown_nodes != 0;
    if (!cfg->cluster.topology_file[0])
        return inv;
    inv->path = cfg->cluster.topology_file;
    if (!(inv->topo = topology_load(
              inv->path, (size_t)cfg->limits.hostlist_max_names, &why))) {
        errprintf(errp, "cluster.topology_file: %s", why.text);
        goto error;
    }
    if (topology_node_count(inv->topo) == 0) {
        errno = EINVAL;
        errprintf(errp,
                  "cluster.topology_file: %s lists no nodes (Nodes= of a "
                  "SwitchName line)",
                  inv->path);
        goto error;
    }
    return inv;
error:
    inventory_destroy(inv);
    return NULL;
}

void inventory_destroy(struct inventory *inv)
{
    int saved_errno = errno;

    if (inv) {
        topology_destroy(inv->topo);
        free(inv);
    }
    errno = saved_errno;
}

int inventory_check(const struct inventory *inv,
                    const struct hostlist *hosts,
                    struct inventory_verdict *verdict,
                    vnib_error_t *errp)
{
    memset(verdict, 0, sizeof(*verdict));
    verdict->nodes = hostlist_count(hosts);
    if (!inv || !inv->topo)
        return 0;
    for (size_t i = 0; i < verdict->nodes; i++) {
        const char *name = hostlist_nth(hosts, i);
        if (!topology_has_node(inv->topo, name) && verdict->unknown++ == 0)
            verdict->first = name;
    }
    if (verdict->unknown == 0 || !inv->reject)
        return 0;
    errno = EINVAL;
    return errprintf(errp,
                     "nodes: %s is not in the cluster's topology (%zu of %zu "
                     "nodes are unknown)",
                     verdict->first,
                     verdict->unknown,
                     verdict->nodes);
}

int inventory_lists(const struct inventory *inv, const char *node)
{
    if (!inv || !inv->topo)
        return -1;
    return topology_has_node(inv->topo, node) ? 1 : 0;
}

void inventory_warn(struct logger *log,
                    const char *request_id,
                    const char *job_id,
                    const struct inventory_verdict *verdict)
{
    if (verdict->unknown == 0)
        return;
    logger_printf(log,
                  LOG_WARNING,
                  request_id,
                  "reservation %s: %s is not in the cluster's topology (%zu "
                  "of %zu nodes are unknown); accepted, as "
                  "cluster.reject_unknown_nodes is false",
                  job_id,
                  verdict->first,
                  verdict->unknown,
                  verdict->nodes);
}

void inventory_sizing(const struct config *cfg,
                      const struct inventory *inv,
                      struct inventory_sizing *out)
{
    const struct topology *t = inv ? inv->topo : NULL;

    out->total_addrs = cfg->hwcoll.total_addrs;
    out->jobs_per_node = cfg->hwcoll.jobs_per_node;
    out->leaves = t ? (long)topology_leaf_count(t) : 0;
    out->system_size = cfg->hwcoll.system_size;
    out->source = "hwcoll.system_size";
    if (out->system_size == 0 && t) {
        out->system_size = (long)topology_node_count(t);
        out->source = inv->path;
    }
    /* Without a min_job_size of its own, the smallest collective job is
     * a leaf switch's worth of nodes: S / s is the leaf count (computed
     * as such, so that S / (S / L) cannot round away from L).
     */
    out->min_job_size =
        t && !cfg->min_job_size_set ? 0 : cfg->hwcoll.min_job_size;
    if (cfg->hwcoll.addrs_per_job)
        out->addrs_per_job = (int)cfg->hwcoll.addrs_per_job;
    else if (out->min_job_size == 0)
        out->addrs_per_job = fmc_addrs_per_job((int)out->total_addrs,
                                               (int)out->leaves,
                                               1,
                                               (int)out->jobs_per_node);
    else
        out->addrs_per_job = fmc_addrs_per_job((int)out->total_addrs,
                                               (int)out->system_size,
                                               (int)out->min_job_size,
                                               (int)out->jobs_per_node);
}

void inventory_describe(const struct inventory *inv, char *buf, size_t size)
{
    const struct topology *t = inv ? inv->topo : NULL;

    if (!t) {
        snprintf(buf, size, "%s", "");
        return;
    }
    snprintf(buf,
             size,
             "%s: %zu nodes on %zu leaf switches (%zu switches)",
             inv->path,
             topology_node_count(t),
             topology_leaf_count(t),
             topology_switch_count(t));
}

void inventory_print(const struct inventory *inv,
                     const struct config *cfg,
                     FILE *out)
{
    struct inventory_sizing sz;
    char line[512];

    inventory_describe(inv, line, sizeof(line));
    if (line[0])
        fprintf(out,
                "\n# inventory (cluster.topology_file): %s; reservations "
                "naming other nodes are %s\n",
                line,
                cfg->cluster.reject_unknown_nodes ? "refused" : "warned");
    else
        fputs("\n# inventory: none (cluster.topology_file is \"\")\n", out);
    if (!cfg->hwcoll.enabled || cfg->hwcoll.addrs_per_job)
        return;
    inventory_sizing(cfg, inv, &sz);
    if (sz.min_job_size == 0)
        fprintf(out,
                "# hwcoll.addrs_per_job computed: %d = (M / (S / s)) / j "
                "with M = %ld, S = %ld (%s), S / s = %ld leaf switches, "
                "j = %ld\n",
                sz.addrs_per_job,
                sz.total_addrs,
                sz.system_size,
                sz.source,
                sz.leaves,
                sz.jobs_per_node);
    else
        fprintf(out,
                "# hwcoll.addrs_per_job computed: %d = (M / (S / s)) / j "
                "with M = %ld, S = %ld (%s), s = %ld, j = %ld\n",
                sz.addrs_per_job,
                sz.total_addrs,
                sz.system_size,
                sz.source,
                sz.min_job_size,
                sz.jobs_per_node);
}
