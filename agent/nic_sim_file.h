/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulated NICs' files, for agent/nic_sim.c only.
 *
 * One NIC is DIR/cxiN.json (the format is described in nic_sim_file.c),
 * locked through DIR/.cxiN.lock: an operation opens the NIC (lock and
 * read), changes struct simfile_nic, stores it back atomically, and
 * closes it (unlock).  Every function returns 0 or -1 with errno and
 * errp ("sim: FILE: ...").
 */
#ifndef VNIB_AGENT_NIC_SIM_FILE_H
#define VNIB_AGENT_NIC_SIM_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/nic.h"
#include "vnib/error.h"

/* libcxi's limits that the files share with the driver's rules. */
#define SIM_DEFAULT_SVC_ID 1
#define SIM_MAX_SVCS 4096 /* refuse larger files rather than loop on them */
#define SIM_TCS_ALL 0x1f  /* CXI_TC_MAX bits */

/* One NIC file in memory; svcs is kept sorted by svc_id. */
struct simfile_nic {
    char name[NIC_NAME_MAX];
    uint32_t dev_id;
    uint16_t cap[NIC_RSRC_COUNT];
    unsigned next_svc_id;
    struct nic_svc *svcs;
    int nsvcs;
    unsigned destroy_ebusy; /* answer EBUSY to this many destroys */
    int alloc_error;        /* 0, or the errno of injected alloc failures */
    unsigned alloc_error_count;
    bool open_fail;            /* the NIC cannot be opened (ENODEV) */
    unsigned stop_after_alloc; /* stop the process (SIGSTOP) after this
                                * many more allocs succeed: a test kills
                                * it there, between a service and its
                                * record */
};

/* A NIC opened for one operation: its lock held, its file read. */
struct simfile_open {
    int lockfd;
    char path[PATH_MAX]; /* DIR/cxiN.json */
    struct simfile_nic nic;
};

/* Open cxi<dev_id> of dir for one operation: lock (op is LOCK_SH or
 * LOCK_EX), read, and refuse a NIC whose open fails (ENODEV).  Close with
 * simfile_close, which frees so->nic.svcs unless the caller took it.
 */
int simfile_open(const char *dir,
                 uint32_t dev_id,
                 int op,
                 struct simfile_open *so,
                 vnib_error_t *errp);
void simfile_close(struct simfile_open *so);

/* Write nic to DIR/cxiN.json atomically.  The caller holds the exclusive
 * lock.  With excl, an existing file is not replaced (EEXIST).
 */
int simfile_store(const char *dir,
                  const struct simfile_nic *nic,
                  bool excl,
                  vnib_error_t *errp);

/* Create DIR/cxi<dev_id>.json with a new NIC's contents (EEXIST if it
 * exists). */
int simfile_create(const char *dir, uint32_t dev_id, vnib_error_t *errp);

/* The dev_ids of the NIC files in dir, sorted; *idsp is the caller's. */
int simfile_scan(const char *dir,
                 uint32_t **idsp,
                 int *countp,
                 vnib_error_t *errp);

/* 0 when cxi<dev_id> has no file in dir yet, else -1 (EEXIST). */
int simfile_check_new(const char *dir, uint32_t dev_id, vnib_error_t *errp);

#endif /* !VNIB_AGENT_NIC_SIM_FILE_H */
