/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl topology: the cluster's switches as Slurm's topology.conf
 * describes them (lib/topology.c), read on the host vnibctl runs on.
 *
 * Without a job it summarises or validates the file (--check exits 2 with
 * "FILE:LINE:COL: ..." on an error, as the broker would refuse to start);
 * with a job it fetches the job's reservation from the broker and tells
 * which leaf switches the job's nodes span, and how many nodes on each,
 * which is what decides how much of the fabric a job's traffic crosses.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/hostlist.h"
#include "vnib/topology.h"
#include "cli/cmd_topo.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/print.h"

static const char help_topology[] =
    "Usage: vnibctl topology [--file PATH] [--check] [JOB_ID]\n"
    "Read Slurm's topology.conf (tree topology) on this host.\n"
    "  (no JOB_ID)     a summary: switches, leaf switches, nodes (no broker\n"
    "                  call)\n"
    "  JOB_ID          the leaf switches the job's reserved nodes span, with\n"
    "                  the number of its nodes on each (roles: scheduler,\n"
    "                  admin, monitor)\n"
    "  --file PATH     the file (default " TOPOLOGY_DEFAULT_PATH
    ")\n"
    "  --check         only validate the file: exit 0, or 2 with\n"
    "                  FILE:LINE:COL and the error\n"
    "  --json          print the result as JSON\n"
    "Exit status 2 also when the file cannot be read or is invalid.\n";

struct topo_args {
    const char *file;
    bool check;
};

/* The file, or an exit status (2, having printed why) in *rcp. */
static struct topology *load(const struct topo_args *a, int *rcp)
{
    vnib_error_t error = {0};
    struct topology *t =
        topology_load(a->file ? a->file : TOPOLOGY_DEFAULT_PATH,
                      HOSTLIST_DEFAULT_MAX_NAMES,
                      &error);

    if (!t)
        *rcp = ctl_fail(CTL_EXIT_USAGE, "%s", error.text);
    return t;
}

static int print_result(const struct ctl *ctl, json_t *obj, bool spans)
{
    static const char *const order[] = {
        "job_id", "file", "nodes", "node_count", "leaf_switches", NULL};
    static const char *const skip[] = {"switches", NULL};
    static const char *const headers[] = {"SWITCH", "NODES"};
    static const char *const keys[] = {"switch", "nodes"};
    int rc;

    if (!obj)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    if (ctl->json)
        return ctl_print_json(obj);
    if (!spans)
        return print_kv(obj, order, NULL);
    if ((rc = print_kv(obj, order, skip)) != CTL_EXIT_OK)
        return rc;
    json_t *rows = json_object_get(obj, "switches");
    if (json_array_size(rows) == 0)
        return CTL_EXIT_OK;
    putchar('\n');
    return print_table(rows, 2, headers, keys);
}

/* The summary of the file, or with --check one line. */
static int summary(const struct ctl *ctl,
                   const struct topo_args *a,
                   const struct topology *t)
{
    const char *file = a->file ? a->file : TOPOLOGY_DEFAULT_PATH;
    json_t *obj;
    int rc;

    if (a->check && !ctl->json) {
        printf("%s: ok: %zu nodes on %zu leaf switches (%zu switches)\n",
               file,
               topology_node_count(t),
               topology_leaf_count(t),
               topology_switch_count(t));
        return CTL_EXIT_OK;
    }
    obj = json_pack("{s:s, s:I, s:I, s:I}",
                    "file",
                    file,
                    "switches",
                    (json_int_t)topology_switch_count(t),
                    "leaf_switches",
                    (json_int_t)topology_leaf_count(t),
                    "nodes",
                    (json_int_t)topology_node_count(t));
    rc = print_result(ctl, obj, false);
    json_decref(obj);
    return rc;
}

/* The switches of a reservation's node list, as an object. */
static json_t *job_spans(const struct topology *t,
                         const char *job_id,
                         const char *file,
                         const char *nodes,
                         int *rcp)
{
    vnib_error_t error = {0};
    struct hostlist *hl =
        hostlist_decode(nodes, HOSTLIST_DEFAULT_MAX_NAMES, &error);
    struct topology_spans sp = {NULL, 0, 0, NULL};
    json_t *obj = NULL;
    json_t *rows = NULL;

    if (!hl) {
        *rcp = ctl_fail(
            CTL_EXIT_UNREACHABLE, "the reservation's nodes: %s", error.text);
        return NULL;
    }
    hostlist_uniq(hl);
    if (topology_span(t, hl, &sp, &error) < 0 || !(rows = json_array()))
        goto nomem;
    for (size_t i = 0; i < sp.n; i++)
        if (json_array_append_new(rows,
                                  json_pack("{s:s, s:I}",
                                            "switch",
                                            sp.v[i].leaf,
                                            "nodes",
                                            (json_int_t)sp.v[i].nodes))
            < 0)
            goto nomem;
    obj = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s?, s:O}",
                    "job_id",
                    job_id,
                    "file",
                    file,
                    "nodes",
                    nodes,
                    "node_count",
                    (json_int_t)hostlist_count(hl),
                    "leaf_switches",
                    (json_int_t)sp.n,
                    "unknown_nodes",
                    (json_int_t)sp.unknown,
                    "first_unknown",
                    sp.first_unknown,
                    "switches",
                    rows);
    if (!obj)
        goto nomem;
    goto done;
nomem:
    *rcp = ctl_fail(CTL_EXIT_FAILED, "out of memory");
done:
    json_decref(rows);
    topology_spans_free(&sp);
    hostlist_destroy(hl);
    return obj;
}

static int run_topology(struct ctl *ctl, void *args, char **pos)
{
    const struct topo_args *a = args;
    vnib_error_t error = {0};
    struct topology *t = NULL;
    json_t *reply = NULL;
    json_t *obj = NULL;
    int rc = CTL_EXIT_OK;

    if (pos[0] && pos[1])
        return ctl_usage_error("topology", "unexpected argument '%s'", pos[1]);
    if (pos[0] && a->check)
        return ctl_usage_error("topology", "--check takes no JOB_ID");
    if (pos[0] && (rc = ctl_check_job_id("topology", pos[0])) != 0)
        return rc;
    if (!(t = load(a, &rc)))
        return rc;
    if (!pos[0]) {
        rc = summary(ctl, a, t);
        goto done;
    }
    int status =
        vnib_client_get_reservation(ctl->client, pos[0], &reply, &error);
    if ((rc = ctl_outcome(ctl, status, reply, &error)) != CTL_EXIT_OK)
        goto done;
    const char *nodes = print_str(reply, "nodes");
    if (!nodes) {
        rc = ctl_fail(CTL_EXIT_UNREACHABLE,
                      "the broker's reply has no node list");
        goto done;
    }
    if ((obj = job_spans(
             t, pos[0], a->file ? a->file : TOPOLOGY_DEFAULT_PATH, nodes, &rc)))
        rc = print_result(ctl, obj, true);
done:
    json_decref(obj);
    json_decref(reply);
    topology_destroy(t);
    return rc;
}

/* clang-format off */
static const struct opts_option topology_options[] = {
    OPTS_ROW_STRING("file", 'f', struct topo_args, file, 0, "PATH", NULL),
    OPTS_ROW_FLAG("check", 'c', struct topo_args, check),
    OPTS_ROW_END,
};

const struct opts_command cmd_topo_commands[] = {
    {"topology", help_topology, false, -1, "[JOB_ID]", {NULL, NULL}, topology_options, sizeof(struct topo_args), run_topology, NULL},
    {.name = NULL},
};
/* clang-format on */
