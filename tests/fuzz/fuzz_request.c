/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for the request path's body checks
 * (server/api/reservations.c, compiled into this file for its static
 * validators, with the real request_json and params_* behind them).
 *
 * The first byte picks what the body is checked as; the rest is the body,
 * read with request_json() as the server reads it:
 *   even: a reserve (POST /v1/reservations, parse_reserve);
 *   odd:  a node report's fields (PUT .../nodes/{node}: the known-fields
 *         check and the services list, report_services).
 * Accepted fields are then also put through the path checks
 * (params_job_id, params_node).  Only accepting or refusing is allowed:
 * a refusal must say why, with a stable code.
 */
#include "server/api/reservations.c"
#include "vnib/tclass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const report_fields[] = {
        "cxi", "services", "message", "reservation_id", NULL};
    struct config cfg = {0};
    struct broker b = {.cfg = &cfg};
    struct request req = {.broker = &b};
    struct store_reserve a = {0};
    vnib_error_t err = {0};
    json_t *body = NULL;
    char *copy;
    int rc;

    if (size == 0)
        return 0;
    cfg.vni.per_job_default = 1;
    /* The server's body is NUL-terminated after body_len bytes. */
    if (!(copy = malloc(size)))
        return 0;
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';
    req.body = copy;
    req.body_len = size - 1;
    if (request_json(&req, &body, &err) < 0)
        goto check;
    if (data[0] % 2 == 0) {
        rc = parse_reserve(&req, body, &a, &err);
        if (rc == 0
            && (params_job_id(&req, a.job_id, &err) < 0 || !a.user || !a.nodes
                || a.vni_count < 0 || a.vni_count > VNIB_SERVICE_VNIS_MAX))
            abort(); /* accepted what the checks refuse */
        if (rc == 0)
            (void)params_node(&req, "nodes", a.nodes, &err);
    } else {
        rc = params_known_fields(&req, body, report_fields, &err);
        if (rc == 0) {
            char *services =
                report_services(&req, json_object_get(body, "services"), &err);
            rc = services ? 0 : -1;
            free(services);
        }
    }
    if (rc == 0)
        goto done;
check:
    if (req.error_code == ERRCODE_NONE || !err.text[0])
        abort(); /* a refusal without a code or a reason */
done:
    json_decref(body);
    free(copy);
    return 0;
}
