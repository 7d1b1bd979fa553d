/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the Flux jobtap plugin's Flux-free parts
 * (plugins/flux/jobtap/): its settings and a job's options (fjt_conf.c),
 * the release spool (fjt_spool.c) and the worker's behaviour with a
 * broker that refuses connections (fjt_worker.c): a reserve gives up
 * after its deadline, a release is spooled, a flush keeps it, and calls
 * queued at destroy are spooled, never lost; a reserve asks for a lease,
 * and is asked again at once without one from a broker that signs none
 * (400 lease_disabled) or for a job reserved without one (409
 * reservation_conflict), against a fake broker; a reserve answered 503
 * vni_pool_exhausted comes back at once (FJT_POOL_SHORT, one request),
 * for the plugin to retry, with no thread waiting.  The plugin's sources are
 * compiled in: they are not part of any library.  The plugin against a
 * real broker and a real Flux: tests/integration/07*-flux.sh.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/common/fakehttp.h"
#include "plugins/flux/jobtap/fjt_conf.c"
#include "plugins/flux/jobtap/fjt_spool.c"
#include "plugins/flux/jobtap/fjt_worker.c"

static json_t *js(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    return o;
}

static void test_conf_defaults(void **state)
{
    struct fjt_conf c;
    vnib_error_t e = {0};
    json_t *t = js("{\"url\":\"https://b:8443\"}");

    (void)state;
    assert_int_equal(fjt_conf_parse(&c, t, NULL, &e), 0);
    assert_string_equal(c.url, "https://b:8443");
    assert_string_equal(c.token_file, "/etc/vnibroker/flux.token");
    assert_string_equal(c.spool_dir, "/var/spool/vnibroker/flux/release");
    assert_true(c.reserve_fatal);
    assert_int_equal(c.vnis_per_job, -1);
    assert_int_equal(c.threads, 4);
    assert_int_equal(c.timeout_ms, 10000);
    assert_int_equal(c.reserve_timeout_ms, 60000);
    assert_int_equal(c.retry_ms, 30000);
    assert_string_equal(c.hwcoll, "");
    assert_int_equal(c.reconcile_s, 300);
    assert_string_equal(c.token_name, "");
    assert_int_equal(c.pool_wait_ms, 25L * 60 * 1000);
    json_decref(t);
}

/* Load arguments (strings, from `flux jobtap load ... key=value`) win. */
static void test_conf_load_overrides(void **state)
{
    struct fjt_conf c;
    vnib_error_t e = {0};
    json_t *t =
        js("{\"url\":\"https://b:8443\",\"threads\":2,"
           "\"reserve-fatal\":true}");
    json_t *l =
        js("{\"url\":\"http://127.0.0.1:9\",\"threads\":\"8\","
           "\"reserve-fatal\":\"false\",\"hwcoll\":\"on\"}");

    (void)state;
    assert_int_equal(fjt_conf_parse(&c, t, l, &e), 0);
    assert_string_equal(c.url, "http://127.0.0.1:9");
    assert_int_equal(c.threads, 8);
    assert_false(c.reserve_fatal);
    assert_string_equal(c.hwcoll, "on");
    assert_int_equal(c.pool_wait_ms, 25L * 60 * 1000);
    json_decref(t);
    json_decref(l);
    /* pool-wait-ms: 0 (refused at once) and a load argument's string. */
    t = js("{\"url\":\"https://b:8443\",\"pool-wait-ms\":0}");
    assert_int_equal(fjt_conf_parse(&c, t, NULL, &e), 0);
    assert_int_equal(c.pool_wait_ms, 0);
    l = js("{\"pool-wait-ms\":\"5000\"}");
    assert_int_equal(fjt_conf_parse(&c, t, l, &e), 0);
    assert_int_equal(c.pool_wait_ms, 5000);
    json_decref(t);
    json_decref(l);
}

static void expect_conf_error(const char *table, const char *want)
{
    struct fjt_conf c;
    vnib_error_t e = {0};
    json_t *t = js(table);

    assert_int_equal(fjt_conf_parse(&c, t, NULL, &e), -1);
    assert_int_equal(errno, EINVAL);
    if (!strstr(e.text, want))
        fail_msg("'%s' does not say '%s'", e.text, want);
    json_decref(t);
}

