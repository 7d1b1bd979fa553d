/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibrokerd: the cluster-wide Slingshot VNI and multicast broker.
 *
 * main() is a straight line: parse options, load the configuration, open
 * the store, check the schema, start the listener, tell systemd, then wait
 * for a signal and tear everything down in reverse.  Signals are blocked
 * before any thread starts and taken synchronously with sigwait(), so no
 * handler code runs in signal context and the only state shared with
 * signals is none at all.
 *
 * Exit status: 0 after a clean shutdown, 1 when the broker cannot start or
 * run (database unreachable, schema too old, cannot listen), 2 for usage
 * and configuration errors.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnib/idset.h"
#include "vnib/lease.h"
#include "vnib/logger.h"
#include "vnib/sigstop.h"
#include "server/http/auth.h"
#include "server/broker.h"
#include "server/api/cache.h"
#include "server/config.h"
#include "server/bg/gauges.h"
#include "server/http/http.h"
#include "server/hwcoll/hwcoll.h"
#include "server/inventory.h"
#include "server/http/metrics.h"
#include "server/http/ratelimit.h"
#include "server/api/routes.h"
#include "server/sdnotify.h"
#include "server/store/store.h"
#include "server/store/store_migrate.h"
#include "server/store/store_pool.h"
#include "server/bg/sweeper.h"
#include "vnib/version.h"

enum {
    EXIT_RUNTIME = 1,
    EXIT_USAGE = 2,
};

static const char usage_text[] =
    "Usage: vnibrokerd [-c FILE]              serve the REST API\n"
    "       vnibrokerd [-c FILE] --migrate    apply database migrations and "
    "exit\n"
    "       vnibrokerd --check-config FILE    validate FILE, print the "
    "effective\n"
    "                                         configuration (secrets masked)\n"
    "Options:\n"
    "  -c, --config FILE   configuration file (default " CONFIG_DEFAULT_PATH
    ")\n"
    "  -h, --help          this text\n"
    "  -V, --version       print the version\n";

struct options {
    const char *config_path;
    const char *check_path;
    int migrate;
};

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", required_argument, NULL, 'C'},
        {"migrate", no_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opt->config_path = CONFIG_DEFAULT_PATH;
    while ((c = getopt_long(argc, argv, "c:hV", longopts, NULL)) != -1) {
        switch (c) {
            case 'c':
                opt->config_path = optarg;
                break;
            case 'C':
                opt->check_path = optarg;
                break;
            case 'M':
                opt->migrate = 1;
                break;
            case 'h':
                fputs(usage_text, stdout);
                exit(0);
            case 'V':
                printf("vnibrokerd %s (schema %d)\n",
                       VNIB_VERSION,
                       store_required_version());
                exit(0);
            default:
                fputs(usage_text, stderr);
                return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "vnibrokerd: unexpected argument '%s'\n", argv[optind]);
        fputs(usage_text, stderr);
        return -1;
    }
    return 0;
}

/* The lease signer of lease.key_file into *signerp (NULL when it is "":
 * no leases).  Returns 0, or -1 with errno and errp naming the key and
 * the file.
 */
static int load_lease(const struct config *cfg,
                      struct lease_signer **signerp,
                      vnib_error_t *errp)
{
    vnib_error_t why = {0};

    *signerp = NULL;
    if (!cfg->lease.key_file[0])
        return 0;
    if (!(*signerp = lease_signer_load(cfg->lease.key_file, &why)))
        return errprintf(errp, "lease.key_file: %s", why.text);
    return 0;
}

static int check_config(const char *path)
{
    vnib_error_t error = {0};
    struct inventory *inv = NULL;
    struct lease_signer *lease = NULL;
    struct config *cfg = config_load(path, &error);
    if (!cfg || !(inv = inventory_create(cfg, &error))
        || load_lease(cfg, &lease, &error) < 0) {
        fprintf(stderr, "vnibrokerd: %s\n", error.text);
        inventory_destroy(inv);
        config_destroy(cfg);
        return EXIT_USAGE;
    }
    config_print(cfg, stdout);
    inventory_print(inv, cfg, stdout);
    if (lease)
        printf("# lease.key_file: an Ed25519 key, key id %s\n",
               lease_signer_kid(lease));
    lease_signer_destroy(lease);
    inventory_destroy(inv);
    config_destroy(cfg);
    return 0;
}

