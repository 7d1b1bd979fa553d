/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What hwcoll.c, fmqueue.c and fmleader.c share: the hwcoll object and the
 * helpers every FM call uses (private to those three files).
 *
 * hwcoll.c holds the object's life, the request thread's reserve, the
 * reveal of session tokens, status and metrics; fmqueue.c the
 * release-queue workers (with deferred reserves) and their NOTIFY
 * listener; fmleader.c the leader thread: reconciliation with the FM, the
 * follow-up of reserves that timed out, the lost-reservation hook.
 */
#ifndef VNIB_SERVER_HWCOLL_INT_H
#define VNIB_SERVER_HWCOLL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "vnib/fmclient.h"
#include "vnib/monotime.h"
#include "vnib/seal.h"
#include "server/hwcoll/hwcoll.h"
#include "server/hwstate.h"

struct hwcoll {
    struct broker *b;
    struct fmc *fmc;                 /* NULL when disabled */
    unsigned char key[SEAL_KEY_LEN]; /* seals session tokens */
    int addrs_per_job;               /* configured or computed */
    char prefix[128]; /* FM job ids are "<prefix>-<job>-r<reservation>" */
    /* After a rotation, the key before it: opens, never seals. */
    unsigned char prev_key[SEAL_KEY_LEN];
    bool has_prev_key;

    char replica[300];  /* host:pid, as fm_leader says */
    pthread_t *threads; /* queue workers, then listener, then leader */
    int nthreads;
    pthread_mutex_t lock;
    pthread_cond_t cond;  /* the leader's: something changed */
    pthread_cond_t qcond; /* the queue workers': work may be due */
    bool stop;            /* under lock */
    unsigned generation;  /* bumped by each wake-up */
    bool claim_woken;     /* a worker was woken to claim, has not yet */
    int active;           /* queue workers in a pass or lingering */
    int64_t paused_until; /* FM unreachable: no calls before (mono ms) */
    long pause_ms;        /* the current pause, doubling */
    bool reconcile_now;   /* the FM came back, or just elected */
    bool leading;         /* this replica leads */
    int in_request;       /* FM reserves running on request threads */
    int max_in_request;   /* hwcoll.request_concurrency, resolved */

    /* The last reconciliation, under lock. */
    time_t rec_at;
    int rec_released, rec_lost;
    long long rec_foreign; /* FM jobs of our prefix not ours */
    char rec_error[160];

    /* Counters for /metrics, under lock. */
    unsigned long long ops_done, ops_retried, lost_total, reconciles;
    unsigned long long deferred_total;

    /* Connection state for /v1/fabric-manager, under lock. */
    time_t last_success;
    time_t last_error;
    bool last_ok;              /* the most recent call succeeded */
    char last_error_text[200]; /* "what: message": for admins */
    char last_error_reason[HWSTATE_REASON_MAX]; /* class and status: all */
};

/* Note an FM call's outcome for /v1/fabric-manager, right after the call:
 * what the call was, and err, how it failed (NULL: it succeeded).  The
 * first success after a failure asks for a reconciliation.
 */
void hwcoll_note_result(struct hwcoll *h,
                        const char *what,
                        const struct fmc_error *err);

/* Seal a token for reservation id; hex into *hexp (caller frees). */
int hwcoll_seal_hex(struct hwcoll *h,
                    long long id,
                    const char *token,
                    char **hexp);

/* Record an FM outcome for reservation id as the workers do (actor
 * "hwcoll"); a failure is logged by the store and tried again later.
 */
void hwcoll_record(struct hwcoll *h,
                   long long id,
                   enum hwstate state,
                   enum hwstate_cause cause,
                   const char *hex);

/* One FM reserve, by a request thread or a worker: for reservation id,
 * FM job fm; actor goes to the audit trail.
 */
struct hwcoll_call {
    long long id;
    const char *fm;
    const char *actor;
};

/* Call c failed with errno e (the stored cause) and err (the reason
 * clients read: class and status; its message, with the FM's text, goes
 * to the log): note it, log it, record "unavailable", and after a timeout
 * wake the leader, which checks whether the FM completed it late.  recp
 * (may be NULL) receives the reservation as recorded.
 */
void hwcoll_reserve_failed(struct hwcoll *h,
                           const struct hwcoll_call *c,
                           int e,
                           const struct fmc_error *err,
                           json_t **recp);

/* The FM made c's job and answered token: record it, sealed.  Returns 1
 * when recorded (recp, may be NULL, receives the reservation), 0 when the
 * job ended meanwhile (the orphan FM job is deleted), -1 when it could not
 * be recorded (logged).
 */
int hwcoll_reserve_done(struct hwcoll *h,
                        const struct hwcoll_call *c,
                        const char *token,
                        json_t **recp);

/* Sleep on cond until a wake-up after generation gen, or ms pass; false
 * when stopping.  Called with the lock held.
 */
bool hwcoll_nap(struct hwcoll *h, pthread_cond_t *cond, unsigned gen, long ms);

/* The threads (arg: the hwcoll): a release-queue worker and the NOTIFY
 * listener (fmqueue.c), the leader (fmleader.c).
 */
void *fmqueue_worker_main(void *arg);
void *fmqueue_listen_main(void *arg);
void *fmleader_main(void *arg);

#endif /* !VNIB_SERVER_HWCOLL_INT_H */