static void test_conf_errors(void **state)
{
    (void)state;
    expect_conf_error("{}", "vnibroker.url is not set");
    expect_conf_error("{\"url\":\"ftp://x\"}", "must start http://");
    expect_conf_error("{\"url\":\"http://x\",\"bogus\":1}",
                      "unknown key 'bogus'");
    expect_conf_error("{\"url\":\"http://x\",\"threads\":0}",
                      "vnibroker.threads must be an integer from 1 to 32");
    expect_conf_error("{\"url\":\"http://x\",\"vnis-per-job\":5}",
                      "vnis-per-job must be an integer from -1 to 4");
    expect_conf_error("{\"url\":\"http://x\",\"reserve-fatal\":\"maybe\"}",
                      "reserve-fatal must be true or false");
    expect_conf_error("{\"url\":\"http://x\",\"hwcoll\":\"always\"}",
                      "hwcoll must be on, off or auto");
    expect_conf_error("{\"url\":\"http://x\",\"token-file\":\"rel/path\"}",
                      "must be absolute");
    expect_conf_error("{\"url\":\"http://x\",\"timeout-ms\":\"10s\"}",
                      "timeout-ms must be an integer");
    expect_conf_error("{\"url\":\"http://x\",\"reconcile-s\":-1}",
                      "reconcile-s must be an integer from 0 to 86400");
    expect_conf_error("{\"url\":\"http://x\",\"pool-wait-ms\":-1}",
                      "pool-wait-ms must be an integer from 0 to 86400000");
    expect_conf_error("{\"url\":\"http://x\",\"pool-wait-ms\":86400001}",
                      "pool-wait-ms must be an integer from 0 to 86400000");
}

static int opts(const char *jobspec_opts,
                struct fjt_jobopts *o,
                vnib_error_t *e)
{
    char text[512];
    json_t *j;
    int rc;

    snprintf(text,
             sizeof(text),
             "{\"attributes\":{\"system\":{\"shell\":{\"options\":%s}}}}",
             jobspec_opts);
    j = js(text);
    rc = fjt_jobopts_parse(o, j, e);
    json_decref(j);
    return rc;
}

static void test_jobopts(void **state)
{
    struct fjt_jobopts o;
    vnib_error_t e = {0};

    (void)state;
    assert_int_equal(opts("{}", &o, &e), 0);
    assert_false(o.off);
    assert_int_equal(o.vni_count, -1);
    assert_string_equal(o.hwcoll, "");
    assert_int_equal(opts("{\"cray-slingshot\":\"off\"}", &o, &e), 0);
    assert_true(o.off);
    assert_int_equal(opts("{\"cray-slingshot\":{\"vnicount\":2}}", &o, &e), 0);
    assert_int_equal(o.vni_count, 2);
    /* flux-coral2's shell plugin reads other keys: passed through. */
    assert_int_equal(
        opts("{\"cray-slingshot\":{\"vnicount\":0,\"other\":1}}", &o, &e), 0);
    assert_int_equal(o.vni_count, 0);
    assert_int_equal(opts("{\"vnibroker\":{\"hwcoll\":\"on\"}}", &o, &e), 0);
    assert_string_equal(o.hwcoll, "on");

    assert_int_equal(opts("{\"cray-slingshot\":{\"vnicount\":42}}", &o, &e),
                     -1);
    assert_string_equal(e.text, "cray-slingshot.vnicount must be within 0-4");
    assert_int_equal(opts("{\"cray-slingshot\":{\"vnicount\":\"2\"}}", &o, &e),
                     -1);
    assert_int_equal(opts("{\"cray-slingshot\":\"on\"}", &o, &e), -1);
    assert_int_equal(opts("{\"cray-slingshot\":7}", &o, &e), -1);
    assert_int_equal(opts("{\"vnibroker\":{\"hwcoll\":\"bogus\"}}", &o, &e),
                     -1);
    assert_string_equal(e.text, "vnibroker.hwcoll must be on, off or auto");
    assert_int_equal(opts("{\"vnibroker\":{\"vnis\":1}}", &o, &e), -1);
    assert_string_equal(e.text,
                        "vnibroker: unknown option 'vnis' (want hwcoll)");
    assert_int_equal(opts("{\"vnibroker\":\"on\"}", &o, &e), -1);
}

/* Whether fjt_R_nodes accepts R (what it returns is freed here). */
static bool r_nodes_ok(json_t *R)
{
    vnib_error_t e = {0};
    char *nodes = fjt_R_nodes(R, &e);
    bool ok = nodes != NULL;

    free(nodes);
    return ok;
}

