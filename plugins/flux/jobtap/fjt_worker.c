/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fjt_worker: the threads that make the jobtap plugin's broker calls (see
 * fjt_worker.h), so that the job-manager's reactor never waits on HTTP.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/flux/jobtap/fjt_spool.h"
#include "plugins/flux/jobtap/fjt_worker.h"
#include "vnib/client.h"
#include "vnib/monotime.h"

#define MAX_THREADS 32

struct fjt_worker {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct fjt_call *queue; /* waiting, oldest first */
    struct fjt_call *done;  /* finished, oldest first */
    struct fjt_call *running[MAX_THREADS];
    int nthreads;
    int nstarted;
    bool stop;
    pthread_t threads[MAX_THREADS];
    int pipe[2];
    struct fjt_spool *spool;
    char *url;
    char *token;
    char *cacert;
    long timeout_ms;
    long reserve_timeout_ms;
};

struct thread_arg {
    struct fjt_worker *w;
    int index;
};

static void append(struct fjt_call **list, struct fjt_call *c)
{
    c->next = NULL;
    while (*list)
        list = &(*list)->next;
    *list = c;
}

struct fjt_call *fjt_call_create(enum fjt_op op, uint64_t id, const char *nodes)
{
    struct fjt_call *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->op = op;
    c->id = id;
    c->vni_count = -1;
    c->status = -1;
    snprintf(c->job_id, sizeof(c->job_id), "%ju", (uintmax_t)id);
    if (nodes && !(c->nodes = strdup(nodes))) {
        free(c);
        return NULL;
    }
    return c;
}

void fjt_call_destroy(struct fjt_call *c)
{
    if (c) {
        int saved = errno;
        free(c->nodes);
        free(c->created_by);
        json_decref(c->reply);
        free(c);
        errno = saved;
    }
}

/* Whether a job's call is in flight (under the lock). */
static bool running_job(struct fjt_worker *w, uint64_t id)
{
    for (int i = 0; i < w->nthreads; i++)
        if (w->running[i] && w->running[i]->id == id)
            return true;
    return false;
}

/* The oldest queued call whose job has nothing in flight and nothing
 * older queued, unlinked (under the lock); NULL when none may run. */
static struct fjt_call *next_runnable(struct fjt_worker *w)
{
    for (struct fjt_call **pp = &w->queue; *pp; pp = &(*pp)->next) {
        struct fjt_call *c = *pp;
        bool older = false;
        for (struct fjt_call *o = w->queue; o != c; o = o->next)
            if (o->id == c->id)
                older = true;
        if (older || running_job(w, c->id))
            continue;
        *pp = c->next;
        c->next = NULL;
        return c;
    }
    return NULL;
}

/* Sleep ms unless the worker stops meanwhile.  Returns false on stop. */
static bool pause_ms(struct fjt_worker *w, long ms)
{
    struct timespec ts;
    bool stop;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->stop
           && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
        ;
    stop = w->stop;
    pthread_mutex_unlock(&w->lock);
    return !stop;
}

/* 503 vni_pool_exhausted: the broker is up, but has too few VNIs free. */
static bool pool_short(int status, const vnib_error_t *e)
{
    return status == 503 && strncmp(e->text, "vni_pool_exhausted", 18) == 0;
}

static void do_reserve(struct fjt_worker *w,
                       struct vnib_client *cl,
                       struct fjt_call *c)
{
    char user[65];
    struct passwd pw;
    struct passwd *res = NULL;
    char buf[4096];
    long backoff = 250;
    int64_t deadline = monotime_ms() + w->reserve_timeout_ms;

