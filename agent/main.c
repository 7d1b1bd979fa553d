/* vnib-agent: the node agent, run as root by the scheduler's prolog,
 * epilog and housekeeping on every compute node.
 *
 * It takes a job's VNIs only from the broker, over an authenticated
 * connection with the node's own token (never from anything the job's
 * user could set: CVE-2024-42511), turns them into one CXI service per NIC
 * for the job's owner, leaves the job environment for the task hooks, and
 * reports every step so that the broker keeps the VNIs quarantined until
 * the services are really gone.
 *
 * Exit statuses, which scheduler hooks rely on:
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
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/idset.h"
#include "vnib/secfile.h"
#include "vnib/tclass.h"
#include "vnib/token.h"
#include "agent/agentcfg.h"
#include "agent/broker.h"
#include "agent/jobenv.h"
#include "agent/jobstate.h"
#include "agent/limits.h"
#include "agent/nic.h"
#include "agent/nic_sim.h"
#include "agent/services.h"
#include "agent/slurmcpus.h"
#include "server/version.h"

enum {
    EXIT_DONE = 0,
    EXIT_FAILED = 1,
    EXIT_USAGE = 2,
    EXIT_UNREACHABLE = 3,
};

static const char usage_text[] =
    "Usage: vnib-agent [OPTIONS] COMMAND [ARGS]\n"
    "The vnibroker node agent: CXI services for a job on this node.\n"
    "\n"
    "Commands:\n"
    "  prolog --job ID [--uid U] [--ncores N] [--allow-missing]\n"
    "                                           create the job's services\n"
    "  epilog --job ID [--retry-busy D]         destroy them (default 5s)\n"
    "  housekeeping --job ID [--retry-busy D]   the same, longer (5m); exit\n"
    "                                           1 when services remain\n"
    "  clean --all [--retry-busy D]             destroy every job service in\n"
    "                                           the broker's pool (after a\n"
    "                                           crash or reboot)\n"
    "  flush                                    send the reports spooled\n"
    "                                           while the broker was down\n"
    "  env --job ID [--format export|json|slurm-taskprolog]\n"
    "                                           print the job environment\n"
    "  list                                     services on this node\n"
    "  sim-init --nics N                        create simulated NICs\n"
    "Every command takes --dry-run and --json.  D is a duration: 500ms, 5s,\n"
    "5m, 1h (a bare number is seconds).\n"
    "\n"
    "Options:\n"
    "  --config FILE      default " AGENTCFG_DEFAULT_PATH
    "\n"
    "  --url URL          the broker (overrides broker.url)\n"
    "  --token-file FILE  the node token (overrides broker.token_file)\n"
    "  --cacert FILE      CA bundle for an https broker\n"
    "  --node NAME        this node's name (default: the token's)\n"
    "  --version, --help\n"
    "\n"
    "Exit: 0 done, 1 failed (drain the node), 2 usage or configuration,\n"
    "3 broker unreachable.\n";

struct agent {
    struct agentcfg *cfg;
    bool json;
    bool dry_run;
    char *token;
    size_t token_len;
    char node[TOKEN_NODE_MAX];
    struct vnib_client *client;
    struct nic_backend *nb;
    struct nic_info *devs;
    int ndev;
    json_t *warnings; /* collected for --json output */
};

/* Options of a subcommand. */
struct subopts {
    const char *job;
    long uid;      /* -1: from the broker */
    long ncores;   /* 0: from Slurm or the CPU count */
    long retry_ms; /* -1: the configured default */
    const char *format;
    bool all;
    bool allow_missing; /* prolog: no reservation is not an error */
    long nics;
};

static int fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("vnib-agent: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

static void warn(struct agent *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct agent *a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "vnib-agent: warning: %s\n", buf);
    if (a->warnings)
        json_array_append_new(a->warnings, json_string(buf));
}

/* "5s", "500ms", "5m", "1h" or a bare number of seconds. */
static int parse_duration(const char *s, long *msp)
{
    char *end;
    /* strtod() also reads "nan", "inf" and signs: a digit comes first. */
    if (!(s[0] >= '0' && s[0] <= '9') && s[0] != '.')
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    double scale = 1000;
    if (!strcmp(end, "ms"))
        scale = 1;
    else if (!strcmp(end, "m"))
        scale = 60000;
    else if (!strcmp(end, "h"))
        scale = 3600000;
    else if (*end && strcmp(end, "s") != 0)
        return -1;
    if (v * scale > 86400000.0 * 7)
        return -1;
    *msp = (long)(v * scale);
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *vp)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *vp = v;
    return 0;
}

static void agent_fini(struct agent *a)
{
    vnib_client_destroy(a->client);
    nic_destroy(a->nb);
    free(a->devs);
    if (a->token)
        secfile_free(a->token, a->token_len);
    agentcfg_destroy(a->cfg);
    json_decref(a->warnings);
}

/* Read the node token and settle this node's name. */
static int load_identity(struct agent *a)
{
    vnib_error_t error = {""};
    const char *file = a->cfg->token_file;

    if (secfile_read(file, &a->token, &a->token_len, &error) < 0)
        return fail(EXIT_USAGE, "%s", error.text);
    a->token[strcspn(a->token, " \t\r\n")] = '\0';
    if (!*a->token)
        return fail(EXIT_USAGE, "%s: holds no token", file);
    const char *from_token = NULL;
    if (token_is_node(a->token)) {
        const char *start = a->token + strlen(TOKEN_NODE_PREFIX);
        const char *dot = strrchr(start, '.');
        if (dot && (size_t)(dot - start) < sizeof(a->node)) {
            snprintf(
                a->node, sizeof(a->node), "%.*s", (int)(dot - start), start);
            from_token = a->node;
        }
    }
    if (*a->cfg->name) {
        if (from_token && strcmp(from_token, a->cfg->name) != 0)
            return fail(EXIT_USAGE,
                        "%s: the token is node %s's, but this agent is "
                        "configured as %s",
                        file,
                        from_token,
                        a->cfg->name);
        snprintf(a->node, sizeof(a->node), "%s", a->cfg->name);
    } else if (!from_token)
        return fail(
            EXIT_USAGE, "%s: not a node token; set node.name or --node", file);
    return EXIT_DONE;
}

