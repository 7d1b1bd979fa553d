/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libcxi NIC backend ("libcxi"): the node's real Slingshot NICs.
 *
 * libcxi.so.1 is loaded at run time with dlopen, so the agent builds and
 * runs (with the sim backend) on machines without it.  The backend is
 * pinned to one libcxi release, HPE SHS 14.0.0 (symbol version
 * LIBCXI_1.10), whose structures agent/nic_cxi.c declares itself; any
 * other release is refused with ENOTSUP rather than risk a wrong layout.
 *
 * The nic_cxi_* operations are the "libcxi" entries of the table in
 * agent/nic.c; callers use the nic_* functions of agent/nic.h.  Their
 * handle is a struct nic_cxi, passed as void * so that both backends fit
 * one table.
 */
#ifndef VNIB_AGENT_NIC_CXI_H
#define VNIB_AGENT_NIC_CXI_H

#include "agent/nic.h"
#include "vnib/error.h"

/* The library nic_cxi_open loads when given NULL. */
#define NIC_CXI_DEFAULT_LIB "libcxi.so.1"

/* Load libcxi from path (NULL: NIC_CXI_DEFAULT_LIB) and check that it is
 * the pinned release.  Returns a handle for the functions below (free it
 * with nic_cxi_close), or NULL with errno ENODEV (cannot load, missing
 * symbol) or ENOTSUP (another release) and a message starting "libcxi:".
 */
void *nic_cxi_open(const char *path, vnib_error_t *errp);
void nic_cxi_close(void *cxi);

/* The operations of agent/nic.h, with the same contracts. */
int nic_cxi_list(void *cxi,
                 struct nic_info **devsp,
                 int *countp,
                 vnib_error_t *errp);
int nic_cxi_svc_list(void *cxi,
                     const struct nic_info *dev,
                     struct nic_svc **svcsp,
                     int *countp,
                     vnib_error_t *errp);
int nic_cxi_svc_alloc(void *cxi,
                      const struct nic_info *dev,
                      const struct nic_svc *req,
                      unsigned *svc_idp,
                      struct nic_fail *fail,
                      vnib_error_t *errp);
int nic_cxi_svc_destroy(void *cxi,
                        const struct nic_info *dev,
                        unsigned svc_id,
                        vnib_error_t *errp);

#endif /* !VNIB_AGENT_NIC_CXI_H */
