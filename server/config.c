/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Table-driven configuration for vnibrokerd (see config.h).
 *
 * The TOML reader in lib/ turns the file into a jansson tree plus a table
 * of line numbers, and lib/cfgtable.c walks that tree against `rows[]`:
 * every key must have a row (unknown keys are errors, since a typo
 * silently ignored is a production outage later) and every value must
 * have the row's type and lie in its bounds.  This module keeps the rows,
 * the few cross-field rules checked at the end, and the printer.
 * Adding a setting means adding a field to struct config, a row here, and
 * a line in config.example.toml (a test compares the two).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "vnib/cfgtable.h"
#include "vnib/cidr.h"
#include "vnib/hostlist.h"
#include "vnib/idset.h"
#include "vnib/tclass.h"
#include "vnib/logger.h"
#include "vnib/toml.h"
#include "server/config.h"

/* One row per line reads as a table, so the formatter leaves it alone. */
/* clang-format off */
#define STR(k, field, def, fl, doc) \
    { k, CFGTABLE_STRING, offsetof (struct config, field), 0, 0, def, 0, fl, doc }
#define STRS(k, field, def, doc) \
    { k, CFGTABLE_STRINGS, offsetof (struct config, field), 0, 0, def, 0, 0, doc }
#define BOOL(k, field, def, doc) \
    { k, CFGTABLE_BOOL, offsetof (struct config, field), 0, 1, NULL, def, 0, doc }
#define INT(k, field, lo, hi, def, doc) \
    { k, CFGTABLE_INT, offsetof (struct config, field), lo, hi, NULL, def, 0, doc }

