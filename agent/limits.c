/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizing CXI services from HPE's per-core table (see limits.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/limits.h"

struct hpe_row {
    unsigned per_core;
    unsigned max; /* 0: ncores (TLE) */
};

/* Indexed by enum nic_rsrc. */
static const struct hpe_row hpe[NIC_RSRC_COUNT] = {
    [NIC_RSRC_PTE] = {6, 2048},
    [NIC_RSRC_TXQ] = {2, 2048},
    [NIC_RSRC_TGQ] = {1, 1024},
    [NIC_RSRC_EQ] = {2, 2047},
    [NIC_RSRC_CT] = {1, 2047},
    [NIC_RSRC_LE] = {16, 16384},
    [NIC_RSRC_TLE] = {1, 0},
    [NIC_RSRC_AC] = {2, 1022},
};

static unsigned long min_ul(unsigned long a, unsigned long b)
{
    return a < b ? a : b;
}

void limits_want_init(struct limits_want *w)
{
    for (int r = 0; r < NIC_RSRC_COUNT; r++)
        w->def[r] = w->res[r] = w->max[r] = -1;
    w->depth = -1;
}

bool limits_want_empty(const struct limits_want *w)
{
    for (int r = 0; r < NIC_RSRC_COUNT; r++)
        if (w->def[r] >= 0 || w->res[r] >= 0 || w->max[r] >= 0)
            return false;
    return w->depth < 0;
}

int limits_pool_users(const struct nic_svc *svcs, int n, enum nic_rsrc r)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        count +=
            !svcs[i].is_system && svcs[i].svc_id != 1 && svcs[i].res[r] > 0;
    return count;
}

int limits_plan(const struct nic_info *dev,
                const struct nic_svc *svcs,
                int n,
                unsigned ncores,
                const struct limits_want *w,
                struct nic_svc *req,
                vnib_error_t *errp)
{
    char bad[512] = "";
    size_t used = 0;
    unsigned long mult = w && w->depth > 0 ? (unsigned long)w->depth : ncores;

    req->resource_limits = true;
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        unsigned long held = 0;
        for (int i = 0; i < n; i++) {
            if (!svcs[i].is_system)
                continue;
            held += svcs[i].res[r] > svcs[i].use[r] ? svcs[i].res[r]
                                                    : svcs[i].use[r];
        }
        unsigned long left = dev->cap[r] > held ? dev->cap[r] - held : 0;
        unsigned long per =
            w && w->def[r] >= 0 ? (unsigned long)w->def[r] : hpe[r].per_core;
        unsigned long want = per * mult;
        unsigned long max = hpe[r].max ? hpe[r].max : mult;
        if (w && w->max[r] >= 0)
            max = (unsigned long)w->max[r];
        if (w && w->res[r] >= 0) {
            want = (unsigned long)w->res[r];
            if (r == NIC_RSRC_TLE && w->max[r] < 0)
                max = want;
            if (want > left || want > max) {
                int k = snprintf(bad + used,
                                 sizeof(bad) - used,
                                 "%sres_%ss=%lu: %s %lu",
                                 used ? "; " : "",
                                 nic_rsrc_name(r),
                                 want,
                                 want > left ? "it has" : "its maximum is",
                                 want > left ? left : max);
                if (k > 0 && (size_t)k < sizeof(bad) - used)
                    used += (size_t)k;
            }
        }
        max = min_ul(min_ul(max, left), UINT16_MAX);
        req->max[r] = (uint16_t)max;
        req->res[r] = (uint16_t)min_ul(want, max);
        if (r == NIC_RSRC_TLE)
            req->max[r] = req->res[r];
    }
    if (used) {
        errno = ENOSPC;
        return errprintf(errp,
                         "the NIC %s cannot give the reservation asked (%s, "
                         "once its system services have taken theirs)",
                         dev->name,
                         bad);
    }
    return 0;
}

int limits_scale_back(const struct nic_svc *want,
                      struct nic_svc *req,
                      const struct nic_fail *fail,
                      long floor_percent,
                      char *note,
                      size_t size,
                      vnib_error_t *errp)
{
    char below[512] = "";
    size_t used = 0, bused = 0;

    if (size > 0)
        note[0] = '\0';
    if (fail->no_le_pools || fail->no_tle_pools || fail->no_cntr_pools) {
        errno = ENOSPC;
        return errprintf(errp,
                         "no free %s pool on the NIC (too many services "
                         "reserve them); a smaller request cannot help",
                         fail->no_le_pools    ? "LE"
                         : fail->no_tle_pools ? "TLE"
                                              : "counter");
    }
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        if (fail->avail[r] >= req->res[r])
            continue;
        unsigned long floor =
            ((unsigned long)want->res[r] * (unsigned long)floor_percent + 99)
            / 100;
        if (floor == 0 && want->res[r] > 0)
            floor = 1;
        if (fail->avail[r] < floor) {
            int k = snprintf(below + bused,
                             sizeof(below) - bused,
                             "%s%s %u available, floor %lu (%ld%% of %u)",
                             bused ? "; " : "",
                             nic_rsrc_name(r),
                             fail->avail[r],
                             floor,
                             floor_percent,
                             want->res[r]);
            if (k > 0 && (size_t)k < sizeof(below) - bused)
                bused += (size_t)k;
            continue;
        }
        if (used < size) {
            int k = snprintf(note + used,
                             size - used,
                             "%s%s %u->%u",
                             used ? " " : "",
                             nic_rsrc_name(r),
                             req->res[r],
                             fail->avail[r]);
            if (k > 0)
                used += (size_t)k < size - used ? (size_t)k : size - used - 1;
        }
        req->res[r] = fail->avail[r];
        if (r == NIC_RSRC_TLE)
            req->max[r] = req->res[r];
    }
    if (bused) {
        errno = ENOSPC;
        return errprintf(errp, "below the floor: %s", below);
    }
    if (used == 0) {
        /* ENOSPC although every figure fits: the NIC changed under us. */
        errno = EAGAIN;
        return errprintf(errp, "the NIC reported no shortfall");
    }
    return 0;
}

void limits_format(const uint16_t v[NIC_RSRC_COUNT], char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (int r = 0; r < NIC_RSRC_COUNT && used < size; r++) {
        int k = snprintf(buf + used,
                         size - used,
                         "%s%s=%u",
                         r ? " " : "",
                         nic_rsrc_name(r),
                         v[r]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}
