/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibrokerd configuration: one immutable struct, loaded from TOML.
 *
 * Every setting is a row in the table in config.c (name, type, place in
 * struct config, bounds, default, whether it is secret, and a one-line
 * description).  The same table drives parsing, strict validation (an
 * unknown key is an error naming file and line), defaults, and the
 * `--check-config` printout.  Once loaded the struct is never modified, so
 * every thread may read it without locks.
 */
#ifndef VNIB_SERVER_CONFIG_H
#define VNIB_SERVER_CONFIG_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "vnib/cfgtable.h"
#include "vnib/error.h"

struct idset;

/* Items of a CFGTABLE_STRINGS value (a TOML array of strings) are kept in
 * one string, joined by this separator, which items may not contain.
 */
#define CONFIG_LIST_SEP CFGTABLE_LIST_SEP

/* server.tls_priorities' default: TLS 1.2 and 1.3 only, key exchanges
 * with forward secrecy only (no static RSA), AEAD ciphers only (no CBC).
 */
#define CONFIG_TLS_PRIORITIES                                        \
    "SECURE192:+SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-RSA:" \
    "-AES-128-CBC:-AES-256-CBC:%SAFE_RENEGOTIATION"

/* Default configuration file of an installed broker. */
#define CONFIG_DEFAULT_PATH "/etc/vnibroker/vnibroker.toml"

struct cidr;

struct config {
    char *path; /* file the configuration came from ("" for defaults) */

    struct {
        char *address;             /* numeric IPv4 or IPv6 address to bind */
        long port;                 /* TCP port; 0 picks a free one */
        char *tls_cert;            /* PEM certificate chain; "" = plain HTTP */
        char *tls_key;             /* PEM private key (mode 0600) */
        char *tls_priorities;      /* GnuTLS priority string */
        long threads;              /* libmicrohttpd threads (network I/O) */
        long workers;              /* request workers; 0: see config.c */
        long queue_limit;          /* requests queued for them at most */
        long max_connections;      /* open connections accepted at once */
        long connection_timeout_s; /* idle or slow connections are cut */
        long per_ip_connections;   /* open connections per client address */
        long request_deadline_ms;  /* headers + body must arrive within */
        char *priority_addresses;  /* CONFIG_LIST_SEP-joined blocks */
        long priority_connections; /* their budget */
        long queue_deadline_ms;    /* a request must start within */
        long max_header_bytes;     /* request line + headers per connection */
        long max_body_bytes;       /* upper bound for any route's body */
        long shutdown_timeout_s;   /* in-flight grace period on SIGTERM */
        long node_cache_ms;        /* node-fetch cache lifetime; 0 = off */
        long report_rate;          /* node reports per second per node */
        long report_burst;         /* and at once */
    } server;

    struct {
        char *conninfo; /* libpq connection string (may hold a password) */
        long pool_size; /* connections kept open */
        long connect_timeout_ms; /* per connection attempt */
        long query_timeout_ms;   /* per statement; then the request gets 503 */
        long acquire_timeout_ms; /* waiting for a free pooled connection */
        long group_max;          /* reserves (releases) per transaction */
        long group_leaders;      /* groups of each kind written at once */
        long report_group_max;   /* node reports per transaction */
        long report_group_leaders; /* report groups written at once */
    } database;

    struct {
        char *tokens_file;   /* "ROLE NAME SHA256HEX" lines; "" = none */
        char *node_key_file; /* node-token key; "" = no node tokens */
        /* During a rotation: the node key before it, and the end of its
         * overlap (RFC 3339 UTC); "" = none. */
        char *node_key_previous_file;
        char *node_key_previous_until;
    } auth;

    struct {
        char *pool;            /* VNIs handed out, e.g. "1024-65535" */
        long per_job_default;  /* VNIs per job when not asked (0-4) */
        char *traffic_classes; /* comma-joined class names */
        long sweep_interval_s; /* quarantine sweeper period */
        long retain_days;      /* history kept; 0 = for ever */
    } vni;

    struct {
        char *name;                /* this cluster's name */
        char *topology_file;       /* Slurm topology.conf; "" = none */
        long reject_unknown_nodes; /* with it: refuse (1) or warn (0) */
    } cluster;

