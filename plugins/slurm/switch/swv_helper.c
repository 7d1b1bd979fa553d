/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_helper: vnib-switch-helper.so's one exported symbol, the table of
 * its calls (see swv_helper.h).  Everything else in the object stays
 * local (swv_helper.map).
 */
#include "swv_helper.h"

const struct swv_helper *swv_helper_v1(void);

static const struct swv_helper table = {
    .abi = SWV_HELPER_ABI,
    .sizes = SWV_HELPER_SIZES,
    .ctld_start = swv_ctld_start,
    .ctld_stop = swv_ctld_stop,
    .step_begin = swv_ctld_step_begin,
    .job_begin = swv_ctld_job_begin,
    .step_end = swv_ctld_step_end,
    .job_end = swv_ctld_job_end,
    .pool_free = swv_ctld_pool_free,
    .node_setup = swv_node_setup,
    .node_teardown = swv_node_teardown,
    .node_env_free = swv_node_env_free,
    .node_stop = swv_node_stop,
};

const struct swv_helper *swv_helper_v1(void)
{
    return &table;
}
