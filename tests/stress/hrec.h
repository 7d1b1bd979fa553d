/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The history of a stress run: every request attempt and every job.
 *
 * tests/stress/history.c records, per client thread, one struct hrec for
 * each HTTP attempt it makes (send and reply times on both clocks, the
 * broker's URL, the status and error code, and for reserves the
 * reservation id and VNIs) and one struct hjob per job it tried to run
 * (whether the reservation was acknowledged, and the interval in which it
 * was certainly live), and with --steps one struct hstep per job step it
 * tried to reserve with the job's token (hsteps.c).  Each thread appends to its own struct hrec_log, so
 * recording takes no lock; the checks in hcheck.c read every log once the
 * threads have been joined.  hrec_write_json() writes the history as JSON
 * lines for a post-mortem.
 */
#ifndef VNIB_TESTS_HREC_H
#define VNIB_TESTS_HREC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vnib/error.h"
#include "vnib/tclass.h"

#define HREC_MAX_VNIS VNIB_SERVICE_VNIS_MAX
#define HREC_MAX_NODES 32 /* of a job (history --job-nodes) */
#define HREC_JOB_SIZE 64
#define HREC_NODE_SIZE 32
#define HREC_STEP_SIZE 16

/* What a request was for. */
enum hrec_op {
    HREC_RESERVE,   /* POST /v1/reservations */
    HREC_CREATED,   /* PUT .../nodes/{node} {"cxi":"created"} */
    HREC_RELEASE,   /* DELETE /v1/reservations/{job} */
    HREC_DESTROYED, /* PUT .../nodes/{node} {"cxi":"destroyed"} */
    HREC_CLEANUP,   /* DELETE after a reserve that may have been orphaned */
    HREC_CREATING,  /* PUT .../nodes/{node} {"cxi":"creating"} */
    HREC_STEP_RESERVE, /* PUT .../steps/{step} with the job token */
    HREC_STEP_END,     /* DELETE .../steps/{step} with the job token */
    HREC_STEP_CLEANUP, /* that DELETE after a step reserve that may have
                        * been orphaned */
    HREC_OPS
};

/* How far a node's reports went, in order (struct hjob's told, tried). */
enum hrec_cxi { HREC_NONE, HREC_IS_CREATING, HREC_IS_CREATED, HREC_IS_DESTROYED };

/* One HTTP attempt.  Times are nanoseconds; *_mono on CLOCK_MONOTONIC
 * (comparable across the threads of one run), *_real on CLOCK_REALTIME
 * (comparable with the broker's and PostgreSQL's logs).
 */
struct hrec {
    int thread;             /* client thread, 0-based */
    int attempt;            /* 0 for the first try of a request */
    enum hrec_op op;        /* what the request was for */
    int url;                /* index of the broker URL it went to */
    uint64_t job;           /* index into the thread's jobs */
    char node[HREC_NODE_SIZE]; /* for reports; "" otherwise */
    char step[HREC_STEP_SIZE]; /* for step requests; "" otherwise */
    int64_t send_mono, send_real; /* just before the request was sent */
    int64_t recv_mono, recv_real; /* when the reply (or failure) came */
    long status;            /* HTTP status; 0 when the transport failed */
    char transport[64];     /* curl's error when status is 0 */
    char code[40];          /* error.code of a non-2xx reply */
    char message[120];      /* error.message of a non-2xx reply */
    bool deadlock;          /* the reply's message mentions "deadlock" */
    long long resv_id;      /* reserve replies: the reservation id */
    int vnis[HREC_MAX_VNIS]; /* reserve replies: the VNIs */
    int nvnis;
    int deadline_ms;        /* the Vnib-Deadline-Ms it carried; 0: none */
};

