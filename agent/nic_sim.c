/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Simulated NICs: one JSON file per NIC, following libcxi's service rules.
 *
 * The tests and the demo need NICs that behave like the kernel driver
 * without Slingshot hardware: the same errno values for the same mistakes,
 * real reservation arithmetic, and faults that can be switched on from
 * outside (a busy service, a failing alloc, a NIC that cannot be opened).
 * This file is the driver's side: listing, allocating and destroying
 * services, and their reservation rules; agent/nic_sim_file.c keeps the
 * files (their format is described there).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/nic_sim.h"
#include "agent/nic_sim_file.h"

/* libcxi's limits, as the driver applies them (see the reference notes). */
#define SIM_LE_POOLS 15 /* user services that may reserve LEs */
#define SIM_TLE_POOLS 3 /* user services that may reserve TLEs */
#define SIM_TLE_MIN 8   /* least TLE reservation of a limited service */

struct nic_sim {
    char *dir;
};

void *nic_sim_open(const char *dir, vnib_error_t *errp)
{
    struct nic_sim *sim = NULL;
    struct stat st;

    if (!dir || !dir[0]) {
        errno = EINVAL;
        errprintf(errp, "sim: the directory of NIC files is required");
        return NULL;
    }
    if (stat(dir, &st) < 0) {
        errprintf(errp, "sim: %s: %s", dir, strerror(errno));
        errno = ENODEV;
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        errno = ENODEV;
        errprintf(errp, "sim: %s: not a directory", dir);
        return NULL;
    }
    if (!(sim = calloc(1, sizeof(*sim))) || !(sim->dir = strdup(dir))) {
        free(sim);
        errno = ENOMEM;
        errprintf(errp, "sim: out of memory");
        return NULL;
    }
    return sim;
}

void nic_sim_close(void *impl)
{
    struct nic_sim *sim = impl;
    int saved_errno = errno;

    if (sim) {
        free(sim->dir);
        free(sim);
    }
    errno = saved_errno;
}

int nic_sim_list(void *impl,
                 struct nic_info **devsp,
                 int *countp,
                 vnib_error_t *errp)
{
    const struct nic_sim *sim = impl;
    struct nic_info *devs = NULL;
    uint32_t *ids = NULL;
    int count = 0;
    int rc = -1;

    if (simfile_scan(sim->dir, &ids, &count, errp) < 0)
        goto done;
    if (count > 0 && !(devs = calloc((size_t)count, sizeof(*devs)))) {
        errno = ENOMEM;
        errprintf(errp, "sim: out of memory");
        goto done;
    }
    for (int i = 0; i < count; i++) {
        struct simfile_open so;
        if (simfile_open(sim->dir, ids[i], LOCK_SH, &so, errp) < 0)
            goto done;
        snprintf(devs[i].name, sizeof(devs[i].name), "%s", so.nic.name);
        devs[i].dev_id = so.nic.dev_id;
        memcpy(devs[i].cap, so.nic.cap, sizeof(devs[i].cap));
        simfile_close(&so);
    }
    *devsp = devs;
    *countp = count;
    devs = NULL;
    rc = 0;
done:
    free(devs);
    free(ids);
    return rc;
}

int nic_sim_svc_list(void *impl,
                     const struct nic_info *dev,
                     struct nic_svc **svcsp,
                     int *countp,
                     vnib_error_t *errp)
{
    const struct nic_sim *sim = impl;
    struct simfile_open so;

    if (simfile_open(sim->dir, dev->dev_id, LOCK_SH, &so, errp) < 0)
        return -1;
    /* The parsed array is sorted by svc_id already: hand it over. */
    *svcsp = so.nic.svcs;
    *countp = so.nic.nsvcs;
    so.nic.svcs = NULL;
    simfile_close(&so);
    return 0;
}

static bool svc_is_user(const struct nic_svc *svc)
{
    return !svc->is_system && svc->svc_id != SIM_DEFAULT_SVC_ID;
}

/* Check req as the driver checks a descriptor, and build the service to
 * store from it (EINVAL, EEXIST).
 */
