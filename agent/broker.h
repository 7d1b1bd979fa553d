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
 */
#ifndef VNIB_AGENT_BROKER_H
#define VNIB_AGENT_BROKER_H

#include <stddef.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/error.h"

/* GET path (already escaped) into *replyp (a new reference, or NULL). */
int broker_get(struct vnib_client *c,
               const char *path,
               long deadline_ms,
               json_t **replyp,
               vnib_error_t *errp);

/* The path of a job's newest reservation, "/v1/reservations/JOB", or with
 * step_id (not NULL) of that step's, "/v1/reservations/JOB/steps/STEP",
 * each escaped, into buf (BROKER_PATH_MAX bytes hold any valid ids).
 * Returns 0, or -1 with errno ENOMEM.
 */
#define BROKER_PATH_MAX 1024
int broker_res_path(const char *job_id,
                    const char *step_id,
                    char *buf,
                    size_t size,
                    vnib_error_t *errp);

/* PUT a node report (idempotent, so retrying is safe). */
int broker_report(struct vnib_client *c,
                  const struct vnib_report *r,
                  long deadline_ms,
                  vnib_error_t *errp);

#endif /* !VNIB_AGENT_BROKER_H */