static int connect_broker(struct agent *a)
{
    vnib_error_t error = {""};
    int rc = load_identity(a);
    if (rc != EXIT_DONE)
        return rc;
    if (!(a->client = vnib_client_create(a->cfg->url, a->token, &error)))
        return fail(EXIT_USAGE, "broker.url: %s", error.text);
    if (*a->cfg->cacert
        && vnib_client_set_cacert(a->client, a->cfg->cacert) < 0)
        return fail(EXIT_USAGE, "broker.cacert: %s", strerror(errno));
    return EXIT_DONE;
}

static int open_nics(struct agent *a)
{
    vnib_error_t error = {""};
    const char *arg =
        !strcmp(a->cfg->backend, "sim") ? a->cfg->sim_dir : a->cfg->libcxi;
    if (!(a->nb = nic_create(a->cfg->backend, arg, &error))
        || nic_list(a->nb, &a->devs, &a->ndev, &error) < 0)
        return fail(EXIT_FAILED, "%s", error.text);
    return EXIT_DONE;
}

/* The exit status for a broker call that did not succeed. */
static int broker_failure(const char *what, int status, vnib_error_t *error)
{
    if (status < 0)
        return fail(
            EXIT_UNREACHABLE, "%s: broker unreachable: %s", what, error->text);
    return fail(EXIT_FAILED, "%s: refused: %s", what, error->text);
}

/* Take a reservation's uid, VNIs and traffic classes. */
static int job_from(json_t *res, struct services_job *job, long floor)
{
    json_t *vnis = json_object_get(res, "vnis");
    const char *tcs = json_string_value(json_object_get(res, "tcs_mask"));
    json_t *uid = json_object_get(res, "uid");
    size_t i;
    json_t *v;

    memset(job, 0, sizeof(*job));
    /* (uid_t)-1 means "no change" to chown() and friends: refused. */
    if (!json_is_integer(uid) || json_integer_value(uid) < 0
        || json_integer_value(uid) > 4294967294LL || !json_is_array(vnis)
        || json_array_size(vnis) > NIC_MAX_VNIS)
        return -1;
    job->uid = (uid_t)json_integer_value(uid);
    json_array_foreach (vnis, i, v) {
        json_int_t n = json_integer_value(v);
        if (!json_is_integer(v) || n < 2 || n > 65535 || n == 10)
            return -1;
        job->vnis[job->nvnis++] = (uint16_t)n;
    }
    job->tcs_mask = 0xa;
    if (tcs && tclass_mask_parse(tcs, &job->tcs_mask) < 0)
        return -1;
    job->floor_percent = floor;
    return 0;
}

static json_t *services_list(const struct nic_info *devs,
                             const int *ids,
                             int ndev)
{
    json_t *a = json_array();
    for (int d = 0; a && d < ndev; d++)
        if (ids[d] >= 0)
            json_array_append_new(
                a,
                json_pack(
                    "{s:s, s:i}", "device", devs[d].name, "svc_id", ids[d]));
    return a;
}

/* Services as a report carries them: only device and svc_id. */
static json_t *report_services(json_t *list)
{
    json_t *a = json_array();
    size_t i;
    json_t *s;
    json_array_foreach (list, i, s)
        json_array_append_new(a,
                              json_pack("{s:O, s:O}",
                                        "device",
                                        json_object_get(s, "device"),
                                        "svc_id",
                                        json_object_get(s, "svc_id")));
    return a;
}

static void print_json(json_t *o)
{
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputc('\n', stdout);
}

static int report(struct agent *a,
                  const char *job_id,
                  long long res_id,
                  const char *cxi,
                  json_t *services,
                  const char *message,
                  vnib_error_t *error)
{
    struct vnib_report r = {
        .job_id = job_id,
        .node = a->node,
        .cxi = cxi,
        .services = services,
        .message = message,
        .reservation = res_id,
    };
    return broker_report(a->client, &r, a->cfg->fetch_timeout_ms, error);
}

/* ---- the report spool ----------------------------------------------------
 *
 * A job ends while the broker is down or failing over: its nodes destroy
 * their services all the same, and each keeps its report in SPOOL_DIR
 * instead of failing the epilog (which would drain every node of the job).
 * The VNIs stay quarantined meanwhile, which is safe.  Every later run of
 * the agent, and `vnib-agent flush` from a timer, sends what is spooled.
 */

/* Statuses after which a report is worth keeping to send again: no
 * answer, an overloaded or failing broker, or credentials it refused
 * (fixable on the node, and the report is still true then). */
static bool worth_spooling(int status)
{
    return status < 0 || status == 401 || status == 403 || status == 429
           || status >= 500;
}

/* Report at job end, within broker.spool_after_ms; spool the report when
 * the broker could not take it.  Returns 200 (taken), 0 (spooled), the
 * status of a refusal, or -1 when it was neither taken nor spooled (errp
 * says why).
 */
static int report_or_spool(struct agent *a,
                           const struct vnib_report *r,
                           vnib_error_t *errp)
{
    vnib_error_t serr = {""};
    json_t *entry = NULL;
    int status = broker_report(a->client, r, a->cfg->spool_after_ms, errp);

    if (status == 200)
        jobstate_spool_remove(a->cfg->spool_dir, r->job_id, r->reservation);
    if (!worth_spooling(status))
        return status;
    if (!(entry = json_pack("{s:s, s:s, s:I, s:s, s:s}",
                            "job_id",
                            r->job_id,
                            "node",
                            r->node,
                            "reservation_id",
                            (json_int_t)r->reservation,
                            "cxi",
                            r->cxi,
                            "error",
                            errp->text))
        || (r->services && json_object_set(entry, "services", r->services) < 0)
        || (r->message
            && json_object_set_new(entry, "message", json_string(r->message))
                   < 0)) {
        json_decref(entry);
        errno = ENOMEM;
        snprintf(serr.text, sizeof(serr.text), "out of memory");
        goto unspooled;
    }
    status = jobstate_spool_put(a->cfg->spool_dir, entry, &serr);
    json_decref(entry);
    if (status == 0)
        return 0;
unspooled:;
    vnib_error_t why = *errp;
    return errprintf(errp,
                     "%s; and the report could not be spooled: %s",
                     why.text,
                     serr.text);
}

