/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_conn: the helper's clients of the broker in slurmctld and the
 * stepmgr (swv_ctld.h).
 *
 * A client is made with slurmctld's scheduler token, read from its file
 * at each request so that a rotated token needs no restart, or with a
 * job's token (the stepmgr), and with the CA and the timeout of
 * SwitchParameters.  slurmctld keeps one client per thread that calls
 * (a slot: a client is not thread-safe), from request to request, so
 * that its connection stays open: the slot makes it anew when the token
 * file says another token, or when the last request got no answer.
 */
#ifndef SWV_CONN_H
#define SWV_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "swv_broker.h"
#include "swv_opts.h"
#include "vnib/error.h"

/* A client of the broker and the calls to make with it. */
struct swv_conn {
    const struct swv_client_api *api;
    struct vnib_client *c;
};

/* A client kept for one caller thread, with the token it was made with. */
struct swv_conn_slot {
    pthread_mutex_t lock; /* held from swv_conn_get to swv_conn_put */
    struct vnib_client *c;
    char *token;
    size_t token_len;
};

/* A new client of cfg's broker into *cc, with slurmctld's token
 * (job_token NULL) or a job's (the stepmgr).  0, or -1 with errno and
 * errp.  Free with swv_conn_close. */
int swv_conn_open(const struct swv_config *cfg,
                  const char *job_token,
                  struct swv_conn *cc,
                  vnib_error_t *errp);

/* Free what swv_conn_open made (nothing: fine). */
void swv_conn_close(struct swv_conn *cc);

void swv_conn_slot_init(struct swv_conn_slot *s);

/* Take slot s's client, with slurmctld's token, into *cc: the one kept,
 * unless the token file says otherwise.  s stays locked until
 * swv_conn_put.  0, or -1 with errno and errp (s unlocked). */
int swv_conn_get(struct swv_conn_slot *s,
                 const struct swv_config *cfg,
                 struct swv_conn *cc,
                 vnib_error_t *errp);

/* Give s's client back; drop it when the last request got no answer (a
 * broken connection, another replica behind the name...). */
void swv_conn_put(struct swv_conn_slot *s, struct swv_conn *cc, bool drop);

#endif /* !SWV_CONN_H */
