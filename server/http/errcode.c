/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The error code table (see errcode.h): each code's name, its HTTP
 * status, the Retry-After it is sent with, and the errnos it is the
 * default code of.
 *
 * An errno stands in one row at most, so that its default is never in
 * doubt (tests/unit/server/test_errcode.c checks each one's).  Store and
 * domain code speak errno: ENOENT not found,
 * EEXIST conflict, EINVAL bad input, EPERM forbidden, ENOSPC pool
 * exhausted, EAGAIN try later (the style guide's errno table), and a few
 * more for the pipeline's own refusals.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "server/http/errcode.h"

/* The most errnos one code is the default of. */
#define ERRCODE_ERRNOS 2

/* One row per line reads as a table, so the formatter leaves it alone. */
/* clang-format off */
static const struct {
    const char *name;
    int status;
    int retry_after_s;          /* Retry-After; 0: none */
    int errnos[ERRCODE_ERRNOS]; /* 0: none */
} rows[ERRCODE_COUNT] = {
    [ERRCODE_NONE]                    = {NULL,                      500, 0,  {0}},
    [ERRCODE_BAD_REQUEST]             = {"bad_request",             400, 0,  {EINVAL}},
    [ERRCODE_INVALID_JSON]            = {"invalid_json",            400, 0,  {EPROTO}},
    [ERRCODE_UNKNOWN_FIELD]           = {"unknown_field",           400, 0,  {0}},
    [ERRCODE_INVALID_FIELD]           = {"invalid_field",           400, 0,  {0}},
    [ERRCODE_INVALID_HEADER]          = {"invalid_header",          400, 0,  {0}},
    [ERRCODE_LEASE_DISABLED]          = {"lease_disabled",          400, 0,  {0}},
    [ERRCODE_UNAUTHORIZED]            = {"unauthorized",            401, 0,  {EACCES}},
    [ERRCODE_FORBIDDEN]               = {"forbidden",               403, 0,  {EPERM}},
    [ERRCODE_NOT_FOUND]               = {"not_found",               404, 0,  {ENOENT}},
    [ERRCODE_RESERVATION_NOT_FOUND]   = {"reservation_not_found",   404, 0,  {0}},
    [ERRCODE_METHOD_NOT_ALLOWED]      = {"method_not_allowed",      405, 0,  {EOPNOTSUPP}},
    [ERRCODE_CONFLICT]                = {"conflict",                409, 0,  {EEXIST, EALREADY}},
    [ERRCODE_RESERVATION_CONFLICT]    = {"reservation_conflict",    409, 0,  {0}},
    [ERRCODE_RESERVATION_SUPERSEDED]  = {"reservation_superseded",  409, 0,  {0}},
    [ERRCODE_INVALID_TRANSITION]      = {"invalid_transition",      409, 0,  {0}},
    [ERRCODE_JOB_NOT_ACTIVE]          = {"job_not_active",          409, 0,  {0}},
    [ERRCODE_STALE_RESERVATION]       = {"stale_reservation",       409, 0,  {0}},
    [ERRCODE_PAYLOAD_TOO_LARGE]       = {"payload_too_large",       413, 0,  {E2BIG, EMSGSIZE}},
    [ERRCODE_UNSUPPORTED_MEDIA_TYPE]  = {"unsupported_media_type",  415, 0,  {EPROTONOSUPPORT}},
    [ERRCODE_RATE_LIMITED]            = {"rate_limited",            429, 0,  {0}},
    [ERRCODE_HEADER_FIELDS_TOO_LARGE] = {"header_fields_too_large", 431, 0,  {EOVERFLOW}},
    [ERRCODE_INTERNAL_ERROR]          = {"internal_error",          500, 0,  {0}},
    [ERRCODE_EXHAUSTED]               = {"exhausted",               503, 1,  {ENOSPC}},
    [ERRCODE_VNI_POOL_EXHAUSTED]      = {"vni_pool_exhausted",      503, 30, {0}},
    [ERRCODE_UNAVAILABLE]             = {"unavailable",             503, 1,  {EAGAIN, ETIMEDOUT}},
    [ERRCODE_DEADLINE_EXCEEDED]       = {"deadline_exceeded",       503, 1,  {ECANCELED}},
    [ERRCODE_DATABASE_UNAVAILABLE]    = {"database_unavailable",    503, 1,  {0}},
    [ERRCODE_SCHEMA_OUTDATED]         = {"schema_outdated",         503, 1,  {ESTALE}},
    [ERRCODE_DATABASE_FULL]           = {"database_full",           503, 1,  {EDQUOT}},
};
/* clang-format on */

/* The row of code, or ERRCODE_NONE's for a value outside the enum. */
static enum errcode row_of(enum errcode code)
{
    return code > ERRCODE_NONE && code < ERRCODE_COUNT ? code : ERRCODE_NONE;
}

const char *errcode_name(enum errcode code)
{
    return rows[row_of(code)].name;
}

int errcode_status(enum errcode code)
{
    return rows[row_of(code)].status;
}

int errcode_retry_after(enum errcode code)
{
    return rows[row_of(code)].retry_after_s;
}

enum errcode errcode_of_errno(int errnum)
{
    for (int c = ERRCODE_NONE + 1; errnum != 0 && c < ERRCODE_COUNT; c++)
        for (size_t i = 0; i < ERRCODE_ERRNOS; i++)
            if (rows[c].errnos[i] == errnum)
                return (enum errcode)c;
    return ERRCODE_INTERNAL_ERROR;
}

enum errcode errcode_by_name(const char *name)
{
    for (int c = ERRCODE_NONE + 1; name && c < ERRCODE_COUNT; c++)
        if (strcmp(rows[c].name, name) == 0)
            return (enum errcode)c;
    return ERRCODE_NONE;
}
