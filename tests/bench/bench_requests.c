/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The requests of the REST API benchmarks: the producers the load
 * generator calls for each request it sends (reserves, releases, node
 * views, the storm of one big job's nodes, a step's reserve, storm and
 * release, /healthz).  Each reads and
 * advances only the struct bench it is given.
 */
#include <stdarg.h>
#include <stdio.h>
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
