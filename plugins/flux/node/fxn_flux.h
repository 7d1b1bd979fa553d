/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fxn_flux: what vnib-flux-node asks of Flux, through libflux-core (no
 * `flux` command, no shell): this broker's hostname (the node's name in R
 * and in the broker's reservations), the job's eventlog until its
 * vnibroker event (fxn_job.h), and, only when that event cannot size the
 * services, this rank's cores from the job's R.
 *
 * The connection is the local broker's (FLUX_URI, which the prolog and
 * housekeeping inherit from it); reading a guest's job needs the instance
 * owner's role, which a system instance gives root with [access]
 * allow-root-owner = true.
 */
#ifndef FXN_FLUX_H
#define FXN_FLUX_H

#include <stddef.h>

#include <flux/core.h>

#include "vnib/error.h"
#include "plugins/flux/node/fxn_job.h"

/* Connect to the local broker.  NULL with errno and errp. */
flux_t *fxn_flux_open(vnib_error_t *errp);

/* This broker's "hostname" attribute into buf.  Returns 0, or -1 with
 * errno and errp. */
int fxn_flux_hostname(flux_t *h, char *buf, size_t size, vnib_error_t *errp);

/* A watch of a job's eventlog, from this broker's TBON parent (rank 0's
 * own job-info on rank 0): an event reaches the parent's job-info before
 * this broker's, whose KVS learns of it from the parent, and the parents
 * share the watches of a job's nodes as the TBON shares everything else,
 * each serving its own children.
 */
struct fxn_flux_watch;

/* Start watching job id's eventlog (the request is sent; nothing is
 * awaited).  NULL with errno and errp. */
struct fxn_flux_watch *fxn_flux_watch_start(flux_t *h,
                                            flux_jobid_t id,
                                            vnib_error_t *errp);

/* Read the eventlog into j until fxn_job_feed says the wait is over (the
 * vnibroker event, a fatal exception, the job's end), for at most
 * timeout_ms (0: no limit but the caller's, the prolog's own timeout).
 * Returns 0, or -1 with errno (ETIMEDOUT when the time ran out) and errp.
 */
int fxn_flux_watch_wait(struct fxn_flux_watch *w,
                        long timeout_ms,
                        struct fxn_job *j,
                        vnib_error_t *errp);

/* End the watch where it runs, and free it (NULL accepted). */
void fxn_flux_watch_destroy(struct fxn_flux_watch *w);

/* The cores this broker's rank has in job id's R (job-info.lookup), or
 * -1 with errno and errp. */
long fxn_flux_rank_cores(flux_t *h, flux_jobid_t id, vnib_error_t *errp);

#endif /* !FXN_FLUX_H */
