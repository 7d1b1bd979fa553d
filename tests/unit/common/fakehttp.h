/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A fake HTTP server for the unit tests of the HTTP clients (lib/client.c,
 * fmclient/).
 *
 * It runs in a thread of the test on an ephemeral loopback port, accepts
 * any number of connections, records every request it receives and
 * answers each with the first canned reply whose request-line prefix
 * matches and that is not used up, so a test states the exact exchange
 * it expects (GET 404, then POST, ...).  A request no reply fits is
 * answered 599 and counted in unmatched (fakehttp_join fails the test).
 * It serves until the expected number of requests is answered and 100 ms
 * passed without another, or 5 s without any.
 */
#ifndef VNIB_TESTS_FAKEHTTP_H
#define VNIB_TESTS_FAKEHTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define FAKEHTTP_MAX_CANNED 8
#define FAKEHTTP_MAX_REQUESTS 64

/* One canned answer. */
struct fakehttp_canned {
    const char *match; /* prefix of the request line it answers ("": any) */
    const char *reply; /* the full HTTP response; NULL: big_body bytes */
    int uses;          /* times it may still answer; -1: unlimited */
    char *owned;       /* reply, when the server made it (freed with it) */
};

struct fakehttp {
    int fd;                                             /* listening socket */
    int port;                                           /* its port */
    pthread_t thread;                                   /* serves connections */
    struct fakehttp_canned canned[FAKEHTTP_MAX_CANNED]; /* first match wins */
    int ncanned;
    atomic_int expect;    /* requests to answer, then stop */
    size_t big_body;      /* size of a NULL reply's body */
    int accepted;         /* connections accepted */
    int unmatched;        /* requests no canned reply fit */
    atomic_int nrequests; /* requests received (readable while it runs) */
    char *requests[FAKEHTTP_MAX_REQUESTS]; /* each request, in order */
};

/* A loopback socket listening on an ephemeral port (*portp). */
int fakehttp_listen_any(int *portp);

/* A server, listening, that will answer expect requests once run. */
struct fakehttp *fakehttp_new(int expect);

/* Add a canned reply (not copied: it must outlive the server). */
void fakehttp_add(struct fakehttp *s,
                  const char *match,
                  const char *reply,
                  int uses);

/* Add a JSON reply with the given status and body (the server keeps it). */
void fakehttp_add_json(struct fakehttp *s,
                       const char *match,
                       int status,
                       const char *body,
                       int uses);

void fakehttp_run(struct fakehttp *s);

/* Wait for the server thread; the requests can be read afterwards. */
void fakehttp_join(struct fakehttp *s);

void fakehttp_free(struct fakehttp *s);

/* The i-th request received, and its body. */
const char *fakehttp_request(const struct fakehttp *s, int i);
const char *fakehttp_body(const struct fakehttp *s, int i);

/* The i-th request starts with line and, when header is not NULL,
 * contains it.
 */
void fakehttp_assert_request(const struct fakehttp *s,
                             int i,
                             const char *line,
                             const char *header);

/* A JSON response with a correct Content-Length (the caller frees it). */
char *fakehttp_reply_json(int status, const char *body);

/* Assertions on text, with the text in the failure message. */
void fakehttp_assert_prefix(const char *text, const char *prefix);
void fakehttp_assert_contains(const char *text, const char *part);
void fakehttp_assert_lacks(const char *text, const char *part);

#endif /* !VNIB_TESTS_FAKEHTTP_H */
