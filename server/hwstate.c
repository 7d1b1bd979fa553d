/* The hardware-collectives state and failure-cause tables (see hwstate.h).
 * The order of each table is its enum's; the stored names are those the
 * migrations' CHECK constraints list.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/hwstate.h"

static const char *const state_names[HWSTATE_COUNT] = {
    [HWSTATE_DISABLED] = "disabled",
    [HWSTATE_NOT_ELIGIBLE] = "not_eligible",
    [HWSTATE_PENDING] = "pending",
    [HWSTATE_RESERVED] = "reserved",
    [HWSTATE_UNAVAILABLE] = "unavailable",
    [HWSTATE_RELEASING] = "releasing",
    [HWSTATE_RELEASED] = "released",
    [HWSTATE_LOST] = "lost",
};

/* Each cause: its stored code and the phrase clients read. */
static const struct {
    const char *code;
    const char *phrase;
} causes[HWSTATE_CAUSE_COUNT] = {
    [HWSTATE_CAUSE_NONE] = {NULL, NULL},
    [HWSTATE_CAUSE_TIMEOUT] = {"timeout", "Fabric Manager timed out"},
    [HWSTATE_CAUSE_UNREACHABLE] = {"unreachable", "Fabric Manager unreachable"},
    [HWSTATE_CAUSE_NO_ADDRESSES] = {"no_addresses",
                                    "Fabric Manager out of multicast "
                                    "addresses"},
    [HWSTATE_CAUSE_REFUSED] = {"refused", "Fabric Manager refused"},
    [HWSTATE_CAUSE_TIMEOUT_NO_RESERVATION] =
        {"timeout_no_reservation",
         "timeout; the Fabric Manager made no reservation"},
    [HWSTATE_CAUSE_TIMEOUT_LATE_DELETED] =
        {"timeout_late_deleted",
         "timeout; the late Fabric Manager reservation was deleted"},
    [HWSTATE_CAUSE_JOB_ENDED] =
        {"job_ended", "the job ended before the Fabric Manager was asked"},
};

const char *hwstate_name(enum hwstate s)
{
    return (unsigned)s < HWSTATE_COUNT ? state_names[s] : NULL;
}

bool hwstate_parse(const char *name, enum hwstate *sp)
{
    for (int i = 0; name && i < HWSTATE_COUNT; i++)
        if (!strcmp(name, state_names[i])) {
            *sp = (enum hwstate)i;
            return true;
        }
    return false;
}

const char *hwstate_cause_code(enum hwstate_cause c)
{
    return (unsigned)c < HWSTATE_CAUSE_COUNT ? causes[c].code : NULL;
}

const char *hwstate_cause_phrase(enum hwstate_cause c)
{
    return (unsigned)c < HWSTATE_CAUSE_COUNT ? causes[c].phrase : NULL;
}

enum hwstate_cause hwstate_cause_of_errno(int e)
{
    if (e == ETIMEDOUT)
        return HWSTATE_CAUSE_TIMEOUT;
    if (e == ECONNREFUSED)
        return HWSTATE_CAUSE_UNREACHABLE;
    if (e == ENOSPC)
        return HWSTATE_CAUSE_NO_ADDRESSES;
    return HWSTATE_CAUSE_REFUSED;
}

void hwstate_cause_reason(enum hwstate_cause c,
                          long timeout_ms,
                          char *buf,
                          size_t size)
{
    const char *phrase = hwstate_cause_phrase(c);
    if (c == HWSTATE_CAUSE_TIMEOUT)
        snprintf(buf,
                 size,
                 "timed out after %ld ms waiting for the Fabric Manager",
                 timeout_ms);
    else
        snprintf(buf, size, "%s", phrase ? phrase : "");
}