static const struct cfgtable_row rows[] = {
    STR ("server.address", server.address, "127.0.0.1", 0,
         "numeric IPv4 or IPv6 address to listen on"),
    INT ("server.port", server.port, 0, 65535, 8080,
         "TCP port (0 picks a free port and logs it)"),
    STR ("server.tls_cert", server.tls_cert, "", 0,
         "PEM certificate chain; with tls_key, the listener speaks TLS only"),
    STR ("server.tls_key", server.tls_key, "", 0,
         "PEM private key, mode 0600, owned by the broker's user or root"),
    STR ("server.tls_priorities", server.tls_priorities, CONFIG_TLS_PRIORITIES, 0,
         "GnuTLS priority string: protocol versions and ciphers the listener accepts"),
    INT ("server.threads", server.threads, 1, 256, 8,
         "libmicrohttpd threads: they read requests and send replies, never wait on the database"),
    INT ("server.workers", server.workers, 0, 1024, 0,
         "threads that run requests which may wait on the database or the Fabric Manager (0: database.pool_size + hwcoll.request_concurrency)"),
    INT ("server.queue_limit", server.queue_limit, 0, 1000000, 0,
         "requests waiting for a worker at once; past it 503 unavailable (0: server.max_connections)"),
    INT ("server.max_connections", server.max_connections, 1, 1000000, 4096,
         "connections open at once; more wait in the kernel's backlog"),
    INT ("server.connection_timeout_s", server.connection_timeout_s, 1, 3600, 30,
         "a connection idle or stalled this long is closed"),
    INT ("server.per_ip_connections", server.per_ip_connections, 0, 1000000, 256,
         "connections open at once from one client address (0: no limit)"),
    INT ("server.request_deadline_ms", server.request_deadline_ms, 0, 3600000, 10000,
         "a request's headers and body must arrive within this, however they trickle (0: off)"),
    STRS ("server.priority_addresses", server.priority_addresses, "",
          "address blocks (\"10.0.0.5\", \"10.0.0.0/28\") of the scheduler's and admins' hosts: their connections have a budget of their own"),
    INT ("server.priority_connections", server.priority_connections, 1, 1000000, 256,
         "connections open at once from priority_addresses, beyond max_connections"),
    INT ("server.queue_deadline_ms", server.queue_deadline_ms, 100, 3600000, 10000,
         "a request not started this long after it arrived is answered 503 deadline_exceeded without running (a client's Vnib-Deadline-Ms may shorten it)"),
    INT ("server.max_header_bytes", server.max_header_bytes, 4096, 1048576, 8192,
         "largest request line and headers (431 beyond)"),
    INT ("server.max_body_bytes", server.max_body_bytes, 1024, 67108864, 1048576,
         "largest request body any route accepts (413 beyond)"),
    INT ("server.node_cache_ms", server.node_cache_ms, 0, 60000, 1000,
         "how long a node's fetch of an active job or step may be answered from memory (0: never)"),
    INT ("server.shutdown_timeout_s", server.shutdown_timeout_s, 0, 600, 10,
         "on SIGTERM, how long in-flight requests may take to finish"),
    INT ("server.report_rate", server.report_rate, 0, 100000, 20,
         "node reports per second one node may make, on average (0: no limit)"),
    INT ("server.report_burst", server.report_burst, 1, 1000000, 50,
         "node reports one node may make at once before report_rate applies"),
    STR ("database.conninfo", database.conninfo, "dbname=vnibroker", CFGTABLE_SECRET,
         "libpq connection string; prefer passfile= to a password here"),
    INT ("database.pool_size", database.pool_size, 1, 1024, 8,
         "database connections kept open"),
    INT ("database.connect_timeout_ms", database.connect_timeout_ms, 100, 600000, 2000,
         "how long connecting to one host may take (each host of a multi-host conninfo in turn)"),
    INT ("database.query_timeout_ms", database.query_timeout_ms, 100, 600000, 5000,
         "how long one statement may take before the request gets 503"),
    INT ("database.acquire_timeout_ms", database.acquire_timeout_ms, 10, 600000, 2000,
         "how long a request waits for a free pooled connection (503 after)"),
    INT ("database.group_max", database.group_max, 1, 1024, 32,
         "most reserves (releases, FM answers) written in one transaction; 1: each alone"),
    INT ("database.group_leaders", database.group_leaders, 1, 1024, 1,
         "reserve (and release) groups written at once, each on a connection"),
    INT ("database.report_group_max", database.report_group_max, 1, 4096, 256,
         "most node reports written in one transaction; 1: each alone, on a request worker"),
    INT ("database.report_group_leaders", database.report_group_leaders, 1, 64, 2,
         "node report groups written at once, each on a connection"),
    STR ("auth.tokens_file", auth.tokens_file, "/etc/vnibroker/tokens", 0,
         "lines 'ROLE NAME SHA256HEX' (vnibctl token new); mode 0600; \"\" = none"),
    STR ("auth.node_key_file", auth.node_key_file, "/etc/vnibroker/node.key", 0,
         "key for node tokens (vnibctl token key); mode 0600; \"\" = no node tokens"),
    STR ("auth.node_key_previous_file", auth.node_key_previous_file, "", 0,
         "the node key before a rotation, still accepted until node_key_previous_until; mode 0600"),
    STR ("auth.node_key_previous_until", auth.node_key_previous_until, "", 0,
         "end of the overlap, RFC 3339 UTC (\"2026-12-01T00:00:00Z\"); then old node tokens get 401"),
    STR ("vni.pool", vni.pool, "1024-65535", 0,
         "VNIs handed out, as ranges; never 1 or 10 (the default CXI service)"),
    INT ("vni.per_job_default", vni.per_job_default, 0, VNIB_SERVICE_VNIS_MAX, 1,
         "VNIs per job when a request does not say (0-4)"),
    STRS ("vni.traffic_classes", vni.traffic_classes, "LOW_LATENCY" CONFIG_LIST_SEP "BEST_EFFORT",
          "traffic classes jobs may use: DEDICATED_ACCESS, LOW_LATENCY, BULK_DATA, BEST_EFFORT"),
    INT ("vni.retain_days", vni.retain_days, 0, 36500, 90,
         "released reservations and audit events are kept this long (0: for ever)"),
    INT ("vni.sweep_interval_s", vni.sweep_interval_s, 1, 3600, 10,
         "how often quarantines whose nodes all confirmed are closed (a safety net)"),
    STR ("cluster.name", cluster.name, "cluster", 0,
         "this cluster's name; prefixes the Fabric Manager job ids"),
    STR ("cluster.topology_file", cluster.topology_file, "", 0,
         "Slurm topology.conf naming every node under its leaf switch, read at start (\"\": no inventory)"),
    BOOL ("cluster.reject_unknown_nodes", cluster.reject_unknown_nodes, 1,
          "with topology_file: refuse a reservation naming a node the file lacks (false: log a warning)"),
    BOOL ("hwcoll.enabled", hwcoll.enabled, 0,
          "make Fabric Manager multicast reservations for eligible jobs"),
    STR ("hwcoll.fm_url", hwcoll.fm_url, "", 0,
         "Fabric Manager base URL (the API is under /fabric/collectives)"),
    STR ("hwcoll.auth", hwcoll.auth, "oauth", 0,
         "none, basic or oauth (client credentials)"),
    STR ("hwcoll.user", hwcoll.user, "cxi", 0, "basic: user name"),
    STR ("hwcoll.password_file", hwcoll.password_file, "", 0,
         "basic: file holding the password (mode 0600)"),
    STR ("hwcoll.token_url", hwcoll.token_url, "", 0,
         "oauth: the token endpoint"),
    STR ("hwcoll.client_id", hwcoll.client_id, "", 0, "oauth: client id"),
    STR ("hwcoll.client_secret_file", hwcoll.client_secret_file, "", 0,
         "oauth: file holding the client secret (mode 0600)"),
    STR ("hwcoll.ca_file", hwcoll.ca_file, "", 0,
         "CA bundle for the Fabric Manager (\"\": the system store)"),
    STR ("hwcoll.cert_file", hwcoll.cert_file, "", 0,
         "client certificate for mTLS (\"\": none)"),
    STR ("hwcoll.key_file", hwcoll.key_file, "", 0,
         "client key for mTLS (mode 0600)"),
    BOOL ("hwcoll.tls_verify", hwcoll.tls_verify, 1,
          "verify the Fabric Manager's certificate and host name"),
    BOOL ("hwcoll.allow_insecure_http", hwcoll.allow_insecure_http, 0,
          "allow credentials over plain http:// (warned at every start)"),
    STR ("hwcoll.job_prefix", hwcoll.job_prefix, "", 0,
         "prefix of our Fabric Manager job ids (\"\": cluster.name)"),
    INT ("hwcoll.min_nodes", hwcoll.min_nodes, 0, 1000000, 0,
         "jobs with at least this many nodes get a reservation (0: only on request)"),
    INT ("hwcoll.addrs_per_job", hwcoll.addrs_per_job, 0, 8192, 0,
         "multicast addresses per job (0: computed from the four keys below)"),
    INT ("hwcoll.total_addrs", hwcoll.total_addrs, 1, 8192, 4086,
         "M: the fabric's usable multicast addresses"),
    INT ("hwcoll.system_size", hwcoll.system_size, 0, 10000000, 0,
         "S: nodes in the system"),
    INT ("hwcoll.min_job_size", hwcoll.min_job_size, 1, 10000000, 64,
         "s: the smallest job expected to use collectives"),
    INT ("hwcoll.jobs_per_node", hwcoll.jobs_per_node, 1, 1024, 1,
         "j: jobs sharing a node"),
    INT ("hwcoll.reserve_timeout_ms", hwcoll.reserve_timeout_ms, 100, 60000, 2000,
         "how long a reservation may wait on the Fabric Manager"),
    INT ("hwcoll.request_concurrency", hwcoll.request_concurrency, 0, 256, 0,
         "reservations that may wait on the Fabric Manager at once in request workers (0: hwcoll.fm_concurrency)"),
    INT ("hwcoll.request_timeout_ms", hwcoll.request_timeout_ms, 100, 600000, 10000,
         "timeout of other Fabric Manager calls (releases, lists)"),
    STR ("hwcoll.token_key_file", hwcoll.token_key_file, "", 0,
         "32-byte key sealing session tokens in the database (AES-256-GCM; mode 0600)"),
    STR ("hwcoll.token_key_previous_file", hwcoll.token_key_previous_file, "", 0,
         "the sealing key before a rotation: still opens tokens sealed with it; mode 0600"),
    INT ("hwcoll.fm_concurrency", hwcoll.fm_concurrency, 1, 64, 8,
         "Fabric Manager calls the release queue makes at once"),
    INT ("hwcoll.retry_max_s", hwcoll.retry_max_s, 1, 86400, 300,
         "longest back-off between retries of a failing Fabric Manager operation"),
    INT ("hwcoll.reconcile_interval_s", hwcoll.reconcile_interval_s, 5, 86400, 60,
         "how often the leader reconciles with the Fabric Manager's job list"),
    STR ("lease.key_file", lease.key_file, "", 0,
         "the broker's Ed25519 private key (PEM, mode 0600) signing leases; \"\" = no leases"),
    INT ("lease.ttl_s", lease.ttl_s, 10, 86400, 120,
         "a lease's life; a VNI a lease named is not handed out again before it expired"),
    INT ("lease.max_skew_s", lease.max_skew_s, 0, 3600, 30,
         "clock difference allowed between the broker and the nodes (the nodes' setting of the same name)"),
    STRS ("hooks.on_reservation_lost", hooks.on_reservation_lost, "",
          "argv run (no shell) when the FM lost an active job's reservation; {job_id} {fm_job_id}"),
    INT ("hooks.timeout_s", hooks.timeout_s, 1, 3600, 30,
         "how long a hook may run before it is killed"),
    STR ("log.level", log.level, "info", 0,
         "error, warning, notice, info or debug"),
    INT ("limits.hostlist_max_names", limits.hostlist_max_names, 1, 100000000,
         (long)HOSTLIST_DEFAULT_MAX_NAMES,
         "most host names one hostlist expression may expand to"),
};
/* clang-format on */

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const struct cfgtable settings = {rows, NROWS};

