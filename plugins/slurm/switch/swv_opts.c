/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_opts: parsing SwitchParameters and --network for switch/vnib.
 *
 * Both strings are lists of comma-separated items, each KEY or KEY=VALUE.
 * The settings table (config_keys) says which field each SwitchParameters
 * key fills and how; --network items are few enough for one function.
 * Nothing here allocates beyond one working copy of the string, and
 * nothing logs: errors go back in a vnib_error_t.
 */
#include "swv_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWV_PARAMS_MAX 4096 /* bytes in one SwitchParameters or --network */

enum key_kind {
    KEY_PATH,     /* a string into a char[SWV_PATH_MAX] */
    KEY_OUTAGE,   /* fail|open */
    KEY_VNIS,     /* 0-4; for vnib_vnis also "default" (-1) */
    KEY_HWCOLL,   /* on|off|auto */
    KEY_MS,       /* a positive number of milliseconds */
    KEY_ONOFF,    /* on|off */
    KEY_HOLD_S,   /* seconds 0-SWV_BROKER_HOLD_MAX_S, more read as the max */
    KEY_FALLBACK, /* job|wait|fail */
};

struct config_key {
    const char *name;
    enum key_kind kind;
    size_t offset;
};

static const struct config_key config_keys[] = {
    {"vnib_url", KEY_PATH, offsetof(struct swv_config, url)},
    {"vnib_token_file", KEY_PATH, offsetof(struct swv_config, token_file)},
    {"vnib_cacert", KEY_PATH, offsetof(struct swv_config, cacert)},
    {"vnib_agent_config", KEY_PATH, offsetof(struct swv_config, agent_config)},
    {"vnib_release_spool", KEY_PATH, offsetof(struct swv_config, spool)},
    {"vnib_helper", KEY_PATH, offsetof(struct swv_config, helper)},
    {"vnib_outage", KEY_OUTAGE, offsetof(struct swv_config, outage)},
    {"vnib_lease", KEY_ONOFF, offsetof(struct swv_config, lease)},
    {"vnib_vnis", KEY_VNIS, offsetof(struct swv_config, vnis)},
    {"vnib_step_vnis", KEY_VNIS, offsetof(struct swv_config, step_vnis)},
    {"vnib_step_fallback",
     KEY_FALLBACK,
     offsetof(struct swv_config, step_fallback)},
    {"vnib_hwcoll", KEY_HWCOLL, offsetof(struct swv_config, hwcoll)},
    {"vnib_timeout_ms", KEY_MS, offsetof(struct swv_config, timeout_ms)},
    {"vnib_retry_busy_ms", KEY_MS, offsetof(struct swv_config, retry_busy_ms)},
    {"vnib_free_poll_ms", KEY_MS, offsetof(struct swv_config, free_poll_ms)},
    {"vnib_broker_hold_s",
     KEY_HOLD_S,
     offsetof(struct swv_config, broker_hold_s)},
};

const char *const swv_rsrc_names[SWV_RSRC_COUNT] = {
    "ptes", "txqs", "tgqs", "eqs", "cts", "les", "tles", "acs"};

/* HPE's --network keys that switch/vnib accepts and ignores: the broker
 * decides traffic classes, and the agent always fits the limits to what
 * the NIC has left (adjust_limits). */
static const char *const hpe_ignored[] = {
    "tcs",
    "single_node_vni",
    "adjust_limits",
    "no_adjust_limits",
    "disable_rdzv_get",
    NULL,
};

static void limits_unset(struct swv_limits *l)
{
    for (int r = 0; r < SWV_RSRC_COUNT; r++)
        l->def[r] = l->res[r] = l->max[r] = -1;
    l->depth = -1;
}

bool swv_limits_any(const struct swv_limits *l)
{
    for (int r = 0; r < SWV_RSRC_COUNT; r++)
        if (l->def[r] >= 0 || l->res[r] >= 0 || l->max[r] >= 0)
            return true;
    return l->depth >= 0;
}

/* HPE's def_<rsrc>, res_<rsrc>, max_<rsrc> and (with depth_ok) depth into
 * l.  Returns 1 when key is one, 0 when not, -1 with errno EINVAL and
 * errp for a bad value. */
