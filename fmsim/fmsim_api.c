/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's Fabric Manager API (see fmsim_api.h): the route table, WLM
 * and session authentication, the OAuth token endpoint's form parsing,
 * and the handlers of the jobs and multicast endpoints.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "vnib/hex.h"
#include "vnib/token.h"
#include "fmsim/fmsim_api.h"

#define FORM_KEY_MAX 64

static const struct fmsim_route_info routes[] = {
    [FMSIM_R_UNKNOWN] = {"(unknown)", "", false},
    [FMSIM_R_TOKEN] = {"/oauth/token", "POST", false},
    [FMSIM_R_JOBS] = {"/fabric/collectives/jobs/", "GET, POST", true},
    [FMSIM_R_JOB] = {"/fabric/collectives/jobs/{jobID}",
                     "GET, PATCH, DELETE",
                     true},
    [FMSIM_R_MCASTS] = {"/fabric/collectives/multicasts", "POST", false},
    [FMSIM_R_MCAST] = {"/fabric/collectives/multicasts/{mcastID}",
                       "DELETE",
                       false},
    [FMSIM_R_STATE] = {"/fmsim/state", "GET", false},
    [FMSIM_R_FAULTS] = {"/fmsim/faults", "GET, POST", false},
};

const struct fmsim_route_info *fmsim_api_route_info(enum fmsim_route route)
{
    return &routes[route];
}

/* Compare secrets without stopping at the first difference. */
static bool secret_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    volatile unsigned char d = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

enum fmsim_route fmsim_api_route(const char *url, bool admin, const char **argp)
{
    static const char jobs[] = "/fabric/collectives/jobs";
    static const char mcasts[] = "/fabric/collectives/multicasts";
    size_t n;

    *argp = NULL;
    if (admin) {
        if (strcmp(url, "/fmsim/state") == 0)
            return FMSIM_R_STATE;
        if (strcmp(url, "/fmsim/faults") == 0)
            return FMSIM_R_FAULTS;
        return FMSIM_R_UNKNOWN;
    }
    if (strcmp(url, "/oauth/token") == 0)
        return FMSIM_R_TOKEN;
    n = sizeof(jobs) - 1;
    if (strncmp(url, jobs, n) == 0) {
        if (url[n] == '\0' || (url[n] == '/' && url[n + 1] == '\0'))
            return FMSIM_R_JOBS;
        if (url[n] == '/') {
            *argp = url + n + 1;
            return FMSIM_R_JOB;
        }
    }
    n = sizeof(mcasts) - 1;
    if (strncmp(url, mcasts, n) == 0) {
        if (url[n] == '\0' || (url[n] == '/' && url[n + 1] == '\0'))
            return FMSIM_R_MCASTS;
        if (url[n] == '/') {
            *argp = url + n + 1;
            return FMSIM_R_MCAST;
        }
    }
    return FMSIM_R_UNKNOWN;
}

int fmsim_api_body_json(struct fmsim_req *req,
                        json_t **objp,
                        vnib_error_t *errp)
{
    return httpd_json_object(
        req->hr->body, req->hr->body_len, "body", objp, errp);
}

static void secret_free(char *s)
{
    if (s) {
        vnib_memburn(s, strlen(s));
        free(s);
    }
}

/* The bearer token of the request, or NULL. */
static const char *request_bearer(const struct fmsim_req *req)
{
    const char *hdr = httpd_header(req->hr, "Authorization");
    if (!hdr || strncasecmp(hdr, "Bearer ", 7) != 0)
        return NULL;
    hdr += 7;
    hdr += strspn(hdr, " ");
    size_t n = strlen(hdr);
    if (n == 0 || n > TOKEN_MAX_LEN)
        return NULL;
    return hdr;
}

/* HTTP Basic credentials: true when they are user and secret. */
static bool basic_matches(struct fmsim_req *req,
                          const char *user,
                          const char *secret)
{
    char *name = NULL, *pass = NULL;
    bool ok = httpd_basic_auth(req->hr, &name, &pass) == 0
              && secret_equal(name, user) && secret_equal(pass, secret);
    secret_free(pass);
    secret_free(name);
    return ok;
}

