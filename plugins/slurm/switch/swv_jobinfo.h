/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_jobinfo: what switch/vnib carries with a step, and its wire form.
 *
 * Slurm packs a step's switch "jobinfo" into the launch credential, the
 * step state file and several RPCs (22.05's srun forwards it in the
 * launch request).  switch/vnib carries who the step is, which broker
 * reservations it holds and, when the broker issued one, the step's
 * lease: the reservation as the step's nodes need it, signed by the
 * broker (include/vnib/lease.h, docs/node-path.md), with which each node
 * starts the step with no broker request.  Never tokens: nothing in a
 * lease is secret, and a node takes only what verifies with the broker's
 * key and names this job, step, owner and node (so a tampered launch
 * request cannot hand a step someone else's VNIs: CVE-2024-42511 cannot
 * arise).
 *
 * Three wire forms, all version-tagged: version 1, 36 bytes, without a
 * lease (what a step without one still packs, so that a node whose
 * plugin predates leases reads it), and version 2, the same fields then
 * the lease; version 3, only for a step with NIC limits set (HPE's
 * def_/res_/max_<rsrc> and depth, from SwitchParameters or --network,
 * which the node's agent applies), the same fields, the limits, then
 * the lease or none.  Decoding accepts exactly those and nothing else,
 * so garbage is refused, never trusted (tests/fuzz/fuzz_switch.c).
 */
#ifndef SWV_JOBINFO_H
#define SWV_JOBINFO_H

#include <stddef.h>
#include <stdint.h>

#include "swv_opts.h"
#include "vnib/error.h"

#define SWV_JOBINFO_MAGIC 0x564e4942u /* "VNIB" */
#define SWV_JOBINFO_VERSION 1u        /* without a lease */
#define SWV_JOBINFO_VERSION_LEASE 2u  /* with one */
#define SWV_JOBINFO_VERSION_LIMITS 3u /* with limits, and a lease or not */
#define SWV_JOBINFO_WIRE 36           /* bytes of version 1 */
#define SWV_JOBINFO_WIRE_LEASE 40     /* bytes of version 2 before the lease */
/* bytes of version 3 before the lease: the limits, 25 u32 (0xffffffff
 * unset), then the lease's length (0: none) */
#define SWV_JOBINFO_WIRE_LIMITS (36 + 4 * (3 * SWV_RSRC_COUNT + 1) + 4)
/* The longest lease carried: LEASE_MAX_LEN (vnib/lease.h). */
#define SWV_JOBINFO_LEASE_MAX (256u * 1024)
/* The most bytes an encoded jobinfo takes. */
#define SWV_JOBINFO_WIRE_MAX (SWV_JOBINFO_WIRE_LIMITS + SWV_JOBINFO_LEASE_MAX)

/* flags */
#define SWV_JOBINFO_BUILT 0x1u      /* the controller reserved for it */
#define SWV_JOBINFO_UNISOLATED 0x2u /* broker down, vnib_outage=open */
/* its own VNIs could not be had: it runs on its job's alone */
#define SWV_JOBINFO_FALLBACK 0x4u
#define SWV_JOBINFO_LIMITS 0x8u /* limits holds the step's NIC limits */

struct swv_jobinfo {
    uint32_t flags;
    uint32_t job_id;
    uint32_t step_id;
    int64_t job_resv;         /* the broker's reservation id of the job */
    int64_t step_resv;        /* ... and of the step */
    char *lease;              /* the step's lease (malloc'd), or NULL */
    struct swv_limits limits; /* with SWV_JOBINFO_LIMITS */
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

/* The bytes swv_jobinfo_encode writes for info. */
size_t swv_jobinfo_wire_size(const struct swv_jobinfo *info);

/* Encode info into out (swv_jobinfo_wire_size bytes, big-endian fields):
 * version 3 with SWV_JOBINFO_LIMITS, else version 1 without a lease and
 * version 2 with one. */
void swv_jobinfo_encode(const struct swv_jobinfo *info, uint8_t *out);

/* Decode len bytes at buf into info (its lease a new string, for
 * swv_jobinfo_clear).  Returns 0, or -1 with errno EINVAL (ENOMEM) and
 * errp saying why: wrong size, magic or version, unknown flags, negative
 * reservation ids, a built step without ids, a lease on a step that is
 * not reserved, longer than SWV_JOBINFO_LEASE_MAX, not starting "vnib1."
 * or with a byte outside base64url and ".", limits out of their range or
 * on a step that is not reserved.  info holds nothing then.
 */
int swv_jobinfo_decode(const uint8_t *buf,
                       size_t len,
                       struct swv_jobinfo *info,
                       vnib_error_t *errp);

/* Copy src into dst (the lease duplicated).  0, or -1 with errno ENOMEM
 * (dst then has no lease). */
int swv_jobinfo_copy(struct swv_jobinfo *dst, const struct swv_jobinfo *src);

/* Free info's lease. */
void swv_jobinfo_clear(struct swv_jobinfo *info);

/* The step's name at the broker: the step number, "batch" and the
 * like never reach a switch plugin. */
void swv_jobinfo_ids(const struct swv_jobinfo *info,
                     char job[16],
                     char step[16]);

#endif /* !SWV_JOBINFO_H */
