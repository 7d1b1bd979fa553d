/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's model of the Fabric Manager (see fmsim_state.h).
 *
 * Jobs are kept as the JSON objects the API serves, in a jansson object
 * keyed by jobID; a second object maps each sessionToken to its jobID, so
 * that the multicast calls find their job in constant time.  A job's
 * "jobSteps" holds, for each step, the array of its trees' mcastIDs, and
 * is updated as trees come and go, so GET needs no assembly.  Trees live
 * in a fixed array indexed by mcastID; each records its job and step, its
 * hwRoot (a tree's root NIC may root no other tree) and whether it is an
 * orphan, i.e. its job was "forgotten" by the fault of that name and the
 * address stays in use until the simulator's state is thrown away.
 *
 * The state file holds {"version": 1, "jobs": [...], "trees": [...]}; the
 * jobSteps arrays are rebuilt from the trees when it is loaded.  Reading
 * and writing it is fmsim_file.c's; the checks of ids, NIC addresses and
 * tree requests are fmsim_wire.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"
#include "vnib/token.h"
#include "fmsim/fmsim_file.h"
#include "fmsim/fmsim_state.h"
#include "fmsim/fmsim_wire.h"

#define JOBS_PATH "/fabric/collectives/jobs/"
#define MCASTS_PATH "/fabric/collectives/multicasts/"
#define STATE_VERSION 1

struct tree {
    bool used;
    bool orphan;        /* its job was forgotten: allocated, unreachable */
    char *job;          /* jobID of the owner */
    char *step;         /* jobStepID */
    uint64_t root;      /* hwRoot, a 48-bit MAC */
    json_int_t vni;     /* as requested */
    json_int_t timeout; /* as requested, microseconds */
    size_t nmacs;       /* number of leaves */
};

struct fmsim_state {
    pthread_mutex_t lock;
    struct logger *log;
    char *path;       /* state file, or NULL */
    int total_addrs;  /* fabric-wide limit on trees in use */
    int used_addrs;   /* trees in use, orphans included */
    json_t *jobs;     /* jobID -> job object */
    json_t *sessions; /* sessionToken -> jobID */
    json_t *access;   /* OAuth access token -> expiry (monotonic ms) */
    struct tree trees[FMSIM_MCAST_IDS];
};

/* Leave a function that failed to build out: unlock, free out, NULL
 * with ENOMEM.
 */
static json_t *nomem_unlock(struct fmsim_state *s, json_t *out)
{
    pthread_mutex_unlock(&s->lock);
    json_decref(out);
    errno = ENOMEM;
    return NULL;
}

/* A job's object as served: a copy with documentSelfLink. */
static json_t *job_render(json_t *job)
{
    json_t *out = json_deep_copy(job);
    char link[sizeof(JOBS_PATH) + FMSIM_JOB_ID_MAX];

    if (!out)
        goto nomem;
    snprintf(link,
             sizeof(link),
             "%s%s",
             JOBS_PATH,
             json_string_value(json_object_get(job, "jobID")));
    if (json_object_set_new(out, "documentSelfLink", json_string(link)) < 0)
        goto nomem;
    return out;
nomem:
    json_decref(out);
    errno = ENOMEM;
    return NULL;
}

static json_t *job_new(const char *id, json_int_t limit, const char *token)
{
    return json_pack("{s:s, s:I, s:s, s:{}}",
                     "jobID",
                     id,
                     "mcastLimit",
                     limit,
                     "sessionToken",
                     token,
                     "jobSteps");
}

static size_t job_tree_count(json_t *job)
{
    const char *step;
    json_t *ids;
    size_t n = 0;

    json_object_foreach (json_object_get(job, "jobSteps"), step, ids) {
        n += json_array_size(ids);
    }
    return n;
}

static json_t *tree_render(const struct tree *t, int id)
{
    char root[18];
    fmsim_wire_mac_format(t->root, root);
    return json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:b}",
                     "mcastID",
                     id,
                     "jobID",
                     t->job,
                     "jobStepID",
                     t->step,
                     "hwRoot",
                     root,
                     "vni",
                     t->vni,
                     "timeout",
                     t->timeout,
                     "macs",
                     (json_int_t)t->nmacs,
                     "orphan",
                     t->orphan);
}