static int limit_item(const char *what,
                      struct swv_limits *l,
                      const char *key,
                      const char *val,
                      bool depth_ok,
                      vnib_error_t *errp)
{
    int32_t *field = NULL;
    long bound = SWV_LIMIT_MAX, lo = 0, v;
    char *end;

    if (depth_ok && strcmp(key, "depth") == 0) {
        field = &l->depth;
        bound = SWV_DEPTH_MAX;
        lo = 1;
    } else if (strncmp(key, "def_", 4) == 0 || strncmp(key, "res_", 4) == 0
               || strncmp(key, "max_", 4) == 0) {
        int32_t *row = key[0] == 'd' ? l->def : key[0] == 'r' ? l->res : l->max;
        for (int r = 0; r < SWV_RSRC_COUNT && !field; r++)
            if (strcmp(key + 4, swv_rsrc_names[r]) == 0)
                field = &row[r];
        if (!field) {
            errno = EINVAL;
            return errprintf(errp,
                             "%s: %s: no such resource (ptes, txqs, tgqs, "
                             "eqs, cts, les, tles or acs)",
                             what,
                             key);
        }
    } else
        return 0;
    errno = 0;
    v = val ? strtol(val, &end, 10) : 0;
    if (!val || val[0] < '0' || val[0] > '9' || *end != '\0' || errno != 0
        || v < lo || v > bound) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: %s: want a number %ld-%ld, not '%s'",
                         what,
                         key,
                         lo,
                         bound,
                         val ? val : "");
    }
    *field = (int32_t)v;
    return 1;
}

static void config_defaults(struct swv_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->token_file,
             sizeof(cfg->token_file),
             "%s",
             "/etc/vnibroker/slurmctld.token");
    snprintf(cfg->agent_config,
             sizeof(cfg->agent_config),
             "%s",
             "/etc/vnibroker/agent.toml");
    snprintf(cfg->spool,
             sizeof(cfg->spool),
             "%s",
             "/var/spool/vnibroker/slurm/release");
    cfg->outage = SWV_OUTAGE_FAIL;
    cfg->lease = true;
    cfg->vnis = -1;
    cfg->step_vnis = 0;
    cfg->timeout_ms = 5000;
    cfg->retry_busy_ms = 5000;
    cfg->free_poll_ms = 1000;
    cfg->broker_hold_s = 60;
    limits_unset(&cfg->limits);
}

/* A count of VNIs, 0-4. */
static int parse_vnis(const char *key,
                      const char *val,
                      int *out,
                      vnib_error_t *errp)
{
    if (val == NULL || val[0] < '0' || val[0] > '0' + VNIB_SERVICE_VNIS_MAX
        || val[1] != '\0') {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: want a number of VNIs 0-%d, not '%s'",
                         key,
                         VNIB_SERVICE_VNIS_MAX,
                         val ? val : "");
    }
    *out = val[0] - '0';
    return 0;
}

static const char *const fallback_names[] = {
    [SWV_FALLBACK_JOB] = "job",
    [SWV_FALLBACK_WAIT] = "wait",
    [SWV_FALLBACK_FAIL] = "fail",
};

const char *swv_step_fallback_name(enum swv_step_fallback f)
{
    return (unsigned)f < sizeof(fallback_names) / sizeof(fallback_names[0])
               ? fallback_names[f]
               : "?";
}

static int parse_fallback(const char *key,
                          const char *val,
                          enum swv_step_fallback *out,
                          vnib_error_t *errp)
{
    for (size_t i = 0; i < sizeof(fallback_names) / sizeof(fallback_names[0]);
         i++) {
        if (val != NULL && strcmp(val, fallback_names[i]) == 0) {
            *out = (enum swv_step_fallback)i;
            return 0;
        }
    }
    errno = EINVAL;
    return errprintf(
        errp, "%s: want job, wait or fail, not '%s'", key, val ? val : "");
}

static int parse_hwcoll(const char *key,
                        const char *val,
                        char *out,
                        vnib_error_t *errp)
{
    if (val == NULL
        || (strcmp(val, "on") != 0 && strcmp(val, "off") != 0
            && strcmp(val, "auto") != 0)) {
        errno = EINVAL;
        return errprintf(
            errp, "%s: want on, off or auto, not '%s'", key, val ? val : "");
    }
    snprintf(out, 8, "%s", val);
    return 0;
}

