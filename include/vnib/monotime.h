/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The monotonic clock, for deadlines, intervals and durations.
 *
 * Every timeout, back-off and latency figure in vnibroker is measured on
 * CLOCK_MONOTONIC, which wall-clock steps (NTP, an admin's date) do not
 * move.  Wall-clock time is only for what a person or the database reads.
 */
#ifndef VNIB_MONOTIME_H
#define VNIB_MONOTIME_H

#include <stdint.h>

/* Nanoseconds and milliseconds since an arbitrary fixed point. */
int64_t monotime_ns(void);
int64_t monotime_ms(void);

#endif /* !VNIB_MONOTIME_H */
