/* SPDX-License-Identifier: GPL-2.0-or-later */
/* In-process tests of the broker's handlers against a real PostgreSQL.
 *
 * Each test calls route handlers through the harness (harness.h), with no
 * HTTP in between, and checks the status, the JSON reply and the error
 * code that server/api/openapi.yaml documents.  The tests share one broker
 * and one database, in order; each uses job ids of its own and releases
 * what it reserved, so that the pool's counts are checked as changes.
 * tests/integration/0025-handlers.sh starts the database and runs this.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vnib/idset.h"
#include "server/config.h"
#include "server/api/routes.h"
#include "server/http/auth.h"
#include "tests/inproc/harness.h"

/* Eighteen VNIs around 10, which the pool may never hold. */
#define POOL "2-9,11-20"

static const struct harness_caller scheduler = {ROLE_SCHEDULER, "slurmctld"};
static const struct harness_caller admin = {ROLE_ADMIN, "ops-admin"};

static struct harness *harness_of(void **state)
{
    return *state;
}

static int setup(void **state)
{
    *state = harness_create("[vni]\npool = \"" POOL "\"\n");
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    harness_destroy(*state);
    return 0;
}

/* Integer member `key` of o, or -1. */
static long long jint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* String member `key` of o, or "". */
static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The error code of an error reply, or "". */
static const char *jcode(const json_t *o)
{
    return jstr(json_object_get(o, "error"), "code");
}

/* POST /v1/reservations for job on nodes with vni_count VNIs. */
static int reserve(struct harness *h,
                   const char *job,
                   int vni_count,
                   const char *nodes,
                   json_t **outp)
{
    char body[256];
    snprintf(body,
             sizeof(body),
             "{\"job_id\": \"%s\", \"uid\": 1001, \"user\": \"alice\", "
             "\"nodes\": \"%s\", \"vni_count\": %d}",
             job,
             nodes,
             vni_count);
    return harness_call(
        h,
        (struct harness_req){"POST", "/v1/reservations", scheduler, body},
        outp);
}

/* A call that must fail with status and error code `code`. */
static void expect_error(struct harness *h,
                         struct harness_req rq,
                         int status,
                         const char *code)
{
    json_t *out = NULL;
    assert_int_equal(harness_call(h, rq, &out), status);
    assert_string_equal(jcode(out), code);
    assert_true(json_string_length(
                    json_object_get(json_object_get(out, "error"), "message"))
                > 0);
    json_decref(out);
}

/* The roles of the route for method and path, which must have one. */
static unsigned route_roles(const char *method, const char *path)
{
    struct route_params params;
    char allow[64];

    int i =
        route_match(&api_routes, method, path, &params, allow, sizeof(allow));
    assert_true(i >= 0);
    return api_routes.rows[i].roles;
}

/* A call the pipeline or the handler must refuse to its caller (403). */
static void expect_forbidden(struct harness *h, struct harness_req rq)
{
    expect_error(h, rq, 403, "forbidden");
}

/* A bodiless METHOD of /v1/reservations/TAIL as who (TAIL: "JOB" or
 * "JOB/steps/STEP", with a query or not).
 */
static int res_call(struct harness *h,
                    const char *method,
                    const char *tail,
                    struct harness_caller who,
                    json_t **outp)
{
    char target[256];
    snprintf(target, sizeof(target), "/v1/reservations/%s", tail);
    return harness_call(
        h, (struct harness_req){method, target, who, NULL}, outp);
}

/* DELETE /v1/reservations/JOB (target ends with the job and a query). */
static int release(struct harness *h,
                   const char *job_query,
                   struct harness_caller who,
                   json_t **outp)
{
    return res_call(h, "DELETE", job_query, who, outp);
}

/* A node's report of its CXI state for job, or for its step (not NULL). */
static int report(struct harness *h,
                  const char *job,
                  const char *step,
                  const char *node,
                  const char *cxi,
                  json_t **outp)
{
    char target[256], body[64];
    struct harness_caller who = {ROLE_NODE, node};
    if (step)
        snprintf(target,
                 sizeof(target),
                 "/v1/reservations/%s/steps/%s/nodes/%s",
                 job,
                 step,
                 node);
    else
        snprintf(
            target, sizeof(target), "/v1/reservations/%s/nodes/%s", job, node);
    snprintf(body, sizeof(body), "{\"cxi\": \"%s\"}", cxi);
    return harness_call(
        h, (struct harness_req){"PUT", target, who, body}, outp);
}