static int apply_config_key(struct swv_config *cfg,
                            const struct config_key *k,
                            const char *val,
                            vnib_error_t *errp)
{
    char *field = (char *)cfg + k->offset;
    char *end;
    long ms;

    if (val == NULL) {
        errno = EINVAL;
        return errprintf(errp, "SwitchParameters: %s needs a value", k->name);
    }
    switch (k->kind) {
        case KEY_PATH:
            if (strlen(val) >= SWV_PATH_MAX) {
                errno = EINVAL;
                return errprintf(
                    errp, "SwitchParameters: %s is too long", k->name);
            }
            snprintf(field, SWV_PATH_MAX, "%s", val);
            return 0;
        case KEY_OUTAGE:
            if (strcmp(val, "fail") == 0)
                cfg->outage = SWV_OUTAGE_FAIL;
            else if (strcmp(val, "open") == 0)
                cfg->outage = SWV_OUTAGE_OPEN;
            else {
                errno = EINVAL;
                return errprintf(errp,
                                 "SwitchParameters: vnib_outage: want fail or "
                                 "open, not '%s'",
                                 val);
            }
            return 0;
        case KEY_ONOFF:
            if (strcmp(val, "on") != 0 && strcmp(val, "off") != 0) {
                errno = EINVAL;
                return errprintf(errp,
                                 "SwitchParameters: %s: want on or off, not "
                                 "'%s'",
                                 k->name,
                                 val);
            }
            *(bool *)(void *)field = strcmp(val, "on") == 0;
            return 0;
        case KEY_VNIS:
            if (k->offset == offsetof(struct swv_config, vnis)
                && strcmp(val, "default") == 0) {
                cfg->vnis = -1;
                return 0;
            }
            return parse_vnis(k->name, val, (int *)(void *)field, errp);
        case KEY_HWCOLL:
            return parse_hwcoll(k->name, val, field, errp);
        case KEY_FALLBACK:
            return parse_fallback("SwitchParameters: vnib_step_fallback",
                                  val,
                                  (enum swv_step_fallback *)(void *)field,
                                  errp);
        case KEY_MS:
            errno = 0;
            ms = strtol(val, &end, 10);
            if (errno != 0 || end == val || *end != '\0' || ms <= 0
                || ms > 600000) {
                errno = EINVAL;
                return errprintf(errp,
                                 "SwitchParameters: %s: want milliseconds "
                                 "1-600000, not '%s'",
                                 k->name,
                                 val);
            }
            *(long *)(void *)field = ms;
            return 0;
        case KEY_HOLD_S:
            errno = 0;
            ms = strtol(val, &end, 10); /* seconds; decimal, even "030" */
            if (val[0] < '0' || val[0] > '9' || *end != '\0'
                || (errno != 0 && errno != ERANGE)) {
                errno = EINVAL;
                return errprintf(errp,
                                 "SwitchParameters: %s: want seconds 0-%d, "
                                 "not '%s'",
                                 k->name,
                                 SWV_BROKER_HOLD_MAX_S,
                                 val);
            }
            if (errno == ERANGE || ms > SWV_BROKER_HOLD_MAX_S) {
                snprintf(cfg->warning,
                         sizeof(cfg->warning),
                         "SwitchParameters: %s=%s is more than %d s; "
                         "read as %d",
                         k->name,
                         val,
                         SWV_BROKER_HOLD_MAX_S,
                         SWV_BROKER_HOLD_MAX_S);
                ms = SWV_BROKER_HOLD_MAX_S;
            }
            *(long *)(void *)field = ms;
            return 0;
    }
    errno = EINVAL;
    return errprintf(errp, "SwitchParameters: %s: unknown kind", k->name);
}

/* Split s (a working copy) at commas; call item(key, value-or-NULL) for
 * each non-empty item.  Spaces around items are not allowed by Slurm's
 * parser either, so none are stripped. */
typedef int (*item_f)(void *arg,
                      const char *key,
                      const char *val,
                      vnib_error_t *errp);

static int for_each_item(
    const char *what, const char *s, item_f item, void *arg, vnib_error_t *errp)
{
    char *copy = NULL, *save = NULL, *tok, *eq;
    int rc = -1;

    if (s == NULL || s[0] == '\0')
        return 0;
    if (strlen(s) > SWV_PARAMS_MAX) {
        errno = EINVAL;
        return errprintf(
            errp, "%s: longer than %d bytes", what, SWV_PARAMS_MAX);
    }
    if ((copy = strdup(s)) == NULL) {
        errprintf(errp, "%s: out of memory", what);
        goto cleanup;
    }
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        eq = strchr(tok, '=');
        if (eq != NULL)
            *eq++ = '\0';
        if (item(arg, tok, eq, errp) < 0)
            goto cleanup;
    }
    rc = 0;
