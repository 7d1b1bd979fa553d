/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The history client's view of the broker once the load has run
 * (hview.c): the audit trail and the live reservations page by page, a
 * job's or a step's reservation and a job's node reports for the checker
 * (hcheck.h's callbacks), and the rows `make bench` prints.
 */
#ifndef VNIB_TESTS_HVIEW_H
#define VNIB_TESTS_HVIEW_H

#include <jansson.h>

#include "tests/stress/hcheck.h"
#include "tests/stress/history.h"

/* GET path (on any replica, retried) and parse the reply; NULL on
 * failure (a 404 at once).
 */
json_t *hview_get_json(struct client *c, const char *path, const char *tok);

/* Follow `next` through every page of path's list (key), appending to
 * all.  -1 when a page could not be read.
 */
int hview_get_pages(struct client *c, const char *path, const char *key,
                    const char *tok, json_t *all);

/* hcheck_get_f: a job's newest reservation (arg: a struct client). */
int hview_get_one(void *arg, const char *job, long long *id, int *vnis,
                  int *n);

/* hcheck_get_step_f: a step's newest reservation of its job's current one
 * (GET /v1/reservations/{job}/steps/{step} with the scheduler's token: the
 * job token dies with the job's release; arg: a struct client).
 */
int hview_get_step(void *arg, const char *job, const char *step,
                   long long *id, int *vnis, int *n);

/* hcheck_reports_f: the node reports the broker keeps for the job's
 * reservation (GET /v1/reservations/{job}/nodes; arg: a struct client).
 */
int hview_get_reports(void *arg, const char *job, long long resv_id, int n,
                      const char (*nodes)[HREC_NODE_SIZE],
                      unsigned char *db);

/* --bench: the rows `make bench` prints for the run (pairs/s, reserve
 * p99, 503s and deadlocks beside their targets).
 */
void hview_bench_rows(const struct run *run, const struct client *cs,
                      const struct hcheck_tally *t, double elapsed);

#endif /* !VNIB_TESTS_HVIEW_H */
