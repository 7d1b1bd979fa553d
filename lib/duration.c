/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Durations read into milliseconds: see include/vnib/duration.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/duration.h"

enum { WEEK_MS = 7 * 86400 * 1000 };

int duration_parse_ms(const char *s, long *msp)
{
    char *end;
    double v, scale = 1000;

    /* strtod() also reads "nan", "inf", signs, exponents and hex ("0x10"):
     * the number must be digits and a point, and all of it read. */
    if (!s || !*s)
        goto bad;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || end != s + strspn(s, "0123456789.") || !isfinite(v)
        || v < 0)
        goto bad;
    if (!strcmp(end, "ms"))
        scale = 1;
    else if (!strcmp(end, "m"))
        scale = 60000;
    else if (!strcmp(end, "h"))
        scale = 3600000;
    else if (*end && strcmp(end, "s") != 0)
        goto bad;
    if (v * scale > (double)WEEK_MS)
        goto bad;
    *msp = (long)(v * scale);
    return 0;
bad:
    errno = EINVAL;
    return -1;
}
