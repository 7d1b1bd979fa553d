/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Fabric Manager client tests' shared helpers (see fmtest.h). */
#include <errno.h>
#include <fcntl.h>
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

#include "tests/unit/fmclient/fmtest.h"

const char fmtest_job_c1[] = "GET /apis/fm/fabric/collectives/jobs/c-1 ";
const char fmtest_job_c7[] = "GET /apis/fm/fabric/collectives/jobs/c-7 ";
const char fmtest_post_jobs[] = "POST /apis/fm/fabric/collectives/jobs ";
const char fmtest_token_post[] = "POST /token ";

void fmtest_tmpdir_init(struct fmtest_tmpdir *t)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->path, sizeof(t->path), "/tmp/fmc-test-XXXXXX");
    assert_non_null(mkdtemp(t->path));
}

/* Write a file in t with the given mode; returns its path. */
const char *fmtest_tmpdir_file(struct fmtest_tmpdir *t,
                               const char *name,
                               const char *content,
                               mode_t mode)
{
    char *path = t->files[t->nfiles++];
    char buf[sizeof(t->files[0])];
    int fd;

    snprintf(buf, sizeof(buf), "%s/%s", t->path, name);
    memcpy(path, buf, sizeof(buf));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)),
                     (ssize_t)strlen(content));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
    return path;
}

void fmtest_tmpdir_cleanup(struct fmtest_tmpdir *t)
{
    for (int i = 0; i < t->nfiles; i++)
        unlink(t->files[i]);
    rmdir(t->path);
}

/* A configuration pointing at a server, with a base path to prove the
 * client keeps it.
 */
struct fmc_config fmtest_config_for(const struct fakehttp *s, char *url)
{
    snprintf(url, 64, "http://127.0.0.1:%d/apis/fm/", s->port);
    return (struct fmc_config){.url = url, .auth = "none", .tls_verify = true};
}

struct fmc *fmtest_create_ok(const struct fmc_config *cfg)
{
    vnib_error_t e = {0};
    struct fmc *c = fmc_create(cfg, &e);

    if (!c)
        fail_msg("fmc_create: %s", e.text);
    return c;
}

double fmtest_seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec)
           + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

struct fmc *fmtest_serve(struct fakehttp *s, char *url)
{
    fakehttp_run(s);
    struct fmc_config cfg = fmtest_config_for(s, url);
    return fmtest_create_ok(&cfg);
}

void fmtest_finish(struct fmc *c, struct fakehttp *s)
{
    fmc_destroy(c);
    fakehttp_join(s);
}

void fmtest_finish_expect(struct fmc *c,
                          struct fakehttp *s,
                          int nrequests,
                          int accepted)
{
    fmtest_finish(c, s);
    assert_int_equal(s->nrequests, nrequests);
    if (accepted >= 0)
        assert_int_equal(s->accepted, accepted);
}

void fmtest_done(struct fmc *c, struct fakehttp *s)
{
    fmtest_finish(c, s);
    fakehttp_free(s);
}

void fmtest_get_fails(
    struct fmc *c, const char *id, int err, const char *fmt, ...)
{
    struct fmc_error e = {.fault = FMC_FAULT_NONE};
    char *token = (char *)"x";
    char want[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(want, sizeof(want), fmt, ap);
    va_end(ap);

    errno = 0;
    assert_int_equal(fmc_job_get(c, id, &token, &e), -1);
    assert_int_equal(errno, err);
    assert_null(token);
    assert_string_equal(e.msg.text, want);
}

void fmtest_assert_sent(const struct fakehttp *s,
                        int i,
                        const char *line,
                        const char *content_type,
                        const char *body)
{
    char header[128];

    snprintf(header, sizeof(header), "\r\nContent-Type: %s\r\n", content_type);
    fakehttp_assert_request(s, i, line, header);
    fakehttp_assert_lacks(fakehttp_request(s, i), "Expect:");
    assert_string_equal(fakehttp_body(s, i), body);
}