/* GET /v1/pool as a monitor. */
static json_t *pool(struct harness *h)
{
    json_t *out = NULL;
    struct harness_caller monitor = {ROLE_MONITOR, "prometheus"};
    assert_int_equal(
        harness_call(
            h, (struct harness_req){"GET", "/v1/pool", monitor, NULL}, &out),
        200);
    return out;
}

/* The events of job, oldest first (the reply, to be freed). */
static json_t *events(struct harness *h, const char *job)
{
    char target[256];
    json_t *out = NULL;
    snprintf(target, sizeof(target), "/v1/events?job_id=%s&limit=10", job);
    assert_int_equal(
        harness_call(h, (struct harness_req){"GET", target, admin, NULL}, &out),
        200);
    assert_true(json_is_array(json_object_get(out, "events")));
    return out;
}

/* reserve, which must create the reservation (201); the reply is dropped. */
static void reserved(struct harness *h,
                     const char *job,
                     int vni_count,
                     const char *nodes)
{
    json_t *out = NULL;
    assert_int_equal(reserve(h, job, vni_count, nodes, &out), 201);
    json_decref(out);
}

/* The scheduler's release, which must end the reservation at once (200);
 * the reply is dropped.
 */
static void released(struct harness *h, const char *job_query)
{
    json_t *out = NULL;
    assert_int_equal(release(h, job_query, scheduler, &out), 200);
    json_decref(out);
}

static void test_reserve_takes_pool_vnis(void **state)
{
    struct harness *h = harness_of(state);
    const struct idset *p = harness_broker(h)->cfg->vni_pool;
    const char *jobs[] = {"take-1", "take-2", "take-3"};
    json_t *out = NULL;
    size_t i;
    json_t *v;

    /* Twelve of the eighteen: they cannot all be below 10. */
    for (size_t j = 0; j < 3; j++) {
        assert_int_equal(reserve(h, jobs[j], 4, "tux[0-3]", &out), 201);
        assert_string_equal(jstr(out, "state"), "active");
        assert_string_equal(jstr(out, "job_id"), jobs[j]);
        assert_string_equal(jstr(out, "created_by"), "slurmctld");
        assert_int_equal(json_array_size(json_object_get(out, "vnis")), 4);
        json_array_foreach (json_object_get(out, "vnis"), i, v) {
            long long vni = json_integer_value(v);
            assert_true(idset_contains(p, (uint32_t)vni));
            assert_true(vni != 1 && vni != 10);
        }
        json_decref(out);
    }
    for (size_t j = 0; j < 3; j++) {
        assert_int_equal(release(h, jobs[j], scheduler, &out), 200);
        json_decref(out);
    }
}

static void test_reserve_is_idempotent(void **state)
{
    struct harness *h = harness_of(state);
    json_t *first = NULL, *again = NULL, *other = NULL;

    assert_int_equal(reserve(h, "idem", 1, "n[1-2],n3", &first), 201);
    /* The same node set, written otherwise. */
    assert_int_equal(reserve(h, "idem", 1, "n[1-3]", &again), 200);
    assert_int_equal(jint(again, "id"), jint(first, "id"));
    assert_true(json_equal(json_object_get(again, "vnis"),
                           json_object_get(first, "vnis")));
    assert_string_equal(jstr(again, "nodes"), "n[1-3]");
    /* Another vni_count: the same reservation, as it is (0249). */
    assert_int_equal(reserve(h, "idem", 2, "n[1-3]", &other), 200);
    assert_int_equal(jint(other, "id"), jint(first, "id"));
    assert_int_equal(jint(other, "vni_count"), 1);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(other, "differs"), 0)),
        "vni_count");
    json_decref(other);
    /* Other nodes: another job. */
    assert_int_equal(reserve(h, "idem", 1, "n[1-4]", &other), 409);
    assert_string_equal(jcode(other), "reservation_conflict");
    json_decref(first);
    json_decref(again);
    json_decref(other);
    assert_int_equal(release(h, "idem", scheduler, &other), 200);
    json_decref(other);
}

