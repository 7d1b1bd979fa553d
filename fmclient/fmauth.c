/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Fabric Manager client's authentication (see fmc_internal.h): none,
 * HTTP Basic (a user and a password file), or OAuth2 client credentials
 * (a token endpoint, a client id and a client secret file).
 *
 * The OAuth access token is cached and fetched again before expires_in
 * runs out, or once when the FM refuses it.  token_lock serialises the
 * fetches, so that threads that see an expired token or a 401 at the same
 * time fetch one new token between them; a thread never waits for it
 * while it holds a pooled handle, so the two locks cannot deadlock.
 *
 * Every form in which a secret goes on the wire is kept (scrub_setup), so
 * that fmhttp.c can scrub it out of any server text it quotes.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fmclient/fmc_internal.h"
#include "vnib/secfile.h"

enum {
    TOKEN_MARGIN_MS = 30000,      /* refresh this long before expiry... */
    TOKEN_MAX_LIFETIME = 2592000, /* seconds; longer expires_in is capped */
};

/* Standard base64 with padding (for the Basic header), by OpenSSL. */
static char *base64(const unsigned char *in, size_t n)
{
    char *out;

    if (n > INT_MAX / 2) {
        errno = EINVAL;
        return NULL;
    }
    if (!(out = malloc(4 * ((n + 2) / 3) + 1))) {
        errno = ENOMEM;
        return NULL;
    }
    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    return out;
}

static int secret_read(const char *what,
                       const char *path,
                       char **bufp,
                       size_t *lenp,
                       vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;

    if (!path || !path[0]) {
        errno = EINVAL;
        return errprintf(errp, "no %s file given", what);
    }
    if (secfile_read_owned(path, &buf, &len, errp) < 0)
        return -1;
    *bufp = buf;
    *lenp = len + 1;
    if (len > 0 && buf[len - 1] == '\n') {
        buf[--len] = '\0';
        if (len > 0 && buf[len - 1] == '\r')
            buf[--len] = '\0';
    }
    if (len == 0 || strlen(buf) != len) {
        errno = EINVAL;
        return errprintf(
            errp, "%s: the %s is empty or contains a NUL byte", path, what);
    }
    return 0;
}