static const char *str_value(const struct config *cfg,
                             const struct cfgtable_row *row)
{
    return cfgtable_str_value(cfg, row);
}

static long int_value(const struct config *cfg, const struct cfgtable_row *row)
{
    return cfgtable_long_value(cfg, row);
}

void config_destroy(struct config *cfg)
{
    int saved_errno = errno;
    if (cfg) {
        cfgtable_free(&settings, cfg);
        idset_destroy(cfg->vni_pool);
        free(cfg->priority);
        free(cfg->path);
        free(cfg);
    }
    errno = saved_errno;
}

static int derive_vni(struct config *cfg,
                      const char *pool_where,
                      const char *tc_where,
                      vnib_error_t *errp);

struct config *config_defaults(vnib_error_t *errp)
{
    struct config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        goto nomem;
    if (!(cfg->path = strdup("")))
        goto nomem;
    if (cfgtable_defaults(&settings, cfg, errp) < 0)
        goto nomem;
    cfg->log_level = LOG_INFO;
    if (derive_vni(cfg, "defaults", "defaults", errp) < 0) {
        config_destroy(cfg);
        return NULL;
    }
    return cfg;
nomem:
    errprintf(errp, "out of memory");
    config_destroy(cfg);
    errno = ENOMEM;
    return NULL;
}