    struct {
        long enabled;              /* multicast reservations on */
        char *fm_url;              /* Fabric Manager base URL */
        char *auth;                /* none, basic, oauth */
        char *user;                /* basic */
        char *password_file;       /* basic */
        char *token_url;           /* oauth */
        char *client_id;           /* oauth */
        char *client_secret_file;  /* oauth */
        char *ca_file;             /* "" = system store */
        char *cert_file;           /* mTLS, "" = none */
        char *key_file;            /* mTLS */
        long tls_verify;           /* off only when set false */
        long allow_insecure_http;  /* credentials over http:// (warned) */
        char *job_prefix;          /* "" = cluster.name */
        long min_nodes;            /* auto eligibility; 0 = on request */
        long addrs_per_job;        /* 0 = computed */
        long total_addrs;          /* M */
        long system_size;          /* S */
        long min_job_size;         /* s */
        long jobs_per_node;        /* j */
        long reserve_timeout_ms;   /* bound on a reserve's FM call */
        long request_concurrency;  /* such calls at once; 0 = threads / 4 */
        long request_timeout_ms;   /* other FM calls */
        char *token_key_file;      /* seals session tokens at rest */
        long fm_concurrency;       /* release-queue calls at once */
        long retry_max_s;          /* back-off cap */
        long reconcile_interval_s; /* leader's reconciliation period */
        /* The key before a rotation: opens, never seals; "" = none. */
        char *token_key_previous_file;
    } hwcoll;

    struct {
        char *key_file;  /* Ed25519 private key (PEM); "" = no leases */
        long ttl_s;      /* a lease's life */
        long max_skew_s; /* clock difference allowed with the nodes */
    } lease;

    struct {
        char *on_reservation_lost; /* argv, CONFIG_LIST_SEP-joined; "" none */
        long timeout_s;            /* hook run-time bound */
    } hooks;

    struct {
        char *level; /* error, warning, notice, info, debug */
    } log;

    struct {
        long hostlist_max_names; /* bound on a hostlist's expansion */
    } limits;

    int log_level;          /* log.level, parsed */
    struct idset *vni_pool; /* vni.pool, parsed */
    unsigned tcs_mask;      /* vni.traffic_classes as TCLASS_* bits */
    struct cidr *priority;  /* server.priority_addresses, parsed */
    size_t npriority;
    /* auth.node_key_previous_until, parsed (0 when no previous key). */
    time_t node_key_previous_until;
    /* hwcoll.min_job_size is in the file (not its default): with a
     * topology file, s is then this value rather than S / leaf switches.
     */
    bool min_job_size_set;
};

/* Load and validate a configuration file.  Keys absent from the file take
 * their defaults.  Returns NULL with errno set and errp holding
 * "FILE:LINE: KEY: what is wrong" (or "FILE: ..." for whole-file errors).
 */
struct config *config_load(const char *path,
                           vnib_error_t *errp) VNIB_MUST_CHECK;

/* The key ("hwcoll.fm_url" or "hwcoll.token_url") whose plain http://
 * URL would carry hwcoll's basic or OAuth credentials in clear, or NULL.
 * config_load refuses it unless hwcoll.allow_insecure_http is true.
 */
const char *config_insecure_http(const struct config *cfg);

/* A configuration with every default (used by tests and `make run`). */
struct config *config_defaults(vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free a configuration (NULL accepted), wiping secret values. */
void config_destroy(struct config *cfg);

/* Print the effective configuration as TOML, one commented key per line,
 * with secrets masked.
 */
void config_print(const struct config *cfg, FILE *out);

/* A libpq connection string for logs and printouts: parsed by libpq and
 * rebuilt in keyword/value form (a URI too) with every option libpq
 * marks as secret (password, sslpassword) shown as "***".  A string
 * libpq cannot parse comes back as "***", never as text.  Caller frees.
 * Returns NULL on ENOMEM.
 */
char *config_mask_conninfo(const char *conninfo);

#endif /* !VNIB_SERVER_CONFIG_H */
