/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libcxi backend: CXI services on the real NICs, through libcxi.so.1.
 *
 * The agent must build on machines without the Slingshot packages and
 * must never crash on a node whose libcxi is missing or different, so
 * libcxi is loaded with dlopen and its structures are declared here,
 * pinned to one release: HPE SHS 14.0.0, libcxi symbol version
 * LIBCXI_1.10 (shs-libcxi release/shs-14.0.0, shs-cxi-driver
 * include/uapi/ethernet/cxi-abi.h of the same release).  libcxi writes
 * these structures straight to the kernel, which rejects any size but its
 * own, and copies them into our buffers, so a wrong layout is a memory
 * error; hence the _Static_asserts on every size the reference notes
 * measured (x86-64, LP64) and the refusal (ENOTSUP) of other releases.
 *
 * Each function is resolved at the symbol version it was introduced with
 * (dlvsym), so a later libcxi that changes a function's ABI under a new
 * version still hands us the pinned one.  The device is opened for each
 * operation and closed after it: calls are stateless and the kernel
 * serialises them, so concurrent agents need nothing more.
 */
#define _GNU_SOURCE /* dlvsym */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nic_cxi.h"

/* ---- pinned libcxi structures (SHS 14.0.0) ---- */

#define CXI_PINNED_RELEASE "HPE SHS 14.0.0"
#define CXI_PINNED_VERSION "LIBCXI_1.10"

#define CXI_SVC_MAX_VNIS 4
#define CXI_SVC_MAX_MEMBERS 2
#define CXI_TC_MAX 5 /* enum cxi_traffic_class: 4 TCs plus ETH */
#define CXI_RSRC_TYPE_MAX 8
#define CXI_DEFAULT_SVC_ID 1
#define CXIL_DEVNAME_MAX 13 /* "cxi" + up to 10 digits */
#define CXIL_DRVNAME_MAX 8
#define CXIL_FRUDESC_MAX 16

/* enum cxi_svc_member_type */
#define CXI_SVC_MEMBER_IGNORE 0
#define CXI_SVC_MEMBER_UID 1

/* The first byte of struct cxi_svc_desc is a run of uint8_t bit-fields
 * (restricted_members:1, restricted_vnis:1, restricted_tcs:1,
 * resource_limits:1, enable:1, is_system_svc:1, cntr_pool_id:2).  ISO C
 * has no uint8_t bit-fields, so we use the byte and these masks: the
 * x86-64 and AArch64 ABIs allocate bit-fields from the lowest bit.
 */
#define CXI_SVC_RESTRICTED_MEMBERS 0x01
#define CXI_SVC_RESTRICTED_VNIS 0x02
#define CXI_SVC_RESTRICTED_TCS 0x04
#define CXI_SVC_RESOURCE_LIMITS 0x08
#define CXI_SVC_ENABLE 0x10
#define CXI_SVC_IS_SYSTEM 0x20

/* Indexed by enum cxi_rsrc_type, the same order as enum nic_rsrc. */
struct cxi_limits {
    uint16_t max;
    uint16_t res;
};

struct cxi_svc_desc {
    uint8_t flags; /* CXI_SVC_* bits */
    uint8_t num_vld_vnis;
    uint16_t vnis[CXI_SVC_MAX_VNIS];
    bool tcs[CXI_TC_MAX]; /* indexed by enum cxi_traffic_class */
    struct {
        uint32_t id;   /* union { __kernel_uid_t uid; __kernel_gid_t gid; } */
        uint32_t type; /* enum cxi_svc_member_type */
    } members[CXI_SVC_MAX_MEMBERS];
    struct cxi_limits limits[CXI_RSRC_TYPE_MAX]; /* union with .ptes etc. */
    unsigned int svc_id;
};

struct cxi_svc_fail_info {
    uint16_t rsrc_avail[CXI_RSRC_TYPE_MAX];
    bool no_le_pools;
    bool no_tle_pools;
    bool no_cntr_pools;
};

struct cxi_rsrc_use {
    unsigned int svc_id;
    unsigned int tle_pool_id; /* since driver 67c3df0; in every SHS tag */
    uint16_t in_use[CXI_RSRC_TYPE_MAX];
};

/* libcxi.h's struct cxil_devinfo.  Only dev_id, device_name and num_* are
 * read; the rest is declared so that the array stride of
 * cxil_device_list.info[] is right.
 */
