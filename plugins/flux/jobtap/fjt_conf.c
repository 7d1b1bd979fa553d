/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fjt_conf: the jobtap plugin's settings and a job's options (see
 * fjt_conf.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/flux/jobtap/fjt_conf.h"

/* The value of key: the load argument's when given, else the table's. */
static json_t *get(json_t *table, json_t *load, const char *key)
{
    json_t *v = load ? json_object_get(load, key) : NULL;
    return v ? v : (table ? json_object_get(table, key) : NULL);
}

static int get_str(json_t *table,
                   json_t *load,
                   const char *key,
                   char *out,
                   size_t size,
                   vnib_error_t *errp)
{
    json_t *v = get(table, load, key);
    if (!v)
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= size) {
        errno = EINVAL;
        return errprintf(errp,
                         "vnibroker.%s must be a string of at most %zu bytes",
                         key,
                         size - 1);
    }
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

/* An integer key; load arguments given on the command line are strings. */
static int get_long(json_t *table,
                    json_t *load,
                    const char *key,
                    long min,
                    long max,
                    long *out,
                    vnib_error_t *errp)
{
    json_t *v = get(table, load, key);
    long n;
    if (!v)
        return 0;
    if (json_is_integer(v)) {
        n = (long)json_integer_value(v);
    } else if (json_is_string(v)) {
        char *end;
        errno = 0;
        n = strtol(json_string_value(v), &end, 10);
        if (errno || end == json_string_value(v) || *end)
            goto bad;
    } else {
        goto bad;
    }
    if (n < min || n > max)
        goto bad;
    *out = n;
    return 0;
bad:
    errno = EINVAL;
    return errprintf(
        errp, "vnibroker.%s must be an integer from %ld to %ld", key, min, max);
}

static int get_bool(
    json_t *table, json_t *load, const char *key, bool *out, vnib_error_t *errp)
{
    json_t *v = get(table, load, key);
    if (!v)
        return 0;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "true") || !strcmp(s, "1")) {
            *out = true;
            return 0;
        }
        if (!strcmp(s, "false") || !strcmp(s, "0")) {
            *out = false;
            return 0;
        }
    }
    errno = EINVAL;
    return errprintf(errp, "vnibroker.%s must be true or false", key);
}

static bool valid_hwcoll(const char *s)
{
    return !strcmp(s, "on") || !strcmp(s, "off") || !strcmp(s, "auto");
}

static const char *const known_keys[] = {
    "url",
    "token-file",
    "cacert",
    "spool-dir",
    "timeout-ms",
    "reserve-timeout-ms",
    "retry-ms",
    "threads",
    "reserve-fatal",
    "vnis-per-job",
    "hwcoll",
    "reconcile-s",
    "token-name",
    "pool-wait-ms",
    NULL,
};

static int check_keys(json_t *o, const char *what, vnib_error_t *errp)
{
    const char *key;
    json_t *v;

    if (!o)
        return 0;
    if (!json_is_object(o)) {
        errno = EINVAL;
        return errprintf(errp, "%s must be a table", what);
    }
    json_object_foreach (o, key, v) {
        bool known = false;
        for (int i = 0; known_keys[i]; i++)
            if (!strcmp(key, known_keys[i]))
                known = true;
        if (!known) {
            errno = EINVAL;
            return errprintf(errp, "%s: unknown key '%s'", what, key);
        }
    }
    return 0;
}

int fjt_conf_parse(struct fjt_conf *c,
                   json_t *table,
                   json_t *load,
                   vnib_error_t *errp)
{
    long n;

    memset(c, 0, sizeof(*c));
    snprintf(c->token_file, sizeof(c->token_file), FJT_DEFAULT_TOKEN_FILE);
    snprintf(c->spool_dir, sizeof(c->spool_dir), FJT_DEFAULT_SPOOL_DIR);
    c->timeout_ms = 10000;
    c->reserve_timeout_ms = 60000;
    c->retry_ms = 30000;
    c->threads = 4;
    c->reserve_fatal = true;
    c->vnis_per_job = -1;
    c->reconcile_s = 300;
    c->pool_wait_ms = FJT_DEFAULT_POOL_WAIT_MS;

    if (check_keys(table, "[vnibroker]", errp) < 0
        || check_keys(load, "the plugin's arguments", errp) < 0
        || get_str(table, load, "url", c->url, sizeof(c->url), errp) < 0
        || get_str(table,
                   load,
                   "token-file",
                   c->token_file,
                   sizeof(c->token_file),
                   errp)
               < 0
        || get_str(table, load, "cacert", c->cacert, sizeof(c->cacert), errp)
               < 0
        || get_str(table,
                   load,
                   "spool-dir",
                   c->spool_dir,
                   sizeof(c->spool_dir),
                   errp)
               < 0
        || get_str(table, load, "hwcoll", c->hwcoll, sizeof(c->hwcoll), errp)
               < 0
        || get_str(table,
                   load,
                   "token-name",
                   c->token_name,
                   sizeof(c->token_name),
                   errp)
               < 0
        || get_long(table, load, "reconcile-s", 0, 86400, &c->reconcile_s, errp)
               < 0
        || get_long(
               table, load, "timeout-ms", 100, 600000, &c->timeout_ms, errp)
               < 0
        || get_long(table,
                    load,
                    "reserve-timeout-ms",
                    0,
                    3600000,
                    &c->reserve_timeout_ms,
                    errp)
               < 0
        || get_long(table, load, "retry-ms", 100, 3600000, &c->retry_ms, errp)
               < 0
        || get_long(table,
                    load,
                    "pool-wait-ms",
                    0,
                    FJT_MAX_POOL_WAIT_MS,
                    &c->pool_wait_ms,
                    errp)
               < 0
        || get_bool(table, load, "reserve-fatal", &c->reserve_fatal, errp) < 0)
        return -1;
    n = c->threads;
    if (get_long(table, load, "threads", 1, 32, &n, errp) < 0)
        return -1;
    c->threads = (int)n;
    n = c->vnis_per_job;
    if (get_long(table, load, "vnis-per-job", -1, 4, &n, errp) < 0)
        return -1;
    c->vnis_per_job = (int)n;
    if (c->url[0] == '\0') {
        errno = EINVAL;
        return errprintf(errp,
                         "vnibroker.url is not set (the broker, "
                         "\"https://host:port\")");
    }
    if (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8)) {
        errno = EINVAL;
        return errprintf(errp, "vnibroker.url must start http:// or https://");
    }
    if (c->hwcoll[0] && !valid_hwcoll(c->hwcoll)) {
        errno = EINVAL;
        return errprintf(errp, "vnibroker.hwcoll must be on, off or auto");
    }
    if (c->token_file[0] != '/' || c->spool_dir[0] != '/'
        || (c->cacert[0] && c->cacert[0] != '/')) {
        errno = EINVAL;
        return errprintf(
            errp,
            "vnibroker.token-file, spool-dir and cacert must be absolute");
    }
    return 0;
}