struct flushed {
    int sent, dropped, left;
};

/* Send the spooled reports, oldest reservation first, until deadline_ms is
 * spent or the broker cannot take one.  A report the broker refuses is an
 * answer (the reservation was purged, or the node's state there moved on)
 * and is dropped with a warning.  Returns 0, or -1 when reports are left
 * (errp says why).
 */
static int flush_spool(struct agent *a,
                       long deadline_ms,
                       struct flushed *f,
                       vnib_error_t *errp)
{
    json_t *bad = json_array(), *list = NULL, *e;
    long end = broker_now_ms() + deadline_ms;
    size_t i;
    int rc = 0;

    *f = (struct flushed){0, 0, 0};
    if (!bad || !(list = jobstate_spool_list(a->cfg->spool_dir, bad, errp))) {
        rc = -1;
        goto out;
    }
    json_array_foreach (bad, i, e)
        warn(a, "spool: %s; left in place", json_string_value(e));
    f->left = (int)json_array_size(bad);
    json_array_foreach (list, i, e) {
        vnib_error_t error = {""};
        struct vnib_report r = {
            .job_id = json_string_value(json_object_get(e, "job_id")),
            .node = json_string_value(json_object_get(e, "node")),
            .cxi = json_string_value(json_object_get(e, "cxi")),
            .services = json_object_get(e, "services"),
            .message = json_string_value(json_object_get(e, "message")),
            .reservation =
                json_integer_value(json_object_get(e, "reservation_id")),
        };
        if (!r.node || strcmp(r.node, a->node) != 0) {
            warn(a,
                 "spool: job %s: a report of node %s, not of this node %s; "
                 "left in place",
                 r.job_id,
                 r.node ? r.node : "(none)",
                 a->node);
            f->left++;
            continue;
        }
        long left = end - broker_now_ms();
        int status = rc < 0 ? -1
                            : broker_report(
                                a->client, &r, left > 100 ? left : 100, &error);
        if (rc < 0 || worth_spooling(status)) {
            if (rc == 0)
                errprintf(errp, "job %s: %s", r.job_id, error.text);
            rc = -1;
            f->left++;
            continue;
        }
        jobstate_spool_remove(a->cfg->spool_dir, r.job_id, r.reservation);
        if (status == 200)
            f->sent++;
        else {
            f->dropped++;
            warn(a,
                 "spool: job %s: the broker refused the spooled %s report "
                 "of reservation %lld (%s); dropped",
                 r.job_id,
                 r.cxi,
                 r.reservation,
                 error.text);
        }
    }
    if (rc == 0 && f->left > 0) {
        errprintf(errp, "%d spooled report(s) cannot be sent", f->left);
        rc = -1;
    }
out:
    json_decref(bad);
    json_decref(list);
    return rc;
}

/* After a run that reached the broker: send what earlier runs spooled,
 * briefly, saying only what went wrong. */
static void flush_quietly(struct agent *a)
{
    vnib_error_t error = {""};
    struct flushed f;
    if (a->dry_run)
        return;
    if (flush_spool(a, a->cfg->spool_after_ms, &f, &error) < 0)
        warn(a, "spool: %d report(s) still waiting: %s", f.left, error.text);
}

static int cmd_flush(struct agent *a)
{
    vnib_error_t error = {""};
    struct flushed f = {0, 0, 0};
    int rc;

    if ((rc = connect_broker(a)) != EXIT_DONE)
        return rc;
    if (a->dry_run) {
        json_t *list = jobstate_spool_list(a->cfg->spool_dir, NULL, &error);
        if (!list)
            return fail(EXIT_FAILED, "flush: %s", error.text);
        f.left = (int)json_array_size(list);
        json_decref(list);
    } else if (flush_spool(a, a->cfg->fetch_timeout_ms, &f, &error) < 0)
        rc = f.left > 0 ? EXIT_UNREACHABLE : EXIT_FAILED;
    if (a->json) {
        json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:O, s:b}",
                              "node",
                              a->node,
                              "sent",
                              f.sent,
                              "dropped",
                              f.dropped,
                              "left",
                              f.left,
                              "warnings",
                              a->warnings,
                              "dry_run",
                              a->dry_run);
        if (o)
            print_json(o);
        json_decref(o);
    } else
        printf("flush: %d sent, %d dropped, %d %s\n",
               f.sent,
               f.dropped,
               f.left,
               a->dry_run ? "spooled" : "left");
    if (rc == EXIT_UNREACHABLE)
        return fail(rc, "flush: %s", error.text);
    if (rc != EXIT_DONE)
        return fail(rc, "flush: %s", error.text);
    return rc;
}

