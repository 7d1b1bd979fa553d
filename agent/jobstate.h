/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the agent keeps on the node about each job, in STATE_DIR/jobs/.
 *
 *   JOB.json  root-only (0600): the reservation id, owner, VNIs and the
 *             services the prolog made.  Epilog and `clean --all` use it
 *             when the broker cannot tell them (the reservation was purged,
 *             or the report of a destroy did not get through), so a
 *             service is never forgotten.
 *   JOB.env   the job environment in Slurm's TaskProlog format, owned by
 *             the job's user and readable by it only (0400): the task hooks
 *             (the SPANK plugin as root, or a TaskProlog as the user) read
 *             it, so the user side never needs the node's token.
 *   JOB+STEP.json, JOB+STEP.env
 *             the same for one step of a job (`--step`, and the switch
 *             plugin).  '+' is in no job or step id, so a key names one
 *             job or one step, never both.  Steps of one job running at
 *             once each have their own files; JOB.lock (jobstate_lock)
 *             serialises what they decide together: a service shared by
 *             steps without VNIs of their own.
 *
 * The directory is root's (0711: nobody can list which jobs run here).
 * Files are written to a temporary name and renamed, so a reader never
 * sees half a file.  They are not fsynced: STATE_DIR belongs on tmpfs
 * (/run), because what it describes, services on the NICs, does not
 * survive a reboot either; after one, `clean --all` asks the broker.
 *
 * The report spool, SPOOL_DIR (on disk, root's, 0700), keeps the job-end
 * reports the broker could not take (it was down or failing over), one
 * file per job (or step) and reservation, RES_KEY.json, until `vnib-agent
 * flush` or the agent's next run sends them.  These are fsynced: a "destroyed"
 * report that a reboot lost would keep the job's VNIs quarantined.
 */
#ifndef VNIB_AGENT_JOBSTATE_H
#define VNIB_AGENT_JOBSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "agent/jobenv.h"
#include "vnib/error.h"

struct vnib_report;

/* A job id usable as a file name: 1-128 of [A-Za-z0-9._-], not starting
 * with '.'.
 */
bool jobstate_job_id_valid(const char *job_id);

/* A step id: the same characters as a job id (Slurm's are a number, or
 * "batch", "extern", "interactive"). */
bool jobstate_step_id_valid(const char *step_id);

/* The key of a job (step NULL: "JOB") or of one of its steps
 * ("JOB+STEP") into buf, for the functions below that take a job_id.
 * Returns 0, or -1 with errno EINVAL (an invalid id) or ENAMETOOLONG.
 */
int jobstate_key(char *buf,
                 size_t size,
                 const char *job_id,
                 const char *step_id,
                 vnib_error_t *errp);

/* The size of a buffer that holds any key. */
#define JOBSTATE_KEY_MAX 260

int jobstate_save(const char *dir,
                  const char *job_id,
                  json_t *record,
                  vnib_error_t *errp);

/* The record, or NULL with errno ENOENT when there is none. */
json_t *jobstate_load(const char *dir, const char *job_id, vnib_error_t *errp);

/* Write JOB.env for uid. */
int jobstate_write_env(const char *dir,
                       const char *job_id,
                       uid_t uid,
                       const struct jobenv *env,
                       vnib_error_t *errp);

/* Read JOB.env, refusing a file that is not a regular file owned by root
 * or by the caller, or that others may write.  ENOENT when absent.
 */
int jobstate_read_env(const char *dir,
                      const char *job_id,
                      struct jobenv *env,
                      vnib_error_t *errp);

/* Remove JOB.env, and when record JOB.json (and a job's JOB.lock); absent
 * files are fine.  job_id may be a key (jobstate_key). */
void jobstate_remove(const char *dir, const char *job_id, bool record);

/* The keys that have a record, as a JSON array of strings. */
json_t *jobstate_list(const char *dir, vnib_error_t *errp);

/* The ids of the steps of job_id that have a record, as a JSON array of
 * strings (empty when none). */
json_t *jobstate_steps(const char *dir, const char *job_id, vnib_error_t *errp);

/* Take STATE_DIR/jobs/JOB.lock (flock, exclusive; made when missing) and
 * return its descriptor for jobstate_unlock, or -1 with errno and errp.
 * Waits while another process of the same job holds it.
 */
int jobstate_lock(const char *dir, const char *job_id, vnib_error_t *errp);
void jobstate_unlock(int fd);

/* Spool a report (an object with job_id, reservation_id, node, cxi and
 * optionally step_id, services and message), replacing an earlier one of
 * the same job (or step) and reservation.  Makes SPOOL_DIR when missing;
 * refuses (EPERM) one that is not the caller's or that others may write.
 */
int jobstate_spool_put(const char *spool_dir,
                       json_t *report,
                       vnib_error_t *errp);

/* Spool report r (a node's report, vnib/client.h), with why it was not
 * sent as its "error": the one way a report becomes a spool entry, as
 * jobstate_spool_put.  0, or -1 with errno and errp. */
int jobstate_spool_report(const char *spool_dir,
                          const struct vnib_report *r,
                          const char *why,
                          vnib_error_t *errp);

/* Whether a report the broker answered with status (-1: no answer) is
 * worth spooling to send again: no answer, an overloaded or failing
 * broker, or credentials it refused (fixable on the node, and the report
 * is still true then).  Any other answer is final. */
bool jobstate_spool_worth(int status);

/* The spooled reports, oldest reservation first; an empty array when
 * SPOOL_DIR does not exist.  A file that is unreadable, malformed or not
 * safely owned is skipped, its problem appended to bad (when not NULL).
 */
json_t *jobstate_spool_list(const char *spool_dir,
                            json_t *bad,
                            vnib_error_t *errp);

/* Remove the spooled report of a key (jobstate_key) and reservation, if
 * any. */
void jobstate_spool_remove(const char *spool_dir,
                           const char *job_id,
                           long long res_id);

/* The reservations a lease started here that have ended on this node:
 * SPOOL_DIR/RES.ended holds until when (Unix seconds) a lease of
 * reservation RES could still be presented, and a lease prolog refuses
 * a reservation that has one, so that a lease replayed after the node
 * reported its services destroyed makes none again (their VNIs may be
 * cooling, and a service made then would outlive the quarantine).  Not
 * fsynced: a tombstone lost in a crash leaves only the lease's own
 * expiry, and the broker's cool-down, in the way.
 *
 * jobstate_ended_put records one (making SPOOL_DIR when missing);
 * jobstate_ended_check says whether RES has one still in force at now
 * (1) or not (0; -1 with errp for an id that cannot name a file);
 * jobstate_ended_prune removes those whose time has passed and returns
 * how many.
 */
int jobstate_ended_put(const char *spool_dir,
                       long long res_id,
                       long long until,
                       vnib_error_t *errp);
int jobstate_ended_check(const char *spool_dir,
                         long long res_id,
                         long long now,
                         vnib_error_t *errp);
int jobstate_ended_prune(const char *spool_dir, long long now);

#endif /* !VNIB_AGENT_JOBSTATE_H */
