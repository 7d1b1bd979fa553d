/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's two listeners: the Fabric Manager API and the admin API.
 *
 * The main port serves the FM collectives API (see fmsim_state.h for the
 * model) behind the WLM authentication chosen at start (none, HTTP Basic,
 * or OAuth2 client credentials with a token endpoint at /oauth/token), and
 * behind the injected faults: added latency, a fraction of requests
 * answered 500 or 503, an outage (the port refuses connections, or accepts
 * and closes them without a reply), 403 for every WLM call, and an HTML
 * error page for every request (what a proxy before a down FM answers).
 *
 * The admin port, loopback only and without authentication, is a separate
 * libmicrohttpd daemon with its own thread, so it keeps answering while
 * the main port is slow or down:
 *
 *   GET  /fmsim/state    jobs (with tokens), trees, addresses, faults and
 *                        request counters
 *   GET  /fmsim/faults   the fault settings
 *   POST /fmsim/faults   change them: any of {"latency_ms": N, "error_rate":
 *                        F, "outage": "none"|"refuse"|"drop", "forbid": B,
 *                        "echo_auth": B (403s that quote the request's
 *                        Authorization header), "html_status": N (400..599:
 *                        every main-port request gets an HTML page of that
 *                        status quoting its Authorization header beside the
 *                        marker "fmsim-html-error-page"; 0: off),
 *                        "expire_tokens": true, "forget_job": "id",
 *                        "add_job": {"jobID": "id", "mcastLimit": N}};
 *                        answers with the new settings
 */
#ifndef FMSIM_HTTP_H
#define FMSIM_HTTP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "vnib/error.h"
#include "vnib/logger.h"
#include "fmsim/fmsim_state.h"

enum fmsim_auth {
    FMSIM_AUTH_NONE,
    FMSIM_AUTH_BASIC,
    FMSIM_AUTH_OAUTH,
};

enum fmsim_outage {
    FMSIM_OUTAGE_NONE,
    FMSIM_OUTAGE_REFUSE, /* main port closed: connections refused */
    FMSIM_OUTAGE_DROP,   /* connections accepted, closed without a reply */
};

/* Longest injected latency, in milliseconds. */
#define FMSIM_LATENCY_MAX_MS 600000L

struct fmsim_faults {
    long latency_ms;          /* added to each main-port request */
    double error_rate;        /* 0..1: share answered 500, 503, 500, ... */
    enum fmsim_outage outage; /* see above */
    bool forbid;              /* 403 for every WLM call */
};

/* Strings are borrowed and must outlive the fmsim_http (the TLS ones too:
 * the main port is started again after a "refuse" outage).
 */
struct fmsim_http_config {
    struct sockaddr_in listen;  /* main port (0: any free port) */
    struct sockaddr_in admin;   /* admin port, a loopback address */
    char *tls_cert;             /* PEM in memory: HTTPS on the main port */
    char *tls_key;              /* PEM in memory */
    enum fmsim_auth auth;       /* for the WLM (jobs) endpoints */
    const char *user;           /* basic */
    const char *password;       /* basic */
    const char *client_id;      /* oauth */
    const char *client_secret;  /* oauth */
    long token_ttl_s;           /* oauth: access token lifetime */
    struct fmsim_faults faults; /* in force at start */
};

struct fmsim_http;

/* Start both listeners (with outage "refuse" the main port is bound, to
 * learn its number, and closed again).  Returns NULL with errp set.
 */
struct fmsim_http *fmsim_http_create(const struct fmsim_http_config *cfg,
                                     struct fmsim_state *state,
                                     struct logger *log,
                                     vnib_error_t *errp) VNIB_MUST_CHECK;

/* Stop both listeners, ending injected delays early (NULL accepted). */
void fmsim_http_destroy(struct fmsim_http *h);

/* The bound ports. */
uint16_t fmsim_http_port(const struct fmsim_http *h);
uint16_t fmsim_http_admin_port(const struct fmsim_http *h);

/* "none", "refuse", "drop" to the enum: 0, or -1 with EINVAL. */
int fmsim_outage_parse(const char *name, enum fmsim_outage *outagep);

#endif /* !FMSIM_HTTP_H */
