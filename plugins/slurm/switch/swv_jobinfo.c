/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_jobinfo: encoding and strict decoding of switch/vnib's jobinfo.
 *
 * Layout (big-endian): magic u32, version u32, flags u32, job u32, step
 * u32, job reservation i64, step reservation i64: 36 bytes, version 1;
 * version 2 adds the lease's length u32 and its bytes; version 3 adds
 * the limits (def, res, max of each resource, then depth: u32 each,
 * 0xffffffff unset), then the lease's length u32 (0: none) and its
 * bytes.  The job-level data: see swv_jobinfo.h.
 */
#include "swv_jobinfo.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
           | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void put64(uint8_t *p, int64_t v)
{
    put32(p, (uint32_t)((uint64_t)v >> 32));
    put32(p + 4, (uint32_t)((uint64_t)v & 0xffffffffu));
}

static int64_t get64(const uint8_t *p)
{
    return (int64_t)(((uint64_t)get32(p) << 32) | (uint64_t)get32(p + 4));
}

size_t swv_jobinfo_wire_size(const struct swv_jobinfo *info)
{
    size_t n = info->lease != NULL ? strlen(info->lease) : 0;

    if ((info->flags & SWV_JOBINFO_LIMITS) != 0)
        return SWV_JOBINFO_WIRE_LIMITS + n;
    if (info->lease == NULL)
        return SWV_JOBINFO_WIRE;
    return SWV_JOBINFO_WIRE_LEASE + n;
}

/* The limits as 25 u32 at p, in, or out of, their wire order. */
static int32_t *limit_slot(struct swv_limits *l, int i)
{
    if (i < SWV_RSRC_COUNT)
        return &l->def[i];
    if (i < 2 * SWV_RSRC_COUNT)
        return &l->res[i - SWV_RSRC_COUNT];
    if (i < 3 * SWV_RSRC_COUNT)
        return &l->max[i - 2 * SWV_RSRC_COUNT];
    return &l->depth;
}

static void limits_encode(const struct swv_jobinfo *info, uint8_t *out)
{
    struct swv_limits l = info->limits;

    for (int i = 0; i < 3 * SWV_RSRC_COUNT + 1; i++) {
        int32_t v = *limit_slot(&l, i);
        put32(out + 36 + 4 * i, v < 0 ? 0xffffffffu : (uint32_t)v);
    }
}

static int limits_decode(const uint8_t *buf,
                         struct swv_limits *l,
                         vnib_error_t *errp)
{
    for (int i = 0; i < 3 * SWV_RSRC_COUNT + 1; i++) {
        uint32_t v = get32(buf + 36 + 4 * i);
        uint32_t bound =
            i == 3 * SWV_RSRC_COUNT ? SWV_DEPTH_MAX : SWV_LIMIT_MAX;
        if (v != 0xffffffffu && (v > bound || (i == 3 * SWV_RSRC_COUNT && !v)))
            return errprintf(errp, "switch/vnib jobinfo: a limit out of range");
        *limit_slot(l, i) = v == 0xffffffffu ? -1 : (int32_t)v;
    }
    return 0;
}

void swv_jobinfo_encode(const struct swv_jobinfo *info, uint8_t *out)
{
    size_t n = info->lease != NULL ? strlen(info->lease) : 0;

    put32(out, SWV_JOBINFO_MAGIC);
    if ((info->flags & SWV_JOBINFO_LIMITS) != 0) {
        put32(out + 4, SWV_JOBINFO_VERSION_LIMITS);
        put32(out + 8, info->flags);
        put32(out + 12, info->job_id);
        put32(out + 16, info->step_id);
        put64(out + 20, info->job_resv);
        put64(out + 28, info->step_resv);
        limits_encode(info, out);
        put32(out + SWV_JOBINFO_WIRE_LIMITS - 4, (uint32_t)n);
        if (n)
            memcpy(out + SWV_JOBINFO_WIRE_LIMITS, info->lease, n);
        return;
    }
    put32(
        out + 4,
        info->lease != NULL ? SWV_JOBINFO_VERSION_LEASE : SWV_JOBINFO_VERSION);
    put32(out + 8, info->flags);
    put32(out + 12, info->job_id);
    put32(out + 16, info->step_id);
    put64(out + 20, info->job_resv);
    put64(out + 28, info->step_resv);
    if (info->lease == NULL)
        return;
    put32(out + 36, (uint32_t)n);
    memcpy(out + 40, info->lease, n);
}