struct cxil_devinfo {
    unsigned int dev_id;
    unsigned int nid; /* union with the obsolete nic_addr */
    unsigned int pid_bits;
    unsigned int pid_count;
    unsigned int pid_granule;
    unsigned int min_free_shift;
    unsigned int rdzv_get_idx;
    char device_name[CXIL_DEVNAME_MAX + 1];
    char driver_name[CXIL_DRVNAME_MAX + 1];
    unsigned int vendor_id;
    unsigned int device_id;
    unsigned int device_rev;
    unsigned int device_proto;
    unsigned int device_platform;
    uint16_t num_ptes; /* note: not in enum cxi_rsrc_type order */
    uint16_t num_txqs;
    uint16_t num_tgqs;
    uint16_t num_eqs;
    uint16_t num_cts;
    uint16_t num_acs;
    uint16_t num_tles;
    uint16_t num_les;
    uint16_t pci_domain;
    uint8_t pci_bus;
    uint8_t pci_device;
    uint8_t pci_function;
    size_t link_mtu;
    size_t link_speed;
    uint8_t link_state;
    int uc_nic;
    unsigned int pct_eq;
    int32_t cassini_version; /* enum cassini_version */
    char fru_description[CXIL_FRUDESC_MAX];
    bool is_vf;
    int32_t system_type_identifier; /* enum system_type_identifier */
};

struct cxil_device_list {
    unsigned int count;
    struct cxil_devinfo info[];
};

struct cxil_svc_list {
    unsigned int count;
    struct cxi_svc_desc descs[];
};

struct cxil_dev; /* libcxi's; only passed back to it */

_Static_assert(sizeof(bool) == 1, "libcxi's bool is one byte");
_Static_assert(sizeof(struct cxi_svc_desc) == 68, "cxi_svc_desc size");
_Static_assert(offsetof(struct cxi_svc_desc, tcs) == 10, "cxi_svc_desc.tcs");
_Static_assert(offsetof(struct cxi_svc_desc, members) == 16,
               "cxi_svc_desc.members");
_Static_assert(offsetof(struct cxi_svc_desc, limits) == 32,
               "cxi_svc_desc.limits");
_Static_assert(offsetof(struct cxi_svc_desc, svc_id) == 64,
               "cxi_svc_desc.svc_id");
_Static_assert(sizeof(struct cxi_svc_fail_info) == 20, "cxi_svc_fail_info");
_Static_assert(sizeof(struct cxi_rsrc_use) == 24, "cxi_rsrc_use size");
_Static_assert(offsetof(struct cxil_devinfo, num_ptes) == 72,
               "cxil_devinfo.num_ptes");
_Static_assert(offsetof(struct cxil_devinfo, link_mtu) == 96,
               "cxil_devinfo.link_mtu");
_Static_assert(sizeof(struct cxil_devinfo) == 152, "cxil_devinfo size");
_Static_assert(offsetof(struct cxil_svc_list, descs) == 4,
               "cxil_svc_list.descs");
_Static_assert(offsetof(struct cxil_device_list, info) == 8,
               "cxil_device_list.info");
_Static_assert(NIC_RSRC_COUNT == CXI_RSRC_TYPE_MAX, "enum nic_rsrc");
_Static_assert(VNIB_SERVICE_VNIS_MAX == CXI_SVC_MAX_VNIS,
               "VNIB_SERVICE_VNIS_MAX");
/* cxi_resolve copies dlvsym's void * into the function pointers. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "code pointers");

/* ---- the backend ---- */

/* Most devices or services one call accepts from libcxi. */
#define CXI_MAX_ENTRIES 65536

/* Where the driver lists the devices cxil_get_device_list globs. */
#define CXI_SYSFS_DIR "/sys/class/cxi_user"

struct nic_cxi {
    void *dl;
    int (*get_device_list)(struct cxil_device_list **);
    void (*free_device_list)(struct cxil_device_list *);
    int (*open_device)(uint32_t, struct cxil_dev **);
    void (*close_device)(struct cxil_dev *);
    int (*get_svc_list)(struct cxil_dev *, struct cxil_svc_list **);
    void (*free_svc_list)(struct cxil_svc_list *);
    int (*alloc_svc)(struct cxil_dev *,
                     const struct cxi_svc_desc *,
                     struct cxi_svc_fail_info *);
    int (*destroy_svc)(struct cxil_dev *, unsigned int);
    int (*get_svc_rsrc_use)(struct cxil_dev *,
                            unsigned int,
                            struct cxi_rsrc_use *);
};