static void test_release_then_quarantine(void **state)
{
    struct harness *h = harness_of(state);
    json_t *out = NULL;

    /* No node reported: nothing to wait for. */
    reserved(h, "rel-now", 1, "tux[1-2]");
    assert_int_equal(release(h, "rel-now", scheduler, &out), 200);
    assert_string_equal(jstr(out, "state"), "released");
    assert_string_equal(jstr(out, "released_by"), "slurmctld");
    json_decref(out);

    /* A node holds services: the VNI stays quarantined. */
    reserved(h, "rel-quar", 1, "tux[1-2]");
    assert_int_equal(report(h, "rel-quar", NULL, "tux1", "created", &out), 200);
    json_decref(out);
    assert_int_equal(release(h, "rel-quar", scheduler, &out), 202);
    assert_string_equal(jstr(out, "state"), "releasing");
    assert_true(json_is_true(json_object_get(out, "quarantined")));
    json_decref(out);
    /* An admin ends it early (the query reaches the handler). */
    assert_int_equal(release(h, "rel-quar?force=true", admin, &out), 200);
    assert_string_equal(jstr(out, "state"), "released");
    assert_true(json_is_true(json_object_get(out, "forced")));
    json_decref(out);
}

/* Roles are the pipeline's check, from the route table; finer checks
 * (whose node, who may force) are the handlers'.
 */
static void test_roles(void **state)
{
    struct harness *h = harness_of(state);
    unsigned roles = route_roles("POST", "/v1/reservations");

    assert_false(roles & ROLE_NODE);
    assert_false(roles & ROLE_MONITOR);
    assert_true(roles & ROLE_SCHEDULER);
    assert_true(roles & ROLE_ADMIN);

    reserved(h, "roles", 1, "tux[1-2]");
    expect_forbidden(h,
                     (struct harness_req){"PUT",
                                          "/v1/reservations/roles/nodes/tux2",
                                          {ROLE_NODE, "tux1"},
                                          "{\"cxi\": \"created\"}"});
    expect_forbidden(
        h,
        (struct harness_req){
            "DELETE", "/v1/reservations/roles?force=true", scheduler, NULL});
    released(h, "roles");
}

static void test_invalid_json(void **state)
{
    struct harness *h = harness_of(state);

    expect_error(
        h,
        (struct harness_req){
            "POST", "/v1/reservations", scheduler, "{\"job_id\": \"bad\", "},
        400,
        "invalid_json");
    expect_error(h,
                 (struct harness_req){"POST",
                                      "/v1/reservations",
                                      scheduler,
                                      "{\"job_id\": \"bad\", \"uid\": 1, "
                                      "\"user\": \"a\", \"nodes\": \"n1\", "
                                      "\"color\": 1}"},
                 400,
                 "unknown_field");
}

static void test_unknown_job(void **state)
{
    struct harness *h = harness_of(state);

    expect_error(h,
                 (struct harness_req){
                     "GET", "/v1/reservations/no-such-job", scheduler, NULL},
                 404,
                 "reservation_not_found");
    expect_error(h,
                 (struct harness_req){
                     "DELETE", "/v1/reservations/no-such-job", scheduler, NULL},
                 404,
                 "reservation_not_found");
    expect_error(h,
                 (struct harness_req){"GET", "/v1/nowhere", scheduler, NULL},
                 404,
                 "not_found");
}

static void test_pool_counts(void **state)
{
    struct harness *h = harness_of(state);
    json_t *before = pool(h), *after = NULL;

    assert_string_equal(jstr(before, "ranges"), POOL);
    assert_int_equal(jint(before, "total"), 18);
    assert_int_equal(jint(before, "per_job_default"), 1);
    assert_int_equal(jint(before, "free") + jint(before, "active")
                         + jint(before, "quarantined"),
                     18);
    reserved(h, "pool-1", 2, "tux[1-2]");
    after = pool(h);
    assert_int_equal(jint(after, "free"), jint(before, "free") - 2);
    assert_int_equal(jint(after, "active"), jint(before, "active") + 2);
    assert_int_equal(jint(after, "total"), 18);
    json_decref(after);
    released(h, "pool-1");
    after = pool(h);
    assert_int_equal(jint(after, "free"), jint(before, "free"));
    json_decref(after);
    json_decref(before);
}

static void test_events_after_reserve(void **state)
{
    struct harness *h = harness_of(state);
    json_t *out = NULL, *ev;

    assert_int_equal(reserve(h, "ev-1", 1, "tux[1-2]", &out), 201);
    long long id = jint(out, "id");
    json_decref(out);
    out = events(h, "ev-1");
    assert_int_equal(json_array_size(json_object_get(out, "events")), 1);
    ev = json_array_get(json_object_get(out, "events"), 0);
    assert_string_equal(jstr(ev, "action"), "reserve");
    assert_string_equal(jstr(ev, "job_id"), "ev-1");
    assert_string_equal(jstr(ev, "actor"), "slurmctld");
    assert_int_equal(jint(ev, "reservation_id"), id);
    json_decref(out);
    released(h, "ev-1");
}

