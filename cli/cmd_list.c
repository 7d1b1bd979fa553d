/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's listings, a page at a time: list (reservations, every page
 * with --all) and events (the audit trail), each a table for cli/opts.c
 * and a handler.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnib/client.h"
#include "cli/cmd_list.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/print.h"

/* ---- list ------------------------------------------------------------- */

static const char help_list[] =
    "Usage: vnibctl list [--state STATE] [--node NAME] [--uid N] [--limit N]\n"
    "                    [--after CURSOR] [--all]\n"
    "List reservations, oldest first (roles: scheduler, admin, monitor).\n"
    "  --state STATE    active, releasing or released\n"
    "  --node NAME      only reservations that include this node\n"
    "  --uid N          only this user's (0-4294967294)\n"
    "  --limit N        reservations per page (1-1000; default 100)\n"
    "  --after CURSOR   start after this cursor (a page's `next`)\n"
    "  --all            fetch every page\n"
    "  --json           print the page (with --all: every reservation) as "
    "JSON\n"
    "Columns: JOB_ID STATE UID USER NODES VNIS CREATED STEP (a job step's\n"
    "reservation: its step id; its VNIS are the step's own).\n";

/* One page of the list (params include the cursor): GET, append its
 * reservations to `all`, and return its `next` cursor (a new string, or NULL on
 * the last page) in *nextp.
 */
static int list_page(struct ctl *ctl,
                     const char *const *params,
                     json_t *all,
                     char **nextp,
                     json_t **pagep)
{
    json_t *reply = NULL;
    int rc;

    *nextp = NULL;
    *pagep = NULL;
    rc = ctl_call(ctl, "GET", "/v1/reservations", params, &reply);
    if (rc != CTL_EXIT_OK)
        goto done;
    json_t *rows = json_object_get(reply, "reservations");
    if (!json_is_array(rows)) {
        rc = ctl_fail(CTL_EXIT_UNREACHABLE,
                      "the broker's reply has no reservations list");
        goto done;
    }
    if (json_array_extend(all, rows) < 0) {
        rc = ctl_fail(CTL_EXIT_FAILED, "out of memory");
        goto done;
    }
    const char *next = print_str(reply, "next");
    if (next && !(*nextp = strdup(next))) {
        rc = ctl_fail(CTL_EXIT_FAILED, "out of memory");
        goto done;
    }
    *pagep = reply;
    reply = NULL;
done:
    json_decref(reply);
    return rc;
}

struct list_args {
    const char *state;
    const char *node;
    struct opts_uint uid;
    struct opts_uint limit;
    const char *after;
    bool all;
};

/* The table's columns: headers, then the keys of the reply's objects. */
static const char *const list_columns[2][8] = {
    {"JOB_ID", "STATE", "UID", "USER", "NODES", "VNIS", "CREATED", "STEP"},
    {"job_id",
     "state",
     "uid",
     "user",
     "nodes",
     "vnis",
     "created_at",
     "step_id"},
};

static int run_list(struct ctl *ctl, void *args, char **pos)
{
    const struct list_args *a = args;
    json_t *all = NULL;
    json_t *page = NULL;
    char *next = NULL;
    char *cursor = NULL;
    int rc;

    (void)pos;
    /* The cursor, params[9], moves with each page. */
    const char *params[] = {"state",
                            a->state,
                            "node",
                            a->node,
                            "uid",
                            a->uid.text,
                            "limit",
                            a->limit.text,
                            "after",
                            a->after,
                            NULL};

    if (!(all = json_array()))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    for (;;) {
        json_decref(page);
        params[9] = cursor ? cursor : a->after;
        rc = list_page(ctl, params, all, &next, &page);
        if (rc != CTL_EXIT_OK || !a->all || !next)
            break;
        /* A cursor that does not move would loop forever. */
        if (cursor && strcmp(cursor, next) == 0) {
            rc = ctl_fail(CTL_EXIT_FAILED,
                          "the broker returned the same cursor twice");
            break;
        }
        free(cursor);
        cursor = next;
        next = NULL;
    }
    if (rc != CTL_EXIT_OK)
        goto done;
    if (ctl->json && !a->all) {
        rc = ctl_print_json(page);
    } else if (ctl->json) {
        json_t *o = json_pack("{s:O, s:n}", "reservations", all, "next");
        rc = o ? ctl_print_json(o) : ctl_fail(CTL_EXIT_FAILED, "out of memory");
        json_decref(o);
    } else {
        rc = print_table(all, 8, list_columns[0], list_columns[1]);
        fflush(stdout); /* the table before the hint, also in a pipe */
        if (rc == CTL_EXIT_OK && next)
            fprintf(stderr,
                    "vnibctl: more reservations follow: --after %s (or "
                    "--all)\n",
                    next);
    }
done:
    json_decref(page);
    json_decref(all);
    free(next);
    free(cursor);
    return rc;
}

