/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Validation of request input shared by the handlers.
 *
 * Every value that arrives in a path, a query string or a JSON body is
 * checked here against the same rules, so that "job_id" means the same
 * thing in every endpoint and every refusal reads the same way.  Each
 * check fails through request_fail() with EINVAL and the stable code
 * invalid_field, naming the field (or unknown_field, or forbidden where
 * the caller's role may not send a value).
 */
#ifndef VNIB_SERVER_PARAMS_H
#define VNIB_SERVER_PARAMS_H

#include <stdbool.h>

#include <jansson.h>

#include "vnib/error.h"

struct hostlist;
struct request;

/* A job id: 1-128 characters from [A-Za-z0-9._:@+-], not starting with
 * '-' (ids reach the argv of hooks and tools).
 */
int params_job_id(struct request *req, const char *value, vnib_error_t *errp);

/* A job step id: 1-64 characters from [A-Za-z0-9._-]. */
int params_step_id(struct request *req, const char *value, vnib_error_t *errp);

/* A node name (token_node_name_valid). */
int params_node(struct request *req,
                const char *field,
                const char *value,
                vnib_error_t *errp);

/* A body's "nodes" field, required: a non-empty string into *exprp
 * (borrowed from body), for params_nodes.
 */
int params_body_nodes(struct request *req,
                      json_t *body,
                      const char **exprp,
                      vnib_error_t *errp);

/* A body's "vni_count" field, optional: an integer in
 * 0-VNIB_SERVICE_VNIS_MAX into *countp, which keeps its default when the
 * field is absent.
 */
int params_body_vni_count(struct request *req,
                          json_t *body,
                          int *countp,
                          vnib_error_t *errp);

/* A body's "nodes": a hostlist expression of at most
 * limits.hostlist_max_names names, made canonical (sorted, each name
 * once), so that "n[1-2],n3" and "n[1-3]" name the same set on a retry.
 * Sets *hostsp (hostlist_destroy) and *nodesp, its encoding (free).
 */
int params_nodes(struct request *req,
                 const char *expr,
                 struct hostlist **hostsp,
                 char **nodesp,
                 vnib_error_t *errp);

/* An optional integer query argument in [min, max]; *valp keeps its
 * default when the argument is absent.
 */
int params_query_ll(struct request *req,
                    const char *name,
                    long long min,
                    long long max,
                    long long *valp,
                    vnib_error_t *errp);

/* An optional boolean query argument: true/false/1/0. */
int params_query_bool(struct request *req,
                      const char *name,
                      bool *valp,
                      vnib_error_t *errp);

/* A release's "force" query argument (read with params_query_bool): only
 * an admin may set it, anyone else is refused 403 forbidden.
 */
int params_force(struct request *req, bool force, vnib_error_t *errp);

/* Refuse any key of obj not in the NULL-terminated list `allowed`
 * (400 unknown_field).
 */
int params_known_fields(struct request *req,
                        json_t *obj,
                        const char *const *allowed,
                        vnib_error_t *errp);

#endif /* !VNIB_SERVER_PARAMS_H */