/* The functions we call, each at the symbol version that introduced it
 * (src/libcxi.sym), and where struct nic_cxi keeps it.
 */
static const struct {
    const char *name;
    const char *version;
    size_t offset;
} cxi_symbols[] = {
    {"cxil_get_device_list",
     "LIBCXI_1.0",
     offsetof(struct nic_cxi, get_device_list)},
    {"cxil_free_device_list",
     "LIBCXI_1.0",
     offsetof(struct nic_cxi, free_device_list)},
    {"cxil_open_device", "LIBCXI_1.0", offsetof(struct nic_cxi, open_device)},
    {"cxil_close_device", "LIBCXI_1.0", offsetof(struct nic_cxi, close_device)},
    {"cxil_get_svc_list", "LIBCXI_1.0", offsetof(struct nic_cxi, get_svc_list)},
    {"cxil_free_svc_list",
     "LIBCXI_1.0",
     offsetof(struct nic_cxi, free_svc_list)},
    {"cxil_alloc_svc", "LIBCXI_1.0", offsetof(struct nic_cxi, alloc_svc)},
    {"cxil_destroy_svc", "LIBCXI_1.0", offsetof(struct nic_cxi, destroy_svc)},
    {"cxil_get_svc_rsrc_use",
     "LIBCXI_1.5",
     offsetof(struct nic_cxi, get_svc_rsrc_use)},
};

/* Resolve every function into cxi.  A symbol that is absent is ENODEV;
 * one present only at another version is a release we do not know
 * (ENOTSUP).
 */
static int cxi_resolve(struct nic_cxi *cxi, vnib_error_t *errp)
{
    for (size_t i = 0; i < sizeof(cxi_symbols) / sizeof(cxi_symbols[0]); i++) {
        const char *name = cxi_symbols[i].name;
        const char *version = cxi_symbols[i].version;
        void *sym = dlvsym(cxi->dl, name, version);
        if (!sym && !dlsym(cxi->dl, name)) {
            errno = ENODEV;
            return errprintf(errp, "libcxi: symbol %s not found", name);
        }
        if (!sym) {
            errno = ENOTSUP;
            return errprintf(errp,
                             "libcxi: %s@%s not found: the installed libcxi "
                             "is not %s (%s)",
                             name,
                             version,
                             CXI_PINNED_RELEASE,
                             CXI_PINNED_VERSION);
        }
        /* POSIX: a data pointer from dlsym may be stored as code. */
        memcpy((char *)cxi + cxi_symbols[i].offset, &sym, sizeof(sym));
    }
    return 0;
}

