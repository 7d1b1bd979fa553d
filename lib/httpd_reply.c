/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The httpd module's request and reply helpers (see httpd.h): queueing a
 * reply, JSON bodies, suspending and resuming, and what a service reads
 * of a request: headers, query arguments, basic authentication, the body's
 * declared length and media type, and the client's address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "httpd_int.h"

int httpd_reply(struct httpd_req *r,
                int status,
                char *body,
                size_t len,
                const char *content_type,
                const char *const *hdrs)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_buffer(
        len, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return -1;
    }
    if (content_type)
        MHD_add_response_header(
            resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    bool cache_control = false;
    for (size_t i = 0; hdrs && hdrs[i]; i += 2) {
        if (!hdrs[i + 1])
            continue;
        MHD_add_response_header(resp, hdrs[i], hdrs[i + 1]);
        if (strcasecmp(hdrs[i], MHD_HTTP_HEADER_CACHE_CONTROL) == 0)
            cache_control = true;
    }
    if (!cache_control)
        MHD_add_response_header(
            resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    httpd_conn_set_since(
        r->conn, 0, false); /* the request is in; no deadline now */
    r->status = status;
    r->responded = true;
    return ret == MHD_YES ? 0 : -1;
}

char *httpd_json_text(const json_t *val, size_t *lenp)
{
    char *body = json_dumps(val, JSON_COMPACT);
    if (!body)
        return NULL;
    size_t len = strlen(body);
    char *nl = realloc(body, len + 2);
    if (nl) {
        body = nl;
        body[len++] = '\n';
        body[len] = '\0';
    }
    *lenp = len;
    return body;
}

int httpd_reply_json(struct httpd_req *r,
                     int status,
                     json_t *val,
                     const char *const *hdrs)
{
    size_t len = 0;
    char *body = val ? httpd_json_text(val, &len) : NULL;
    json_decref(val);
    if (!body)
        return -1;
    return httpd_reply(r, status, body, len, "application/json", hdrs);
}

void httpd_suspend(struct httpd_req *r)
{
    MHD_suspend_connection(r->conn);
}

void httpd_resume(struct httpd_req *r)
{
    MHD_resume_connection(r->conn);
}

const char *httpd_header(const struct httpd_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *httpd_query(const struct httpd_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int httpd_basic_auth(const struct httpd_req *r, char **userp, char **passp)
{
    char *pass = NULL;
    char *name = MHD_basic_auth_get_username_password(r->conn, &pass);
    int rc = -1;

    *userp = *passp = NULL;
    if (name && pass && (*userp = strdup(name)) && (*passp = strdup(pass)))
        rc = 0;
    if (rc < 0) {
        free(*userp);
        *userp = NULL;
    }
    if (pass) {
        vnib_memburn(pass, strlen(pass));
        MHD_free(pass);
    }
    if (name)
        MHD_free(name);
    return rc;
}

bool httpd_length_over(const struct httpd_req *r, size_t limit)
{
    const char *clen = httpd_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!clen)
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(clen, &end, 10);
    return errno || *end || n > limit;
}

bool httpd_has_body(const struct httpd_req *r)
{
    const char *clen = httpd_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (httpd_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        return true;
    return clen && strtoull(clen, NULL, 10) > 0;
}

static enum MHD_Result header_size_add(void *cls,
                                       enum MHD_ValueKind kind,
                                       const char *key,
                                       const char *value)
{
    size_t *total = cls;
    (void)kind;
    /* "Name: value\r\n" on the wire; query arguments "&k=v". */
    *total += strlen(key) + (value ? strlen(value) : 0) + 4;
    return MHD_YES;
}

/* libmicrohttpd has parsed the request line and headers, so their size
 * is recomputed from the parts.
 */
size_t httpd_header_size(const struct httpd_req *r)
{
    size_t total = strlen(r->method) + strlen(r->url) + sizeof(" HTTP/1.1\r\n");
    MHD_get_connection_values(r->conn,
                              MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND,
                              header_size_add,
                              &total);
    return total;
}

bool httpd_media_type_is_json(const char *ct)
{
    static const char json[] = "application/json";
    size_t n = sizeof(json) - 1;

    if (!ct)
        return false;
    ct += strspn(ct, " \t");
    if (strncasecmp(ct, json, n) != 0)
        return false;
    ct += n;
    ct += strspn(ct, " \t");
    return *ct == '\0' || *ct == ';';
}

void httpd_client_address(const struct httpd_req *r, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    snprintf(buf, size, "unknown");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET,
                  &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
                  buf,
                  (socklen_t)size);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6,
                  &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                  buf,
                  (socklen_t)size);
}

int httpd_json_object(const char *body,
                      size_t len,
                      const char *what,
                      json_t **objp,
                      vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *obj;

    errno = EPROTO;
    if (!body || len == 0)
        return errprintf(errp, "a JSON object is required as the %s", what);
    obj = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj) {
        errno = EPROTO;
        return errprintf(errp,
                         "invalid JSON at line %d, column %d: %s",
                         jerr.line,
                         jerr.column,
                         jerr.text);
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        errno = EPROTO;
        return errprintf(errp, "the %s must be a JSON object", what);
    }
    *objp = obj;
    return 0;
}

const struct httpd_status *httpd_status_of(const struct httpd_status *map,
                                           size_t n,
                                           int errnum)
{
    for (size_t i = 0; i < n; i++) {
        if (map[i].errnum == errnum)
            return &map[i];
    }
    return NULL;
}
