/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Liveness, readiness and metrics handlers, and /v1/whoami (see ops.h).
 *
 * /healthz answers without touching the database, so that a slow database
 * never gets a healthy broker restarted.  /readyz asks the database, under
 * the same timeouts as any request, so a load balancer stops sending work
 * to a replica that cannot reach PostgreSQL and resumes when it can.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "server/api/cache.h"
#include "server/bg/gauges.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/hwcoll/hwcoll.h"
#include "server/http/metrics.h"
#include "server/api/ops.h"
#include "server/store/store.h"
#include "server/store/store_migrate.h"
#include "vnib/version.h"

int ops_healthz(struct request *req, json_t **out, vnib_error_t *errp)
{
    (void)req;
    if (!(*out =
              json_pack("{s:s, s:s}", "status", "ok", "version", VNIB_VERSION)))
        return errprintf(errp, "out of memory");
    return 200;
}

int ops_whoami(struct request *req, json_t **out, vnib_error_t *errp)
{
    if (!(*out = json_pack("{s:s, s:s}",
                           "name",
                           req->who.name,
                           "role",
                           auth_role_name(req->who.role))))
        return errprintf(errp, "out of memory");
    return 200;
}

int ops_readyz(struct request *req, json_t **out, vnib_error_t *errp)
{
    vnib_error_t why = {0};
    struct store *store = req->broker->store;

    if (store_check_ready(store, &why) < 0) {
        int e = errno;
        /* Every outcome is 503 for the prober; the code says which.  The
         * probe is public: the reason (libpq's text names the socket, the
         * host, the port, the login) goes to the log under the request
         * id, the reply says only which of the two it is.
         */
        logger_printf(req->broker->log,
                      LOG_WARNING,
                      req->id,
                      "readyz: not ready: %s",
                      why.text);
        if (e == ESTALE)
            return request_fail(req,
                                ESTALE,
                                ERRCODE_SCHEMA_OUTDATED,
                                errp,
                                "not ready: the database schema is not the "
                                "one this broker needs");
        if (e == EDQUOT)
            return request_fail(req,
                                EDQUOT,
                                ERRCODE_DATABASE_FULL,
                                errp,
                                "not ready: the database cannot write (out "
                                "of disk space or another resource)");
        return request_fail(req,
                            EAGAIN,
                            ERRCODE_DATABASE_UNAVAILABLE,
                            errp,
                            "not ready: database unavailable");
    }
    if (!(*out = json_pack("{s:s, s:i}",
                           "status",
                           "ready",
                           "schema_version",
                           store_required_version())))
        return errprintf(errp, "out of memory");
    return 200;
}