static int key_line(json_t *lines, const char *key)
{
    return cfgtable_line(lines, key);
}

/* Parse vni.pool and vni.traffic_classes into their derived forms. */
static int derive_vni(struct config *cfg,
                      const char *pool_where,
                      const char *tc_where,
                      vnib_error_t *errp)
{
    vnib_error_t why = {0};
    char *copy = NULL;

    idset_destroy(cfg->vni_pool);
    if (!(cfg->vni_pool = idset_decode(cfg->vni.pool, 65535, &why))) {
        errno = EINVAL;
        return errprintf(errp, "%s: vni.pool: %s", pool_where, why.text);
    }
    if (idset_count(cfg->vni_pool) == 0) {
        errno = EINVAL;
        return errprintf(errp, "%s: vni.pool: the pool is empty", pool_where);
    }
    if (idset_contains(cfg->vni_pool, 1) || idset_contains(cfg->vni_pool, 10)) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: vni.pool: VNIs 1 and 10 belong to the default "
                         "CXI service and may not be handed out",
                         pool_where);
    }
    cfg->tcs_mask = 0;
    if (!(copy = strdup(cfg->vni.traffic_classes)))
        return errprintf(errp, "out of memory");
    char *save = NULL;
    for (char *name = strtok_r(copy, CONFIG_LIST_SEP, &save); name;
         name = strtok_r(NULL, CONFIG_LIST_SEP, &save)) {
        unsigned bit = tclass_bit(name);
        if (!bit || (cfg->tcs_mask & bit)) {
            errno = EINVAL;
            errprintf(errp,
                      "%s: vni.traffic_classes: '%s' is %s",
                      tc_where,
                      name,
                      bit ? "listed twice"
                          : "not one of DEDICATED_ACCESS, LOW_LATENCY, "
                            "BULK_DATA, BEST_EFFORT");
            free(copy);
            return -1;
        }
        cfg->tcs_mask |= bit;
    }
    free(copy);
    if (cfg->tcs_mask == 0) {
        errno = EINVAL;
        return errprintf(
            errp, "%s: vni.traffic_classes: none listed", tc_where);
    }
    return 0;
}