/* WLM authentication for the jobs endpoints: 0, or -1 with EACCES. */
int fmsim_api_wlm_authenticate(struct fmsim_req *req, vnib_error_t *errp)
{
    const struct fmsim_http_config *cfg = req->cfg;
    const char *token;

    switch (cfg->auth) {
        case FMSIM_AUTH_NONE:
            return 0;
        case FMSIM_AUTH_BASIC:
            if (basic_matches(req, cfg->user, cfg->password))
                return 0;
            req->www_auth = "Basic realm=\"fmsim\", charset=\"UTF-8\"";
            errno = EACCES;
            return errprintf(errp, "HTTP Basic credentials missing or wrong");
        case FMSIM_AUTH_OAUTH:
            token = request_bearer(req);
            if (token && fmsim_state_access_valid(req->state, token))
                return 0;
            req->www_auth = token ? "Bearer realm=\"fmsim\", "
                                    "error=\"invalid_token\""
                                  : "Bearer realm=\"fmsim\"";
            errno = EACCES;
            return errprintf(errp,
                             token ? "access token unknown or expired"
                                   : "an OAuth access token is required "
                                     "(Authorization: Bearer)");
    }
    errno = EACCES;
    return -1;
}

/* The job's session token for the multicast calls: 0, or -1 (EACCES). */
static int session_authenticate(struct fmsim_req *req,
                                const char **tokenp,
                                vnib_error_t *errp)
{
    const char *token = request_bearer(req);
    if (!token || !fmsim_state_session_valid(req->state, token)) {
        req->www_auth = "Bearer realm=\"fmsim-session\"";
        errno = EACCES;
        return errprintf(errp,
                         token ? "unknown session token"
                               : "a job's session token is required "
                                 "(Authorization: Bearer)");
    }
    *tokenp = token;
    return 0;
}

/* Decode n bytes of form-urlencoded text into dst (n + 1 bytes).
 * Returns 0, or -1 on a bad escape or an encoded NUL.
 */
static int form_decode(const char *src, size_t n, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '+')
            c = ' ';
        else if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hex_digit(src[i + 1]), lo = hex_digit(src[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        dst[o++] = c;
    }
    dst[o] = '\0';
    return 0;
}

/* The decoded value of field name in a form-urlencoded body: *valuep is
 * NULL when absent, else the caller frees it.  Returns 0 or -1 (EINVAL).
 */
static int form_field(const char *body,
                      size_t len,
                      const char *name,
                      char **valuep)
{
    const char *p = body, *end = body + len;

    *valuep = NULL;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        const char *kend = eq ? eq : stop;
        char key[FORM_KEY_MAX + 1];

        if ((size_t)(kend - p) <= FORM_KEY_MAX) {
            if (form_decode(p, (size_t)(kend - p), key) < 0)
                goto invalid;
            if (strcmp(key, name) == 0) {
                const char *v = eq ? eq + 1 : stop;
                size_t vlen = (size_t)(stop - v);
                free(*valuep); /* the last occurrence wins */
                if (!(*valuep = malloc(vlen + 1)))
                    return -1;
                if (form_decode(v, vlen, *valuep) < 0)
                    goto invalid;
            }
        }
        p = amp ? amp + 1 : end;
    }
    return 0;
invalid:
    free(*valuep);
    *valuep = NULL;
    errno = EINVAL;
    return -1;
}

/* POST /oauth/token: client credentials grant (RFC 6749 section 4.4),
 * with the client's id and secret in the form or in HTTP Basic.
 */
static int h_token(struct fmsim_req *req, json_t **outp, vnib_error_t *errp)
{
    const struct fmsim_http_config *cfg = req->cfg;
    const char *body = req->hr->body ? req->hr->body : "";
    char *grant = NULL, *id = NULL, *secret = NULL, *scope = NULL;
    char token[TOKEN_SIZE] = "";
    int rc = -1;

    if (cfg->auth != FMSIM_AUTH_OAUTH) {
        errno = ENOENT;
        errprintf(errp, "no token endpoint: fmsim runs without --auth oauth");
        goto done;
    }
    if (form_field(body, req->hr->body_len, "grant_type", &grant) < 0
        || form_field(body, req->hr->body_len, "client_id", &id) < 0
        || form_field(body, req->hr->body_len, "client_secret", &secret) < 0
        || form_field(body, req->hr->body_len, "scope", &scope) < 0) {
        req->oauth_error = "invalid_request";
        errprintf(errp, "the body is not valid form-urlencoded data");
        goto done;
    }
    if (!grant || strcmp(grant, "client_credentials") != 0) {
        req->oauth_error = grant ? "unsupported_grant_type" : "invalid_request";
        errno = EINVAL;
        errprintf(errp, "grant_type must be client_credentials");
        goto done;
    }
    bool ok = id && secret
                  ? secret_equal(id, cfg->client_id)
                        && secret_equal(secret, cfg->client_secret)
                  : basic_matches(req, cfg->client_id, cfg->client_secret);
    if (!ok) {
        req->oauth_error = "invalid_client";
        req->www_auth = "Basic realm=\"fmsim\"";
        errno = EACCES;
        errprintf(errp, "client authentication failed");
        goto done;
    }
    if (fmsim_state_access_issue(
            req->state, cfg->token_ttl_s, token, sizeof(token), errp)
        < 0)
        goto done;
    if (!(*outp = json_pack("{s:s, s:s, s:I}",
                            "access_token",
                            token,
                            "token_type",
                            "Bearer",
                            "expires_in",
                            (json_int_t)cfg->token_ttl_s))
        || (scope
            && json_object_set_new(*outp, "scope", json_string(scope)) < 0)) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 200;
done:
    vnib_memburn(token, sizeof(token));
    secret_free(secret);
    free(grant);
    free(id);
    free(scope);
    return rc;
}

