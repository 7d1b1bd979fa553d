/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's Fabric Manager API: routes, WLM and session authentication, and
 * the handlers of the token, jobs and multicast endpoints.
 *
 * fmsim_http.c runs the listeners and the faults; for each request it
 * matches the route here (fmsim_api_route), authenticates the WLM routes
 * (fmsim_api_wlm_authenticate) and calls the handler that
 * fmsim_api_handler names.  A handler returns an HTTP status with *outp
 * the JSON reply, or -1 with errno (mapped to a status by fmsim_http.c)
 * and a message in errp.
 */
#ifndef FMSIM_API_H
#define FMSIM_API_H

#include <stdbool.h>

#include <jansson.h>

#include "vnib/error.h"
#include "vnib/httpd.h"
#include "fmsim/fmsim_http.h"
#include "fmsim/fmsim_state.h"

enum fmsim_route {
    FMSIM_R_UNKNOWN,
    FMSIM_R_TOKEN,
    FMSIM_R_JOBS,
    FMSIM_R_JOB,
    FMSIM_R_MCASTS,
    FMSIM_R_MCAST,
    FMSIM_R_STATE,
    FMSIM_R_FAULTS,
};

struct fmsim_route_info {
    const char *pattern; /* for counters and the log */
    const char *methods; /* allowed, as the Allow header lists them */
    bool wlm;            /* behind the WLM authentication and "forbid" */
};

/* One request on either port. */
struct fmsim_req {
    struct httpd_req *hr;
    struct fmsim_http *h;
    const struct fmsim_http_config *cfg;
    struct fmsim_state *state;
    bool admin; /* on the admin port */
    enum fmsim_route route;
    const char *arg;         /* path parameter (jobID, mcastID), in url */
    const char *www_auth;    /* WWW-Authenticate of a 401 */
    const char *oauth_error; /* "error" of an OAuth error reply */
    bool empty;              /* reply without a body */
};

typedef int (*fmsim_handler_f)(struct fmsim_req *req,
                               json_t **outp,
                               vnib_error_t *errp);

/* The route of url on the admin or the main port, with its path
 * parameter in *argp (or NULL).
 */
enum fmsim_route fmsim_api_route(const char *url,
                                 bool admin,
                                 const char **argp);

/* The route's row: pattern, allowed methods, WLM authentication. */
const struct fmsim_route_info *fmsim_api_route_info(enum fmsim_route route);

/* The handler of an FM API route (not the admin ones) for method, or
 * NULL.
 */
fmsim_handler_f fmsim_api_handler(enum fmsim_route route, const char *method);

/* WLM authentication for the jobs endpoints: 0, or -1 with EACCES (and
 * req->www_auth set).
 */
int fmsim_api_wlm_authenticate(struct fmsim_req *req, vnib_error_t *errp);

/* The request body as a JSON object (EPROTO when it is not one). */
int fmsim_api_body_json(struct fmsim_req *req,
                        json_t **objp,
                        vnib_error_t *errp);

#endif /* !FMSIM_API_H */
