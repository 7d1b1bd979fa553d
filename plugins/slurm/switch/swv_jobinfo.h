/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_jobinfo: what switch/vnib carries with a step, and its wire form.
 *
 * Slurm packs a step's switch "jobinfo" into the launch credential, the
 * step state file and several RPCs.  switch/vnib carries only who the
 * step is and which broker reservations it holds: never VNIs, services
 * or tokens (the nodes fetch those from the broker with their own token,
 * so a tampered launch request cannot hand a step someone else's VNIs:
 * CVE-2024-42511 cannot arise).  The wire form is fixed-size and
 * version-tagged; decoding accepts exactly that and nothing else, so
 * garbage is refused, never trusted (tests/fuzz/fuzz_switch.c).
 */
#ifndef SWV_JOBINFO_H
#define SWV_JOBINFO_H

#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"

#define SWV_JOBINFO_MAGIC 0x564e4942u /* "VNIB" */
#define SWV_JOBINFO_VERSION 1u
#define SWV_JOBINFO_WIRE 36 /* bytes of the encoded form */

/* flags */
#define SWV_JOBINFO_BUILT 0x1u      /* the controller reserved for it */
#define SWV_JOBINFO_UNISOLATED 0x2u /* broker down, vnib_outage=open */

struct swv_jobinfo {
    uint32_t flags;
    uint32_t job_id;
    uint32_t step_id;
    int64_t job_resv;  /* the broker's reservation id of the job */
    int64_t step_resv; /* ... and of the step */
};

/* Encode info into out (SWV_JOBINFO_WIRE bytes, big-endian fields). */
void swv_jobinfo_encode(const struct swv_jobinfo *info,
                        uint8_t out[SWV_JOBINFO_WIRE]);

/* Decode len bytes at buf.  Returns 0, or -1 with errno EINVAL and errp
 * saying why (wrong size, magic or version, unknown flags, negative
 * reservation ids, a built step without ids).
 */
int swv_jobinfo_decode(const uint8_t *buf,
                       size_t len,
                       struct swv_jobinfo *info,
                       vnib_error_t *errp);

/* The step's name at the broker: the step number, "batch" and the
 * like never reach a switch plugin. */
void swv_jobinfo_ids(const struct swv_jobinfo *info,
                     char job[16],
                     char step[16]);

#endif /* !SWV_JOBINFO_H */
