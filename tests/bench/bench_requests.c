/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The requests of the REST API benchmarks: the producers the load
 * generator calls for each request it sends (reserves, releases, node
 * views, the storm of one big job's nodes, a step's reserve, storm and
 * release, a full-machine job's nodes as their agents drive it, /healthz). Each
 * reads and advances only the struct bench it is given.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/bench/bench_api.h"

/* Fill in a request without a body: its kind, method, token and path. */
__attribute__((format(printf, 5, 6))) static void set_request(
    struct lg_request *req,
    int kind,
    const char *method,
    const char *token,
    const char *fmt,
    ...)
{
    va_list ap;

    req->kind = kind;
    req->method = method;
    req->token = token;
    va_start(ap, fmt);
    vsnprintf(req->path, sizeof(req->path), fmt, ap);
    va_end(ap);
}

/* A reserve request for job on nodes. */
static int body_reserve(struct bench *b,
                        struct lg_request *req,
                        const char *job,
                        const char *nodes)
{
    int n = snprintf(req->body,
                     sizeof(req->body),
                     "{\"job_id\":\"%s\",\"uid\":1000,\"user\":\"bench\","
                     "\"nodes\":\"%s\",\"vni_count\":1%s%s%s}",
                     job,
                     nodes,
                     b->hwcoll ? ",\"hwcoll\":\"" : "",
                     b->hwcoll ? b->hwcoll : "",
                     b->hwcoll ? "\"" : "");
    if (n < 0 || (size_t)n >= sizeof(req->body))
        return -1;
    req->body_len = (size_t)n;
    set_request(req, K_RESERVE, "POST", b->token, "/v1/reservations");
    return 0;
}

/* A reserve of job <prefix>n on nodes. */
static int reserve_nth(struct bench *b,
                       struct lg_request *req,
                       uint64_t n,
                       const char *nodes)
{
    char job[64];

    snprintf(job, sizeof(job), "%s%llu", b->prefix, (unsigned long long)n);
    return body_reserve(b, req, job, nodes);
}

/* A release of job <prefix>n. */
static int release_nth(struct bench *b, struct lg_request *req, uint64_t n)
{
    set_request(req,
                K_RELEASE,
                "DELETE",
                b->token,
                "/v1/reservations/%s%llu",
                b->prefix,
                (unsigned long long)n);
    return 0;
}

int breq_healthz(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    (void)arg;
    (void)slot;
    set_request(req, K_GET, "GET", NULL, "/healthz");
    return 0;
}

int breq_pairs(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->slot_seq % 2 == 0) {
        slot->user = b->next_job++;
        return reserve_nth(b, req, slot->user, b->nodes);
    }
    return release_nth(b, req, slot->user);
}

int breq_reserve_seq(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (b->limit && slot->seq >= b->limit)
        return LG_END;
    return reserve_nth(b, req, slot->seq, b->nodes);
}

int breq_reserve_until(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (b->stop_file && access(b->stop_file, F_OK) == 0)
        return LG_END;
    return breq_reserve_seq(arg, slot, req);
}

int breq_populate(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;
    char nodes[64];
    uint64_t k = slot->seq + 1;

    if (slot->seq >= b->limit)
        return LG_END;
    snprintf(nodes,
             sizeof(nodes),
             "n[%llu-%llu]",
             (unsigned long long)k,
             (unsigned long long)k + 3);
    return reserve_nth(b, req, k, nodes);
}

int breq_release_seq(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->seq >= b->limit)
        return LG_END;
    return release_nth(b, req, slot->seq);
}

int breq_nodeview(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;
    char node[32];

    snprintf(node,
             sizeof(node),
             "n%llu",
             (unsigned long long)(slot->seq * 7919 % b->limit + 1));
    if (token_node_derive(b->key,
                          b->key_len,
                          node,
                          b->node_token,
                          sizeof(b->node_token),
                          NULL)
        < 0)
        return -1;
    set_request(req, K_GET, "GET", b->node_token, "/v1/nodes/%s", node);
    return 0;
}

int breq_storm(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    set_request(req,
                K_GET,
                "GET",
                b->node_tokens[slot->seq % (uint64_t)b->ntokens],
                "/v1/reservations/%s",
                b->job);
    return 0;
}

int breq_step_storm(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->seq >= (uint64_t)b->ntokens)
        return LG_END;
    set_request(req,
                K_GET,
                "GET",
                b->node_tokens[slot->seq],
                "/v1/reservations/%s/steps/%s",
                b->job,
                b->step);
    return 0;
}

int breq_step_reserve(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->seq > 0)
        return LG_END;
    int n = snprintf(req->body,
                     sizeof(req->body),
                     "{\"nodes\":\"%s\",\"vni_count\":1}",
                     b->nodes);
    if (n < 0 || (size_t)n >= sizeof(req->body))
        return -1;
    req->body_len = (size_t)n;
    set_request(req,
                K_RESERVE,
                "PUT",
                b->token,
                "/v1/reservations/%s/steps/%s",
                b->job,
                b->step);
    return 0;
}

