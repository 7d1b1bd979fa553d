/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl's views of the broker's state: pool (the VNI pool), vni (who
 * holds one VNI) and node (a node's drain mark and the cleanups it owes,
 * cleared with --undrain), each a table for cli/opts.c and a handler.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnib/client.h"
#include "cli/cmd_admin.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/print.h"

static const char help_pool[] =
    "Usage: vnibctl pool\n"
    "Show the VNI pool: its ranges and how many VNIs are free, active,\n"
    "quarantined or held outside the configured pool (roles: admin,\n"
    "scheduler, monitor).\n"
    "  --json    print the pool as JSON\n";

static const char help_vni[] =
    "Usage: vnibctl vni N\n"
    "Show who holds VNI N (0-65535), or when it was last released (admin).\n"
    "  --json    print the answer as JSON\n";

static const char help_node[] =
    "Usage: vnibctl node NAME [--undrain]\n"
    "Show a node: whether it is drained and the reservations it still has\n"
    "to clean up (roles: admin, scheduler, monitor, the node itself).\n"
    "  --undrain  clear the node's drained mark after it was cleaned up\n"
    "             (admin)\n"
    "  --json     print the node as JSON\n";

/* GET one path and print it with `print` (or as JSON). */
static int get_and_print(struct ctl *ctl,
                         const char *method,
                         const char *path,
                         int (*print)(json_t *reply))
{
    json_t *reply = NULL;
    int rc = ctl_call(ctl, method, path, NULL, &reply);

    if (rc == CTL_EXIT_OK)
        rc = ctl->json ? ctl_print_json(reply) : print(reply);
    json_decref(reply);
    return rc;
}

/* ---- pool ------------------------------------------------------------- */

/* The pool's keys in the order people read them. */
static const char *const pool_order[] = {
    "ranges",
    "total",
    "free",
    "active",
    "quarantined",
    "outside_pool",
    "cursor",
    "per_job_default",
    NULL,
};

static int print_pool(json_t *reply)
{
    return print_kv(reply, pool_order, NULL);
}

static int run_pool(struct ctl *ctl, void *args, char **pos)
{
    (void)args;
    (void)pos;
    return get_and_print(ctl, "GET", "/v1/pool", print_pool);
}

/* ---- vni -------------------------------------------------------------- */

static int print_vni(json_t *reply)
{
    static const char *const order[] = {
        "vni", "in_pool", "state", "last_released_at", NULL};
    static const char *const skip[] = {"reservation", NULL};
    json_t *r = json_object_get(reply, "reservation");
    int rc = print_kv(reply, order, skip);

    if (rc != CTL_EXIT_OK)
        return rc;
    if (!json_is_object(r)) {
        printf("\nno reservation has held it\n");
        return CTL_EXIT_OK;
    }
    const char *state = print_str(reply, "state");
    bool released = state && strcmp(state, "free") == 0;
    printf("\n%s reservation:\n", released ? "last" : "holding");
    return print_reservation_kv(r);
}

static int check_vni(const char *cmd, const char *arg)
{
    unsigned long long vni;

    if (ctl_parse_uint(cmd, "VNI", arg, 0, 65535, &vni) < 0)
        return CTL_EXIT_USAGE;
    return 0;
}

static int run_vni(struct ctl *ctl, void *args, char **pos)
{
    unsigned long long vni = strtoull(pos[0], NULL, 10); /* checked */
    char path[32];

    (void)args;
    snprintf(path, sizeof(path), "/v1/vnis/%llu", vni);
    return get_and_print(ctl, "GET", path, print_vni);
}

/* ---- node ------------------------------------------------------------- */

/* "DEV:SVCID,..." for an array of services (the caller frees), or NULL
 * when out of memory or an entry has another shape.
 */
static char *services_text(json_t *services)
{
    char *s = NULL;
    size_t size = 0;
    size_t i;
    json_t *svc;
    bool ok = true;
    FILE *f = open_memstream(&s, &size);

    if (!f)
        return NULL;
    json_array_foreach (services, i, svc) {
        const char *dev = print_str(svc, "device");
        json_t *id = json_object_get(svc, "svc_id");
        if (!dev || !json_is_integer(id))
            ok = false;
        else
            fprintf(f,
                    "%s%s:%" JSON_INTEGER_FORMAT,
                    i ? "," : "",
                    dev,
                    json_integer_value(id));
    }
    if (fclose(f) != 0 || !ok) {
        free(s);
        return NULL;
    }
    return s;
}

/* A node's keys in the order people read them. */
static const char *const node_order[] = {
    "node",
    "drained",
    "drained_reason",
    "drained_at",
    "cleanup_needed",
    NULL,
};

static int print_node(json_t *reply)
{
    static const char *const skip[] = {"reservations", NULL};
    static const char *const headers[] = {
        "JOB_ID", "STATE", "UID", "VNIS", "CXI", "SERVICES", "CLEANUP"};
    static const char *const keys[] = {
        "job_id", "state", "uid", "vnis", "cxi", "services", "cleanup_needed"};
    json_t *rows = json_object_get(reply, "reservations");
    int rc = print_kv(reply, node_order, skip);

    if (rc != CTL_EXIT_OK || !json_is_array(rows))
        return rc;
    putchar('\n');
    /* Services as DEV:SVCID, the form `report --service` takes. */
    size_t i;
    json_t *row;
    json_array_foreach (rows, i, row) {
        json_t *services = json_object_get(row, "services");
        char *text = services_text(services);
        if (json_is_array(services) && text)
            json_object_set_new(row, "services", json_string(text));
        free(text);
    }
    if (json_array_size(rows) == 0) {
        printf("no active or releasing reservations\n");
        return CTL_EXIT_OK;
    }
    return print_table(rows, 7, headers, keys);
}

struct node_args {
    bool undrain;
};

static int run_node(struct ctl *ctl, void *args, char **pos)
{
    const struct node_args *a = args;
    char *esc = NULL;
    char *path = NULL;
    int rc;

    if (!(esc = vnib_client_escape(pos[0])))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    size_t len = strlen("/v1/nodes//drain") + strlen(esc) + 1;
    if (!(path = malloc(len))) {
        free(esc);
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    }
    snprintf(path, len, "/v1/nodes/%s%s", esc, a->undrain ? "/drain" : "");
    rc = get_and_print(ctl, a->undrain ? "DELETE" : "GET", path, print_node);
    free(path);
    free(esc);
    return rc;
}

/* clang-format off */
static const struct opts_option node_options[] = {
    OPTS_ROW_FLAG("undrain", 'U', struct node_args, undrain),
    OPTS_ROW_END,
};
/* clang-format on */

/* ---- the group -------------------------------------------------------- */

/* clang-format off */
const struct opts_command cmd_admin_commands[] = {
    {"pool", help_pool, false, 0, "", {NULL, NULL}, NULL, 0, run_pool, NULL},
    {"vni", help_vni, false, 1, "N", {check_vni, NULL}, NULL, 0, run_vni, NULL},
    {"node", help_node, false, 1, "NAME", {ctl_check_node, NULL}, node_options, sizeof(struct node_args), run_node, NULL},
    {.name = NULL},
};
/* clang-format on */
