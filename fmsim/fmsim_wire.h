/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's checks of what clients send: job and step ids, NIC addresses
 * (libfabric writes "%X:%02X:%02X"; a full MAC is accepted too), and the
 * body of a POST /fabric/collectives/multicasts.
 */
#ifndef FMSIM_WIRE_H
#define FMSIM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"
#include "fmsim/fmsim_state.h"

#define FMSIM_VNI_MAX 65535

/* jobID and jobStepID: 1..FMSIM_JOB_ID_MAX bytes, no control characters,
 * no '/' (the id is a path segment of documentSelfLink).
 */
bool fmsim_wire_id_valid(const char *id);

/* One to six groups of one or two hex digits separated by ':', as a
 * 48-bit number: 0, or -1.
 */
int fmsim_wire_mac_parse(const char *str, uint64_t *macp);

/* A 48-bit MAC as "xx:xx:xx:xx:xx:xx". */
void fmsim_wire_mac_format(uint64_t mac, char buf[18]);

/* qsort and bsearch order of uint64_t. */
int fmsim_wire_u64_cmp(const void *a, const void *b);

/* A multicast request, validated. */
struct fmsim_mcast_req {
    const char *job_id;
    char step[FMSIM_JOB_ID_MAX + 1];
    uint64_t *macs; /* in request order; the caller frees it */
    size_t nmacs;
    json_int_t vni;
    json_int_t timeout;
};

/* Check and read a multicast request body into r (job_id borrowed from
 * body): 0, or -1 with EINVAL (ENOMEM) and errp saying what is wrong.
 */
int fmsim_wire_mcast_parse(json_t *body,
                           struct fmsim_mcast_req *r,
                           vnib_error_t *errp);

#endif /* !FMSIM_WIRE_H */
