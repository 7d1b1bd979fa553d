/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NIC backends: the CXI service operations the node agent needs.
 *
 * The agent sees every Slingshot NIC of its node through this one
 * interface, whichever backend is configured:
 *
 *   "libcxi"  the real NICs, through libcxi.so.1 loaded at run time
 *             (agent/nic_cxi.c); needs CAP_SYS_ADMIN for alloc/destroy.
 *   "sim"     simulated NICs kept as one JSON file per NIC in a directory
 *             (agent/nic_sim.c), for tests and the demo.  It follows
 *             libcxi's rules and offers fault injection.
 *
 * The structures below are the agent's own, not libcxi's: the libcxi
 * backend translates them to and from its pinned copies of the libcxi
 * structures.  Resource arrays are indexed by enum nic_rsrc, whose values
 * are libcxi's enum cxi_rsrc_type.  Traffic classes are a mask with bit
 * (1 << enum cxi_traffic_class), the SLINGSHOT_TCS encoding.
 *
 * Every function returns 0 (or a count) on success, or -1 with errno set
 * and errp holding one line that names the backend and the NIC.  The
 * errno values follow libcxi's: EINVAL (bad descriptor, unknown service),
 * ENOSPC (cannot reserve; see struct nic_fail), EBUSY (LNIs attached),
 * EEXIST (a VNI already used by another service on that NIC), EPERM,
 * ENODEV (a NIC could not be opened, or the backend cannot be loaded),
 * ENOTSUP (the installed libcxi is not the pinned release).
 */
#ifndef VNIB_AGENT_NIC_H
#define VNIB_AGENT_NIC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "vnib/error.h"
#include "vnib/tclass.h"

/* Longest NIC name, e.g. "cxi0", with its NUL. */
#define NIC_NAME_MAX 32

/* libcxi's enum cxi_rsrc_type, in its order. */
enum nic_rsrc {
    NIC_RSRC_PTE = 0,
    NIC_RSRC_TXQ = 1,
    NIC_RSRC_TGQ = 2,
    NIC_RSRC_EQ = 3,
    NIC_RSRC_CT = 4,
    NIC_RSRC_LE = 5,
    NIC_RSRC_TLE = 6,
    NIC_RSRC_AC = 7,
    NIC_RSRC_COUNT = 8,
};

/* One NIC of this node. */
struct nic_info {
    char name[NIC_NAME_MAX];      /* "cxi0" */
    uint32_t dev_id;              /* the N of cxiN */
    uint16_t cap[NIC_RSRC_COUNT]; /* the device's totals (devinfo num_*) */
};

/* One CXI service on a NIC, as listed, or as a request to alloc. */
struct nic_svc {
    unsigned svc_id; /* output of alloc; 0 in a request */
    bool is_system;  /* kfilnd, Ethernet, retry handler: never ours */
    bool enabled;
    bool restricted_members;
    bool has_uid; /* members include a UID member ... */
    uid_t uid;    /* ... this one */
    bool restricted_vnis;
    int nvnis; /* 0..VNIB_SERVICE_VNIS_MAX */
    uint16_t vnis[VNIB_SERVICE_VNIS_MAX];
    bool restricted_tcs;
    unsigned tcs_mask; /* 1 << enum cxi_traffic_class, 0x1..0xf */
    bool resource_limits;
    uint16_t max[NIC_RSRC_COUNT];
    uint16_t res[NIC_RSRC_COUNT];
    uint16_t use[NIC_RSRC_COUNT]; /* in use now (listed services only) */
    unsigned lnis; /* LNIs attached; a service with LNIs is busy */
};

/* Why an alloc answered ENOSPC (libcxi's struct cxi_svc_fail_info). */
struct nic_fail {
    uint16_t avail[NIC_RSRC_COUNT]; /* what could have been reserved */
    bool no_le_pools;
    bool no_tle_pools;
    bool no_cntr_pools;
};

struct nic_backend;

/* Open a backend.  kind is "libcxi" or "sim".  arg is the library to
 * load for libcxi (NULL: "libcxi.so.1") and the directory of NIC files for
 * sim.  A library that cannot be loaded, a missing symbol or an
 * unsupported release is ENODEV/ENOTSUP with a message naming the backend;
 * never a crash.
 */
struct nic_backend *nic_create(const char *kind,
                               const char *arg,
                               vnib_error_t *errp);
void nic_destroy(struct nic_backend *nb);

/* "libcxi" or "sim". */
const char *nic_kind(const struct nic_backend *nb);

/* Every NIC of the node, sorted by dev_id.  *devsp is a new array the
 * caller frees; a node without NICs returns 0 with *countp 0.  A NIC that
 * cannot be opened fails the whole call (ENODEV), so that callers never
 * act on a partial view.
 */
int nic_list(struct nic_backend *nb,
             struct nic_info **devsp,
             int *countp,
             vnib_error_t *errp);

/* Every service on one NIC (system ones included), sorted by svc_id.
 * *svcsp is a new array the caller frees.
 */
int nic_svc_list(struct nic_backend *nb,
                 const struct nic_info *dev,
                 struct nic_svc **svcsp,
                 int *countp,
                 vnib_error_t *errp);

/* Allocate a service from req (restricted_* flags, uid, vnis, tcs_mask,
 * resource_limits, max and res are read; the rest is ignored).  On
 * success *svc_idp holds the new id.  On ENOSPC *fail (when not NULL)
 * says what was available.
 */
int nic_svc_alloc(struct nic_backend *nb,
                  const struct nic_info *dev,
                  const struct nic_svc *req,
                  unsigned *svc_idp,
                  struct nic_fail *fail,
                  vnib_error_t *errp);

/* Destroy a service: EBUSY while LNIs are attached, EINVAL for an unknown
 * id or the default service (id 1).
 */
int nic_svc_destroy(struct nic_backend *nb,
                    const struct nic_info *dev,
                    unsigned svc_id,
                    vnib_error_t *errp);

/* The lower-case name of a resource ("pte", "txq", ...). */
const char *nic_rsrc_name(enum nic_rsrc r);

#endif /* !VNIB_AGENT_NIC_H */