/* Give address id back to the fabric. */
static void tree_release(struct fmsim_state *s, size_t id)
{
    struct tree *t = &s->trees[id];
    if (!t->used)
        return;
    free(t->job);
    free(t->step);
    memset(t, 0, sizeof(*t));
    s->used_addrs--;
}

/* Record tree id under job.jobSteps[step]. */
static int tree_link(json_t *job, const char *step, int id)
{
    json_t *steps = json_object_get(job, "jobSteps");
    json_t *ids = json_object_get(steps, step);

    if (!ids) {
        if (json_object_set_new(steps, step, json_array()) < 0)
            goto nomem;
        ids = json_object_get(steps, step);
    }
    if (!ids || json_array_append_new(ids, json_integer(id)) < 0)
        goto nomem;
    return 0;
nomem:
    errno = ENOMEM;
    return -1;
}

/* Remove tree id from its job's step, and the step when it empties. */
static void tree_unlink(json_t *job, const char *step, int id)
{
    json_t *steps = json_object_get(job, "jobSteps");
    json_t *ids = json_object_get(steps, step);

    for (size_t i = 0; i < json_array_size(ids); i++) {
        if (json_integer_value(json_array_get(ids, i)) == id) {
            json_array_remove(ids, i);
            break;
        }
    }
    if (ids && json_array_size(ids) == 0)
        json_object_del(steps, step);
}

/* Free every tree of one step and drop the step. */
static void step_free(struct fmsim_state *s, json_t *job, const char *step)
{
    json_t *steps = json_object_get(job, "jobSteps");
    json_t *ids = json_object_get(steps, step);
    size_t i;
    json_t *v;

    json_array_foreach (ids, i, v) {
        json_int_t id = json_integer_value(v);
        if (id >= 0 && id < FMSIM_MCAST_IDS)
            tree_release(s, (size_t)id);
    }
    json_object_del(steps, step);
}

/* What the state file holds. */
static json_t *state_serialize(struct fmsim_state *s)
{
    json_t *root = NULL, *jobs, *trees;
    const char *id;
    json_t *job;

    if (!(root = json_pack(
              "{s:i, s:[], s:[]}", "version", STATE_VERSION, "jobs", "trees")))
        goto nomem;
    jobs = json_object_get(root, "jobs");
    trees = json_object_get(root, "trees");
    json_object_foreach (s->jobs, id, job) {
        json_t *j = json_pack("{s:O, s:O, s:O}",
                              "jobID",
                              json_object_get(job, "jobID"),
                              "mcastLimit",
                              json_object_get(job, "mcastLimit"),
                              "sessionToken",
                              json_object_get(job, "sessionToken"));
        if (json_array_append_new(jobs, j) < 0)
            goto nomem;
    }
    for (int i = 0; i < FMSIM_MCAST_IDS; i++) {
        if (s->trees[i].used
            && json_array_append_new(trees, tree_render(&s->trees[i], i)) < 0)
            goto nomem;
    }
    return root;
nomem:
    json_decref(root);
    errno = ENOMEM;
    return NULL;
}

/* Write the state file, if there is one; a failure is logged. */
static int state_save(struct fmsim_state *s)
{
    json_t *root;
    int rc;

    if (!s->path)
        return 0;
    if (!(root = state_serialize(s))) {
        logger_printf(s->log,
                      LOG_ERR,
                      NULL,
                      "state: out of memory %s: %s (the change is kept in "
                      "memory only)",
                      s->path,
                      strerror(errno));
        return -1;
    }
    rc = fmsim_file_write(s->path, root, s->log);
    json_decref(root);
    return rc;
}

/* The error for entry index of the state file's list (jobs, trees). */
static int load_invalid(const struct fmsim_state *s,
                        const char *list,
                        size_t index,
                        const char *why,
                        vnib_error_t *errp)
{
    errno = EINVAL;
    return errprintf(errp, "%s: %s[%zu]: %s", s->path, list, index, why);
}

/* The error for running out of memory while loading the state file. */
static int load_oom(const struct fmsim_state *s, vnib_error_t *errp)
{
    errno = ENOMEM;
    return errprintf(errp, "%s: out of memory", s->path);
}

