/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The leases a reserve hands out (docs/node-path.md): a reserve of a job
 * or of a step with "lease": true is presumed (every node of it holds
 * services until it reports destroyed), and its reply carries the
 * reservation as a node reads it, without the Fabric Manager's session
 * token, signed with lease.key_file (lib/lease.c).  The store keeps the
 * lease's expiry with the reservation, before it is signed, so that the
 * VNIs it names cool down until it expired (schema/0021).
 */
#ifndef VNIB_SERVER_LEASES_H
#define VNIB_SERVER_LEASES_H

#include <stdbool.h>
#include <time.h>

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* What a reserve asks for: a lease, and if so when it is signed and
 * until when it runs.
 */
struct leases_ask {
    bool want;       /* "lease": true */
    time_t now;      /* the lease's iat */
    long long until; /* its exp (Unix seconds); 0 without a lease */
    long skew_s;     /* lease.max_skew_s */
};

/* Read "lease" of a reserve's body (absent: false) into *ask: 400
 * invalid_field when it is not a boolean, 400 lease_disabled when it is
 * true and the broker has no lease.key_file.  Returns 0, or -1 with errno
 * and errp (the request's error code set).
 */
int leases_ask(struct request *req,
               json_t *body,
               struct leases_ask *ask,
               vnib_error_t *errp);

/* The payload a lease of reservation res signs: res (a reserve's reply,
 * as the caller may see it) as a node's GET renders it, without the
 * cleanup counts, the job token, or any session token (hwcoll's
 * "session_token", FI_CXI_COLL_MCAST_TOKEN); with "hwcoll_fetch": true
 * and no FI_CXI_COLL_* or FI_CXI_HWCOLL_* variable when the job's
 * multicast reservation is pending or reserved (the node GETs the
 * reservation for them), else false.  A new object, or NULL with errno
 * ENOMEM.
 */
json_t *leases_payload(const json_t *res);

/* Sign the lease of reservation res, asked for by ask, and add it to res
 * as "lease".  Returns 0 (nothing done without ask->want), or -1 with
 * errno and errp.
 */
int leases_add(struct request *req,
               json_t *res,
               const struct leases_ask *ask,
               vnib_error_t *errp);

#endif /* !VNIB_SERVER_LEASES_H */