void *nic_cxi_open(const char *path, vnib_error_t *errp)
{
    struct nic_cxi *cxi = NULL;

    if (!path)
        path = NIC_CXI_DEFAULT_LIB;
    if (!(cxi = calloc(1, sizeof(*cxi)))) {
        errno = ENOMEM;
        errprintf(errp, "libcxi: out of memory");
        goto error;
    }
    if (!(cxi->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        errno = ENODEV;
        errprintf(errp,
                  "libcxi: cannot load %s: %s",
                  path,
                  why ? why : "unknown error");
        goto error;
    }
    if (cxi_resolve(cxi, errp) < 0)
        goto error;
    /* The release check: LIBCXI_1.10 (cxil_svc_set_netns) first appeared
     * in SHS 14.0.0.  Older releases lack it; their structures may differ.
     */
    if (!dlvsym(cxi->dl, "cxil_svc_set_netns", CXI_PINNED_VERSION)
        || !dlvsym(cxi->dl, "cxil_alloc_svc", "LIBCXI_1.0")) {
        errno = ENOTSUP;
        errprintf(errp,
                  "libcxi: the installed libcxi is not SHS 14.0 (%s); this "
                  "agent is built for %s structures",
                  CXI_PINNED_VERSION,
                  CXI_PINNED_RELEASE);
        goto error;
    }
    return cxi;
error:
    nic_cxi_close(cxi);
    return NULL;
}

void nic_cxi_close(void *impl)
{
    struct nic_cxi *cxi = impl;
    int saved_errno = errno;

    if (cxi) {
        if (cxi->dl)
            dlclose(cxi->dl);
        free(cxi);
    }
    errno = saved_errno;
}

/* libcxi's negative errno return as -1 with errno set. */
static int cxi_fail(int rc)
{
    errno = rc < 0 ? -rc : EIO;
    return -1;
}

static int cxi_dev_open(const struct nic_cxi *cxi,
                        const struct nic_info *dev,
                        struct cxil_dev **dp,
                        vnib_error_t *errp)
{
    int rc = cxi->open_device(dev->dev_id, dp);

    if (rc < 0) {
        *dp = NULL;
        errprintf(errp,
                  "libcxi: %s: cannot open device: %s",
                  dev->name,
                  strerror(-rc));
        errno = ENODEV;
        return -1;
    }
    return 0;
}

static int info_cmp(const void *a, const void *b)
{
    const struct nic_info *x = a, *y = b;
    return (x->dev_id > y->dev_id) - (x->dev_id < y->dev_id);
}

/* cxil_get_device_list leaves out the devices it cannot open.  Name the
 * first device the driver has that the list lacks, so that no caller acts
 * on a partial view (ENODEV).
 */
static int cxi_check_skipped(const struct nic_info *devs,
                             int count,
                             vnib_error_t *errp)
{
    struct dirent *de;
    DIR *d = opendir(CXI_SYSFS_DIR);
    int rc = 0;

    if (!d)
        return 0; /* no driver: the list is complete (and empty) */
    while (rc == 0 && (de = readdir(d))) {
        char *end;
        unsigned long id;
        bool found = false;
        if (strncmp(de->d_name, "cxi", 3) != 0 || de->d_name[3] < '0'
            || de->d_name[3] > '9')
            continue;
        id = strtoul(de->d_name + 3, &end, 10);
        if (*end != '\0' || id > UINT32_MAX)
            continue;
        for (int i = 0; i < count; i++)
            found = found || devs[i].dev_id == id;
        if (!found) {
            errno = ENODEV;
            rc = errprintf(errp,
                           "libcxi: cxi%lu: cannot open device (skipped by "
                           "cxil_get_device_list)",
                           id);
        }
    }
    closedir(d);
    if (rc < 0)
        errno = ENODEV;
    return rc;
}

int nic_cxi_list(void *impl,
                 struct nic_info **devsp,
                 int *countp,
                 vnib_error_t *errp)
{
    const struct nic_cxi *cxi = impl;
    struct cxil_device_list *list = NULL;
    struct nic_info *devs = NULL;
    int count = 0, lrc;
    int rc = -1;

    if ((lrc = cxi->get_device_list(&list)) < 0) {
        cxi_fail(lrc);
        errprintf(errp, "libcxi: cannot list devices: %s", strerror(errno));
        goto done;
    }
    if (!list || list->count > CXI_MAX_ENTRIES) {
        errno = EIO;
        errprintf(errp, "libcxi: cxil_get_device_list returned no list");
        goto done;
    }
    count = (int)list->count;
    if (count > 0 && !(devs = calloc((size_t)count, sizeof(*devs)))) {
        errno = ENOMEM;
        errprintf(errp, "libcxi: out of memory");
        goto done;
    }
    for (int i = 0; i < count; i++) {
        const struct cxil_devinfo *in = &list->info[i];
        struct nic_info *out = &devs[i];
        /* device_name is "cxiN"; bound the copy all the same. */
        snprintf(out->name,
                 sizeof(out->name),
                 "%.*s",
                 CXIL_DEVNAME_MAX,
                 in->device_name);
        if (!out->name[0])
            snprintf(out->name, sizeof(out->name), "cxi%u", in->dev_id);
        out->dev_id = in->dev_id;
        out->cap[NIC_RSRC_PTE] = in->num_ptes;
        out->cap[NIC_RSRC_TXQ] = in->num_txqs;
        out->cap[NIC_RSRC_TGQ] = in->num_tgqs;
        out->cap[NIC_RSRC_EQ] = in->num_eqs;
        out->cap[NIC_RSRC_CT] = in->num_cts;
        out->cap[NIC_RSRC_LE] = in->num_les;
        out->cap[NIC_RSRC_TLE] = in->num_tles;
        out->cap[NIC_RSRC_AC] = in->num_acs;
    }
    if (count > 0)
        qsort(devs, (size_t)count, sizeof(*devs), info_cmp);
    if (cxi_check_skipped(devs, count, errp) < 0)
        goto done;
    *devsp = devs;
    *countp = count;
    devs = NULL;
    rc = 0;
done:
    free(devs);
    if (list) {
        int e = errno;
        cxi->free_device_list(list);
        errno = e;
    }
    return rc;
}

static void desc_to_svc(const struct cxi_svc_desc *d, struct nic_svc *s)
{
    memset(s, 0, sizeof(*s));
    s->svc_id = d->svc_id;
    s->is_system = d->flags & CXI_SVC_IS_SYSTEM;
    s->enabled = d->flags & CXI_SVC_ENABLE;
    s->restricted_members = d->flags & CXI_SVC_RESTRICTED_MEMBERS;
    s->restricted_vnis = d->flags & CXI_SVC_RESTRICTED_VNIS;
    s->restricted_tcs = d->flags & CXI_SVC_RESTRICTED_TCS;
    s->resource_limits = d->flags & CXI_SVC_RESOURCE_LIMITS;
    for (int i = 0; i < CXI_SVC_MAX_MEMBERS && !s->has_uid; i++) {
        if (d->members[i].type == CXI_SVC_MEMBER_UID) {
            s->has_uid = true;
            s->uid = (uid_t)d->members[i].id;
        }
    }
    s->nvnis =
        d->num_vld_vnis < CXI_SVC_MAX_VNIS ? d->num_vld_vnis : CXI_SVC_MAX_VNIS;
    memcpy(s->vnis, d->vnis, sizeof(s->vnis));
    for (int i = 0; i < CXI_TC_MAX; i++) {
        if (d->tcs[i])
            s->tcs_mask |= 1u << i;
    }
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        s->max[r] = d->limits[r].max;
        s->res[r] = d->limits[r].res;
    }
    /* libcxi does not report attached LNIs; s->lnis stays 0. */
}

