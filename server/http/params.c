/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Input validation shared by the handlers (see params.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/tclass.h"
#include "vnib/token.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/http/http.h"
#include "server/http/params.h"

/* Whether value is 1 to max characters, all from chars. */
static bool id_valid(const char *value, const char *chars, size_t max)
{
    size_t n = value ? strspn(value, chars) : 0;
    return n > 0 && n <= max && value[n] == '\0';
}

int params_job_id(struct request *req, const char *value, vnib_error_t *errp)
{
    /* The same rule as token_job_id_valid(): a job token names its job. */
    if (!id_valid(value, TOKEN_JOB_ID_CHARS, TOKEN_JOB_ID_MAX - 1))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "job_id must be 1-128 characters from "
                            "[A-Za-z0-9._:@+-]");
    /* The id reaches hooks' and tools' argv, where it would be an option. */
    if (value[0] == '-')
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "job_id must not start with '-' (it would read "
                            "as an option to the commands it is passed to)");
    return 0;
}

int params_step_id(struct request *req, const char *value, vnib_error_t *errp)
{
    if (!id_valid(value,
                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._-",
                  64))
        return request_fail(
            req,
            EINVAL,
            ERRCODE_INVALID_FIELD,
            errp,
            "step_id must be 1-64 characters from [A-Za-z0-9._-]");
    return 0;
}

int params_node(struct request *req,
                const char *field,
                const char *value,
                vnib_error_t *errp)
{
    if (!value || !token_node_name_valid(value))
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "%s must be a host name (letters, digits, '-', "
                            "'_', '.'; at most %d characters)",
                            field,
                            TOKEN_NODE_MAX - 1);
    return 0;
}

int params_query_ll(struct request *req,
                    const char *name,
                    long long min,
                    long long max,
                    long long *valp,
                    vnib_error_t *errp)
{
    const char *v = request_query(req, name);
    char *end;

    if (!v)
        return 0;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "query argument '%s' must be an integer in "
                            "%lld-%lld",
                            name,
                            min,
                            max);
    *valp = n;
    return 0;
}

int params_query_bool(struct request *req,
                      const char *name,
                      bool *valp,
                      vnib_error_t *errp)
{
    const char *v = request_query(req, name);
    if (!v)
        return 0;
    if (!strcmp(v, "true") || !strcmp(v, "1"))
        *valp = true;
    else if (!strcmp(v, "false") || !strcmp(v, "0"))
        *valp = false;
    else
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "query argument '%s' must be true or false",
                            name);
    return 0;
}

int params_body_nodes(struct request *req,
                      json_t *body,
                      const char **exprp,
                      vnib_error_t *errp)
{
    json_t *v = json_object_get(body, "nodes");

    if (!json_is_string(v) || json_string_length(v) == 0)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "nodes must be a non-empty hostlist expression");
    *exprp = json_string_value(v);
    return 0;
}

int params_body_vni_count(struct request *req,
                          json_t *body,
                          int *countp,
                          vnib_error_t *errp)
{
    json_t *v = json_object_get(body, "vni_count");

    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0
        || json_integer_value(v) > VNIB_SERVICE_VNIS_MAX)
        return request_fail(req,
                            EINVAL,
                            ERRCODE_INVALID_FIELD,
                            errp,
                            "vni_count must be an integer in 0-%d",
                            VNIB_SERVICE_VNIS_MAX);
    *countp = (int)json_integer_value(v);
    return 0;
}

int params_force(struct request *req, bool force, vnib_error_t *errp)
{
    if (force && req->who.role != ROLE_ADMIN)
        return request_fail(req,
                            EPERM,
                            ERRCODE_FORBIDDEN,
                            errp,
                            "only an admin may force the end of a quarantine");
    return 0;
}

int params_known_fields(struct request *req,
                        json_t *obj,
                        const char *const *allowed,
                        vnib_error_t *errp)
{
    const char *key;
    json_t *val;

    json_object_foreach (obj, key, val) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i])
            return request_fail(req,
                                EINVAL,
                                ERRCODE_UNKNOWN_FIELD,
                                errp,
                                "unknown field '%.64s'",
                                key);
    }
    return 0;
}

int params_nodes(struct request *req,
                 const char *expr,
                 struct hostlist **hostsp,
                 char **nodesp,
                 vnib_error_t *errp)
{
    size_t max = (size_t)req->broker->cfg->limits.hostlist_max_names;
    vnib_error_t why = {0};
    struct hostlist *hosts = hostlist_decode(expr, max, &why);

    if (!hosts)
        return request_fail(
            req, EINVAL, ERRCODE_INVALID_FIELD, errp, "nodes: %s", why.text);
    hostlist_uniq(hosts);
    if (!(*nodesp = hostlist_encode(hosts))) {
        hostlist_destroy(hosts);
        errprintf(errp, "out of memory");
        return -1;
    }
    *hostsp = hosts;
    return 0;
}