static int sim_check_req(const struct simfile_nic *nic,
                         const struct nic_svc *req,
                         struct nic_svc *svc,
                         vnib_error_t *errp)
{
    const char *name = nic->name;

    memset(svc, 0, sizeof(*svc));
    errno = EINVAL;
    if (req->nvnis < 0 || req->nvnis > VNIB_SERVICE_VNIS_MAX)
        return errprintf(errp,
                         "sim: %s: %d VNIs: a service has at most %d",
                         name,
                         req->nvnis,
                         VNIB_SERVICE_VNIS_MAX);
    if (req->restricted_vnis && req->nvnis == 0)
        return errprintf(errp, "sim: %s: restricted_vnis without VNIs", name);
    if (req->restricted_tcs && (req->tcs_mask & ~(unsigned)SIM_TCS_ALL))
        return errprintf(errp,
                         "sim: %s: traffic class mask 0x%x out of range",
                         name,
                         req->tcs_mask);
    for (int i = 0; req->restricted_vnis && i < req->nvnis; i++) {
        if (req->vnis[i] == 0)
            return errprintf(errp, "sim: %s: VNI 0 is not valid", name);
        for (int j = 0; j < i; j++) {
            if (req->vnis[j] == req->vnis[i])
                return errprintf(
                    errp, "sim: %s: VNI %u listed twice", name, req->vnis[i]);
        }
    }
    for (int r = 0; req->resource_limits && r < NIC_RSRC_COUNT; r++) {
        /* The max within the device's, the reservation within the max. */
        bool over_cap = req->max[r] > nic->cap[r];
        if (over_cap || req->res[r] > req->max[r])
            return errprintf(errp,
                             "sim: %s: %s %s %u exceeds %s %u",
                             name,
                             nic_rsrc_name(r),
                             over_cap ? "max" : "reservation",
                             over_cap ? req->max[r] : req->res[r],
                             over_cap ? "the device's" : "its max",
                             over_cap ? nic->cap[r] : req->max[r]);
    }
    /* SHS 13.0-14.0: a VNI belongs to one service per NIC; the default
     * service holds 1 and 10.
     */
    for (int i = 0; req->restricted_vnis && i < req->nvnis; i++) {
        for (int s = 0; s < nic->nsvcs; s++) {
            const struct nic_svc *o = &nic->svcs[s];
            for (int j = 0; o->restricted_vnis && j < o->nvnis; j++) {
                if (o->vnis[j] == req->vnis[i]) {
                    errno = EEXIST;
                    return errprintf(errp,
                                     "sim: %s: VNI %u is already used by "
                                     "service %u",
                                     name,
                                     req->vnis[i],
                                     o->svc_id);
                }
            }
        }
    }
    svc->restricted_members = req->restricted_members;
    svc->has_uid = req->has_uid;
    svc->uid = req->has_uid ? req->uid : 0;
    svc->restricted_vnis = req->restricted_vnis;
    if (req->restricted_vnis) {
        svc->nvnis = req->nvnis;
        memcpy(svc->vnis, req->vnis, sizeof(svc->vnis));
    }
    /* A VNI-range service stays disabled until its range is set. */
    svc->enabled = req->restricted_vnis;
    svc->restricted_tcs = req->restricted_tcs;
    svc->tcs_mask = req->restricted_tcs ? req->tcs_mask : 0xf;
    svc->resource_limits = req->resource_limits;
    if (req->resource_limits) {
        memcpy(svc->max, req->max, sizeof(svc->max));
        memcpy(svc->res, req->res, sizeof(svc->res));
        /* reserve_rsrcs: TLE res raised to at least 8, and max = res. */
        if (svc->res[NIC_RSRC_TLE] < SIM_TLE_MIN)
            svc->res[NIC_RSRC_TLE] = SIM_TLE_MIN;
        svc->max[NIC_RSRC_TLE] = svc->res[NIC_RSRC_TLE];
    } else {
        memcpy(svc->max, nic->cap, sizeof(svc->max));
    }
    return 0;
}