/* Is the lease of n bytes at p one a step may carry (its text only: the
 * node verifies it)? */
static int lease_ok(const uint8_t *p, size_t n, vnib_error_t *errp)
{
    static const char prefix[] = "vnib1.";

    if (n < sizeof(prefix) || n > SWV_JOBINFO_LEASE_MAX)
        return errprintf(errp, "switch/vnib jobinfo: a lease of %zu bytes", n);
    if (memcmp(p, prefix, sizeof(prefix) - 1) != 0)
        return errprintf(errp, "switch/vnib jobinfo: not a lease");
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z')
              || (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '_'
              || p[i] == '.'))
            return errprintf(errp, "switch/vnib jobinfo: bad lease byte");
    return 0;
}

int swv_jobinfo_decode(const uint8_t *buf,
                       size_t len,
                       struct swv_jobinfo *info,
                       vnib_error_t *errp)
{
    struct swv_jobinfo in = {0};
    uint32_t version;
    size_t n = 0;

    memset(info, 0, sizeof(*info));
    errno = EINVAL;
    if (buf == NULL || len < SWV_JOBINFO_WIRE)
        return errprintf(errp,
                         "switch/vnib jobinfo: %zu bytes, want %d or more",
                         len,
                         SWV_JOBINFO_WIRE);
    if (get32(buf) != SWV_JOBINFO_MAGIC)
        return errprintf(errp, "switch/vnib jobinfo: bad magic");
    version = get32(buf + 4);
    if (version == SWV_JOBINFO_VERSION) {
        if (len != SWV_JOBINFO_WIRE)
            return errprintf(errp,
                             "switch/vnib jobinfo: %zu bytes, want %d",
                             len,
                             SWV_JOBINFO_WIRE);
    } else if (version == SWV_JOBINFO_VERSION_LEASE
               || version == SWV_JOBINFO_VERSION_LIMITS) {
        size_t head = version == SWV_JOBINFO_VERSION_LEASE
                          ? SWV_JOBINFO_WIRE_LEASE
                          : SWV_JOBINFO_WIRE_LIMITS;
        if (len < head)
            return errprintf(errp,
                             "switch/vnib jobinfo: %zu bytes, want %zu or more",
                             len,
                             head);
        n = get32(buf + head - 4);
        if (n != len - head)
            return errprintf(errp,
                             "switch/vnib jobinfo: a lease of %zu bytes in %zu",
                             n,
                             len - head);
        if ((version == SWV_JOBINFO_VERSION_LEASE || n > 0)
            && lease_ok(buf + head, n, errp) < 0)
            return -1;
        if (version == SWV_JOBINFO_VERSION_LIMITS
            && limits_decode(buf, &in.limits, errp) < 0)
            return -1;
    } else
        return errprintf(errp,
                         "switch/vnib jobinfo: version %" PRIu32
                         ", want %u, %u or %u",
                         version,
                         SWV_JOBINFO_VERSION,
                         SWV_JOBINFO_VERSION_LEASE,
                         SWV_JOBINFO_VERSION_LIMITS);
    in.flags = get32(buf + 8);
    in.job_id = get32(buf + 12);
    in.step_id = get32(buf + 16);
    in.job_resv = get64(buf + 20);
    in.step_resv = get64(buf + 28);
    if ((in.flags
         & ~(SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED | SWV_JOBINFO_FALLBACK
             | SWV_JOBINFO_LIMITS))
        != 0)
        return errprintf(
            errp, "switch/vnib jobinfo: unknown flags 0x%" PRIx32, in.flags);
    if ((in.flags & SWV_JOBINFO_FALLBACK) != 0
        && (in.flags & (SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED))
               != SWV_JOBINFO_BUILT)
        return errprintf(errp,
                         "switch/vnib jobinfo: a fallback on a step that is "
                         "not reserved");
    if (((in.flags & SWV_JOBINFO_LIMITS) != 0)
        != (version == SWV_JOBINFO_VERSION_LIMITS))
        return errprintf(errp,
                         "switch/vnib jobinfo: limits flag without its "
                         "version, or the version without the flag");
    if (in.job_resv < 0 || in.step_resv < 0)
        return errprintf(errp, "switch/vnib jobinfo: negative reservation");
    if ((in.flags & SWV_JOBINFO_BUILT) != 0
        && (in.flags & SWV_JOBINFO_UNISOLATED) == 0
        && (in.job_resv == 0 || in.step_resv == 0 || in.job_id == 0))
        return errprintf(errp,
                         "switch/vnib jobinfo: a reserved step "
                         "without its reservations");
    if (version != SWV_JOBINFO_VERSION
        && (in.flags & (SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED))
               != SWV_JOBINFO_BUILT)
        return errprintf(errp,
                         "switch/vnib jobinfo: a lease or limits on a step "
                         "that is not reserved");
    if (version != SWV_JOBINFO_VERSION && n > 0) {
        size_t head = version == SWV_JOBINFO_VERSION_LEASE
                          ? SWV_JOBINFO_WIRE_LEASE
                          : SWV_JOBINFO_WIRE_LIMITS;
        if ((in.lease = malloc(n + 1)) == NULL) {
            errno = ENOMEM;
            return errprintf(errp, "switch/vnib jobinfo: out of memory");
        }
        memcpy(in.lease, buf + head, n);
        in.lease[n] = '\0';
    }
    *info = in;
    errno = 0;
    return 0;
}

