/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The API's error codes: every stable code an error reply carries
 * ({"error": {"code": "...", ...}}), each with the HTTP status and the
 * Retry-After it is sent with, and the code an errno stands for when a
 * handler chose none.
 *
 * One table (errcode.c) holds all three; server/api/openapi.yaml lists the
 * same codes in the same order (Error.code's enum, each with its status),
 * and tests/unit/server/test_errcode.c keeps the two in step.  Handlers
 * name a code by its enum, never by its text.
 */
#ifndef VNIB_SERVER_ERRCODE_H
#define VNIB_SERVER_ERRCODE_H

enum errcode {
    ERRCODE_NONE = 0, /* no code chosen: the errno's (errcode_of_errno) */
    /* 400 */
    ERRCODE_BAD_REQUEST,
    ERRCODE_INVALID_JSON,
    ERRCODE_UNKNOWN_FIELD,
    ERRCODE_INVALID_FIELD,
    ERRCODE_INVALID_HEADER,
    ERRCODE_LEASE_DISABLED,
    /* 401, 403 */
    ERRCODE_UNAUTHORIZED,
    ERRCODE_FORBIDDEN,
    /* 404, 405 */
    ERRCODE_NOT_FOUND,
    ERRCODE_RESERVATION_NOT_FOUND,
    ERRCODE_METHOD_NOT_ALLOWED,
    /* 409 */
    ERRCODE_CONFLICT,
    ERRCODE_RESERVATION_CONFLICT,
    ERRCODE_RESERVATION_SUPERSEDED,
    ERRCODE_INVALID_TRANSITION,
    ERRCODE_JOB_NOT_ACTIVE,
    ERRCODE_STALE_RESERVATION,
    /* 413, 415, 429, 431 */
    ERRCODE_PAYLOAD_TOO_LARGE,
    ERRCODE_UNSUPPORTED_MEDIA_TYPE,
    ERRCODE_RATE_LIMITED,
    ERRCODE_HEADER_FIELDS_TOO_LARGE,
    /* 500 */
    ERRCODE_INTERNAL_ERROR,
    /* 503 */
    ERRCODE_EXHAUSTED,
    ERRCODE_VNI_POOL_EXHAUSTED,
    ERRCODE_UNAVAILABLE,
    ERRCODE_DEADLINE_EXCEEDED,
    ERRCODE_DATABASE_UNAVAILABLE,
    ERRCODE_SCHEMA_OUTDATED,
    ERRCODE_DATABASE_FULL,
    ERRCODE_COUNT
};

/* The code as clients read it ("invalid_field"; static), or NULL for
 * ERRCODE_NONE or a value outside the enum.
 */
const char *errcode_name(enum errcode code);

/* The HTTP status an error reply with this code is sent with; 500 for
 * ERRCODE_NONE or a value outside the enum.
 */
int errcode_status(enum errcode code);

/* The seconds a reply with this code tells the client to wait before it
 * tries again (Retry-After), unless the handler knows better; 0 for none.
 * Every 503 has one: 1 s, or 30 s for an exhausted VNI pool.
 */
int errcode_retry_after(enum errcode code);

/* The code of a failure with errno errnum whose handler chose none:
 * EINVAL bad_request, ENOENT not_found, EAGAIN unavailable, ...;
 * ERRCODE_INTERNAL_ERROR for an errno the table does not name.
 */
enum errcode errcode_of_errno(int errnum);

/* The code named `name`, or ERRCODE_NONE when none is. */
enum errcode errcode_by_name(const char *name);

#endif /* !VNIB_SERVER_ERRCODE_H */
