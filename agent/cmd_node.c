/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The node's NICs: `vnib-agent list` (every service, system ones
 * included) and `vnib-agent sim-init` (simulated NICs for tests and the
 * demo).
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "agent/commands.h"
#include "agent/limits.h"
#include "agent/nic_sim.h"
#include "agent/services.h"

int cmd_list(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    json_t *all = json_array();
    int rc;

    (void)o;
    if ((rc = cmd_open_nics(a)) != CMD_DONE)
        goto out;
    if (!a->json)
        fprintf(a->out,
                "%-8s %6s %7s %-24s %s\n",
                "NIC",
                "SVC",
                "UID",
                "VNIS",
                "RESERVED");
    for (int d = 0; d < a->ndev; d++) {
        struct nic_svc *svcs = NULL;
        int n = 0;
        if (nic_svc_list(a->nb, &a->devs[d], &svcs, &n, &error) < 0) {
            rc = cmd_fail(a, CMD_FAILED, "%s", error.text);
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
                fprintf(a->out,
                        "%-8s %6s %7s %-24s %s\n",
                        a->devs[d].name,
                        id,
                        s->has_uid ? uid : "-",
                        *vnis ? vnis : "-",
                        s->resource_limits ? lim : "-");
        }
        free(svcs);
    }
    if (a->json)
        cmd_print_json(a, json_incref(all));
    rc = CMD_DONE;
out:
    json_decref(all);
    return rc;
}

int cmd_sim_init(struct cmd_ctx *a, const struct cmd_opts *o)
{
    vnib_error_t error = {0};
    if (o->nics < 0)
        return cmd_fail(a, CMD_USAGE, "sim-init: --nics N is required");
    if (a->dry_run)
        return CMD_DONE;
    if (nic_sim_init(a->cfg->sim_dir, (int)o->nics, &error) < 0)
        return cmd_fail(a, CMD_FAILED, "sim-init: %s", error.text);
    if (!a->json)
        fprintf(a->out, "sim: %ld NIC(s) in %s\n", o->nics, a->cfg->sim_dir);
    return CMD_DONE;
}
