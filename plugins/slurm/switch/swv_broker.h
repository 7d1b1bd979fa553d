/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_broker: the helper's client of the broker, the agent's own.
 *
 * The helper (swv_helper.h) links no libcurl: its client of the broker
 * is vnib-agent-broker.so, the object the vnib-agent program loads when a
 * command first needs the broker (agent/broker.h), looked for beside the
 * helper and loaded with the same trusted loader, at the first broker
 * request of the process, once.  A step's start from a lease makes no
 * request, so a step's slurmstepd loads no libcurl before its end.
 *
 * The node side reaches it as the agent's in-process code does, through
 * broker_open (agent/broker.h), which this module defines: stepapi's
 * contexts call it.  The controller side calls lib/'s client
 * (vnib/client.h), which the object exports too, through the table
 * below.
 */
#ifndef SWV_BROKER_H
#define SWV_BROKER_H

#include <stdbool.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/error.h"

/* The calls of vnib/client.h the controller makes. */
struct swv_client_api {
    struct vnib_client *(*create)(const char *url,
                                  const char *token,
                                  vnib_error_t *errp);
    void (*destroy)(struct vnib_client *c);
    int (*set_cacert)(struct vnib_client *c, const char *path);
    int (*set_timeout_ms)(struct vnib_client *c, long ms);
    int (*request)(struct vnib_client *c,
                   const char *method,
                   const char *path,
                   json_t *body,
                   json_t **replyp,
                   vnib_error_t *errp);
    int (*reserve)(struct vnib_client *c,
                   const struct vnib_reserve *r,
                   json_t **replyp,
                   vnib_error_t *errp);
    int (*step_reserve)(struct vnib_client *c,
                        const struct vnib_step_reserve *r,
                        json_t **replyp,
                        vnib_error_t *errp);
    int (*release)(struct vnib_client *c,
                   const char *job_id,
                   long long reservation_id,
                   bool force,
                   json_t **replyp,
                   vnib_error_t *errp);
    int (*step_release)(struct vnib_client *c,
                        const char *job_id,
                        const char *step_id,
                        bool force,
                        json_t **replyp,
                        vnib_error_t *errp);
};

/* The client's calls, loaded at the first call of the process; NULL with
 * errno and errp (the object missing, refused, or without a call). */
const struct swv_client_api *swv_broker_client(vnib_error_t *errp);

#endif /* !SWV_BROKER_H */