/* One job as the client saw it. */
struct hjob {
    char job[HREC_JOB_SIZE];
    int thread;
    int vni_count;           /* what was asked for */
    int nnodes;
    char nodes[HREC_MAX_NODES][HREC_NODE_SIZE];
    bool acked;              /* a reserve answered 200 or 201 */
    bool refused;            /* 503 vni_pool_exhausted, finally */
    bool ambiguous;          /* some reserve attempt may have committed
                              * unseen (transport failure or 5xx) */
    bool abandoned;          /* a step failed for good: whatever the broker
                              * holds for this job is legitimately left */
    long long resv_id;       /* when acked */
    long acked_status;       /* when acked: 200 or 201 */
    bool short_deadline;     /* its reserve attempts carry a short
                              * Vnib-Deadline-Ms (history --deadline-ms) */
    bool give_up;            /* ... and it is given up at the first
                              * deadline_exceeded, as a failed job start */
    int expired;             /* reserve attempts answered 503
                              * deadline_exceeded */
    int vnis[HREC_MAX_VNIS];
    int nvnis;
    int64_t live_from;       /* mono: the acknowledging reply */
    int64_t live_until;      /* mono: the earliest the VNIs could be freed;
                              * INT64_MAX when never released */
    /* Each node's reports (enum hrec_cxi): the furthest one answered 200,
     * and the furthest one sent, which may have been written unseen.  The
     * database must hold a state between the two.
     */
    unsigned char told[HREC_MAX_NODES];
    unsigned char tried[HREC_MAX_NODES];
};

/* How a step reservation read back with the job token (GET of the step,
 * just after its acknowledged reserve) compared with the reserve's reply:
 * not read (no replica answered), the same, different, or refused (4xx).
 */
enum hrec_readback {
    HREC_NOT_READ,
    HREC_READ_SAME,
    HREC_READ_DIFFERS,
    HREC_READ_REFUSED
};

/* One job step as the client, acting as the job's step manager, saw it:
 * reserved (PUT .../steps/{step}) and ended (DELETE) with the job token.
 */
struct hstep {
    uint64_t job;            /* index into the thread's jobs */
    char step[HREC_STEP_SIZE];
    int vni_count;           /* what was asked for (its own VNIs) */
    bool acked;              /* a reserve answered 200 or 201 */
    long acked_status;       /* which */
    bool refused;            /* 503 vni_pool_exhausted, finally */
    bool ambiguous;          /* some reserve attempt may have committed
                              * unseen (transport failure or 5xx) */
    bool ended;              /* its DELETE was answered 202 */
    bool abandoned;          /* neither its end nor its job's release was
                              * answered: the broker may hold it still */
    long long resv_id;       /* when acked: the step's reservation */
    int vnis[HREC_MAX_VNIS];
    int nvnis;
    int64_t live_from;       /* mono: the acknowledging reply */
    int64_t live_until;      /* mono: the earliest its VNIs could be freed
                              * (its end's, or its job's release's, first
                              * send); INT64_MAX when never released */
    enum hrec_readback readback;
};

/* One thread's records: three growing arrays. */
struct hrec_log {
    struct hrec *recs;
    size_t nrecs, recs_cap;
    struct hjob *jobs;
    size_t njobs, jobs_cap;
    struct hstep *steps;
    size_t nsteps, steps_cap;
};

/* Append an attempt or a job.  The returned pointer stays valid until the
 * next append to the same log.  NULL with errno ENOMEM when out of memory.
 */
struct hrec *hrec_add(struct hrec_log *log)
    VNIB_MUST_CHECK;
struct hjob *hrec_add_job(struct hrec_log *log)
    VNIB_MUST_CHECK;
struct hstep *hrec_add_step(struct hrec_log *log)
    VNIB_MUST_CHECK;

/* Free the arrays (the struct itself is the caller's). */
void hrec_log_cleanup(struct hrec_log *log);

/* Nanoseconds on the clock (CLOCK_MONOTONIC or CLOCK_REALTIME). */
int64_t hrec_now(int clock_id);

/* The op's name as the JSON log writes it. */
const char *hrec_op_name(enum hrec_op op);

/* A report's cxi as enum hrec_cxi (HREC_NONE for anything else). */
enum hrec_cxi hrec_cxi_of(const char *cxi);

/* Where a 503 deadline_exceeded reply says r's deadline passed: "group"
 * (queued for a group commit, never written), "worker" (queued for a
 * request worker, never run) or "other"; NULL when r was not answered
 * deadline_exceeded.
 */
const char *hrec_expired_where(const struct hrec *r);

/* Fill r's error fields (code, message, deadlock) from a non-2xx reply's
 * body of len bytes (buf may be NULL).
 */
void hrec_parse_error(struct hrec *r, const char *buf, size_t len);

/* Write one log as JSON lines ({"type":"request",...} per attempt, then
 * {"type":"job",...} per job and {"type":"step",...} per step), with the
 * URLs by name.  0 or -1 with errno.
 */
int hrec_write_json(FILE *f, const struct hrec_log *log,
                    const char *const *urls);

#endif /* !VNIB_TESTS_HREC_H */
