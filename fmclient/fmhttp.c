/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One HTTP exchange of the Fabric Manager client (see fmc_internal.h).
 *
 * A client holds a small pool of CURL easy handles, set up once by httpc
 * with the safety options (TLS verification unless configured off,
 * http/https only, no redirects, no environment proxy, no signals).  A
 * request borrows a handle, sets only its URL, method, headers, body and
 * the time left before the call's deadline, and gives it back, so several
 * broker threads can talk to the FM at once while connections stay alive
 * between calls.  pool_lock guards the idle handles and is never held
 * across a transfer.
 *
 * Every text quoted from a server is scrubbed of every form of the
 * secrets the client sends (fmauth.c) before it goes into an error
 * message: a server or proxy that echoes the request in its error must
 * not put a credential into the broker's log or a reservation.
 *
 * The class of a call's failure (enum fmc_fault) is decided here as well,
 * apart from any text: status_fault is the one map of HTTP statuses, and
 * transfer_error classifies failed transfers.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmclient/fmc_internal.h"

/* ---- time ---------------------------------------------------------------- */

struct timespec fmhttp_deadline_after(long ms)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Milliseconds until t (negative when past). */
long fmhttp_ms_until(const struct timespec *t)
{
    struct timespec now;
    long long ms;

    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (long long)(t->tv_sec - now.tv_sec) * 1000
         + (t->tv_nsec - now.tv_nsec) / 1000000;
    if (ms > LONG_MAX)
        return LONG_MAX;
    if (ms < LONG_MIN)
        return LONG_MIN;
    return (long)ms;
}

/* ---- messages ------------------------------------------------------------ */

/* The longest of the n forms that starts at p (0 when none does). */
static size_t scrub_match(const char *p, const char *const *forms, size_t n)
{
    size_t best = 0;

    for (size_t i = 0; i < n; i++) {
        size_t len = forms[i] ? strlen(forms[i]) : 0;
        if (len > best && strncmp(p, forms[i], len) == 0)
            best = len;
    }
    return best;
}

/* A copy of text with every occurrence of every form replaced by "***"
 * (longest first, so that a base64 form is not half masked by a shorter
 * one it contains).  NULL when out of memory; the caller wipes it.
 */
static char *scrub_text(const char *text, const char *const *forms, size_t n)
{
    size_t len = strlen(text);
    char *out = malloc(3 * len + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        size_t m = scrub_match(p, forms, n);
        if (m) {
            memcpy(out + o, "***", 3);
            o += 3;
            p += m;
        } else
            out[o++] = *p++;
    }
    out[o] = '\0';
    return out;
}

/* Copy server text into out (FMC_DETAIL_MAX + 1 bytes): secrets scrubbed
 * first, so a truncation cannot leave part of one, then control
 * characters replaced by spaces.  "" when text is NULL or out of memory.
 */
static void detail_copy(struct fmc *c, const char *text, char *out)
{
    const char *forms[FMC_SCRUB_FORMS + 2];
    size_t n = 0;
    char *dup;
    size_t i;

    out[0] = '\0';
    if (!text)
        return;
    for (i = 0; i < FMC_SCRUB_FORMS; i++)
        forms[n++] = c->forms[i];
    pthread_mutex_lock(&c->scrub_lock);
    forms[n++] = c->token;
    forms[n++] = c->old_token;
    dup = scrub_text(text, forms, n);
    pthread_mutex_unlock(&c->scrub_lock);
    if (!dup)
        return;
    for (i = 0; dup[i] && i < FMC_DETAIL_MAX; i++) {
        unsigned char ch = (unsigned char)dup[i];
        out[i] = ch < ' ' || ch == 0x7f ? ' ' : (char)ch;
    }
    out[i] = '\0';
    httpc_secret_free(dup);
}

/* The explanation in an error body: the FM's "detail" (what Slurm reads)
 * or "message" (what libfabric reads), or an OAuth server's
 * "error_description" or "error".  NULL when there is none.
 */
