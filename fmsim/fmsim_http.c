/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's listeners: the FM API with fault injection, and the admin API.
 *
 * Both are lib/httpd.c pipelines.  The main one runs a thread per
 * connection, so an injected delay holds up only its own request; the
 * admin one has a single internal thread of its own.  on_begin() runs
 * once the headers are in: it allocates the request, counts it and
 * applies the faults (drop, delay, error, HTML error page); httpd gathers
 * the body up to
 * BODY_MAX; on_run() authenticates and runs the handler (fmsim_api.c for
 * the FM API, the admin handlers here), which returns a status or -1
 * with errno (mapped to a status in error_map).  Every error body carries
 * both "message" (read by libfabric) and "detail" (read by Slurm).
 *
 * A "refuse" outage stops the main pipeline, closing its socket so that
 * connections are refused; leaving the outage starts it again on the same
 * port.  Stopping waits for the connection threads, so injected delays
 * sleep in short slices and end early when the daemon is stopping.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vnib/monotime.h"
#include "vnib/httpd.h"
#include "fmsim/fmsim_api.h"
#include "fmsim/fmsim_http.h"

#define BODY_MAX (64 * 1024)      /* request bodies, both ports */
#define DISCARD_MAX (1024 * 1024) /* refused body read before hanging up */
#define DELAY_SLICE_NS (10 * 1000000L)

/* errno to HTTP status: the one place where this mapping lives. */
static const struct httpd_status error_map[] = {
    {EINVAL, 400, NULL},
    {EPROTO, 400, NULL},
    {EACCES, 401, NULL},
    {EPERM, 403, NULL},
    {ENOENT, 404, NULL},
    {EOPNOTSUPP, 405, NULL},
    {EEXIST, 409, NULL},
    {E2BIG, 413, NULL},
    {ENOSPC, 507, NULL},
    {EAGAIN, 503, NULL},
};

static const char *const outage_names[] = {
    [FMSIM_OUTAGE_NONE] = "none",
    [FMSIM_OUTAGE_REFUSE] = "refuse",
    [FMSIM_OUTAGE_DROP] = "drop",
};

struct fmsim_http {
    struct fmsim_http_config cfg;
    struct fmsim_state *state;
    struct logger *log;
    pthread_mutex_t ctl;  /* starting and stopping the main daemon */
    pthread_mutex_t lock; /* error rate, its accumulator, counters */
    struct httpd *main;   /* NULL during a "refuse" outage */
    struct httpd *admin;
    uint16_t port;
    uint16_t admin_port;
    atomic_int stopping;    /* the main daemon is stopping: end delays */
    atomic_long latency_ms; /* fault settings read without the lock */
    atomic_int outage;
    atomic_bool forbid;
    atomic_bool echo_auth;   /* 403 quoting the Authorization header */
    atomic_int html_status;  /* 0, or every request gets this HTML page */
    double error_rate;       /* under lock */
    double error_acc;        /* error_rate summed per request */
    unsigned long error_seq; /* injected errors: odd 500, even 503 */
    unsigned long dropped;   /* requests dropped by outage "drop" */
    unsigned long total;     /* main-port requests */
    json_t *requests;        /* "METHOD pattern" -> count */
    json_t *statuses;        /* "200" -> count */
};

int fmsim_outage_parse(const char *name, enum fmsim_outage *outagep)
{
    for (size_t i = 0; i < sizeof(outage_names) / sizeof(outage_names[0]);
         i++) {
        if (strcmp(name, outage_names[i]) == 0) {
            *outagep = (enum fmsim_outage)i;
            return 0;
        }
    }
    errno = EINVAL;
    return -1;
}

/* Add one to counter key of obj; the lock is held. */
static void counter_add(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v)
        json_integer_set(v, json_integer_value(v) + 1);
    else
        json_object_set_new(obj, key, json_integer(1));
}

/* Count a main-port request by method and route.  Methods other than the
 * usual ones share a key, so a client cannot grow the table.
 */
static void count_request(struct fmsim_http *h, const struct fmsim_req *req)
{
    static const char *const known[] = {
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
    const char *method = "OTHER";
    char key[96];

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(req->hr->method, known[i]) == 0)
            method = known[i];
    }
    snprintf(key,
             sizeof(key),
             "%s %s",
             method,
             fmsim_api_route_info(req->route)->pattern);
    pthread_mutex_lock(&h->lock);
    h->total++;
    counter_add(h->requests, key);
    pthread_mutex_unlock(&h->lock);
}

