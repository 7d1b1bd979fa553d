/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the Flux node side's Flux-free parts
 * (plugins/flux/node/): its settings file, read as sh assignments without
 * a shell and refused when another user could have written it
 * (fxn_conf.c), and what it takes of a job's eventlog entries, of its
 * vnibroker event and of its R (fxn_job.c).  The sources are compiled in:
 * they are not part of any library.  The program against a real Flux and
 * a real broker: tests/integration/07*-flux.sh.
 */
#include <errno.h>
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

#include "plugins/flux/node/fxn_conf.c"
#include "plugins/flux/node/fxn_job.c"

static json_t *js(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    return o;
}

static void test_conf_defaults(void **state)
{
    struct fxn_conf c;

    (void)state;
    fxn_conf_defaults(&c, "/etc/vnibroker");
    assert_string_equal(c.agent_config, "/etc/vnibroker/agent.toml");
    assert_int_equal(c.reservation_wait_ms, 0);
    assert_int_equal(c.retry_busy_ms, 300000);
    assert_true(c.syslog);
}

/* What the script's settings file held parses the same way. */
static void test_conf_parse(void **state)
{
    struct fxn_conf c;
    vnib_error_t e = {0};
    const char *text =
        "# a comment\n"
        "\n"
        "VNIB_AGENT=/usr/sbin/vnib-agent\n"
        "  AGENT_CONFIG='/etc/vnibroker/%n/agent.toml'  # per node\n"
        "export FLUX=\"/usr/bin/flux\"\n"
        "RESERVATION_WAIT=600\r\n"
        "HOUSEKEEPING_RETRY_BUSY=2s\n"
        "LOGGER=\n";

    (void)state;
    fxn_conf_defaults(&c, "/etc/vnibroker");
    assert_int_equal(fxn_conf_parse(&c, text, "f.conf", &e), 0);
    assert_string_equal(c.agent_config, "/etc/vnibroker/%n/agent.toml");
    assert_int_equal(c.reservation_wait_ms, 600000);
    assert_int_equal(c.retry_busy_ms, 2000);
    assert_false(c.syslog);
    assert_int_equal(fxn_conf_parse(&c, "RESERVATION_WAIT=10m\n", "f", &e), 0);
    assert_int_equal(c.reservation_wait_ms, 600000);
    assert_int_equal(fxn_conf_parse(&c, "RESERVATION_WAIT=0", "f", &e), 0);
    assert_int_equal(c.reservation_wait_ms, 0);
    assert_int_equal(fxn_conf_parse(&c, "LOGGER=\"\"\nA_B=\n", "f", &e), -1);
    assert_false(c.syslog);
}

/* Anything that would need a shell, or that the program does not know,
 * is refused with the line named. */
