/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizing a job's CXI service on one NIC.
 *
 * The request follows HPE's table, as Slurm and Flux use it: per core the
 * job reserves TXQ 2, TGQ 1, EQ 2, CT 1, TLE 1, PTE 6, LE 16 and AC 2, up
 * to the maxima TXQ 2048, TGQ 1024, EQ 2047, CT 2047, TLE ncores, PTE
 * 2048, LE 16384 and AC 1022.  Every maximum is clamped to what the NIC
 * has left once its system services have taken theirs (the larger of
 * their reservation and their use), and every reservation to its maximum;
 * TLE max equals its reservation, as the driver insists.
 *
 * When the NIC cannot supply the reservation (alloc answers ENOSPC with
 * what was available), limits_scale_back lowers each short resource to
 * what is there and refuses only when one would fall below the floor: a
 * configured percentage of the original request.  That is the retry that
 * Slurm and Flux lack (flux-coral2#409).
 *
 * A site or a user may change the table as HPE's switch/hpe_slingshot
 * lets them (SwitchParameters and --network def_<rsrc>, res_<rsrc>,
 * max_<rsrc> and depth, <rsrc> one of ptes txqs tgqs eqs cts les tles
 * acs): struct limits_want.  Then each reservation is res_ when set, else
 * def_ (the table's per-core figure when not set) times depth (the cores
 * when not set); each maximum is max_ when set (the table's otherwise),
 * clamped to what the NIC has left; a reservation above its maximum is
 * lowered to it, as HPE's plugin does, except a res_ the NIC cannot give,
 * which is an error naming it.
 *
 * Whatever the figures, a NIC holds only a few services that reserve
 * TLEs (Cassini: 4 TLE pools, one the default service's, so about 3 job
 * or step services per NIC; the driver raises every limited service's
 * TLE reservation to at least 8, so each takes a pool).  An alloc past
 * that answers ENOSPC with no_tle_pools, which no smaller request helps.
 */
#ifndef VNIB_AGENT_LIMITS_H
#define VNIB_AGENT_LIMITS_H

#include <stddef.h>

#include "agent/nic.h"
#include "vnib/error.h"

/* Figures a site or user set; -1 where not set. */
struct limits_want {
    long def[NIC_RSRC_COUNT]; /* per core (per depth) */
    long res[NIC_RSRC_COUNT]; /* the reservation itself */
    long max[NIC_RSRC_COUNT]; /* the maximum */
    long depth;               /* the multiplier instead of the cores */
};

/* The largest figure of a def_, res_ or max_ (libcxi's limits are 16-bit),
 * and of depth (HPE's bound). */
#define LIMITS_FIGURE_MAX 65535L
#define LIMITS_DEPTH_MAX 1024L

/* Every figure of w unset (-1). */
void limits_want_init(struct limits_want *w);

/* True when w sets nothing. */
bool limits_want_empty(const struct limits_want *w);

/* Fill req->max, req->res and resource_limits for a job with ncores cores
 * on dev, whose services are svcs[0..n-1], from HPE's table changed by w
 * (NULL: the table).  Returns 0, or -1 with errno ENOSPC and errp naming
 * the NIC and each res_ it cannot give (more than it has left once its
 * system services have taken theirs, or above max_).
 */
int limits_plan(const struct nic_info *dev,
                const struct nic_svc *svcs,
                int n,
                unsigned ncores,
                const struct limits_want *w,
                struct nic_svc *req,
                vnib_error_t *errp);

/* How many services on a NIC (svcs[0..n-1]) take a pool of resource r
 * (NIC_RSRC_TLE or NIC_RSRC_LE): those that are neither system services
 * nor the default service (id 1) and reserve some of r. */
int limits_pool_users(const struct nic_svc *svcs, int n, enum nic_rsrc r);

/* Lower req's reservations to fail->avail.  want holds the original plan
 * (the floor is floor_percent of want->res, at least 1 where want->res is
 * not 0).  On success returns 0 and writes to note (when size > 0) one
 * line of per-resource figures, "pte 768->500 le 2048->1000".  Returns -1
 * with errno ENOSPC and errp naming each resource below its floor, or the
 * exhausted LE/TLE/counter pools, which no smaller request can help.
 */
int limits_scale_back(const struct nic_svc *want,
                      struct nic_svc *req,
                      const struct nic_fail *fail,
                      long floor_percent,
                      char *note,
                      size_t size,
                      vnib_error_t *errp);

/* "pte=6 txq=2 ..." of the reservations (or maxima), for list output. */
void limits_format(const uint16_t v[NIC_RSRC_COUNT], char *buf, size_t size);

#endif /* !VNIB_AGENT_LIMITS_H */
