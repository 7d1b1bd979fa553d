/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the Fabric Manager client's unit tests share: a client for the
 * fake HTTP server (tests/unit/common/fakehttp.h), credential files in a
 * private temporary directory, and the request lines they expect.
 */
#ifndef VNIB_TESTS_FMTEST_H
#define VNIB_TESTS_FMTEST_H

#include <sys/types.h>
#include <time.h>

#include "tests/unit/common/fakehttp.h"
#include "vnib/fmclient.h"

extern const char fmtest_job_c1[];     /* GET .../jobs/c-1 */
extern const char fmtest_job_c7[];     /* GET .../jobs/c-7 */
extern const char fmtest_post_jobs[];  /* POST .../jobs */
extern const char fmtest_token_post[]; /* POST /token */

/* A private temporary directory for credential files. */
struct fmtest_tmpdir {
    char path[64];
    char files[4][128];
    int nfiles;
};

void fmtest_tmpdir_init(struct fmtest_tmpdir *t);

/* Write a file in t with the given mode; returns its path. */
const char *fmtest_tmpdir_file(struct fmtest_tmpdir *t,
                               const char *name,
                               const char *content,
                               mode_t mode);

void fmtest_tmpdir_cleanup(struct fmtest_tmpdir *t);

/* A configuration pointing at s (url: 64 bytes), with a base path to prove
 * the client keeps it.
 */
struct fmc_config fmtest_config_for(const struct fakehttp *s, char *url);

/* fmc_create, failing the test with its message when it fails. */
struct fmc *fmtest_create_ok(const struct fmc_config *cfg);

/* Run s and create a client of fmtest_config_for(s, url). */
struct fmc *fmtest_serve(struct fakehttp *s, char *url);

/* Destroy the client, then wait for the server (fakehttp_join). */
void fmtest_finish(struct fmc *c, struct fakehttp *s);

/* fmtest_finish, then check the server received nrequests requests on
 * accepted connections (-1: any number).
 */
void fmtest_finish_expect(struct fmc *c,
                          struct fakehttp *s,
                          int nrequests,
                          int accepted);

/* fmtest_finish, then free the server. */
void fmtest_done(struct fmc *c, struct fakehttp *s);

/* fmc_job_get(c, id) fails with errno err and exactly the message that
 * fmt and what follows make (printf).
 */
void fmtest_get_fails(struct fmc *c,
                      const char *id,
                      int err,
                      const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

/* Request i that s received has this request line (a POST, a PATCH), a
 * Content-Type of content_type, no "Expect:" header and exactly this body.
 */
void fmtest_assert_sent(const struct fakehttp *s,
                        int i,
                        const char *line,
                        const char *content_type,
                        const char *body);

double fmtest_seconds_since(const struct timespec *t0);

#endif /* !VNIB_TESTS_FMTEST_H */
