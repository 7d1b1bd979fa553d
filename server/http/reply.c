/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The broker's replies (see reply.h): the headers every reply carries,
 * and the error reply's JSON, logged as the operator needs it.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "vnib/httpd.h"
#include "vnib/logger.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/http/reply.h"

/* Room for the broker's reply headers: four pairs, the handler's extra
 * ones, and the terminating NULL.
 */
#define REPLY_HEADERS (8 + 2 * REQUEST_EXTRA_HEADERS + 1)

/* The broker's reply headers into hdrs (name, value, ..., NULL), with
 * st and ra as the buffers of Server-Timing and Retry-After, followed by
 * the handler's extra headers.
 */
static void reply_headers(const struct request *req,
                          const char *allow,
                          char st[48],
                          char ra[16],
                          const char *hdrs[REPLY_HEADERS])
{
    size_t n = 8;

    st[0] = ra[0] = '\0';
    if (req->handler_ns > 0) {
        /* The handler's own time, so that benchmarks can tell server time
         * from transport (https://www.w3.org/TR/server-timing/).
         */
        snprintf(st, 48, "app;dur=%.3f", (double)req->handler_ns / 1e6);
    }
    if (req->retry_after > 0)
        snprintf(ra, 16, "%d", req->retry_after);
    hdrs[0] = "X-Request-Id";
    hdrs[1] = req->id;
    hdrs[2] = "Server-Timing";
    hdrs[3] = st[0] ? st : NULL;
    hdrs[4] = "Allow";
    hdrs[5] = allow;
    hdrs[6] = "Retry-After";
    hdrs[7] = ra[0] ? ra : NULL;
    for (const char *const *x = req->extra_headers;
         x && x[0] && n + 2 < REPLY_HEADERS;
         x += 2) {
        hdrs[n++] = x[0];
        hdrs[n++] = x[1];
    }
    hdrs[n] = NULL;
}

int reply_text(struct request *req,
               int status,
               char *body,
               size_t len,
               const char *content_type,
               const char *allow)
{
    char st[48], ra[16];
    const char *hdrs[REPLY_HEADERS];

    reply_headers(req, allow, st, ra, hdrs);
    return httpd_reply(req->hr, status, body, len, content_type, hdrs);
}

int reply_json(struct request *req, int status, json_t *val, const char *allow)
{
    char st[48], ra[16];
    const char *hdrs[REPLY_HEADERS];

    reply_headers(req, allow, st, ra, hdrs);
    return httpd_reply_json(req->hr, status, val, hdrs);
}

/* Log a refusal (401, 403) at notice, with the client's address and, once
 * a token was recognised, its name and role; never the token itself.  The
 * logger folds repeats of the same refusal, so a client retrying a bad
 * token makes one line per window, not one per request.
 */
static void log_refusal(const struct request *req,
                        int status,
                        const char *message)
{
    char addr[INET6_ADDRSTRLEN];
    /* Without a message, the code: a recognised token was forbidden. */
    const char *why = message && *message
                          ? message
                          : errcode_name(req->who.role ? ERRCODE_FORBIDDEN
                                                       : ERRCODE_UNAUTHORIZED);

    if (!logger_enabled(req->broker->log, LOG_NOTICE))
        return;
    httpd_client_address(req->hr, addr, sizeof(addr));
    if (req->who.role)
        logger_printf(req->broker->log,
                      LOG_NOTICE,
                      req->id,
                      "refused %d %s %s from %s token '%s' (%s): %s",
                      status,
                      req->method,
                      req->route ? req->route->pattern : req->path,
                      addr,
                      req->who.name,
                      auth_role_name(req->who.role),
                      why);
    else
        logger_printf(req->broker->log,
                      LOG_NOTICE,
                      req->id,
                      "refused %d %s %s from %s: %s",
                      status,
                      req->method,
                      req->route ? req->route->pattern : req->path,
                      addr,
                      why);
}

int reply_error(struct request *req,
                int errnum,
                const char *message,
                const char *public_text,
                const char *allow)
{
    enum errcode code;
    int status = request_error_status(req, errnum, &code);

    if (status == 401 || status == 403)
        log_refusal(req, status, message);
    if (public_text) {
        /* libpq's or the server's own words name hosts, sockets, users
         * and tables: they go to the log, the client gets a fixed text.
         */
        logger_printf(req->broker->log,
                      status == 500 ? LOG_ERR : LOG_WARNING,
                      req->id,
                      "%s %s: %s",
                      req->method,
                      req->path,
                      message);
        message = public_text;
    }
    if (status == 500 && !public_text) {
        logger_printf(req->broker->log,
                      LOG_ERR,
                      req->id,
                      "%s %s: %s (%s)",
                      req->method,
                      req->path,
                      message && *message ? message : "error",
                      strerror(errnum));
        message = "internal error; see the broker log for this request id";
    }
    if (!req->retry_after)
        req->retry_after = errcode_retry_after(code);
    const char *name = errcode_name(code);
    json_t *err = json_pack("{s:{s:s, s:s, s:s}}",
                            "error",
                            "code",
                            name,
                            "message",
                            message && *message ? message : name,
                            "request_id",
                            req->id);
    if (!err)
        return -1;
    return reply_json(req, status, err, allow);
}