static const char *detail_of(const json_t *body)
{
    static const char *const keys[] = {
        "detail", "message", "error_description", "error"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *s = json_string_value(json_object_get(body, keys[i]));
        if (s && s[0])
            return s;
    }
    return NULL;
}

/* ---- failure classes ----------------------------------------------------- */

struct fmc_call fmhttp_call_begin(long timeout_ms)
{
    struct fmc_call call = {
        .deadline = fmhttp_deadline_after(timeout_ms),
        .timeout_ms = timeout_ms,
        .status = 0,
        .fault = FMC_FAULT_NONE,
    };
    return call;
}

/* The class of a failure no exchange recorded, from its errno: a time
 * limit passed before or between exchanges, a reply that is not what the
 * API says, or a failure in this process.
 */
static enum fmc_fault fault_of_errno(int e)
{
    switch (e) {
        case ETIMEDOUT:
            return FMC_FAULT_TIMEOUT;
        case EPROTO:
        case EMSGSIZE:
            return FMC_FAULT_REPLY;
        case ECONNREFUSED:
            return FMC_FAULT_CONN_REFUSED;
        default:
            return FMC_FAULT_OTHER;
    }
}

/* Whether the class is about an answer, so that its status says more. */
static bool fault_answered(enum fmc_fault f)
{
    return f == FMC_FAULT_CREDENTIALS || f == FMC_FAULT_REQUEST
           || f == FMC_FAULT_NOT_FOUND || f == FMC_FAULT_NO_ADDRESSES
           || f == FMC_FAULT_UNAVAILABLE || f == FMC_FAULT_REPLY;
}

int fmhttp_call_end(const struct fmc_call *call, int rc, struct fmc_error *errp)
{
    enum fmc_fault f = FMC_FAULT_NONE;

    if (!errp)
        return rc;
    if (rc < 0)
        f = call->fault != FMC_FAULT_NONE ? call->fault : fault_of_errno(errno);
    errp->fault = f;
    errp->status = fault_answered(f) ? call->status : 0;
    errp->timeout_ms = f == FMC_FAULT_TIMEOUT ? call->timeout_ms : 0;
    return rc;
}

/* The one map of HTTP statuses to failure classes. */
static enum fmc_fault status_fault(enum fmhttp_endpoint from, long status)
{
    if (status == 401 || status == 403
        || (from == FMHTTP_TOKEN && status == 400))
        return FMC_FAULT_CREDENTIALS;
    /* The token endpoint's 404 or 507 says nothing about an FM job. */
    if (from == FMHTTP_FM && status == 404)
        return FMC_FAULT_NOT_FOUND;
    if (from == FMHTTP_FM && status == 507)
        return FMC_FAULT_NO_ADDRESSES;
    if (status >= 500 && status <= 599)
        return FMC_FAULT_UNAVAILABLE;
    return FMC_FAULT_REQUEST;
}

int fmhttp_status_error(struct fmc *c,
                        struct fmc_call *call,
                        enum fmhttp_endpoint from,
                        const char *label,
                        long status,
                        const json_t *body,
                        vnib_error_t *errp)
{
    char detail[FMC_DETAIL_MAX + 1];

    call->fault = status_fault(from, status);
    call->status = status;
    switch (call->fault) {
        case FMC_FAULT_CREDENTIALS:
            errno = EACCES;
            break;
        case FMC_FAULT_NOT_FOUND:
            errno = ENOENT;
            break;
        case FMC_FAULT_NO_ADDRESSES:
            errno = ENOSPC;
            break;
        default:
            errno = EIO;
            break;
    }
    detail_copy(c, detail_of(body), detail);
    if (detail[0])
        return errprintf(errp, "%s: HTTP %ld: %s", label, status, detail);
    return errprintf(errp, "%s: HTTP %ld", label, status);
}

/* The class of a connection that could not be made: refused, a name
 * that does not resolve, or anything else (no route).
 */