/* The reply's headers into hdrs (name, value, ..., NULL). */
static void reply_headers(const struct fmsim_req *req,
                          int status,
                          const char *allow,
                          const char *hdrs[7])
{
    hdrs[0] = "Allow";
    hdrs[1] = allow;
    hdrs[2] = "WWW-Authenticate";
    hdrs[3] = status == 401 ? req->www_auth : NULL;
    hdrs[4] = "Retry-After";
    hdrs[5] = status == 503 ? "1" : NULL;
    hdrs[6] = NULL;
}

/* Count a main-port reply by its status. */
static void count_status(struct fmsim_req *req, int status)
{
    if (!req->admin) {
        char key[16];
        snprintf(key, sizeof(key), "%d", status);
        pthread_mutex_lock(&req->h->lock);
        counter_add(req->h->statuses, key);
        pthread_mutex_unlock(&req->h->lock);
    }
}

/* Queue a reply without a body. */
static int send_empty(struct fmsim_req *req, int status)
{
    const char *hdrs[7];

    reply_headers(req, status, NULL, hdrs);
    int rc = httpd_reply(req->hr, status, NULL, 0, NULL, hdrs);
    count_status(req, status);
    return rc;
}

/* Render a JSON value as the reply.  Steals val. */
static int send_json(struct fmsim_req *req,
                     int status,
                     json_t *val,
                     const char *allow)
{
    const char *hdrs[7];

    if (!val)
        return -1;
    reply_headers(req, status, allow, hdrs);
    int rc = httpd_reply_json(req->hr, status, val, hdrs);
    if (req->hr->responded)
        count_status(req, status);
    return rc;
}

/* The marker in the body of every html_status page: a client that
 * quotes an error body quotes it.
 */
#define HTML_MARKER "fmsim-html-error-page"

/* The page: status twice, the marker, the Authorization header. */
#define HTML_PAGE                                                 \
    "<!DOCTYPE html>\n<html><head><title>%d</title></head><body>" \
    "<h1>%d: injected HTML error page</h1><p>%s</p>"              \
    "<p>Authorization: %s</p></body></html>\n"

/* The html_status fault: an HTML error page, as a proxy or load balancer
 * in front of the FM answers when the FM is down, quoting the request's
 * Authorization header (as a careless one does) beside HTML_MARKER.
 */
static int send_html_page(struct fmsim_req *req, int status)
{
    const char *auth = httpd_header(req->hr, "Authorization");
    const char *hdrs[7];
    char *page = NULL;
    int len;

    if (!auth)
        auth = "(none)";
    len = snprintf(NULL, 0, HTML_PAGE, status, status, HTML_MARKER, auth);
    if (len < 0 || !(page = malloc((size_t)len + 1)))
        return -1;
    snprintf(
        page, (size_t)len + 1, HTML_PAGE, status, status, HTML_MARKER, auth);
    reply_headers(req, status, NULL, hdrs);
    int rc = httpd_reply(
        req->hr, status, page, (size_t)len, "text/html; charset=utf-8", hdrs);
    count_status(req, status);
    return rc;
}

/* An error reply: {"message", "detail"} and, from the token endpoint,
 * OAuth's "error".
 */
static int send_error(struct fmsim_req *req,
                      int status,
                      const char *text,
                      const char *allow)
{
    json_t *err = json_pack("{s:s, s:s}", "message", text, "detail", text);
    if (err && req->oauth_error)
        json_object_set_new(err, "error", json_string(req->oauth_error));
    return send_json(req, status, err, allow);
}

static json_t *faults_json(struct fmsim_http *h)
{
    pthread_mutex_lock(&h->lock);
    double rate = h->error_rate;
    pthread_mutex_unlock(&h->lock);
    return json_pack("{s:I, s:f, s:s, s:b, s:b, s:i}",
                     "latency_ms",
                     (json_int_t)atomic_load(&h->latency_ms),
                     "error_rate",
                     rate,
                     "outage",
                     outage_names[atomic_load(&h->outage)],
                     "forbid",
                     atomic_load(&h->forbid) ? 1 : 0,
                     "echo_auth",
                     atomic_load(&h->echo_auth) ? 1 : 0,
                     "html_status",
                     atomic_load(&h->html_status));
}

