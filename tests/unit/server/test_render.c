/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the client JSON render.c builds from what the store
 * reads, without a database: the rows are plain text, as libpq gives them.
 *
 * Every allocation jansson makes is failed in turn: each failure must come
 * back as NULL with ENOMEM, with nothing leaked (LeakSanitizer) and
 * nothing released twice (AddressSanitizer), since json_pack()'s "o" and
 * json_object_set_new() take their value even when they fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "server/store/render.h"

/* Allocations left before one fails; negative: none fails. */
static long alloc_budget = -1;

static void *budget_malloc(size_t size)
{
    if (alloc_budget == 0)
        return NULL;
    if (alloc_budget > 0)
        alloc_budget--;
    return malloc(size);
}

/* The FM's URL, as a config holds it (not const). */
static char fm_url[] = "http://fm.example:8000";

/* A config with the FM, for jobs of min_nodes nodes (0: on request). */
static struct config fm_config(long min_nodes)
{
    struct config cfg = {0};

    cfg.hwcoll.fm_url = fm_url;
    cfg.hwcoll.min_nodes = min_nodes;
    return cfg;
}

/* String member key of o, or NULL. */
static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* One reserved reservation with hardware collectives on the node. */
static struct render_node_entry node_entry(void)
{
    struct render_node_entry e = {
        .res = {.id = "7",
                .job_id = "j7",
                .state = "active",
                .uid = "1000",
                .user = "alice",
                .nodes = "n[1-2]",
                .node_count = "2",
                .vni_count = "2",
                .vnis = "3000,3001",
                .tcs_mask = "10",
                .created_at = "2026-01-01T00:00:00Z",
                .created_by = "slurmctld",
                .forced = "f",
                .counts = "1,0,0,0",
                .hwcoll_mode = "auto",
                .hwcoll_state = "reserved",
                .hwcoll_reason = "eligible",
                .fm_job_id = "fm-7",
                .addrs_per_job = "4"},
        .cxi = "created",
        .services = "[{\"device\": \"cxi0\", \"svc_id\": 3}]",
    };
    return e;
}

static json_t *view(const struct config *cfg, const struct render_node_entry *e)
{
    return render_node_view(
        cfg, "n1", e, 1, true, "maintenance", "2026-01-02T00:00:00Z");
}

static void test_node_view(void **state)
{
    struct config cfg = fm_config(2);
    struct render_node_entry e = node_entry();
    (void)state;

    json_t *o = view(&cfg, &e);
    assert_non_null(o);
    assert_string_equal(jstr(o, "node"), "n1");
    assert_true(json_is_true(json_object_get(o, "drained")));
    assert_int_equal(json_integer_value(json_object_get(o, "cleanup_needed")),
                     1);
    json_t *res = json_array_get(json_object_get(o, "reservations"), 0);
    assert_string_equal(jstr(res, "cxi"), "created");
    assert_int_equal(json_array_size(json_object_get(res, "services")), 1);
    json_t *env = json_object_get(res, "environment");
    assert_string_equal(jstr(env, "FI_CXI_COLL_FABRIC_MGR_URL"),
                        "http://fm.example:8000/fabric/collectives/multicasts");
    json_decref(o);
}

/* What the out-of-memory tests build: render_node_view of e, or
 * render_reservation of f.
 */
struct build {
    struct config cfg;
    struct render_node_entry e;
    struct render_row f;
    bool node_view;
};

/* Fail every allocation jansson makes in building b in turn: each failure
 * must come back as NULL with ENOMEM.  Returns how many did.
 */
static int fail_each_allocation(const struct build *b)
{
    int failures = 0;

    json_set_alloc_funcs(budget_malloc, free);
    for (long n = 0; n < 10000; n++) {
        alloc_budget = n;
        errno = 0;
        json_t *o = b->node_view ? view(&b->cfg, &b->e)
                                 : render_reservation(&b->cfg, &b->f);
        bool failed = alloc_budget == 0;
        alloc_budget = -1;
        if (o) {
            json_decref(o);
            if (!failed)
                break; /* every allocation has been failed once */
            continue;  /* a failure the code may absorb (none so far) */
        }
        assert_int_equal(errno, ENOMEM);
        failures++;
    }
    json_set_alloc_funcs(malloc, free);
    return failures;
}