static int h_jobs_list(struct fmsim_req *req, json_t **outp, vnib_error_t *errp)
{
    if (!(*outp = fmsim_state_job_list(req->state)))
        return errprintf(errp, "out of memory");
    return 200;
}

static int h_job_create(struct fmsim_req *req,
                        json_t **outp,
                        vnib_error_t *errp)
{
    json_t *body = NULL;
    json_error_t jerr;
    const char *id;
    json_int_t limit;
    int rc = -1;

    if (fmsim_api_body_json(req, &body, errp) < 0)
        goto done;
    if (json_unpack_ex(
            body, &jerr, 0, "{s:s, s:I}", "jobID", &id, "mcastLimit", &limit)
        < 0) {
        errno = EINVAL;
        errprintf(errp, "%s", jerr.text);
        goto done;
    }
    if ((*outp = fmsim_state_job_create(req->state, id, limit, errp)))
        rc = 201;
done:
    json_decref(body);
    return rc;
}

static int h_job_get(struct fmsim_req *req, json_t **outp, vnib_error_t *errp)
{
    if (!(*outp = fmsim_state_job_get(req->state, req->arg, errp)))
        return -1;
    return 200;
}

static int h_job_patch(struct fmsim_req *req, json_t **outp, vnib_error_t *errp)
{
    json_t *body = NULL;
    int rc = -1;

    if (fmsim_api_body_json(req, &body, errp) < 0)
        goto done;
    *outp = fmsim_state_job_patch(
        req->state, req->arg, json_object_get(body, "jobSteps"), errp);
    if (*outp)
        rc = 200;
done:
    json_decref(body);
    return rc;
}

static int h_job_delete(struct fmsim_req *req,
                        json_t **outp,
                        vnib_error_t *errp)
{
    (void)outp;
    if (fmsim_state_job_delete(req->state, req->arg, errp) < 0)
        return -1;
    req->empty = true; /* as the FM may: clients must accept it */
    return 200;
}

static int h_mcast_create(struct fmsim_req *req,
                          json_t **outp,
                          vnib_error_t *errp)
{
    json_t *body = NULL;
    const char *token;
    int rc = -1;

    if (session_authenticate(req, &token, errp) < 0
        || fmsim_api_body_json(req, &body, errp) < 0)
        goto done;
    if ((*outp = fmsim_state_mcast_create(req->state, token, body, errp)))
        rc = 200;
done:
    json_decref(body);
    return rc;
}

static int h_mcast_delete(struct fmsim_req *req,
                          json_t **outp,
                          vnib_error_t *errp)
{
    const char *token;
    size_t n = strspn(req->arg, "0123456789");

    if (session_authenticate(req, &token, errp) < 0)
        return -1;
    if (n == 0 || n > 9 || req->arg[n] != '\0') {
        errno = EINVAL;
        return errprintf(errp, "mcastID must be a decimal number");
    }
    long id = strtol(req->arg, NULL, 10);
    if (fmsim_state_mcast_delete(req->state, token, id, errp) < 0)
        return -1;
    if (!(*outp = json_pack(
              "{s:I, s:s}", "mcastID", (json_int_t)id, "message", "OK")))
        return errprintf(errp, "out of memory");
    return 200;
}

fmsim_handler_f fmsim_api_handler(enum fmsim_route route, const char *method)
{
    bool get = strcmp(method, "GET") == 0;
    bool post = strcmp(method, "POST") == 0;

    switch (route) {
        case FMSIM_R_TOKEN:
            return post ? h_token : NULL;
        case FMSIM_R_JOBS:
            return get ? h_jobs_list : post ? h_job_create : NULL;
        case FMSIM_R_JOB:
            if (get)
                return h_job_get;
            if (strcmp(method, "PATCH") == 0)
                return h_job_patch;
            if (strcmp(method, "DELETE") == 0)
                return h_job_delete;
            return NULL;
        case FMSIM_R_MCASTS:
            return post ? h_mcast_create : NULL;
        case FMSIM_R_MCAST:
            return strcmp(method, "DELETE") == 0 ? h_mcast_delete : NULL;
        case FMSIM_R_STATE:
        case FMSIM_R_FAULTS:
        case FMSIM_R_UNKNOWN:
            break;
    }
    return NULL;
}
