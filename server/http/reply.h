/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The broker's replies to a request of the pipeline (http.c): each with
 * the headers every reply carries (X-Request-Id, Server-Timing of the
 * handler's time, Allow, Retry-After, then the handler's extra headers),
 * and the error reply in the API's format,
 * {"error": {"code", "message", "request_id"}}.
 */
#ifndef VNIB_SERVER_REPLY_H
#define VNIB_SERVER_REPLY_H

#include <stddef.h>

#include <jansson.h>

struct request;

/* Queue a reply of status with body (len bytes of content_type; owned
 * from here) and allow as the Allow header (NULL: none).  0, or -1.
 */
int reply_text(struct request *req,
               int status,
               char *body,
               size_t len,
               const char *content_type,
               const char *allow);

/* Queue a reply of status with the JSON val (stolen) as its body. */
int reply_json(struct request *req, int status, json_t *val, const char *allow);

/* Queue the error reply of errnum (and req's error code, if a handler
 * chose one), with message.  A refusal (401, 403) is logged at notice.
 * Server-side failures get a generic message, and a message marked for
 * the operator (public_text, not NULL: the database's words) its fixed
 * text: the details go to the log, under the request id.
 */
int reply_error(struct request *req,
                int errnum,
                const char *message,
                const char *public_text,
                const char *allow);

#endif /* !VNIB_SERVER_REPLY_H */