static int svc_to_desc(const struct nic_svc *s,
                       const char *name,
                       struct cxi_svc_desc *d,
                       vnib_error_t *errp)
{
    memset(d, 0, sizeof(*d));
    if (s->nvnis < 0 || s->nvnis > CXI_SVC_MAX_VNIS) {
        errno = EINVAL;
        return errprintf(errp,
                         "libcxi: %s: %d VNIs: a service has at most %d",
                         name,
                         s->nvnis,
                         CXI_SVC_MAX_VNIS);
    }
    if (s->tcs_mask >> CXI_TC_MAX) {
        errno = EINVAL;
        return errprintf(errp,
                         "libcxi: %s: traffic class mask 0x%x out of range",
                         name,
                         s->tcs_mask);
    }
    d->flags = (s->restricted_members ? CXI_SVC_RESTRICTED_MEMBERS : 0)
               | (s->restricted_vnis ? CXI_SVC_RESTRICTED_VNIS : 0)
               | (s->restricted_tcs ? CXI_SVC_RESTRICTED_TCS : 0)
               | (s->resource_limits ? CXI_SVC_RESOURCE_LIMITS : 0)
               | CXI_SVC_ENABLE; /* ignored by alloc; the driver's default */
    d->num_vld_vnis = (uint8_t)s->nvnis;
    memcpy(d->vnis, s->vnis, sizeof(d->vnis));
    for (int i = 0; i < CXI_TC_MAX; i++)
        d->tcs[i] = (s->tcs_mask >> i) & 1;
    if (s->has_uid) {
        d->members[0].id = (uint32_t)s->uid;
        d->members[0].type = CXI_SVC_MEMBER_UID;
    }
    d->members[1].type = CXI_SVC_MEMBER_IGNORE;
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        d->limits[r].max = s->max[r];
        d->limits[r].res = s->res[r];
    }
    return 0;
}