int swv_jobinfo_copy(struct swv_jobinfo *dst, const struct swv_jobinfo *src)
{
    *dst = *src;
    if (src->lease == NULL)
        return 0;
    if ((dst->lease = strdup(src->lease)) == NULL) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void swv_jobinfo_clear(struct swv_jobinfo *info)
{
    free(info->lease);
    info->lease = NULL;
}

size_t swv_jobdata_encode(const struct swv_jobdata *jd, uint8_t *out)
{
    size_t n = strnlen(jd->token, SWV_JOBDATA_TOKEN_MAX - 1);

    put32(out, SWV_JOBDATA_MAGIC);
    put32(out + 4, SWV_JOBDATA_VERSION);
    put64(out + 8, jd->job_resv);
    out[16] = (uint8_t)(n >> 8);
    out[17] = (uint8_t)n;
    memcpy(out + 18, jd->token, n);
    return 18 + n;
}

int swv_jobdata_decode(const uint8_t *buf,
                       size_t len,
                       struct swv_jobdata *jd,
                       vnib_error_t *errp)
{
    size_t n, i;
    uint32_t version;

    memset(jd, 0, sizeof(*jd));
    errno = EINVAL;
    if (buf == NULL || len < 18 || len > SWV_JOBDATA_WIRE_MAX)
        return errprintf(errp, "switch/vnib job data: %zu bytes", len);
    if (get32(buf) != SWV_JOBDATA_MAGIC)
        return errprintf(errp, "switch/vnib job data: bad magic");
    version = get32(buf + 4);
    if (version != SWV_JOBDATA_VERSION)
        return errprintf(errp,
                         "switch/vnib job data: version %" PRIu32 ", want %u",
                         version,
                         SWV_JOBDATA_VERSION);
    n = ((size_t)buf[16] << 8) | buf[17];
    if (n != len - 18)
        return errprintf(errp,
                         "switch/vnib job data: token of %zu bytes in %zu",
                         n,
                         len - 18);
    for (i = 0; i < n; i++)
        if (buf[18 + i] <= 0x20 || buf[18 + i] >= 0x7f)
            return errprintf(errp, "switch/vnib job data: bad token byte");
    jd->job_resv = get64(buf + 8);
    if (jd->job_resv < 0 || (n > 0 && jd->job_resv == 0)) {
        jd->job_resv = 0;
        return errprintf(errp, "switch/vnib job data: bad reservation");
    }
    memcpy(jd->token, buf + 18, n);
    jd->token[n] = '\0';
    errno = 0;
    return 0;
}

void swv_jobinfo_ids(const struct swv_jobinfo *info,
                     char job[16],
                     char step[16])
{
    snprintf(job, 16, "%" PRIu32, info->job_id);
    snprintf(step, 16, "%" PRIu32, info->step_id);
}