int ops_metrics(struct request *req, json_t **out, vnib_error_t *errp)
{
    struct broker *b = req->broker;
    struct store_stats st;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    (void)out;
    if (!(f = open_memstream(&buf, &len)))
        return errprintf(errp, "out of memory");
    metrics_write_http(b->metrics, f);
    fprintf(f,
            "# HELP vnib_http_requests_in_flight Requests being handled now.\n"
            "# TYPE vnib_http_requests_in_flight gauge\n"
            "vnib_http_requests_in_flight %ld\n",
            b->http ? http_inflight(b->http) : 0);
    metrics_write_queue(b->metrics, b->http ? http_queue_depth(b->http) : 0, f);
    if (b->http)
        http_write_metrics(b->http, f);

    if (b->cache)
        cache_write_metrics(b->cache, f);
    if (b->hwcoll)
        hwcoll_write_metrics(b->hwcoll, f);
    if (b->gauges)
        gauges_write_metrics(b->gauges, f);
    store_get_stats(b->store, &st);
    fprintf(
        f,
        "# HELP vnib_db_pool_size Configured database connections.\n"
        "# TYPE vnib_db_pool_size gauge\n"
        "vnib_db_pool_size %u\n"
        "# HELP vnib_db_pool_connections Pool connections by state: busy "
        "(lent to a request), idle (open, not lent).\n"
        "# TYPE vnib_db_pool_connections gauge\n"
        "vnib_db_pool_connections{state=\"busy\"} %u\n"
        "vnib_db_pool_connections{state=\"idle\"} %u\n"
        "# HELP vnib_db_sessions Database sessions open outside the pool "
        "(hwcoll): LISTEN, and the leader's advisory lock.\n"
        "# TYPE vnib_db_sessions gauge\n"
        "vnib_db_sessions{kind=\"listen\"} %u\n"
        "vnib_db_sessions{kind=\"leader\"} %u\n"
        "# HELP vnib_db_pool_acquires_total Connections lent to requests.\n"
        "# TYPE vnib_db_pool_acquires_total counter\n"
        "vnib_db_pool_acquires_total %llu\n"
        "# HELP vnib_db_pool_waits_total Acquires that waited for a free "
        "connection.\n"
        "# TYPE vnib_db_pool_waits_total counter\n"
        "vnib_db_pool_waits_total %llu\n"
        "# HELP vnib_db_pool_acquire_timeouts_total Acquires that gave up.\n"
        "# TYPE vnib_db_pool_acquire_timeouts_total counter\n"
        "vnib_db_pool_acquire_timeouts_total %llu\n"
        "# HELP vnib_db_connects_total Successful database connections.\n"
        "# TYPE vnib_db_connects_total counter\n"
        "vnib_db_connects_total %llu\n"
        "# HELP vnib_db_connect_failures_total Failed connection attempts.\n"
        "# TYPE vnib_db_connect_failures_total counter\n"
        "vnib_db_connect_failures_total %llu\n"
        "# HELP vnib_db_query_timeouts_total Statements cancelled for time.\n"
        "# TYPE vnib_db_query_timeouts_total counter\n"
        "vnib_db_query_timeouts_total %llu\n"
        "# HELP vnib_db_errors_total Statements that failed otherwise.\n"
        "# TYPE vnib_db_errors_total counter\n"
        "vnib_db_errors_total %llu\n",
        st.size,
        st.busy,
        st.idle,
        st.listen_sessions,
        st.leader_sessions,
        (unsigned long long)st.acquires,
        (unsigned long long)st.waits,
        (unsigned long long)st.acquire_timeouts,
        (unsigned long long)st.connects,
        (unsigned long long)st.connect_failures,
        (unsigned long long)st.query_timeouts,
        (unsigned long long)st.errors);
    /* Group commit, per kind of write: reserves, releases, the FM
     * outcomes of reserves with hardware collectives, node reports.
     */
    static const char *const ops[] = {"reserve", "release", "hwcoll", "report"};
    const struct {
        const char *head; /* its HELP and TYPE lines */
        const char *name;
        uint64_t v[4]; /* a figure per op, in the order of ops */
    } families[] = {
        {"# HELP vnib_db_groups_total Transactions of reserves, releases, "
         "FM outcomes or node reports (op), each carrying one or more "
         "requests (group commit).\n"
         "# TYPE vnib_db_groups_total counter\n",
         "vnib_db_groups_total",
         {st.reserves.groups,
          st.releases.groups,
          st.hwsets.groups,
          st.reports.groups}},
        {"# HELP vnib_db_group_requests_total Requests those transactions "
         "carried.\n"
         "# TYPE vnib_db_group_requests_total counter\n",
         "vnib_db_group_requests_total",
         {st.reserves.items,
          st.releases.items,
          st.hwsets.items,
          st.reports.items}},
        {"# HELP vnib_db_group_expired_total Requests whose deadline "
         "(Vnib-Deadline-Ms) passed while they waited for a transaction: "
         "answered 503 deadline_exceeded, never written.\n"
         "# TYPE vnib_db_group_expired_total counter\n",
         "vnib_db_group_expired_total",
         {st.reserves.expired,
          st.releases.expired,
          st.hwsets.expired,
          st.reports.expired}},
        {"# HELP vnib_db_group_largest Most requests one of them carried.\n"
         "# TYPE vnib_db_group_largest gauge\n",
         "vnib_db_group_largest",
         {st.reserves.max, st.releases.max, st.hwsets.max, st.reports.max}},
    };
    for (size_t m = 0; m < sizeof(families) / sizeof(families[0]); m++) {
        fputs(families[m].head, f);
        for (size_t i = 0; i < 4; i++)
            fprintf(f,
                    "%s{op=\"%s\"} %llu\n",
                    families[m].name,
                    ops[i],
                    (unsigned long long)families[m].v[i]);
    }
    fprintf(
        f,
        "# HELP vnib_build_info vnibrokerd version, git revision and schema "
        "version.\n"
        "# TYPE vnib_build_info gauge\n"
        "vnib_build_info{version=\"%s\",revision=\"%s\",schema=\"%d\"} 1\n"
        "# HELP vnib_process_start_time_seconds Start time since the epoch.\n"
        "# TYPE vnib_process_start_time_seconds gauge\n"
        "vnib_process_start_time_seconds %lld\n",
        VNIB_VERSION,
        VNIB_REVISION,
        store_required_version(),
        (long long)b->start_time);
    if (fclose(f) != 0 || !buf) {
        free(buf);
        return errprintf(errp, "out of memory");
    }
    req->text = buf;
    req->text_len = len;
    req->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 200;
}
