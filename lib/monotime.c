/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The monotonic clock (see monotime.h). */
#include <time.h>

#include "vnib/monotime.h"

int64_t monotime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t monotime_ms(void)
{
    return monotime_ns() / 1000000;
}