static void test_conf_refused(void **state)
{
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"AGENT_CONFIG=$(touch /tmp/x)\n", "f.conf:1: an expansion"},
        {"AGENT_CONFIG=${HOME}/a\n", "f.conf:1: an expansion"},
        {"AGENT_CONFIG=\"$HOME/a\"\n", "f.conf:1: an expansion"},
        {"AGENT_CONFIG=`id`\n", "f.conf:1: an expansion"},
        {"AGENT_CONFIG=a\\ b\n", "f.conf:1: an expansion"},
        {"\nAGENT_CONFIG=a;id\n", "f.conf:2: an expansion"},
        {"AGENT_CONFIG='a\n", "f.conf:1: a quote is not closed"},
        {"AGENT_CONFIG = a\n", "f.conf:1: not a NAME=value line"},
        {"AGENT_CONFIG=a id\n", "f.conf:1: one NAME=value per line"},
        {". /etc/other\n", "f.conf:1: not a NAME=value line"},
        {"PATH=/tmp\n", "f.conf:1: unknown setting"},
        {"AGENT_CONFIG=\n", "f.conf:1: AGENT_CONFIG is empty"},
        {"RESERVATION_WAIT=soon\n", "f.conf:1: RESERVATION_WAIT is not"},
        {"RESERVATION_WAIT=-5\n", "f.conf:1: RESERVATION_WAIT is not"},
        {"HOUSEKEEPING_RETRY_BUSY=5x\n", "f.conf:1: HOUSEKEEPING_RETRY_BUSY"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fxn_conf c;
        vnib_error_t e = {0};
        fxn_conf_defaults(&c, "/etc/vnibroker");
        errno = 0;
        assert_int_equal(fxn_conf_parse(&c, cases[i].text, "f.conf", &e), -1);
        assert_int_equal(errno, EINVAL);
        if (strncmp(e.text, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("'%s': got '%s'", cases[i].text, e.text);
        /* Nothing of a refused line is kept. */
        assert_string_equal(c.agent_config, "/etc/vnibroker/agent.toml");
    }
}

/* The example the guide points to is a valid settings file. */
static void test_conf_example(void **state)
{
    struct fxn_conf c;
    vnib_error_t e = {0};
    FILE *f = fopen("plugins/flux/node/flux-node.conf.example.in", "r");
    char text[8192];
    size_t n;

    (void)state;
    if (!f) {
        printf("skip: the example is read from the source tree's top\n");
        skip();
    }
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    fxn_conf_defaults(&c, "/etc/vnibroker");
    if (fxn_conf_parse(&c, text, "example", &e) < 0)
        fail_msg("%s", e.text);
    assert_string_equal(c.agent_config, "@CONFDIR@/agent.toml");
    assert_int_equal(c.reservation_wait_ms, 0);
    assert_int_equal(c.retry_busy_ms, 300000);
    assert_true(c.syslog);
}

/* The file: absent is the defaults; one another user could have written
 * is refused. */
static void test_conf_load(void **state)
{
    char dir[] = "/tmp/test_fxn.XXXXXX";
    char path[256];
    struct fxn_conf c;
    vnib_error_t e = {0};
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/flux-node.conf", dir);
    fxn_conf_defaults(&c, "/etc/vnibroker");
    assert_int_equal(fxn_conf_load(&c, path, &e), 0);
    assert_int_equal(c.retry_busy_ms, 300000);
    assert_non_null(f = fopen(path, "w"));
    fputs("HOUSEKEEPING_RETRY_BUSY=10s\n", f);
    fclose(f);
    assert_int_equal(chmod(path, 0644), 0);
    if (geteuid() == 0) {
        assert_int_equal(fxn_conf_load(&c, path, &e), 0);
        assert_int_equal(c.retry_busy_ms, 10000);
        assert_int_equal(chmod(path, 0664), 0);
        errno = 0;
        assert_int_equal(fxn_conf_load(&c, path, &e), -1);
        assert_int_equal(errno, EPERM);
        assert_non_null(strstr(e.text, "is writable by others; refusing"));
        assert_int_equal(chmod(path, 0646), 0);
        assert_int_equal(fxn_conf_load(&c, path, &e), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(chown(path, 1, 1), 0);
    }
    /* Another user's file (as non-root, any file of ours). */
    errno = 0;
    assert_int_equal(fxn_conf_load(&c, path, &e), -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(e.text, "is not owned by root; refusing"));
    unlink(path);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(fxn_conf_load(&c, path, &e), -1);
    rmdir(path);
    rmdir(dir);
}

static void test_conf_agent_path(void **state)
{
    struct fxn_conf c;
    vnib_error_t e = {0};
    char buf[64];

    (void)state;
    fxn_conf_defaults(&c, "/etc");
    snprintf(c.agent_config, sizeof(c.agent_config), "/t/%%n/a-%%n.toml%%");
    assert_int_equal(fxn_conf_agent_path(&c, "fx1", buf, sizeof(buf), &e), 0);
    assert_string_equal(buf, "/t/fx1/a-fx1.toml%");
    assert_int_equal(fxn_conf_agent_path(&c, "fx1", buf, 10, &e), -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

/* An eventlog read from its start: the owner from submit, then the
 * vnibroker event ends the wait. */
static void test_feed_event(void **state)
{
    struct fxn_job j;
    vnib_error_t e = {0};

    (void)state;
    fxn_job_init(&j);
    assert_int_equal(
        fxn_job_feed(&j,
                     "{\"timestamp\":1.0,\"name\":\"submit\","
                     "\"context\":{\"userid\":1001,\"urgency\":16}}",
                     &e),
        0);
    assert_int_equal(j.uid, 1001);
    assert_int_equal(
        fxn_job_feed(&j,
                     "{\"timestamp\":1.1,\"name\":\"prolog-start\","
                     "\"context\":{\"description\":\"vnibroker\"}}",
                     &e),
        0);
    /* An exception that is not fatal does not end it. */
    assert_int_equal(fxn_job_feed(&j,
                                  "{\"name\":\"exception\",\"context\":{"
                                  "\"type\":\"x\",\"severity\":1}}",
                                  &e),
                     0);
    assert_int_equal(fxn_job_feed(&j,
                                  "{\"name\":\"vnibroker\",\"context\":{"
                                  "\"job_id\":\"42\",\"vnis\":[3000]}}",
                                  &e),
                     1);
    assert_false(j.ended);
    assert_string_equal(json_string_value(json_object_get(j.event, "job_id")),
                        "42");
    fxn_job_clear(&j);
    assert_null(j.event);
    assert_int_equal(j.uid, -1);
}

static void test_feed_ends(void **state)
{
    struct fxn_job j;
    vnib_error_t e = {0};

    (void)state;
    fxn_job_init(&j);
    assert_int_equal(fxn_job_feed(&j,
                                  "{\"name\":\"exception\",\"context\":{"
                                  "\"type\":\"cancel\",\"severity\":0,"
                                  "\"note\":\"by user\"}}",
                                  &e),
                     1);
    assert_true(j.ended);
    assert_null(j.event);
    assert_string_equal(j.why,
                        "a fatal exception (cancel: by user) came first");
    fxn_job_clear(&j);
    assert_int_equal(fxn_job_feed(&j, "{\"name\":\"clean\"}", &e), 1);
    assert_true(j.ended);
    fxn_job_clear(&j);
    /* A submit without a usable userid names no owner. */
    assert_int_equal(
        fxn_job_feed(
            &j, "{\"name\":\"submit\",\"context\":{\"userid\":-3}}", &e),
        0);
    assert_int_equal(j.uid, -1);
    assert_int_equal(fxn_job_feed(&j, "not json", &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(fxn_job_feed(&j, "{\"context\":{}}", &e), -1);
    fxn_job_clear(&j);
}

static void test_event_parse(void **state)
{
    struct fxn_event ev;
    vnib_error_t e = {0};
    json_t *c =
        js("{\"reservation\":7,\"job_id\":\"42\",\"vnis\":[3000],"
           "\"ncores\":2,\"lease\":\"vnib1.a.b\"}");

    (void)state;
    assert_int_equal(fxn_event_parse(c, &ev, &e), 0);
    assert_string_equal(ev.job_id, "42");
    assert_true(ev.has_vnis);
    assert_string_equal(ev.lease, "vnib1.a.b");
    assert_int_equal(ev.ncores, 2);
    assert_null(ev.why);
    json_decref(c);
    /* No lease (a broker without), cores that differ. */
    c = js("{\"job_id\":\"42\",\"vnis\":[3000,3001]}");
    assert_int_equal(fxn_event_parse(c, &ev, &e), 0);
    assert_null(ev.lease);
    assert_int_equal(ev.ncores, 0);
    json_decref(c);
    c =
        js("{\"job_id\":\"42\",\"vnis\":[],\"empty-reason\":\"none "
           "requested\"}");
    assert_int_equal(fxn_event_parse(c, &ev, &e), 0);
    assert_false(ev.has_vnis);
    assert_string_equal(ev.why, "none requested");
    json_decref(c);
    c = js("{\"job_id\":\"42\",\"vnis\":[],\"error\":\"refused\"}");
    assert_int_equal(fxn_event_parse(c, &ev, &e), 0);
    assert_string_equal(ev.why, "refused");
    json_decref(c);
    c = js("{\"job_id\":\"42\",\"vnis\":[3000],\"ncores\":70000}");
    assert_int_equal(fxn_event_parse(c, &ev, &e), 0);
    assert_int_equal(ev.ncores, 0);
    json_decref(c);
    const char *bad[] = {"{\"vnis\":[]}",
                         "{\"job_id\":\"\",\"vnis\":[]}",
                         "{\"job_id\":42,\"vnis\":[]}",
                         "{\"job_id\":\"42\"}",
                         "{\"job_id\":\"42\",\"vnis\":3000}",
                         "{\"job_id\":\"42\",\"vnis\":[],\"lease\":7}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = js(bad[i]);
        errno = 0;
        assert_int_equal(fxn_event_parse(c, &ev, &e), -1);
        assert_int_equal(errno, EINVAL);
        json_decref(c);
    }
    assert_int_equal(fxn_event_parse(NULL, &ev, &e), -1);
}

static void test_R_cores(void **state)
{
    vnib_error_t e = {0};
    json_t *R =
        js("{\"version\":1,\"execution\":{\"R_lite\":["
           "{\"rank\":\"0-1,5\",\"children\":{\"core\":\"0-3\"}},"
           "{\"rank\":\"2\",\"children\":{\"core\":\"0,2,4\"}}],"
           "\"nodelist\":[\"fx[0-2,5]\"]}}");

    (void)state;
    assert_int_equal(fxn_R_cores(R, 0, &e), 4);
    assert_int_equal(fxn_R_cores(R, 5, &e), 4);
    assert_int_equal(fxn_R_cores(R, 2, &e), 3);
    errno = 0;
    assert_int_equal(fxn_R_cores(R, 3, &e), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(e.text, "rank 3 is not in the job's R");
    json_decref(R);
    R = js("{\"version\":2,\"execution\":{\"R_lite\":[]}}");
    assert_int_equal(fxn_R_cores(R, 0, &e), -1);
    assert_int_equal(errno, EINVAL);
    json_decref(R);
    R = js("{\"version\":1,\"execution\":{\"R_lite\":[{\"rank\":\"0\"}]}}");
    assert_int_equal(fxn_R_cores(R, 0, &e), -1);
    json_decref(R);
    R =
        js("{\"version\":1,\"execution\":{\"R_lite\":[{\"rank\":\"x\","
           "\"children\":{\"core\":\"0\"}}]}}");
    assert_int_equal(fxn_R_cores(R, 0, &e), -1);
    assert_int_equal(errno, EINVAL);
    json_decref(R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_defaults),
        cmocka_unit_test(test_conf_parse),
        cmocka_unit_test(test_conf_refused),
        cmocka_unit_test(test_conf_example),
        cmocka_unit_test(test_conf_load),
        cmocka_unit_test(test_conf_agent_path),
        cmocka_unit_test(test_feed_event),
        cmocka_unit_test(test_feed_ends),
        cmocka_unit_test(test_event_parse),
        cmocka_unit_test(test_R_cores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
