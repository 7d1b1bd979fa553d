/* fmsim's listeners: the FM API with fault injection, and the admin API.
 *
 * Both are libmicrohttpd daemons.  The main one runs a thread per
 * connection, so an injected delay holds up only its own request; the
 * admin one has a single internal thread of its own.  As in the broker,
 * the access handler runs several times per request: the first call
 * allocates the request, counts it and applies the faults (drop, delay,
 * error), later calls gather the body up to BODY_MAX, and the last one
 * authenticates and runs the handler, which returns a status or -1 with
 * errno (mapped to a status in error_map).  Every error body carries both
 * "message" (read by libfabric) and "detail" (read by Slurm).
 *
 * A "refuse" outage stops the main daemon, closing its socket so that
 * connections are refused; leaving the outage starts it again on the same
 * port.  Stopping waits for the connection threads, so injected delays
 * sleep in short slices and end early when the daemon is stopping.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "vnib/token.h"
#include "fmsim/fmsim_http.h"

#define BODY_MAX (64 * 1024)      /* request bodies, both ports */
#define DISCARD_MAX (1024 * 1024) /* refused body read before hanging up */
#define FORM_KEY_MAX 64
#define DELAY_SLICE_NS (10 * 1000000L)

enum route_id {
    R_UNKNOWN,
    R_TOKEN,
    R_JOBS,
    R_JOB,
    R_MCASTS,
    R_MCAST,
    R_STATE,
    R_FAULTS,
};

static const struct route {
    const char *pattern; /* for counters and the log */
    const char *methods; /* allowed, as the Allow header lists them */
    bool wlm;            /* behind the WLM authentication and "forbid" */
} routes[] = {
    [R_UNKNOWN] = {"(unknown)", "", false},
    [R_TOKEN] = {"/oauth/token", "POST", false},
    [R_JOBS] = {"/fabric/collectives/jobs/", "GET, POST", true},
    [R_JOB] = {"/fabric/collectives/jobs/{jobID}", "GET, PATCH, DELETE", true},
    [R_MCASTS] = {"/fabric/collectives/multicasts", "POST", false},
    [R_MCAST] = {"/fabric/collectives/multicasts/{mcastID}", "DELETE", false},
    [R_STATE] = {"/fmsim/state", "GET", false},
    [R_FAULTS] = {"/fmsim/faults", "GET, POST", false},
};

/* errno to HTTP status: the one place where this mapping lives. */
static const struct {
    int errnum;
    int status;
} error_map[] = {
    {EINVAL, 400},
    {EPROTO, 400},
    {EACCES, 401},
    {EPERM, 403},
    {ENOENT, 404},
    {EOPNOTSUPP, 405},
    {EEXIST, 409},
    {E2BIG, 413},
    {ENOSPC, 507},
    {EAGAIN, 503},
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
    pthread_mutex_t ctl;     /* starting and stopping the main daemon */
    pthread_mutex_t lock;    /* error rate, its accumulator, counters */
    struct MHD_Daemon *main; /* NULL during a "refuse" outage */
    struct MHD_Daemon *admin;
    uint16_t port;
    uint16_t admin_port;
    atomic_int stopping;    /* the main daemon is stopping: end delays */
    atomic_long latency_ms; /* fault settings read without the lock */
    atomic_int outage;
    atomic_bool forbid;
    atomic_bool echo_auth;   /* 403 quoting the Authorization header */
    double error_rate;       /* under lock */
    double error_acc;        /* error_rate summed per request */
    unsigned long error_seq; /* injected errors: odd 500, even 503 */
    unsigned long dropped;   /* requests dropped by outage "drop" */
    unsigned long total;     /* main-port requests */
    json_t *requests;        /* "METHOD pattern" -> count */
    json_t *statuses;        /* "200" -> count */
};

struct request {
    struct fmsim_http *h;
    struct MHD_Connection *conn;
    bool admin;         /* on the admin port */
    const char *method; /* borrowed from libmicrohttpd */
    const char *url;    /* path, without the query */
    enum route_id route;
    const char *arg; /* path parameter (jobID, mcastID), in url */
    char *body;      /* NUL-terminated */
    size_t body_len;
    size_t body_cap;
    bool too_big;     /* body over BODY_MAX: answer 413 */
    size_t discarded; /* bytes of a refused body read */
    bool responded;
    int status;
    const char *www_auth;    /* WWW-Authenticate of a 401 */
    const char *oauth_error; /* "error" of an OAuth error reply */
    bool empty;              /* reply without a body */
    int64_t start_ns;
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

/* Compare secrets without stopping at the first difference. */
static bool secret_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    volatile unsigned char d = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

static enum route_id route_match(const char *url, bool admin, const char **argp)
{
    static const char jobs[] = "/fabric/collectives/jobs";
    static const char mcasts[] = "/fabric/collectives/multicasts";
    size_t n;

