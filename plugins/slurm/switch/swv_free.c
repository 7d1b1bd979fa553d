/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_free: the free-VNI count, its claims and its poll thread (see
 * swv_free.h).
 *
 * A claim has two parts, the job's own VNIs and its first step's, each
 * claimed, reserved (still counted until a poll begun after the reserve
 * answers) or gone.  Claims sit in a hash by job id and in two lists:
 * by claim time (the oldest expire first) and, once reserved, by
 * reserve time (the oldest end at a poll).  What the live parts count is
 * kept as a running sum (explicit VNIs, plus how many parts take the
 * broker's default), so an admission costs O(1) under the mutex plus
 * the claims it expires, each once.  The hold for an unreachable broker
 * needs no list: a job held is asked again at every scheduling pass,
 * and one flag says that a pass is owed when the broker answers or the
 * hold runs out.
 */
#include "swv_free.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"

#define BUCKETS 1024

enum part_state { PART_GONE = 0, PART_CLAIMED, PART_RESERVED };

struct part {
    int need; /* -1: the broker's default (the job's part only) */
    enum part_state state;
};

struct claim {
    uint32_t job_id;
    struct part job, step;
    int64_t claimed_ms;
    int64_t reserved_ms;
    bool pending; /* in the reserved list */
    struct claim *hnext;
    struct claim *prev, *next;   /* by claim time */
    struct claim *pprev, *pnext; /* by reserve time */
};

struct list {
    struct claim *head, *tail;
};

struct swv_free {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t answered;
    pthread_t thread;
    bool started;
    bool stop;
    long interval_ms;
    int64_t claim_ms;
    swv_free_fetch_fn fetch;
    swv_free_log_fn log;
    swv_free_nudge_fn nudge;
    void *arg;
    /* under lock */
    bool first_done; /* the first fetch answered, well or not */
    long free_vnis;
    long per_job_default;
    int64_t fetched_ms;    /* 0: never */
    bool refused;          /* a job was told to wait since the last nudge */
    long refused_avail;    /* ... seeing this many free and unclaimed */
    int64_t hold_ms;       /* how long jobs wait for the broker; 0 never */
    int64_t hold_since_ms; /* ... counted from here until it answers */
    bool failing;          /* the last fetch failed */
    bool held;             /* a job waited for the broker since a nudge */
    bool hold_said;        /* the hold's end was logged (this outage) */
    vnib_error_t error;    /* the last fetch's error, "" after an answer */
    long claimed_vnis;     /* the live parts' explicit VNIs */
    long claimed_deflt;    /* the live parts that take the default */
    struct claim *hash[BUCKETS];
    struct list by_claim;
    struct list by_resv;
};

static struct claim **slot_of(struct swv_free *f, uint32_t job_id)
{
    struct claim **pp = &f->hash[job_id % BUCKETS];

    while (*pp != NULL && (*pp)->job_id != job_id)
        pp = &(*pp)->hnext;
    return pp;
}

static void part_drop(struct swv_free *f, struct part *p)
{
    if (p->state == PART_GONE)
        return;
    if (p->need < 0)
        f->claimed_deflt--;
    else
        f->claimed_vnis -= p->need;
    p->state = PART_GONE;
}

static void part_start(struct swv_free *f, struct part *p, int need)
{
    p->need = need;
    p->state = need != 0 ? PART_CLAIMED : PART_GONE;
    if (need < 0)
        f->claimed_deflt++;
    else
        f->claimed_vnis += need;
}

static void resv_unlink(struct swv_free *f, struct claim *c)
{
    if (!c->pending)
        return;
    if (c->pprev)
        c->pprev->pnext = c->pnext;
    if (c->pnext)
        c->pnext->pprev = c->pprev;
    if (f->by_resv.head == c)
        f->by_resv.head = c->pnext;
    if (f->by_resv.tail == c)
        f->by_resv.tail = c->pprev;
    c->pprev = c->pnext = NULL;
    c->pending = false;
}

static void resv_append(struct swv_free *f, struct claim *c)
{
    c->pprev = f->by_resv.tail;
    c->pnext = NULL;
    if (f->by_resv.tail)
        f->by_resv.tail->pnext = c;
    else
        f->by_resv.head = c;
    f->by_resv.tail = c;
    c->pending = true;
}

/* Forget c altogether. */
static void claim_remove(struct swv_free *f, struct claim *c)
{
    struct claim **pp = slot_of(f, c->job_id);

    part_drop(f, &c->job);
    part_drop(f, &c->step);
    resv_unlink(f, c);
    /* The ends by identity, not by the neighbours' absence: whatever
     * the links say, the list never keeps a freed claim. */
    if (c->prev)
        c->prev->next = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (f->by_claim.head == c)
        f->by_claim.head = c->next;
    if (f->by_claim.tail == c)
        f->by_claim.tail = c->prev;
    if (*pp == c)
        *pp = c->hnext;
    free(c);
}

/* Remove c when none of its parts is counted any more. */
static void claim_settle(struct swv_free *f, struct claim *c)
{
    if (c->job.state == PART_GONE && c->step.state == PART_GONE)
        claim_remove(f, c);
}

static void expire(struct swv_free *f, int64_t now_ms)
{
    while (f->by_claim.head != NULL
           && now_ms - f->by_claim.head->claimed_ms >= f->claim_ms)
        claim_remove(f, f->by_claim.head);
}

/* The VNIs claimed and not yet in the broker's count. */
static long claimed(const struct swv_free *f)
{
    return f->claimed_vnis + f->claimed_deflt * f->per_job_default;
}

/* What a job needs: need, or the broker's default for -1. */
static long resolve(const struct swv_free *f, int need)
{
    return need < 0 ? f->per_job_default : need;
}

static bool fresh(const struct swv_free *f, int64_t now_ms)
{
    return f->fetched_ms != 0 && now_ms - f->fetched_ms <= 3 * f->interval_ms;
}

/* Within the hold: the broker answered (or the hold began) less than
 * hold_ms ago. */
static bool holding(const struct swv_free *f, int64_t now_ms)
{
    int64_t since = f->fetched_ms != 0 ? f->fetched_ms : f->hold_since_ms;

    return f->hold_ms > 0 && now_ms - since < f->hold_ms;
}

/* Whether a job needs any VNI; the broker's default counts as some
 * until the broker has said what it is. */
static bool needs_vnis(const struct swv_free *f, int need, int step_need)
{
    if (step_need > 0 || need > 0)
        return true;
    return need < 0 && (f->fetched_ms == 0 || f->per_job_default > 0);
}

bool swv_free_admit_at(
    struct swv_free *f, int need, int step_need, int64_t now_ms, long *freep)
{
    bool ok = true;
    long avail, total;

    pthread_mutex_lock(&f->lock);
    expire(f, now_ms);
    if ((f->failing || !fresh(f, now_ms)) && holding(f, now_ms)
        && needs_vnis(f, need, step_need)) {
        *freep = -1;
        ok = false; /* it waits for the broker */
        f->held = true;
        goto out;
    }
    if (!fresh(f, now_ms)) {
        *freep = -1;
        goto out;
    }
    avail = f->free_vnis - claimed(f);
    *freep = avail;
    total = resolve(f, need) + (step_need > 0 ? step_need : 0);
    if (total > 0 && total > avail) {
        ok = false;
        if (!f->refused || avail < f->refused_avail)
            f->refused_avail = avail;
        f->refused = true;
    }
out:
    pthread_mutex_unlock(&f->lock);
    return ok;
}

bool swv_free_admit(struct swv_free *f, int need, int step_need, long *freep)
{
    return swv_free_admit_at(f, need, step_need, monotime_ms(), freep);
}

bool swv_free_step_fits_at(struct swv_free *f,
                           uint32_t job_id,
                           int job_need,
                           int step_need,
                           int64_t now_ms,
                           long *availp)
{
    struct claim *c;
    bool ok = true;
    long avail;

    *availp = -1;
    if (f == NULL || step_need <= 0)
        return true;
    pthread_mutex_lock(&f->lock);
    expire(f, now_ms);
    if (!fresh(f, now_ms) || resolve(f, job_need) <= 0)
        goto out; /* unknown, or nothing else to run on: the broker decides */
    avail = f->free_vnis - claimed(f);
    c = *slot_of(f, job_id);
    if (c != NULL && c->step.state == PART_CLAIMED)
        avail += c->step.need; /* its own claim, for its first step */
    *availp = avail;
    ok = avail >= step_need;
out:
    pthread_mutex_unlock(&f->lock);
    return ok;
}

bool swv_free_step_fits(struct swv_free *f,
                        uint32_t job_id,
                        int job_need,
                        int step_need,
                        long *availp)
{
    return swv_free_step_fits_at(
        f, job_id, job_need, step_need, monotime_ms(), availp);
}

void swv_free_claim_at(struct swv_free *f,
                       uint32_t job_id,
                       int need,
                       int step_need,
                       int64_t now_ms)
{
    struct claim **pp, *c;

    pthread_mutex_lock(&f->lock);
    expire(f, now_ms);
    if (*(pp = slot_of(f, job_id)) != NULL)
        claim_remove(f, *pp); /* a requeued job starts afresh */
    if (step_need < 0)
        step_need = 0;
    if ((need == 0 && step_need == 0) || (c = calloc(1, sizeof(*c))) == NULL)
        goto out; /* nothing to count; or advice lost, the reserve decides */
    c->job_id = job_id;
    c->claimed_ms = now_ms;
    part_start(f, &c->job, need);
    part_start(f, &c->step, step_need);
    *slot_of(f, job_id) = c;
    c->prev = f->by_claim.tail;
    if (f->by_claim.tail)
        f->by_claim.tail->next = c;
    else
        f->by_claim.head = c;
    f->by_claim.tail = c;
out:
    pthread_mutex_unlock(&f->lock);
}

void swv_free_claim(struct swv_free *f,
                    uint32_t job_id,
                    int need,
                    int step_need)
{
    swv_free_claim_at(f, job_id, need, step_need, monotime_ms());
}

void swv_free_reserved_at(struct swv_free *f,
                          uint32_t job_id,
                          bool with_step,
                          int64_t now_ms)
{
    struct claim *c;
    bool changed = false;

    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    if ((c = *slot_of(f, job_id)) == NULL)
        goto out;
    if (c->job.state == PART_CLAIMED) {
        c->job.state = PART_RESERVED;
        changed = true;
    }
    if (with_step && c->step.state == PART_CLAIMED) {
        c->step.state = PART_RESERVED;
        changed = true;
    }
    if (changed) {
        c->reserved_ms = now_ms;
        resv_unlink(f, c);
        resv_append(f, c);
    }
out:
    pthread_mutex_unlock(&f->lock);
}

void swv_free_reserved(struct swv_free *f, uint32_t job_id, bool with_step)
{
    swv_free_reserved_at(f, job_id, with_step, monotime_ms());
}

void swv_free_ended(struct swv_free *f, uint32_t job_id)
{
    struct claim *c;

    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    if ((c = *slot_of(f, job_id)) != NULL) {
        /* What it reserved stays counted until a poll shows it. */
        if (c->job.state == PART_CLAIMED)
            part_drop(f, &c->job);
        if (c->step.state == PART_CLAIMED)
            part_drop(f, &c->step);
        claim_settle(f, c);
    }
    pthread_mutex_unlock(&f->lock);
}

bool swv_free_should_nudge(struct swv_free *f, int64_t now_ms)
{
    bool nudge = false;

    pthread_mutex_lock(&f->lock);
    expire(f, now_ms);
    if (f->refused && fresh(f, now_ms)
        && f->free_vnis - claimed(f) > f->refused_avail) {
        f->refused = false;
        nudge = true;
    }
    if (f->held && ((!f->failing && fresh(f, now_ms)) || !holding(f, now_ms))) {
        f->held = false; /* the broker is back, or the hold is over */
        nudge = true;
    }
    pthread_mutex_unlock(&f->lock);
    return nudge;
}

void swv_free_set_hold(struct swv_free *f, long hold_ms, int64_t since_ms)
{
    pthread_mutex_lock(&f->lock);
    f->hold_ms = hold_ms > 0 ? hold_ms : 0;
    f->hold_since_ms = since_ms;
    pthread_mutex_unlock(&f->lock);
}

void swv_free_last_error(struct swv_free *f, vnib_error_t *errp)
{
    pthread_mutex_lock(&f->lock);
    *errp = f->error;
    pthread_mutex_unlock(&f->lock);
}

void swv_free_update_at(struct swv_free *f,
                        long free_vnis,
                        long per_job_default,
                        int64_t begun_ms)
{
    struct claim *c;

    pthread_mutex_lock(&f->lock);
    f->free_vnis = free_vnis;
    f->per_job_default = per_job_default;
    f->fetched_ms = begun_ms > 0 ? begun_ms : 1;
    f->error.text[0] = '\0';
    f->failing = false;
    f->hold_said = false;
    /* The broker counted what was reserved before this fetch began. */
    while ((c = f->by_resv.head) != NULL && c->reserved_ms < begun_ms) {
        resv_unlink(f, c);
        if (c->job.state == PART_RESERVED)
            part_drop(f, &c->job);
        if (c->step.state == PART_RESERVED)
            part_drop(f, &c->step);
        claim_settle(f, c);
    }
    pthread_mutex_unlock(&f->lock);
}

bool swv_free_failed_at(struct swv_free *f,
                        const vnib_error_t *err,
                        int64_t now_ms)
{
    bool over = false;

    pthread_mutex_lock(&f->lock);
    f->error = *err;
    f->failing = true;
    if (f->hold_ms > 0 && !f->hold_said && !holding(f, now_ms)) {
        f->hold_said = true;
        over = true;
    }
    pthread_mutex_unlock(&f->lock);
    return over;
}

static void *poll_loop(void *arg)
{
    struct swv_free *f = arg;
    bool failing = false;
    struct timespec until;

    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        vnib_error_t err = {0};
        long free_vnis = 0, per_job = 0;
        int64_t begun;
        bool over = false;
        int rc;

        pthread_mutex_unlock(&f->lock);
        begun = monotime_ms();
        rc = f->fetch(f->arg, &free_vnis, &per_job, &err);
        if (rc == 0)
            swv_free_update_at(f, free_vnis, per_job, begun);
        else
            over = swv_free_failed_at(f, &err, monotime_ms());
        if ((rc < 0) != failing && f->log != NULL)
            f->log(f->arg,
                   rc == 0 ? SWV_FREE_BACK : SWV_FREE_FAILING,
                   rc == 0 ? "" : err.text);
        if (over && f->log != NULL)
            f->log(f->arg, SWV_FREE_HOLD_OVER, err.text);
        failing = rc < 0;
        if (f->nudge != NULL && swv_free_should_nudge(f, monotime_ms()))
            f->nudge();
        pthread_mutex_lock(&f->lock);
        if (!f->first_done) {
            f->first_done = true;
            pthread_cond_broadcast(&f->answered);
        }
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += f->interval_ms / 1000;
        until.tv_nsec += (f->interval_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!f->stop
               && pthread_cond_timedwait(&f->wake, &f->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* Wait up to first_ms for the first fetch's answer. */
static void wait_first(struct swv_free *f, long first_ms)
{
    struct timespec until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += first_ms / 1000;
    until.tv_nsec += (first_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->lock);
    while (!f->first_done
           && pthread_cond_timedwait(&f->answered, &f->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&f->lock);
}

struct swv_free *swv_free_create(long interval_ms,
                                 long claim_ms,
                                 long first_ms,
                                 swv_free_fetch_fn fetch,
                                 swv_free_log_fn log,
                                 swv_free_nudge_fn nudge,
                                 void *arg,
                                 vnib_error_t *errp)
{
    struct swv_free *f = NULL;
    pthread_condattr_t ca;
    int e;

    if (interval_ms <= 0 || claim_ms <= 0 || first_ms < 0) {
        errno = EINVAL;
        errprintf(errp, "free count: bad interval, claim or first wait");
        return NULL;
    }
    if ((f = calloc(1, sizeof(*f))) == NULL) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    f->interval_ms = interval_ms;
    f->claim_ms = claim_ms;
    f->fetch = fetch;
    f->log = log;
    f->nudge = nudge;
    f->arg = arg;
    pthread_mutex_init(&f->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->wake, &ca);
    pthread_cond_init(&f->answered, &ca);
    pthread_condattr_destroy(&ca);
    if (fetch == NULL)
        return f; /* tests feed it with swv_free_update_at */
    if ((e = pthread_create(&f->thread, NULL, poll_loop, f)) != 0) {
        errno = e;
        errprintf(errp, "free count: cannot start its thread: %s", strerror(e));
        swv_free_destroy(f);
        return NULL;
    }
    f->started = true;
    if (first_ms > 0)
        wait_first(f, first_ms);
    return f;
}

void swv_free_destroy(struct swv_free *f)
{
    if (f == NULL)
        return;
    if (f->started) {
        pthread_mutex_lock(&f->lock);
        f->stop = true;
        pthread_cond_signal(&f->wake);
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->thread, NULL);
    }
    while (f->by_claim.head != NULL)
        claim_remove(f, f->by_claim.head);
    pthread_cond_destroy(&f->answered);
    pthread_cond_destroy(&f->wake);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