static int run_migrate(struct broker *b)
{
    vnib_error_t error = {0};
    int from, to;

    if (store_migrate(b->store, &from, &to, &error) < 0) {
        logger_printf(b->log, LOG_ERR, NULL, "migrate: %s", error.text);
        return EXIT_RUNTIME;
    }
    if (from == to)
        logger_printf(b->log,
                      LOG_NOTICE,
                      NULL,
                      "migrate: schema is current (version %d)",
                      to);
    else
        logger_printf(b->log,
                      LOG_NOTICE,
                      NULL,
                      "migrate: schema upgraded from version %d to %d",
                      from,
                      to);
    return 0;
}

/* Refuse to serve against a schema older than this binary needs; the
 * version read goes to *versionp.
 */
static int check_schema(struct broker *b, int *versionp)
{
    vnib_error_t error = {0};
    int version;
    int need = store_required_version();

    if (store_schema_version(b->store, &version, &error) < 0) {
        logger_printf(b->log,
                      LOG_ERR,
                      NULL,
                      "cannot start: %s (database.conninfo in %s)",
                      error.text,
                      b->cfg->path);
        return -1;
    }
    if (version < need) {
        logger_printf(b->log,
                      LOG_ERR,
                      NULL,
                      "cannot start: database schema is at version %d, this "
                      "vnibrokerd needs %d; run 'vnibrokerd -c %s --migrate' "
                      "first",
                      version,
                      need,
                      b->cfg->path);
        return -1;
    }
    if (store_check_migrations(b->store, &error) < 0) {
        logger_printf(b->log, LOG_ERR, NULL, "cannot start: %s", error.text);
        return -1;
    }
    if (version > need)
        gauges_warn_newer(b->log, version);
    *versionp = version;
    return 0;
}

/* Record this broker's vni.pool as the pool in force, so that the free
 * queue holds exactly its free VNIs (schema/0004).  Replicas should share
 * one pool; a different one replaces it, loudly.
 */
