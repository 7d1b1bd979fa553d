/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The in-process broker of the handler tests (see harness.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnib/logger.h"
#include "server/api/cache.h"
#include "server/config.h"
#include "server/http/http.h"
#include "server/hwcoll/hwcoll.h"
#include "server/api/routes.h"
#include "server/store/store.h"
#include "server/store/store_migrate.h"
#include "server/store/store_pool.h"
#include "tests/inproc/harness.h"

/* Query arguments a test request may carry. */
#define HARNESS_MAX_QUERY 8

struct harness {
    struct broker b;
    struct config *cfg;
};

/* Write the configuration to a temporary file, since config_load reads
 * files only, and load it.
 */
static struct config *load_config(const char *conninfo, const char *toml)
{
    char path[] = "/tmp/vnib-inproc-XXXXXX";
    vnib_error_t error = {0};
    struct config *cfg = NULL;
    FILE *f = NULL;
    int fd = mkstemp(path);

    if (fd < 0 || !(f = fdopen(fd, "w"))) {
        perror("harness: temporary configuration");
        if (fd >= 0)
            close(fd);
        goto done;
    }
    fprintf(f,
            "[log]\nlevel = \"warning\"\n\n[database]\nconninfo = \"%s\"\n%s\n",
            conninfo,
            toml ? toml : "");
    if (fclose(f) != 0) {
        perror("harness: temporary configuration");
        goto done;
    }
    if (!(cfg = config_load(path, &error)))
        fprintf(stderr, "harness: %s\n", error.text);
done:
    if (fd >= 0)
        unlink(path);
    return cfg;
}

struct harness *harness_create(const char *toml)
{
    const char *conninfo = getenv("VNIB_TEST_CONNINFO");
    vnib_error_t error = {0};
    struct harness *h = calloc(1, sizeof(*h));
    char previous[256];
    long long added, removed;
    int from, to;

    if (!h)
        return NULL;
    if (!conninfo || strpbrk(conninfo, "\"\\\n")) {
        fprintf(stderr,
                "harness: VNIB_TEST_CONNINFO must name the test database "
                "(tests/integration/0025-handlers.sh sets it)\n");
        goto error;
    }
    if (!(h->cfg = load_config(conninfo, toml)))
        goto error;
    h->b.cfg = h->cfg;
    h->b.start_time = time(NULL);
    if (!(h->b.log = logger_create("inproc", h->cfg->log_level, STDERR_FILENO))
        || !(h->b.store = store_create(h->cfg, h->b.log, &error))
        || store_migrate(h->b.store, &from, &to, &error) < 0
        || store_pool_sync(h->b.store,
                           h->cfg->vni_pool,
                           previous,
                           sizeof(previous),
                           &added,
                           &removed,
                           &error)
               < 0
        || !(h->b.hwcoll = hwcoll_create(&h->b, &error))
        || !(h->b.cache = cache_create(1024, h->cfg->server.node_cache_ms))) {
        fprintf(stderr,
                "harness: %s\n",
                error.text[0] ? error.text : "out of memory");
        goto error;
    }
    return h;
error:
    harness_destroy(h);
    return NULL;
}

void harness_destroy(struct harness *h)
{
    if (!h)
        return;
    cache_destroy(h->b.cache);
    hwcoll_destroy(h->b.hwcoll);
    store_destroy(h->b.store);
    logger_destroy(h->b.log);
    config_destroy(h->cfg);
    free(h);
}

struct broker *harness_broker(struct harness *h)
{
    return &h->b;
}

/* Split "path?a=b&c" into path (in buf) and the name, value table. */
static void split_target(const char *target,
                         char *buf,
                         size_t size,
                         const char *query[2 * HARNESS_MAX_QUERY + 1])
{
    size_t n = 0;
    char *save = NULL;

    snprintf(buf, size, "%s", target);
    char *q = strchr(buf, '?');
    if (q) {
        *q++ = '\0';
        for (char *arg = strtok_r(q, "&", &save);
             arg && n < 2 * HARNESS_MAX_QUERY;
             arg = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(arg, '=');
            if (eq)
                *eq++ = '\0';
            query[n++] = arg;
            query[n++] = eq ? eq : "";
        }
    }
    query[n] = NULL;
}

int harness_call(struct harness *h, struct harness_req rq, json_t **outp)
{
    struct request req = {0};
    const char *query[2 * HARNESS_MAX_QUERY + 1];
    char path[512], allow[128], *copy = NULL;
    enum errcode code = ERRCODE_NONE;
    int status;

    *outp = NULL;
    split_target(rq.target, path, sizeof(path), query);
    req.broker = &h->b;
    req.method = rq.method;
    req.path = path;
    req.query = query;
    snprintf(req.id, sizeof(req.id), "%016x", 0x1a2b3c4du);
    req.who.role = rq.who.role;
    if (rq.who.role == ROLE_NODE) {
        snprintf(req.who.node, sizeof(req.who.node), "%s", rq.who.name);
        snprintf(req.who.name, sizeof(req.who.name), "node:%s", rq.who.name);
    } else {
        snprintf(req.who.name, sizeof(req.who.name), "%s", rq.who.name);
    }
    int idx = route_match(
        &api_routes, rq.method, path, &req.params, allow, sizeof(allow));
    if (idx < 0) {
        status = request_error_status(&req, errno, &code);
        goto done;
    }
    req.route_index = idx;
    req.route = &api_routes.rows[idx];
    /* The pipeline hands handlers a NUL-terminated copy of the body. */
    if (rq.body) {
        if (!(copy = strdup(rq.body))) {
            status = request_error_status(&req, ENOMEM, &code);
            goto done;
        }
        req.body = copy;
        req.body_len = strlen(copy);
    }
    errno = 0;
    status = req.route->handler(&req, outp, &req.error);
    if (status < 0) {
        status = request_error_status(&req, errno ? errno : EIO, &code);
        json_decref(*outp);
        *outp = NULL;
    } else if (req.text && req.content_type
               && !strcmp(req.content_type, "application/json")) {
        /* JSON rendered by the handler (a node's fetch of a job). */
        json_decref(*outp);
        *outp = json_loadb(req.text, req.text_len, 0, NULL);
    }
done:
    /* The error reply, as the pipeline renders it (without request_id). */
    if (code != ERRCODE_NONE)
        *outp =
            json_pack("{s:{s:s, s:s}}",
                      "error",
                      "code",
                      errcode_name(code),
                      "message",
                      req.error.text[0] ? req.error.text : errcode_name(code));
    free(copy);
    free(req.text);
    return status;
}
