/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Broker calls with retries under a deadline, and the connection that
 * vnib-agent-broker.so hands the agent (see broker.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnib/monotime.h"
#include "agent/broker.h"

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static bool worth_retrying(int status)
{
    return status < 0 || status == 429 || status >= 500;
}

/* One attempt of a call, for retry(). */
typedef int (*attempt_fn)(struct vnib_client *c,
                          const void *arg,
                          json_t **replyp,
                          vnib_error_t *errp);

static int retry(struct vnib_client *c,
                 attempt_fn fn,
                 const void *arg,
                 long deadline_ms,
                 json_t **replyp,
                 vnib_error_t *errp)
{
    long end = (long)monotime_ms() + deadline_ms;
    long backoff = 100;
    unsigned seed = (unsigned)getpid() ^ (unsigned)end;
    int status;

    for (;;) {
        long left = end - (long)monotime_ms();
        vnib_client_set_timeout_ms(c, left > 100 ? left : 100);
        if (replyp)
            *replyp = NULL;
        status = fn(c, arg, replyp, errp);
        if (!worth_retrying(status))
            return status;
        left = end - (long)monotime_ms();
        if (left <= 0)
            break;
        if (replyp) {
            json_decref(*replyp);
            *replyp = NULL;
        }
        /* Jitter (half the back-off, at random) keeps thousands of nodes
         * from retrying in step. */
        long wait =
            backoff / 2 + (long)(rand_r(&seed) % (unsigned)(backoff / 2 + 1));
        pause_ms(wait < left ? wait : left);
        if (backoff < 2000)
            backoff *= 2;
    }
    if (status >= 0) {
        /* The broker answered, with an error we could not wait out. */
        return status;
    }
    if (errno != ETIMEDOUT && errno != ECONNREFUSED)
        errno = EIO;
    return -1;
}

static int get_attempt(struct vnib_client *c,
                       const void *arg,
                       json_t **replyp,
                       vnib_error_t *errp)
{
    return vnib_client_request(c, "GET", arg, NULL, replyp, errp);
}

int broker_get(struct vnib_client *c,
               const char *path,
               long deadline_ms,
               json_t **replyp,
               vnib_error_t *errp)
{
    return retry(c, get_attempt, path, deadline_ms, replyp, errp);
}

static int report_attempt(struct vnib_client *c,
                          const void *arg,
                          json_t **replyp,
                          vnib_error_t *errp)
{
    return vnib_client_report(c, arg, replyp, errp);
}

int broker_report(struct vnib_client *c,
                  const struct vnib_report *r,
                  long deadline_ms,
                  vnib_error_t *errp)
{
    json_t *reply = NULL;
    int status = retry(c, report_attempt, r, deadline_ms, &reply, errp);
    json_decref(reply);
    return status;
}

static int conn_get(void *arg,
                    const char *path,
                    long deadline_ms,
                    json_t **replyp,
                    vnib_error_t *errp)
{
    return broker_get(arg, path, deadline_ms, replyp, errp);
}

static int conn_report(void *arg,
                       const struct vnib_report *r,
                       long deadline_ms,
                       vnib_error_t *errp)
{
    return broker_report(arg, r, deadline_ms, errp);
}

int broker_open(const char *url,
                const char *token,
                const char *cacert,
                struct broker_conn *c,
                vnib_error_t *errp)
{
    vnib_error_t error = {0};
    struct vnib_client *client = vnib_client_create(url, token, &error);

    *c = (struct broker_conn){NULL, NULL, NULL, NULL};
    if (!client) {
        int e = errno;
        errprintf(errp, "broker.url: %s", error.text);
        errno = e;
        return -1;
    }
    if (cacert && *cacert && vnib_client_set_cacert(client, cacert) < 0) {
        int e = errno;
        vnib_client_destroy(client);
        errno = e;
        return errprintf(errp, "broker.cacert: %s", strerror(e));
    }
    *c = (struct broker_conn){conn_get, conn_report, broker_close, client};
    return 0;
}

void broker_close(struct broker_conn *c)
{
    vnib_client_destroy(c->arg);
    c->arg = NULL;
}
