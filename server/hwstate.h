/* A reservation's hardware-collectives state, and the cause of a failure,
 * as enums with one name table each.
 *
 * The database holds both as text, checked against the same lists:
 * hwcoll_state by the CHECK of schema/0002, hwcoll_cause by that of
 * schema/0016 (tests/unit/server/test_hwstate.c reads the migrations and
 * asserts the lists agree).  The state machine chooses by these codes;
 * hwcoll_reason is only what clients read, and its wording may change.
 */
#ifndef VNIB_SERVER_HWSTATE_H
#define VNIB_SERVER_HWSTATE_H

#include <stdbool.h>
#include <stddef.h>

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

/* The fixed phrase of cause c, what non-admins see of a failure
 * ("Fabric Manager timed out", ...); NULL for HWSTATE_CAUSE_NONE.
 */
const char *hwstate_cause_phrase(enum hwstate_cause c);

/* The cause of an FM call's failure, from its errno. */
enum hwstate_cause hwstate_cause_of_errno(int e);

/* What a reservation says of cause c in hwcoll_reason: its phrase, or for
 * a timeout how long the broker waited (timeout_ms).
 */
void hwstate_cause_reason(enum hwstate_cause c,
                          long timeout_ms,
                          char *buf,
                          size_t size);

#endif /* !VNIB_SERVER_HWSTATE_H */
