/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib-flux-node: vnibroker's node side for a Flux system instance, run
 * as root on every rank of a job by the job-manager's per-rank prolog and
 * by housekeeping (through flux-imp and /etc/flux/system/{prolog,
 * housekeeping}.d/ in a system instance, or [job-manager.prolog] and
 * [job-manager.housekeeping] command = [...] directly):
 *
 *   vnib-flux-node prolog        read the job's eventlog until its
 *                                vnibroker event (the jobtap plugin posts
 *                                it once the broker answered), then make
 *                                the job's CXI services on this node from
 *                                the lease the event carries (the agent's
 *                                prolog --lease, in this process: no
 *                                broker request unless the job has
 *                                hardware collectives), or, from a broker
 *                                that issues no leases, from the broker's
 *                                reservation; that also leaves the job
 *                                environment the shell plugin gives the
 *                                tasks.  A job without VNIs needs nothing.
 *   vnib-flux-node housekeeping  destroy them and tell the broker (the
 *                                agent's housekeeping), so that the job's
 *                                VNIs leave quarantine only when every
 *                                node confirmed.  Exits 1 while a service
 *                                stays busy, so that Flux drains the node;
 *                                with the broker down the report is
 *                                spooled and the node is not drained.
 *   vnib-flux-node hold          with flux-coral2's prolog and shell
 *                                plugin on the nodes: make sure the broker
 *                                waits for this node's housekeeping.  A
 *                                job whose event carries a lease needs
 *                                nothing (its reservation is presumed:
 *                                every node counts as holding services);
 *                                otherwise the broker is told this node
 *                                will hold them (prolog --report-only).
 *
 * The job is FLUX_JOB_ID (F58 in the prolog, decimal in housekeeping); its
 * owner is the userid of its submit event, Flux's own record, which must
 * agree with FLUX_JOB_USERID; the node's name is the broker's hostname
 * attribute, the name R and the broker's reservation give it.  Nothing
 * runs a `flux` command or a shell: Flux is asked through libflux-core
 * (fxn_flux.h), the agent's commands are called in this process
 * (agent/commands.h), and its client of the broker (libcurl) is loaded
 * only when a command asks the broker (agent/brokerso.h).
 *
 * Settings: /etc/vnibroker/flux-node.conf or --config FILE (fxn_conf.h).
 * Messages go to stderr, which Flux keeps in the job's or the
 * housekeeping's log, and to syslog (tag vnib-flux-node).  Exit status: 0
 * done, 1 failed (drain the node), 2 settings.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <flux/core.h>
#include <jansson.h>

#include "vnib/cfgtable.h"
#include "vnib/lease.h"
#include "vnib/token.h"
#include "agent/agentcfg.h"
#include "agent/brokerso.h"
#include "agent/commands.h"
#include "plugins/flux/node/fxn_conf.h"
#include "plugins/flux/node/fxn_flux.h"
#include "plugins/flux/node/fxn_job.h"

/* Where the settings file and agent.toml are, as for the agent. */
#define FXN_CONFDIR "/etc/vnibroker"

enum {
    EXIT_DONE = 0,
    EXIT_FAILED = 1,
    EXIT_SETTINGS = 2,
};

static const char usage_text[] =
    "Usage: vnib-flux-node [--config FILE] prolog|housekeeping|hold\n"
    "vnibroker's node side for Flux, run as root on each rank of a job by\n"
    "the per-rank prolog and by housekeeping (plugins/flux/README.md).\n"
    "  --config FILE  the settings (default " FXN_CONFDIR
    "/flux-node.conf)\n"
    "Exit: 0 done, 1 failed (drain the node), 2 settings.\n";

/* One run: the mode, the job, this node and the settings. */
struct node {
    const char *mode;    /* prolog, housekeeping or hold */
    const char *flux_id; /* FLUX_JOB_ID as given ("?" before it is read) */
    char job[32];        /* the broker's job id: the decimal Flux id */
    char name[TOKEN_NODE_MAX]; /* this node: the broker's hostname */
    struct fxn_conf conf;
};

/* A message to stderr and (unless LOGGER is empty) to syslog. */
static void say(const struct node *n, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(const struct node *n, int level, const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fprintf(stderr,
            "vnibroker: %s job %s: %s\n",
            n->mode ? n->mode : "?",
            n->flux_id ? n->flux_id : "?",
            text);
    if (n->conf.syslog)
        syslog(LOG_USER | level,
               "vnibroker: %s job %s: %s",
               n->mode ? n->mode : "?",
               n->flux_id ? n->flux_id : "?",
               text);
}

/* The agent's messages ("vnib-agent: ..." lines), each said as ours: an
 * error when the command failed, else a warning. */
static void relay(const struct node *n, const char *text, int level)
{
    const char *line = text;

    while (line && *line) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        if (!strncmp(line, "vnib-agent: ", 12)) {
            line += 12;
            len -= 12;
        }
        if (len > 0)
            say(n, level, "%.*s", len, line);
        line = nl ? nl + 1 : NULL;
    }
}

/* The agent's context for this node, as `vnib-agent --config
 * AGENT_CONFIG --node NAME` makes it. */
struct agent {
    struct cmd_ctx a;
    char *text; /* what the commands wrote to a.err */
    size_t len;
    bool open;
};

static void agent_close(struct agent *ag)
{
    if (ag->a.err)
        fclose(ag->a.err);
    if (ag->a.out)
        fclose(ag->a.out);
    free(ag->text);
    cmd_ctx_fini(&ag->a);
    memset(ag, 0, sizeof(*ag));
}

/* Load agent.toml into ag.  Returns an exit status (CMD_*), after say()
 * unless quiet. */
static int agent_open(const struct node *n, struct agent *ag, bool quiet)
{
    vnib_error_t error = {0};
    char path[FXN_PATH_MAX];

    memset(ag, 0, sizeof(*ag));
    ag->a.open_broker = brokerso_open;
    if (fxn_conf_agent_path(&n->conf, n->name, path, sizeof(path), &error) < 0
        || !(ag->a.cfg = agentcfg_load(path, true, &error))) {
        if (!quiet)
            say(n, LOG_ERR, "%s", error.text);
        return CMD_USAGE;
    }
    if (agentcfg_set(&ag->a.cfg->name, n->name) < 0
        || !(ag->a.warnings = json_array())
        || !(ag->a.out = fopen("/dev/null", "we"))
        || !(ag->a.err = open_memstream(&ag->text, &ag->len))) {
        if (!quiet)
            say(n, LOG_ERR, "cannot run the agent: %s", strerror(errno));
        agent_close(ag);
        return CMD_FAILED;
    }
    ag->open = true;
    return CMD_DONE;
}

/* Load the lease keys once, and drop them: the first key a process loads
 * pays for OpenSSL's start (its configuration, its decoders), the lease's
 * verification then does not. */
static void warm_keys(const struct agentcfg *cfg)
{
    struct lease_keyring *ring = lease_keyring_create();
    char *list = cfg->lease_public_keys ? strdup(cfg->lease_public_keys) : NULL;
    char *save = NULL;

    for (char *p = list && ring ? strtok_r(list, CFGTABLE_LIST_SEP, &save)
                                : NULL;
         p;
         p = strtok_r(NULL, CFGTABLE_LIST_SEP, &save))
        (void)lease_keyring_add_file(ring, p, NULL);
    free(list);
    lease_keyring_destroy(ring);
}

/* What a prolog's agent can do before the job's event comes: its
 * settings, the node token, the NICs, the lease keys' code.  Whatever
 * fails here is left for the command, which says it in its place. */
static void agent_prepare(const struct node *n, struct agent *ag)
{
    if (agent_open(n, ag, true) != CMD_DONE)
        return;
    if (cmd_identify(&ag->a) != CMD_DONE || cmd_open_nics(&ag->a) != CMD_DONE) {
        agent_close(ag);
        return;
    }
    warm_keys(ag->a.cfg);
}

/* Run one of the agent's commands on this node (on ag as prepared, or
 * on a context of its own), as `vnib-agent --config AGENT_CONFIG --node
 * NAME COMMAND` would.  Returns its exit status (CMD_*). */
static int agent_run(const struct node *n,
                     struct agent *ag,
                     cmd_fn *fn,
                     const struct cmd_opts *o)
{
    struct agent own = {.open = false};
    int rc;

    if (!ag || !ag->open) {
        ag = &own;
        if ((rc = agent_open(n, ag, false)) != CMD_DONE)
            return rc;
    }
    rc = fn(&ag->a, o);
    fflush(ag->a.err);
    relay(n, ag->text, rc == CMD_DONE ? LOG_WARNING : LOG_ERR);
    if (ag == &own)
        agent_close(ag);
    return rc;
}

/* The program's exit status for an agent's. */
static int exit_status(int rc)
{
    if (rc == CMD_DONE)
        return EXIT_DONE;
    return rc == CMD_USAGE ? EXIT_SETTINGS : EXIT_FAILED;
}

static int housekeeping(const struct node *n)
{
    struct cmd_opts o = {.job = n->job,
                         .uid = -1,
                         .retry_ms = n->conf.retry_busy_ms,
                         .format = "export",
                         .nics = -1};
    int rc = agent_run(n, NULL, cmd_housekeeping, &o);

    /* The broker down and the report not spooled either: not the node's
     * fault; flush sends what it can later. */
    return exit_status(rc == CMD_UNREACHABLE ? CMD_DONE : rc);
}

/* The job's owner as Flux recorded it (the submit event), which the
 * environment Flux gave us must not contradict.  -1 after say(). */
static long long owner(const struct node *n, const struct fxn_job *j)
{
    const char *env = getenv("FLUX_JOB_USERID");
    char *end;

    if (j->uid < 0) {
        say(n, LOG_ERR, "the job's eventlog names no owner (no submit event)");
        return -1;
    }
    if (env && *env) {
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        if (errno || *end || end == env || env[0] == '-'
            || v != (unsigned long long)j->uid) {
            say(n,
                LOG_ERR,
                "FLUX_JOB_USERID=%s is not the job's owner, uid %lld as "
                "its submit event has it",
                env,
                j->uid);
            return -1;
        }
    }
    return j->uid;
}

/* hold: the broker must wait for this node's housekeeping. */
static int hold(const struct node *n, const struct fxn_event *ev, long uid)
{
    struct cmd_opts o = {.job = n->job,
                         .uid = uid,
                         .retry_ms = -1,
                         .format = "export",
                         .report_only = true,
                         .nics = -1};

    /* A lease comes only with a presumed reservation: the broker counts
     * every node of it as holding services until it reports destroyed. */
    if (ev->lease)
        return EXIT_DONE;
    return exit_status(agent_run(n, NULL, cmd_prolog, &o));
}

/* prolog: the job's services from its lease (or the broker's
 * reservation), on the agent's context ag prepared meanwhile. */
static int start(const struct node *n,
                 struct agent *ag,
                 flux_t *h,
                 flux_jobid_t id,
                 const struct fxn_event *ev,
                 long uid)
{
    vnib_error_t error = {0};
    struct cmd_opts o = {.job = n->job,
                         .uid = uid,
                         .ncores = ev->ncores,
                         .retry_ms = -1,
                         .format = "export",
                         .lease = ev->lease,
                         .nics = -1};

    if (!o.ncores) {
        /* The job's nodes differ: this rank's count, from R. */
        long c = fxn_flux_rank_cores(h, id, &error);
        if (c > 0 && c <= 65535)
            o.ncores = c;
        else
            say(n,
                LOG_WARNING,
                "%s; the services are sized by this node's CPUs",
                c < 0 ? error.text : "no cores of this rank in R");
    }
    return exit_status(agent_run(n, ag, cmd_prolog, &o));
}

/* prolog and hold: the job's eventlog (watched by w, started already),
 * then what the mode does. */
static int prolog(const struct node *n,
                  flux_t *h,
                  flux_jobid_t id,
                  struct fxn_flux_watch *w)
{
    vnib_error_t error = {0};
    struct agent ag = {.open = false};
    struct fxn_job j;
    struct fxn_event ev;
    long long uid;
    int rc = EXIT_FAILED;

    fxn_job_init(&j);
    /* The event comes when the broker answered the jobtap plugin's
     * reserve: prepare the agent meanwhile. */
    if (!strcmp(n->mode, "prolog"))
        agent_prepare(n, &ag);
    if (fxn_flux_watch_wait(w, n->conf.reservation_wait_ms, &j, &error) < 0) {
        say(n, LOG_ERR, "%s", error.text);
        goto done;
    }
    if (j.ended) {
        /* The job will not start: nothing to make, nothing to drain. */
        rc = EXIT_DONE;
        goto done;
    }
    if (fxn_event_parse(j.event, &ev, &error) < 0) {
        say(n, LOG_ERR, "%s", error.text);
        goto done;
    }
    if (strcmp(ev.job_id, n->job) != 0) {
        say(n,
            LOG_ERR,
            "the %s event is for job %s, not %s",
            FXN_EVENT,
            ev.job_id,
            n->job);
        goto done;
    }
    if (!ev.has_vnis) {
        rc = EXIT_DONE;
        goto done;
    }
    if ((uid = owner(n, &j)) < 0)
        goto done;
    if (!strcmp(n->mode, "hold"))
        rc = hold(n, &ev, (long)uid);
    else
        rc = start(n, &ag, h, id, &ev, (long)uid);
done:
    if (ag.open)
        agent_close(&ag);
    fxn_job_clear(&j);
    return rc;
}

int main(int argc, char **argv)
{
    struct node n = {.flux_id = NULL};
    const char *conf_path = FXN_CONFDIR "/flux-node.conf";
    vnib_error_t error = {0};
    flux_jobid_t id;
    flux_t *h = NULL;
    struct fxn_flux_watch *w = NULL;
    int i = 1, rc = EXIT_FAILED;

    fxn_conf_defaults(&n.conf, FXN_CONFDIR);
    if (i < argc && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
        fputs(usage_text, stdout);
        return EXIT_DONE;
    }
    if (i + 1 < argc && !strcmp(argv[i], "--config")) {
        conf_path = argv[i + 1];
        i += 2;
    }
    if (i + 1 != argc
        || (strcmp(argv[i], "prolog") != 0
            && strcmp(argv[i], "housekeeping") != 0
            && strcmp(argv[i], "hold") != 0)) {
        fprintf(stderr,
                "vnib-flux-node: want [--config FILE] prolog, hold or "
                "housekeeping, not '%s'\n",
                i < argc ? argv[i] : "");
        return EXIT_SETTINGS;
    }
    n.mode = argv[i];
    n.flux_id = getenv("FLUX_JOB_ID");
    openlog("vnib-flux-node", 0, LOG_USER);
    if (fxn_conf_load(&n.conf, conf_path, &error) < 0) {
        say(&n, LOG_ERR, "%s", error.text);
        return EXIT_SETTINGS;
    }
    if (!n.flux_id || !*n.flux_id) {
        say(&n,
            LOG_ERR,
            "FLUX_JOB_ID is not set (run by Flux's prolog or housekeeping)");
        return EXIT_SETTINGS;
    }
    if (flux_job_id_parse(n.flux_id, &id) < 0) {
        say(&n, LOG_ERR, "cannot read the job id '%s'", n.flux_id);
        return EXIT_FAILED;
    }
    snprintf(n.job, sizeof(n.job), "%" PRIu64, (uint64_t)id);
    /* The job's eventlog is asked for first: its first entries come
     * while the hostname is read. */
    if (!(h = fxn_flux_open(&error))
        || (strcmp(n.mode, "housekeeping") != 0
            && !(w = fxn_flux_watch_start(h, id, &error)))
        || fxn_flux_hostname(h, n.name, sizeof(n.name), &error) < 0) {
        say(&n, LOG_ERR, "%s", error.text);
        goto done;
    }
    if (!token_node_name_valid(n.name)) {
        say(&n, LOG_ERR, "this broker's hostname '%s' is no node name", n.name);
        goto done;
    }
    if (!strcmp(n.mode, "housekeeping"))
        rc = housekeeping(&n);
    else
        rc = prolog(&n, h, id, w);
done:
    fxn_flux_watch_destroy(w);
    flux_close(h);
    closelog();
    return rc;
}
