/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Matching a request's method and path against a route table (see
 * route.h): patterns with {name} segments, 404 and 405 with Allow.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server/http/route.h"

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

int route_match(const struct route_table *t,
                const char *method,
                const char *path,
                struct route_params *params,
                char *allow,
                size_t allow_size)
{
    bool path_seen = false;
    size_t alen = 0;

    if (allow_size > 0)
        allow[0] = '\0';
    for (size_t i = 0; i < t->count; i++) {
        if (!match_pattern(t->rows[i].pattern, path, params))
            continue;
        if (strcmp(t->rows[i].method, method) == 0)
            return (int)i;
        path_seen = true;
        int n = snprintf(allow + alen,
                         allow_size - alen,
                         "%s%s",
                         alen ? ", " : "",
                         t->rows[i].method);
        if (n > 0 && alen + (size_t)n < allow_size)
            alen += (size_t)n;
    }
    params->count = 0;
    errno = path_seen ? EOPNOTSUPP : ENOENT;
    return -1;
}

const char *route_param(const struct route_params *params, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < params->count; i++)
        if (params->name_lens[i] == len
            && strncmp(params->names[i], name, len) == 0)
            return params->values[i];
    return NULL;
}
