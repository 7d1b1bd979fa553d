/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading agent.toml (see agentcfg.h).
 *
 * One row per key gives its type, bounds and default; the TOML reader in
 * lib/ supplies the tree and the line of every key, and lib/cfgtable.c
 * applies the one to the other with messages naming the file and line.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "vnib/cfgtable.h"
#include "vnib/toml.h"
#include "agent/agentcfg.h"

/* clang-format off */
#define S(k, f, d) \
    { k, CFGTABLE_STRING, offsetof (struct agentcfg, f), 0, 0, d, 0, 0, NULL }
#define L(k, f, d) \
    { k, CFGTABLE_STRINGS, offsetof (struct agentcfg, f), 0, 0, d, 0, 0, NULL }
#define I(k, f, lo, hi, d) \
    { k, CFGTABLE_INT, offsetof (struct agentcfg, f), lo, hi, NULL, d, 0, NULL }
static const struct cfgtable_row rows[] = {
    S("broker.url", url, "http://127.0.0.1:8080"),
    S("broker.token_file", token_file, "/etc/vnibroker/node.token"),
    S("broker.cacert", cacert, ""),
    I("broker.fetch_timeout_ms", fetch_timeout_ms, 100, 3600000, 30000),
    I("broker.request_timeout_ms", request_timeout_ms, 100, 600000, 5000),
    I("broker.spool_after_ms", spool_after_ms, 100, 3600000, 5000),
    S("node.name", name, ""),
    S("node.state_dir", state_dir, "/run/vnibroker"),
    S("node.spool_dir", spool_dir, "/var/spool/vnibroker/agent"),
    S("nic.backend", backend, "libcxi"),
    S("nic.sim_dir", sim_dir, "/var/lib/vnibroker/sim"),
    S("nic.libcxi", libcxi, "libcxi.so.1"),
    I("nic.floor_percent", floor_percent, 0, 100, 25),
    I("nic.epilog_retry_busy_ms", epilog_retry_busy_ms, 0, 3600000, 5000),
    I("nic.housekeeping_retry_busy_ms", housekeeping_retry_busy_ms, 0,
      86400000, 300000),
    L("lease.public_keys", lease_public_keys, "/etc/vnibroker/lease.pub"),
    I("lease.max_skew_s", lease_max_skew_s, 0, 3600, 30),
};
/* clang-format on */

static const struct cfgtable settings = {rows, sizeof(rows) / sizeof(rows[0])};

int agentcfg_set(char **field, const char *value)
{
    char *s = strdup(value);
    if (!s)
        return -1;
    free(*field);
    *field = s;
    return 0;
}

void agentcfg_destroy(struct agentcfg *cfg)
{
    if (!cfg)
        return;
    int saved = errno;
    cfgtable_free(&settings, cfg);
    free(cfg);
    errno = saved;
}

struct agentcfg *agentcfg_load(const char *path,
                               bool must_exist,
                               vnib_error_t *errp)
{
    struct agentcfg *cfg = calloc(1, sizeof(*cfg));
    json_t *root = NULL, *lines = NULL;
    struct stat st;

    if (!cfg)
        goto nomem;
    if (cfgtable_defaults(&settings, cfg, errp) < 0)
        goto nomem;
    if (!must_exist && stat(path, &st) < 0 && errno == ENOENT)
        return cfg;
    /* The file names the library loaded into this root process. */
    if (!(root = toml_parse_trusted_file(path, &lines, errp))
        || cfgtable_apply(&settings, cfg, path, root, lines, errp) < 0)
        goto error;
    if (strcmp(cfg->backend, "libcxi") != 0
        && strcmp(cfg->backend, "sim") != 0) {
        errno = EINVAL;
        int line = cfgtable_line(lines, "nic.backend");
        errprintf(errp,
                  "%s:%d: nic.backend: '%s' is not libcxi or sim",
                  path,
                  line,
                  cfg->backend);
        goto error;
    }
    json_decref(root);
    json_decref(lines);
    return cfg;
nomem:
    errno = ENOMEM;
    errprintf(errp, "out of memory");
error:
    json_decref(root);
    json_decref(lines);
    agentcfg_destroy(cfg);
    return NULL;
}