const char *config_insecure_http(const struct config *cfg)
{
    const char *auth = cfg->hwcoll.auth;

    if (!cfg->hwcoll.enabled || !strcmp(auth, "none"))
        return NULL;
    if (!strncasecmp(cfg->hwcoll.fm_url, "http://", 7))
        return "hwcoll.fm_url";
    if (!strcmp(auth, "oauth")
        && !strncasecmp(cfg->hwcoll.token_url, "http://", 7))
        return "hwcoll.token_url";
    return NULL;
}

/* [hwcoll]: when enabled, everything its auth mode needs must be set. */
static int check_hwcoll(const struct config *cfg,
                        const char *path,
                        json_t *lines,
                        vnib_error_t *errp)
{
    const char *auth = cfg->hwcoll.auth;
    const char *missing = NULL;
    char where[512];

    if (strcmp(auth, "none") && strcmp(auth, "basic")
        && strcmp(auth, "oauth")) {
        errno = EINVAL;
        snprintf(where,
                 sizeof(where),
                 "%s:%d",
                 path,
                 key_line(lines, "hwcoll.auth"));
        return errprintf(errp,
                         "%s: hwcoll.auth: '%s' is not none, basic or oauth",
                         where,
                         auth);
    }
    /* Paths are appended to the base URL with their own '/'. */
    for (size_t n = strlen(cfg->hwcoll.fm_url);
         n > 0 && cfg->hwcoll.fm_url[n - 1] == '/';
         n--)
        cfg->hwcoll.fm_url[n - 1] = '\0';
    if (!cfg->hwcoll.enabled)
        return 0;
    if (strncmp(cfg->hwcoll.fm_url, "http://", 7)
        && strncmp(cfg->hwcoll.fm_url, "https://", 8))
        missing = "hwcoll.fm_url (an http:// or https:// URL)";
    else if (!strcmp(auth, "basic") && !cfg->hwcoll.password_file[0])
        missing = "hwcoll.password_file (auth is basic)";
    else if (!strcmp(auth, "oauth") && !cfg->hwcoll.token_url[0])
        missing = "hwcoll.token_url (auth is oauth)";
    else if (!strcmp(auth, "oauth") && !cfg->hwcoll.client_id[0])
        missing = "hwcoll.client_id (auth is oauth)";
    else if (!strcmp(auth, "oauth") && !cfg->hwcoll.client_secret_file[0])
        missing = "hwcoll.client_secret_file (auth is oauth)";
    else if (!cfg->hwcoll.token_key_file[0])
        missing = "hwcoll.token_key_file (session tokens are sealed at rest)";
    else if (cfg->hwcoll.addrs_per_job == 0 && cfg->hwcoll.system_size == 0
             && !cfg->cluster.topology_file[0])
        missing =
            "hwcoll.addrs_per_job, or hwcoll.system_size or "
            "cluster.topology_file to compute it";
    else if (!cfg->hwcoll.cert_file[0] != !cfg->hwcoll.key_file[0])
        missing = "hwcoll.cert_file and hwcoll.key_file together";
    const char *clear = config_insecure_http(cfg);
    if (!missing && clear && !cfg->hwcoll.allow_insecure_http) {
        errno = EINVAL;
        snprintf(where, sizeof(where), "%s:%d", path, key_line(lines, clear));
        return errprintf(errp,
                         "%s: %s is plain http:// and hwcoll.auth is %s: the "
                         "credentials would cross the network in clear; use "
                         "https://, or set hwcoll.allow_insecure_http = true",
                         where,
                         clear,
                         auth);
    }
    if (missing) {
        errno = EINVAL;
        snprintf(where,
                 sizeof(where),
                 "%s:%d",
                 path,
                 key_line(lines, "hwcoll.enabled"));
        return errprintf(errp,
                         "%s: hwcoll.enabled is true but %s is not set",
                         where,
                         missing);
    }
    return 0;
}

