/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's commands on one job's reservation: reserve, release, show and
 * report (each also of a job step's, with --step), each a table for
 * cli/opts.c and a handler making one REST call through lib/client.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/hostlist.h"
#include "vnib/tclass.h"
#include "cli/cmd_reserve.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/print.h"

/* The end of every command here: the outcome of the call and the
 * reservation the broker answered with.  Consumes reply.
 */
static int reservation_reply(const struct ctl *ctl,
                             int status,
                             json_t *reply,
                             const vnib_error_t *error)
{
    int rc = ctl_outcome(ctl, status, reply, error);

    if (rc == CTL_EXIT_OK)
        rc = print_reservation(ctl, reply);
    json_decref(reply);
    return rc;
}

/* ---- reserve ---------------------------------------------------------- */

static const char help_reserve[] =
    "Usage: vnibctl reserve JOB_ID --uid N --user NAME --nodes HOSTLIST "
    "[--vnis N]\n"
    "                      [--hwcoll on|off|auto] [--lease]\n"
    "       vnibctl reserve JOB_ID --step STEP --nodes HOSTLIST [--vnis N]\n"
    "                      [--lease]\n"
    "Reserve VNIs for a job (roles: scheduler, admin).  Repeating it with\n"
    "the same token, uid and nodes prints the job's active reservation as it\n"
    "is, whatever else differs (listed as \"differs\"); another\n"
    "token, uid or node list for an active job is refused\n"
    "(reservation_conflict).\n"
    "  --uid N           the job's user id (0-4294967294)\n"
    "  --user NAME       the job's user name\n"
    "  --nodes HOSTLIST  the job's nodes, e.g. tux[0-63]\n"
    "  --vnis N          VNIs to reserve (0-4; default: the broker's)\n"
    "  --hwcoll MODE     hardware collectives: on, off or auto (the\n"
    "                    broker's rule by node count; the default)\n"
    "  --step STEP       reserve for a step of the active job instead: on\n"
    "                    nodes of the job, --vnis (default 0) of its own,\n"
    "                    with the job's at most 4; uid, user and traffic\n"
    "                    classes are the job's\n"
    "  --lease           ask for a lease (the broker's lease.key_file): the\n"
    "                    reservation is presumed (every node holds until it\n"
    "                    reports destroyed), and a last line \"lease LEASE\"\n"
    "                    prints it (--json: the \"lease\" key); a repeat must\n"
    "                    ask for one too ('vnibctl lease show' decodes it)\n"
    "  --json            print the reservation as JSON\n";

struct reserve_args {
    struct opts_uint uid;
    const char *user;
    const char *nodes;
    struct opts_uint vnis;
    const char *hwcoll;
    const char *step;
    bool lease;
};

/* A job step id: 1-64 of letters, digits and ._- (as the broker's). */
static int check_step(const char *cmd, const char *step)
{
    size_t n = strspn(step,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._-");
    if (n == 0 || n > 64 || step[n] != '\0')
        return ctl_usage_error(cmd,
                               "--step '%s' is not a valid step id (1-64 of "
                               "letters, digits and ._-)",
                               step);
    return 0;
}

/* A step's reserve: the job's uid, user and hwcoll are not its to set. */
static int run_reserve_step(struct ctl *ctl,
                            const struct reserve_args *a,
                            const char *job_id)
{
    if (a->uid.text || a->user || a->hwcoll)
        return ctl_usage_error("reserve",
                               "--uid, --user and --hwcoll are the job's; "
                               "not with --step");
    const struct vnib_step_reserve r = {
        .job_id = job_id,
        .step_id = a->step,
        .nodes = a->nodes,
        .vni_count = a->vnis.text ? (int)a->vnis.value : -1,
        .lease = a->lease,
    };
    vnib_error_t error = {0};
    json_t *reply = NULL;
    int status = vnib_client_step_reserve(ctl->client, &r, &reply, &error);
    return reservation_reply(ctl, status, reply, &error);
}

static int check_user(const char *cmd, const char *user)
{
    if (!user[0] || strlen(user) > 64)
        return ctl_usage_error(cmd, "--user must be 1-64 bytes");
    return 0;
}

static int check_nodes(const char *cmd, const char *nodes)
{
    vnib_error_t error = {0};
    size_t count = 0;

    if (hostlist_count_expr(nodes, HOSTLIST_DEFAULT_MAX_NAMES, &count, &error)
        < 0)
        return ctl_usage_error(cmd, "--nodes '%s': %s", nodes, error.text);
    return 0;
}

static int run_reserve(struct ctl *ctl, void *args, char **pos)
{
    const struct reserve_args *a = args;
    if (a->step)
        return run_reserve_step(ctl, a, pos[0]);
    if (!a->uid.text || !a->user)
        return ctl_usage_error(
            "reserve", "--%s is required", a->uid.text ? "user NAME" : "uid N");
    const struct vnib_reserve r = {
        .job_id = pos[0],
        .uid = (uint32_t)a->uid.value,
        .user = a->user,
        .nodes = a->nodes,
        .vni_count = a->vnis.text ? (int)a->vnis.value : -1,
        .hwcoll = a->hwcoll,
        .lease = a->lease,
    };
    vnib_error_t error = {0};
    json_t *reply = NULL;
    int status = vnib_client_reserve(ctl->client, &r, &reply, &error);
    return reservation_reply(ctl, status, reply, &error);
}

static const char *const hwcoll_modes[] = {"on", "off", "auto", NULL};

/* clang-format off */
static const struct opts_option reserve_options[] = {
    OPTS_ROW_UINT("uid", 'u', struct reserve_args, uid, OPTS_LATE, "N", 0, 4294967294ull),
    OPTS_ROW_STRING("user", 'U', struct reserve_args, user, OPTS_LATE, "NAME", check_user),
    OPTS_ROW_STRING("nodes", 'n', struct reserve_args, nodes, OPTS_REQUIRED | OPTS_LATE, "HOSTLIST", check_nodes),
    OPTS_ROW_UINT("vnis", 'v', struct reserve_args, vnis, 0, "N", 0, VNIB_SERVICE_VNIS_MAX),
    OPTS_ROW_CHOICE("hwcoll", 'H', struct reserve_args, hwcoll, 0, "MODE", hwcoll_modes, "on, off or auto"),
    OPTS_ROW_STRING("step", 'S', struct reserve_args, step, OPTS_LATE, "STEP", check_step),
    OPTS_ROW_FLAG("lease", 'L', struct reserve_args, lease),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- release ---------------------------------------------------------- */

static const char help_release[] =
    "Usage: vnibctl release JOB_ID [--force] [--reservation ID]\n"
    "       vnibctl release JOB_ID --step STEP [--force]\n"
    "Release a job's VNIs (roles: scheduler, admin).  They stay quarantined\n"
    "until every node that created CXI services reports them destroyed.\n"
    "Repeating the call is harmless.\n"
    "  --force            end the quarantine now (admin only; recorded)\n"
    "  --reservation ID   that reservation of the job and no other (not a\n"
    "                     requeued job's newer one); default: the active\n"
    "                     one, else the newest\n"
    "  --step STEP        end a step of the job instead: its multicast\n"
    "                     trees and its own VNIs, quarantined as a job's\n"
    "  --json             print the reservation as JSON\n";

struct release_args {
    bool force;
    long long reservation;
    const char *step;
};

/* The end of a step release: its outcome, then the step's reservation
 * (none when the step had none).  Consumes reply.
 */
static int step_release_reply(const struct ctl *ctl,
                              int status,
                              json_t *reply,
                              const vnib_error_t *error)
{
    static const char *const order[] = {"job_id", "step_id", "outcome", NULL};
    static const char *const skip[] = {"reservation", NULL};
    int rc = ctl_outcome(ctl, status, reply, error);
    json_t *res = json_object_get(reply, "reservation");

    if (rc == CTL_EXIT_OK && ctl->json)
        rc = ctl_print_json(reply);
    else if (rc == CTL_EXIT_OK) {
        rc = print_kv(reply, order, skip);
        if (rc == CTL_EXIT_OK && json_is_object(res)) {
            printf("\n");
            rc = print_reservation_kv(res);
        }
    }
    json_decref(reply);
    return rc;
}

static int release_reservation(void *args, const char *cmd, const char *arg)
{
    struct release_args *a = args;
    char *end = NULL;

    errno = 0;
    a->reservation = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || a->reservation < 1) {
        fprintf(stderr,
                "vnibctl %s: --reservation: '%s' is not a "
                "reservation id (a positive integer)\n",
                cmd,
                arg);
        return CTL_EXIT_USAGE;
    }
    return OPTS_GO_ON;
}

static int run_release(struct ctl *ctl, void *args, char **pos)
{
    const struct release_args *a = args;
    vnib_error_t error = {0};
    json_t *reply = NULL;
    if (a->step && a->reservation > 0)
        return ctl_usage_error("release",
                               "--reservation is a job's; not with --step");
    if (a->step) {
        int status = vnib_client_step_release(
            ctl->client, pos[0], a->step, a->force, &reply, &error);
        return step_release_reply(ctl, status, reply, &error);
    }
    int status = vnib_client_release(
        ctl->client, pos[0], a->reservation, a->force, &reply, &error);
    return reservation_reply(ctl, status, reply, &error);
}

/* clang-format off */
static const struct opts_option release_options[] = {
    OPTS_ROW_FLAG("force", 'f', struct release_args, force),
    OPTS_ROW_CALL("reservation", 'r', "ID", release_reservation),
    OPTS_ROW_STRING("step", 'S', struct release_args, step, OPTS_LATE, "STEP", check_step),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- show ------------------------------------------------------------- */

static const char help_show[] =
    "Usage: vnibctl show JOB_ID [--step STEP]\n"
    "Show the newest reservation of a job, with its VNIs and how many nodes\n"
    "have cleaned up (roles: scheduler, admin, monitor, a node of the "
    "job).\n"
    "  --step STEP   the newest reservation of a step of the job instead\n"
    "                (a node: of the step's nodes)\n"
    "  --json        print the reservation as JSON\n";

struct show_args {
    const char *step;
};

static int run_show(struct ctl *ctl, void *args, char **pos)
{
    const struct show_args *a = args;
    vnib_error_t error = {0};
    json_t *reply = NULL;
    int status =
        a->step
            ? vnib_client_get_step(ctl->client, pos[0], a->step, &reply, &error)
            : vnib_client_get_reservation(ctl->client, pos[0], &reply, &error);

    return reservation_reply(ctl, status, reply, &error);
}

/* clang-format off */
static const struct opts_option show_options[] = {
    OPTS_ROW_STRING("step", 'S', struct show_args, step, OPTS_LATE, "STEP", check_step),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- report ----------------------------------------------------------- */

static const char help_report[] =
    "Usage: vnibctl report JOB_ID NODE --cxi STATE [--service DEV:SVCID]...\n"
    "                      [--message TEXT] [--reservation ID]\n"
    "Record what a node did with a job's CXI services (roles: admin, the\n"
    "node itself).  Normally the node agent reports; admins use this after\n"
    "cleaning a node by hand.\n"
    "  --cxi STATE           creating, created, destroyed or failed\n"
    "  --service DEV:SVCID   a CXI service on device DEV (e.g. cxi0:5);\n"
    "                        repeatable, at most 64\n"
    "  --message TEXT        a note for the audit trail (at most 1024 "
    "bytes)\n"
    "  --reservation ID      the reservation acted on: refused (409\n"
    "                        stale_reservation) when the job has a newer one\n"
    "  --json                print the reservation as JSON\n";

struct report_args {
    const char *cxi;
    json_t *services; /* created by the first --service */
    const char *message;
    long long reservation;
};

/* Parse DEV:SVCID into a {"device", "svc_id"} object appended to list. */
static int add_service(json_t *list, const char *arg)
{
    const char *colon = strrchr(arg, ':');
    unsigned long long id;
    char dev[33];

    if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(dev)
        || strspn(arg,
                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_.-")
               != (size_t)(colon - arg))
        return ctl_usage_error("report",
                               "--service '%s' is not DEV:SVCID (DEV: 1-32 "
                               "of letters, digits and _.-)",
                               arg);
    if (ctl_parse_uint(
            "report", "--service SVCID", colon + 1, 0, 4294967295ull, &id)
        < 0)
        return CTL_EXIT_USAGE;
    if (json_array_size(list) >= 64)
        return ctl_usage_error("report", "at most 64 --service options");
    memcpy(dev, arg, (size_t)(colon - arg));
    dev[colon - arg] = '\0';
    if (json_array_append_new(
            list,
            json_pack("{s:s, s:I}", "device", dev, "svc_id", (json_int_t)id))
        < 0)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    return 0;
}

static int report_service(void *args, const char *cmd, const char *arg)
{
    struct report_args *a = args;
    int rc;

    (void)cmd;
    if (!a->services && !(a->services = json_array()))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    rc = add_service(a->services, arg);
    return rc != 0 ? rc : OPTS_GO_ON;
}

static int report_reservation(void *args, const char *cmd, const char *arg)
{
    struct report_args *a = args;
    char *end;

    errno = 0;
    a->reservation = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || a->reservation <= 0)
        return ctl_usage_error(
            cmd, "--reservation '%s' is not a positive integer", arg);
    return OPTS_GO_ON;
}

static int check_message(const char *cmd, const char *message)
{
    if (strlen(message) > 1024)
        return ctl_usage_error(cmd, "--message is longer than 1024 bytes");
    return 0;
}

static int run_report(struct ctl *ctl, void *args, char **pos)
{
    const struct report_args *a = args;
    const struct vnib_report r = {
        .job_id = pos[0],
        .node = pos[1],
        .cxi = a->cxi,
        .services = json_array_size(a->services) ? a->services : NULL,
        .message = a->message,
        .reservation = a->reservation,
    };
    vnib_error_t error = {0};
    json_t *reply = NULL;
    int status = vnib_client_report(ctl->client, &r, &reply, &error);
    return reservation_reply(ctl, status, reply, &error);
}

static void report_cleanup(void *args)
{
    json_decref(((struct report_args *)args)->services);
}

static const char *const cxi_states[] = {
    "creating", "created", "destroyed", "failed", NULL};

/* clang-format off */
static const struct opts_option report_options[] = {
    OPTS_ROW_CHOICE("cxi", 'c', struct report_args, cxi, OPTS_REQUIRED | OPTS_LATE, "STATE", cxi_states, "creating, created, destroyed or failed"),
    OPTS_ROW_CALL("service", 's', "DEV:SVCID", report_service),
    OPTS_ROW_STRING("message", 'm', struct report_args, message, OPTS_LATE, "TEXT", check_message),
    OPTS_ROW_CALL("reservation", 'r', "ID", report_reservation),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- the group -------------------------------------------------------- */

/* clang-format off */
const struct opts_command cmd_reserve_commands[] = {
    {"reserve", help_reserve, false, 1, "JOB_ID", {ctl_check_job_id, NULL}, reserve_options, sizeof(struct reserve_args), run_reserve, NULL},
    {"release", help_release, false, 1, "JOB_ID", {ctl_check_job_id, NULL}, release_options, sizeof(struct release_args), run_release, NULL},
    {"show", help_show, false, 1, "JOB_ID", {ctl_check_job_id, NULL}, show_options, sizeof(struct show_args), run_show, NULL},
    {"report", help_report, false, 2, "JOB_ID and NODE", {ctl_check_job_id, ctl_check_node}, report_options, sizeof(struct report_args), run_report, report_cleanup},
    {.name = NULL},
};
/* clang-format on */
