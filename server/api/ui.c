/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The status page's handlers (see ui.h).
 *
 * Every reply on /ui, errors and redirects included, carries
 * UI_SECURITY_HEADERS; an asset's also its ETag (each asset's header
 * table is generated with it, so that it outlives the handler).  The
 * handlers touch only constant memory and run inline.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http.h"
#include "server/api/ui.h"

static const char *const ui_headers[] = {UI_SECURITY_HEADERS, NULL};
static const char *const ui_headers_location[] = {
    UI_SECURITY_HEADERS, "Location", "/ui/", NULL};

/* The asset called name, or NULL. */
static const struct ui_asset *ui_find(const char *name)
{
    for (size_t i = 0; i < ui_assets_count; i++)
        if (strcmp(ui_assets[i].name, name) == 0)
            return &ui_assets[i];
    return NULL;
}

/* True when an If-None-Match header lists etag (or is "*"); weak tags
 * compare as strong ones (RFC 9110, 13.1.2).
 */
static bool ui_etag_matches(const char *inm, const char *etag)
{
    size_t elen = strlen(etag);

    while (inm && *inm) {
        inm += strspn(inm, " \t,");
        if (strncmp(inm, "W/", 2) == 0)
            inm += 2;
        size_t len = strcspn(inm, ",");
        while (len > 0 && (inm[len - 1] == ' ' || inm[len - 1] == '\t'))
            len--;
        if ((len == 1 && inm[0] == '*')
            || (len == elen && strncmp(inm, etag, elen) == 0))
            return true;
        inm += strcspn(inm, ",");
    }
    return false;
}

/* Reply with one asset: 200 with a copy of its bytes, or 304 without
 * them when the browser's copy has its ETag.
 */
static int ui_send(struct request *req,
                   const struct ui_asset *a,
                   vnib_error_t *errp)
{
    req->extra_headers = a->headers;
    bool fresh = ui_etag_matches(request_header(req, "If-None-Match"), a->etag);
    size_t len = fresh ? 0 : a->len;
    if (!(req->text = malloc(len + 1)))
        return request_fail(
            req, ENOMEM, ERRCODE_INTERNAL_ERROR, errp, "out of memory");
    memcpy(req->text, a->data, len);
    req->text_len = len;
    req->content_type = a->content_type;
    return fresh ? 304 : 200;
}

int ui_index(struct request *req, json_t **out, vnib_error_t *errp)
{
    (void)out;
    req->extra_headers = ui_headers;
    const struct ui_asset *a = ui_find("index.html");
    if (!a)
        return request_fail(req,
                            ENOENT,
                            ERRCODE_NOT_FOUND,
                            errp,
                            "this broker was built without its status page");
    return ui_send(req, a, errp);
}

int ui_asset(struct request *req, json_t **out, vnib_error_t *errp)
{
    (void)out;
    req->extra_headers = ui_headers;
    const char *name = route_param(&req->params, "asset");
    const struct ui_asset *a = name ? ui_find(name) : NULL;
    if (!a || strcmp(a->name, "index.html") == 0)
        return request_fail(req,
                            ENOENT,
                            ERRCODE_NOT_FOUND,
                            errp,
                            "no such file of the status page");
    return ui_send(req, a, errp);
}

/* A redirect to /ui/ with status, and a one-line text body. */
static int ui_redirect(struct request *req, int status, vnib_error_t *errp)
{
    static const char body[] = "the status page is at /ui/\n";

    req->extra_headers = ui_headers_location;
    if (!(req->text = malloc(sizeof(body))))
        return request_fail(
            req, ENOMEM, ERRCODE_INTERNAL_ERROR, errp, "out of memory");
    memcpy(req->text, body, sizeof(body));
    req->text_len = sizeof(body) - 1;
    req->content_type = "text/plain; charset=utf-8";
    return status;
}

int ui_redirect_dir(struct request *req, json_t **out, vnib_error_t *errp)
{
    (void)out;
    return ui_redirect(req, 308, errp);
}

int ui_redirect_root(struct request *req, json_t **out, vnib_error_t *errp)
{
    (void)out;
    return ui_redirect(req, 302, errp);
}
