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

#include "server/render.h"

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
    struct config cfg = {0};
    char url[] = "http://fm.example:8000";
    struct render_node_entry e = node_entry();
    (void)state;

    cfg.hwcoll.fm_url = url;
    cfg.hwcoll.min_nodes = 2;
    json_t *o = view(&cfg, &e);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "node")), "n1");
    assert_true(json_is_true(json_object_get(o, "drained")));
    assert_int_equal(json_integer_value(json_object_get(o, "cleanup_needed")),
                     1);
    json_t *res = json_array_get(json_object_get(o, "reservations"), 0);
    assert_string_equal(json_string_value(json_object_get(res, "cxi")),
                        "created");
    assert_int_equal(json_array_size(json_object_get(res, "services")), 1);
    json_t *env = json_object_get(res, "environment");
    assert_string_equal(
        json_string_value(json_object_get(env, "FI_CXI_COLL_FABRIC_MGR_URL")),
        "http://fm.example:8000/fabric/collectives/multicasts");
    json_decref(o);
}

static void test_node_view_out_of_memory(void **state)
{
    struct config cfg = {0};
    char url[] = "http://fm.example:8000";
    struct render_node_entry e = node_entry();
    int failures = 0;
    (void)state;

    cfg.hwcoll.fm_url = url;
    cfg.hwcoll.min_nodes = 2;
    json_set_alloc_funcs(budget_malloc, free);
    for (long n = 0; n < 10000; n++) {
        alloc_budget = n;
        errno = 0;
        json_t *o = view(&cfg, &e);
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
    assert_true(failures > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_view),
        cmocka_unit_test(test_node_view_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
