/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The reports of many nodes of one job at once, as their agents send them.
 *
 * A full job's nodes report together: every node's agent sends its
 * `creating`, then `created`, and at the end `destroyed`, each on its own
 * connection with its own token, all at about the same time, so that the
 * broker writes them in groups.  hnodes sends one report per node of a
 * job concurrently (libcurl's multi interface: one connection per node,
 * one thread), retries each that got no reply or a 5xx on the next
 * replica as history.c's request() does, and records every attempt in the
 * thread's log (hrec.h).
 */
#ifndef VNIB_TESTS_HNODES_H
#define VNIB_TESTS_HNODES_H

#include <stdint.h>

#include "tests/stress/hrec.h"

struct hnodes;

/* One report of each node of a job. */
struct hnodes_call {
    const char *const *urls; /* the replicas */
    int nurls;
    int first_url;           /* node i's first attempt goes to
                                urls[(first_url + i) % nurls] */
    int attempts;            /* per node, across the replicas */
    int thread;              /* for the records */
    uint64_t job;            /* index of the job in the thread's log */
    enum hrec_op op;         /* HREC_CREATING, HREC_CREATED, HREC_DESTROYED */
    const char *path;        /* "/v1/reservations/JOB" */
    const char *body;        /* the report, the same for every node */
    int n;                   /* nodes, at most HREC_MAX_NODES */
    const char (*nodes)[HREC_NODE_SIZE];
    const char *const *tokens; /* each node's own */
    /* out, per node: the last attempt's status (0: no reply), whether some
     * attempt may have been written unseen, the first attempt's send time
     */
    long *status;
    bool *ambiguous;
    int64_t *first_send;
};

/* Handles for up to HREC_MAX_NODES nodes; NULL when out of memory. */
struct hnodes *hnodes_create(void);
void hnodes_destroy(struct hnodes *hn);

/* Send call's reports, all at once, and wait for every answer (retried
 * as said above).  0, or -1 when the client itself broke (out of memory,
 * libcurl failure): then the log may miss attempts.
 */
int hnodes_run(struct hnodes *hn, struct hrec_log *log,
               const struct hnodes_call *call);

#endif /* !VNIB_TESTS_HNODES_H */