/* Add one job from the state file. */
static int load_job(struct fmsim_state *s,
                    json_t *obj,
                    size_t index,
                    vnib_error_t *errp)
{
    json_error_t jerr;
    const char *id, *token;
    json_int_t limit;

    if (json_unpack_ex(obj,
                       &jerr,
                       0,
                       "{s:s, s:I, s:s}",
                       "jobID",
                       &id,
                       "mcastLimit",
                       &limit,
                       "sessionToken",
                       &token)
        < 0)
        goto invalid;
    if (!fmsim_wire_id_valid(id) || limit < 1 || limit > FMSIM_MCAST_IDS
        || !*token || strlen(token) > TOKEN_MAX_LEN
        || json_object_get(s->jobs, id)
        || json_object_get(s->sessions, token)) {
        snprintf(jerr.text,
                 sizeof(jerr.text),
                 "bad or duplicate jobID, mcastLimit or sessionToken");
        goto invalid;
    }
    if (json_object_size(s->jobs) >= FMSIM_JOBS_MAX) {
        snprintf(
            jerr.text, sizeof(jerr.text), "more than %d jobs", FMSIM_JOBS_MAX);
        goto invalid;
    }
    if (json_object_set_new(s->jobs, id, job_new(id, limit, token)) < 0
        || json_object_set_new(s->sessions, token, json_string(id)) < 0)
        return load_oom(s, errp);
    return 0;
invalid:
    return load_invalid(s, "jobs", index, jerr.text, errp);
}

/* Add one tree from the state file; a tree whose job is missing becomes
 * an orphan.
 */
static int load_tree(struct fmsim_state *s,
                     json_t *obj,
                     size_t index,
                     vnib_error_t *errp)
{
    json_error_t jerr;
    json_int_t id, vni, timeout, nmacs;
    const char *job_id, *step, *root;
    int orphan = 0;
    uint64_t mac;

    if (json_unpack_ex(obj,
                       &jerr,
                       0,
                       "{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s?b}",
                       "mcastID",
                       &id,
                       "jobID",
                       &job_id,
                       "jobStepID",
                       &step,
                       "hwRoot",
                       &root,
                       "vni",
                       &vni,
                       "timeout",
                       &timeout,
                       "macs",
                       &nmacs,
                       "orphan",
                       &orphan)
        < 0)
        goto invalid;
    if (id < 0 || id >= FMSIM_MCAST_IDS || s->trees[id].used
        || !fmsim_wire_id_valid(job_id) || !fmsim_wire_id_valid(step)
        || fmsim_wire_mac_parse(root, &mac) < 0 || nmacs < 1
        || nmacs > FMSIM_MACS_MAX) {
        snprintf(jerr.text, sizeof(jerr.text), "bad or duplicate tree");
        goto invalid;
    }
    json_t *job = orphan ? NULL : json_object_get(s->jobs, job_id);
    struct tree *t = &s->trees[id];
    t->used = true;
    t->orphan = job == NULL;
    t->job = strdup(job_id);
    t->step = strdup(step);
    t->root = mac;
    t->vni = vni;
    t->timeout = timeout;
    t->nmacs = (size_t)nmacs;
    s->used_addrs++;
    if (!t->job || !t->step || (job && tree_link(job, step, (int)id) < 0))
        return load_oom(s, errp);
    return 0;
invalid:
    return load_invalid(s, "trees", index, jerr.text, errp);
}

/* Load the state file if there is one.  It holds session tokens, so it is
 * refused unless only its owner (us or root) can read it.
 */
