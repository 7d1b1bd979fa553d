/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Durations as a person writes them in a command line or a settings file
 * ("500ms", "5s", "5m", "1h", or a bare number of seconds), read into
 * milliseconds.  The node agent's options and the Flux node program's
 * settings take them.
 */
#ifndef VNIB_DURATION_H
#define VNIB_DURATION_H

/* Read s ("500ms", "5s", "1.5", "5m", "1h"; a bare number is seconds) into
 * *msp, at most a week.  The number is decimal digits with at most one
 * point.  Returns 0, or -1 with errno EINVAL (NULL, empty, a sign, an
 * exponent, hex, "nan", an unknown unit, or more than a week); *msp is
 * left alone then.
 */
int duration_parse_ms(const char *s, long *msp);

#endif /* !VNIB_DURATION_H */
