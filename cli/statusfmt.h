/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text of `vnibctl status`: GET /v1/status's reply as a compact
 * summary for a terminal (the pool, the quarantine, the drained nodes, the
 * Fabric Manager, the leader and the database, then the quarantined
 * reservations and the drained nodes as tables).  Pure formatting, so
 * that the unit tests can feed it replies: no network, no globals.
 */
#ifndef VNIB_CLI_STATUSFMT_H
#define VNIB_CLI_STATUSFMT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "vnib/error.h"

/* Parse an RFC 3339 time ("2026-05-01T10:00:00Z", with an optional
 * fraction and a Z or +hh:mm offset) into seconds since the epoch.
 * Returns 0, or -1 (EINVAL) with a message.
 */
int statusfmt_parse_time(const char *s, double *tp, vnib_error_t *errp);

/* A duration for people, into buf: "0s", "59s", "5m02s", "3h05m",
 * "2d03h" (negative durations print as 0s; fractions are dropped).
 * Returns buf.
 */
const char *statusfmt_age(double seconds, char *buf, size_t size);

/* The share of the pool in use (not free), in whole percent rounded to
 * nearest: 0 for an empty pool.
 */
long long statusfmt_used_percent(long long nfree, long long total);

/* Write the summary of a GET /v1/status reply to f.  Ages are measured
 * against the reply's own "time", so the client's clock does not matter.
 * Missing or null members print as "-".  Returns 0, or -1 with errno
 * (EPROTO when status is not an object, ENOMEM, EIO when f fails) and a
 * message.
 */
int statusfmt_write(FILE *f, json_t *status, vnib_error_t *errp);

#endif /* !VNIB_CLI_STATUSFMT_H */
