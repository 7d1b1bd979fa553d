/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_jobinfo: encoding and strict decoding of switch/vnib's jobinfo.
 *
 * Layout (big-endian): magic u32, version u32, flags u32, job u32, step
 * u32, job reservation i64, step reservation i64.  36 bytes, always.
 * The job-level data: see swv_jobinfo.h.
 */
#include "swv_jobinfo.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
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

void swv_jobinfo_encode(const struct swv_jobinfo *info,
                        uint8_t out[SWV_JOBINFO_WIRE])
{
    put32(out, SWV_JOBINFO_MAGIC);
    put32(out + 4, SWV_JOBINFO_VERSION);
    put32(out + 8, info->flags);
    put32(out + 12, info->job_id);
    put32(out + 16, info->step_id);
    put64(out + 20, info->job_resv);
    put64(out + 28, info->step_resv);
}

int swv_jobinfo_decode(const uint8_t *buf,
                       size_t len,
                       struct swv_jobinfo *info,
                       vnib_error_t *errp)
{
    struct swv_jobinfo in;
    uint32_t version;

    memset(info, 0, sizeof(*info));
    errno = EINVAL;
    if (buf == NULL || len != SWV_JOBINFO_WIRE)
        return errprintf(errp,
                         "switch/vnib jobinfo: %zu bytes, want %d",
                         len,
                         SWV_JOBINFO_WIRE);
    if (get32(buf) != SWV_JOBINFO_MAGIC)
        return errprintf(errp, "switch/vnib jobinfo: bad magic");
    version = get32(buf + 4);
    if (version != SWV_JOBINFO_VERSION)
        return errprintf(errp,
                         "switch/vnib jobinfo: version %" PRIu32 ", want %u",
                         version,
                         SWV_JOBINFO_VERSION);
    in.flags = get32(buf + 8);
    in.job_id = get32(buf + 12);
    in.step_id = get32(buf + 16);
    in.job_resv = get64(buf + 20);
    in.step_resv = get64(buf + 28);
    if ((in.flags & ~(SWV_JOBINFO_BUILT | SWV_JOBINFO_UNISOLATED)) != 0)
        return errprintf(
            errp, "switch/vnib jobinfo: unknown flags 0x%" PRIx32, in.flags);
    if (in.job_resv < 0 || in.step_resv < 0)
        return errprintf(errp, "switch/vnib jobinfo: negative reservation");
    if ((in.flags & SWV_JOBINFO_BUILT) != 0
        && (in.flags & SWV_JOBINFO_UNISOLATED) == 0
        && (in.job_resv == 0 || in.step_resv == 0 || in.job_id == 0))
        return errprintf(errp,
                         "switch/vnib jobinfo: a reserved step "
                         "without its reservations");
    *info = in;
    errno = 0;
    return 0;
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