static void test_report_ends_quarantine(void **state)
{
    struct harness *h = harness_of(state);
    json_t *out = NULL, *p = NULL;

    reserved(h, "agent-1", 1, "tux[5-6]");
    assert_int_equal(report(h, "agent-1", NULL, "tux5", "creating", &out), 200);
    json_decref(out);
    assert_int_equal(report(h, "agent-1", NULL, "tux5", "created", &out), 200);
    json_decref(out);
    assert_int_equal(release(h, "agent-1", scheduler, &out), 202);
    json_decref(out);
    p = pool(h);
    long long quarantined = jint(p, "quarantined");
    assert_true(quarantined >= 1);
    json_decref(p);

    /* The node's last destroyed report releases the reservation. */
    assert_int_equal(report(h, "agent-1", NULL, "tux5", "destroyed", &out),
                     200);
    assert_string_equal(jstr(out, "state"), "released");
    json_decref(out);
    p = pool(h);
    assert_int_equal(jint(p, "quarantined"), quarantined - 1);
    json_decref(p);
    out = events(h, "agent-1");
    json_t *list = json_object_get(out, "events");
    json_t *last = json_array_get(list, json_array_size(list) - 1);
    assert_string_equal(jstr(last, "action"), "quarantine_end");
    json_decref(out);
}

/* ---- job steps -------------------------------------------------------------
 */

/* PUT /v1/reservations/JOB/steps/STEP with body as `who`. */
static int step_put(struct harness *h,
                    const char *job,
                    const char *step,
                    const char *body,
                    json_t **outp)
{
    char target[256];
    snprintf(target, sizeof(target), "/v1/reservations/%s/steps/%s", job, step);
    return harness_call(
        h, (struct harness_req){"PUT", target, scheduler, body}, outp);
}

