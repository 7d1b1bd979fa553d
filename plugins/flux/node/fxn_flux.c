/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fxn_flux: vnib-flux-node's requests to its Flux broker (see
 * fxn_flux.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flux/core.h>
#include <jansson.h>

#include "vnib/monotime.h"
#include "plugins/flux/node/fxn_flux.h"

/* What a failed future says: its own message, else errno's. */
static const char *why(flux_future_t *f)
{
    int e = errno;
    if (f && flux_future_has_error(f))
        return flux_future_error_string(f);
    return strerror(e);
}

flux_t *fxn_flux_open(vnib_error_t *errp)
{
    flux_t *h = flux_open(NULL, 0);

    if (!h)
        errprintf(errp,
                  "cannot connect to this node's Flux broker (FLUX_URI): %s",
                  strerror(errno));
    return h;
}

int fxn_flux_hostname(flux_t *h, char *buf, size_t size, vnib_error_t *errp)
{
    const char *name = flux_attr_get(h, "hostname");

    if (!name || !*name) {
        if (name)
            errno = ENOENT;
        return errprintf(
            errp, "cannot read this broker's hostname: %s", strerror(errno));
    }
    if (strlen(name) >= size) {
        errno = ENAMETOOLONG;
        return errprintf(errp, "this broker's hostname is too long");
    }
    snprintf(buf, size, "%s", name);
    return 0;
}

struct fxn_flux_watch {
    flux_t *h;
    uint32_t nodeid; /* where the watch runs */
    flux_future_t *f;
};

struct fxn_flux_watch *fxn_flux_watch_start(flux_t *h,
                                            flux_jobid_t id,
                                            vnib_error_t *errp)
{
    struct fxn_flux_watch *w = calloc(1, sizeof(*w));
    uint32_t rank = 0;

    if (!w) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        return NULL;
    }
    w->h = h;
    w->nodeid = flux_get_rank(h, &rank) == 0 && rank > 0 ? FLUX_NODEID_UPSTREAM
                                                         : FLUX_NODEID_ANY;
    if (!(w->f = flux_rpc_pack(h,
                               "job-info.eventlog-watch",
                               w->nodeid,
                               FLUX_RPC_STREAMING,
                               "{s:I s:s s:i}",
                               "id",
                               (json_int_t)id,
                               "path",
                               "eventlog",
                               "flags",
                               0))) {
        errprintf(errp, "cannot watch the job's eventlog: %s", strerror(errno));
        free(w);
        return NULL;
    }
    return w;
}

int fxn_flux_watch_wait(struct fxn_flux_watch *w,
                        long timeout_ms,
                        struct fxn_job *j,
                        vnib_error_t *errp)
{
    int64_t deadline = timeout_ms > 0 ? monotime_ms() + timeout_ms : 0;

    for (;;) {
        const char *entry = NULL;
        double wait = -1.;
        int done;

        if (deadline) {
            int64_t left = deadline - monotime_ms();
            wait = left > 0 ? (double)left / 1e3 : 0.;
        }
        if (flux_future_wait_for(w->f, wait) < 0) {
            if (errno == ETIMEDOUT)
                return errprintf(errp,
                                 "no %s event within RESERVATION_WAIT (%ld ms)",
                                 FXN_EVENT,
                                 timeout_ms);
            return errprintf(errp, "the job's eventlog: %s", why(w->f));
        }
        if (flux_job_event_watch_get(w->f, &entry) < 0) {
            /* ENODATA: the watch ended with the eventlog (the job is
             * inactive) before the event. */
            if (errno == ENODATA)
                return errprintf(errp,
                                 "the job's eventlog ended without a %s event",
                                 FXN_EVENT);
            return errprintf(errp, "the job's eventlog: %s", why(w->f));
        }
        if ((done = fxn_job_feed(j, entry, errp)) != 0)
            return done < 0 ? -1 : 0;
        flux_future_reset(w->f);
    }
}

void fxn_flux_watch_destroy(struct fxn_flux_watch *w)
{
    flux_future_t *cancel;

    if (!w)
        return;
    /* flux_job_event_watch_cancel would ask this broker's job-info, which
     * may not be the one that holds the watch. */
    if ((cancel = flux_rpc_pack(w->h,
                                "job-info.eventlog-watch-cancel",
                                w->nodeid,
                                FLUX_RPC_NORESPONSE,
                                "{s:i}",
                                "matchtag",
                                (int)flux_rpc_get_matchtag(w->f))))
        flux_future_destroy(cancel);
    flux_future_destroy(w->f);
    free(w);
}

long fxn_flux_rank_cores(flux_t *h, flux_jobid_t id, vnib_error_t *errp)
{
    flux_future_t *f = NULL;
    json_t *R = NULL;
    uint32_t rank;
    long n = -1;

    if (flux_get_rank(h, &rank) < 0)
        return errprintf(
            errp, "cannot read this broker's rank: %s", strerror(errno));
    if (!(f = flux_rpc_pack(h,
                            "job-info.lookup",
                            FLUX_NODEID_ANY,
                            0,
                            "{s:I s:[s] s:i}",
                            "id",
                            (json_int_t)id,
                            "keys",
                            "R",
                            "flags",
                            FLUX_JOB_LOOKUP_JSON_DECODE))
        || flux_rpc_get_unpack(f, "{s:o}", "R", &R) < 0) {
        errprintf(errp, "cannot read the job's R: %s", why(f));
        goto done;
    }
    n = fxn_R_cores(R, rank, errp);
done:
    flux_future_destroy(f);
    return n;
}