/* "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339 in UTC, no fraction) into *t. */
static int parse_utc(const char *text, time_t *t)
{
    struct tm tm = {0};
    int n = 0;

    if (sscanf(text,
               "%4d-%2d-%2dT%2d:%2d:%2dZ%n",
               &tm.tm_year,
               &tm.tm_mon,
               &tm.tm_mday,
               &tm.tm_hour,
               &tm.tm_min,
               &tm.tm_sec,
               &n)
            != 6
        || n == 0 || text[n] != '\0' || strlen(text) != 20)
        return -1;
    if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1
        || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59
        || tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    struct tm check = tm;
    *t = timegm(&tm);
    /* timegm normalises 31 February into March: refuse such dates. */
    return *t == (time_t)-1 || tm.tm_mday != check.tm_mday ? -1 : 0;
}

/* [auth]: a previous node key comes with the end of its overlap. */
static int check_auth(struct config *cfg,
                      const char *path,
                      json_t *lines,
                      vnib_error_t *errp)
{
    const char *file = cfg->auth.node_key_previous_file;
    const char *until = cfg->auth.node_key_previous_until;
    const char *key = file[0] ? "auth.node_key_previous_until"
                              : "auth.node_key_previous_file";

    cfg->node_key_previous_until = 0;
    if (!file[0] && !until[0])
        return 0;
    errno = EINVAL;
    if (!file[0] || !until[0])
        return errprintf(errp,
                         "%s:%d: auth.node_key_previous_file and "
                         "auth.node_key_previous_until must be set together "
                         "(%s is missing)",
                         path,
                         key_line(lines,
                                  file[0] ? "auth.node_key_previous_file"
                                          : "auth.node_key_previous_until"),
                         key);
    if (!cfg->auth.node_key_file[0])
        return errprintf(errp,
                         "%s:%d: auth.node_key_previous_file is set but "
                         "auth.node_key_file is not",
                         path,
                         key_line(lines, "auth.node_key_previous_file"));
    if (parse_utc(until, &cfg->node_key_previous_until) < 0)
        return errprintf(errp,
                         "%s:%d: auth.node_key_previous_until: '%.40s' is not "
                         "an RFC 3339 UTC time such as 2026-12-01T00:00:00Z",
                         path,
                         key_line(lines, "auth.node_key_previous_until"),
                         until);
    return 0;
}

/* Parse server.priority_addresses into cfg->priority. */
static int derive_priority(struct config *cfg,
                           const char *where,
                           vnib_error_t *errp)
{
    vnib_error_t why = {0};
    char *copy = NULL;
    size_t n = 1;
    int rc = -1;

    free(cfg->priority);
    cfg->priority = NULL;
    cfg->npriority = 0;
    for (const char *p = cfg->server.priority_addresses; *p; p++)
        n += strchr(CONFIG_LIST_SEP, *p) != NULL;
    if (!(copy = strdup(cfg->server.priority_addresses))
        || !(cfg->priority = calloc(n, sizeof(cfg->priority[0])))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    char *save = NULL;
    for (char *item = strtok_r(copy, CONFIG_LIST_SEP, &save); item;
         item = strtok_r(NULL, CONFIG_LIST_SEP, &save)) {
        if (cidr_parse(item, &cfg->priority[cfg->npriority], &why) < 0) {
            errprintf(
                errp, "%s: server.priority_addresses: %s", where, why.text);
            goto done;
        }
        cfg->npriority++;
    }
    rc = 0;
done:
    free(copy);
    return rc;
}

/* Rules that involve more than one key, or a value's content. */
static int check_semantics(struct config *cfg,
                           const char *path,
                           json_t *lines,
                           vnib_error_t *errp)
{
    unsigned char addr[16];
    char where[512];
    char where2[512];

#define WHERE(k) \
    (snprintf(where, sizeof(where), "%s:%d", path, key_line(lines, k)), where)
#define WHERE2(k)                                                         \
    (snprintf(where2, sizeof(where2), "%s:%d", path, key_line(lines, k)), \
     where2)

    if (inet_pton(AF_INET, cfg->server.address, addr) != 1
        && inet_pton(AF_INET6, cfg->server.address, addr) != 1) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: server.address: '%s' is not a numeric IPv4 or "
                         "IPv6 address",
                         WHERE("server.address"),
                         cfg->server.address);
    }
    if ((cfg->server.tls_cert[0] == '\0') != (cfg->server.tls_key[0] == '\0')) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: server.tls_cert and server.tls_key must be set "
                         "together",
                         WHERE(cfg->server.tls_cert[0] ? "server.tls_cert"
                                                       : "server.tls_key"));
    }
    if (logger_level_parse(cfg->log.level, &cfg->log_level) < 0) {
        return errprintf(errp,
                         "%s: log.level: '%s' is not one of error, warning, "
                         "notice, info, debug",
                         WHERE("log.level"),
                         cfg->log.level);
    }
    if (derive_vni(cfg, WHERE("vni.pool"), WHERE2("vni.traffic_classes"), errp)
        < 0)
        return -1;
    if (check_hwcoll(cfg, path, lines, errp) < 0)
        return -1;
    if (check_auth(cfg, path, lines, errp) < 0)
        return -1;
    if (derive_priority(cfg, WHERE("server.priority_addresses"), errp) < 0)
        return -1;
    if (cfg->server.max_connections < cfg->server.threads) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: server.max_connections: %ld is less than "
                         "server.threads (%ld): each thread needs a share",
                         WHERE("server.max_connections"),
                         cfg->server.max_connections,
                         cfg->server.threads);
    }
    if (cfg->database.conninfo[0] == '\0') {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: database.conninfo: must not be empty",
                         WHERE("database.conninfo"));
    }
