/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The figures and lists of GET /v1/status in the store (store_status.c),
 * which /metrics shares.
 */
#ifndef VNIB_SERVER_STORE_STATUS_H
#define VNIB_SERVER_STORE_STATUS_H

#include <jansson.h>

#include "vnib/error.h"
#include "server/store/store.h"

/* The figures /metrics and GET /v1/status share (one statement). */
struct store_status_figures {
    long long quarantine_reservations; /* releasing, VNIs still held */
    long long quarantine_vnis;         /* the VNIs they hold */
    char oldest_since[40];             /* RFC 3339; "" when none */
    double oldest_age_s;               /* 0 when none */
    long long drained;                 /* drained nodes */
};

/* Read the figures into *f. */
int store_status_figures(struct store *s,
                         struct store_status_figures *f,
                         vnib_error_t *errp) VNIB_MUST_CHECK;

/* The `limit` oldest quarantined reservations as GET /v1/status lists
 * them: a new array of {"job_id", "step_id" (a step's), "reservation_id",
 * "vnis", "since", "waiting": {"count", "nodes" (compressed hostlist)}}.
 */
int store_quarantine_items(struct store *s,
                           int limit,
                           json_t **itemsp,
                           vnib_error_t *errp) VNIB_MUST_CHECK;

/* The drained nodes: a new {"count", "nodes" (all, compressed), "items":
 * the `limit` newest [{"node", "reason", "since"}]}.
 */
int store_drained(struct store *s,
                  int limit,
                  json_t **drainedp,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_STATUS_H */