static const char *const list_states[] = {
    "active", "releasing", "released", NULL};

/* clang-format off */
static const struct opts_option list_options[] = {
    OPTS_ROW_CHOICE("state", 's', struct list_args, state, OPTS_LATE, "STATE", list_states, "active, releasing or released"),
    OPTS_ROW_STRING("node", 'n', struct list_args, node, OPTS_LATE, "NAME", ctl_check_node),
    OPTS_ROW_UINT("uid", 'u', struct list_args, uid, 0, "N", 0, 4294967294ull),
    OPTS_ROW_UINT("limit", 'l', struct list_args, limit, 0, "N", 1, 1000),
    OPTS_ROW_STRING("after", 'a', struct list_args, after, 0, "CURSOR", NULL),
    OPTS_ROW_FLAG("all", 'A', struct list_args, all),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- events ----------------------------------------------------------- */

static const char help_events[] =
    "Usage: vnibctl events [--job JOB_ID] [--action ACTION] [--node NAME]\n"
    "                      [--newest] [--limit N] [--after CURSOR]\n"
    "Show the audit trail of state changes, oldest first (roles: admin,\n"
    "scheduler, monitor).  The filters combine.\n"
    "  --job JOB_ID     only this job's events (and its steps')\n"
    "  --action ACTION  only this action's: reserve, release, report,\n"
    "                   quarantine_end, force, drain, undrain, hwcoll or\n"
    "                   step_release (the broker checks it)\n"
    "  --node NAME      only the events about this node (its reports,\n"
    "                   drain, undrain)\n"
    "  --newest         newest first (the `next` cursor goes on backwards)\n"
    "  --limit N        events per page (1-1000; default 100)\n"
    "  --after CURSOR   start after this cursor (a page's `next`, in the\n"
    "                   same order)\n"
    "  --json           print the page as JSON\n"
    "Columns: ID TIME JOB_ID NODE ACTOR ACTION DETAIL.\n";

struct events_args {
    const char *job;
    const char *action;
    const char *node;
    bool newest;
    struct opts_uint limit;
    const char *after;
};

/* The table's columns: headers, then the keys of the events. */
static const char *const events_columns[2][7] = {
    {"ID", "TIME", "JOB_ID", "NODE", "ACTOR", "ACTION", "DETAIL"},
    {"id", "time", "job_id", "node", "actor", "action", "detail"},
};

static int run_events(struct ctl *ctl, void *args, char **pos)
{
    const struct events_args *a = args;
    const char *const params[] = {"job_id",
                                  a->job,
                                  "action",
                                  a->action,
                                  "node",
                                  a->node,
                                  "order",
                                  a->newest ? "desc" : NULL,
                                  "limit",
                                  a->limit.text,
                                  "after",
                                  a->after,
                                  NULL};
    json_t *reply = NULL;
    int rc;

    (void)pos;
    if ((rc = ctl_call(ctl, "GET", "/v1/events", params, &reply))
        != CTL_EXIT_OK)
        goto done;
    if (ctl->json) {
        rc = ctl_print_json(reply);
        goto done;
    }
    rc = print_table(json_object_get(reply, "events"),
                     7,
                     events_columns[0],
                     events_columns[1]);
    fflush(stdout); /* the table before the hint, also in a pipe */
    if (rc == CTL_EXIT_OK && print_str(reply, "next"))
        fprintf(stderr,
                "vnibctl: more events follow: --after %s%s\n",
                print_str(reply, "next"),
                a->newest ? " --newest" : "");
done:
    json_decref(reply);
    return rc;
}

/* clang-format off */
static const struct opts_option events_options[] = {
    OPTS_ROW_STRING("job", 'J', struct events_args, job, 0, "JOB_ID", ctl_check_job_id),
    OPTS_ROW_STRING("action", 'A', struct events_args, action, 0, "ACTION", NULL),
    OPTS_ROW_STRING("node", 'n', struct events_args, node, OPTS_LATE, "NAME", ctl_check_node),
    OPTS_ROW_FLAG("newest", 'N', struct events_args, newest),
    OPTS_ROW_UINT("limit", 'l', struct events_args, limit, 0, "N", 1, 1000),
    OPTS_ROW_STRING("after", 'a', struct events_args, after, 0, "CURSOR", NULL),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- the group -------------------------------------------------------- */

/* clang-format off */
const struct opts_command cmd_list_commands[] = {
    {"list", help_list, false, 0, "", {NULL, NULL}, list_options, sizeof(struct list_args), run_list, NULL},
    {"events", help_events, false, 0, "", {NULL, NULL}, events_options, sizeof(struct events_args), run_events, NULL},
    {.name = NULL},
};
/* clang-format on */
