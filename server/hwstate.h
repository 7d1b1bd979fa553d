/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A reservation's hardware-collectives state, and the cause of a failure,
 * as enums with one name table each; and the reason clients read of a
 * failed Fabric Manager call.
 *
 * The database holds both as text, checked against the same lists:
 * hwcoll_state by the CHECK of schema/0002, hwcoll_cause by that of
 * schema/0016 (tests/unit/server/test_hwstate.c reads the migrations and
 * asserts the lists agree).  The state machine chooses by these codes;
 * hwcoll_reason is only what clients read, and its wording may change: of
 * a failed call it names the failure's class and the HTTP status
 * (hwstate_fault_reason), never the FM's text.
 */
#ifndef VNIB_SERVER_HWSTATE_H
#define VNIB_SERVER_HWSTATE_H

#include <stdbool.h>
#include <stddef.h>

#include "vnib/fmclient.h"

/* Room for any reason hwstate writes, with its NUL. */
#define HWSTATE_REASON_MAX 128

/* reservations.hwcoll_state. */
enum hwstate {
    HWSTATE_DISABLED,     /* hwcoll.enabled is false */
    HWSTATE_NOT_ELIGIBLE, /* off by request, or too few nodes */
    HWSTATE_PENDING,      /* the FM reserve is under way or deferred */
    HWSTATE_RESERVED,     /* the FM reserved: a session token is held */
    HWSTATE_UNAVAILABLE,  /* the FM failed; hwcoll_cause says how */
    HWSTATE_RELEASING,    /* queued for deletion in the FM */
    HWSTATE_RELEASED,     /* deleted in the FM */
    HWSTATE_LOST,         /* the FM no longer has it */
    HWSTATE_COUNT
};

/* reservations.hwcoll_cause: why the state is "unavailable". */
enum hwstate_cause {
    HWSTATE_CAUSE_NONE,                   /* stored as NULL */
    HWSTATE_CAUSE_TIMEOUT,                /* to check later: maybe late */
    HWSTATE_CAUSE_UNREACHABLE,            /* connection refused */
    HWSTATE_CAUSE_NO_ADDRESSES,           /* out of multicast addresses */
    HWSTATE_CAUSE_REFUSED,                /* any other FM failure */
    HWSTATE_CAUSE_TIMEOUT_NO_RESERVATION, /* checked: the FM made none */
    HWSTATE_CAUSE_TIMEOUT_LATE_DELETED,   /* checked: made late, deleted */
    HWSTATE_CAUSE_JOB_ENDED,              /* ended before a deferred call */
    HWSTATE_CAUSE_COUNT
};

/* The stored name of state s ("pending", ...), or NULL out of range. */
const char *hwstate_name(enum hwstate s);

/* The state whose stored name is name: true, or false when none is. */
bool hwstate_parse(const char *name, enum hwstate *sp);

/* The stored code of cause c ("timeout", ...); NULL for
 * HWSTATE_CAUSE_NONE or out of range.
 */
const char *hwstate_cause_code(enum hwstate_cause c);

/* The fixed reason of cause c, for the causes the broker decides without
 * a call failing (a follow-up's outcome, a job that ended: "timeout; the
 * Fabric Manager made no reservation", ...); NULL for HWSTATE_CAUSE_NONE
 * and for the causes of a failed call, whose reason is
 * hwstate_fault_reason's.
 */
const char *hwstate_cause_phrase(enum hwstate_cause c);

/* The cause of an FM call's failure, from its errno. */
enum hwstate_cause hwstate_cause_of_errno(int e);

/* What hwcoll_reason and /v1/fabric-manager say of a failed FM call: its
 * class and, when an answer failed it, the HTTP status ("Fabric Manager
 * refused our credentials (HTTP 401)", "Fabric Manager unavailable (HTTP
 * 503)"), or for a timeout the call's limit ("Fabric Manager timed out
 * after 2000 ms").  Never err's message, which may quote the FM.  Into
 * buf (HWSTATE_REASON_MAX is enough).
 */
void hwstate_fault_reason(const struct fmc_error *err, char *buf, size_t size);

#endif /* !VNIB_SERVER_HWSTATE_H */
