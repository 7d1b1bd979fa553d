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

/* What travels with a JOB (Slurm 24.05 and later pack a job-level blob
 * into slurmctld's state and the job record sent to the stepmgr): for a
 * job with enable_stepmgr, the reservation slurmctld made at job start
 * and the job token the broker issued for it, with which the stepmgr
 * (a root slurmstepd on the batch host) creates and releases the job's
 * steps.  Empty (job_resv 0, no token) for every other job.
 *
 * Layout (big-endian): magic u32 "VNBJ", version u32, job reservation
 * i64, token length u16, the token's bytes (printable ASCII, no NUL).
 */
#define SWV_JOBDATA_MAGIC 0x564e424au /* "VNBJ" */
#define SWV_JOBDATA_VERSION 1u
#define SWV_JOBDATA_TOKEN_MAX 384 /* bytes, with the NUL */
#define SWV_JOBDATA_WIRE_MAX (18 + SWV_JOBDATA_TOKEN_MAX - 1)

struct swv_jobdata {
    int64_t job_resv;
    char token[SWV_JOBDATA_TOKEN_MAX]; /* "" when none; a secret */
};

/* Encode jd into out (at least SWV_JOBDATA_WIRE_MAX bytes); returns the
 * length. */
size_t swv_jobdata_encode(const struct swv_jobdata *jd, uint8_t *out);

/* Decode exactly len bytes at buf.  0, or -1 with errno EINVAL and errp
 * (wrong size, magic or version, negative id, a token too long or with
 * a byte outside printable ASCII, a token without a reservation). */
int swv_jobdata_decode(const uint8_t *buf,
                       size_t len,
                       struct swv_jobdata *jd,
                       vnib_error_t *errp);

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
