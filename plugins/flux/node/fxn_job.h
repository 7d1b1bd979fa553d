/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fxn_job: what vnib-flux-node takes of a Flux job, from the entries of
 * the job's eventlog and from its R, as plain JSON (fxn_flux.h reads
 * them through the Flux API).
 *
 * The eventlog is read once, from its start, until the vnibroker event
 * that the jobtap plugin (vnib-jobtap.so) posts when the broker answered:
 * on the way the submit event gives the job's owner as Flux recorded it
 * at submission (the uid the node side checks the lease against, never
 * one the vnibroker event names).  A fatal exception, or the job's end,
 * before that event ends the wait: the job will not start.
 *
 * What the node side trusts of the vnibroker event (only the instance
 * owner posts job events) is the job id, whether the job has VNIs, and
 * the lease, which the agent verifies with the broker's public keys
 * before it takes anything of it; ncores only sizes the services.
 *
 * Plain C and jansson: no Flux.
 */
#ifndef FXN_JOB_H
#define FXN_JOB_H

#include <stdbool.h>

#include <jansson.h>

#include "vnib/error.h"

/* The event the jobtap plugin posts. */
#define FXN_EVENT "vnibroker"

/* A job's eventlog as far as it was read. */
struct fxn_job {
    long long uid; /* the submit event's userid; -1 until seen */
    json_t *event; /* the vnibroker event's context, once seen (owned) */
    bool ended;    /* a fatal exception or the job's end came first */
    char why[200]; /* what ended it */
};

void fxn_job_init(struct fxn_job *j);
void fxn_job_clear(struct fxn_job *j);

/* Take one eventlog entry (RFC 18: a JSON object with "name" and
 * "context").  Returns 1 when the wait is over (j->event or j->ended set),
 * 0 to read on, -1 for an entry that is not an eventlog entry (errp).
 */
int fxn_job_feed(struct fxn_job *j, const char *entry, vnib_error_t *errp);

/* The vnibroker event's context, as the node side takes it.  Strings are
 * borrowed from the context. */
struct fxn_event {
    const char *job_id; /* the broker's job id: the decimal Flux id */
    bool has_vnis;      /* "vnis" is not empty */
    const char *lease;  /* "lease", or NULL (a broker without leases) */
    long ncores;        /* "ncores", or 0 when the nodes differ */
    const char *why;    /* "error" or "empty-reason", or NULL */
};

/* Read the context into *e.  Returns 0, or -1 with errno EINVAL and errp
 * for a context the plugin never posts (no job_id, vnis not an array, a
 * lease that is not a string). */
int fxn_event_parse(json_t *context, struct fxn_event *e, vnib_error_t *errp);

/* The cores rank has in a job's R (version 1: execution.R_lite), or -1
 * with errno and errp (EINVAL: unreadable; ENOENT: the rank is not in it).
 */
long fxn_R_cores(json_t *R, unsigned rank, vnib_error_t *errp);

#endif /* !FXN_JOB_H */
