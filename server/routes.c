/* The route table and its matcher (see routes.h).
 *
 * Reading this table is the quickest way to learn the API: each row says
 * who may call what, and which handler answers.  server/openapi.yaml
 * describes the same rows for clients; a unit test keeps the two in step.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/events.h"
#include "server/fabric.h"
#include "server/nodes.h"
#include "server/ops.h"
#include "server/pool.h"
#include "server/reservations.h"
#include "server/routes.h"
#include "server/status.h"
#include "server/steps.h"
#include "server/ui.h"

/* Who may call what.  Body limits are per route; the server-wide
 * server.max_body_bytes caps them all.  ROUTE_INLINE only for handlers
 * that touch no database, Fabric Manager or lock held across I/O:
 * /healthz answers from constants, /metrics from counters in memory.
 */
#define ANY_READER (ROLE_ADMIN | ROLE_SCHEDULER | ROLE_MONITOR)
#define KiB 1024
#define MiB (1024 * 1024)

/* clang-format off */
const struct route routes[] = {
    /* method, pattern, handler, roles, max body, where it runs */
    { "GET", "/healthz", ops_healthz, ROUTE_PUBLIC, 0, ROUTE_INLINE },
    { "GET", "/readyz", ops_readyz, ROUTE_PUBLIC, 0, ROUTE_WORKER },
    { "GET", "/metrics", ops_metrics, ROUTE_PUBLIC, 0, ROUTE_INLINE },
    { "POST", "/v1/reservations", reservations_create,
      ROLE_ADMIN | ROLE_SCHEDULER, 1 * MiB, ROUTE_WORKER },
    { "GET", "/v1/reservations", reservations_list, ANY_READER, 0,
      ROUTE_WORKER },
    { "GET", "/v1/reservations/{job_id}", reservations_get,
      ANY_READER | ROLE_NODE, 0, ROUTE_WORKER },
    { "DELETE", "/v1/reservations/{job_id}", reservations_release,
      ROLE_ADMIN | ROLE_SCHEDULER, 0, ROUTE_WORKER },
    { "PUT", "/v1/reservations/{job_id}/steps/{step_id}", steps_reserve,
      ROLE_ADMIN | ROLE_SCHEDULER, 1 * MiB, ROUTE_WORKER },
    { "GET", "/v1/reservations/{job_id}/steps/{step_id}", steps_get,
      ANY_READER | ROLE_NODE, 0, ROUTE_WORKER },
    { "DELETE", "/v1/reservations/{job_id}/steps/{step_id}", steps_release,
      ROLE_ADMIN | ROLE_SCHEDULER, 0, ROUTE_WORKER },
    { "PUT", "/v1/reservations/{job_id}/steps/{step_id}/nodes/{node}",
      reservations_report, ROLE_ADMIN | ROLE_NODE, 16 * KiB, ROUTE_WORKER },
    { "PUT", "/v1/reservations/{job_id}/nodes/{node}", reservations_report,
      ROLE_ADMIN | ROLE_NODE, 16 * KiB, ROUTE_WORKER },
    { "GET", "/v1/nodes/{node}", nodes_get, ROLE_ADMIN | ROLE_NODE, 0,
      ROUTE_WORKER },
    { "DELETE", "/v1/nodes/{node}/drain", nodes_undrain, ROLE_ADMIN, 0,
      ROUTE_WORKER },
    { "GET", "/v1/pool", pool_get, ANY_READER | ROLE_NODE, 0, ROUTE_WORKER },
    { "GET", "/v1/vnis/{vni}", pool_vni, ROLE_ADMIN, 0, ROUTE_WORKER },
    { "GET", "/v1/events", events_list, ANY_READER, 0, ROUTE_WORKER },
    { "GET", "/v1/fabric-manager", fabric_get, ANY_READER, 0, ROUTE_WORKER },
    { "GET", "/v1/status", status_get, ANY_READER, 0, ROUTE_WORKER },
    /* The status page: constant files, public (the page asks for a token
     * and sends it to the API only).
     */
    { "GET", "/", ui_redirect_root, ROUTE_PUBLIC, 0, ROUTE_INLINE },
    { "GET", "/ui", ui_redirect_dir, ROUTE_PUBLIC, 0, ROUTE_INLINE },
    { "GET", "/ui/", ui_index, ROUTE_PUBLIC, 0, ROUTE_INLINE },
    { "GET", "/ui/{asset}", ui_asset, ROUTE_PUBLIC, 0, ROUTE_INLINE },
};
/* clang-format on */

const size_t routes_count = sizeof(routes) / sizeof(routes[0]);

/* Match one path against one pattern, capturing {name} segments. */
static bool match_pattern(const char *pattern,
                          const char *path,
                          struct route_params *p)
{
    size_t used = 0;

    p->count = 0;
    while (*pattern && *path) {
        if (*pattern == '{') {
            const char *close = strchr(pattern, '}');
            size_t seg = strcspn(path, "/");
            if (!close || seg == 0 || p->count == ROUTE_MAX_PARAMS
                || used + seg + 1 > sizeof(p->buf))
                return false;
            p->names[p->count] = pattern + 1;
            p->name_lens[p->count] = (size_t)(close - pattern - 1);
            memcpy(p->buf + used, path, seg);
            p->buf[used + seg] = '\0';
            p->values[p->count++] = p->buf + used;
            used += seg + 1;
            pattern = close + 1;
            path += seg;
            continue;
        }
        if (*pattern++ != *path++)
            return false;
    }
    return *pattern == '\0' && *path == '\0';
}

int routes_match(const char *method,
                 const char *path,
                 struct route_params *params,
                 char *allow,
                 size_t allow_size)
{
    bool path_seen = false;
    size_t alen = 0;

    if (allow_size > 0)
        allow[0] = '\0';
    for (size_t i = 0; i < routes_count; i++) {
        if (!match_pattern(routes[i].pattern, path, params))
            continue;
        if (strcmp(routes[i].method, method) == 0)
            return (int)i;
        path_seen = true;
        int n = snprintf(allow + alen,
                         allow_size - alen,
                         "%s%s",
                         alen ? ", " : "",
                         routes[i].method);
        if (n > 0 && alen + (size_t)n < allow_size)
            alen += (size_t)n;
    }
    params->count = 0;
    errno = path_seen ? EOPNOTSUPP : ENOENT;
    return -1;
}

const char *routes_param(const struct route_params *params, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < params->count; i++)
        if (params->name_lens[i] == len
            && strncmp(params->names[i], name, len) == 0)
            return params->values[i];
    return NULL;
}
