/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for what the switch plugin (switch/vnib) reads from
 * the outside: the packed jobinfo that travels with a step, with or
 * without its lease (first byte 0 mod 4), the job-level data of Slurm 24.05+ (2
 * mod 4; both plugins/slurm/switch/swv_jobinfo.c) and the SwitchParameters and
 * --network strings (first byte odd: swv_opts.c; the rest of the input
 * is split at its first NUL into the settings and a --network).
 *
 * A jobinfo or job data that decodes must encode back to the same bytes;
 * any crash
 * or sanitizer report is a bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swv_jobinfo.h"
#include "swv_opts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_jobinfo(const uint8_t *data, size_t size)
{
    struct swv_jobinfo info;
    uint8_t *again;
    vnib_error_t err;

    if (swv_jobinfo_decode(data, size, &info, &err) < 0)
        return;
    if (swv_jobinfo_wire_size(&info) != size || (again = malloc(size)) == NULL)
        abort();
    swv_jobinfo_encode(&info, again);
    if (memcmp(again, data, size) != 0)
        abort();
    free(again);
    swv_jobinfo_clear(&info);
}

static void fuzz_jobdata(const uint8_t *data, size_t size)
{
    struct swv_jobdata jd;
    uint8_t again[SWV_JOBDATA_WIRE_MAX];
    vnib_error_t err;

    if (swv_jobdata_decode(data, size, &jd, &err) < 0)
        return;
    if (swv_jobdata_encode(&jd, again) != size
        || memcmp(again, data, size) != 0)
        abort();
}

static void fuzz_opts(const uint8_t *data, size_t size)
{
    struct swv_config cfg;
    struct swv_network net;
    vnib_error_t err;
    char *s, *net_s;

    if ((s = malloc(size + 2)) == NULL)
        return;
    memcpy(s, data, size);
    s[size] = '\0';
    s[size + 1] = '\0';
    net_s = s + strlen(s) + 1; /* after the first NUL, or "" */
    if (net_s > s + size)
        net_s = s + size + 1;
    if (swv_config_parse(&cfg, s, &err) == 0) {
        if (swv_network_parse(&cfg, net_s, net_s, &net, &err) == 0
            && (net.vnis < -1 || net.vnis > VNIB_SERVICE_VNIS_MAX
                || net.step_vnis < 0 || net.step_vnis > VNIB_SERVICE_VNIS_MAX
                || (unsigned)net.step_fallback > SWV_FALLBACK_FAIL))
            abort();
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if ((data[0] & 3) == 0)
        fuzz_jobinfo(data + 1, size - 1);
    else if ((data[0] & 3) == 2)
        fuzz_jobdata(data + 1, size - 1);
    else
        fuzz_opts(data + 1, size - 1);
    return 0;
}
