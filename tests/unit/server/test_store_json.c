/* Unit tests for the JSON store.c builds from query rows, without a
 * database: the rows are made with libpq's PQmakeEmptyPGresult() and
 * PQsetvalue(), and store.c is compiled into the test so its static
 * builders can be called.
 *
 * Every allocation jansson makes is failed in turn: each failure must come
 * back as NULL with ENOMEM, with nothing leaked (LeakSanitizer) and
 * nothing released twice (AddressSanitizer), since json_pack()'s "o" and
 * json_object_set_new() take their value even when they fail.
 */
#include "server/store.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

static PGresult *make_result(int ncols, const char *const *values)
{
    PGresAttDesc attrs[ROW_NCOLS + 2];
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);

    assert_non_null(r);
    assert_true(ncols <= ROW_NCOLS + 2);
    memset(attrs, 0, sizeof(attrs));
    for (int c = 0; c < ncols; c++) {
        attrs[c].name = (char *)"c";
        attrs[c].typid = 25; /* text */
        attrs[c].typlen = -1;
        attrs[c].atttypmod = -1;
    }
    assert_int_equal(PQsetResultAttrs(r, ncols, attrs), 1);
    for (int c = 0; c < ncols; c++)
        assert_int_equal(PQsetvalue(r,
                                    0,
                                    c,
                                    (char *)(uintptr_t)values[c],
                                    values[c] ? (int)strlen(values[c]) : -1),
                         1);
    return r;
}

/* One reserved reservation with hardware collectives on the node. */
static PGresult *node_row(void)
{
    const char *v[ROW_NCOLS + 2] = {NULL};
    v[ROW_OUTCOME] = "ok";
    v[ROW_ID] = "7";
    v[ROW_JOB_ID] = "j7";
    v[ROW_STATE] = "active";
    v[ROW_UID] = "1000";
    v[ROW_USER] = "alice";
    v[ROW_NODES] = "n[1-2]";
    v[ROW_NODE_COUNT] = "2";
    v[ROW_VNI_COUNT] = "2";
    v[ROW_VNIS] = "3000,3001";
    v[ROW_TCS_MASK] = "10";
    v[ROW_CREATED_AT] = "2026-01-01T00:00:00Z";
    v[ROW_CREATED_BY] = "slurmctld";
    v[ROW_FORCED] = "f";
    v[ROW_COUNTS] = "1,0,0,0";
    v[ROW_HWCOLL_MODE] = "auto";
    v[ROW_HWCOLL_STATE] = "reserved";
    v[ROW_HWCOLL_REASON] = "eligible";
    v[ROW_FM_JOB_ID] = "fm-7";
    v[ROW_ADDRS_PER_JOB] = "4";
    v[ROW_NCOLS] = "created";
    v[ROW_NCOLS + 1] = "[{\"device\": \"cxi0\", \"svc_id\": 3}]";
    return make_result(ROW_NCOLS + 2, v);
}

static PGresult *drain_row(void)
{
    const char *v[3] = {"t", "maintenance", "2026-01-02T00:00:00Z"};
    return make_result(3, v);
}

static void test_node_view(void **state)
{
    struct config cfg = {0};
    char url[] = "http://fm.example:8000";
    PGresult *r = node_row(), *d = drain_row();
    (void)state;

    cfg.hwcoll.fm_url = url;
    cfg.hwcoll.min_nodes = 2;
    json_t *o = node_view(&cfg, "n1", r, d);
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
    PQclear(r);
    PQclear(d);
}

static void test_node_view_out_of_memory(void **state)
{
    struct config cfg = {0};
    char url[] = "http://fm.example:8000";
    PGresult *r = node_row(), *d = drain_row();
    int failures = 0;
    (void)state;

    cfg.hwcoll.fm_url = url;
    cfg.hwcoll.min_nodes = 2;
    json_set_alloc_funcs(budget_malloc, free);
    for (long n = 0; n < 10000; n++) {
        alloc_budget = n;
        errno = 0;
        json_t *o = node_view(&cfg, "n1", r, d);
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
    PQclear(r);
    PQclear(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_view),
        cmocka_unit_test(test_node_view_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
