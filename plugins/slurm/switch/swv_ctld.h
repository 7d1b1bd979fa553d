/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_ctld: switch/vnib's controller side, the broker calls of slurmctld.
 *
 * When slurmctld creates a step (switch_p_build_jobinfo) the plugin
 * reserves the job at the broker, when it has not yet in this slurmctld
 * (idempotent: the job's first step makes the reservation, a later one
 * finds it), and then the step (every step gets a step reservation, with
 * its own VNIs or none, so that its node services are tracked), with its
 * lease.  That is on slurmctld's job lock, so it is as short as it can be:
 * one request per step once the job is reserved, on a connection kept
 * open from step to step.  The releases are not: when a step record ends
 * (switch_p_job_step_complete) and when the job ends (switch_p_job_
 * complete, from slurmctld's deallocate_nodes) the release is written to
 * the outbox (swv_outbox.h) and a thread sends it.  A job release the
 * broker refuses is spooled in the hook's format (one file per job in the
 * release spool) for `vnib-slurm-hook reconcile`, never dropped.
 *
 * In a job's stepmgr (a slurmstepd, Slurm 24.05+) the same calls reserve
 * and release the job's steps with the job's token, one request each, at
 * once.
 *
 * These functions know nothing of Slurm's structures: the plugin's
 * Slurm-facing files (swv_plugin.c) pass plain strings.
 */
#ifndef SWV_CTLD_H
#define SWV_CTLD_H

#include <stdint.h>

#include "swv_jobinfo.h"
#include "swv_opts.h"
#include "vnib/error.h"

/* Who a step is, as slurmctld knows it. */
struct swv_step_req {
    const char *job_id;
    const char *step_id;
    uint32_t uid;
    const char *user;       /* may be NULL: looked up from uid */
    const char *job_nodes;  /* the job's hostlist */
    const char *step_nodes; /* the step's hostlist */
    const char *job_token;  /* the stepmgr: the job's token, else NULL */
    long long job_resv;     /* ... and the job's reservation */
};

/* What came of a step's reservation. */
struct swv_step_resv {
    long long job_resv; /* the broker's ids; 0 when unisolated */
    long long step_resv;
    int unisolated;     /* broker down and vnib_outage=open */
    char *lease;        /* the step's lease (malloc'd), NULL without */
    int lease_disabled; /* the broker answered 400 lease_disabled */
    double job_ms;      /* how long the job's reserve took; -1 none made */
    double step_ms;     /* ... and the step's */
    int fallback;       /* the step's own VNIs could not be had: it was
                           reserved without them, on its job's alone (errp
                           says the broker's refusal) */
    int exhausted;      /* on -1 with EAGAIN: 1 the job's VNIs could not be
                           had, 2 the step's own (its job holds none, or
                           its step_fallback is wait or fail) */
};

/* slurmctld starts: keep a copy of cfg, start the outbox in
 * cfg->spool/outbox (sending what a previous slurmctld left there).  0,
 * or -1 with errp: releases are then made at once, as in the stepmgr. */
int swv_ctld_start(const struct swv_config *cfg,
                   swv_log_fn *log,
                   vnib_error_t *errp);

/* slurmctld stops: the outbox's thread ends after the release it is
 * sending; the rest waits in the folder. */
void swv_ctld_stop(void);

/* Reserve the job (POST /v1/reservations) and the step (PUT /v1/
 * reservations/JOB/steps/STEP, with "lease": true unless cfg->lease is
 * off).  Returns 0 (out filled; unisolated when the broker could not be
 * reached and cfg->outage is open: errp then says why), or -1 with errp
 * set and errno: EAGAIN when the VNI pool is exhausted (the step may be
 * retried; out->exhausted says whose VNIs), EHOSTUNREACH when the broker
 * could not be reached (outage fail), EACCES or EINVAL when it refused.
 * A broker that issues no leases (400 lease_disabled) is asked again
 * without one (lease_disabled set), and not asked for one for a minute.
 *
 * A step whose own VNIs (net->step_vnis) the broker refuses for want of
 * them (503 vni_pool_exhausted), under net->step_fallback job, is
 * reserved again without them when its job holds VNIs (this slurmctld's
 * reserve said how many; in the stepmgr the job's --network, or, for the
 * broker's default, the step's answer): 0 with out->fallback set and
 * errp the broker's refusal.  A job that holds none gets -1, EAGAIN.
 */
int swv_ctld_step_begin(const struct swv_config *cfg,
                        const struct swv_step_req *req,
                        const struct swv_network *net,
                        struct swv_step_resv *out,
                        vnib_error_t *errp);

/* With req->job_token set (a step created in the job's stepmgr, Slurm
 * 24.05+), the job is already reserved (req->job_resv) and only the step
 * is, with the job's token instead of slurmctld's.
 */

/* Reserve a job at its start (enable_stepmgr jobs: the stepmgr creates
 * their steps and must not hold slurmctld's token): out receives the
 * reservation and the job token the broker issued.  0 (unisolatedp set
 * and out empty when the broker is unreachable under vnib_outage=open),
 * or -1 with errno and errp as swv_ctld_step_begin.
 */
int swv_ctld_job_begin(const struct swv_config *cfg,
                       const struct swv_step_req *req,
                       const struct swv_network *net,
                       struct swv_jobdata *out,
                       int *unisolatedp,
                       vnib_error_t *errp);

/* Release a step (DELETE /v1/reservations/JOB/steps/STEP): in slurmctld
 * (job_token NULL) queued in the outbox, else (the stepmgr, with the job's
 * token, or slurmctld without its outbox) at once.  1 when queued, 0 when
 * the broker took it (or knows no such step), -1 with errp otherwise: the
 * job's release releases it anyway.
 */
int swv_ctld_step_end(const struct swv_config *cfg,
                      const char *job_token,
                      const char *job_id,
                      const char *step_id,
                      vnib_error_t *errp);

/* Release a job (DELETE /v1/reservations/JOB, naming the reservation
 * this slurmctld made for it when it knows it): queued in the outbox.
 * Without one (its folder unusable), at once: 0 when the broker took it
 * or knows no such job, 1 when it did not and the release was spooled
 * for the reconcile (errp says why), -1 when it could not even be
 * spooled.
 */
int swv_ctld_job_end(const struct swv_config *cfg,
                     const char *job_id,
                     vnib_error_t *errp);

/* The pool's free VNIs and the broker's default per job (GET /v1/pool),
 * for slurmctld's free count.  0, or -1 with errno and errp.
 */
int swv_ctld_pool_free(const struct swv_config *cfg,
                       long *freep,
                       long *per_job_defaultp,
                       vnib_error_t *errp);

/* Write a spool record for job (digits only) in dir, as the hook does:
 * "job J\nfailed_at T\nerror E\n" in a temporary file, fsynced, renamed
 * to dir/J, the directory fsynced.  Makes dir (0700) when missing and
 * refuses one that others may write.  0 or -1 with errno and errp.
 */
int swv_ctld_spool(const char *dir,
                   const char *job_id,
                   const char *error,
                   vnib_error_t *errp);

#endif /* !SWV_CTLD_H */