    if (getpwuid_r((uid_t)c->uid, &pw, buf, sizeof(buf), &res) == 0 && res
        && strlen(pw.pw_name) < sizeof(user))
        snprintf(user, sizeof(user), "%s", pw.pw_name);
    else
        snprintf(user, sizeof(user), "%u", (unsigned)c->uid);
    struct vnib_reserve r = {
        .job_id = c->job_id,
        .uid = c->uid,
        .user = user,
        .nodes = c->nodes,
        .vni_count = c->vni_count,
        .hwcoll = c->hwcoll[0] ? c->hwcoll : NULL,
        .lease = c->lease,
    };
    for (;;) {
        json_decref(c->reply);
        c->reply = NULL;
        c->attempts++;
        c->status = vnib_client_reserve(cl, &r, &c->reply, &c->error);
        if (c->status == 200 || c->status == 201) {
            c->result = FJT_OK;
            return;
        }
        /* A broker without leases, or a job reserved without one before
         * (by an earlier load of the plugin): ask as before, at once. */
        if (r.lease
            && ((c->status == 400
                 && !strncmp(c->error.text, "lease_disabled", 14))
                || (c->status == 409
                    && !strncmp(c->error.text, "reservation_conflict", 20)))) {
            c->lease_disabled = c->status == 400;
            r.lease = c->lease = false;
            continue;
        }
        if (c->status >= 400 && c->status < 500) {
            c->result = FJT_REFUSED;
            return;
        }
        /* Back to the plugin at once: the job's wait for VNIs is the
         * reactor's (a timer, or a release's end, queues the call again),
         * never a thread's.  A thread that slept here until VNIs came
         * back could hold up the very releases that free them. */
        if (pool_short(c->status, &c->error)) {
            c->result = FJT_POOL_SHORT;
            return;
        }
        c->result = FJT_UNREACHABLE;
        if (monotime_ms() + backoff >= deadline || !pause_ms(w, backoff))
            return;
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
}

/* DELETE the job's reservation.  Returns the result; 404 is done (there
 * was nothing to release). */
static enum fjt_result release_one(struct vnib_client *cl,
                                   const char *job_id,
                                   int *statusp,
                                   vnib_error_t *errp)
{
    int st = vnib_client_release(cl, job_id, 0, false, NULL, errp);

    *statusp = st;
    if (st == 200 || st == 202 || st == 404)
        return FJT_OK;
    if (st >= 400 && st < 500)
        return FJT_REFUSED;
    return FJT_UNREACHABLE;
}

static void do_release(struct fjt_worker *w,
                       struct vnib_client *cl,
                       struct fjt_call *c)
{
    vnib_error_t spool_error;

    c->attempts++;
    c->result = release_one(cl, c->job_id, &c->status, &c->error);
    if (c->result == FJT_OK) {
        /* A release spooled earlier is done with too. */
        (void)fjt_spool_remove(w->spool, c->job_id, &spool_error);
        return;
    }
    if (fjt_spool_add(w->spool, c->job_id, &spool_error) == 0) {
        c->result = FJT_SPOOLED;
        return;
    }
    vnib_error_t why = c->error;
    c->result = FJT_FAILED;
    errprintf(
        &c->error, "%.70s; and not spooled: %.70s", why.text, spool_error.text);
}

static void do_flush(struct fjt_worker *w,
                     struct vnib_client *cl,
                     struct fjt_call *c)
{
    char **list = fjt_spool_list(w->spool, &c->error);