/* This node's cores: --ncores, else Slurm's environment, else online CPUs. */
static int job_cores(struct agent *a, const struct subopts *o, unsigned *np)
{
    const char *cpus = getenv("SLURM_JOB_CPUS_PER_NODE");
    /* The controller's hooks get SLURM_JOB_NODELIST, slurmd's Prolog
     * SLURM_NODELIST. */
    const char *nodes = getenv("SLURM_JOB_NODELIST")
                            ? getenv("SLURM_JOB_NODELIST")
                            : getenv("SLURM_NODELIST");
    vnib_error_t error = {""};

    if (o->ncores > 0) {
        *np = (unsigned)o->ncores;
        return 0;
    }
    if (cpus && nodes) {
        if (slurmcpus_for_node(cpus, nodes, a->node, np, &error) < 0)
            return fail(EXIT_USAGE, "%s", error.text);
        return 0;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *np = n > 0 ? (unsigned)n : 1;
    return 0;
}

/* The prolog failed before it made any service (or after destroying what
 * it made): report "failed", which drains the node in the broker and
 * records why, and exit 1.
 */
static int prolog_failed(struct agent *a,
                         const char *job_id,
                         long long res_id,
                         const vnib_error_t *error)
{
    vnib_error_t rerr = {""};
    char msg[sizeof(error->text) + 32];
    snprintf(msg, sizeof(msg), "prolog: %s", error->text);
    if (report(a, job_id, res_id, "failed", NULL, msg, &rerr) != 200)
        warn(a,
             "job %s: the broker did not take the failure report: %s",
             job_id,
             rerr.text);
    return fail(EXIT_FAILED, "job %s: %s", job_id, error->text);
}

static int cmd_prolog(struct agent *a, const struct subopts *o)
{
    vnib_error_t error = {""};
    json_t *res = NULL, *svcs = NULL, *out = NULL, *record = NULL;
    struct services_job job;
    struct jobenv env = {{NULL}};
    int *ids = NULL;
    bool *created = NULL;
    int rc, status;

    if ((rc = connect_broker(a)) != EXIT_DONE)
        return rc;
    status =
        broker_fetch(a->client, o->job, a->cfg->fetch_timeout_ms, &res, &error);
    if (status != 200 && o->allow_missing && (status < 0 || status == 404)) {
        /* The site lets jobs run without isolation when the broker cannot
         * be asked (the scheduler's prolog said so in the job's record):
         * clear the environment and step aside. */
        warn(a,
             "job %s: %s; running WITHOUT VNI isolation (--allow-missing)",
             o->job,
             status < 0 ? "broker unreachable" : "no reservation");
        if (jobstate_write_env(a->cfg->state_dir,
                               o->job,
                               o->uid >= 0 ? (uid_t)o->uid : 0,
                               &env,
                               &error)
            < 0) {
            rc = fail(EXIT_FAILED, "job %s: %s", o->job, error.text);
            goto done;
        }
        rc = EXIT_DONE;
        goto done;
    }
    if (status != 200) {
        rc = broker_failure("prolog", status, &error);
        goto done;
    }
    long long res_id = json_integer_value(json_object_get(res, "id"));
    const char *state = json_string_value(json_object_get(res, "state"));
    if (job_from(res, &job, a->cfg->floor_percent) < 0) {
        rc = fail(EXIT_FAILED,
                  "job %s: the broker's reservation is malformed",
                  o->job);
        goto done;
    }
    if (!state || strcmp(state, "active") != 0) {
        rc = fail(EXIT_FAILED,
                  "job %s: reservation %lld is %s, not active; no services "
                  "created",
                  o->job,
                  res_id,
                  state ? state : "unknown");
        goto done;
    }
    if (o->uid >= 0 && (uid_t)o->uid != job.uid) {
        rc = fail(EXIT_FAILED,
                  "job %s: --uid %ld does not match the reservation's owner "
                  "%ld; no services created",
                  o->job,
                  o->uid,
                  (long)job.uid);
        goto done;
    }
    if ((rc = job_cores(a, o, &job.ncores)) != EXIT_DONE)
        goto done;
    if ((rc = open_nics(a)) != EXIT_DONE)
        goto done;
    if (!(ids = calloc((size_t)a->ndev + 1, sizeof(*ids)))
        || !(created = calloc((size_t)a->ndev + 1, sizeof(*created)))) {
        rc = fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (job.nvnis == 0 || a->ndev == 0) {
        /* Nothing to isolate: leave a cleared environment so nothing from
         * the submitting shell leaks in. */
        if (!a->dry_run
            && jobstate_write_env(
                   a->cfg->state_dir, o->job, job.uid, &env, &error)
                   < 0) {
            rc = fail(EXIT_FAILED, "job %s: %s", o->job, error.text);
            goto done;
        }
        if (a->ndev == 0 && job.nvnis > 0)
            warn(
                a, "job %s: this node has no CXI devices; no services", o->job);
        if (!a->json)
            printf("job %s: no VNIs; no services created\n", o->job);
        goto output;
    }
    if (a->dry_run) {
        if (services_find(a->nb, a->devs, a->ndev, &job, ids, &error) < 0) {
            rc = fail(EXIT_FAILED, "%s", error.text);
            goto done;
        }
        for (int d = 0; d < a->ndev && !a->json; d++)
            printf("%s: %s uid=%ld ncores=%u vnis=%d\n",
                   a->devs[d].name,
                   ids[d] >= 0 ? "would reuse" : "would create",
                   (long)job.uid,
                   job.ncores,
                   job.nvnis);
        goto output;
    }
    /* The broker learns before any NIC is touched, so a crash from here
     * on leaves the node marked as holding something. */
    status = report(a, o->job, res_id, "creating", NULL, NULL, &error);
    if (status != 200) {
        rc = broker_failure("prolog: report creating", status, &error);
        goto done;
    }
    /* The record comes before any service, so a node without a record
     * made none: its epilog needs no broker to know that. */
    record = json_pack("{s:s, s:I, s:I, s:O, s:[]}",
                       "job_id",
                       o->job,
                       "reservation_id",
                       (json_int_t)res_id,
                       "uid",
                       (json_int_t)job.uid,
                       "vnis",
                       json_object_get(res, "vnis"),
                       "services");
    if (!record
        || jobstate_save(a->cfg->state_dir, o->job, record, &error) < 0) {
        rc = prolog_failed(a, o->job, res_id, &error);
        goto done;
    }
    if (services_create(
            a->nb, a->devs, a->ndev, &job, ids, created, stderr, &error)
        < 0) {
        /* services_create destroyed what it made.  The epilog (or clean
         * --all) later reports the node clean. */
        rc = prolog_failed(a, o->job, res_id, &error);
        goto done;
    }
    svcs = services_list(a->devs, ids, a->ndev);
    if (jobenv_build(&env, res, a->devs, ids, a->ndev, &error) < 0 || !svcs
        || json_object_set(record, "services", svcs) < 0
        || jobstate_save(a->cfg->state_dir, o->job, record, &error) < 0
        || jobstate_write_env(a->cfg->state_dir, o->job, job.uid, &env, &error)
               < 0) {
        vnib_error_t rerr = {""};
        json_t *left = json_array(), *gone = json_array();
        (void)services_destroy(a->nb,
                               a->devs,
                               a->ndev,
                               services_match,
                               &job,
                               0,
                               false,
                               gone,
                               left,
                               &rerr);
        json_t *held = report_services(left);
        (void)report(a, o->job, res_id, "failed", held, error.text, &rerr);
        json_decref(held);
        json_decref(left);
        json_decref(gone);
        rc = fail(EXIT_FAILED, "job %s: %s", o->job, error.text);
        goto done;
    }
    status = report(a, o->job, res_id, "created", svcs, NULL, &error);
    if (status != 200)
        warn(a,
             "job %s: services made but the broker did not take the "
             "report (%s); it still counts this node as holding them",
             o->job,
             error.text);
    else
        flush_quietly(a);
    if (!a->json) {
        char line[512] = "";
        size_t used = 0;
        for (int d = 0; d < a->ndev && used < sizeof(line); d++)
            used += (size_t)snprintf(line + used,
                                     sizeof(line) - used,
                                     "%s%s:%d%s",
                                     d ? " " : "",
                                     a->devs[d].name,
                                     ids[d],
                                     created[d] ? "" : "(reused)");
        printf("job %s: uid=%ld ncores=%u vnis=%d services %s\n",
               o->job,
               (long)job.uid,
               job.ncores,
               job.nvnis,
               line);
    }
output:
    if (a->json) {
        out = json_pack("{s:s, s:s, s:I, s:I, s:O, s:i, s:o, s:O, s:b}",
                        "job_id",
                        o->job,
                        "node",
                        a->node,
                        "reservation_id",
                        (json_int_t)res_id,
                        "uid",
                        (json_int_t)job.uid,
                        "vnis",
                        json_object_get(res, "vnis"),
                        "ncores",
                        (int)job.ncores,
                        "services",
                        services_list(a->devs, ids, ids ? a->ndev : 0),
                        "warnings",
                        a->warnings,
                        "dry_run",
                        a->dry_run);
        if (out)
            print_json(out);
    }
    rc = EXIT_DONE;
done:
    jobenv_clear(&env);
    json_decref(res);
    json_decref(svcs);
    json_decref(out);
    json_decref(record);
    free(ids);
    free(created);
    return rc;
}

/* Epilog and housekeeping: destroy the job's services and say so.
 *
 * What to destroy comes from this node's record of what its prolog made;
 * the broker is asked only when there is none (a prolog that died between
 * its "creating" report and its record).  The report goes to the broker
 * within broker.spool_after_ms, or into the spool: a broker outage at job
 * end neither drains the node nor holds the job back.
 */
static int cmd_teardown(struct agent *a, const struct subopts *o, bool final)
{
    vnib_error_t error = {""};
    json_t *res = NULL, *record = NULL, *src = NULL, *done = json_array(),
           *left = json_array();
    const char *what = final ? "housekeeping" : "epilog";
    const char *outcome = "none";
    struct services_job job;
    long long res_id = 0;
    int rc, status, n = 0;

    if (!done || !left) {
        rc = fail(EXIT_FAILED, "out of memory");
        goto out;
    }
    if ((rc = connect_broker(a)) != EXIT_DONE)
        goto out;
    long retry = o->retry_ms >= 0 ? o->retry_ms
                 : final          ? a->cfg->housekeeping_retry_busy_ms
                                  : a->cfg->epilog_retry_busy_ms;
    if ((record = jobstate_load(a->cfg->state_dir, o->job, &error)))
        src = record;
    else {
        status = broker_fetch(
            a->client, o->job, a->cfg->spool_after_ms, &res, &error);
        if (status != 200) {
            if (status < 0)
                warn(a,
                     "job %s: no record on this node, so its prolog made no "
                     "service; the broker could not confirm (%s)",
                     o->job,
                     error.text);
            else if (!a->json)
                printf("job %s: no reservation here; nothing to destroy\n",
                       o->job);
            if (!a->dry_run)
                jobstate_remove(a->cfg->state_dir, o->job, false);
            rc = EXIT_DONE;
            goto out;
        }
        src = res;
    }
    res_id = json_integer_value(
        json_object_get(src, src == res ? "id" : "reservation_id"));
    if (job_from(src, &job, a->cfg->floor_percent) < 0) {
        rc = fail(EXIT_FAILED, "job %s: malformed reservation", o->job);
        goto out;
    }
    if (job.nvnis == 0) {
        if (!a->dry_run)
            jobstate_remove(a->cfg->state_dir, o->job, true);
        if (!a->json)
            printf("job %s: no VNIs; nothing to destroy\n", o->job);
        rc = EXIT_DONE;
        goto out;
    }
    if ((rc = open_nics(a)) != EXIT_DONE)
        goto out;
    n = services_destroy(a->nb,
                         a->devs,
                         a->ndev,
                         services_match,
                         &job,
                         retry,
                         a->dry_run,
                         done,
                         left,
                         &error);
    if (n < 0) {
        rc = fail(EXIT_FAILED, "job %s: %s", o->job, error.text);
        goto out;
    }
    char msg[768] = "";
    size_t used = 0;
    size_t i;
    json_t *s;
    json_array_foreach (left, i, s) {
        int k = snprintf(
            msg + used,
            sizeof(msg) - used,
            "%s%s svc %lld (%s)",
            used ? ", " : "",
            json_string_value(json_object_get(s, "device")),
            (long long)json_integer_value(json_object_get(s, "svc_id")),
            json_string_value(json_object_get(s, "error")));
        if (k < 0 || (size_t)k >= sizeof(msg) - used)
            break;
        used += (size_t)k;
    }
    if (a->dry_run) {
        rc = EXIT_DONE;
        goto print;
    }
    char note[sizeof(msg) + 96];
    snprintf(note,
             sizeof(note),
             "%s: %d service(s) remain after %ld ms: %s",
             what,
             n,
             retry,
             msg);
    json_t *held = n ? report_services(left) : NULL;
    struct vnib_report r = {
        .job_id = o->job,
        .node = a->node,
        .cxi = n ? "failed" : "destroyed",
        .services = held,
        .message = n ? note : NULL,
        .reservation = res_id,
    };
    status = report_or_spool(a, &r, &error);
    json_decref(held);
    if (status == 200) {
        outcome = "sent";
        flush_quietly(a);
    } else if (status == 0) {
        outcome = "spooled";
        warn(a,
             "job %s: the broker did not take the report (%s); spooled in "
             "%s for 'vnib-agent flush'",
             o->job,
             error.text,
             a->cfg->spool_dir);
    } else {
        outcome = status < 0 ? "lost" : "refused";
        warn(a,
             "job %s: the broker did not take the report: %s",
             o->job,
             error.text);
    }
    /* The record goes once the services are gone and the broker has the
     * report, or will have it from the spool. */
    jobstate_remove(a->cfg->state_dir, o->job, n == 0 && status >= 0);
    if (n > 0) {
        if (final)
            rc = fail(EXIT_FAILED,
                      "job %s: %d CXI service(s) remain: %s; drain this node, "
                      "then run 'vnib-agent clean --all'",
                      o->job,
                      n,
                      msg);
        else {
            warn(a,
                 "job %s: %d CXI service(s) still busy after %ld ms, left "
                 "for housekeeping: %s",
                 o->job,
                 n,
                 retry,
                 msg);
            rc = EXIT_DONE;
        }
    } else if (status < 0 && final)
        rc = fail(EXIT_UNREACHABLE,
                  "job %s: services destroyed, but the broker was not told",
                  o->job);
    else
        rc = EXIT_DONE;
print:
    if (!a->json && n == 0)
        printf("job %s: %s %zu service(s)\n",
               o->job,
               a->dry_run ? "would destroy" : "destroyed",
               json_array_size(done));
    if (a->json) {
        json_t *o2 = json_pack("{s:s, s:s, s:I, s:O, s:O, s:s, s:O, s:b}",
                               "job_id",
                               o->job,
                               "node",
                               a->node,
                               "reservation_id",
                               (json_int_t)res_id,
                               "destroyed",
                               done,
                               "remaining",
                               left,
                               "report",
                               outcome,
                               "warnings",
                               a->warnings,
                               "dry_run",
                               a->dry_run);
        if (o2)
            print_json(o2);
        json_decref(o2);
    }
out:
    json_decref(res);
    json_decref(record);
    json_decref(done);
    json_decref(left);
    return rc;
}

/* clean --all: the services whose VNIs lie in the pool. */
static bool pick_pool(const struct nic_svc *svc, const void *arg)
{
    const struct idset *pool = arg;
    if (svc->is_system || svc->svc_id == 1 || svc->nvnis == 0)
        return false;
    for (int i = 0; i < svc->nvnis; i++)
        if (idset_contains(pool, svc->vnis[i]))
            return true;
    return false;
}

/* True when a service in list has exactly the VNIs of res. */
static bool holds(json_t *list, json_t *res)
{
    size_t i;
    json_t *s;
    json_array_foreach (list, i, s) {
        if (json_equal(json_object_get(s, "vnis"), json_object_get(res, "vnis"))
            && json_integer_value(json_object_get(s, "uid"))
                   == json_integer_value(json_object_get(res, "uid")))
            return true;
    }
    return false;
}

static int cmd_clean(struct agent *a, const struct subopts *o)
{
    vnib_error_t error = {""};
    json_t *pool_reply = NULL, *view = NULL, *done, *left, *reported;
    struct idset *pool = NULL;
    char path[TOKEN_NODE_MAX + 32];
    int rc, status;

    if (!o->all)
        return fail(EXIT_USAGE,
                    "clean: --all is required (it destroys every "
                    "job service on this node)");
    done = json_array();
    left = json_array();
    reported = json_array();
    if (!done || !left || !reported) {
        rc = fail(EXIT_FAILED, "out of memory");
        goto out;
    }
    if ((rc = connect_broker(a)) != EXIT_DONE)
        goto out;
    char *esc = vnib_client_escape(a->node);
    if (!esc) {
        rc = fail(EXIT_FAILED, "out of memory");
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/nodes/%s", esc);
    free(esc);
    if ((status = broker_get(a->client,
                             "/v1/pool",
                             a->cfg->fetch_timeout_ms,
                             &pool_reply,
                             &error))
            != 200
        || (status = broker_get(
                a->client, path, a->cfg->fetch_timeout_ms, &view, &error))
               != 200) {
        rc = broker_failure("clean", status, &error);
        goto out;
    }
    const char *ranges =
        json_string_value(json_object_get(pool_reply, "ranges"));
    if (!ranges || !(pool = idset_decode(ranges, 65535, &error))) {
        rc = fail(EXIT_FAILED, "clean: the broker's pool is unreadable");
        goto out;
    }
    if ((rc = open_nics(a)) != EXIT_DONE)
        goto out;
    long retry = o->retry_ms >= 0 ? o->retry_ms : a->cfg->epilog_retry_busy_ms;
    int n = services_destroy(a->nb,
                             a->devs,
                             a->ndev,
                             pick_pool,
                             pool,
                             retry,
                             a->dry_run,
                             done,
                             left,
                             &error);
    if (n < 0) {
        rc = fail(EXIT_FAILED, "clean: %s", error.text);
        goto out;
    }
    /* Every reservation this node may still hold is now settled: destroyed
     * unless one of its services is among those left. */
    size_t i;
    json_t *r;
    json_array_foreach (json_object_get(view, "reservations"), i, r) {
        if (!json_is_true(json_object_get(r, "cleanup_needed")))
            continue;
        const char *job_id = json_string_value(json_object_get(r, "job_id"));
        long long res_id = json_integer_value(json_object_get(r, "id"));
        bool stuck = holds(left, r);
        if (!job_id)
            continue;
        json_array_append_new(reported,
                              json_pack("{s:s, s:I, s:s}",
                                        "job_id",
                                        job_id,
                                        "reservation_id",
                                        (json_int_t)res_id,
                                        "cxi",
                                        stuck ? "failed" : "destroyed"));
        if (a->dry_run)
            continue;
        status =
            report(a,
                   job_id,
                   res_id,
                   stuck ? "failed" : "destroyed",
                   NULL,
                   stuck ? "clean --all: services still busy" : "clean --all",
                   &error);
        if (status != 200)
            warn(a,
                 "job %s: the broker did not take the report: %s",
                 job_id,
                 error.text);
        else {
            /* What this run reported supersedes what an earlier one
             * spooled for the same reservation. */
            jobstate_spool_remove(a->cfg->spool_dir, job_id, res_id);
            if (!stuck)
                jobstate_remove(a->cfg->state_dir, job_id, true);
        }
    }
    flush_quietly(a);
    if (a->json) {
        json_t *out = json_pack("{s:s, s:O, s:O, s:O, s:O, s:b}",
                                "node",
                                a->node,
                                "destroyed",
                                done,
                                "remaining",
                                left,
                                "reported",
                                reported,
                                "warnings",
                                a->warnings,
                                "dry_run",
                                a->dry_run);
        if (out)
            print_json(out);
        json_decref(out);
    } else
        printf("clean: %s %zu service(s), %d remain; %zu job(s) reported\n",
               a->dry_run ? "would destroy" : "destroyed",
               json_array_size(done),
               n,
               json_array_size(reported));
    rc = n > 0 ? fail(EXIT_FAILED, "clean: %d service(s) remain busy", n)
               : EXIT_DONE;
out:
    idset_destroy(pool);
    json_decref(pool_reply);
    json_decref(view);
    json_decref(done);
    json_decref(left);
    json_decref(reported);
    return rc;
}

static int cmd_env(struct agent *a, const struct subopts *o)
{
    vnib_error_t error = {""};
    struct jobenv env = {{NULL}};
    json_t *res = NULL;
    int *ids = NULL;
    int rc = EXIT_DONE, status;

    if (!jobenv_format_valid(o->format))
        return fail(EXIT_USAGE,
                    "env: --format '%s' is not export, json or "
                    "slurm-taskprolog",
                    o->format);
    if (geteuid() != 0) {
        /* A user reads what root's prolog left for the job; it cannot
         * read the node token, and must not. */
        if (jobstate_read_env(a->cfg->state_dir, o->job, &env, &error) < 0) {
            if (errno != ENOENT)
                return fail(EXIT_FAILED, "env: %s", error.text);
            warn(a,
                 "job %s: no environment prepared on this node; "
                 "clearing the variables",
                 o->job);
        }
    } else {
        if ((rc = connect_broker(a)) != EXIT_DONE)
            return rc;
        status = broker_fetch(
            a->client, o->job, a->cfg->fetch_timeout_ms, &res, &error);
        if (status != 200 && status != 404) {
            rc = broker_failure("env", status, &error);
            goto done;
        }
        if (status == 200) {
            struct services_job job;
            if (job_from(res, &job, 0) < 0) {
                rc = fail(EXIT_FAILED, "env: malformed reservation");
                goto done;
            }
            if ((rc = open_nics(a)) != EXIT_DONE)
                goto done;
            if (!(ids = calloc((size_t)a->ndev + 1, sizeof(*ids)))
                || services_find(a->nb, a->devs, a->ndev, &job, ids, &error) < 0
                || jobenv_build(&env, res, a->devs, ids, a->ndev, &error) < 0) {
                rc = fail(EXIT_FAILED, "env: %s", error.text);
                goto done;
            }
        }
    }
    if (jobenv_write(&env, a->json ? "json" : o->format, stdout, &error) < 0)
        rc = fail(EXIT_FAILED, "env: %s", error.text);
done:
    jobenv_clear(&env);
    json_decref(res);
    free(ids);
    return rc;
}

static int cmd_list(struct agent *a)
{
    vnib_error_t error = {""};
    json_t *all = json_array();
    int rc;

    if ((rc = open_nics(a)) != EXIT_DONE)
        goto out;
    if (!a->json)
        printf(
            "%-8s %6s %7s %-24s %s\n", "NIC", "SVC", "UID", "VNIS", "RESERVED");
    for (int d = 0; d < a->ndev; d++) {
        struct nic_svc *svcs = NULL;
        int n = 0;
        if (nic_svc_list(a->nb, &a->devs[d], &svcs, &n, &error) < 0) {
            rc = fail(EXIT_FAILED, "%s", error.text);
            goto out;
        }
        for (int i = 0; i < n; i++) {
            const struct nic_svc *s = &svcs[i];
            char vnis[64] = "", lim[160], id[24], uid[24];
            size_t used = 0;
            for (int k = 0; k < s->nvnis; k++)
                used += (size_t)snprintf(vnis + used,
                                         sizeof(vnis) - used,
                                         "%s%u",
                                         k ? "," : "",
                                         s->vnis[k]);
            limits_format(s->res, lim, sizeof(lim));
            snprintf(id,
                     sizeof(id),
                     "%u%s%s",
                     s->svc_id,
                     s->is_system ? "/sys" : "",
                     s->enabled ? "" : "-");
            snprintf(uid, sizeof(uid), "%ld", s->has_uid ? (long)s->uid : -1L);
            if (a->json) {
                json_t *j = services_json(&a->devs[d], s);
                json_object_set_new(j, "system", json_boolean(s->is_system));
                json_object_set_new(j, "enabled", json_boolean(s->enabled));
                json_object_set_new(j, "reserved", json_string(lim));
                json_array_append_new(all, j);
            } else
                printf("%-8s %6s %7s %-24s %s\n",
                       a->devs[d].name,
                       id,
                       s->has_uid ? uid : "-",
                       *vnis ? vnis : "-",
                       s->resource_limits ? lim : "-");
        }
        free(svcs);
    }
    if (a->json)
        print_json(all);
    rc = EXIT_DONE;
out:
    json_decref(all);
    return rc;
}

static int cmd_sim_init(struct agent *a, const struct subopts *o)
{
    vnib_error_t error = {""};
    if (o->nics < 0)
        return fail(EXIT_USAGE, "sim-init: --nics N is required");
    if (a->dry_run)
        return EXIT_DONE;
    if (nic_sim_init(a->cfg->sim_dir, (int)o->nics, &error) < 0)
        return fail(EXIT_FAILED, "sim-init: %s", error.text);
    if (!a->json)
        printf("sim: %ld NIC(s) in %s\n", o->nics, a->cfg->sim_dir);
    return EXIT_DONE;
}

static const char *const commands[] = {"prolog",
                                       "epilog",
                                       "housekeeping",
                                       "clean",
                                       "flush",
                                       "env",
                                       "list",
                                       "sim-init",
                                       NULL};

static int parse_subopts(
    struct agent *a, const char *cmd, int argc, char **argv, struct subopts *o)
{
    static const struct option opts[] = {
        {"job", required_argument, NULL, 'j'},
        {"uid", required_argument, NULL, 'u'},
        {"ncores", required_argument, NULL, 'n'},
        {"retry-busy", required_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'f'},
        {"all", no_argument, NULL, 'a'},
        {"allow-missing", no_argument, NULL, 'M'},
        {"nics", required_argument, NULL, 'N'},
        {"json", no_argument, NULL, 'J'},
        {"dry-run", no_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    *o = (struct subopts){
        .uid = -1, .retry_ms = -1, .format = "export", .nics = -1};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
            case 'j':
                o->job = optarg;
                break;
            case 'u':
                if (parse_long(optarg, 0, 4294967294L, &o->uid) < 0)
                    return fail(
                        EXIT_USAGE, "%s: --uid '%s' is not a uid", cmd, optarg);
                break;
            case 'n':
                if (parse_long(optarg, 1, 65535, &o->ncores) < 0)
                    return fail(EXIT_USAGE,
                                "%s: --ncores '%s' is not 1-65535",
                                cmd,
                                optarg);
                break;
            case 'r':
                if (parse_duration(optarg, &o->retry_ms) < 0)
                    return fail(EXIT_USAGE,
                                "%s: --retry-busy '%s' is not a duration "
                                "(500ms, 5s, 5m, 1h)",
                                cmd,
                                optarg);
                break;
            case 'f':
                o->format = optarg;
                break;
            case 'a':
                o->all = true;
                break;
            case 'M':
                o->allow_missing = true;
                break;
            case 'N':
                if (parse_long(optarg, 0, 64, &o->nics) < 0)
                    return fail(
                        EXIT_USAGE, "%s: --nics '%s' is not 0-64", cmd, optarg);
                break;
            case 'J':
                a->json = true;
                break;
            case 'D':
                a->dry_run = true;
                break;
            case 'h':
                fputs(usage_text, stdout);
                exit(EXIT_DONE);
            case ':':
                return fail(
                    EXIT_USAGE, "%s: %s needs a value", cmd, argv[optind - 1]);
            default:
                return fail(EXIT_USAGE,
                            "%s: unknown option '%s'",
                            cmd,
                            argv[optind - 1]);
        }
    }
    if (optind < argc)
        return fail(
            EXIT_USAGE, "%s: unexpected argument '%s'", cmd, argv[optind]);
    bool needs_job = strcmp(cmd, "clean") && strcmp(cmd, "flush")
                     && strcmp(cmd, "list") && strcmp(cmd, "sim-init");
    if (needs_job && !o->job)
        return fail(EXIT_USAGE, "%s: --job ID is required", cmd);
    if (o->job && !jobstate_job_id_valid(o->job))
        return fail(EXIT_USAGE,
                    "%s: --job '%s' is not a job id (1-128 of letters, digits, "
                    "'.', '_', '-')",
                    cmd,
                    o->job);
    return EXIT_DONE;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"url", required_argument, NULL, 'U'},
        {"token-file", required_argument, NULL, 't'},
        {"cacert", required_argument, NULL, 'C'},
        {"node", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'J'},
        {"dry-run", no_argument, NULL, 'D'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agent a = {0};
    const char *config = NULL, *url = NULL, *token_file = NULL, *cacert = NULL,
               *node = NULL;
    vnib_error_t error = {""};
    struct subopts o;
    int c, rc;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
            case 'c':
                config = optarg;
                break;
            case 'U':
                url = optarg;
                break;
            case 't':
                token_file = optarg;
                break;
            case 'C':
                cacert = optarg;
                break;
            case 'n':
                node = optarg;
                break;
            case 'J':
                a.json = true;
                break;
            case 'D':
                a.dry_run = true;
                break;
            case 'V':
                printf("vnib-agent %s\n", VNIB_VERSION);
                return EXIT_DONE;
            case 'h':
                fputs(usage_text, stdout);
                return EXIT_DONE;
            case ':':
                return fail(EXIT_USAGE, "%s needs a value", argv[optind - 1]);
            default:
                return fail(EXIT_USAGE,
                            "unknown option '%s' (see --help)",
                            argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return fail(EXIT_USAGE, "a command is required (see --help)");
    const char *cmd = argv[optind];
    bool known = false;
    for (int i = 0; commands[i]; i++)
        known |= strcmp(commands[i], cmd) == 0;
    if (!known)
        return fail(EXIT_USAGE, "unknown command '%s' (see --help)", cmd);
    if ((rc = parse_subopts(&a, cmd, argc - optind, argv + optind, &o))
        != EXIT_DONE)
        return rc;
    if (!(a.cfg = agentcfg_load(
              config ? config : AGENTCFG_DEFAULT_PATH, config != NULL, &error)))
        return fail(EXIT_USAGE, "%s", error.text);
    if ((url && agentcfg_set(&a.cfg->url, url) < 0)
        || (token_file && agentcfg_set(&a.cfg->token_file, token_file) < 0)
        || (cacert && agentcfg_set(&a.cfg->cacert, cacert) < 0)
        || (node && agentcfg_set(&a.cfg->name, node) < 0)) {
        rc = fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (node && !token_node_name_valid(node)) {
        rc = fail(EXIT_USAGE, "--node '%s' is not a node name", node);
        goto done;
    }
    if (!(a.warnings = json_array())) {
        rc = fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (!strcmp(cmd, "prolog"))
        rc = cmd_prolog(&a, &o);
    else if (!strcmp(cmd, "epilog"))
        rc = cmd_teardown(&a, &o, false);
    else if (!strcmp(cmd, "housekeeping"))
        rc = cmd_teardown(&a, &o, true);
    else if (!strcmp(cmd, "clean"))
        rc = cmd_clean(&a, &o);
    else if (!strcmp(cmd, "flush"))
        rc = cmd_flush(&a);
    else if (!strcmp(cmd, "env"))
        rc = cmd_env(&a, &o);
    else if (!strcmp(cmd, "list"))
        rc = cmd_list(&a);
    else
        rc = cmd_sim_init(&a, &o);
done:
    agent_fini(&a);
    return rc;
}