static void test_node_view_out_of_memory(void **state)
{
    struct build b = {
        .cfg = fm_config(2), .e = node_entry(), .node_view = true};
    (void)state;

    assert_true(fail_each_allocation(&b) > 10);
}

/* Step 3 of the job of node_entry() (schema/0017): its own VNI, its job's
 * multicast reservation.
 */
static struct render_row step_row(void)
{
    struct render_row f = node_entry().res;
    f.id = "9";
    f.job_id = "j7#3";
    f.nodes = "n1";
    f.node_count = "1";
    f.vni_count = "1";
    f.vnis = "3002";
    f.hwcoll_mode = "off";
    f.hwcoll_state = "disabled";
    f.hwcoll_reason = NULL;
    f.fm_job_id = NULL;
    f.addrs_per_job = NULL;
    f.parent_vnis = "3000,3001";
    f.parent_hwcoll_mode = "auto";
    f.parent_hwcoll_state = "reserved";
    f.parent_fm_job_id = "fm-7";
    f.parent_addrs_per_job = "4";
    return f;
}

static const char *env_of(json_t *o, const char *key)
{
    return jstr(json_object_get(o, "environment"), key);
}

static void test_step(void **state)
{
    struct config cfg = fm_config(2);
    struct render_row f = step_row();
    (void)state;

    json_t *o = render_reservation(&cfg, &f);
    assert_non_null(o);
    assert_string_equal(jstr(o, "job_id"), "j7");
    assert_string_equal(jstr(o, "step_id"), "3");
    assert_int_equal(json_array_size(json_object_get(o, "vnis")), 1);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(o, "vnis"), 0)),
        3002);
    assert_int_equal(json_array_size(json_object_get(o, "job_vnis")), 2);
    assert_string_equal(env_of(o, "SLINGSHOT_VNIS"), "3002,3000,3001");
    assert_string_equal(env_of(o, "FI_CXI_COLL_JOB_ID"), "fm-7");
    assert_string_equal(env_of(o, "FI_CXI_COLL_JOB_STEP_ID"), "3");
    assert_string_equal(jstr(json_object_get(o, "hwcoll"), "state"),
                        "reserved");
    json_decref(o);

    /* A step without VNIs of its own: the job's alone. */
    f.vnis = "";
    f.vni_count = "0";
    o = render_reservation(&cfg, &f);
    assert_string_equal(env_of(o, "SLINGSHOT_VNIS"), "3000,3001");
    json_decref(o);

    /* A job's reservation has no step_id, and no step variable. */
    f = node_entry().res;
    o = render_reservation(&cfg, &f);
    assert_string_equal(jstr(o, "job_id"), "j7");
    assert_null(json_object_get(o, "step_id"));
    assert_null(json_object_get(o, "job_vnis"));
    assert_null(env_of(o, "FI_CXI_COLL_JOB_STEP_ID"));
    assert_string_equal(env_of(o, "SLINGSHOT_VNIS"), "3000,3001");
    json_decref(o);

    /* An event of a step shows the job and the step apart. */
    const struct render_event ev = {.id = "5",
                                    .time = "2026-01-01T00:00:00.000Z",
                                    .reservation_id = "9",
                                    .job_id = "j7#3",
                                    .actor = "slurmctld",
                                    .action = "reserve",
                                    .detail = "{}"};
    o = render_event(&ev);
    assert_string_equal(jstr(o, "job_id"), "j7");
    assert_string_equal(jstr(o, "step_id"), "3");
    json_decref(o);
}

static void test_step_out_of_memory(void **state)
{
    struct build b = {.cfg = fm_config(0), .f = step_row()};
    (void)state;

    assert_true(fail_each_allocation(&b) > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_view),
        cmocka_unit_test(test_node_view_out_of_memory),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_step_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