static enum fmc_fault unreachable_fault(const struct fmc_handle *h,
                                        CURLcode res)
{
    long os_errno = 0;

    if (res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_RESOLVE_PROXY)
        return FMC_FAULT_HOST_UNKNOWN;
    if (curl_easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK
        && os_errno == ECONNREFUSED)
        return FMC_FAULT_CONN_REFUSED;
    return FMC_FAULT_UNREACHABLE;
}

/* Map a failed transfer to its class (in call), errno and a message.
 * Always returns -1.
 */
static int transfer_error(const struct fmc_handle *h,
                          struct fmc_call *call,
                          const char *label,
                          CURLcode res,
                          const struct httpc_reply *r,
                          vnib_error_t *errp)
{
    const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(res);

    switch (httpc_fault_of(res, r)) {
        case HTTPC_TOO_LARGE:
            call->fault = FMC_FAULT_REPLY;
            errno = EMSGSIZE;
            return errprintf(
                errp, "%s: reply larger than %zu bytes", label, r->max);
        case HTTPC_NOMEM:
            call->fault = FMC_FAULT_OTHER;
            errno = ENOMEM;
            return errprintf(errp, "%s: out of memory", label);
        case HTTPC_UNREACHABLE:
            call->fault = unreachable_fault(h, res);
            errno = ECONNREFUSED;
            return errprintf(
                errp, "%s: cannot reach the server: %s", label, why);
        case HTTPC_DROPPED:
            call->fault = FMC_FAULT_DROPPED;
            errno = ECONNREFUSED;
            return errprintf(
                errp, "%s: cannot reach the server: %s", label, why);
        case HTTPC_TIMEOUT:
            call->fault = FMC_FAULT_TIMEOUT;
            errno = ETIMEDOUT;
            return errprintf(errp, "%s: timed out: %s", label, why);
        case HTTPC_TLS_VERIFY:
            call->fault = FMC_FAULT_TLS_VERIFY;
            errno = EPROTO;
            return errprintf(errp,
                             "%s: TLS verification of the server failed: %s",
                             label,
                             why);
        case HTTPC_TLS:
            call->fault = FMC_FAULT_TLS;
            errno = EPROTO;
            return errprintf(errp, "%s: TLS failure: %s", label, why);
        default:
            call->fault = FMC_FAULT_OTHER;
            errno = EIO;
            return errprintf(errp, "%s: %s", label, why);
    }
}

/* ---- the handle pool ----------------------------------------------------- */

static void handle_destroy(struct fmc_handle *h)
{
    if (h) {
        if (h->curl)
            curl_easy_cleanup(h->curl);
        free(h);
    }
}

static struct fmc_handle *handle_create(const struct fmc *c)
{
    struct fmc_handle *h = calloc(1, sizeof(*h));
    struct httpc_tls tls = {
        .ca_file = c->ca_file,
        .cert = c->cert,
        .cert_len = c->cert_len,
        .key = c->key,
        .key_len = c->key_len,
        .insecure_skip_verify = !c->tls_verify,
    };

    if (!h) {
        errno = ENOMEM;
        return NULL;
    }
    if (!(h->curl = httpc_handle_new("vnib-fmclient/1", &tls, h->errbuf))) {
        handle_destroy(h);
        errno = EIO;
        return NULL;
    }
    return h;
}

/* Borrow an idle handle, create one while fewer than FMC_POOL_SIZE exist, or
 * wait for one until the deadline (ETIMEDOUT).
 */