cleanup:
    free(copy);
    return rc;
}

static int config_item(void *arg,
                       const char *key,
                       const char *val,
                       vnib_error_t *errp)
{
    size_t i;

    for (i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++) {
        if (strcmp(key, config_keys[i].name) == 0)
            return apply_config_key(arg, &config_keys[i], val, errp);
    }
    struct swv_config *cfg = arg;
    int rc =
        limit_item("SwitchParameters", &cfg->limits, key, val, false, errp);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    errno = EINVAL;
    return errprintf(errp, "SwitchParameters: unknown key '%s'", key);
}

int swv_config_parse(struct swv_config *cfg,
                     const char *params,
                     vnib_error_t *errp)
{
    config_defaults(cfg);
    return for_each_item("SwitchParameters", params, config_item, cfg, errp);
}

static bool hpe_key_ignored(const char *key)
{
    size_t i;

    for (i = 0; hpe_ignored[i] != NULL; i++) {
        if (strcmp(key, hpe_ignored[i]) == 0)
            return true;
    }
    return false;
}

struct net_arg {
    struct swv_network *net;
    bool step; /* parsing the step's --network */
};

static int network_item(void *arg,
                        const char *key,
                        const char *val,
                        vnib_error_t *errp)
{
    struct net_arg *a = arg;
    struct swv_network *net = a->net;
    bool job = !a->step;

    if (strcmp(key, "no_vni") == 0 && val == NULL) {
        if (job)
            net->vnis = 0;
        net->step_vnis = 0;
        return 0;
    }
    if (strcmp(key, "job_vni") == 0 && val == NULL) {
        if (job && net->vnis <= 0)
            net->vnis = 1;
        return 0;
    }
    if (strcmp(key, "vnis") == 0) {
        int n;

        if (parse_vnis("--network vnis", val, &n, errp) < 0)
            return -1;
        if (job)
            net->vnis = n;
        return 0;
    }
    if (strcmp(key, "step_vnis") == 0)
        return parse_vnis("--network step_vnis", val, &net->step_vnis, errp);
    if (strcmp(key, "step_fallback") == 0)
        return parse_fallback(
            "--network step_fallback", val, &net->step_fallback, errp);
    if (strcmp(key, "hwcoll") == 0) {
        char v[8];

        if (parse_hwcoll("--network hwcoll", val ? val : "on", v, errp) < 0)
            return -1;
        if (job)
            snprintf(net->hwcoll, sizeof(net->hwcoll), "%s", v);
        return 0;
    }
    int rc = limit_item("--network", &net->limits, key, val, true, errp);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    if (hpe_key_ignored(key))
        return 0;
    errno = EINVAL;
    return errprintf(errp, "--network: unknown option '%s'", key);
}

int swv_network_parse(const struct swv_config *cfg,
                      const char *job_net,
                      const char *step_net,
                      struct swv_network *net,
                      vnib_error_t *errp)
{
    struct net_arg a = {.net = net, .step = false};

    memset(net, 0, sizeof(*net));
    net->vnis = cfg->vnis;
    net->step_vnis = cfg->step_vnis;
    net->step_fallback = cfg->step_fallback;
    snprintf(net->hwcoll, sizeof(net->hwcoll), "%s", cfg->hwcoll);
    net->limits = cfg->limits;
    if (for_each_item("--network", job_net, network_item, &a, errp) < 0)
        return -1;
    a.step = true;
    return for_each_item("--network", step_net, network_item, &a, errp);
}

int swv_expand_node(const char *pattern,
                    const char *node,
                    char *out,
                    size_t size)
{
    size_t o = 0, n;
    const char *p;

    for (p = pattern; *p != '\0'; p++) {
        if (p[0] == '%' && p[1] == 'n') {
            n = strlen(node);
            if (o + n >= size)
                goto toolong;
            memcpy(out + o, node, n);
            o += n;
            p++;
            continue;
        }
        if (o + 1 >= size)
            goto toolong;
        out[o++] = *p;
    }
    out[o] = '\0';
    return 0;
toolong:
    errno = ENAMETOOLONG;
    return -1;
}