/* What each resource has left to reserve.  A system service holds the
 * larger of its reservation and its use.
 */
static void sim_avail(const struct simfile_nic *nic,
                      uint16_t avail[NIC_RSRC_COUNT])
{
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        unsigned long held = 0;
        for (int s = 0; s < nic->nsvcs; s++) {
            const struct nic_svc *o = &nic->svcs[s];
            held +=
                o->is_system && o->use[r] > o->res[r] ? o->use[r] : o->res[r];
        }
        avail[r] = held < nic->cap[r] ? (uint16_t)(nic->cap[r] - held) : 0;
    }
}

/* Can svc's reservation be made (ENOSPC with fail filled if not)? */
static int sim_reserve(const struct simfile_nic *nic,
                       const struct nic_svc *svc,
                       struct nic_fail *fail,
                       vnib_error_t *errp)
{
    int le_pools = 0, tle_pools = 0;

    sim_avail(nic, fail->avail);
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        if (svc->res[r] > fail->avail[r]) {
            errno = ENOSPC;
            return errprintf(errp,
                             "sim: %s: cannot reserve %u %s: %u available",
                             nic->name,
                             svc->res[r],
                             nic_rsrc_name(r),
                             fail->avail[r]);
        }
    }
    for (int s = 0; s < nic->nsvcs; s++) {
        if (svc_is_user(&nic->svcs[s])) {
            le_pools += nic->svcs[s].res[NIC_RSRC_LE] > 0;
            tle_pools += nic->svcs[s].res[NIC_RSRC_TLE] > 0;
        }
    }
    if (svc->res[NIC_RSRC_LE] > 0 && le_pools >= SIM_LE_POOLS) {
        fail->no_le_pools = true;
        errno = ENOSPC;
        return errprintf(errp,
                         "sim: %s: no LE pool left (%d services reserve LEs)",
                         nic->name,
                         le_pools);
    }
    if (svc->res[NIC_RSRC_TLE] > 0 && tle_pools >= SIM_TLE_POOLS) {
        fail->no_tle_pools = true;
        errno = ENOSPC;
        return errprintf(errp,
                         "sim: %s: no TLE pool left (%d services reserve "
                         "TLEs)",
                         nic->name,
                         tle_pools);
    }
    return 0;
}

/* Fail an alloc as the fault in nic asks, counting it down on disk. */
static int sim_inject_alloc(const struct nic_sim *sim,
                            struct simfile_nic *nic,
                            struct nic_fail *fail,
                            vnib_error_t *errp)
{
    int e = nic->alloc_error;

    nic->alloc_error_count--;
    if (nic->alloc_error_count == 0)
        nic->alloc_error = 0;
    if (simfile_store(sim->dir, nic, false, errp) < 0)
        return -1;
    if (e == ENOSPC)
        sim_avail(nic, fail->avail);
    errno = e;
    return errprintf(errp,
                     "sim: %s: cannot allocate service: %s (injected fault)",
                     nic->name,
                     strerror(e));
}

int nic_sim_svc_alloc(void *impl,
                      const struct nic_info *dev,
                      const struct nic_svc *req,
                      unsigned *svc_idp,
                      struct nic_fail *fail,
                      vnib_error_t *errp)
{
    const struct nic_sim *sim = impl;
    struct nic_svc svc, *svcs;
    struct simfile_open so;
    bool stop = false;
    int rc = -1;

    if (simfile_open(sim->dir, dev->dev_id, LOCK_EX, &so, errp) < 0)
        return -1;
    if (so.nic.alloc_error && so.nic.alloc_error_count > 0) {
        sim_inject_alloc(sim, &so.nic, fail, errp);
        goto done;
    }
    if (sim_check_req(&so.nic, req, &svc, errp) < 0
        || sim_reserve(&so.nic, &svc, fail, errp) < 0)
        goto done;
    if (so.nic.nsvcs >= SIM_MAX_SVCS || so.nic.next_svc_id >= INT_MAX) {
        errno = ENOSPC;
        errprintf(errp, "sim: %s: too many services", so.nic.name);
        goto done;
    }
    if (!(svcs = realloc(so.nic.svcs,
                         (size_t)(so.nic.nsvcs + 1) * sizeof(*svcs)))) {
        errno = ENOMEM;
        errprintf(errp, "sim: %s: out of memory", so.nic.name);
        goto done;
    }
    so.nic.svcs = svcs;
    svc.svc_id = so.nic.next_svc_id++;
    /* Ids only grow, so the array stays sorted. */
    so.nic.svcs[so.nic.nsvcs++] = svc;
    stop = so.nic.stop_after_alloc == 1;
    if (so.nic.stop_after_alloc > 0)
        so.nic.stop_after_alloc--;
    if (simfile_store(sim->dir, &so.nic, false, errp) < 0)
        goto done;
    *svc_idp = svc.svc_id;
    rc = 0;
done:
    simfile_close(&so);
    /* The fault stop_after_alloc: the service exists, its maker has not
     * yet said so anywhere; a test kills the process here. */
    if (rc == 0 && stop)
        raise(SIGSTOP);
    return rc;
}