#undef WHERE
#undef WHERE2
    return 0;
}

struct config *config_load(const char *path, vnib_error_t *errp)
{
    struct config *cfg = NULL;
    json_t *root = NULL;
    json_t *lines = NULL;

    if (!(root = toml_parse_file(path, &lines, errp)))
        goto error;
    if (!(cfg = config_defaults(errp)))
        goto error;
    free(cfg->path);
    if (!(cfg->path = strdup(path))) {
        errprintf(errp, "out of memory");
        goto error;
    }
    if (cfgtable_apply(&settings, cfg, path, root, lines, errp) < 0)
        goto error;
    if (check_semantics(cfg, path, lines, errp) < 0)
        goto error;
    cfg->min_job_size_set = key_line(lines, "hwcoll.min_job_size") > 0;
    json_decref(root);
    json_decref(lines);
    return cfg;
error : {
    int e = errno ? errno : EINVAL;
    json_decref(root);
    json_decref(lines);
    config_destroy(cfg);
    errno = e;
}
    return NULL;
}

/* Append value to out as libpq's keyword/value form wants it: bare when
 * it is plain, otherwise single-quoted with ' and \ escaped.
 */
static void put_conninfo_value(FILE *out, const char *value)
{
    if (*value && !strpbrk(value, " \t\n\r\v\f'\\")) {
        fputs(value, out);
        return;
    }
    fputc('\'', out);
    for (; *value; value++) {
        if (*value == '\'' || *value == '\\')
            fputc('\\', out);
        fputc(*value, out);
    }
    fputc('\'', out);
}

/* Append s to out percent-encoded, keeping unreserved characters and
 * those in keep.
 */
static void put_pct(FILE *out, const char *s, const char *keep)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || strchr("-._~", c)
            || (c && strchr(keep, c)))
            fputc(c, out);
        else
            fprintf(out, "%%%02X", c);
    }
}

static bool conninfo_secret(const PQconninfoOption *o)
{
    return o->dispchar && o->dispchar[0] == '*';
}

static const char *conninfo_get(const PQconninfoOption *opts, const char *key)
{
    for (const PQconninfoOption *o = opts; o->keyword; o++)
        if (!strcmp(o->keyword, key))
            return o->val;
    return NULL;
}

/* Rebuild a URI: user, password, host, port and dbname where a URI puts
 * them when that is plain, everything else as query parameters.
 */
static void put_conninfo_uri(FILE *out,
                             const char *scheme,
                             const PQconninfoOption *opts)
{
    const char *user = conninfo_get(opts, "user");
    const char *pass = conninfo_get(opts, "password");
    const char *host = conninfo_get(opts, "host");
    const char *port = conninfo_get(opts, "port");
    const char *dbname = conninfo_get(opts, "dbname");
    /* A socket directory or IPv6 address would need brackets: query. */
    bool host_in_authority = host && *host && !strpbrk(host, "/:[]%@");
    bool port_in_authority = host_in_authority && port && *port
                             && !strchr(host, ',') && !strchr(port, ',');
    int n = 0;

    fputs(scheme, out);
    if (user)
        put_pct(out, user, "");
    if (pass)
        fputs(":***", out);
    if (user || pass)
        fputc('@', out);
    if (host_in_authority)
        put_pct(out, host, ",");
    if (port_in_authority) {
        fputc(':', out);
        put_pct(out, port, "");
    }
    fputc('/', out);
    if (dbname)
        put_pct(out, dbname, "");
    for (const PQconninfoOption *o = opts; o->keyword; o++) {
        /* The password is shown as ":***" in the authority. */
        if (!o->val || !strcmp(o->keyword, "user")
            || !strcmp(o->keyword, "password") || !strcmp(o->keyword, "dbname")
            || (!strcmp(o->keyword, "host") && host_in_authority)
            || (!strcmp(o->keyword, "port") && port_in_authority))
            continue;
        fputc(n++ ? '&' : '?', out);
        put_pct(out, o->keyword, "");
        fputc('=', out);
        if (conninfo_secret(o))
            fputs("***", out);
        else
            put_pct(out, o->val, "/:,@");
    }
}