/* Whether fjt_spool_create accepts path (the spool is closed here). */
static bool spool_ok(const char *path, vnib_error_t *errp)
{
    struct fjt_spool *s = fjt_spool_create(path, errp);
    bool ok = s != NULL;
    int saved = errno;

    fjt_spool_destroy(s);
    errno = saved;
    return ok;
}

static void test_R_nodes(void **state)
{
    vnib_error_t e = {0};
    json_t *R = js("{\"execution\":{\"nodelist\":[\"fx[0-1]\",\"gx3\"]}}");
    char *nodes;

    (void)state;
    nodes = fjt_R_nodes(R, &e);
    assert_non_null(nodes);
    assert_string_equal(nodes, "fx[0-1],gx3");
    free(nodes);
    json_decref(R);
    R = js("{\"execution\":{\"nodelist\":[]}}");
    assert_false(r_nodes_ok(R));
    json_decref(R);
    R = js("{\"execution\":{\"nodelist\":[3]}}");
    assert_false(r_nodes_ok(R));
    json_decref(R);
    assert_false(r_nodes_ok(NULL));
}

static void test_R_ncores(void **state)
{
    json_t *R;

    (void)state;
    R =
        js("{\"execution\":{\"R_lite\":[{\"rank\":\"0-2\","
           "\"children\":{\"core\":\"0-1\"}}]}}");
    assert_int_equal(fjt_R_ncores(R), 2);
    json_decref(R);
    R =
        js("{\"execution\":{\"R_lite\":[{\"rank\":\"0\","
           "\"children\":{\"core\":\"0-3,8,10\"}},{\"rank\":\"1\","
           "\"children\":{\"core\":\"4-9\"}}]}}");
    assert_int_equal(fjt_R_ncores(R), 6); /* 4+1+1 and 6: the same */
    json_decref(R);
    R =
        js("{\"execution\":{\"R_lite\":[{\"rank\":\"0\","
           "\"children\":{\"core\":\"0-3\"}},{\"rank\":\"1\","
           "\"children\":{\"core\":\"0\"}}]}}");
    assert_int_equal(fjt_R_ncores(R), 0); /* they differ: the node reads R */
    json_decref(R);
    R =
        js("{\"execution\":{\"R_lite\":[{\"rank\":\"0\","
           "\"children\":{\"core\":\"3-1\"}}]}}");
    assert_int_equal(fjt_R_ncores(R), 0);
    json_decref(R);
    R =
        js("{\"execution\":{\"R_lite\":[{\"rank\":\"0\","
           "\"children\":{\"gpu\":\"0\"}}]}}");
    assert_int_equal(fjt_R_ncores(R), 0);
    json_decref(R);
    assert_int_equal(fjt_R_ncores(NULL), 0);
}

