/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_node: the node side of switch/vnib (see swv_node.h), over the
 * agent's in-process step API: from the step's lease when it carries one
 * (vnib_step_setup_lease: no broker request), else from the broker's
 * reservation (vnib_step_setup).
 */
#include "swv_node.h"

#include <errno.h>
#include <stdio.h>

#include "agent/stepapi.h"

/* The agent's settings file for node. */
static int agent_config(const struct swv_config *cfg,
                        const char *node,
                        char *out,
                        size_t size,
                        vnib_error_t *errp)
{
    if (swv_expand_node(cfg->agent_config, node, out, size) < 0)
        return errprintf(errp, "vnib_agent_config: too long with %s", node);
    return 0;
}

int swv_node_setup(const struct swv_config *cfg,
                   const char *node,
                   const struct swv_jobinfo *info,
                   long uid,
                   long ncores,
                   char ***envp,
                   int *unisolated,
                   vnib_error_t *warnp,
                   vnib_error_t *errp)
{
    char conf[SWV_PATH_MAX], job[16], step[16];

    *envp = NULL;
    *unisolated = 0;
    if ((info->flags & SWV_JOBINFO_BUILT) == 0) {
        errno = EINVAL;
        return errprintf(errp, "the step carries no switch/vnib reservation");
    }
    if ((info->flags & SWV_JOBINFO_UNISOLATED) != 0) {
        *unisolated = 1;
        return errprintf(errp, "slurmctld could not reach the broker");
    }
    if (agent_config(cfg, node, conf, sizeof(conf), errp) < 0)
        return -1;
    swv_jobinfo_ids(info, job, step);
    if (info->lease != NULL) {
        if (vnib_step_setup_lease(
                conf, job, step, uid, ncores, info->lease, envp, errp)
            == 0)
            return 0;
        if (errno != EACCES)
            return -1;
        /* A lease refused (expired, for another step...) is no
         * reservation either way: the broker's own says. */
        errprintf(warnp, "lease refused, asking the broker: %s", errp->text);
    }
    if (vnib_step_setup(conf, job, step, uid, ncores, envp, errp) == 0)
        return 0;
    if ((errno == EHOSTUNREACH || errno == ETIMEDOUT || errno == ECONNREFUSED)
        && cfg->outage == SWV_OUTAGE_OPEN) {
        *unisolated = 1;
        *envp = NULL;
    }
    return -1;
}

int swv_node_teardown(const struct swv_config *cfg,
                      const char *node,
                      const struct swv_jobinfo *info,
                      vnib_error_t *errp)
{
    char conf[SWV_PATH_MAX], job[16], step[16];

    if ((info->flags & SWV_JOBINFO_BUILT) == 0
        || (info->flags & SWV_JOBINFO_UNISOLATED) != 0)
        return 0;
    if (agent_config(cfg, node, conf, sizeof(conf), errp) < 0)
        return -1;
    swv_jobinfo_ids(info, job, step);
    return vnib_step_teardown(conf, job, step, cfg->retry_busy_ms, errp);
}

void swv_node_env_free(char **env)
{
    vnib_step_env_free(env);
}