/* The raw string is never copied: libpq parses it (keyword/value or URI
 * form, with every quoting, escaping and percent-encoding rule libpq
 * itself applies) and the result is rebuilt from the parsed options, in
 * the form it was written in, so no separator, quote or encoding can hide
 * a password from the mask.  libpq marks its secret options (password,
 * sslpassword, ...) with dispchar '*'.
 */
char *config_mask_conninfo(const char *conninfo)
{
    static const char *const schemes[] = {"postgresql://", "postgres://"};
    const char *scheme = NULL;
    char *err = NULL;
    char *buf = NULL;
    size_t len = 0;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
    FILE *out = NULL;
    int n = 0;

    if (!opts) {
        /* libpq's message may quote the text: not shown either. */
        bool nomem = !err;
        PQfreemem(err);
        if (nomem) {
            errno = ENOMEM;
            return NULL;
        }
        return strdup("***");
    }
    if (!(out = open_memstream(&buf, &len)))
        goto cleanup;
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if (!strncmp(conninfo, schemes[i], strlen(schemes[i])))
            scheme = schemes[i];
    if (scheme) {
        put_conninfo_uri(out, scheme, opts);
        goto cleanup;
    }
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        fprintf(out, "%s%s=", n++ ? " " : "", o->keyword);
        if (conninfo_secret(o))
            fputs("***", out);
        else
            put_conninfo_value(out, o->val);
    }
cleanup:
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (o->val && conninfo_secret(o))
            vnib_memburn(o->val, strlen(o->val));
    PQconninfoFree(opts);
    if (out && fclose(out) != 0) {
        free(buf);
        buf = NULL;
    }
    if (!buf)
        errno = ENOMEM;
    return buf;
}

static void print_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void config_print(const struct config *cfg, FILE *out)
{
    char table[64] = "";

    fprintf(out,
            "# vnibrokerd effective configuration (from %s; secrets masked)\n",
            cfg->path[0] ? cfg->path : "defaults");
    for (size_t i = 0; i < NROWS; i++) {
        const struct cfgtable_row *row = &rows[i];
        const char *dot = strchr(row->key, '.');
        size_t tlen = (size_t)(dot - row->key);
        if (strlen(table) != tlen || strncmp(table, row->key, tlen) != 0) {
            snprintf(table, sizeof(table), "%.*s", (int)tlen, row->key);
            fprintf(out, "\n[%s]\n", table);
        }
        fprintf(out, "# %s\n%s = ", row->doc, dot + 1);
        if (row->type == CFGTABLE_STRINGS) {
            char *copy = strdup(str_value(cfg, row));
            char *save = NULL;
            int n = 0;
            fputs("[", out);
            for (char *item = copy ? strtok_r(copy, CONFIG_LIST_SEP, &save)
                                   : NULL;
                 item;
                 item = strtok_r(NULL, CONFIG_LIST_SEP, &save)) {
                fputs(n++ ? ", " : "", out);
                print_string(out, item);
            }
            fputs("]\n", out);
            free(copy);
        } else if (row->type == CFGTABLE_BOOL)
            fprintf(out, "%s\n", int_value(cfg, row) ? "true" : "false");
        else if (row->type == CFGTABLE_INT)
            fprintf(out, "%ld\n", int_value(cfg, row));
        else if (row->flags & CFGTABLE_SECRET) {
            char *masked = config_mask_conninfo(str_value(cfg, row));
            print_string(out, masked ? masked : "***");
            fputc('\n', out);
            free(masked);
        } else {
            print_string(out, str_value(cfg, row));
            fputc('\n', out);
        }
    }
}
