/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's model of the Fabric Manager: jobs, multicast trees, tokens.
 *
 * The state is what the FM collectives API exposes (see the reference
 * notes, section 2): jobs keyed by jobID, each with an mcastLimit, an
 * opaque sessionToken and the multicast trees of its steps; a fabric-wide
 * pool of multicast addresses (mcastID 0..8191, of which --total-addrs may
 * be in use at once); and the OAuth access tokens issued to WLM clients.
 *
 * Every function takes the state's lock, so the HTTP threads may call them
 * concurrently.  Replies are built under the lock and returned as new
 * jansson values the caller owns.  Failures return NULL or -1 with errno
 * set for the HTTP layer to map to a status (EINVAL 400, EACCES 401,
 * ENOENT 404, EEXIST 409, ENOSPC 507) and a message in errp; a 507
 * message starts with the FM's two-digit code ("01:", "02:", "03:").
 *
 * With a state file, jobs and trees are loaded at creation and saved
 * atomically after every change, so a restarted simulator remembers the
 * reservations as the real FM does.  Access tokens are not saved.
 */
#ifndef FMSIM_STATE_H
#define FMSIM_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"
#include "vnib/logger.h"

/* Multicast ids are below this (libfabric requires mcastID < 8192). */
#define FMSIM_MCAST_IDS 8192

/* Usable multicast addresses of a fabric by HPE's sizing rule. */
#define FMSIM_TOTAL_ADDRS_DEFAULT 4086

/* Bounds on what clients may create. */
#define FMSIM_JOB_ID_MAX 256   /* characters in a jobID or jobStepID */
#define FMSIM_JOBS_MAX 100000  /* jobs held at once */
#define FMSIM_MACS_MAX 65536   /* entries in one tree's "macs" */
#define FMSIM_ACCESS_MAX 10000 /* live OAuth tokens kept */

struct fmsim_state;

/* Create the state with total_addrs (1..FMSIM_MCAST_IDS) fabric addresses.
 * With path, load it when it exists (it must be mode 0600: it holds the
 * session tokens) and save there after each change.  log may be NULL.
 */
struct fmsim_state *fmsim_state_create(int total_addrs,
                                       const char *path,
                                       struct logger *log,
                                       vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free the state (NULL accepted). */
void fmsim_state_destroy(struct fmsim_state *s);

/* The job object as GET serves it, with documentSelfLink (ENOENT). */
json_t *fmsim_state_job_get(struct fmsim_state *s,
                            const char *job_id,
                            vnib_error_t *errp);

/* Create a job with a new random sessionToken; returns the job object.
 * EINVAL (bad id or limit), EEXIST, ENOSPC (FMSIM_JOBS_MAX jobs).
 */
json_t *fmsim_state_job_create(struct fmsim_state *s,
                               const char *job_id,
                               json_int_t mcast_limit,
                               vnib_error_t *errp);

/* Apply a PATCH body's "jobSteps" object: each "<step>": null frees that
 * step's trees.  Returns the job object after the change (ENOENT, EINVAL
 * when a value is not null).
 */
json_t *fmsim_state_job_patch(struct fmsim_state *s,
                              const char *job_id,
                              json_t *steps,
                              vnib_error_t *errp);

/* Delete a job and free all its trees (ENOENT). */
int fmsim_state_job_delete(struct fmsim_state *s,
                           const char *job_id,
                           vnib_error_t *errp);

/* {"documentLinks": ["/fabric/collectives/jobs/<id>", ...]} */
json_t *fmsim_state_job_list(struct fmsim_state *s);

/* Fault: drop a job without freeing its trees, which stay allocated as
 * orphans, like a reservation the FM lost track of (ENOENT).
 */
int fmsim_state_job_forget(struct fmsim_state *s,
                           const char *job_id,
                           vnib_error_t *errp);

/* Create a multicast tree for the job whose sessionToken is token, from a
 * POST /fabric/collectives/multicasts body.  Returns {"mcastID", "hwRoot",
 * "message"}.  EACCES (unknown token), EINVAL (bad body, empty or
 * duplicate macs, jobID not the token's job), ENOSPC ("01:" job limit,
 * "02:" fabric addresses, "03:" no free hwRoot among the macs).
 */
json_t *fmsim_state_mcast_create(struct fmsim_state *s,
                                 const char *token,
                                 json_t *body,
                                 vnib_error_t *errp);

/* Free tree mcast_id of the token's job (EACCES, ENOENT). */
int fmsim_state_mcast_delete(struct fmsim_state *s,
                             const char *token,
                             long mcast_id,
                             vnib_error_t *errp);

/* True when token is some job's sessionToken. */
bool fmsim_state_session_valid(struct fmsim_state *s, const char *token);

/* Issue an OAuth access token valid ttl_s seconds into buf (at least
 * TOKEN_SIZE bytes).  Returns 0 or -1.
 */
int fmsim_state_access_issue(struct fmsim_state *s,
                             long ttl_s,
                             char *buf,
                             size_t size,
                             vnib_error_t *errp);

/* True when token was issued and has not expired. */
bool fmsim_state_access_valid(struct fmsim_state *s, const char *token);

/* Fault: expire every issued access token now. */
void fmsim_state_access_expire(struct fmsim_state *s);

/* Everything, for the admin API: {"jobs": {jobID: job object, token
 * included}, "trees": [{"mcastID", "jobID", "jobStepID", "hwRoot", "vni",
 * "timeout", "macs" (a count), "orphan"}], "addrs": {"total", "used",
 * "ids"}, "oauth_tokens": live access tokens}.
 */
json_t *fmsim_state_dump(struct fmsim_state *s);

#endif /* !FMSIM_STATE_H */
