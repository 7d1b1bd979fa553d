/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The quarantine sweeper: a background thread that closes quarantines
 * whose nodes have all confirmed.
 *
 * Quarantines normally end in the transaction of the last node's
 * "destroyed" report or of the release itself; the sweeper is the safety
 * net for the rare interleavings that leave one open, and it runs on
 * every replica (the database skips rows another replica is working on).
 * The same runs forget released reservations and audit events older than
 * vni.retain_days, a batch at a time.
 */
#ifndef VNIB_SERVER_SWEEPER_H
#define VNIB_SERVER_SWEEPER_H

#include "vnib/error.h"

struct broker;
struct sweeper;

/* Start the thread (vni.sweep_interval_s between runs). */
struct sweeper *sweeper_create(struct broker *b,
                               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Stop the thread and free it (NULL accepted). */
void sweeper_destroy(struct sweeper *sw);

#endif /* !VNIB_SERVER_SWEEPER_H */
