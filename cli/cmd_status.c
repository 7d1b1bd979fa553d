/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's overview of the broker: status, one GET /v1/status (the call
 * the status page /ui/ makes) printed as a compact summary by
 * cli/statusfmt.c, or the reply as is with --json.  A table for cli/opts.c
 * and a handler.
 */
#include <stdio.h>

#include <jansson.h>

#include "cli/cmd_status.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/statusfmt.h"
#include "vnib/error.h"

/* Rows listed when no limit is given: the oldest few, the newest few. */
#define STATUS_DEFAULT_LIMIT "10"

static const char help_status[] =
    "Usage: vnibctl status [--quarantine-limit N] [--drained-limit N]\n"
    "Show the broker at a glance, from one GET /v1/status (roles: admin,\n"
    "scheduler, monitor): the pool (free, active, quarantined, outside the\n"
    "pool, total and the share in use), the quarantine (reservations, VNIs,\n"
    "the oldest's age), the drained nodes, the Fabric Manager (connection,\n"
    "queue, last error, last reconcile), the leader replica and the\n"
    "database; then the oldest quarantined reservations (job, step, VNIs,\n"
    "age, the nodes still holding CXI services and their count) and the\n"
    "newest drained nodes (node, for how long, since, reason).  Ages are\n"
    "measured on the broker's clock.\n"
    "  --quarantine-limit N  quarantined reservations listed (1-1000;\n"
    "                        default " STATUS_DEFAULT_LIMIT
    ")\n"
    "  --drained-limit N     drained nodes listed (1-1000; "
    "default " STATUS_DEFAULT_LIMIT
    ")\n"
    "  --json                print the broker's reply as is\n";

struct status_args {
    struct opts_uint quarantine_limit;
    struct opts_uint drained_limit;
};

static int run_status(struct ctl *ctl, void *args, char **pos)
{
    const struct status_args *a = args;
    const char *const params[] = {
        "quarantine_limit",
        a->quarantine_limit.text ? a->quarantine_limit.text
                                 : STATUS_DEFAULT_LIMIT,
        "drained_limit",
        a->drained_limit.text ? a->drained_limit.text : STATUS_DEFAULT_LIMIT,
        NULL,
    };
    json_t *reply = NULL;
    vnib_error_t err = {0};
    int rc;

    (void)pos;
    if ((rc = ctl_call(ctl, "GET", "/v1/status", params, &reply))
        != CTL_EXIT_OK)
        goto done;
    if (ctl->json)
        rc = ctl_print_json(reply);
    else if (statusfmt_write(stdout, reply, &err) < 0)
        rc = ctl_fail(
            json_is_object(reply) ? CTL_EXIT_FAILED : CTL_EXIT_UNREACHABLE,
            "%s",
            err.text);
done:
    json_decref(reply);
    return rc;
}

/* clang-format off */
static const struct opts_option status_options[] = {
    OPTS_ROW_UINT("quarantine-limit", 'q', struct status_args, quarantine_limit, 0, "N", 1, 1000),
    OPTS_ROW_UINT("drained-limit", 'd', struct status_args, drained_limit, 0, "N", 1, 1000),
    OPTS_ROW_END,
};

const struct opts_command cmd_status_commands[] = {
    {"status", help_status, false, 0, "", {NULL, NULL}, status_options, sizeof(struct status_args), run_status, NULL},
    {.name = NULL},
};
/* clang-format on */
