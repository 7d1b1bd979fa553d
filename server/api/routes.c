/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The REST API's one route table (see routes.h).
 *
 * Reading this table is the quickest way to learn the API: each row says
 * who may call what, and which handler answers.  server/api/openapi.yaml
 * describes the same rows for clients; a unit test keeps the two in step.
 */
#include "server/http/auth.h"
#include "server/http/route.h"
#include "server/api/events.h"
#include "server/api/fabric.h"
#include "server/api/nodes.h"
#include "server/api/ops.h"
#include "server/api/pool.h"
#include "server/api/reservations.h"
#include "server/api/routes.h"
#include "server/api/search.h"
#include "server/api/status.h"
#include "server/api/steps.h"
#include "server/api/ui.h"

/* Who may call what.  A job token (ROLE_JOB) may call the three routes
 * of its job's steps and nothing else.  Body limits are per route; the
 * server-wide server.max_body_bytes caps them all.  ROUTE_INLINE only for
 * handlers that touch no database, Fabric Manager or lock held across I/O:
 * /healthz answers from constants, /metrics from counters in memory.  The
 * last column, a first try on the libmicrohttpd thread (route.h), for the
 * requests every node of a job makes at once: its fetch, answered from
 * the node-fetch cache, and its reports, handed to their group.
 */
#define ANY_READER (ROLE_ADMIN | ROLE_SCHEDULER | ROLE_MONITOR)
#define KiB 1024
#define MiB (1024 * 1024)

/* clang-format off */
static const struct route rows[] = {
    /* method, pattern, handler, roles, max body, where it runs[, first] */
    { "GET", "/healthz", ops_healthz, ROUTE_PUBLIC, 0, ROUTE_INLINE, NULL },
    { "GET", "/readyz", ops_readyz, ROUTE_PUBLIC, 0, ROUTE_WORKER, NULL },
    { "GET", "/metrics", ops_metrics, ROUTE_PUBLIC, 0, ROUTE_INLINE, NULL },
    { "POST", "/v1/reservations", reservations_create,
      ROLE_ADMIN | ROLE_SCHEDULER, 1 * MiB, ROUTE_WORKER, NULL },
    { "GET", "/v1/reservations", reservations_list, ANY_READER, 0,
      ROUTE_WORKER, NULL },
    { "GET", "/v1/reservations/{job_id}", reservations_get,
      ANY_READER | ROLE_NODE, 0, ROUTE_WORKER, reservations_get_first },
    { "DELETE", "/v1/reservations/{job_id}", reservations_release,
      ROLE_ADMIN | ROLE_SCHEDULER, 0, ROUTE_WORKER, NULL },
    /* ROLE_JOB: a job token, its own job's steps only (steps.c). */
    { "PUT", "/v1/reservations/{job_id}/steps/{step_id}", steps_reserve,
      ROLE_ADMIN | ROLE_SCHEDULER | ROLE_JOB, 1 * MiB, ROUTE_WORKER, NULL },
    { "GET", "/v1/reservations/{job_id}/steps/{step_id}", steps_get,
      ANY_READER | ROLE_NODE | ROLE_JOB, 0, ROUTE_WORKER, steps_get_first },
    { "DELETE", "/v1/reservations/{job_id}/steps/{step_id}", steps_release,
      ROLE_ADMIN | ROLE_SCHEDULER | ROLE_JOB, 0, ROUTE_WORKER, NULL },
    { "PUT", "/v1/reservations/{job_id}/steps/{step_id}/nodes/{node}",
      reservations_report, ROLE_ADMIN | ROLE_NODE, 16 * KiB, ROUTE_WORKER,
      reservations_report_first },
    { "GET", "/v1/reservations/{job_id}/nodes", reservations_nodes,
      ANY_READER, 0, ROUTE_WORKER, NULL },
    { "PUT", "/v1/reservations/{job_id}/nodes/{node}", reservations_report,
      ROLE_ADMIN | ROLE_NODE, 16 * KiB, ROUTE_WORKER,
      reservations_report_first },
    { "GET", "/v1/nodes/{node}", nodes_get, ANY_READER | ROLE_NODE, 0,
      ROUTE_WORKER, NULL },
    { "DELETE", "/v1/nodes/{node}/drain", nodes_undrain, ROLE_ADMIN, 0,
      ROUTE_WORKER, NULL },
    { "GET", "/v1/pool", pool_get, ANY_READER | ROLE_NODE, 0, ROUTE_WORKER,
      NULL },
    { "GET", "/v1/vnis/{vni}", pool_vni, ROLE_ADMIN, 0, ROUTE_WORKER, NULL },
    { "GET", "/v1/events", events_list, ANY_READER, 0, ROUTE_WORKER, NULL },
    { "GET", "/v1/fabric-manager", fabric_get, ANY_READER, 0, ROUTE_WORKER,
      NULL },
    { "GET", "/v1/status", status_get, ANY_READER, 0, ROUTE_WORKER, NULL },
    { "GET", "/v1/search", search_get, ANY_READER, 0, ROUTE_WORKER, NULL },
    { "GET", "/v1/whoami", ops_whoami, ANY_READER | ROLE_NODE, 0,
      ROUTE_INLINE, NULL },
    /* The status page: constant files, public (the page asks for a token
     * and sends it to the API only).
     */
    { "GET", "/", ui_redirect_root, ROUTE_PUBLIC, 0, ROUTE_INLINE, NULL },
    { "GET", "/ui", ui_redirect_dir, ROUTE_PUBLIC, 0, ROUTE_INLINE, NULL },
    { "GET", "/ui/", ui_index, ROUTE_PUBLIC, 0, ROUTE_INLINE, NULL },
    { "GET", "/ui/{asset}", ui_asset, ROUTE_PUBLIC, 0, ROUTE_INLINE, NULL },
};
/* clang-format on */

const struct route_table api_routes = {rows, sizeof(rows) / sizeof(rows[0])};