/* A private directory for a spool, removed by the test. */
static char *tmpdir(void)
{
    char *d = strdup("/tmp/test_fjt.XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static void rmtree(const char *d)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
}

static void test_spool(void **state)
{
    char *d = tmpdir();
    char path[256];
    vnib_error_t e = {0};
    struct fjt_spool *s;
    char **list;
    struct stat st;

    (void)state;
    snprintf(path, sizeof(path), "%s/a/release", d);
    s = fjt_spool_create(path, &e);
    assert_non_null(s);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(fjt_spool_count(s), 0);
    assert_int_equal(fjt_spool_add(s, "12", &e), 0);
    usleep(20000);
    assert_int_equal(fjt_spool_add(s, "7", &e), 0);
    usleep(20000); /* past the file system's timestamp granularity */
    assert_int_equal(fjt_spool_add(s, "12", &e), 0); /* again: one file */
    assert_int_equal(fjt_spool_count(s), 2);
    list = fjt_spool_list(s, &e);
    assert_non_null(list);
    assert_string_equal(list[0], "7"); /* oldest first: 12 was rewritten */
    assert_string_equal(list[1], "12");
    assert_null(list[2]);
    fjt_spool_list_free(list);
    assert_int_equal(fjt_spool_add(s, "../x", &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(fjt_spool_remove(s, "12", &e), 0);
    assert_int_equal(fjt_spool_remove(s, "12", &e), 0); /* gone: fine */
    assert_int_equal(fjt_spool_count(s), 1);
    fjt_spool_destroy(s);

    /* Others may write it: refused. */
    assert_int_equal(chmod(path, 0722), 0);
    assert_false(spool_ok(path, &e));
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(e.text, "the release spool"));
    assert_false(spool_ok("relative", &e));
    rmtree(d);
    free(d);
}

/* Wait for the worker's pipe, then take its finished calls. */
static struct fjt_call *take_one(struct fjt_worker *w)
{
    struct pollfd p = {.fd = fjt_worker_fd(w), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    struct fjt_call *c = fjt_worker_take(w);
    assert_non_null(c);
    assert_null(c->next);
    return c;
}

static void test_worker_unreachable(void **state)
{
    char *d = tmpdir();
    vnib_error_t e = {0};
    struct fjt_spool *s = fjt_spool_create(d, &e);
    struct fjt_worker_cfg cfg = {
        .url = "http://127.0.0.1:1",
        .token = "vnib1.test",
        .timeout_ms = 500,
        .reserve_timeout_ms = 800,
        .threads = 2,
    };
    struct fjt_worker *w;
    struct fjt_call *c;

    (void)state;
    assert_non_null(s);
    w = fjt_worker_create(&cfg, s, &e);
    assert_non_null(w);

    c = fjt_call_create(FJT_RESERVE, 42, "fx[0-2]");
    c->uid = (uint32_t)getuid();
    fjt_worker_queue(w, c);
    c = take_one(w);
    assert_int_equal(c->result, FJT_UNREACHABLE);
    assert_true(c->attempts >= 2); /* retried until its deadline */
    assert_true(c->finished_ms - c->started_ms >= 500);
    assert_non_null(strstr(c->error.text, "127.0.0.1:1"));
    fjt_call_destroy(c);

    fjt_worker_queue(w, fjt_call_create(FJT_RELEASE, 43, NULL));
    c = take_one(w);
    assert_int_equal(c->result, FJT_SPOOLED);
    assert_string_equal(c->job_id, "43");
    fjt_call_destroy(c);
    assert_int_equal(fjt_spool_count(s), 1);

    fjt_worker_queue(w, fjt_call_create(FJT_FLUSH, 0, NULL));
    c = take_one(w);
    assert_int_equal(c->result, FJT_UNREACHABLE);
    fjt_call_destroy(c);
    assert_int_equal(fjt_spool_count(s), 1); /* kept for the next flush */

    /* Releases still queued when the worker stops are spooled: the
     * first two threads are busy with slow reserves. */
    for (uint64_t id = 50; id < 52; id++)
        fjt_worker_queue(w, fjt_call_create(FJT_RESERVE, id, "fx0"));
    for (uint64_t id = 60; id < 63; id++)
        fjt_worker_queue(w, fjt_call_create(FJT_RELEASE, id, NULL));
    fjt_worker_destroy(w);
    assert_true(fjt_spool_count(s) >= 4);
    char **list = fjt_spool_list(s, &e);
    int found = 0;
    for (char **p = list; *p; p++)
        found += !strcmp(*p, "60") || !strcmp(*p, "61") || !strcmp(*p, "62");
    assert_int_equal(found, 3);
    fjt_spool_list_free(list);
    fjt_spool_destroy(s);
    rmtree(d);
    free(d);
}

/* One reserve against a fake broker answering the replies given in
 * order; the call back, its requests' bodies in bodies[]. */
static struct fjt_call *reserve_against(const char *const *replies,
                                        const int *statuses,
                                        int n,
                                        bool lease,
                                        char **bodies)
{
    char *d = tmpdir();
    char url[64];
    vnib_error_t e = {0};
    struct fakehttp *srv = fakehttp_new(n);
    struct fjt_spool *s;
    struct fjt_worker *w;
    struct fjt_call *c;

    for (int i = 0; i < n; i++)
        fakehttp_add_json(
            srv, "POST /v1/reservations", statuses[i], replies[i], 1);
    fakehttp_run(srv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv->port);
    struct fjt_worker_cfg cfg = {
        .url = url,
        .token = "vnib1.test",
        .timeout_ms = 2000,
        .reserve_timeout_ms = 3000,
        .threads = 1,
    };
    assert_non_null(s = fjt_spool_create(d, &e));
    assert_non_null(w = fjt_worker_create(&cfg, s, &e));
    c = fjt_call_create(FJT_RESERVE, 42, "fx[0-2]");
    c->uid = (uint32_t)getuid();
    c->lease = lease;
    fjt_worker_queue(w, c);
    c = take_one(w);
    fjt_worker_destroy(w);
    fakehttp_join(srv);
    for (int i = 0; i < n; i++)
        bodies[i] = strdup(fakehttp_body(srv, i));
    fakehttp_free(srv);
    fjt_spool_destroy(s);
    rmtree(d);
    free(d);
    return c;
}

static void test_worker_lease(void **state)
{
    const char *granted[] = {
        "{\"id\":7,\"job_id\":\"42\",\"vnis\":[3000],"
        "\"lease\":\"vnib1.x.y\"}"};
    const int created[] = {201};
    const char *disabled[] = {
        "{\"error\":{\"code\":\"lease_disabled\",\"message\":\"set "
        "lease.key_file\"}}",
        "{\"id\":7,\"job_id\":\"42\",\"vnis\":[3000]}"};
    const char *conflict[] = {
        "{\"error\":{\"code\":\"reservation_conflict\",\"message\":"
        "\"x\"}}",
        "{\"id\":7,\"job_id\":\"42\",\"vnis\":[3000]}"};
    const char *exhausted[] = {
        "{\"error\":{\"code\":\"vni_pool_exhausted\",\"message\":"
        "\"VNI pool exhausted: 1 VNIs requested, 0 free\"}}"};
    const int unavailable[] = {503};
    const int twice[] = {400, 200};
    const int conflicted[] = {409, 200};
    char *bodies[2] = {NULL, NULL};
    struct fjt_call *c;

    (void)state;
    /* Granted: one request, which asked for it. */
    c = reserve_against(granted, created, 1, true, bodies);
    assert_int_equal(c->result, FJT_OK);
    assert_true(c->lease);
    assert_false(c->lease_disabled);
    assert_int_equal(c->attempts, 1);
    assert_string_equal(json_string_value(json_object_get(c->reply, "lease")),
                        "vnib1.x.y");
    fakehttp_assert_contains(bodies[0], "\"lease\":true");
    fjt_call_destroy(c);
    free(bodies[0]);

    /* A broker without leases: asked again at once, without one. */
    c = reserve_against(disabled, twice, 2, true, bodies);
    assert_int_equal(c->result, FJT_OK);
    assert_false(c->lease);
    assert_true(c->lease_disabled);
    assert_int_equal(c->attempts, 2);
    fakehttp_assert_contains(bodies[0], "\"lease\":true");
    fakehttp_assert_lacks(bodies[1], "lease");
    fjt_call_destroy(c);
    free(bodies[0]);
    free(bodies[1]);

    /* A job reserved without a lease before: its retry must ask as the
     * first reserve did. */
    c = reserve_against(conflict, conflicted, 2, true, bodies);
    assert_int_equal(c->result, FJT_OK);
    assert_false(c->lease);
    assert_false(c->lease_disabled);
    fakehttp_assert_lacks(bodies[1], "lease");
    fjt_call_destroy(c);
    free(bodies[0]);
    free(bodies[1]);

    /* A pool too short: back at once after one request, nothing waited
     * for in the thread (the plugin's reactor retries it). */
    c = reserve_against(exhausted, unavailable, 1, true, bodies);
    assert_int_equal(c->result, FJT_POOL_SHORT);
    assert_int_equal(c->status, 503);
    assert_int_equal(c->attempts, 1);
    if (!strstr(c->error.text, "vni_pool_exhausted"))
        fail_msg("'%s' does not name vni_pool_exhausted", c->error.text);
    fjt_call_destroy(c);
    free(bodies[0]);

    /* Without a lease asked for, a conflict is final. */
    c = reserve_against(conflict, conflicted, 1, false, bodies);
    assert_int_equal(c->result, FJT_REFUSED);
    assert_int_equal(c->status, 409);
    fakehttp_assert_lacks(bodies[0], "lease");
    fjt_call_destroy(c);
    free(bodies[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_defaults),
        cmocka_unit_test(test_conf_load_overrides),
        cmocka_unit_test(test_conf_errors),
        cmocka_unit_test(test_jobopts),
        cmocka_unit_test(test_R_nodes),
        cmocka_unit_test(test_R_ncores),
        cmocka_unit_test(test_spool),
        cmocka_unit_test(test_worker_unreachable),
        cmocka_unit_test(test_worker_lease),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
