/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The node agent's commands, callable in-process.
 *
 * agent/main.c only parses the command line into a struct cmd_ctx and a
 * struct cmd_opts and calls one of the cmd_* commands below; each command
 * returns the agent's exit status.  The commands live in files by group:
 *
 *   cmd_common.c    the context: broker connection, NICs, messages
 *   cmd_job.c       a job's start and its environment: prolog, env
 *   cmd_lease.c     a job's start from a lease (prolog --lease)
 *   cmd_teardown.c  destroying services: epilog, housekeeping, clean
 *   cmd_spool.c     job-end reports the broker could not take, and the
 *                   sweep of reservations that wait on this node: flush
 *   cmd_node.c      the node's NICs: list, sim-init
 *
 * With a step (struct cmd_opts.step, `--step`), prolog, env, epilog and
 * housekeeping act on that step's reservation instead of the job's: its
 * services hold the step's VNIs, then the job's; its record is keyed
 * JOB+STEP (jobstate_key); its reports go to the step's route.  The
 * switch plugin calls them so, in-process, through agent/stepapi.h.
 *
 * Everything a command touches comes through the context, so a unit test
 * can run one with the simulated NIC backend and a stand-in broker (see
 * struct cmd_broker), and read what it printed from its own FILE.
 */
#ifndef VNIB_AGENT_COMMANDS_H
#define VNIB_AGENT_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/error.h"
#include "vnib/token.h"
#include "agent/agentcfg.h"
#include "agent/broker.h"
#include "agent/jobenv.h"
#include "agent/nic.h"

/* Exit statuses, which scheduler hooks rely on:
 *   0  done; also an epilog that left busy services to housekeeping
 *      (with a warning), so the job's resources are not held back
 *   1  failed: a CXI operation failed, the broker refused, or (for
 *      housekeeping and clean) services remain; the scheduler should
 *      drain the node
 *   2  usage or configuration error (bad flag, unreadable token or
 *      config)
 *   3  the broker could not be reached before the deadline (at job end
 *      only when the report could not be spooled either)
 */
enum {
    CMD_DONE = 0,
    CMD_FAILED = 1,
    CMD_USAGE = 2,
    CMD_UNREACHABLE = 3,
};

/* The broker as the commands reach it: the calls of agent/broker.h, with
 * their contracts (HTTP status, or -1 when no answer came before the
 * deadline).  cmd_connect fills it with the HTTP client; a test may set
 * its own beforehand.
 */
struct cmd_broker {
    int (*get)(void *arg,
               const char *path,
               long deadline_ms,
               json_t **replyp,
               vnib_error_t *errp);
    int (*report)(void *arg,
                  const struct vnib_report *r,
                  long deadline_ms,
                  vnib_error_t *errp);
    void *arg;
};

/* What a command runs with.  cmd_ctx_fini frees what it owns. */
struct cmd_ctx {
    struct agentcfg *cfg;      /* owned */
    bool json;                 /* --json */
    bool dry_run;              /* --dry-run */
    FILE *out;                 /* what the command prints (stdout) */
    FILE *err;                 /* errors and warnings (stderr) */
    char node[TOKEN_NODE_MAX]; /* this node; set by cmd_connect */
    struct cmd_broker broker;  /* get NULL: cmd_connect makes the HTTP one */
    struct nic_backend *nb;    /* owned; NULL: opened from cfg */
    struct nic_info *devs;     /* owned, from cmd_open_nics */
    int ndev;
    json_t *warnings;   /* owned; collected for --json output */
    vnib_error_t error; /* the message of the last failure */
    int status;         /* the broker's answer behind the last failure: its HTTP
                         * status, -1 unreachable, 0 none (not the broker's) */
    int errnum;         /* errno of the last failure for stepapi.h, when
                         * status does not say it: EACCES for a lease
                         * refused, EINVAL for a malformed one; 0 none */
    struct jobenv *env_out; /* not owned; when set, prolog leaves the
                             * environment it made here */
    char *token;            /* owned: the node token */
    size_t token_len;
    broker_open_fn *open_broker; /* how cmd_connect opens the broker:
                                  * broker_open, or brokerso_open (the
                                  * vnib-agent program) */
    struct broker_conn conn;     /* owned: what it opened */
};

/* Options of a command. */
struct cmd_opts {
    const char *job;
    const char *step; /* NULL: the job itself */
    long uid;         /* -1: from the broker */
    long ncores;      /* 0: from Slurm or the CPU count */
    long retry_ms;    /* -1: the configured default */
    const char *format;
    bool all;
    bool allow_missing; /* prolog: no reservation is not an error */
    bool report_only;   /* prolog: report "creating", make nothing */
    const char *lease;  /* prolog: the lease to start from (NULL: ask the
                         * broker), as text */
    bool lease_arg;     /* lease is --lease's argument: "-" reads it from
                         * stdin and "@FILE" from FILE */
    long nics;
    const struct limits_want *limits; /* prolog: the site's and user's
                                       * def_/res_/max_/depth (NULL:
                                       * HPE's table; agent/limits.h) */
};

/* The commands, one per `vnib-agent COMMAND`.  Each returns an exit
 * status (CMD_*); on failure the message is in a->error and was written
 * to a->err.
 */
typedef int cmd_fn(struct cmd_ctx *a, const struct cmd_opts *o);
cmd_fn cmd_prolog;       /* --job [--step] [--uid] [--ncores] [--allow-missing]
                            [--report-only] [--lease] */