/* The integer at index i of array member key of o, or -1. */
static long long jint_at(const json_t *o, const char *key, size_t i)
{
    json_t *v = json_array_get(json_object_get(o, key), i);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

static void test_step_reserve(void **state)
{
    struct harness *h = harness_of(state);
    json_t *out = NULL;
    char env[64];

    assert_int_equal(reserve(h, "st-1", 1, "tux[1-4]", &out), 201);
    long long job_vni = jint_at(out, "vnis", 0);
    json_decref(out);

    assert_int_equal(step_put(h,
                              "st-1",
                              "0",
                              "{\"nodes\": \"tux[1-2]\", \"vni_count\": 1}",
                              &out),
                     201);
    long long id = jint(out, "id");
    long long step_vni = jint_at(out, "vnis", 0);
    assert_string_equal(jstr(out, "job_id"), "st-1");
    assert_string_equal(jstr(out, "step_id"), "0");
    assert_string_equal(jstr(out, "state"), "active");
    assert_int_equal(jint(out, "uid"), 1001);
    assert_string_equal(jstr(out, "user"), "alice");
    assert_int_equal(json_array_size(json_object_get(out, "vnis")), 1);
    assert_int_equal(jint_at(out, "job_vnis", 0), job_vni);
    assert_true(step_vni >= 2 && step_vni != job_vni);
    snprintf(env, sizeof(env), "%lld,%lld", step_vni, job_vni);
    assert_string_equal(
        jstr(json_object_get(out, "environment"), "SLINGSHOT_VNIS"), env);
    json_decref(out);

    /* The same nodes as a set: the same reservation. */
    assert_int_equal(step_put(h,
                              "st-1",
                              "0",
                              "{\"nodes\": \"tux2,tux1\", \"vni_count\": 1}",
                              &out),
                     200);
    assert_int_equal(jint(out, "id"), id);
    json_decref(out);
    expect_error(h,
                 (struct harness_req){"PUT",
                                      "/v1/reservations/st-1/steps/0",
                                      scheduler,
                                      "{\"nodes\": \"tux[1-2]\"}"},
                 409,
                 "reservation_conflict");
    /* A node outside the job is named; too many VNIs for a service. */
    json_t *err = NULL;
    assert_int_equal(
        step_put(h, "st-1", "1", "{\"nodes\": \"tux[3-9]\"}", &err), 400);
    assert_string_equal(jcode(err), "invalid_field");
    assert_non_null(
        strstr(jstr(json_object_get(err, "error"), "message"), "tux5"));
    json_decref(err);
    expect_error(
        h,
        (struct harness_req){"PUT",
                             "/v1/reservations/st-1/steps/1",
                             scheduler,
                             "{\"nodes\": \"tux1\", \"vni_count\": 4}"},
        400,
        "invalid_field");
    expect_error(h,
                 (struct harness_req){"PUT",
                                      "/v1/reservations/st-1/steps/1",
                                      scheduler,
                                      "{\"nodes\": \"tux1\", \"uid\": 4}"},
                 400,
                 "unknown_field");
    expect_error(h,
                 (struct harness_req){"PUT",
                                      "/v1/reservations/st-1/steps/a%23b",
                                      scheduler,
                                      "{\"nodes\": \"tux1\"}"},
                 400,
                 "invalid_field");
    expect_error(h,
                 (struct harness_req){"PUT",
                                      "/v1/reservations/st-none/steps/0",
                                      scheduler,
                                      "{\"nodes\": \"tux1\"}"},
                 404,
                 "reservation_not_found");
    /* A step with no VNIs of its own records its services all the same. */
    assert_int_equal(step_put(h, "st-1", "1", "{\"nodes\": \"tux3\"}", &out),
                     201);
    assert_int_equal(json_array_size(json_object_get(out, "vnis")), 0);
    snprintf(env, sizeof(env), "%lld", job_vni);
    assert_string_equal(
        jstr(json_object_get(out, "environment"), "SLINGSHOT_VNIS"), env);
    json_decref(out);

    /* Releasing the job releases its steps (no node held anything). */
    released(h, "st-1");
    assert_int_equal(res_call(h, "GET", "st-1/steps/0", scheduler, &out), 200);
    assert_string_equal(jstr(out, "state"), "released");
    json_decref(out);
    expect_error(h,
                 (struct harness_req){"PUT",
                                      "/v1/reservations/st-1/steps/2",
                                      scheduler,
                                      "{\"nodes\": \"tux1\"}"},
                 409,
                 "job_not_active");
    /* The events of the job include its steps', with their step id. */
    out = events(h, "st-1");
    json_t *list = json_object_get(out, "events");
    size_t i, steps = 0;
    json_t *ev;
    json_array_foreach (list, i, ev) {
        assert_string_equal(jstr(ev, "job_id"), "st-1");
        steps += json_object_get(ev, "step_id") != NULL;
    }
    assert_true(steps >= 2);
    json_decref(out);
}

static void test_step_roles(void **state)
{
    struct harness *h = harness_of(state);
    const char *step = "/v1/reservations/j/steps/s";
    json_t *out = NULL;

    assert_false(route_roles("PUT", step) & (ROLE_NODE | ROLE_MONITOR));
    assert_true(route_roles("PUT", step) & ROLE_SCHEDULER);
    assert_true(route_roles("GET", step) & ROLE_NODE);
    assert_true(route_roles("GET", step) & ROLE_MONITOR);
    assert_false(route_roles("PUT", "/v1/reservations/j/steps/s/nodes/n")
                 & (ROLE_SCHEDULER | ROLE_MONITOR));

    reserved(h, "st-roles", 1, "tux[1-4]");
    assert_int_equal(step_put(h,
                              "st-roles",
                              "7",
                              "{\"nodes\": \"tux[1-2]\", \"vni_count\": 1}",
                              &out),
                     201);
    long long step_vni = jint_at(out, "vnis", 0);
    json_decref(out);
    /* A node of the step reads it; a node of the job only is refused. */
    assert_int_equal(res_call(h,
                              "GET",
                              "st-roles/steps/7",
                              (struct harness_caller){ROLE_NODE, "tux2"},
                              &out),
                     200);
    assert_string_equal(jstr(out, "step_id"), "7");
    json_decref(out);
    /* Who holds a step's VNI: the step, with its job's VNIs. */
    char target[64];
    snprintf(target, sizeof(target), "/v1/vnis/%lld", step_vni);
    assert_int_equal(
        harness_call(h, (struct harness_req){"GET", target, admin, NULL}, &out),
        200);
    json_t *held = json_object_get(out, "reservation");
    assert_string_equal(jstr(out, "state"), "active");
    assert_string_equal(jstr(held, "step_id"), "7");
    assert_int_equal(json_array_size(json_object_get(held, "job_vnis")), 1);
    json_decref(out);
    /* The node's view and the list show the step with its step id. */
    struct harness_caller tux2 = {ROLE_NODE, "tux2"};
    assert_int_equal(
        harness_call(
            h, (struct harness_req){"GET", "/v1/nodes/tux2", tux2, NULL}, &out),
        200);
    size_t k, steps = 0;
    json_t *r;
    json_array_foreach (json_object_get(out, "reservations"), k, r) {
        if (!strcmp(jstr(r, "step_id"), "7")) {
            steps++;
            assert_string_equal(jstr(r, "job_id"), "st-roles");
            assert_int_equal(json_array_size(json_object_get(r, "job_vnis")),
                             1);
        }
    }
    assert_int_equal(steps, 1);
    json_decref(out);
    assert_int_equal(
        harness_call(h,
                     (struct harness_req){"GET",
                                          "/v1/reservations?node=tux2"
                                          "&state=active",
                                          scheduler,
                                          NULL},
                     &out),
        200);
    steps = 0;
    json_array_foreach (json_object_get(out, "reservations"), k, r)
        steps += !strcmp(jstr(r, "step_id"), "7");
    assert_int_equal(steps, 1);
    json_decref(out);
    expect_forbidden(h,
                     (struct harness_req){"GET",
                                          "/v1/reservations/st-roles/steps/7",
                                          {ROLE_NODE, "tux3"},
                                          NULL});
    assert_int_equal(
        res_call(h,
                 "GET",
                 "st-roles/steps/7",
                 (struct harness_caller){ROLE_MONITOR, "prometheus"},
                 &out),
        200);
    json_decref(out);
    expect_error(
        h,
        (struct harness_req){
            "GET", "/v1/reservations/st-roles/steps/8", scheduler, NULL},
        404,
        "reservation_not_found");
    /* Only an admin forces, and a node reports only for itself and its
     * step's nodes.
     */
    expect_forbidden(
        h,
        (struct harness_req){"DELETE",
                             "/v1/reservations/st-roles/steps/7?force=true",
                             scheduler,
                             NULL});
    expect_forbidden(
        h,
        (struct harness_req){"PUT",
                             "/v1/reservations/st-roles/steps/7/nodes/tux3",
                             {ROLE_NODE, "tux3"},
                             "{\"cxi\": \"created\"}"});
    expect_forbidden(
        h,
        (struct harness_req){"PUT",
                             "/v1/reservations/st-roles/steps/7/nodes/tux2",
                             {ROLE_NODE, "tux1"},
                             "{\"cxi\": \"created\"}"});
    released(h, "st-roles");
}

/* The scheduler ends a step (accepted: 202); its reservation is then in
 * state.
 */
static void expect_step_release(struct harness *h,
                                const char *tail,
                                const char *state)
{
    json_t *out = NULL;
    assert_int_equal(res_call(h, "DELETE", tail, scheduler, &out), 202);
    assert_string_equal(jstr(json_object_get(out, "reservation"), "state"),
                        state);
    json_decref(out);
}

static void test_step_release(void **state)
{
    struct harness *h = harness_of(state);
    json_t *out = NULL, *res;

    /* No node reported: released at once; repeating is harmless. */
    reserved(h, "st-rel", 1, "tux[1-4]");
    assert_int_equal(
        step_put(
            h, "st-rel", "0", "{\"nodes\": \"tux1\", \"vni_count\": 1}", &out),
        201);
    json_decref(out);
    assert_int_equal(res_call(h, "DELETE", "st-rel/steps/0", scheduler, &out),
                     202);
    assert_string_equal(jstr(out, "outcome"), "no_hwcoll");
    res = json_object_get(out, "reservation");
    assert_string_equal(jstr(res, "state"), "released");
    assert_string_equal(jstr(res, "step_id"), "0");
    json_decref(out);
    expect_step_release(h, "st-rel/steps/0", "released");
    /* A step without a reservation: nothing to release, no error. */
    assert_int_equal(res_call(h, "DELETE", "st-rel/steps/9", scheduler, &out),
                     202);
    assert_true(json_is_null(json_object_get(out, "reservation")));
    json_decref(out);

    /* A node holds the step's services: the step stays quarantined, and
     * the job's quarantine waits for it although the job's own nodes hold
     * nothing.
     */
    assert_int_equal(step_put(h,
                              "st-rel",
                              "1",
                              "{\"nodes\": \"tux[1-2]\", \"vni_count\": 1}",
                              &out),
                     201);
    long long step_id = jint(out, "id");
    json_decref(out);
    assert_int_equal(report(h, "st-rel", "1", "tux1", "creating", &out), 200);
    json_decref(out);
    assert_int_equal(report(h, "st-rel", "1", "tux1", "created", &out), 200);
    assert_int_equal(jint(out, "id"), step_id);
    json_decref(out);
    expect_step_release(h, "st-rel/steps/1", "releasing");
    expect_error(
        h,
        (struct harness_req){"PUT",
                             "/v1/reservations/st-rel/steps/1/nodes/tux1",
                             {ROLE_NODE, "tux1"},
                             "{\"cxi\": \"created\"}"},
        409,
        "job_not_active");
    assert_int_equal(release(h, "st-rel", scheduler, &out), 202);
    assert_string_equal(jstr(out, "state"), "releasing");
    json_decref(out);
    /* The step's last destroyed ends its quarantine, and the job's. */
    assert_int_equal(report(h, "st-rel", "1", "tux1", "destroyed", &out), 200);
    assert_string_equal(jstr(out, "state"), "released");
    json_decref(out);
    assert_int_equal(res_call(h, "GET", "st-rel", scheduler, &out), 200);
    assert_string_equal(jstr(out, "state"), "released");
    json_decref(out);
}

/* A step whose VNIs do not fit is refused as a job is; a forced job
 * release forces its steps.
 */
static void test_step_pool_and_force(void **state)
{
    struct harness *h = harness_of(state);
    const char *fill[] = {"st-full-a", "st-full-b", "st-full-c", "st-full-d"};
    json_t *out = NULL, *p = pool(h);
    long long free_before = jint(p, "free");
    json_decref(p);

    /* Leave one VNI free (the tests before released all of theirs). */
    assert_int_equal(free_before, 18);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(reserve(h, fill[i], 4, "tux1", &out), 201);
        json_decref(out);
    }
    reserved(h, "st-full", 1, "tux[1-2]");
    expect_error(
        h,
        (struct harness_req){"PUT",
                             "/v1/reservations/st-full/steps/0",
                             scheduler,
                             "{\"nodes\": \"tux1\", \"vni_count\": 2}"},
        503,
        "vni_pool_exhausted");
    assert_int_equal(
        step_put(
            h, "st-full", "0", "{\"nodes\": \"tux1\", \"vni_count\": 1}", &out),
        201);
    json_decref(out);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(release(h, fill[i], scheduler, &out), 200);
        json_decref(out);
    }
    /* A node holds the step: the job's release quarantines both, and an
     * admin's force ends both.
     */
    assert_int_equal(report(h, "st-full", "0", "tux1", "created", &out), 200);
    json_decref(out);
    assert_int_equal(release(h, "st-full", scheduler, &out), 202);
    json_decref(out);
    assert_int_equal(res_call(h, "GET", "st-full/steps/0", scheduler, &out),
                     200);
    assert_string_equal(jstr(out, "state"), "releasing");
    json_decref(out);
    assert_int_equal(release(h, "st-full?force=true", admin, &out), 200);
    assert_string_equal(jstr(out, "state"), "released");
    assert_true(json_is_true(json_object_get(out, "forced")));
    json_decref(out);
    assert_int_equal(res_call(h, "GET", "st-full/steps/0", scheduler, &out),
                     200);
    assert_string_equal(jstr(out, "state"), "released");
    assert_true(json_is_true(json_object_get(out, "forced")));
    json_decref(out);
    p = pool(h);
    assert_int_equal(jint(p, "free"), free_before);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_takes_pool_vnis),
        cmocka_unit_test(test_reserve_is_idempotent),
        cmocka_unit_test(test_release_then_quarantine),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_invalid_json),
        cmocka_unit_test(test_unknown_job),
        cmocka_unit_test(test_pool_counts),
        cmocka_unit_test(test_events_after_reserve),
        cmocka_unit_test(test_report_ends_quarantine),
        cmocka_unit_test(test_step_reserve),
        cmocka_unit_test(test_step_roles),
        cmocka_unit_test(test_step_release),
        cmocka_unit_test(test_step_pool_and_force),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
