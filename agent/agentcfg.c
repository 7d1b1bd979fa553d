/* Loading agent.toml (see agentcfg.h).
 *
 * One row per key gives its type, bounds and default; the TOML reader in
 * lib/ supplies the tree and the line of every key for error messages.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "vnib/toml.h"
#include "agent/agentcfg.h"

struct row {
    const char *key; /* "table.key" */
    bool is_int;
    size_t offset;
    long min, max, def_int;
    const char *def_str;
};

/* clang-format off */
#define S(k, f, d) { k, false, offsetof (struct agentcfg, f), 0, 0, 0, d }
#define I(k, f, lo, hi, d) { k, true, offsetof (struct agentcfg, f), lo, hi, d, NULL }
static const struct row rows[] = {
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
};
/* clang-format on */
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static char **str_at(struct agentcfg *cfg, const struct row *r)
{
    return (char **)((char *)cfg + r->offset);
}

static long *int_at(struct agentcfg *cfg, const struct row *r)
{
    return (long *)((char *)cfg + r->offset);
}

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
    for (size_t i = 0; i < NROWS; i++)
        if (!rows[i].is_int)
            free(*str_at(cfg, &rows[i]));
    free(cfg);
    errno = saved;
}

static const struct row *row_find(const char *key)
{
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(rows[i].key, key) == 0)
            return &rows[i];
    return NULL;
}

static bool table_known(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < NROWS; i++)
        if (strncmp(rows[i].key, name, n) == 0 && rows[i].key[n] == '.')
            return true;
    return false;
}

static int set_one(struct agentcfg *cfg,
                   const struct row *r,
                   json_t *val,
                   const char *where,
                   vnib_error_t *errp)
{
    errno = EINVAL;
    if (!r->is_int) {
        if (!json_is_string(val))
            return errprintf(errp, "%s: %s: expected a string", where, r->key);
        if (agentcfg_set(str_at(cfg, r), json_string_value(val)) < 0)
            return errprintf(errp, "%s: out of memory", where);
        return 0;
    }
    if (!json_is_integer(val))
        return errprintf(errp, "%s: %s: expected an integer", where, r->key);
    json_int_t v = json_integer_value(val);
    if (v < r->min || v > r->max)
        return errprintf(errp,
                         "%s: %s: %lld is out of range %ld-%ld",
                         where,
                         r->key,
                         (long long)v,
                         r->min,
                         r->max);
    *int_at(cfg, r) = (long)v;
    return 0;
}

static int apply(struct agentcfg *cfg,
                 const char *path,
                 json_t *root,
                 json_t *lines,
                 vnib_error_t *errp)
{
    const char *tname, *name;
    json_t *table, *val;
    char where[512], key[256];

    json_object_foreach (root, tname, table) {
        int line = (int)json_integer_value(json_object_get(lines, tname));
        snprintf(where, sizeof(where), "%s:%d", path, line);
        if (!json_is_object(table) || !table_known(tname)) {
            errno = EINVAL;
            return errprintf(errp,
                             "%s: %s: unknown %s",
                             where,
                             tname,
                             json_is_object(table) ? "table" : "key");
        }
        json_object_foreach (table, name, val) {
            snprintf(key, sizeof(key), "%s.%s", tname, name);
            line = (int)json_integer_value(json_object_get(lines, key));
            snprintf(where, sizeof(where), "%s:%d", path, line);
            const struct row *r = row_find(key);
            if (!r) {
                errno = EINVAL;
                return errprintf(errp, "%s: %s: unknown key", where, key);
            }
            if (set_one(cfg, r, val, where, errp) < 0)
                return -1;
        }
    }
    return 0;
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
    for (size_t i = 0; i < NROWS; i++) {
        if (rows[i].is_int)
            *int_at(cfg, &rows[i]) = rows[i].def_int;
        else if (agentcfg_set(str_at(cfg, &rows[i]), rows[i].def_str) < 0)
            goto nomem;
    }
    if (!must_exist && stat(path, &st) < 0 && errno == ENOENT)
        return cfg;
    /* The file names the library loaded into this root process. */
    if (!(root = toml_parse_trusted_file(path, &lines, errp))
        || apply(cfg, path, root, lines, errp) < 0)
        goto error;
    if (strcmp(cfg->backend, "libcxi") != 0
        && strcmp(cfg->backend, "sim") != 0) {
        errno = EINVAL;
        int line =
            (int)json_integer_value(json_object_get(lines, "nic.backend"));
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
