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
 */
#ifndef VNIB_AGENT_LIMITS_H
#define VNIB_AGENT_LIMITS_H

#include <stddef.h>

#include "agent/nic.h"
#include "vnib/error.h"

/* Fill req->max, req->res and resource_limits for a job with ncores cores
 * on dev, whose services are svcs[0..n-1].
 */
void limits_plan(const struct nic_info *dev,
                 const struct nic_svc *svcs,
                 int n,
                 unsigned ncores,
                 struct nic_svc *req);

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
