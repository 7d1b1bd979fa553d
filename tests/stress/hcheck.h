/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The invariants a stress run's history must satisfy.
 *
 * hcheck_run() reads the per-thread histories (hrec.h) and what the broker
 * said at the end (the whole audit trail, the live reservations and the
 * pool) and prints one PASS or FAIL line per invariant, with counts:
 *
 *   - no VNI in two live reservations, jobs' and steps', from the replies
 *     (certainly-live intervals of acknowledged reservations) and from the
 *     events replayed in id order;
 *   - no job, and no step, with two live reservations, from the events
 *     and at the end;
 *   - every acknowledged reservation is recorded with its VNIs;
 *   - the pool's totals add up, and at the end nothing is held but what
 *     abandoned jobs may legitimately have left;
 *   - no 503 but vni_pool_exhausted (and deadline_exceeded to a request
 *     that carried a deadline), no other 5xx, no unexpected refusal;
 *   - a quarantine ends (the reservation's VNIs are freed, events replayed)
 *     only once every node that reported for it has reported destroyed;
 *   - with the node reports read back (get_reports): each node's stored
 *     report is at least the furthest one it was answered 200 for, and no
 *     further than the furthest one it sent;
 *   - with steps (history --steps), those of hstepcheck.h;
 *   - with short deadlines (history --deadline-ms), those of hdeadline.h.
 *
 * Transport failures (a replica that was just killed) are counted but are
 * not failures: the client retried them on another replica.
 */
#ifndef VNIB_TESTS_HCHECK_H
#define VNIB_TESTS_HCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tests/stress/hrec.h"

/* Counts over every attempt of a run. */
struct hcheck_tally {
    uint64_t requests;    /* attempts */
    uint64_t ok;          /* 2xx */
    uint64_t transport;   /* no reply (connection refused, reset, timeout) */
    uint64_t s5xx;        /* any 5xx */
    uint64_t s503;        /* 503, whatever the code */
    uint64_t exhausted;   /* 503 vni_pool_exhausted (legitimate) */
    uint64_t expired;     /* 503 deadline_exceeded to an attempt that
                           * carried a deadline (legitimate) */
    uint64_t bad503;      /* 503 with any other code */
    uint64_t unavailable; /* of those, 503 unavailable (no database) */
    uint64_t deadlock;    /* replies whose message mentions "deadlock" */
    uint64_t other5xx;    /* 5xx but 503 */
    uint64_t unexpected;  /* 4xx that the workload never provokes */
    uint64_t jobs, acked, refused, abandoned, ambiguous;
};

/* Look up a job's newest reservation (GET /v1/reservations/{job}): 0 with
 * *id and vnis[0..*n) set, 1 when the broker has none, -1 on error.
 */
typedef int (*hcheck_get_f)(void *arg,
                            const char *job,
                            long long *id,
                            int *vnis,
                            int *n);

/* Look up a step's newest reservation (of its job's current one): as
 * hcheck_get_f.
 */
typedef int (*hcheck_get_step_f)(void *arg,
                                 const char *job,
                                 const char *step,
                                 long long *id,
                                 int *vnis,
                                 int *n);

/* A stored report state: enum hrec_cxi, or this for "failed". */
#define HCHECK_FAILED 4

/* Read the node reports the broker keeps for a job's reservation resv_id:
 * 0 with db[k] each of the n nodes' stored state (HREC_NONE when it has
 * none), -1 on error or when the job's reservation is another one.
 */
typedef int (*hcheck_reports_f)(void *arg,
                                const char *job,
                                long long resv_id,
                                int n,
                                const char (*nodes)[HREC_NODE_SIZE],
                                unsigned char *db);

struct hcheck_input {
    const struct hrec_log *logs; /* one per client thread */
    int nlogs;
    const json_t *events; /* every event, oldest first; NULL: not read */
    const json_t *live;   /* active and releasing reservations; NULL: not read */
    const json_t *pool;   /* GET /v1/pool; NULL: not read */
    hcheck_get_f get;     /* for acknowledged jobs missing from events */
    hcheck_get_step_f get_step; /* the same for steps (with get_arg) */
    void *get_arg;
    hcheck_reports_f get_reports; /* NULL: the reports are not compared
                                     (called with get_arg) */
    const char *prefix;   /* printed before every line ("" or "#   ") */
    bool outage;          /* the database fails over during the run: 503
                           * unavailable is legitimate too */
    bool steps;           /* the jobs reserved steps with their job tokens:
                           * hstepcheck.h's invariants are checked too */
    bool deadlines;       /* reserves carried short deadlines
                           * (--deadline-ms): hdeadline.h's invariants
                           * are checked too */
};

/* Count the attempts of every log. */
void hcheck_tally(const struct hrec_log *logs, int nlogs,
                  struct hcheck_tally *t);

/* Print one invariant's line: prefix, PASS or FAIL, then fmt's text.
 * Returns 1 when it failed (!pass), else 0.
 */
int hcheck_verdict(const char *prefix, bool pass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* v[0..n) as "1,2,3" in buf (size bytes, truncated to fit). */
void hcheck_vnis_text(char *buf, size_t size, const int *v, int n);

/* Print the invariants.  Returns the number that failed, or -1 (with
 * errno) when the check itself could not run (out of memory).
 */
int hcheck_run(const struct hcheck_input *in, const struct hcheck_tally *t);

#endif /* !VNIB_TESTS_HCHECK_H */
