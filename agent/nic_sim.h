/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulated NIC backend ("sim"): NICs kept as JSON files.
 *
 * Each NIC is one file DIR/cxiN.json holding its capacity, its services
 * and the faults to inject; agent/nic_sim_file.c documents the format.  Every
 * operation locks DIR/.cxiN.lock, reads the file, and writes it back
 * atomically, so several agents on one node (or several test processes)
 * see one consistent NIC, as they would with the kernel driver.
 *
 * The nic_sim_* operations are the "sim" entries of the table in
 * agent/nic.c; callers use the nic_* functions of agent/nic.h.  Their
 * handle is a struct nic_sim, passed as void * so that both backends fit
 * one table.
 */
#ifndef VNIB_AGENT_NIC_SIM_H
#define VNIB_AGENT_NIC_SIM_H

#include "agent/nic.h"
#include "vnib/error.h"

/* Most NIC files nic_sim_init creates at once. */
#define NIC_SIM_MAX_NICS 256

/* Create dir (mode 0755) if it is missing, and the files cxi0.json ..
 * cxi{nnics-1}.json with the defaults: the device maxima of a Cassini NIC,
 * the default service (id 1: VNIs 1 and 10, disabled), one system service
 * (id 2) holding a few resources, and no faults.  EEXIST, and nothing
 * written, if any of those files exists.
 */
int nic_sim_init(const char *dir, int nnics, vnib_error_t *errp);

/* Open the backend on an existing directory.  Returns a handle for the
 * functions below (free it with nic_sim_close), or NULL with errno set
 * (ENODEV for a missing directory, EINVAL for a NULL one).
 */
void *nic_sim_open(const char *dir, vnib_error_t *errp);
void nic_sim_close(void *sim);

/* The operations of agent/nic.h, with the same contracts. */
int nic_sim_list(void *sim,
                 struct nic_info **devsp,
                 int *countp,
                 vnib_error_t *errp);
int nic_sim_svc_list(void *sim,
                     const struct nic_info *dev,
                     struct nic_svc **svcsp,
                     int *countp,
                     vnib_error_t *errp);
int nic_sim_svc_alloc(void *sim,
                      const struct nic_info *dev,
                      const struct nic_svc *req,
                      unsigned *svc_idp,
                      struct nic_fail *fail,
                      vnib_error_t *errp);
int nic_sim_svc_destroy(void *sim,
                        const struct nic_info *dev,
                        unsigned svc_id,
                        vnib_error_t *errp);

#endif /* !VNIB_AGENT_NIC_SIM_H */