int nic_sim_svc_destroy(void *impl,
                        const struct nic_info *dev,
                        unsigned svc_id,
                        vnib_error_t *errp)
{
    const struct nic_sim *sim = impl;
    struct nic_svc *svc = NULL;
    struct simfile_open so;
    const char *name;
    int rc = -1;

    if (simfile_open(sim->dir, dev->dev_id, LOCK_EX, &so, errp) < 0)
        return -1;
    name = so.nic.name;
    for (int i = 0; i < so.nic.nsvcs; i++) {
        if (so.nic.svcs[i].svc_id == svc_id)
            svc = &so.nic.svcs[i];
    }
    if (svc_id == SIM_DEFAULT_SVC_ID) {
        errno = EINVAL;
        errprintf(
            errp, "sim: %s: the default service cannot be destroyed", name);
        goto done;
    }
    if (!svc) {
        errno = EINVAL;
        errprintf(errp, "sim: %s: no service %u", name, svc_id);
        goto done;
    }
    if (svc->is_system) {
        errno = EINVAL;
        errprintf(
            errp, "sim: %s: service %u is a system service", name, svc_id);
        goto done;
    }
    if (svc->lnis > 0) {
        errno = EBUSY;
        errprintf(errp,
                  "sim: %s: service %u has %u LNIs attached",
                  name,
                  svc_id,
                  svc->lnis);
        goto done;
    }
    if (so.nic.destroy_ebusy > 0) {
        so.nic.destroy_ebusy--;
        if (simfile_store(sim->dir, &so.nic, false, errp) < 0)
            goto done;
        errno = EBUSY;
        errprintf(errp,
                  "sim: %s: service %u is busy (injected fault, %u more)",
                  name,
                  svc_id,
                  so.nic.destroy_ebusy);
        goto done;
    }
    memmove(svc,
            svc + 1,
            (size_t)(so.nic.svcs + so.nic.nsvcs - (svc + 1)) * sizeof(*svc));
    so.nic.nsvcs--;
    rc = simfile_store(sim->dir, &so.nic, false, errp);
done:
    simfile_close(&so);
    return rc;
}

int nic_sim_init(const char *dir, int nnics, vnib_error_t *errp)
{
    struct stat st;

    if (!dir || !dir[0] || nnics < 0 || nnics > NIC_SIM_MAX_NICS) {
        errno = EINVAL;
        return errprintf(errp,
                         "sim: a directory and 0..%d NICs are required",
                         NIC_SIM_MAX_NICS);
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return errprintf(errp, "sim: %s: %s", dir, strerror(errno));
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return errprintf(errp, "sim: %s: not a directory", dir);
    }
    /* Refuse before writing anything, so a refusal leaves no trace. */
    for (int i = 0; i < nnics; i++)
        if (simfile_check_new(dir, (uint32_t)i, errp) < 0)
            return -1;
    for (int i = 0; i < nnics; i++)
        if (simfile_create(dir, (uint32_t)i, errp) < 0)
            return -1;
    return 0;
}