static struct fmc_handle *handle_borrow(struct fmc *c,
                                        const struct timespec *deadline,
                                        const char *label,
                                        vnib_error_t *errp)
{
    struct fmc_handle *h = NULL;
    int rc = 0;

    pthread_mutex_lock(&c->pool_lock);
    while (c->nidle == 0 && c->ncreated >= FMC_POOL_SIZE && rc == 0)
        rc = pthread_cond_timedwait(&c->pool_cond, &c->pool_lock, deadline);
    if (c->nidle > 0) {
        h = c->idle[--c->nidle];
        pthread_mutex_unlock(&c->pool_lock);
        return h;
    }
    if (c->ncreated >= FMC_POOL_SIZE) {
        pthread_mutex_unlock(&c->pool_lock);
        errno = ETIMEDOUT;
        errprintf(errp,
                  "%s: timed out waiting for one of the %d connections",
                  label,
                  FMC_POOL_SIZE);
        return NULL;
    }
    c->ncreated++;
    pthread_mutex_unlock(&c->pool_lock);
    if (!(h = handle_create(c))) {
        int e = errno;
        pthread_mutex_lock(&c->pool_lock);
        c->ncreated--;
        pthread_cond_signal(&c->pool_cond);
        pthread_mutex_unlock(&c->pool_lock);
        errno = e;
        errprintf(errp, "%s: cannot set up a libcurl handle", label);
    }
    return h;
}

/* Forget the request's pointers (body, headers, reply) and give the
 * handle back; its connection stays open for the next request.
 */
static void handle_return(struct fmc *c, struct fmc_handle *h)
{
    httpc_request_reset(h->curl);
    pthread_mutex_lock(&c->pool_lock);
    c->idle[c->nidle++] = h;
    pthread_cond_signal(&c->pool_cond);
    pthread_mutex_unlock(&c->pool_lock);
}

void fmhttp_pool_free(struct fmc *c)
{
    for (int i = 0; i < c->nidle; i++)
        handle_destroy(c->idle[i]);
    c->nidle = 0;
}

/* ---- one HTTP exchange --------------------------------------------------- */

int fmhttp_do(struct fmc *c,
              const struct fmc_request *rq,
              struct fmc_call *call,
              long *statusp,
              struct httpc_reply *r,
              vnib_error_t *errp)
{
    const struct timespec *deadline = &call->deadline;
    struct fmc_handle *h = NULL;
    struct curl_slist *hdrs = NULL;
    long left;
    CURLcode res;
    int rc = -1;

    /* What an earlier exchange of the call met is not this one's. */
    call->status = 0;
    call->fault = FMC_FAULT_NONE;
    r->max = c->max_response;
    if (fmhttp_ms_until(deadline) <= 0) {
        errno = ETIMEDOUT;
        errprintf(errp, "%s: timed out before the request was sent", rq->label);
        goto done;
    }
    if (httpc_headers_json(&hdrs, rq->body ? rq->content_type : NULL, rq->auth)
        < 0) {
        errprintf(errp, "%s: out of memory", rq->label);
        goto done;
    }
    if (!(h = handle_borrow(c, deadline, rq->label, errp)))
        goto done;
    if ((left = fmhttp_ms_until(deadline)) <= 0) {
        errno = ETIMEDOUT;
        errprintf(errp, "%s: timed out before the request was sent", rq->label);
        goto done;
    }
    h->errbuf[0] = '\0';
    struct httpc_request hr = {
        .method = rq->method, .url = rq->url, .body = rq->body};
    res = httpc_request_setup(h->curl,
                              &hr,
                              hdrs,
                              left,
                              left < c->connect_ms ? left : c->connect_ms,
                              r);
    if (res != CURLE_OK) {
        errno = EIO;
        errprintf(errp, "%s: %s", rq->label, curl_easy_strerror(res));
        goto done;
    }
    if ((res = curl_easy_perform(h->curl)) != CURLE_OK) {
        transfer_error(h, call, rq->label, res, r, errp);
        goto done;
    }
    if (curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, statusp) != CURLE_OK
        || *statusp < 100) {
        call->fault = FMC_FAULT_REPLY;
        errno = EPROTO;
        errprintf(errp, "%s: the reply has no HTTP status", rq->label);
        goto done;
    }
    call->status = *statusp;
    rc = 0;
done:
    if (h) {
        int e = errno;
        handle_return(c, h);
        errno = e;
    }
    httpc_headers_free(hdrs);
    return rc;
}
