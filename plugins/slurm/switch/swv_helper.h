/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_helper: what switch_vnib.so asks of its helper, vnib-switch-helper.so.
 *
 * Slurm loads switch_vnib.so into srun, slurmd, slurmctld and every
 * slurmstepd, but only slurmctld (and a job's stepmgr) and a step's own
 * slurmstepd talk to the broker or touch a NIC.  So the plugin proper is
 * the Slurm glue and the step data's wire form, with nothing else linked;
 * the controller's broker calls (swv_ctld.h) and the node's in-process
 * agent (swv_node.h) are in the helper, which the plugin loads (swv_load.h)
 * in those processes only, at their first need, once per process.  The
 * helper links no libcurl either: its client of the broker is the agent's,
 * vnib-agent-broker.so beside it, loaded at the first broker request
 * (swv_broker.h).  A step's start from a lease makes none.
 *
 * The helper is built from the same tree as every release's plugin and
 * exports one symbol, SWV_HELPER_SYMBOL, a function returning the table
 * below; the plugin refuses a table of another ABI or with other sizes of
 * the structures they share (a helper from another build).
 */
#ifndef SWV_HELPER_H
#define SWV_HELPER_H

#include <stdint.h>

#include "swv_ctld.h"
#include "swv_jobinfo.h"
#include "swv_node.h"
#include "swv_opts.h"
#include "vnib/error.h"

#define SWV_HELPER_SYMBOL "swv_helper_v1"
#define SWV_HELPER_ABI 3u

/* The sizes both sides must agree on, in one number. */
#define SWV_HELPER_SIZES                                                   \
    ((uint32_t)(sizeof(struct swv_config) + 3 * sizeof(struct swv_jobinfo) \
                + 5 * sizeof(struct swv_jobdata)                           \
                + 7 * sizeof(struct swv_step_req)                          \
                + 11 * sizeof(struct swv_step_resv)                        \
                + 13 * sizeof(struct swv_network)))

struct swv_helper {
    uint32_t abi;   /* SWV_HELPER_ABI */
    uint32_t sizes; /* SWV_HELPER_SIZES */

    /* slurmctld and the stepmgr: swv_ctld.h */
    int (*ctld_start)(const struct swv_config *cfg,
                      swv_log_fn *log,
                      vnib_error_t *errp);
    void (*ctld_stop)(void);
    int (*step_begin)(const struct swv_config *cfg,
                      const struct swv_step_req *req,
                      const struct swv_network *net,
                      struct swv_step_resv *out,
                      vnib_error_t *errp);
    int (*job_begin)(const struct swv_config *cfg,
                     const struct swv_step_req *req,
                     const struct swv_network *net,
                     struct swv_jobdata *out,
                     int *unisolatedp,
                     vnib_error_t *errp);
    int (*step_end)(const struct swv_config *cfg,
                    const char *job_token,
                    const char *job_id,
                    const char *step_id,
                    vnib_error_t *errp);
    int (*job_end)(const struct swv_config *cfg,
                   const char *job_id,
                   vnib_error_t *errp);
    int (*pool_free)(const struct swv_config *cfg,
                     long *freep,
                     long *per_job_defaultp,
                     vnib_error_t *errp);

    /* a step's slurmstepd: swv_node.h */
    int (*node_setup)(const struct swv_config *cfg,
                      const char *node,
                      const struct swv_jobinfo *info,
                      long uid,
                      long ncores,
                      char ***envp,
                      int *unisolated,
                      vnib_error_t *warnp,
                      vnib_error_t *errp);
    int (*node_teardown)(const struct swv_config *cfg,
                         const char *node,
                         const struct swv_jobinfo *info,
                         swv_log_fn *log,
                         vnib_error_t *errp);
    void (*node_env_free)(char **env);
    void (*node_stop)(void);
};

/* The type of SWV_HELPER_SYMBOL. */
typedef const struct swv_helper *swv_helper_fn(void);

#endif /* !SWV_HELPER_H */