static int state_load(struct fmsim_state *s, vnib_error_t *errp)
{
    json_t *root, *jobs, *trees, *v;
    json_error_t jerr;
    int version;
    int rc = -1;
    size_t i;

    if (!(root = fmsim_file_read(s->path, errp)))
        return errno == ENOENT ? 0 : -1;
    if (json_unpack_ex(root,
                       &jerr,
                       0,
                       "{s:i, s:o, s:o}",
                       "version",
                       &version,
                       "jobs",
                       &jobs,
                       "trees",
                       &trees)
            < 0
        || version != STATE_VERSION || !json_is_array(jobs)
        || !json_is_array(trees)) {
        errno = EINVAL;
        errprintf(errp,
                  "%s: not an fmsim state file (version %d with \"jobs\" "
                  "and \"trees\" arrays)",
                  s->path,
                  STATE_VERSION);
        goto done;
    }
    json_array_foreach (jobs, i, v) {
        if (load_job(s, v, i, errp) < 0)
            goto done;
    }
    json_array_foreach (trees, i, v) {
        if (load_tree(s, v, i, errp) < 0)
            goto done;
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}

struct fmsim_state *fmsim_state_create(int total_addrs,
                                       const char *path,
                                       struct logger *log,
                                       vnib_error_t *errp)
{
    struct fmsim_state *s = NULL;

    if (total_addrs < 1 || total_addrs > FMSIM_MCAST_IDS) {
        errno = EINVAL;
        errprintf(errp, "total addresses must be 1..%d", FMSIM_MCAST_IDS);
        return NULL;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->log = log;
    s->total_addrs = total_addrs;
    s->jobs = json_object();
    s->sessions = json_object();
    s->access = json_object();
    if (!s->jobs || !s->sessions || !s->access
        || (path && !(s->path = strdup(path)))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto error;
    }
    if (s->path && state_load(s, errp) < 0)
        goto error;
    return s;
error:
    fmsim_state_destroy(s);
    return NULL;
}

void fmsim_state_destroy(struct fmsim_state *s)
{
    int saved_errno = errno;
    if (s) {
        for (size_t i = 0; i < FMSIM_MCAST_IDS; i++)
            tree_release(s, i);
        json_decref(s->jobs);
        json_decref(s->sessions);
        json_decref(s->access);
        free(s->path);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    errno = saved_errno;
}

json_t *fmsim_state_job_get(struct fmsim_state *s,
                            const char *job_id,
                            vnib_error_t *errp)
{
    json_t *out = NULL;

    pthread_mutex_lock(&s->lock);
    json_t *job = json_object_get(s->jobs, job_id);
    if (!job) {
        errno = ENOENT;
        errprintf(errp, "no job '%s'", job_id);
    } else if (!(out = job_render(job)))
        errprintf(errp, "out of memory");
    pthread_mutex_unlock(&s->lock);
    return out;
}

/* Create a job; the lock is held.  Returns the stored job (borrowed). */
static json_t *job_create_locked(struct fmsim_state *s,
                                 const char *job_id,
                                 json_int_t mcast_limit,
                                 vnib_error_t *errp)
{
    char token[TOKEN_SIZE];
    json_t *job = NULL;

    if (!fmsim_wire_id_valid(job_id)) {
        errno = EINVAL;
        errprintf(errp,
                  "jobID must be 1..%d characters, without '/' or control "
                  "characters",
                  FMSIM_JOB_ID_MAX);
        return NULL;
    }
    if (mcast_limit < 1 || mcast_limit > FMSIM_MCAST_IDS) {
        errno = EINVAL;
        errprintf(errp, "mcastLimit must be 1..%d", FMSIM_MCAST_IDS);
        return NULL;
    }
    if (json_object_get(s->jobs, job_id)) {
        errno = EEXIST;
        errprintf(errp, "job '%s' exists", job_id);
        return NULL;
    }
    if (json_object_size(s->jobs) >= FMSIM_JOBS_MAX) {
        errno = ENOSPC;
        errprintf(errp, "too many jobs (%d)", FMSIM_JOBS_MAX);
        return NULL;
    }
    do {
        if (token_generate(token, sizeof(token), errp) < 0)
            return NULL;
    } while (json_object_get(s->sessions, token));
    if (!(job = job_new(job_id, mcast_limit, token))
        || json_object_set_new(s->jobs, job_id, job) < 0) {
        vnib_memburn(token, sizeof(token));
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    if (json_object_set_new(s->sessions, token, json_string(job_id)) < 0) {
        json_object_del(s->jobs, job_id);
        vnib_memburn(token, sizeof(token));
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    vnib_memburn(token, sizeof(token));
    return job;
}

json_t *fmsim_state_job_create(struct fmsim_state *s,
                               const char *job_id,
                               json_int_t mcast_limit,
                               vnib_error_t *errp)
{
    json_t *out = NULL;

    pthread_mutex_lock(&s->lock);
    json_t *job = job_create_locked(s, job_id, mcast_limit, errp);
    if (job) {
        (void)state_save(s);
        if (!(out = job_render(job)))
            errprintf(errp, "out of memory");
    }
    pthread_mutex_unlock(&s->lock);
    return out;
}

json_t *fmsim_state_job_patch(struct fmsim_state *s,
                              const char *job_id,
                              json_t *steps,
                              vnib_error_t *errp)
{
    json_t *out = NULL;
    const char *step;
    json_t *v;
    bool changed = false;

    pthread_mutex_lock(&s->lock);
    json_t *job = json_object_get(s->jobs, job_id);
    if (!job) {
        errno = ENOENT;
        errprintf(errp, "no job '%s'", job_id);
        goto done;
    }
    if (!json_is_object(steps)) {
        errno = EINVAL;
        errprintf(errp, "jobSteps must be an object");
        goto done;
    }
    json_object_foreach (steps, step, v) {
        if (!json_is_null(v)) {
            errno = EINVAL;
            errprintf(errp,
                      "jobSteps.%.64s: only null (free the step's trees) is "
                      "accepted",
                      step);
            goto done;
        }
    }
    json_t *have = json_object_get(job, "jobSteps");
    json_object_foreach (steps, step, v) {
        if (json_object_get(have, step)) {
            step_free(s, job, step);
            changed = true;
        }
    }
    if (changed)
        (void)state_save(s);
    if (!(out = job_render(job)))
        errprintf(errp, "out of memory");
done:
    pthread_mutex_unlock(&s->lock);
    return out;
}

/* Remove a job and its session; with free_trees its trees are released,
 * else they stay allocated as orphans.  The lock is held.
 */
static void job_remove(struct fmsim_state *s, json_t *job, bool free_trees)
{
    json_t *steps = json_object_get(job, "jobSteps");
    const char *step;
    json_t *ids, *v;
    void *tmp;
    size_t i;

    json_object_foreach_safe(steps, tmp, step, ids)
    {
        if (free_trees) {
            step_free(s, job, step);
            continue;
        }
        json_array_foreach (ids, i, v) {
            json_int_t id = json_integer_value(v);
            if (id >= 0 && id < FMSIM_MCAST_IDS)
                s->trees[id].orphan = true;
        }
    }
    json_object_del(s->sessions,
                    json_string_value(json_object_get(job, "sessionToken")));
    /* job is borrowed from s->jobs, and so is its id: copy the key before
     * the deletion frees both.
     */
    char id[FMSIM_JOB_ID_MAX + 1];
    snprintf(
        id, sizeof(id), "%s", json_string_value(json_object_get(job, "jobID")));
    json_object_del(s->jobs, id);
}

/* Remove job job_id, freeing its trees or leaving them orphans. */
static int job_drop(struct fmsim_state *s,
                    const char *job_id,
                    bool free_trees,
                    vnib_error_t *errp)
{
    int rc = -1;

    pthread_mutex_lock(&s->lock);
    json_t *job = json_object_get(s->jobs, job_id);
    if (!job) {
        errno = ENOENT;
        errprintf(errp, "no job '%s'", job_id);
    } else {
        job_remove(s, job, free_trees);
        (void)state_save(s);
        rc = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int fmsim_state_job_delete(struct fmsim_state *s,
                           const char *job_id,
                           vnib_error_t *errp)
{
    return job_drop(s, job_id, true, errp);
}

int fmsim_state_job_forget(struct fmsim_state *s,
                           const char *job_id,
                           vnib_error_t *errp)
{
    return job_drop(s, job_id, false, errp);
}

json_t *fmsim_state_job_list(struct fmsim_state *s)
{
    char link[sizeof(JOBS_PATH) + FMSIM_JOB_ID_MAX];
    json_t *out, *links;
    const char *id;
    json_t *job;

    pthread_mutex_lock(&s->lock);
    if (!(out = json_pack("{s:[]}", "documentLinks")))
        goto nomem;
    links = json_object_get(out, "documentLinks");
    json_object_foreach (s->jobs, id, job) {
        snprintf(link, sizeof(link), "%s%s", JOBS_PATH, id);
        if (json_array_append_new(links, json_string(link)) < 0)
            goto nomem;
    }
    pthread_mutex_unlock(&s->lock);
    return out;
nomem:
    return nomem_unlock(s, out);
}

/* The first mac, in request order, that roots no tree yet. */
static int pick_root(struct fmsim_state *s,
                     const struct fmsim_mcast_req *r,
                     uint64_t *rootp)
{
    uint64_t roots[FMSIM_MCAST_IDS];
    size_t n = 0;

    for (size_t i = 0; i < FMSIM_MCAST_IDS; i++) {
        if (s->trees[i].used)
            roots[n++] = s->trees[i].root;
    }
    qsort(roots, n, sizeof(roots[0]), fmsim_wire_u64_cmp);
    for (size_t i = 0; i < r->nmacs; i++) {
        if (!bsearch(
                &r->macs[i], roots, n, sizeof(roots[0]), fmsim_wire_u64_cmp)) {
            *rootp = r->macs[i];
            return 0;
        }
    }
    return -1;
}

/* The job whose session token this is (borrowed), or NULL with EACCES. */
static json_t *session_job(struct fmsim_state *s,
                           const char *token,
                           vnib_error_t *errp)
{
    json_t *id = token ? json_object_get(s->sessions, token) : NULL;
    json_t *job = id ? json_object_get(s->jobs, json_string_value(id)) : NULL;
    if (!job) {
        errno = EACCES;
        errprintf(errp,
                  token ? "unknown session token"
                        : "a job's session token is required (Authorization: "
                          "Bearer)");
    }
    return job;
}

json_t *fmsim_state_mcast_create(struct fmsim_state *s,
                                 const char *token,
                                 json_t *body,
                                 vnib_error_t *errp)
{
    struct fmsim_mcast_req r = {0};
    json_t *out = NULL;
    uint64_t root;
    char hw[18];
    int id = -1;

    pthread_mutex_lock(&s->lock);
    json_t *job = session_job(s, token, errp);
    if (!job || fmsim_wire_mcast_parse(body, &r, errp) < 0)
        goto done;
    const char *job_id = json_string_value(json_object_get(job, "jobID"));
    if (strcmp(r.job_id, job_id) != 0) {
        errno = EINVAL;
        errprintf(errp, "jobID does not match the session token's job");
        goto done;
    }
    json_int_t limit = json_integer_value(json_object_get(job, "mcastLimit"));
    size_t have = job_tree_count(job);
    if ((json_int_t)have >= limit) {
        errno = ENOSPC;
        errprintf(errp,
                  "01: job mcastLimit reached (%zu of %" JSON_INTEGER_FORMAT
                  " trees in use)",
                  have,
                  limit);
        goto done;
    }
    if (s->used_addrs >= s->total_addrs) {
        errno = ENOSPC;
        errprintf(errp,
                  "02: fabric out of multicast addresses (%d of %d in use)",
                  s->used_addrs,
                  s->total_addrs);
        goto done;
    }
    if (pick_root(s, &r, &root) < 0) {
        errno = ENOSPC;
        errprintf(errp,
                  "03: no free hwRoot: every given NIC already roots a tree");
        goto done;
    }
    for (int i = 0; i < FMSIM_MCAST_IDS && id < 0; i++) {
        if (!s->trees[i].used)
            id = i;
    }
    if (id < 0) { /* total_addrs <= FMSIM_MCAST_IDS makes this impossible */
        errno = ENOSPC;
        errprintf(errp, "02: fabric out of multicast ids");
        goto done;
    }
    struct tree *t = &s->trees[id];
    t->job = strdup(job_id);
    t->step = strdup(r.step);
    if (!t->job || !t->step || tree_link(job, r.step, id) < 0) {
        free(t->job);
        free(t->step);
        memset(t, 0, sizeof(*t));
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    t->used = true;
    t->root = root;
    t->vni = r.vni;
    t->timeout = r.timeout;
    t->nmacs = r.nmacs;
    s->used_addrs++;
    (void)state_save(s);
    fmsim_wire_mac_format(root, hw);
    char link[sizeof(MCASTS_PATH) + 8];
    snprintf(link, sizeof(link), "%s%d", MCASTS_PATH, id);
    if (!(out = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s}",
                          "mcastID",
                          id,
                          "hwRoot",
                          hw,
                          "message",
                          "OK",
                          "jobID",
                          job_id,
                          "jobStepID",
                          r.step,
                          "documentSelfLink",
                          link))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
    }
done:
    pthread_mutex_unlock(&s->lock);
    free(r.macs);
    return out;
}

int fmsim_state_mcast_delete(struct fmsim_state *s,
                             const char *token,
                             long mcast_id,
                             vnib_error_t *errp)
{
    int rc = -1;

    pthread_mutex_lock(&s->lock);
    json_t *job = session_job(s, token, errp);
    if (!job)
        goto done;
    const char *job_id = json_string_value(json_object_get(job, "jobID"));
    struct tree *t = mcast_id >= 0 && mcast_id < FMSIM_MCAST_IDS
                         ? &s->trees[mcast_id]
                         : NULL;
    if (!t || !t->used || t->orphan || strcmp(t->job, job_id) != 0) {
        errno = ENOENT;
        errprintf(errp, "no multicast tree %ld in this job", mcast_id);
        goto done;
    }
    tree_unlink(job, t->step, (int)mcast_id);
    tree_release(s, (size_t)mcast_id);
    (void)state_save(s);
    rc = 0;
done:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

bool fmsim_state_session_valid(struct fmsim_state *s, const char *token)
{
    pthread_mutex_lock(&s->lock);
    bool ok = token && json_object_get(s->sessions, token) != NULL;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Drop expired access tokens; the lock is held. */
static void access_prune(struct fmsim_state *s, int64_t now)
{
    const char *key;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(s->access, tmp, key, v)
    {
        if (json_integer_value(v) <= now)
            json_object_del(s->access, key);
    }
}

int fmsim_state_access_issue(struct fmsim_state *s,
                             long ttl_s,
                             char *buf,
                             size_t size,
                             vnib_error_t *errp)
{
    int64_t now = monotime_ms();
    int rc = -1;

    pthread_mutex_lock(&s->lock);
    access_prune(s, now);
    if (json_object_size(s->access) >= FMSIM_ACCESS_MAX) {
        /* Keys iterate in insertion order: forget the oldest. */
        void *it = json_object_iter(s->access);
        json_object_del(s->access, json_object_iter_key(it));
    }
    if (token_generate(buf, size, errp) < 0)
        goto done;
    if (json_object_set_new(
            s->access, buf, json_integer((json_int_t)(now + ttl_s * 1000)))
        < 0) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    rc = 0;
done:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

bool fmsim_state_access_valid(struct fmsim_state *s, const char *token)
{
    bool ok = false;

    pthread_mutex_lock(&s->lock);
    json_t *v = token ? json_object_get(s->access, token) : NULL;
    if (v) {
        ok = json_integer_value(v) > monotime_ms();
        if (!ok)
            json_object_del(s->access, token);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

void fmsim_state_access_expire(struct fmsim_state *s)
{
    pthread_mutex_lock(&s->lock);
    json_object_clear(s->access);
    pthread_mutex_unlock(&s->lock);
}

json_t *fmsim_state_dump(struct fmsim_state *s)
{
    json_t *out = NULL, *jobs, *trees;
    const char *id;
    json_t *job;

    pthread_mutex_lock(&s->lock);
    access_prune(s, monotime_ms());
    if (!(out = json_pack("{s:{}, s:[], s:{s:i, s:i, s:i}, s:i}",
                          "jobs",
                          "trees",
                          "addrs",
                          "total",
                          s->total_addrs,
                          "used",
                          s->used_addrs,
                          "ids",
                          FMSIM_MCAST_IDS,
                          "oauth_tokens",
                          (int)json_object_size(s->access))))
        goto nomem;
    jobs = json_object_get(out, "jobs");
    trees = json_object_get(out, "trees");
    json_object_foreach (s->jobs, id, job) {
        if (json_object_set_new(jobs, id, job_render(job)) < 0)
            goto nomem;
    }
    for (int i = 0; i < FMSIM_MCAST_IDS; i++) {
        if (s->trees[i].used
            && json_array_append_new(trees, tree_render(&s->trees[i], i)) < 0)
            goto nomem;
    }
    pthread_mutex_unlock(&s->lock);
    return out;
nomem:
    return nomem_unlock(s, out);
}