    c->result = FJT_OK;
    if (!list) {
        c->result = FJT_FAILED;
        return;
    }
    for (char **p = list; *p; p++) {
        vnib_error_t e;
        int st;
        enum fjt_result r = release_one(cl, *p, &st, &e);
        c->attempts++;
        if (r == FJT_OK) {
            (void)fjt_spool_remove(w->spool, *p, &e);
            continue;
        }
        /* Kept: tried again at the next flush. */
        c->status = st;
        c->result = r;
        errprintf(&c->error, "job %s: %s", *p, e.text);
        if (r == FJT_UNREACHABLE)
            break;
    }
    fjt_spool_list_free(list);
}

/* GET /v1/whoami: the name the broker records this plugin's reserves
 * under, into c->created_by.  Returns 0, or -1 with c's result set. */
static int learn_name(struct vnib_client *cl, struct fjt_call *c)
{
    json_t *me = NULL;
    const char *name;

    c->attempts++;
    c->status =
        vnib_client_request(cl, "GET", "/v1/whoami", NULL, &me, &c->error);
    name = json_string_value(json_object_get(me, "name"));
    if (c->status == 200 && name != NULL && name[0] != '\0')
        c->created_by = strdup(name);
    json_decref(me);
    if (c->created_by != NULL)
        return 0;
    c->result =
        c->status > 0 && c->status < 500 ? FJT_REFUSED : FJT_UNREACHABLE;
    if (c->status == 200)
        errprintf(&c->error, "the broker's /v1/whoami gave no name");
    return -1;
}

/* GET /v1/reservations?state=active, page by page: the job ids of those
 * c->created_by made (when NULL, first learnt from the broker). */
static void do_list(struct vnib_client *cl, struct fjt_call *c)
{
    char path[512];
    char *after = NULL;
    json_t *ids;

    if (c->created_by == NULL && learn_name(cl, c) < 0)
        return;
    ids = json_array();
    c->result = ids ? FJT_OK : FJT_FAILED;
    for (int pages = 0; ids && pages < 1000; pages++) {
        json_t *page = NULL;
        json_t *r;
        size_t i;
        const char *next;

        snprintf(path,
                 sizeof(path),
                 "/v1/reservations?state=active&limit=1000%s%s",
                 after ? "&after=" : "",
                 after ? after : "");
        c->attempts++;
        c->status =
            vnib_client_request(cl, "GET", path, NULL, &page, &c->error);
        if (c->status != 200) {
            c->result = c->status > 0 && c->status < 500 ? FJT_REFUSED
                                                         : FJT_UNREACHABLE;
            json_decref(page);
            break;
        }
        json_array_foreach (json_object_get(page, "reservations"), i, r) {
            const char *by =
                json_string_value(json_object_get(r, "created_by"));
            json_t *job = json_object_get(r, "job_id");
            if (by && !strcmp(by, c->created_by) && json_is_string(job)
                && !json_object_get(r, "step_id"))
                json_array_append(ids, job);
        }
        free(after);
        after = NULL;
        next = json_string_value(json_object_get(page, "next"));
        if (next && !(after = vnib_client_escape(next))) {
            c->result = FJT_FAILED;
            json_decref(page);
            break;
        }
        json_decref(page);
        if (!after)
            break;
    }
    free(after);
    if (c->result == FJT_OK)
        c->reply = ids;
    else
        json_decref(ids);
}

static void *thread_main(void *arg)
{
    struct thread_arg *ta = arg;
    struct fjt_worker *w = ta->w;
    int index = ta->index;
    struct vnib_client *cl = NULL;
    vnib_error_t error;

    free(ta);
    if ((cl = vnib_client_create(w->url, w->token, &error))) {
        (void)vnib_client_set_timeout_ms(cl, w->timeout_ms);
        if (w->cacert)
            (void)vnib_client_set_cacert(cl, w->cacert);
    }
    pthread_mutex_lock(&w->lock);
    for (;;) {
        struct fjt_call *c = NULL;
        while (!w->stop && !(c = next_runnable(w)))
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->stop)
            break;
        w->running[index] = c;
        pthread_mutex_unlock(&w->lock);

        c->started_ms = monotime_ms();
        if (!cl) {
            c->result = c->op == FJT_RESERVE ? FJT_UNREACHABLE : FJT_FAILED;
            vnib_error_copy(&c->error, &error);
            if (c->op == FJT_RELEASE
                && fjt_spool_add(w->spool, c->job_id, &c->error) == 0)
                c->result = FJT_SPOOLED;
        } else if (c->op == FJT_RESERVE) {
            do_reserve(w, cl, c);
        } else if (c->op == FJT_RELEASE) {
            do_release(w, cl, c);
        } else if (c->op == FJT_LIST) {
            do_list(cl, c);
        } else {
            do_flush(w, cl, c);
        }
        c->finished_ms = monotime_ms();

        pthread_mutex_lock(&w->lock);
        w->running[index] = NULL;
        append(&w->done, c);
        /* The plugin's watcher wakes; another thread may take the job's
         * next call now. */
        (void)!write(w->pipe[1], "x", 1);
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    vnib_client_destroy(cl);
    return NULL;
}

struct fjt_worker *fjt_worker_create(const struct fjt_worker_cfg *cfg,
                                     struct fjt_spool *spool,
                                     vnib_error_t *errp)
{
    struct fjt_worker *w = NULL;

    if (cfg->threads < 1 || cfg->threads > MAX_THREADS) {
        errno = EINVAL;
        errprintf(errp, "threads must be 1-%d", MAX_THREADS);
        return NULL;
    }
    if (vnib_client_global_init() < 0) {
        errprintf(errp, "cannot initialise libcurl");
        return NULL;
    }
    if (!(w = calloc(1, sizeof(*w)))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    w->pipe[0] = w->pipe[1] = -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->spool = spool;
    w->timeout_ms = cfg->timeout_ms;
    w->reserve_timeout_ms = cfg->reserve_timeout_ms;
    w->nthreads = cfg->threads;
    if (!(w->url = strdup(cfg->url)) || !(w->token = strdup(cfg->token))
        || (cfg->cacert && !(w->cacert = strdup(cfg->cacert)))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto error;
    }
    if (pipe(w->pipe) < 0) {
        errprintf(errp, "pipe: %s", strerror(errno));
        goto error;
    }
    for (int i = 0; i < 2; i++) {
        if (fcntl(w->pipe[i], F_SETFD, FD_CLOEXEC) < 0
            || fcntl(w->pipe[i], F_SETFL, O_NONBLOCK) < 0) {
            errprintf(errp, "pipe: %s", strerror(errno));
            goto error;
        }
    }
    for (int i = 0; i < w->nthreads; i++) {
        struct thread_arg *ta = malloc(sizeof(*ta));
        int e;
        if (!ta) {
            errno = ENOMEM;
            errprintf(errp, "out of memory");
            goto error;
        }
        ta->w = w;
        ta->index = i;
        if ((e = pthread_create(&w->threads[i], NULL, thread_main, ta))) {
            free(ta);
            errno = e;
            errprintf(errp, "cannot start a thread: %s", strerror(e));
            goto error;
        }
        w->nstarted++;
    }
    return w;
error:
    fjt_worker_destroy(w);
    return NULL;
}

static void free_list(struct fjt_call *c)
{
    while (c) {
        struct fjt_call *next = c->next;
        fjt_call_destroy(c);
        c = next;
    }
}

void fjt_worker_destroy(struct fjt_worker *w)
{
    if (!w)
        return;
    int saved = errno;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->nstarted; i++)
        pthread_join(w->threads[i], NULL);
    /* No release is only in memory: what was still queued is spooled. */
    for (struct fjt_call *c = w->queue; c; c = c->next) {
        vnib_error_t e;
        if (c->op == FJT_RELEASE)
            (void)fjt_spool_add(w->spool, c->job_id, &e);
    }
    free_list(w->queue);
    free_list(w->done);
    if (w->pipe[0] >= 0)
        close(w->pipe[0]);
    if (w->pipe[1] >= 0)
        close(w->pipe[1]);
    if (w->token) {
        memset(w->token, 0, strlen(w->token));
        free(w->token);
    }
    free(w->url);
    free(w->cacert);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
    errno = saved;
}

void fjt_worker_queue(struct fjt_worker *w, struct fjt_call *c)
{
    pthread_mutex_lock(&w->lock);
    append(&w->queue, c);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int fjt_worker_fd(const struct fjt_worker *w)
{
    return w->pipe[0];
}

struct fjt_call *fjt_worker_take(struct fjt_worker *w)
{
    char buf[256];
    struct fjt_call *list;

    while (read(w->pipe[0], buf, sizeof(buf)) > 0)
        ;
    pthread_mutex_lock(&w->lock);
    list = w->done;
    w->done = NULL;
    pthread_mutex_unlock(&w->lock);
    return list;
}

void fjt_worker_counts(struct fjt_worker *w, int *queued, int *running)
{
    int q = 0;
    int r = 0;

    pthread_mutex_lock(&w->lock);
    for (struct fjt_call *c = w->queue; c; c = c->next)
        q++;
    for (int i = 0; i < w->nthreads; i++)
        if (w->running[i])
            r++;
    pthread_mutex_unlock(&w->lock);
    *queued = q;
    *running = r;
}

bool fjt_worker_busy(struct fjt_worker *w, uint64_t id)
{
    bool busy = false;

    pthread_mutex_lock(&w->lock);
    busy = running_job(w, id);
    for (struct fjt_call *c = w->queue; c && !busy; c = c->next)
        if (c->id == id)
            busy = true;
    pthread_mutex_unlock(&w->lock);
    return busy;
}