static json_t *counters_json(struct fmsim_http *h)
{
    pthread_mutex_lock(&h->lock);
    /* Copies: the originals keep changing under the lock. */
    json_t *out = json_pack("{s:I, s:I, s:I, s:o, s:o}",
                            "total",
                            (json_int_t)h->total,
                            "injected_errors",
                            (json_int_t)h->error_seq,
                            "dropped",
                            (json_int_t)h->dropped,
                            "requests",
                            json_deep_copy(h->requests),
                            "statuses",
                            json_deep_copy(h->statuses));
    pthread_mutex_unlock(&h->lock);
    return out;
}

static int h_state(struct fmsim_req *req, json_t **outp, vnib_error_t *errp)
{
    json_t *out = fmsim_state_dump(req->h->state);
    if (!out || json_object_set_new(out, "faults", faults_json(req->h)) < 0
        || json_object_set_new(out, "counters", counters_json(req->h)) < 0) {
        json_decref(out);
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    *outp = out;
    return 200;
}

static int h_faults_get(struct fmsim_req *req,
                        json_t **outp,
                        vnib_error_t *errp)
{
    if (!(*outp = faults_json(req->h))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return 200;
}

static struct httpd *main_start(struct fmsim_http *h);

/* Move the main port into or out of a "refuse" outage. */
static int outage_set(struct fmsim_http *h,
                      enum fmsim_outage outage,
                      vnib_error_t *errp)
{
    int rc = -1;

    pthread_mutex_lock(&h->ctl);
    if (outage == FMSIM_OUTAGE_REFUSE && h->main) {
        atomic_store(&h->outage, (int)outage);
        atomic_store(&h->stopping, 1);
        httpd_stop(h->main);
        h->main = NULL;
        atomic_store(&h->stopping, 0);
        logger_printf(h->log,
                      LOG_NOTICE,
                      NULL,
                      "outage: port %u closed",
                      (unsigned)h->port);
    } else if (outage != FMSIM_OUTAGE_REFUSE && !h->main) {
        if (!(h->main = main_start(h))) {
            errno = EADDRINUSE;
            errprintf(
                errp, "cannot listen on port %u again", (unsigned)h->port);
            goto done;
        }
        logger_printf(h->log,
                      LOG_NOTICE,
                      NULL,
                      "outage over: listening on port %u again",
                      (unsigned)h->port);
    }
    atomic_store(&h->outage, (int)outage);
    rc = 0;
done:
    pthread_mutex_unlock(&h->ctl);
    return rc;
}

/* POST /fmsim/faults: check everything, then apply in order (jobs first,
 * then the settings, then the outage); the first failure stops.
 */
static int h_faults_post(struct fmsim_req *req,
                         json_t **outp,
                         vnib_error_t *errp)
{
    struct fmsim_http *h = req->h;
    json_t *body = NULL, *latency = NULL, *rate = NULL, *outage = NULL;
    json_t *expire = NULL, *forbid = NULL, *forget = NULL, *add = NULL;
    json_t *echo = NULL, *html = NULL;
    const char *add_id = NULL;
    json_int_t add_limit = 0;
    enum fmsim_outage new_outage = FMSIM_OUTAGE_NONE;
    json_error_t jerr;
    int rc = -1;

    if (fmsim_api_body_json(req, &body, errp) < 0)
        goto done;
    errno = EINVAL;
    if (json_unpack_ex(body,
                       &jerr,
                       JSON_STRICT,
                       "{s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o}",
                       "latency_ms",
                       &latency,
                       "error_rate",
                       &rate,
                       "outage",
                       &outage,
                       "expire_tokens",
                       &expire,
                       "forbid",
                       &forbid,
                       "echo_auth",
                       &echo,
                       "html_status",
                       &html,
                       "forget_job",
                       &forget,
                       "add_job",
                       &add)
        < 0) {
        errprintf(errp, "%s", jerr.text);
        goto done;
    }
    if (latency
        && (!json_is_integer(latency) || json_integer_value(latency) < 0
            || json_integer_value(latency) > FMSIM_LATENCY_MAX_MS)) {
        errprintf(errp, "latency_ms must be 0..%ld", FMSIM_LATENCY_MAX_MS);
        goto done;
    }
    if (rate
        && (!json_is_number(rate) || json_number_value(rate) < 0
            || json_number_value(rate) > 1)) {
        errprintf(errp, "error_rate must be a number 0..1");
        goto done;
    }
    if (outage
        && (!json_is_string(outage)
            || fmsim_outage_parse(json_string_value(outage), &new_outage)
                   < 0)) {
        errno = EINVAL;
        errprintf(errp, "outage must be \"none\", \"refuse\" or \"drop\"");
        goto done;
    }
    if ((expire && !json_is_boolean(expire))
        || (forbid && !json_is_boolean(forbid))
        || (echo && !json_is_boolean(echo))) {
        errprintf(errp,
                  "expire_tokens, forbid and echo_auth must be true or false");
        goto done;
    }
    if (html
        && (!json_is_integer(html)
            || (json_integer_value(html) != 0
                && (json_integer_value(html) < 400
                    || json_integer_value(html) > 599)))) {
        errprintf(errp, "html_status must be 0 (off) or a status 400..599");
        goto done;
    }
    if (forget && !json_is_string(forget)) {
        errprintf(errp, "forget_job must be a jobID");
        goto done;
    }
    if (add
        && json_unpack_ex(add,
                          &jerr,
                          JSON_STRICT,
                          "{s:s, s:I}",
                          "jobID",
                          &add_id,
                          "mcastLimit",
                          &add_limit)
               < 0) {
        errprintf(errp, "add_job: %s", jerr.text);
        goto done;
    }

    if (forget
        && fmsim_state_job_forget(h->state, json_string_value(forget), errp)
               < 0)
        goto done;
    if (add) {
        json_t *job = fmsim_state_job_create(h->state, add_id, add_limit, errp);
        if (!job)
            goto done;
        json_decref(job);
    }
    if (expire && json_is_true(expire))
        fmsim_state_access_expire(h->state);
    if (latency)
        atomic_store(&h->latency_ms, (long)json_integer_value(latency));
    if (forbid)
        atomic_store(&h->forbid, json_is_true(forbid));
    if (echo)
        atomic_store(&h->echo_auth, json_is_true(echo));
    if (html)
        atomic_store(&h->html_status, (int)json_integer_value(html));
    if (rate) {
        pthread_mutex_lock(&h->lock);
        h->error_rate = json_number_value(rate);
        h->error_acc = 0;
        pthread_mutex_unlock(&h->lock);
    }
    if (outage && outage_set(h, new_outage, errp) < 0)
        goto done;
    pthread_mutex_lock(&h->lock);
    double now_rate = h->error_rate;
    pthread_mutex_unlock(&h->lock);
    logger_printf(h->log,
                  LOG_NOTICE,
                  NULL,
                  "faults: latency %ld ms, error rate %g, outage %s, forbid "
                  "%s, echo_auth %s, html_status %d%s%s%s",
                  atomic_load(&h->latency_ms),
                  now_rate,
                  outage_names[atomic_load(&h->outage)],
                  atomic_load(&h->forbid) ? "on" : "off",
                  atomic_load(&h->echo_auth) ? "on" : "off",
                  atomic_load(&h->html_status),
                  expire && json_is_true(expire) ? "; tokens expired" : "",
                  forget ? "; forgot a job" : "",
                  add ? "; added a job" : "");
    if (!(*outp = faults_json(h))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 200;
done:
    json_decref(body);
    return rc;
}

/* The handler of route and method on either port, or NULL. */
static fmsim_handler_f handler_for(enum fmsim_route route, const char *method)
{
    bool get = strcmp(method, "GET") == 0;
    bool post = strcmp(method, "POST") == 0;

    if (route == FMSIM_R_STATE)
        return get ? h_state : NULL;
    if (route == FMSIM_R_FAULTS)
        return get ? h_faults_get : post ? h_faults_post : NULL;
    return fmsim_api_handler(route, method);
}

static int errno_status(int errnum)
{
    const struct httpd_status *row = httpd_status_of(
        error_map, sizeof(error_map) / sizeof(error_map[0]), errnum);
    return row ? row->status : 500;
}

/* The last call of a request: route, authenticate, run the handler. */
static int dispatch(struct fmsim_req *req)
{
    const struct fmsim_route_info *route = fmsim_api_route_info(req->route);
    vnib_error_t error = {0};
    json_t *out = NULL;

    if (req->route == FMSIM_R_UNKNOWN)
        return send_error(req, 404, "no such endpoint", NULL);
    fmsim_handler_f handler = handler_for(req->route, req->hr->method);
    if (!handler)
        return send_error(
            req, 405, "method not allowed on this path", route->methods);
    if (route->wlm) {
        if (fmsim_api_wlm_authenticate(req, &error) < 0)
            return send_error(req, 401, error.text, NULL);
        if (atomic_load(&req->h->forbid))
            return send_error(req,
                              403,
                              "forbidden: this client's role may not use the "
                              "collectives API (fault injected)",
                              NULL);
        if (atomic_load(&req->h->echo_auth)) {
            /* What a careless FM or proxy does: quote the request. */
            const char *hdr = httpd_header(req->hr, "Authorization");
            char text[1024];
            snprintf(text,
                     sizeof(text),
                     "forbidden (fault injected): Authorization: %s",
                     hdr ? hdr : "(none)");
            return send_error(req, 403, text, NULL);
        }
    }
    errno = 0;
    int status = handler(req, &out, &error);
    if (status < 0) {
        int e = errno ? errno : EIO;
        json_decref(out);
        status = errno_status(e);
        if (status == 500 && !error.text[0])
            snprintf(error.text, sizeof(error.text), "%s", strerror(e));
        return send_error(
            req, status, error.text[0] ? error.text : strerror(e), NULL);
    }
    if (req->empty) {
        json_decref(out);
        return send_empty(req, status);
    }
    return send_json(req, status, out ? out : json_object(), NULL);
}

/* Injected latency: sleep until latency_ms after the request began,
 * reading the setting again each slice, so lowering it releases waiting
 * requests.  False when the daemon is stopping.
 */
static bool delay(struct fmsim_req *req)
{
    struct fmsim_http *h = req->h;

    for (;;) {
        if (atomic_load(&h->stopping))
            return false;
        int64_t left = req->hr->start_ns
                       + (int64_t)atomic_load(&h->latency_ms) * 1000000
                       - monotime_ns();
        if (left <= 0)
            return true;
        struct timespec ts = {0, left < DELAY_SLICE_NS ? left : DELAY_SLICE_NS};
        nanosleep(&ts, NULL);
    }
}

/* Injected errors: the status to answer (500 and 503 in turn), or 0. */
static int inject_error(struct fmsim_http *h)
{
    int status = 0;

    pthread_mutex_lock(&h->lock);
    if (h->error_rate > 0) {
        h->error_acc += h->error_rate;
        if (h->error_acc >= 1.0 - 1e-9) {
            h->error_acc -= 1.0;
            status = h->error_seq++ % 2 == 0 ? 500 : 503;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return status;
}

/* httpd's first call for a request: allocate, count, apply the faults,
 * check the announced body size.
 */
static int on_begin(struct fmsim_http *h, bool admin, struct httpd_req *hr)
{
    struct fmsim_req *req = calloc(1, sizeof(*req));

    hr->body_max = BODY_MAX;
    hr->discard_max = DISCARD_MAX;
    if (!req)
        return -1;
    req->hr = hr;
    req->h = h;
    req->cfg = &h->cfg;
    req->state = h->state;
    req->admin = admin;
    req->route = fmsim_api_route(hr->url, admin, &req->arg);
    hr->data = req;

    if (!admin) {
        count_request(h, req);
        if (atomic_load(&h->outage) == FMSIM_OUTAGE_DROP) {
            pthread_mutex_lock(&h->lock);
            h->dropped++;
            pthread_mutex_unlock(&h->lock);
            return -1; /* close without a reply */
        }
        if (!delay(req))
            return -1;
        int html_status = atomic_load(&h->html_status);
        if (html_status)
            return send_html_page(req, html_status);
        int status = inject_error(h);
        if (status)
            return send_error(req,
                              status,
                              status == 500
                                  ? "injected fault: internal server error"
                                  : "injected fault: service unavailable",
                              NULL);
    }
    if (httpd_length_over(hr, BODY_MAX))
        return send_error(req, 413, "request body is larger than 64 KiB", NULL);
    return 0;
}

static int on_main_begin(void *cls, struct httpd_req *hr)
{
    return on_begin(cls, false, hr);
}

static int on_admin_begin(void *cls, struct httpd_req *hr)
{
    return on_begin(cls, true, hr);
}

/* httpd's last call: the whole request is in. */
static int on_run(void *cls, struct httpd_req *hr)
{
    struct fmsim_req *req = hr->data;

    (void)cls;
    if (hr->refused == E2BIG)
        return send_error(req, 413, "request body is larger than 64 KiB", NULL);
    if (hr->refused)
        return -1;
    return dispatch(req);
}

static void on_done(void *cls, struct httpd_req *hr, int term)
{
    struct fmsim_http *h = cls;
    struct fmsim_req *req = hr->data;

    if (!req)
        return;
    double ms = (double)(monotime_ns() - hr->start_ns) / 1e6;
    int level = req->admin ? LOG_DEBUG : LOG_INFO;
    if (hr->status >= 500 && hr->status != 507) /* 507: the FM is full */
        level = LOG_WARNING;
    if (hr->status > 0)
        logger_printf(h->log,
                      level,
                      NULL,
                      "%s%s %s %d %.1fms",
                      req->admin ? "admin: " : "",
                      hr->method,
                      hr->url,
                      hr->status,
                      ms);
    else if (term != 0)
        logger_printf(h->log,
                      level,
                      NULL,
                      "%s%s %s: closed without a reply",
                      req->admin ? "admin: " : "",
                      hr->method,
                      hr->url);
    free(req);
    hr->data = NULL;
}

/* Start the main pipeline, on h->port once it is known. */
static struct httpd *main_start(struct fmsim_http *h)
{
    struct sockaddr_in sa = h->cfg.listen;

    if (h->port)
        sa.sin_port = htons(h->port);
    struct httpd_config hc = {
        .addr = (struct sockaddr *)&sa,
        .thread_per_connection = true,
        .max_connections = 256,
        .timeout_s = 60,
        .tls_cert = h->cfg.tls_cert,
        .tls_key = h->cfg.tls_key,
        .log = h->log,
        .handlers = {on_main_begin, on_run, on_done, h},
    };
    return httpd_start(&hc, NULL);
}

struct fmsim_http *fmsim_http_create(const struct fmsim_http_config *cfg,
                                     struct fmsim_state *state,
                                     struct logger *log,
                                     vnib_error_t *errp)
{
    struct fmsim_http *h = calloc(1, sizeof(*h));
    struct sockaddr_in admin = cfg->admin;
    char addr[INET_ADDRSTRLEN] = "?";

    if (!h) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    h->state = state;
    h->log = log;
    pthread_mutex_init(&h->ctl, NULL);
    pthread_mutex_init(&h->lock, NULL);
    atomic_init(&h->stopping, 0);
    atomic_init(&h->latency_ms, cfg->faults.latency_ms);
    atomic_init(&h->outage, (int)cfg->faults.outage);
    atomic_init(&h->forbid, cfg->faults.forbid);
    atomic_init(&h->html_status, 0);
    atomic_init(&h->echo_auth, false);
    h->error_rate = cfg->faults.error_rate;
    if (!(h->requests = json_object()) || !(h->statuses = json_object())) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto error;
    }

    if (!(h->main = main_start(h))) {
        inet_ntop(AF_INET, &cfg->listen.sin_addr, addr, sizeof(addr));
        errprintf(errp,
                  "cannot listen on %s port %u%s (address in use, or a bad "
                  "certificate or key?)",
                  addr,
                  (unsigned)ntohs(cfg->listen.sin_port),
                  cfg->tls_cert ? " with TLS" : "");
        goto error;
    }
    h->port = httpd_port(h->main);
    if (cfg->faults.outage == FMSIM_OUTAGE_REFUSE) {
        atomic_store(&h->stopping, 1);
        httpd_stop(h->main);
        h->main = NULL;
        atomic_store(&h->stopping, 0);
    }

    struct httpd_config hc = {
        .addr = (struct sockaddr *)&admin,
        .max_connections = 64,
        .timeout_s = 30,
        .log = log,
        .handlers = {on_admin_begin, on_run, on_done, h},
    };
    if (!(h->admin = httpd_start(&hc, NULL))) {
        inet_ntop(AF_INET, &cfg->admin.sin_addr, addr, sizeof(addr));
        errprintf(errp,
                  "cannot listen on %s port %u for the admin API",
                  addr,
                  (unsigned)ntohs(cfg->admin.sin_port));
        goto error;
    }
    h->admin_port = httpd_port(h->admin);
    return h;
error:
    fmsim_http_destroy(h);
    return NULL;
}

void fmsim_http_destroy(struct fmsim_http *h)
{
    int saved_errno = errno;
    if (h) {
        /* The admin API first: it is what starts and stops the main one. */
        httpd_stop(h->admin);
        pthread_mutex_lock(&h->ctl);
        if (h->main) {
            atomic_store(&h->stopping, 1);
            httpd_stop(h->main);
        }
        pthread_mutex_unlock(&h->ctl);
        json_decref(h->requests);
        json_decref(h->statuses);
        pthread_mutex_destroy(&h->ctl);
        pthread_mutex_destroy(&h->lock);
        free(h);
    }
    errno = saved_errno;
}

uint16_t fmsim_http_port(const struct fmsim_http *h)
{
    return h->port;
}

uint16_t fmsim_http_admin_port(const struct fmsim_http *h)
{
    return h->admin_port;
}
