/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The hardware-collectives state and failure-cause tables, and the
 * reasons of failed Fabric Manager calls (see hwstate.h).  The order of
 * each table is its enum's; the stored names are those the migrations'
 * CHECK constraints list.
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

/* Each cause: its stored code and, when no call's failure says more, the
 * reason clients read.
 */
static const struct {
    const char *code;
    const char *phrase;
} causes[HWSTATE_CAUSE_COUNT] = {
    [HWSTATE_CAUSE_NONE] = {NULL, NULL},
    [HWSTATE_CAUSE_TIMEOUT] = {"timeout", NULL},
    [HWSTATE_CAUSE_UNREACHABLE] = {"unreachable", NULL},
    [HWSTATE_CAUSE_NO_ADDRESSES] = {"no_addresses", NULL},
    [HWSTATE_CAUSE_REFUSED] = {"refused", NULL},
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

/* Each class of a failed call: what a reservation says of it.  A status
 * follows, when an answer failed the call; a timeout's limit follows
 * "timed out".
 */
static const char *const fault_phrases[FMC_FAULT_OTHER + 1] = {
    [FMC_FAULT_NONE] = "Fabric Manager call failed",
    [FMC_FAULT_CREDENTIALS] = "Fabric Manager refused our credentials",
    [FMC_FAULT_REQUEST] = "Fabric Manager refused the request",
    [FMC_FAULT_NOT_FOUND] = "Fabric Manager has no such job",
    [FMC_FAULT_NO_ADDRESSES] = "Fabric Manager out of multicast addresses",
    [FMC_FAULT_UNAVAILABLE] = "Fabric Manager unavailable",
    [FMC_FAULT_REPLY] = "Fabric Manager sent a reply the broker cannot use",
    [FMC_FAULT_TIMEOUT] = "Fabric Manager timed out",
    [FMC_FAULT_CONN_REFUSED] =
        "Fabric Manager unreachable (connection "
        "refused)",
    [FMC_FAULT_HOST_UNKNOWN] =
        "Fabric Manager unreachable (host name not "
        "resolved)",
    [FMC_FAULT_UNREACHABLE] = "Fabric Manager unreachable (no connection)",
    [FMC_FAULT_DROPPED] = "Fabric Manager unreachable (connection dropped)",
    [FMC_FAULT_TLS_VERIFY] =
        "Fabric Manager not trusted (its TLS "
        "certificate did not verify)",
    [FMC_FAULT_TLS] = "Fabric Manager TLS handshake failed",
    [FMC_FAULT_OTHER] = "Fabric Manager call failed in the broker",
};

void hwstate_fault_reason(const struct fmc_error *err, char *buf, size_t size)
{
    enum fmc_fault f = err->fault;
    const char *phrase =
        (unsigned)f <= FMC_FAULT_OTHER ? fault_phrases[f] : NULL;

    if (!phrase)
        phrase = fault_phrases[FMC_FAULT_OTHER];
    if (f == FMC_FAULT_TIMEOUT && err->timeout_ms > 0)
        snprintf(buf, size, "%s after %ld ms", phrase, err->timeout_ms);
    else if (err->status > 0)
        snprintf(buf, size, "%s (HTTP %ld)", phrase, err->status);
    else
        snprintf(buf, size, "%s", phrase);
}