int nic_cxi_svc_list(void *impl,
                     const struct nic_info *dev,
                     struct nic_svc **svcsp,
                     int *countp,
                     vnib_error_t *errp)
{
    const struct nic_cxi *cxi = impl;
    struct cxil_svc_list *list = NULL;
    struct cxil_dev *d = NULL;
    struct nic_svc *svcs = NULL;
    int count = 0, lrc;
    int rc = -1;

    if (cxi_dev_open(cxi, dev, &d, errp) < 0)
        return -1;
    if ((lrc = cxi->get_svc_list(d, &list)) < 0) {
        cxi_fail(lrc);
        errprintf(errp,
                  "libcxi: %s: cannot list services: %s",
                  dev->name,
                  strerror(errno));
        goto done;
    }
    if (!list || list->count > CXI_MAX_ENTRIES) {
        errno = EIO;
        errprintf(
            errp, "libcxi: %s: cxil_get_svc_list returned no list", dev->name);
        goto done;
    }
    count = (int)list->count;
    if (count > 0 && !(svcs = calloc((size_t)count, sizeof(*svcs)))) {
        errno = ENOMEM;
        errprintf(errp, "libcxi: out of memory");
        goto done;
    }
    for (int i = 0; i < count; i++) {
        struct cxi_rsrc_use use;
        int urc;
        desc_to_svc(&list->descs[i], &svcs[i]);
        memset(&use, 0, sizeof(use));
        urc = cxi->get_svc_rsrc_use(d, svcs[i].svc_id, &use);
        if (urc == -EINVAL)
            continue; /* destroyed since the list was taken: no use */
        if (urc < 0) {
            cxi_fail(urc);
            errprintf(errp,
                      "libcxi: %s: service %u: cannot read its use: %s",
                      dev->name,
                      svcs[i].svc_id,
                      strerror(errno));
            goto done;
        }
        memcpy(svcs[i].use, use.in_use, sizeof(svcs[i].use));
    }
    *svcsp = svcs;
    *countp = count;
    svcs = NULL;
    rc = 0;
done:
    free(svcs);
    {
        int e = errno;
        if (list)
            cxi->free_svc_list(list);
        cxi->close_device(d);
        errno = e;
    }
    return rc;
}

/* Close d, keeping errno; returns rc. */
static int cxi_dev_close(const struct nic_cxi *cxi, struct cxil_dev *d, int rc)
{
    int e = errno;
    cxi->close_device(d);
    errno = e;
    return rc;
}

int nic_cxi_svc_alloc(void *impl,
                      const struct nic_info *dev,
                      const struct nic_svc *req,
                      unsigned *svc_idp,
                      struct nic_fail *fail,
                      vnib_error_t *errp)
{
    const struct nic_cxi *cxi = impl;
    struct cxi_svc_fail_info fi;
    struct cxi_svc_desc desc;
    struct cxil_dev *d = NULL;
    int rc;

    if (svc_to_desc(req, dev->name, &desc, errp) < 0)
        return -1;
    if (cxi_dev_open(cxi, dev, &d, errp) < 0)
        return -1;
    memset(&fi, 0, sizeof(fi));
    rc = cxi->alloc_svc(d, &desc, &fi);
    if (rc < 0) {
        cxi_fail(rc);
        if (errno == ENOSPC) {
            memcpy(fail->avail, fi.rsrc_avail, sizeof(fail->avail));
            fail->no_le_pools = fi.no_le_pools;
            fail->no_tle_pools = fi.no_tle_pools;
            fail->no_cntr_pools = fi.no_cntr_pools;
        }
        errprintf(errp,
                  "libcxi: %s: cannot allocate a service: %s%s",
                  dev->name,
                  strerror(errno),
                  errno == EPERM    ? " (needs CAP_SYS_ADMIN)"
                  : fi.no_le_pools  ? " (no LE pool left)"
                  : fi.no_tle_pools ? " (no TLE pool left)"
                                    : "");
        rc = -1;
    } else {
        *svc_idp = (unsigned)rc;
        rc = 0;
    }
    return cxi_dev_close(cxi, d, rc);
}

int nic_cxi_svc_destroy(void *impl,
                        const struct nic_info *dev,
                        unsigned svc_id,
                        vnib_error_t *errp)
{
    const struct nic_cxi *cxi = impl;
    struct cxil_dev *d = NULL;
    int rc;

    if (cxi_dev_open(cxi, dev, &d, errp) < 0)
        return -1;
    rc = cxi->destroy_svc(d, svc_id);
    if (rc < 0) {
        cxi_fail(rc);
        errprintf(errp,
                  "libcxi: %s: cannot destroy service %u: %s%s",
                  dev->name,
                  svc_id,
                  strerror(errno),
                  errno == EBUSY                 ? " (LNIs attached)"
                  : svc_id == CXI_DEFAULT_SVC_ID ? " (the default service)"
                                                 : "");
        rc = -1;
    } else {
        rc = 0;
    }
    return cxi_dev_close(cxi, d, rc);
}
