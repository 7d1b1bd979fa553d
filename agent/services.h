/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's CXI services across every NIC of the node.
 *
 * A job's service on a NIC is recognised, as Flux does it, by three
 * things the kernel keeps (it keeps no name or tag): not a system
 * service, a UID member equal to the job owner, and exactly the reserved
 * VNI list in order.  So a second prolog finds and reuses what the first
 * made, and an epilog after an agent crash still finds what to destroy.
 */
#ifndef VNIB_AGENT_SERVICES_H
#define VNIB_AGENT_SERVICES_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "agent/nic.h"
#include "vnib/error.h"

struct limits_want;

struct services_job {
    uid_t uid;
    int nvnis;
    uint16_t vnis[VNIB_SERVICE_VNIS_MAX];
    unsigned tcs_mask;
    unsigned ncores;
    long floor_percent;
    const struct limits_want *limits; /* NULL: HPE's table (limits.h) */
};

/* Which services a destroy pass takes. */
typedef bool (*services_pick_fn)(const struct nic_svc *svc, const void *arg);

/* The pick for one job (arg: const struct services_job *). */
bool services_match(const struct nic_svc *svc, const void *job);

/* ids[d] := the job's service on devs[d], or -1.  Returns 0 or -1. */
int services_find(struct nic_backend *nb,
                  const struct nic_info *devs,
                  int ndev,
                  const struct services_job *job,
                  int *ids,
                  vnib_error_t *errp);

/* Make sure the job has its service on every NIC: reuse one that matches,
 * else allocate one sized by limits_plan, scaling back on ENOSPC.
 * ids[d] gets each service id, created[d] whether this call made it.
 * Scale-backs and other warnings go to warn, one line each.  On failure
 * -1 is returned with errp naming the NIC and the cause (for a NIC out of
 * TLE or LE pools: "the NIC cxi0 has no free TLE pool (3 in use by other
 * services)"), after the services this call created are destroyed again
 * and each is checked gone from its NIC's list: then created[] is all
 * false.  One that could not be destroyed, or not be checked, keeps
 * created[d] true and its id in ids[d], for the caller to report.
 */
int services_create(struct nic_backend *nb,
                    const struct nic_info *devs,
                    int ndev,
                    const struct services_job *job,
                    int *ids,
                    bool *created,
                    FILE *warn,
                    vnib_error_t *errp);

/* Destroy every service pick() takes, on every NIC, retrying EBUSY once a
 * second for up to retry_ms.  With dry_run nothing is destroyed.  Each
 * service destroyed (or, with dry_run, that would be) is appended to done
 * as {"device","svc_id","uid","vnis"}; each one left to left the same way
 * plus "error".  Returns the number left, or -1 when the NICs could not
 * be listed.
 */
int services_destroy(struct nic_backend *nb,
                     const struct nic_info *devs,
                     int ndev,
                     services_pick_fn pick,
                     const void *arg,
                     long retry_ms,
                     bool dry_run,
                     json_t *done,
                     json_t *left,
                     vnib_error_t *errp);

/* {"device","svc_id","uid","vnis"} of a service. */
json_t *services_json(const struct nic_info *dev, const struct nic_svc *svc);

#endif /* !VNIB_AGENT_SERVICES_H */
