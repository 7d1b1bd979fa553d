/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Leases handed out with a reserve (see leases.h): the "lease" field of a
 * reserve's body, the payload a lease signs, and its signature.
 *
 * The payload is made from the reserve's reply, which its caller (a
 * scheduler, an admin, a job token) may see whole, by taking out what a
 * lease must never carry: a lease travels where the job's owner may read
 * it (Slurm's switch data, a Flux job's eventlog), so no session token,
 * and nothing a node's GET of the reservation would not show.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/lease.h"
#include "server/config.h"
#include "server/http/http.h"
#include "server/api/leases.h"

int leases_ask(struct request *req,
               json_t *body,
               struct leases_ask *ask,
               vnib_error_t *errp)
{
    const struct config *cfg = req->broker->cfg;
    json_t *v = json_object_get(body, "lease");

    memset(ask, 0, sizeof(*ask));
    if (v && !json_is_boolean(v))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "lease must be true or false");
    if (!json_is_true(v))
        return 0;
    if (!req->broker->lease)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_LEASE_DISABLED,
                            errp,
                            "this broker signs no leases: set lease.key_file "
                            "(deploy/README.md, section 2.4)");
    ask->want = true;
    ask->now = time(NULL);
    ask->until = (long long)ask->now + cfg->lease.ttl_s;
    ask->skew_s = cfg->lease.max_skew_s;
    return 0;
}

/* Whether an environment variable is one of the hardware collectives'
 * (the node fetches them when the lease says hwcoll_fetch).
 */
static bool hwcoll_variable(const char *name)
{
    return !strncmp(name, "FI_CXI_COLL_", 12)
           || !strncmp(name, "FI_CXI_HWCOLL_", 14);
}

/* Delete the members of o for which drop(name) is true. */
static void delete_if(json_t *o, bool (*drop)(const char *))
{
    const char *key;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(o, tmp, key, v)
    {
        if (drop(key))
            json_object_del(o, key);
    }
}

/* A member of "hwcoll" that holds a token (session_token, or any other
 * *token a later version adds): never in a lease.
 */
static bool token_member(const char *name)
{
    size_t n = strlen(name);
    return n >= 5 && !strcmp(name + n - 5, "token");
}

static bool mcast_token(const char *name)
{
    return !strcmp(name, "FI_CXI_COLL_MCAST_TOKEN");
}

json_t *leases_payload(const json_t *res)
{
    json_t *p = json_deep_copy(res);
    json_t *hw, *env;
    const char *state;
    bool fetch;

    if (!p)
        goto nomem;
    /* A node's GET has no cleanup counts (costly at scale, and of no use
     * to a node), and the job token is the step manager's alone.
     */
    json_object_del(p, "cleanup");
    json_object_del(p, "job_token");
    json_object_del(p, "lease");
    hw = json_object_get(p, "hwcoll");
    env = json_object_get(p, "environment");
    state = json_string_value(json_object_get(hw, "state"));
    fetch = state && (!strcmp(state, "pending") || !strcmp(state, "reserved"));
    if (json_is_object(hw))
        delete_if(hw, token_member);
    if (json_is_object(env))
        delete_if(env, fetch ? hwcoll_variable : mcast_token);
    if (json_object_set_new(p, "hwcoll_fetch", json_boolean(fetch)) < 0)
        goto nomem;
    return p;
nomem:
    json_decref(p);
    errno = ENOMEM;
    return NULL;
}

int leases_add(struct request *req,
               json_t *res,
               const struct leases_ask *ask,
               vnib_error_t *errp)
{
    json_t *payload = NULL;
    char *lease = NULL;
    int rc = -1;

    if (!ask->want)
        return 0;
    if (!(payload = leases_payload(res))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    if (lease_sign(req->broker->lease,
                   payload,
                   ask->now,
                   req->broker->cfg->lease.ttl_s,
                   &lease,
                   errp)
        < 0)
        goto done;
    if (json_object_set_new(res, "lease", json_string(lease)) < 0) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 0;
done:
    free(lease);
    json_decref(payload);
    return rc;
}
