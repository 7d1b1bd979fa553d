/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsing SLURM_JOB_CPUS_PER_NODE against SLURM_JOB_NODELIST. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "agent/slurmcpus.h"

int slurmcpus_for_node(const char *cpus_per_node,
                       const char *nodelist,
                       const char *node,
                       unsigned *ncoresp,
                       vnib_error_t *errp)
{
    struct hostlist *hl = hostlist_decode(nodelist, 1u << 20, errp);
    size_t index = 0, total = 0;
    const char *p = cpus_per_node;
    int rc = -1;

    if (!hl)
        return -1;
    size_t n = hostlist_count(hl);
    for (index = 0; index < n; index++)
        if (strcmp(hostlist_nth(hl, index), node) == 0)
            break;
    if (index == n) {
        errno = EINVAL;
        errprintf(errp, "node %s is not in SLURM_JOB_NODELIST", node);
        goto done;
    }
    while (*p) {
        char *end;
        unsigned long cpus = strtoul(p, &end, 10), times = 1;
        if (end == p || cpus == 0 || cpus > 1u << 20)
            goto bad;
        p = end;
        if (strncmp(p, "(x", 2) == 0) {
            times = strtoul(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || times == 0 || times > n)
                goto bad;
            p = end + 1;
        }
        if (index >= total && index < total + times) {
            *ncoresp = (unsigned)cpus;
            rc = 0;
        }
        total += times;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    if (total != n) {
        errno = EINVAL;
        errprintf(errp,
                  "SLURM_JOB_CPUS_PER_NODE '%s' covers %zu nodes, "
                  "SLURM_JOB_NODELIST %zu",
                  cpus_per_node,
                  total,
                  n);
        rc = -1;
    }
    goto done;
bad:
    errno = EINVAL;
    errprintf(errp,
              "SLURM_JOB_CPUS_PER_NODE '%s' is not like '72(x2),36'",
              cpus_per_node);
    rc = -1;
done:
    hostlist_destroy(hl);
    return rc;
}