int breq_step_release(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->seq > 0)
        return LG_END;
    set_request(req,
                K_RELEASE,
                "DELETE",
                b->token,
                "/v1/reservations/%s/steps/%s",
                b->job,
                b->step);
    return 0;
}

int breq_one_reserve(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->seq > 0)
        return LG_END;
    return body_reserve(b, req, b->job, b->nodes);
}

int breq_one_release(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;

    if (slot->seq > 0)
        return LG_END;
    set_request(
        req, K_RELEASE, "DELETE", b->token, "/v1/reservations/%s", b->job);
    return 0;
}

/* What a node sends in each fullmachine mode, in order. */
enum full_step { FULL_GET, FULL_CREATING, FULL_CREATED, FULL_DESTROYED };

static const enum full_step full_lease[] = {FULL_GET};
static const enum full_step full_today[] = {
    FULL_GET, FULL_CREATING, FULL_CREATED};
static const enum full_step full_creating[] = {FULL_CREATING};
static const enum full_step full_end[] = {FULL_DESTROYED};

/* The steps of mode, their count in *np; NULL for an unknown mode. */
static const enum full_step *full_steps(const char *mode, int *np)
{
    static const struct {
        const char *name;
        const enum full_step *steps;
        int n;
    } modes[] = {
        {"lease", full_lease, 1},
        {"today", full_today, 3},
        {"creating", full_creating, 1},
        {"end", full_end, 1},
    };

    for (size_t i = 0; mode && i < sizeof(modes) / sizeof(modes[0]); i++)
        if (!strcmp(mode, modes[i].name)) {
            *np = modes[i].n;
            return modes[i].steps;
        }
    *np = 0;
    return NULL;
}

int breq_full_steps(const char *mode)
{
    int n;
    return full_steps(mode, &n) ? n : 0;
}

/* A node's four services, as its agent reports them (one per NIC). */
static int full_services(char *buf, size_t size, uint64_t k)
{
    unsigned id = 100 + (unsigned)(k % 1000);
    int n = snprintf(buf,
                     size,
                     "[{\"device\":\"cxi0\",\"svc_id\":%u},"
                     "{\"device\":\"cxi1\",\"svc_id\":%u},"
                     "{\"device\":\"cxi2\",\"svc_id\":%u},"
                     "{\"device\":\"cxi3\",\"svc_id\":%u}]",
                     id,
                     id,
                     id,
                     id);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* slot->user: 0 while the slot has no node, else the node's index + 1
 * in the low 32 bits and the next step in the high ones.
 */
int breq_full(void *arg, struct lg_slot *slot, struct lg_request *req)
{
    struct bench *b = arg;
    int nsteps;
    const enum full_step *steps = full_steps(b->mode, &nsteps);
    char base[LG_PATH_MAX / 2], services[256];

    if (!steps)
        return -1;
    if (slot->user == 0) {
        if (b->next_node >= (uint64_t)b->ntokens)
            return LG_IDLE; /* every node has started */
        slot->user = ++b->next_node;
    }
    uint64_t k = (slot->user & 0xffffffffu) - 1;
    int step = (int)(slot->user >> 32);
    const char *token = b->node_tokens[k];
    char node[16];

    snprintf(node, sizeof(node), "nid%06u", (unsigned)(k + 1));
    if (b->step)
        snprintf(base,
                 sizeof(base),
                 "/v1/reservations/%s/steps/%s",
                 b->job,
                 b->step);
    else
        snprintf(base, sizeof(base), "/v1/reservations/%s", b->job);
    if (steps[step] == FULL_GET) {
        set_request(req, K_GET, "GET", token, "%s", base);
    } else {
        static const char *const cxi[] = {[FULL_CREATING] = "creating",
                                          [FULL_CREATED] = "created",
                                          [FULL_DESTROYED] = "destroyed"};
        bool with_services = steps[step] != FULL_CREATING;
        if (with_services && full_services(services, sizeof(services), k) < 0)
            return -1;
        int n = snprintf(req->body,
                         sizeof(req->body),
                         "{\"cxi\":\"%s\"%s%s,\"reservation_id\":%lld}",
                         cxi[steps[step]],
                         with_services ? ",\"services\":" : "",
                         with_services ? services : "",
                         b->resv_id);
        if (n < 0 || (size_t)n >= sizeof(req->body))
            return -1;
        req->body_len = (size_t)n;
        set_request(req, K_REPORT, "PUT", token, "%s/nodes/%s", base, node);
    }
    /* The node's last request closes its connection: the next node is a
     * new client.
     */
    if (step + 1 == nsteps) {
        req->close = true;
        slot->user = 0;
    } else {
        slot->user = (k + 1) | ((uint64_t)(step + 1) << 32);
    }
    return 0;
}
