/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The status page at /ui/: static assets compiled into vnibrokerd.
 *
 * The page (server/api/ui/: index.html, app.js, app.css, favicon.svg) is
 * hand-written HTML, JavaScript and CSS with no framework; it calls
 * GET /v1/status and GET /v1/events with the token the user pastes in.
 * deploy/tools/embed-ui.sh turns the files into the table ui_assets[] at
 * build time, with each one's content type and ETag, so an installed
 * broker serves exactly the page it was built with.  The handlers here
 * serve them on public routes, inline (no database), each reply carrying
 * a strict Content-Security-Policy and the other browser hardening
 * headers; GET /ui redirects to /ui/ and GET / to /ui/.
 */
#ifndef VNIB_SERVER_UI_H
#define VNIB_SERVER_UI_H

#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"

struct request;

/* The headers of every reply on /ui (name, value, ...): a
 * Content-Security-Policy that allows only this origin's own script,
 * style, images and API calls (the page has no inline script or style),
 * no framing, no referrer, no content sniffing, and revalidation on each
 * load (no-cache: the browser asks with If-None-Match and gets a 304).
 */
#define UI_CSP                                                    \
    "default-src 'none'; script-src 'self'; style-src 'self'; "   \
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; " \
    "form-action 'none'; frame-ancestors 'none'"
#define UI_SECURITY_HEADERS                                                    \
    "Content-Security-Policy", UI_CSP, "X-Frame-Options", "DENY",              \
        "Referrer-Policy", "no-referrer", "X-Content-Type-Options", "nosniff", \
        "Cross-Origin-Opener-Policy", "same-origin", "Cache-Control",          \
        "no-cache"

/* One embedded file (the generated table, from embed-ui.sh). */
struct ui_asset {
    const char *name;           /* "app.js"; "index.html" is served at /ui/ */
    const char *content_type;   /* from the file's extension */
    const char *etag;           /* "\"<16 hex of its SHA-256>\"" */
    const char *const *headers; /* UI_SECURITY_HEADERS, ETag, NULL */
    const unsigned char *data;
    size_t len;
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_assets_count;

/* GET /ui/: index.html. */
int ui_index(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /ui/{asset}: one file, or 404 not_found. */
int ui_asset(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /ui: 308 to /ui/. */
int ui_redirect_dir(struct request *req, json_t **out, vnib_error_t *errp);

/* GET /: 302 to /ui/. */
int ui_redirect_root(struct request *req, json_t **out, vnib_error_t *errp);

#endif /* !VNIB_SERVER_UI_H */