    *argp = NULL;
    if (admin) {
        if (strcmp(url, "/fmsim/state") == 0)
            return R_STATE;
        if (strcmp(url, "/fmsim/faults") == 0)
            return R_FAULTS;
        return R_UNKNOWN;
    }
    if (strcmp(url, "/oauth/token") == 0)
        return R_TOKEN;
    n = sizeof(jobs) - 1;
    if (strncmp(url, jobs, n) == 0) {
        if (url[n] == '\0' || (url[n] == '/' && url[n + 1] == '\0'))
            return R_JOBS;
        if (url[n] == '/') {
            *argp = url + n + 1;
            return R_JOB;
        }
    }
    n = sizeof(mcasts) - 1;
    if (strncmp(url, mcasts, n) == 0) {
        if (url[n] == '\0' || (url[n] == '/' && url[n + 1] == '\0'))
            return R_MCASTS;
        if (url[n] == '/') {
            *argp = url + n + 1;
            return R_MCAST;
        }
    }
    return R_UNKNOWN;
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
static void count_request(struct fmsim_http *h, const struct request *req)
{
    static const char *const known[] = {
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
    const char *method = "OTHER";
    char key[96];

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(req->method, known[i]) == 0)
            method = known[i];
    }
    snprintf(key, sizeof(key), "%s %s", method, routes[req->route].pattern);
    pthread_mutex_lock(&h->lock);
    h->total++;
    counter_add(h->requests, key);
    pthread_mutex_unlock(&h->lock);
}

/* Queue a reply.  Takes ownership of body (malloc'd; NULL when len is 0). */
static enum MHD_Result send_reply(
    struct request *req, int status, char *body, size_t len, const char *allow)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_buffer(
        len, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    if (body)
        MHD_add_response_header(
            resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (status == 401 && req->www_auth)
        MHD_add_response_header(
            resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, req->www_auth);
    if (status == 503)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    ret = MHD_queue_response(req->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    req->status = status;
    req->responded = true;
    if (!req->admin) {
        char key[16];
        snprintf(key, sizeof(key), "%d", status);
        pthread_mutex_lock(&req->h->lock);
        counter_add(req->h->statuses, key);
        pthread_mutex_unlock(&req->h->lock);
    }
    return ret;
}

/* Render a JSON value as the reply.  Steals val. */
static enum MHD_Result send_json(struct request *req,
                                 int status,
                                 json_t *val,
                                 const char *allow)
{
    char *body = val ? json_dumps(val, JSON_COMPACT) : NULL;
    json_decref(val);
    if (!body)
        return MHD_NO;
    size_t len = strlen(body);
    char *nl = realloc(body, len + 2);
    if (nl) {
        body = nl;
        body[len++] = '\n';
        body[len] = '\0';
    }
    return send_reply(req, status, body, len, allow);
}

/* An error reply: {"message", "detail"} and, from the token endpoint,
 * OAuth's "error".
 */
static enum MHD_Result send_error(struct request *req,
                                  int status,
                                  const char *text,
                                  const char *allow)
{
    json_t *err = json_pack("{s:s, s:s}", "message", text, "detail", text);
    if (err && req->oauth_error)
        json_object_set_new(err, "error", json_string(req->oauth_error));
    return send_json(req, status, err, allow);
}

/* The request body as a JSON object (EPROTO when it is not one). */
static int request_json(struct request *req, json_t **objp, vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *obj;

    errno = EPROTO;
    if (!req->body || req->body_len == 0)
        return errprintf(errp, "a JSON object is required as the body");
    obj = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return errprintf(errp,
                         "invalid JSON at line %d, column %d: %s",
                         jerr.line,
                         jerr.column,
                         jerr.text);
    if (!json_is_object(obj)) {
        json_decref(obj);
        errno = EPROTO;
        return errprintf(errp, "the body must be a JSON object");
    }
    *objp = obj;
    return 0;
}

/* The bearer token of the request, or NULL. */
static const char *request_bearer(const struct request *req)
{
    const char *hdr = MHD_lookup_connection_value(
        req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
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
static bool basic_matches(struct request *req,
                          const char *user,
                          const char *secret)
{
    char *pass = NULL;
    char *name = MHD_basic_auth_get_username_password(req->conn, &pass);
    bool ok =
        name && pass && secret_equal(name, user) && secret_equal(pass, secret);
    if (pass) {
        vnib_memburn(pass, strlen(pass));
        MHD_free(pass);
    }
    if (name)
        MHD_free(name);
    return ok;
}

/* WLM authentication for the jobs endpoints: 0, or -1 with EACCES. */
static int wlm_authenticate(struct request *req, vnib_error_t *errp)
{
    const struct fmsim_http_config *cfg = &req->h->cfg;
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
            if (token && fmsim_state_access_valid(req->h->state, token))
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
static int session_authenticate(struct request *req,
                                const char **tokenp,
                                vnib_error_t *errp)
{
    const char *token = request_bearer(req);
    if (!token || !fmsim_state_session_valid(req->h->state, token)) {
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

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
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
            int hi = hexval(src[i + 1]), lo = hexval(src[i + 2]);
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

static void secret_free(char *s)
{
    if (s) {
        vnib_memburn(s, strlen(s));
        free(s);
    }
}

/* POST /oauth/token: client credentials grant (RFC 6749 section 4.4),
 * with the client's id and secret in the form or in HTTP Basic.
 */
static int h_token(struct request *req, json_t **outp, vnib_error_t *errp)
{
    const struct fmsim_http_config *cfg = &req->h->cfg;
    const char *body = req->body ? req->body : "";
    char *grant = NULL, *id = NULL, *secret = NULL, *scope = NULL;
    char token[TOKEN_SIZE] = "";
    int rc = -1;

    if (cfg->auth != FMSIM_AUTH_OAUTH) {
        errno = ENOENT;
        errprintf(errp, "no token endpoint: fmsim runs without --auth oauth");
        goto done;
    }
    if (form_field(body, req->body_len, "grant_type", &grant) < 0
        || form_field(body, req->body_len, "client_id", &id) < 0
        || form_field(body, req->body_len, "client_secret", &secret) < 0
        || form_field(body, req->body_len, "scope", &scope) < 0) {
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
            req->h->state, cfg->token_ttl_s, token, sizeof(token), errp)
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

static int h_jobs_list(struct request *req, json_t **outp, vnib_error_t *errp)
{
    if (!(*outp = fmsim_state_job_list(req->h->state)))
        return errprintf(errp, "out of memory");
    return 200;
}

static int h_job_create(struct request *req, json_t **outp, vnib_error_t *errp)
{
    json_t *body = NULL;
    json_error_t jerr;
    const char *id;
    json_int_t limit;
    int rc = -1;

    if (request_json(req, &body, errp) < 0)
        goto done;
    if (json_unpack_ex(
            body, &jerr, 0, "{s:s, s:I}", "jobID", &id, "mcastLimit", &limit)
        < 0) {
        errno = EINVAL;
        errprintf(errp, "%s", jerr.text);
        goto done;
    }
    if ((*outp = fmsim_state_job_create(req->h->state, id, limit, errp)))
        rc = 201;
done:
    json_decref(body);
    return rc;
}

static int h_job_get(struct request *req, json_t **outp, vnib_error_t *errp)
{
    if (!(*outp = fmsim_state_job_get(req->h->state, req->arg, errp)))
        return -1;
    return 200;
}

static int h_job_patch(struct request *req, json_t **outp, vnib_error_t *errp)
{
    json_t *body = NULL;
    int rc = -1;

    if (request_json(req, &body, errp) < 0)
        goto done;
    *outp = fmsim_state_job_patch(
        req->h->state, req->arg, json_object_get(body, "jobSteps"), errp);
    if (*outp)
        rc = 200;
done:
    json_decref(body);
    return rc;
}

static int h_job_delete(struct request *req, json_t **outp, vnib_error_t *errp)
{
    (void)outp;
    if (fmsim_state_job_delete(req->h->state, req->arg, errp) < 0)
        return -1;
    req->empty = true; /* as the FM may: clients must accept it */
    return 200;
}

static int h_mcast_create(struct request *req,
                          json_t **outp,
                          vnib_error_t *errp)
{
    json_t *body = NULL;
    const char *token;
    int rc = -1;

    if (session_authenticate(req, &token, errp) < 0
        || request_json(req, &body, errp) < 0)
        goto done;
    if ((*outp = fmsim_state_mcast_create(req->h->state, token, body, errp)))
        rc = 200;
done:
    json_decref(body);
    return rc;
}

static int h_mcast_delete(struct request *req,
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
    if (fmsim_state_mcast_delete(req->h->state, token, id, errp) < 0)
        return -1;
    if (!(*outp = json_pack(
              "{s:I, s:s}", "mcastID", (json_int_t)id, "message", "OK")))
        return errprintf(errp, "out of memory");
    return 200;
}

static json_t *faults_json(struct fmsim_http *h)
{
    pthread_mutex_lock(&h->lock);
    double rate = h->error_rate;
    pthread_mutex_unlock(&h->lock);
    return json_pack("{s:I, s:f, s:s, s:b, s:b}",
                     "latency_ms",
                     (json_int_t)atomic_load(&h->latency_ms),
                     "error_rate",
                     rate,
                     "outage",
                     outage_names[atomic_load(&h->outage)],
                     "forbid",
                     atomic_load(&h->forbid) ? 1 : 0,
                     "echo_auth",
                     atomic_load(&h->echo_auth) ? 1 : 0);
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

static int h_state(struct request *req, json_t **outp, vnib_error_t *errp)
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

static int h_faults_get(struct request *req, json_t **outp, vnib_error_t *errp)
{
    if (!(*outp = faults_json(req->h))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return 200;
}

static struct MHD_Daemon *main_start(struct fmsim_http *h);

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
        MHD_stop_daemon(h->main);
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
static int h_faults_post(struct request *req, json_t **outp, vnib_error_t *errp)
{
    struct fmsim_http *h = req->h;
    json_t *body = NULL, *latency = NULL, *rate = NULL, *outage = NULL;
    json_t *expire = NULL, *forbid = NULL, *forget = NULL, *add = NULL;
    json_t *echo = NULL;
    const char *add_id = NULL;
    json_int_t add_limit = 0;
    enum fmsim_outage new_outage = FMSIM_OUTAGE_NONE;
    json_error_t jerr;
    int rc = -1;

    if (request_json(req, &body, errp) < 0)
        goto done;
    errno = EINVAL;
    if (json_unpack_ex(body,
                       &jerr,
                       JSON_STRICT,
                       "{s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o}",
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
                  "%s, echo_auth %s%s%s%s",
                  atomic_load(&h->latency_ms),
                  now_rate,
                  outage_names[atomic_load(&h->outage)],
                  atomic_load(&h->forbid) ? "on" : "off",
                  atomic_load(&h->echo_auth) ? "on" : "off",
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

typedef int (*handler_f)(struct request *req,
                         json_t **outp,
                         vnib_error_t *errp);

static handler_f handler_for(enum route_id route, const char *method)
{
    bool get = strcmp(method, "GET") == 0;
    bool post = strcmp(method, "POST") == 0;

    switch (route) {
        case R_TOKEN:
            return post ? h_token : NULL;
        case R_JOBS:
            return get ? h_jobs_list : post ? h_job_create : NULL;
        case R_JOB:
            if (get)
                return h_job_get;
            if (strcmp(method, "PATCH") == 0)
                return h_job_patch;
            if (strcmp(method, "DELETE") == 0)
                return h_job_delete;
            return NULL;
        case R_MCASTS:
            return post ? h_mcast_create : NULL;
        case R_MCAST:
            return strcmp(method, "DELETE") == 0 ? h_mcast_delete : NULL;
        case R_STATE:
            return get ? h_state : NULL;
        case R_FAULTS:
            return get ? h_faults_get : post ? h_faults_post : NULL;
        case R_UNKNOWN:
            break;
    }
    return NULL;
}

static int errno_status(int errnum)
{
    for (size_t i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++) {
        if (error_map[i].errnum == errnum)
            return error_map[i].status;
    }
    return 500;
}

/* The last call of a request: route, authenticate, run the handler. */
static enum MHD_Result dispatch(struct request *req)
{
    const struct route *route = &routes[req->route];
    vnib_error_t error = {""};
    json_t *out = NULL;

    if (req->route == R_UNKNOWN)
        return send_error(req, 404, "no such endpoint", NULL);
    handler_f handler = handler_for(req->route, req->method);
    if (!handler)
        return send_error(
            req, 405, "method not allowed on this path", route->methods);
    if (route->wlm) {
        if (wlm_authenticate(req, &error) < 0)
            return send_error(req, 401, error.text, NULL);
        if (atomic_load(&req->h->forbid))
            return send_error(req,
                              403,
                              "forbidden: this client's role may not use the "
                              "collectives API (fault injected)",
                              NULL);
        if (atomic_load(&req->h->echo_auth)) {
            /* What a careless FM or proxy does: quote the request. */
            const char *hdr = MHD_lookup_connection_value(
                req->conn, MHD_HEADER_KIND, "Authorization");
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
        return send_reply(req, status, NULL, 0, NULL);
    }
    return send_json(req, status, out ? out : json_object(), NULL);
}

/* Injected latency: sleep until latency_ms after the request began,
 * reading the setting again each slice, so lowering it releases waiting
 * requests.  False when the daemon is stopping.
 */
static bool delay(struct request *req)
{
    struct fmsim_http *h = req->h;

    for (;;) {
        if (atomic_load(&h->stopping))
            return false;
        int64_t left = req->start_ns
                       + (int64_t)atomic_load(&h->latency_ms) * 1000000
                       - mono_ns();
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

/* First call for a request: allocate, count, apply the faults, check the
 * announced body size.
 */
static enum MHD_Result request_begin(struct fmsim_http *h,
                                     bool admin,
                                     struct MHD_Connection *conn,
                                     const char *url,
                                     const char *method,
                                     void **req_cls)
{
    struct request *req = calloc(1, sizeof(*req));

    if (!req)
        return MHD_NO;
    req->h = h;
    req->conn = conn;
    req->admin = admin;
    req->method = method;
    req->url = url;
    req->start_ns = mono_ns();
    req->route = route_match(url, admin, &req->arg);
    *req_cls = req;

    if (!admin) {
        count_request(h, req);
        if (atomic_load(&h->outage) == FMSIM_OUTAGE_DROP) {
            pthread_mutex_lock(&h->lock);
            h->dropped++;
            pthread_mutex_unlock(&h->lock);
            return MHD_NO; /* close without a reply */
        }
        if (!delay(req))
            return MHD_NO;
        int status = inject_error(h);
        if (status)
            return send_error(req,
                              status,
                              status == 500
                                  ? "injected fault: internal server error"
                                  : "injected fault: service unavailable",
                              NULL);
    }

    const char *clen = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (clen) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(clen, &end, 10);
        if (errno || *end || n > BODY_MAX)
            return send_error(
                req, 413, "request body is larger than 64 KiB", NULL);
    }
    return MHD_YES;
}

static int body_append(struct request *req, const char *data, size_t len)
{
    if (len > BODY_MAX || req->body_len > BODY_MAX - len) {
        errno = E2BIG;
        return -1;
    }
    if (req->body_len + len + 1 > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap : 1024;
        while (cap < req->body_len + len + 1)
            cap *= 2;
        char *nb = realloc(req->body, cap);
        if (!nb)
            return -1;
        req->body = nb;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, len);
    req->body_len += len;
    req->body[req->body_len] = '\0';
    return 0;
}

static enum MHD_Result on_request(struct fmsim_http *h,
                                  bool admin,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **req_cls)
{
    struct request *req = *req_cls;

    if (!req)
        return request_begin(h, admin, conn, url, method, req_cls);
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->responded || req->too_big) {
            /* Read and drop the rest of a refused body, within reason. */
            req->discarded += n;
            return req->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
        }
        if (body_append(req, upload_data, n) < 0) {
            if (errno != E2BIG)
                return MHD_NO;
            req->too_big = true;
        }
        return MHD_YES;
    }
    if (req->responded)
        return MHD_YES;
    if (req->too_big)
        return send_error(req, 413, "request body is larger than 64 KiB", NULL);
    return dispatch(req);
}

static enum MHD_Result on_main_request(void *cls,
                                       struct MHD_Connection *conn,
                                       const char *url,
                                       const char *method,
                                       const char *version,
                                       const char *upload_data,
                                       size_t *upload_data_size,
                                       void **req_cls)
{
    (void)version;
    return on_request(
        cls, false, conn, url, method, upload_data, upload_data_size, req_cls);
}

static enum MHD_Result on_admin_request(void *cls,
                                        struct MHD_Connection *conn,
                                        const char *url,
                                        const char *method,
                                        const char *version,
                                        const char *upload_data,
                                        size_t *upload_data_size,
                                        void **req_cls)
{
    (void)version;
    return on_request(
        cls, true, conn, url, method, upload_data, upload_data_size, req_cls);
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct fmsim_http *h = cls;
    struct request *req = *req_cls;

    (void)conn;
    if (!req)
        return;
    double ms = (double)(mono_ns() - req->start_ns) / 1e6;
    int level = req->admin ? LOG_DEBUG : LOG_INFO;
    if (req->status >= 500 && req->status != 507) /* 507: the FM is full */
        level = LOG_WARNING;
    if (req->status > 0)
        logger_printf(h->log,
                      level,
                      NULL,
                      "%s%s %s %d %.1fms",
                      req->admin ? "admin: " : "",
                      req->method,
                      req->url,
                      req->status,
                      ms);
    else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        logger_printf(h->log,
                      level,
                      NULL,
                      "%s%s %s: closed without a reply",
                      req->admin ? "admin: " : "",
                      req->method,
                      req->url);
    free(req->body);
    free(req);
    *req_cls = NULL;
}

/* libmicrohttpd's own diagnostics into our log (a vprintf-style
 * callback: the format and its arguments come from libmicrohttpd). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct fmsim_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    logger_printf(h->log, LOG_INFO, NULL, "http: %s", msg);
}

/* Start the main daemon, on h->port once it is known. */
static struct MHD_Daemon *main_start(struct fmsim_http *h)
{
    struct sockaddr_in sa = h->cfg.listen;
    bool tls = h->cfg.tls_cert != NULL;
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION
                         | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO
                         | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, h->cfg.tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->cfg.tls_key},
        {MHD_OPTION_END, 0, NULL},
    };

    if (h->port)
        sa.sin_port = htons(h->port);
    if (tls)
        flags |= MHD_USE_TLS;
    return MHD_start_daemon(flags,
                            0,
                            NULL,
                            NULL,
                            on_main_request,
                            h,
                            MHD_OPTION_EXTERNAL_LOGGER,
                            on_mhd_log,
                            h,
                            MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned int)256,
                            MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned int)60,
                            MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed,
                            h,
                            MHD_OPTION_ARRAY,
                            tls ? tls_opts : tls_opts + 2,
                            MHD_OPTION_END);
}

static uint16_t daemon_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
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
    h->port = daemon_port(h->main);
    if (cfg->faults.outage == FMSIM_OUTAGE_REFUSE) {
        atomic_store(&h->stopping, 1);
        MHD_stop_daemon(h->main);
        h->main = NULL;
        atomic_store(&h->stopping, 0);
    }

    h->admin = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO
                                    | MHD_USE_ITC | MHD_USE_ERROR_LOG,
                                0,
                                NULL,
                                NULL,
                                on_admin_request,
                                h,
                                MHD_OPTION_EXTERNAL_LOGGER,
                                on_mhd_log,
                                h,
                                MHD_OPTION_SOCK_ADDR,
                                (struct sockaddr *)&admin,
                                MHD_OPTION_CONNECTION_LIMIT,
                                (unsigned int)64,
                                MHD_OPTION_CONNECTION_TIMEOUT,
                                (unsigned int)30,
                                MHD_OPTION_NOTIFY_COMPLETED,
                                on_completed,
                                h,
                                MHD_OPTION_END);
    if (!h->admin) {
        inet_ntop(AF_INET, &cfg->admin.sin_addr, addr, sizeof(addr));
        errprintf(errp,
                  "cannot listen on %s port %u for the admin API",
                  addr,
                  (unsigned)ntohs(cfg->admin.sin_port));
        goto error;
    }
    h->admin_port = daemon_port(h->admin);
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
        if (h->admin)
            MHD_stop_daemon(h->admin);
        pthread_mutex_lock(&h->ctl);
        if (h->main) {
            atomic_store(&h->stopping, 1);
            MHD_stop_daemon(h->main);
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
