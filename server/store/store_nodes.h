/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the handlers of /v1/reservations/.../nodes/{node} and /v1/nodes
 * ask the store (store_nodes.c): to file a node agent's report, to read
 * the record of one node, to lift its drained mark.
 */
#ifndef VNIB_SERVER_STORE_NODES_H
#define VNIB_SERVER_STORE_NODES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "vnib/error.h"
#include "server/store/store.h"

/* A node's report about a job's CXI services. */
struct store_report {
    const char *job_id;
    const char *node;
    const char *cxi;      /* creating, created, destroyed, failed */
    const char *services; /* JSON array text */
    const char *message;  /* may be NULL */
    const char *actor;
    long long reservation_id; /* the reservation the agent acted on; 0 =
                                 whichever the job's report lands on */
    const char *step_id;      /* a step's services; NULL: the job's */
};

/* Why a report was refused. */
enum store_report_refusal {
    STORE_REPORT_ACCEPTED,           /* not refused (or failed otherwise) */
    STORE_REPORT_NOT_FOUND,          /* no reservation (ENOENT) */
    STORE_REPORT_NOT_MEMBER,         /* not in the node list (EPERM) */
    STORE_REPORT_STALE_RESERVATION,  /* not the job's current one (EEXIST) */
    STORE_REPORT_INVALID_TRANSITION, /* the node's state would go back */
    STORE_REPORT_JOB_NOT_ACTIVE,     /* the job is being released (EEXIST) */
};

/* Record a report alone, on this thread.  On refusal returns -1 with
 * *refusalp saying why; STORE_REPORT_ACCEPTED when it failed for another
 * reason.
 */
int store_report(struct store *s,
                 const struct store_report *a,
                 json_t **resp,
                 enum store_report_refusal *refusalp,
                 vnib_error_t *errp) VNIB_MUST_CHECK;

/* A posted report's outcome, as store_report's: rc 0 with resp (the
 * callee's to keep), or -1 with refusal, errnum and *error (borrowed for
 * the call).  Called once, on one of the store's report threads; it must
 * not block on the database.
 */
typedef void (*store_report_done_f)(void *arg,
                                    int rc,
                                    json_t *resp,
                                    enum store_report_refusal refusal,
                                    int errnum,
                                    const vnib_error_t *error);

/* Whether reports are written in groups (database.report_group_max > 1),
 * so that store_report_post() takes them.
 */
bool store_reports_grouped(const struct store *s);

/* Post a report to be written in the next group of reports, with those
 * that arrive meanwhile (database.report_group_max in one transaction,
 * database.report_group_leaders groups at once), and return at once: a's
 * fields are copied.  done(arg, ...) gets its outcome; a report still
 * queued at deadline_ns (monotonic; 0: none) is not written, and fails
 * with ECANCELED.  0, or -1 with errno (ENOMEM; ESHUTDOWN, the store is
 * being destroyed; EINVAL, reports are not grouped) and done is never
 * called.
 */
int store_report_post(struct store *s,
                      const struct store_report *a,
                      int64_t deadline_ns,
                      store_report_done_f done,
                      void *arg,
                      vnib_error_t *errp) VNIB_MUST_CHECK;

/* A node's view: live reservations including it, its reports, drain. */
int store_node(struct store *s,
               const char *node,
               json_t **resp,
               vnib_error_t *errp) VNIB_MUST_CHECK;

/* Clear a node's drained mark; returns the node's view. */
int store_undrain(struct store *s,
                  const char *node,
                  const char *actor,
                  json_t **resp,
                  vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_SERVER_STORE_NODES_H */