static int sync_pool(struct broker *b)
{
    vnib_error_t error = {0};
    char previous[256];
    long long added = 0, removed = 0;
    char *now = idset_encode(b->cfg->vni_pool);

    if (store_pool_sync(b->store,
                        b->cfg->vni_pool,
                        previous,
                        sizeof(previous),
                        &added,
                        &removed,
                        &error)
        < 0) {
        logger_printf(
            b->log, LOG_ERR, NULL, "cannot start: vni.pool: %s", error.text);
        free(now);
        return -1;
    }
    if (now && previous[0] && strcmp(previous, now))
        logger_printf(b->log,
                      LOG_WARNING,
                      NULL,
                      "vni.pool is now %s (was %s): %lld VNIs joined the "
                      "free queue, %lld left it; every replica should have "
                      "the same pool",
                      now,
                      previous,
                      added,
                      removed);
    else if (now && !previous[0])
        logger_printf(b->log,
                      LOG_INFO,
                      NULL,
                      "vni.pool %s: recorded as this database's pool (its "
                      "first broker start)",
                      now);
    else if (added || removed)
        logger_printf(b->log,
                      LOG_INFO,
                      NULL,
                      "vni.pool %s: the free queue now matches it (%lld "
                      "added, %lld removed)",
                      now ? now : "",
                      added,
                      removed);
    free(now);
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt = {0};
    struct broker b = {0};
    struct config *cfg = NULL;
    struct sweeper *sweeper = NULL;
    vnib_error_t error = {0};
    sigset_t sigs;
    int schema_version = 0;
    int rc = EXIT_RUNTIME;

    if (parse_options(argc, argv, &opt) < 0)
        return EXIT_USAGE;
    if (opt.check_path)
        return check_config(opt.check_path);

    if (!(cfg = config_load(opt.config_path, &error))
        || !(b.inv = inventory_create(cfg, &error))) {
        fprintf(stderr, "vnibrokerd: %s\n", error.text);
        config_destroy(cfg);
        return EXIT_USAGE;
    }
    b.cfg = cfg;
    b.start_time = time(NULL);
    if (!(b.log = logger_create("vnibrokerd", cfg->log_level, STDERR_FILENO))) {
        fprintf(stderr, "vnibrokerd: out of memory\n");
        goto done;
    }

    /* Before any thread exists, so that only sigstop_wait() below sees
     * the stop signals.
     */
    sigstop_block(&sigs);

    if (!(b.store = store_create(cfg, b.log, &error))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    if (opt.migrate) {
        rc = run_migrate(&b);
        goto done;
    }
    if (!(b.auth = auth_create(cfg, b.log, &error))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        rc = errno == EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        goto done;
    }
    if (load_lease(cfg, &b.lease, &error) < 0) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        rc = errno == EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        goto done;
    }
    if (b.lease)
        logger_printf(b.log,
                      LOG_NOTICE,
                      NULL,
                      "leases: signed with key id %s (lease.key_file %s), "
                      "%ld s each, %ld s of clock skew allowed",
                      lease_signer_kid(b.lease),
                      cfg->lease.key_file,
                      cfg->lease.ttl_s,
                      cfg->lease.max_skew_s);
    if (auth_token_count(b.auth) == 0 && !auth_nodes_enabled(b.auth))
        logger_printf(b.log,
                      LOG_WARNING,
                      NULL,
                      "no tokens configured (auth.tokens_file, "
                      "auth.node_key_file): every /v1 request will be "
                      "refused");
    if (config_insecure_http(cfg))
        logger_printf(b.log,
                      LOG_WARNING,
                      NULL,
                      "hwcoll: %s is plain http:// (hwcoll.allow_insecure_"
                      "http = true): the Fabric Manager credentials (auth "
                      "%s) cross the network in clear",
                      config_insecure_http(cfg),
                      cfg->hwcoll.auth);
    char inventory[600];
    inventory_describe(b.inv, inventory, sizeof(inventory));
    if (inventory[0])
        logger_printf(
            b.log,
            LOG_NOTICE,
            NULL,
            "inventory: %s; reservations naming other nodes are %s",
            inventory,
            cfg->cluster.reject_unknown_nodes ? "refused" : "warned about");
    if (check_schema(&b, &schema_version) < 0 || sync_pool(&b) < 0)
        goto done;
    if (!(b.hwcoll = hwcoll_create(&b, &error))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        rc = errno == EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        goto done;
    }
    if (!(b.cache = cache_create(1024, cfg->server.node_cache_ms))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: out of memory");
        goto done;
    }
    /* A bucket per node name; the table is sized for El Capitan's 11,136
     * nodes with room to spare (about 400 KiB).
     */
    if (cfg->server.report_rate > 0
        && !(b.rl = ratelimit_create((double)cfg->server.report_rate,
                                     (double)cfg->server.report_burst,
                                     16384))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: out of memory");
        goto done;
    }
    if (!(b.metrics = metrics_create(&api_routes))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: out of memory");
        goto done;
    }
    if (!(b.gauges = gauges_create(&b, schema_version, &error))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    struct http_setup setup = {
        .routes = &api_routes,
        .fm_workers = hwcoll_request_concurrency(b.hwcoll),
    };
    if (!(b.http = http_create(&b, &setup, &error))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    logger_printf(b.log,
                  LOG_NOTICE,
                  NULL,
                  "vnibrokerd %s listening on %s://%s%s%s:%u (schema %d, %ld "
                  "threads, %d request workers, database pool %ld)",
                  VNIB_VERSION,
                  cfg->server.tls_cert[0] ? "https" : "http",
                  strchr(cfg->server.address, ':') ? "[" : "",
                  cfg->server.address,
                  strchr(cfg->server.address, ':') ? "]" : "",
                  (unsigned)http_port(b.http),
                  store_required_version(),
                  cfg->server.threads,
                  http_worker_count(b.http),
                  cfg->database.pool_size);
    if (!(sweeper = sweeper_create(&b, &error))) {
        logger_printf(b.log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    (void)sdnotify_send("READY=1");

    sigstop_wait(&sigs,
                 b.log,
                 "SIGHUP: the configuration is read only at start; "
                 "restart vnibrokerd to apply changes");
    (void)sdnotify_send("STOPPING=1");
    rc = 0;
done:
    sweeper_destroy(sweeper);
    http_destroy(b.http, cfg ? (int)cfg->server.shutdown_timeout_s : 0);
    gauges_destroy(b.gauges);
    metrics_destroy(b.metrics);
    cache_destroy(b.cache);
    ratelimit_destroy(b.rl);
    hwcoll_destroy(b.hwcoll);
    store_destroy(b.store);
    auth_destroy(b.auth);
    lease_signer_destroy(b.lease);
    if (rc == 0 && !opt.migrate)
        logger_printf(b.log, LOG_NOTICE, NULL, "stopped");
    logger_destroy(b.log);
    inventory_destroy(b.inv);
    config_destroy(cfg);
    return rc;
}
