/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fxn_job: a Flux job's eventlog entries and R, as vnib-flux-node takes
 * them (see fxn_job.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "vnib/idset.h"
#include "plugins/flux/node/fxn_job.h"

/* The largest broker rank and core id R may name. */
#define RANK_MAX (1u << 24)
#define CORE_MAX (1u << 20)

void fxn_job_init(struct fxn_job *j)
{
    memset(j, 0, sizeof(*j));
    j->uid = -1;
}

void fxn_job_clear(struct fxn_job *j)
{
    json_decref(j->event);
    fxn_job_init(j);
}

int fxn_job_feed(struct fxn_job *j, const char *entry, vnib_error_t *errp)
{
    json_t *e = json_loads(entry, 0, NULL);
    json_t *ctx = json_object_get(e, "context");
    const char *name = json_string_value(json_object_get(e, "name"));
    int rc = 0;

    if (!json_is_object(e) || !name) {
        json_decref(e);
        errno = EINVAL;
        return errprintf(errp, "an eventlog entry without a name");
    }
    if (!strcmp(name, "submit")) {
        json_t *uid = json_object_get(ctx, "userid");
        if (json_is_integer(uid) && json_integer_value(uid) >= 0
            && json_integer_value(uid) <= 4294967294LL)
            j->uid = json_integer_value(uid);
    } else if (!strcmp(name, FXN_EVENT)) {
        json_decref(j->event);
        j->event = json_is_object(ctx) ? json_incref(ctx) : json_object();
        rc = 1;
    } else if (!strcmp(name, "exception")
               && json_integer_value(json_object_get(ctx, "severity")) == 0
               && json_is_integer(json_object_get(ctx, "severity"))) {
        const char *type = json_string_value(json_object_get(ctx, "type"));
        const char *note = json_string_value(json_object_get(ctx, "note"));
        snprintf(j->why,
                 sizeof(j->why),
                 "a fatal exception (%s%s%s) came first",
                 type ? type : "?",
                 note && *note ? ": " : "",
                 note ? note : "");
        j->ended = true;
        rc = 1;
    } else if (!strcmp(name, "clean")) {
        snprintf(j->why, sizeof(j->why), "the job ended first");
        j->ended = true;
        rc = 1;
    }
    json_decref(e);
    return rc;
}

int fxn_event_parse(json_t *context, struct fxn_event *e, vnib_error_t *errp)
{
    json_t *vnis = json_object_get(context, "vnis");
    json_t *lease = json_object_get(context, "lease");
    json_t *ncores = json_object_get(context, "ncores");

    memset(e, 0, sizeof(*e));
    e->job_id = json_string_value(json_object_get(context, "job_id"));
    if (!e->job_id || !*e->job_id) {
        errno = EINVAL;
        return errprintf(errp, "the %s event names no job id", FXN_EVENT);
    }
    if (!json_is_array(vnis)) {
        errno = EINVAL;
        return errprintf(errp, "the %s event has no vnis list", FXN_EVENT);
    }
    if (lease && !json_is_string(lease)) {
        errno = EINVAL;
        return errprintf(errp, "the %s event's lease is not text", FXN_EVENT);
    }
    e->has_vnis = json_array_size(vnis) > 0;
    e->lease = json_string_value(lease);
    if (json_is_integer(ncores) && json_integer_value(ncores) > 0
        && json_integer_value(ncores) <= 65535)
        e->ncores = (long)json_integer_value(ncores);
    e->why = json_string_value(json_object_get(context, "error"));
    if (!e->why)
        e->why = json_string_value(json_object_get(context, "empty-reason"));
    return 0;
}

long fxn_R_cores(json_t *R, unsigned rank, vnib_error_t *errp)
{
    json_t *lite = json_object_get(json_object_get(R, "execution"), "R_lite");
    json_t *entry;
    size_t i;

    if (json_integer_value(json_object_get(R, "version")) != 1
        || !json_is_array(lite)) {
        errno = EINVAL;
        return errprintf(errp, "the job's R is not version 1 with R_lite");
    }
    json_array_foreach (lite, i, entry) {
        const char *ranks = json_string_value(json_object_get(entry, "rank"));
        const char *cores = json_string_value(
            json_object_get(json_object_get(entry, "children"), "core"));
        struct idset *set;
        bool mine;
        long n;

        if (!ranks || !cores) {
            errno = EINVAL;
            return errprintf(errp,
                             "the job's R_lite has an entry without "
                             "rank or cores");
        }
        if (!(set = idset_decode(ranks, RANK_MAX, errp)))
            return -1;
        mine = idset_contains(set, rank);
        idset_destroy(set);
        if (!mine)
            continue;
        if (!(set = idset_decode(cores, CORE_MAX, errp)))
            return -1;
        n = (long)idset_count(set);
        idset_destroy(set);
        return n;
    }
    errno = ENOENT;
    return errprintf(errp, "rank %u is not in the job's R", rank);
}
