/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's checks of what clients send (see fmsim_wire.h): job and step
 * ids, NIC addresses as libfabric writes them, and the body of a
 * multicast tree request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmsim/fmsim_wire.h"

bool fmsim_wire_id_valid(const char *id)
{
    size_t n = 0;
    for (; id[n]; n++) {
        unsigned char c = (unsigned char)id[n];
        if (c < 0x20 || c == 0x7f || c == '/' || n >= FMSIM_JOB_ID_MAX)
            return false;
    }
    return n > 0;
}

/* A NIC address as libfabric writes it ("%X:%02X:%02X") or a full MAC:
 * one to six groups of one or two hex digits separated by ':'.
 */
int fmsim_wire_mac_parse(const char *str, uint64_t *macp)
{
    uint64_t mac = 0;
    int groups = 0;
    const char *p = str;

    for (;;) {
        int digits = 0;
        unsigned v = 0;
        while (digits < 3) {
            char c = *p;
            if (c >= '0' && c <= '9')
                v = v * 16 + (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                v = v * 16 + (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v = v * 16 + (unsigned)(c - 'A' + 10);
            else
                break;
            digits++;
            p++;
        }
        if (digits < 1 || digits > 2 || ++groups > 6)
            return -1;
        mac = (mac << 8) | v;
        if (*p == '\0')
            break;
        if (*p++ != ':')
            return -1;
    }
    *macp = mac;
    return 0;
}

void fmsim_wire_mac_format(uint64_t mac, char buf[18])
{
    snprintf(buf,
             18,
             "%02x:%02x:%02x:%02x:%02x:%02x",
             (unsigned)(mac >> 40) & 0xff,
             (unsigned)(mac >> 32) & 0xff,
             (unsigned)(mac >> 24) & 0xff,
             (unsigned)(mac >> 16) & 0xff,
             (unsigned)(mac >> 8) & 0xff,
             (unsigned)mac & 0xff);
}

int fmsim_wire_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int fmsim_wire_mcast_parse(json_t *body,
                           struct fmsim_mcast_req *r,
                           vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *macs, *step = NULL, *v;
    uint64_t *sorted = NULL;
    size_t i;
    int rc = -1;

    errno = EINVAL;
    if (json_unpack_ex(body,
                       &jerr,
                       0,
                       "{s:s, s:o, s:I, s:I, s?o}",
                       "jobID",
                       &r->job_id,
                       "macs",
                       &macs,
                       "vni",
                       &r->vni,
                       "timeout",
                       &r->timeout,
                       "jobStepID",
                       &step)
        < 0)
        return errprintf(errp, "%s", jerr.text);
    if (!step || json_is_null(step))
        snprintf(r->step, sizeof(r->step), "0");
    else if (json_is_integer(step))
        snprintf(r->step,
                 sizeof(r->step),
                 "%" JSON_INTEGER_FORMAT,
                 json_integer_value(step));
    else if (json_is_string(step)
             && fmsim_wire_id_valid(json_string_value(step)))
        snprintf(r->step, sizeof(r->step), "%s", json_string_value(step));
    else
        return errprintf(errp,
                         "jobStepID must be a string of 1..%d characters",
                         FMSIM_JOB_ID_MAX);
    if (r->vni < 0 || r->vni > FMSIM_VNI_MAX)
        return errprintf(errp, "vni must be 0..%d", FMSIM_VNI_MAX);
    if (r->timeout < 0)
        return errprintf(errp, "timeout must not be negative");
    if (!json_is_array(macs))
        return errprintf(errp, "macs must be an array of NIC addresses");
    r->nmacs = json_array_size(macs);
    if (r->nmacs == 0)
        return errprintf(errp, "macs is empty");
    if (r->nmacs > FMSIM_MACS_MAX)
        return errprintf(errp, "more than %d macs", FMSIM_MACS_MAX);
    if (!(r->macs = calloc(r->nmacs, sizeof(*r->macs)))
        || !(sorted = calloc(r->nmacs, sizeof(*sorted)))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    json_array_foreach (macs, i, v) {
        if (!json_is_string(v)
            || fmsim_wire_mac_parse(json_string_value(v), &r->macs[i]) < 0) {
            errno = EINVAL;
            errprintf(
                errp, "macs[%zu] is not a NIC address such as 2:A3:F1", i);
            goto done;
        }
    }
    memcpy(sorted, r->macs, r->nmacs * sizeof(*sorted));
    qsort(sorted, r->nmacs, sizeof(*sorted), fmsim_wire_u64_cmp);
    for (i = 1; i < r->nmacs; i++) {
        if (sorted[i] == sorted[i - 1]) {
            char mac[18];
            fmsim_wire_mac_format(sorted[i], mac);
            errno = EINVAL;
            errprintf(errp, "macs has a duplicate address (%s)", mac);
            goto done;
        }
    }
    rc = 0;
done:
    free(sorted);
    return rc;
}
