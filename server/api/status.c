/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GET /v1/status: the pool, its recent history, the quarantine, the
 * drained nodes, the Fabric Manager and the database, in one reply.
 *
 * The parts come from the code that answers their own routes (the pool
 * and Fabric Manager objects are GET /v1/pool's and GET
 * /v1/fabric-manager's), the history from the gauges thread's ring, and
 * the quarantine and drain lists from LIMITed set-based reads.  A status
 * page polls every few seconds from every open browser, so a reply is
 * kept for GAUGES_CACHE_MS per role and query: fifty browsers cost one
 * set of queries a second, not fifty.
 */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "server/http/auth.h"
#include "server/api/fabric.h"
#include "server/bg/gauges.h"
#include "server/bg/history.h"
#include "server/http/http.h"
#include "server/http/params.h"
#include "server/api/pool.h"
#include "server/api/status.h"
#include "server/store/store_status.h"
#include "vnib/version.h"

/* The query, validated. */
struct status_query {
    long long history_s, quarantine_limit, drained_limit;
};

static json_t *now_rfc3339(void)
{
    char buf[HISTORY_TIME_LEN];

    history_time(time(NULL), buf, sizeof(buf));
    return json_string(buf);
}

/* {"reservations", "vnis", "oldest_since", "items"} */
static int quarantine(struct request *req,
                      const struct store_status_figures *f,
                      int limit,
                      json_t **out,
                      vnib_error_t *errp)
{
    json_t *items = NULL;

    if (store_quarantine_items(req->broker->store, limit, &items, errp) < 0)
        return -1;
    *out = json_pack(
        "{s:I, s:I, s:o, s:o}",
        "reservations",
        (json_int_t)f->quarantine_reservations,
        "vnis",
        (json_int_t)f->quarantine_vnis,
        "oldest_since",
        f->oldest_since[0] ? json_string(f->oldest_since) : json_null(),
        "items",
        items);
    if (!*out)
        return errprintf(errp, "out of memory");
    return 0;
}

/* This replica, as fm_leader names replicas: host:pid. */
static json_t *replica(void)
{
    char host[256] = "localhost", buf[300];

    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(buf, sizeof(buf), "%s:%ld", host, (long)getpid());
    return json_string(buf);
}

static json_t *database(struct request *req)
{
    bool up;
    double age;

    gauges_database(req->broker->gauges, &up, &age);
    return json_pack("{s:b, s:o}",
                     "up",
                     (int)up,
                     "figures_age_s",
                     age < 0 ? json_null() : json_real(age));
}

/* Read everything afresh into *out. */
static int build(struct request *req,
                 const struct status_query *q,
                 json_t **out,
                 vnib_error_t *errp)
{
    struct store_status_figures f;
    json_t *pool = NULL, *quar = NULL, *drained = NULL, *fm = NULL;
    int rc = -1;

    if (pool_object(req, &pool, errp) < 0
        || store_status_figures(req->broker->store, &f, errp) < 0
        || quarantine(req, &f, (int)q->quarantine_limit, &quar, errp) < 0
        || store_drained(
               req->broker->store, (int)q->drained_limit, &drained, errp)
               < 0
        || fabric_object(req, &fm, errp) < 0)
        goto cleanup;
    *out = json_pack("{s:o, s:o, s:s, s:O, s:o, s:O, s:O, s:O, s:o}",
                     "time",
                     now_rfc3339(),
                     "replica",
                     replica(),
                     "version",
                     VNIB_VERSION,
                     "pool",
                     pool,
                     "history",
                     gauges_history(req->broker->gauges, (int)q->history_s),
                     "quarantine",
                     quar,
                     "drained",
                     drained,
                     "fabric_manager",
                     fm,
                     "database",
                     database(req));
    if (!*out) {
        errprintf(errp, "out of memory");
        goto cleanup;
    }
    rc = 0;
cleanup:
    json_decref(pool);
    json_decref(quar);
    json_decref(drained);
    json_decref(fm);
    return rc;
}

int status_get(struct request *req, json_t **out, vnib_error_t *errp)
{
    struct status_query q = {3600, 50, 100};
    char key[GAUGES_CACHE_KEY];

    if (params_query_ll(req, "history_s", 60, 86400, &q.history_s, errp) < 0
        || params_query_ll(
               req, "quarantine_limit", 1, 1000, &q.quarantine_limit, errp)
               < 0
        || params_query_ll(
               req, "drained_limit", 1, 1000, &q.drained_limit, errp)
               < 0)
        return -1;
    /* The fabric_manager object differs by role (admins see the FM's
     * error text): one entry per role and query.
     */
    snprintf(key,
             sizeof(key),
             "%s/%lld/%lld/%lld",
             auth_role_name(req->who.role),
             q.history_s,
             q.quarantine_limit,
             q.drained_limit);
    if ((*out = gauges_cache_get(req->broker->gauges, key)))
        return 200;
    if (build(req, &q, out, errp) < 0)
        return -1;
    gauges_cache_put(req->broker->gauges, key, *out);
    return 200;
}
