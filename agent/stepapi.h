/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One job step's CXI services, as an in-process API for the Slurm switch
 * plugin (plugins/slurm/switch/, loaded into slurmstepd).
 *
 * These are `vnib-agent prolog --step` and `epilog --step` (see
 * agent/commands.h), run in the caller's process: the step's reservation
 * comes from the broker with the node's own token, or from a lease the
 * broker signed (vnib_step_setup_lease), never from anything else the
 * job's credential carries; the step's services hold the step's VNIs, then the
 * job's; the record is the step's own (STATE_DIR/jobs/JOB+STEP.json), so steps
 * of one job may run at once in separate processes; reports go to the
 * step's route, or into the spool at step end.
 *
 * Nothing here exits, writes to stdout, or keeps state between calls:
 * each call reads agent_config (NULL: /etc/vnibroker/agent.toml), opens the
 * broker and the NICs, and closes them again.  Warnings go to stderr, each
 * line "vnib-agent: ...".  One call at a time per process.
 *
 * Failures return -1 with errp and errno:
 *   EHOSTUNREACH  the broker could not be reached before the deadline (the
 *                 plugin's outage policy decides); at teardown only when
 *                 the report could not be spooled either
 *   ENOENT        no reservation for the step (the broker said 404)
 *   EACCES        the broker refused (any other 4xx or 5xx answer), or
 *                 the lease was refused
 *   EINVAL        bad arguments, a malformed lease, or agent.toml, the
 *                 node token or a lease key file is unusable
 *   ENOSPC        a NIC cannot hold the step's service (no free TLE or
 *                 LE pool, or a res_ limit it cannot give): the step fails
 *                 alone; nothing of it is left on the node, which told the
 *                 broker so ("destroyed"), and no drain is called for
 *   EIO           the NICs: a CXI operation failed (drain the node)
 */
#ifndef VNIB_AGENT_STEPAPI_H
#define VNIB_AGENT_STEPAPI_H

#include "vnib/error.h"

struct cmd_ctx;

/* Set up the step: fetch its reservation, create one service per NIC (or
 * reuse the one a previous call made), record it, report "created".  uid
 * (-1: the reservation's) must match the reservation's owner; ncores (0:
 * Slurm's environment or the CPU count) sizes the services, with the
 * site's and the user's def_/res_/max_/depth in limits (NULL: HPE's table;
 * agent/limits.h).  On success
 * *envp is the task environment: a NULL-terminated array of "NAME=value"
 * (SLINGSHOT_VNIS, _DEVICES, _SVC_IDS, _TCS and, when the job has
 * hardware collectives, FI_CXI_COLL_* and FI_CXI_HWCOLL_*, with
 * FI_CXI_COLL_JOB_STEP_ID = step), for vnib_step_env_free.  A step with no
 * VNIs gets no service and an empty array.  The caller should unset
 * every other name of vnib_step_env_name in the tasks, so nothing leaks
 * from the submitting shell.
 */
struct limits_want;

int vnib_step_setup(const char *agent_config,
                    const char *job,
                    const char *step,
                    long uid,
                    long ncores,
                    const struct limits_want *limits,
                    char ***envp,
                    vnib_error_t *errp);

/* vnib_step_setup from a lease (the text "vnib1...." the broker signed,
 * carried by the step's launch) instead of the broker's reservation: the
 * lease must verify with a key of lease.public_keys (agent.toml) within
 * lease.max_skew_s, and name this job, this step, owner uid (required:
 * the scheduler's, never the job's environment) and this node, for an
 * active reservation.  Then the services, the record and the environment
 * are made as vnib_step_setup makes them, with no broker request and no
 * report, except for a lease saying "hwcoll_fetch": the hardware
 * collectives' variables are then fetched from the broker, and when that
 * fails the step starts without them (a warning, not a failure).
 * Failures are as vnib_step_setup's, and: EACCES for a lease refused
 * (expired, bad signature, unknown key, another job, step, owner or node,
 * a reservation not active), EINVAL for a malformed lease, a missing uid,
 * or a key file that cannot be read (the message names it).
 */
int vnib_step_setup_lease(const char *agent_config,
                          const char *job,
                          const char *step,
                          long uid,
                          long ncores,
                          const struct limits_want *limits,
                          const char *lease,
                          char ***envp,
                          vnib_error_t *errp);

/* Tear the step down: destroy its services (retrying busy ones for
 * retry_busy_ms; -1: nic.epilog_retry_busy_ms), report "destroyed" (or
 * "failed" naming what is left, which the job's epilog or housekeeping
 * retries), or spool the report when the broker cannot take it (that is
 * success).  A step without a record and unknown to the broker has
 * nothing to tear down: 0.
 */
int vnib_step_teardown(const char *agent_config,
                       const char *job,
                       const char *step,
                       long retry_busy_ms,
                       vnib_error_t *errp);

void vnib_step_env_free(char **env);

/* The names the agent manages (i = 0, 1, ...; NULL past the last). */
const char *vnib_step_env_name(int i);

/* The same two calls on a context the caller prepared (its cfg and, when
 * set, its broker and NIC backend are used; see agent/commands.h) with the
 * command's options (o->job and o->step are required; setup reads uid,
 * ncores and lease, teardown retry_ms), for tests and for callers that keep
 * their own context.  The context is not finished (cmd_ctx_fini is the
 * caller's).
 */
struct cmd_opts;
int vnib_step_setup_opts(struct cmd_ctx *a,
                         const struct cmd_opts *o,
                         char ***envp,
                         vnib_error_t *errp);
int vnib_step_teardown_opts(struct cmd_ctx *a,
                            const struct cmd_opts *o,
                            vnib_error_t *errp);

#endif /* !VNIB_AGENT_STEPAPI_H */