int fjt_jobopts_parse(struct fjt_jobopts *o,
                      json_t *jobspec,
                      vnib_error_t *errp)
{
    json_t *opts = json_object_get(
        json_object_get(
            json_object_get(json_object_get(jobspec, "attributes"), "system"),
            "shell"),
        "options");
    json_t *cs = json_object_get(opts, "cray-slingshot");
    json_t *vb = json_object_get(opts, "vnibroker");

    memset(o, 0, sizeof(*o));
    o->vni_count = -1;
    if (cs) {
        if (json_is_string(cs)) {
            if (strcmp(json_string_value(cs), "off")) {
                errno = EINVAL;
                return errprintf(
                    errp, "cray-slingshot: want \"off\" or {vnicount=N}");
            }
            o->off = true;
        } else if (json_is_object(cs)) {
            json_t *n = json_object_get(cs, "vnicount");
            if (n) {
                if (!json_is_integer(n) || json_integer_value(n) < 0
                    || json_integer_value(n) > 4) {
                    errno = EINVAL;
                    return errprintf(
                        errp, "cray-slingshot.vnicount must be within 0-4");
                }
                o->vni_count = (int)json_integer_value(n);
            }
        } else {
            errno = EINVAL;
            return errprintf(errp,
                             "cray-slingshot: want \"off\" or {vnicount=N}");
        }
    }
    if (vb) {
        json_t *h = json_object_get(vb, "hwcoll");
        const char *key;
        json_t *v;
        if (!json_is_object(vb)) {
            errno = EINVAL;
            return errprintf(errp, "vnibroker: want {hwcoll=on|off|auto}");
        }
        json_object_foreach (vb, key, v) {
            if (strcmp(key, "hwcoll")) {
                errno = EINVAL;
                return errprintf(
                    errp, "vnibroker: unknown option '%s' (want hwcoll)", key);
            }
        }
        if (h) {
            if (!json_is_string(h) || !valid_hwcoll(json_string_value(h))) {
                errno = EINVAL;
                return errprintf(errp,
                                 "vnibroker.hwcoll must be on, off or auto");
            }
            snprintf(o->hwcoll, sizeof(o->hwcoll), "%s", json_string_value(h));
        }
    }
    return 0;
}

/* The number of ids in an RFC 22 idset string ("0-3,8"), or -1. */
static long idset_count_str(const char *s)
{
    long n = 0;

    while (s && *s) {
        char *end;
        unsigned long lo = strtoul(s, &end, 10);
        unsigned long hi = lo;
        if (end == s || lo > 1000000)
            return -1;
        s = end;
        if (*s == '-') {
            hi = strtoul(++s, &end, 10);
            if (end == s || hi < lo || hi > 1000000)
                return -1;
            s = end;
        }
        n += (long)(hi - lo + 1);
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

int fjt_R_ncores(json_t *R)
{
    json_t *lite = json_object_get(json_object_get(R, "execution"), "R_lite");
    size_t i;
    json_t *e;
    long n = 0;

    if (!json_is_array(lite) || json_array_size(lite) == 0)
        return 0;
    json_array_foreach (lite, i, e) {
        const char *cores = json_string_value(
            json_object_get(json_object_get(e, "children"), "core"));
        long c = idset_count_str(cores);
        if (!cores || c <= 0 || (n && c != n))
            return 0;
        n = c;
    }
    return n <= 65535 ? (int)n : 0;
}

char *fjt_R_nodes(json_t *R, vnib_error_t *errp)
{
    json_t *list = json_object_get(json_object_get(R, "execution"), "nodelist");
    size_t i;
    json_t *v;
    size_t len = 0;
    char *out;

    if (!json_is_array(list) || json_array_size(list) == 0) {
        errno = EINVAL;
        errprintf(errp, "the job's R has no execution.nodelist");
        return NULL;
    }
    json_array_foreach (list, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            errno = EINVAL;
            errprintf(errp, "the job's R has a bad execution.nodelist");
            return NULL;
        }
        len += json_string_length(v) + 1;
    }
    if (!(out = malloc(len + 1))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    out[0] = '\0';
    json_array_foreach (list, i, v) {
        if (i > 0)
            strcat(out, ",");
        strcat(out, json_string_value(v));
    }
    return out;
}
