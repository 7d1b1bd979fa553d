/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The agent's calls to the broker, with retries under a deadline.
 *
 * A node agent runs at job start on thousands of nodes at once, and the
 * broker may be restarting or failing over: a fetch or report that gets
 * no answer, or a 5xx/429, is retried with exponential back-off (100 ms
 * doubling to 2 s, with jitter) until the deadline.  A refusal (4xx) is an
 * answer and is returned at once.
 *
 * Each call returns the HTTP status (>= 100), or -1 when no usable answer
 * came before the deadline (errno ETIMEDOUT, ECONNREFUSED, EPROTO...;
 * errp says what the last attempt saw).
 *
 * This is the agent's only use of libcurl, whose thirty-odd libraries
 * take a process longer to load than a job's start from a lease takes
 * altogether.  So the vnib-agent program does not link it: broker.c and
 * lib/'s client go into a shared object, vnib-agent-broker.so, that the
 * program loads (agent/brokerso.h) when a command first needs the broker,
 * through broker_open.  In-process callers (agent/stepapi.h) link
 * broker_open itself.
 */
#ifndef VNIB_AGENT_BROKER_H
#define VNIB_AGENT_BROKER_H

#include <stddef.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/error.h"

/* A connection to the broker, as the commands use it (struct cmd_broker
 * in agent/commands.h has the same calls). */
typedef int broker_get_fn(void *arg,
                          const char *path,
                          long deadline_ms,
                          json_t **replyp,
                          vnib_error_t *errp);
typedef int broker_report_fn(void *arg,
                             const struct vnib_report *r,
                             long deadline_ms,
                             vnib_error_t *errp);
struct broker_conn {
    broker_get_fn *get;                   /* broker_get on the connection */
    broker_report_fn *report;             /* broker_report on the connection */
    void (*close)(struct broker_conn *c); /* broker_close */
    void *arg;                            /* the connection */
};

/* Open a connection to the broker at url with the node's token (cacert:
 * a CA bundle for https, NULL or "" for the system's), into *c.  Returns
 * 0, or -1 with errno and errp (an unusable url or CA file).
 */
typedef int broker_open_fn(const char *url,
                           const char *token,
                           const char *cacert,
                           struct broker_conn *c,
                           vnib_error_t *errp);
broker_open_fn broker_open;

/* Close what broker_open opened (c->arg NULL: nothing). */
void broker_close(struct broker_conn *c);

/* The name of broker_open in vnib-agent-broker.so. */
#define BROKER_OPEN_SYMBOL "broker_open"

/* GET path (already escaped) into *replyp (a new reference, or NULL). */
int broker_get(struct vnib_client *c,
               const char *path,
               long deadline_ms,
               json_t **replyp,
               vnib_error_t *errp);

/* PUT a node report (idempotent, so retrying is safe). */
int broker_report(struct vnib_client *c,
                  const struct vnib_report *r,
                  long deadline_ms,
                  vnib_error_t *errp);

#endif /* !VNIB_AGENT_BROKER_H */
