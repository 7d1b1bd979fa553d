/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NIC backend dispatcher (see nic.h).
 *
 * A struct nic_backend is one row of a constant table of operations plus
 * the backend's own handle.  This file checks the arguments every backend
 * would otherwise check, so that the backends only do their work, and
 * leaves output parameters in a known state on failure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nic.h"
#include "agent/nic_cxi.h"
#include "agent/nic_sim.h"

/* What one backend does; impl is the handle its open returned. */
struct nic_ops {
    const char *kind;
    void *(*open)(const char *arg, vnib_error_t *errp);
    void (*close)(void *impl);
    int (*list)(void *impl,
                struct nic_info **devsp,
                int *countp,
                vnib_error_t *errp);
    int (*svc_list)(void *impl,
                    const struct nic_info *dev,
                    struct nic_svc **svcsp,
                    int *countp,
                    vnib_error_t *errp);
    int (*svc_alloc)(void *impl,
                     const struct nic_info *dev,
                     const struct nic_svc *req,
                     unsigned *svc_idp,
                     struct nic_fail *fail,
                     vnib_error_t *errp);
    int (*svc_destroy)(void *impl,
                       const struct nic_info *dev,
                       unsigned svc_id,
                       vnib_error_t *errp);
};

/* The table entry of a backend whose operations are PREFIX_open... */
#define NIC_OPS(name, prefix)                                                 \
    {                                                                         \
        .kind = name, .open = prefix##_open, .close = prefix##_close,         \
        .list = prefix##_list, .svc_list = prefix##_svc_list,                 \
        .svc_alloc = prefix##_svc_alloc, .svc_destroy = prefix##_svc_destroy, \
    }

static const struct nic_ops nic_table[] = {
    NIC_OPS("libcxi", nic_cxi),
    NIC_OPS("sim", nic_sim),
};

struct nic_backend {
    const struct nic_ops *ops;
    void *impl;
};

static const char *const nic_rsrc_names[NIC_RSRC_COUNT] = {
    [NIC_RSRC_PTE] = "pte",
    [NIC_RSRC_TXQ] = "txq",
    [NIC_RSRC_TGQ] = "tgq",
    [NIC_RSRC_EQ] = "eq",
    [NIC_RSRC_CT] = "ct",
    [NIC_RSRC_LE] = "le",
    [NIC_RSRC_TLE] = "tle",
    [NIC_RSRC_AC] = "ac",
};

struct nic_backend *nic_create(const char *kind,
                               const char *arg,
                               vnib_error_t *errp)
{
    const struct nic_ops *ops = NULL;
    struct nic_backend *nb = NULL;

    for (size_t i = 0; kind && i < sizeof(nic_table) / sizeof(nic_table[0]);
         i++) {
        if (strcmp(kind, nic_table[i].kind) == 0)
            ops = &nic_table[i];
    }
    if (!ops) {
        errno = EINVAL;
        errprintf(errp,
                  "unknown NIC backend '%s' (use libcxi or sim)",
                  kind ? kind : "(null)");
        goto error;
    }
    if (!(nb = calloc(1, sizeof(*nb)))) {
        errno = ENOMEM;
        errprintf(errp, "%s: out of memory", ops->kind);
        goto error;
    }
    nb->ops = ops;
    if (!(nb->impl = ops->open(arg, errp)))
        goto error;
    return nb;
error:
    nic_destroy(nb);
    return NULL;
}

void nic_destroy(struct nic_backend *nb)
{
    int saved_errno = errno;

    if (nb) {
        if (nb->impl)
            nb->ops->close(nb->impl);
        free(nb);
    }
    errno = saved_errno;
}

const char *nic_kind(const struct nic_backend *nb)
{
    return nb ? nb->ops->kind : "(none)";
}

int nic_list(struct nic_backend *nb,
             struct nic_info **devsp,
             int *countp,
             vnib_error_t *errp)
{
    if (!nb || !devsp || !countp) {
        errno = EINVAL;
        return errprintf(errp, "nic_list: invalid argument");
    }
    *devsp = NULL;
    *countp = 0;
    return nb->ops->list(nb->impl, devsp, countp, errp);
}

int nic_svc_list(struct nic_backend *nb,
                 const struct nic_info *dev,
                 struct nic_svc **svcsp,
                 int *countp,
                 vnib_error_t *errp)
{
    if (!nb || !dev || !svcsp || !countp) {
        errno = EINVAL;
        return errprintf(errp, "nic_svc_list: invalid argument");
    }
    *svcsp = NULL;
    *countp = 0;
    return nb->ops->svc_list(nb->impl, dev, svcsp, countp, errp);
}

int nic_svc_alloc(struct nic_backend *nb,
                  const struct nic_info *dev,
                  const struct nic_svc *req,
                  unsigned *svc_idp,
                  struct nic_fail *fail,
                  vnib_error_t *errp)
{
    struct nic_fail ignored;

    if (!nb || !dev || !req || !svc_idp) {
        errno = EINVAL;
        return errprintf(errp, "nic_svc_alloc: invalid argument");
    }
    /* The backends always fill a struct nic_fail; spare them the NULL. */
    if (!fail)
        fail = &ignored;
    memset(fail, 0, sizeof(*fail));
    *svc_idp = 0;
    return nb->ops->svc_alloc(nb->impl, dev, req, svc_idp, fail, errp);
}

int nic_svc_destroy(struct nic_backend *nb,
                    const struct nic_info *dev,
                    unsigned svc_id,
                    vnib_error_t *errp)
{
    if (!nb || !dev) {
        errno = EINVAL;
        return errprintf(errp, "nic_svc_destroy: invalid argument");
    }
    return nb->ops->svc_destroy(nb->impl, dev, svc_id, errp);
}

const char *nic_rsrc_name(enum nic_rsrc r)
{
    if ((int)r < 0 || r >= NIC_RSRC_COUNT)
        return "(invalid)";
    return nic_rsrc_names[r];
}