cmd_fn cmd_epilog;       /* --job [--step] [--retry-busy] */
cmd_fn cmd_housekeeping; /* --job [--step] [--retry-busy] */
cmd_fn cmd_clean;        /* --all [--retry-busy] */
cmd_fn cmd_flush;        /* [--retry-busy] */
cmd_fn cmd_env;          /* --job [--step] [--format] */
cmd_fn cmd_list;
cmd_fn cmd_sim_init; /* --nics */

void cmd_ctx_fini(struct cmd_ctx *a);

/* ---- shared by the commands (cmd_common.c) ------------------------------ */

/* Write "vnib-agent: MESSAGE" to a->err, keep MESSAGE in a->error, and
 * return code. */
int cmd_fail(struct cmd_ctx *a, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write "vnib-agent: warning: MESSAGE" and keep it for --json. */
void cmd_warn(struct cmd_ctx *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Settle this node's name (unless it is set already) from node.name and
 * the node token, without the broker.  Returns an exit status. */
int cmd_identify(struct cmd_ctx *a);

/* Settle this node's name and the broker (unless one is set already):
 * the node token, then the HTTP client (a->open_broker).  Returns an exit
 * status. */
int cmd_connect(struct cmd_ctx *a);

/* s percent-encoded for a URL path (a new string, or NULL with errno). */
char *cmd_escape(const char *s);

/* Open the NIC backend (unless one is set) and list its NICs. */
int cmd_open_nics(struct cmd_ctx *a);

/* The exit status for a broker call that did not succeed (status kept in
 * a->status). */
int cmd_broker_failure(struct cmd_ctx *a,
                       const char *what,
                       int status,
                       vnib_error_t *error);

/* GET /v1/reservations/JOB: the newest reservation of a job; with a step
 * (not NULL), GET /v1/reservations/JOB/steps/STEP, whose "vnis" in
 * *replyp are then the step's followed by the job's ("job_vnis"), as its
 * services hold them.
 */
int cmd_fetch(struct cmd_ctx *a,
              const char *job_id,
              const char *step_id,
              long deadline_ms,
              json_t **replyp,
              vnib_error_t *errp);

/* Turn a step reservation as the broker renders it (*resp, replaced) into
 * the one its services hold: "vnis" the step's VNIs then the job's
 * ("job_vnis"), "step_vnis" the step's own, "step_id" step_id when
 * absent.  Malformed VNIs leave no "vnis", so that cmd_job_from refuses
 * it.  Returns 0, or -1 with errno ENOMEM (*resp is then NULL).
 */
int cmd_step_view(json_t **resp, const char *step_id, vnib_error_t *errp);

/* What messages call a job or step: "42", or "42 step 0", into buf
 * (CMD_WHO_MAX bytes hold any). */
#define CMD_WHO_MAX 300

/* The longest life a broker gives a lease (its lease.ttl_s at most). */
#define CMD_LEASE_TTL_MAX 86400
void cmd_who(const struct cmd_opts *o, char *buf, size_t size);

/* A reservation's VNIs as its services hold them: "vnis", then for a step
 * reservation (one with "step_id") "job_vnis".  A new array, or NULL when
 * either is malformed. */
json_t *cmd_service_vnis(json_t *res);

/* Report this node's state of a job to the broker (r.node is set to this
 * node's), within broker.fetch_timeout_ms. */
int cmd_report(struct cmd_ctx *a, struct vnib_report r, vnib_error_t *errp);

struct services_job;

/* Take a reservation's uid, VNIs and traffic classes; -1 if malformed. */
int cmd_job_from(json_t *res, struct services_job *job, long floor);

/* [{"device", "svc_id"}] of the NICs whose ids[d] >= 0. */
json_t *cmd_services_list(const struct nic_info *devs,
                          const int *ids,
                          int ndev);

/* Services as a report carries them: only device and svc_id. */
json_t *cmd_report_services(json_t *list);

/* Print o (stolen; NULL prints nothing) as indented JSON to a->out. */
void cmd_print_json(struct cmd_ctx *a, json_t *o);

/* The same for a command's --json result, adding its "warnings" and
 * "dry_run". */
void cmd_print_result(struct cmd_ctx *a, json_t *o);

/* ---- leases (cmd_lease.c) ------------------------------------------------ */

/* The reservation a prolog with a lease (o->lease) starts from, into
 * *resp: the lease read (o->lease_arg: "-" or "@FILE"), verified with the
 * keys of lease.public_keys and lease.max_skew_s, and checked to be for
 * o->job and o->step (or no step), owner o->uid, this node, and an active
 * reservation; for a step, its VNIs arranged as cmd_fetch arranges them.
 * A lease that says "hwcoll_fetch" gets the hardware collectives'
 * variables from the broker (GET within broker.fetch_timeout_ms); when
 * that fails the job starts without them, with a warning.  Nothing else
 * asks the broker.  Returns an exit status: CMD_FAILED for a lease refused
 * (a->errnum EACCES) or malformed (EINVAL), CMD_USAGE for an unreadable
 * lease or key file.
 */
int cmd_lease_reservation(struct cmd_ctx *a,
                          const struct cmd_opts *o,
                          json_t **resp);

/* ---- the report spool (cmd_spool.c) ------------------------------------- */

/* Report at job end, within broker.spool_after_ms; spool the report when
 * the broker could not take it.  Returns 200 (taken), 0 (spooled), the
 * status of a refusal, or -1 when it was neither taken nor spooled (errp
 * says why).
 */
int cmd_report_or_spool(struct cmd_ctx *a,
                        const struct vnib_report *r,
                        vnib_error_t *errp);

/* After a run that reached the broker: send what earlier runs spooled,
 * briefly, saying only what went wrong. */
void cmd_flush_quietly(struct cmd_ctx *a);

#endif /* !VNIB_AGENT_COMMANDS_H */