/* "Authorization: Basic base64(user:password)". */
static int basic_setup(struct fmc *c,
                       const struct fmc_config *cfg,
                       vnib_error_t *errp)
{
    static const char prefix[] = "Authorization: Basic ";
    char *pair = NULL;
    char *b64 = NULL;
    size_t pairlen = 0;
    int rc = -1;

    if (!httpc_token_printable(cfg->user) || strchr(cfg->user, ':')) {
        errno = EINVAL;
        return errprintf(errp,
                         "FM basic auth needs a user without spaces, ':' or "
                         "control characters");
    }
    if (secret_read("FM password",
                    cfg->password_file,
                    &c->password,
                    &c->password_len,
                    errp)
        < 0)
        return -1;
    pairlen = strlen(cfg->user) + 1 + strlen(c->password) + 1;
    if (!(pair = malloc(pairlen))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(pair, pairlen, "%s:%s", cfg->user, c->password);
    if (!(b64 = base64((const unsigned char *)pair, pairlen - 1))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    size_t len = sizeof(prefix) + strlen(b64);
    if (!(c->basic_header = malloc(len))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(c->basic_header, len, "%s%s", prefix, b64);
    rc = 0;
done:
    if (rc < 0)
        errno = ENOMEM;
    httpc_secret_free(b64);
    httpc_secret_free(pair);
    return rc;
}

static int oauth_setup(struct fmc *c,
                       const struct fmc_config *cfg,
                       vnib_error_t *errp)
{
    if (fmc_url_check("OAuth token URL", cfg->token_url, errp) < 0)
        return -1;
    if (!cfg->client_id || !cfg->client_id[0]) {
        errno = EINVAL;
        return errprintf(errp, "FM OAuth needs a client id");
    }
    if (!(c->token_url = strdup(cfg->token_url))
        || !(c->client_id = strdup(cfg->client_id))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return secret_read("OAuth client secret",
                       cfg->client_secret_file,
                       &c->secret,
                       &c->secret_len,
                       errp);
}

/* CA bundle, client certificate and key: read now, so that a missing or
 * unsafe file stops the broker at start rather than at the first call.
 */
static char *base64_pair(const char *a, const char *b)
{
    size_t len = strlen(a) + 1 + strlen(b) + 1;
    char *pair = malloc(len);
    char *b64;

    if (!pair) {
        errno = ENOMEM;
        return NULL;
    }
    snprintf(pair, len, "%s:%s", a, b);
    b64 = base64((const unsigned char *)pair, len - 1);
    httpc_secret_free(pair);
    return b64;
}

/* A copy of s with the hex digits of its %XX escapes in lower case. */
static char *lower_escapes(const char *s)
{
    char *out = strdup(s);

    for (char *p = out; p && *p; p++)
        if (*p == '%' && p[1] && p[2]) {
            p[1] = (char)(p[1] >= 'A' && p[1] <= 'F' ? p[1] + 32 : p[1]);
            p[2] = (char)(p[2] >= 'A' && p[2] <= 'F' ? p[2] + 32 : p[2]);
        }
    return out;
}

/* Every form in which the client sends a fixed secret, for detail_copy:
 * the password, user:password's base64 (the Basic header), the client
 * secret raw and percent-encoded (the token form; either case of hex),
 * and client_id:secret's base64 (what a Basic client authentication
 * would carry).  user:password needs no entry of its own: it contains
 * the password.  The access token is scrubbed from c->token.
 */
static int scrub_setup(struct fmc *c, const struct fmc_config *cfg)
{
    char **f = c->forms;

    if (c->auth == FMC_AUTH_BASIC
        && (!(f[0] = strdup(c->password))
            || !(f[1] = base64_pair(cfg->user, c->password))))
        return -1;
    if (c->auth == FMC_AUTH_OAUTH
        && (!(f[0] = strdup(c->secret)) || !(f[1] = httpc_escape(c->secret))
            || !(f[2] = lower_escapes(f[1]))
            || !(f[3] = base64_pair(c->client_id, c->secret))))
        return -1;
    return 0;
}

int fmauth_setup(struct fmc *c,
                 const struct fmc_config *cfg,
                 vnib_error_t *errp)
{
    if ((c->auth == FMC_AUTH_BASIC && basic_setup(c, cfg, errp) < 0)
        || (c->auth == FMC_AUTH_OAUTH && oauth_setup(c, cfg, errp) < 0))
        return -1;
    if (scrub_setup(c, cfg) < 0) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return 0;
}

/* ---- OAuth --------------------------------------------------------------- */

/* The form that asks for a token; the caller wipes it (httpc_secret_free). */
static char *token_form(const struct fmc *c)
{
    char *id = httpc_escape(c->client_id);
    char *secret = httpc_escape(c->secret);
    char *form = NULL;

    if (id && secret) {
        size_t len = strlen(id) + strlen(secret) + 128;
        if ((form = malloc(len)))
            snprintf(form,
                     len,
                     "grant_type=client_credentials&client_id=%s"
                     "&client_secret=%s&scope=openid",
                     id,
                     secret);
    }
    free(id);
    httpc_secret_free(secret);
    if (!form)
        errno = ENOMEM;
    return form;
}

/* Remember a new token and when to refresh it: when less than a tenth of
 * its lifetime or 30 s remains, whichever is more, but never later than
 * half-way, so that short-lived tokens are still reused.  Without
 * expires_in the token is kept until the FM refuses it.
 */
static void token_store(struct fmc *c, char *token, json_int_t lifetime)
{
    pthread_mutex_lock(&c->scrub_lock);
    httpc_secret_free(c->old_token);
    c->old_token = c->token;
    c->token = token;
    pthread_mutex_unlock(&c->scrub_lock);
    c->token_gen++;
    c->token_expires = lifetime > 0;
    if (c->token_expires) {
        long long life_ms =
            (long long)(lifetime > TOKEN_MAX_LIFETIME ? TOKEN_MAX_LIFETIME
                                                      : lifetime)
            * 1000;
        long long margin = life_ms / 10;
        if (margin < TOKEN_MARGIN_MS)
            margin = TOKEN_MARGIN_MS;
        if (margin > life_ms / 2)
            margin = life_ms / 2;
        c->token_refresh_at = fmhttp_deadline_after((long)(life_ms - margin));
    }
}

/* The access token (copied into *tokenp) and its lifetime in seconds (0
 * when not given) of a token endpoint's 2xx reply body, NULL when it is
 * not JSON.
 */
static int token_parse(const json_t *body,
                       const char *label,
                       long status,
                       char **tokenp,
                       json_int_t *lifetimep,
                       vnib_error_t *errp)
{
    const char *value;
    json_t *exp;

    *tokenp = NULL;
    *lifetimep = 0;
    if (!body) {
        errno = EPROTO;
        return errprintf(errp, "%s: HTTP %ld reply is not JSON", label, status);
    }
    value = json_string_value(json_object_get(body, "access_token"));
    if (!httpc_token_printable(value)) {
        errno = EPROTO;
        return errprintf(
            errp, "%s: the reply has no valid access_token", label);
    }
    exp = json_object_get(body, "expires_in");
    if (json_is_integer(exp))
        *lifetimep = json_integer_value(exp);
    else if (json_is_real(exp) && json_real_value(exp) >= 1)
        *lifetimep = json_real_value(exp) < TOKEN_MAX_LIFETIME
                         ? (json_int_t)json_real_value(exp)
                         : TOKEN_MAX_LIFETIME;
    else if (json_is_string(exp))
        *lifetimep = strtol(json_string_value(exp), NULL, 10);
    if (!(*tokenp = strdup(value))) {
        errno = ENOMEM;
        return errprintf(errp, "%s: out of memory", label);
    }
    return 0;
}

/* Fetch a new access token from the token endpoint within call
 * (token_lock held).
 */
static int token_fetch(struct fmc *c, struct fmc_call *call, vnib_error_t *errp)
{
    char label[FMC_LABEL_MAX];
    struct httpc_reply r = {0};
    json_t *body = NULL;
    json_error_t jerr;
    char *form = NULL;
    char *token = NULL;
    long status = 0;
    int rc = -1;

    snprintf(label, sizeof(label), "OAuth POST %s", c->token_url);
    if (!(form = token_form(c))) {
        errprintf(errp, "%s: out of memory", label);
        goto done;
    }
    struct fmc_request rq = {
        .label = label,
        .method = "POST",
        .url = c->token_url,
        .body = form,
        .content_type = "application/x-www-form-urlencoded",
    };
    if (fmhttp_do(c, &rq, call, &status, &r, errp) < 0)
        goto done;
    body = r.len ? json_loadb(r.buf, r.len, 0, &jerr) : NULL;
    if (status < 200 || status > 299) {
        /* The endpoint refusing the client's credentials is an access
         * problem whatever status it picked for it (400, 401, 403); any
         * other status says nothing about the FM job (not ENOENT, not
         * ENOSPC): fmhttp_status_error's map for FMHTTP_TOKEN.
         */
        fmhttp_status_error(c, call, FMHTTP_TOKEN, label, status, body, errp);
        goto done;
    }
    json_int_t lifetime = 0;
    if (token_parse(body, label, status, &token, &lifetime, errp) < 0)
        goto done;
    token_store(c, token, lifetime);
    rc = 0;
done:
    json_decref(body);
    httpc_reply_free(&r);
    httpc_secret_free(form);
    return rc;
}

/* The Authorization header line for a request, or NULL for none, in
 * *hdrp (the caller wipes it with httpc_secret_free).  For OAuth, the token is
 * fetched when there is none or it is due for refresh, or when
 * refresh_gen is non-zero and still the current token's generation (the
 * FM refused that token; another thread may have replaced it already).
 */
int fmauth_header(struct fmc *c,
                  struct fmc_call *call,
                  unsigned refresh_gen,
                  char **hdrp,
                  unsigned *genp,
                  vnib_error_t *errp)
{
    static const char bearer[] = "Authorization: Bearer ";
    int rc = -1;

    *hdrp = NULL;
    *genp = 0;
    if (c->auth == FMC_AUTH_NONE)
        return 0;
    if (c->auth == FMC_AUTH_BASIC) {
        if (!(*hdrp = strdup(c->basic_header))) {
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
        return 0;
    }
    pthread_mutex_lock(&c->token_lock);
    if (!c->token || (refresh_gen && refresh_gen == c->token_gen)
        || (c->token_expires && fmhttp_ms_until(&c->token_refresh_at) <= 0)) {
        if (token_fetch(c, call, errp) < 0)
            goto done;
    }
    size_t len = sizeof(bearer) + strlen(c->token);
    if (!(*hdrp = malloc(len))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    snprintf(*hdrp, len, "%s%s", bearer, c->token);
    *genp = c->token_gen;
    rc = 0;
done:
    pthread_mutex_unlock(&c->token_lock);
    return rc;
}
