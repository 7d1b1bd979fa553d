/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Authentication: who is calling, from the bearer token.
 *
 * Named tokens (admin, scheduler, monitor) are listed in auth.tokens_file
 * by their SHA-256 only; node tokens and job tokens are recomputed from
 * the node name, or the reservation and job ids, they carry and the key
 * in auth.node_key_file (see include/vnib/token.h), or, during a rotation
 * and until auth.node_key_previous_until, with the key in
 * auth.node_key_previous_file.  Without a node key both kinds are refused.
 * Keys are read only at start.
 * Both files must be private to the broker's user (mode 0600) or the
 * broker refuses to start.  Nothing here logs or returns a token.
 */
#ifndef VNIB_SERVER_AUTH_H
#define VNIB_SERVER_AUTH_H

#include <stddef.h>
#include <time.h>

#include "vnib/error.h"
#include "vnib/token.h"

struct config;
struct logger;

/* Roles, as bits so that a route lists exactly who may call it. */
enum {
    ROLE_ADMIN = 1 << 0,
    ROLE_SCHEDULER = 1 << 1,
    ROLE_NODE = 1 << 2,
    ROLE_MONITOR = 1 << 3,
    ROLE_JOB = 1 << 4, /* a job token: its own job's steps, while its
                          reservation is the job's active one */
};

/* The authenticated caller of one request. */
struct identity {
    unsigned role;                 /* exactly one ROLE_* bit */
    char name[136];                /* token name, "node:<node>" or
                                      "job:<job_id>"; the actor recorded in
                                      the audit trail */
    char node[TOKEN_NODE_MAX];     /* ROLE_NODE: the node's own name */
    char job_id[TOKEN_JOB_ID_MAX]; /* ROLE_JOB: the token's job */
    long long resv_id; /* ROLE_JOB: the reservation it was given with */
};

struct auth;

/* Load the tokens file and node keys (current, previous) named by cfg;
 * log (may be NULL) receives the overlap's notice and its end's warning.
 * Returns NULL with errp set: EPERM for unsafe permissions, ENOENT for a
 * missing file, EINVAL for a malformed line ("FILE:LINE: ...") or a short
 * key.
 */
struct auth *auth_create(const struct config *cfg,
                         struct logger *log,
                         vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free, wiping the node key (NULL accepted). */
void auth_destroy(struct auth *a);

/* Check an Authorization header value ("Bearer <token>").  Returns 0 and
 * fills *who, or -1 with errno EACCES and a message that never contains
 * the token.
 */
int auth_check(struct auth *a,
               const char *header,
               struct identity *who,
               vnib_error_t *errp);

/* auth_check() as at time now (for tests of the overlap's end). */
int auth_check_at(struct auth *a,
                  const char *header,
                  time_t now,
                  struct identity *who,
                  vnib_error_t *errp);

/* The job token of reservation resv_id of job_id under the current node
 * key into buf (at least TOKEN_JOB_SIZE bytes), for the reply to the
 * reserve that made or found it.  Returns 0, or -1 with errno ENOTSUP
 * when no node key is configured (no job tokens; a NULL too), or
 * EINVAL/EIO.
 */
int auth_job_token(const struct auth *a,
                   long long resv_id,
                   const char *job_id,
                   char *buf,
                   size_t size,
                   vnib_error_t *errp);

/* Named tokens loaded, and whether node (and job) tokens are enabled (for
 * logs, and the reserve's job token); a NULL auth (a broker built without
 * one, as the in-process handler tests build it) has no node key.
 */
size_t auth_token_count(const struct auth *a);
int auth_nodes_enabled(const struct auth *a);

/* "admin", "scheduler", "node", "monitor", "job" for one ROLE_* bit. */
const char *auth_role_name(unsigned role);

#endif /* !VNIB_SERVER_AUTH_H */
