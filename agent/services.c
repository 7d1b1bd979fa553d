/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Creating, finding and destroying a job's CXI services (services.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vnib/monotime.h"
#include "agent/broker.h"
#include "agent/limits.h"
#include "agent/services.h"

/* Allocation attempts per NIC: the first, and scale-backs after ENOSPC
 * (another agent may take what the NIC reported free in between).
 */
#define ALLOC_ATTEMPTS 4

bool services_match(const struct nic_svc *svc, const void *arg)
{
    const struct services_job *job = arg;
    if (svc->is_system || svc->svc_id == 1 || !svc->has_uid
        || svc->uid != job->uid || !svc->restricted_vnis
        || svc->nvnis != job->nvnis)
        return false;
    for (int i = 0; i < job->nvnis; i++)
        if (svc->vnis[i] != job->vnis[i])
            return false;
    return true;
}

int services_find(struct nic_backend *nb,
                  const struct nic_info *devs,
                  int ndev,
                  const struct services_job *job,
                  int *ids,
                  vnib_error_t *errp)
{
    for (int d = 0; d < ndev; d++) {
        struct nic_svc *svcs = NULL;
        int n = 0;
        ids[d] = -1;
        if (nic_svc_list(nb, &devs[d], &svcs, &n, errp) < 0)
            return -1;
        for (int i = 0; i < n && ids[d] < 0; i++)
            if (services_match(&svcs[i], job))
                ids[d] = (int)svcs[i].svc_id;
        free(svcs);
    }
    return 0;
}

/* ENOSPC naming the pool dev ran out of and how many services hold one:
 * no smaller request helps, only another service's end. */
static int pools_gone(struct nic_backend *nb,
                      const struct nic_info *dev,
                      const struct nic_fail *fail,
                      vnib_error_t *errp)
{
    enum nic_rsrc r = fail->no_tle_pools ? NIC_RSRC_TLE : NIC_RSRC_LE;
    struct nic_svc *svcs = NULL;
    vnib_error_t ignore = {0};
    char count[48] = "";
    int n = 0;

    if (nic_svc_list(nb, dev, &svcs, &n, &ignore) == 0)
        snprintf(count,
                 sizeof(count),
                 " (%d in use by other services)",
                 limits_pool_users(svcs, n, r));
    free(svcs);
    errno = ENOSPC;
    return errprintf(errp,
                     "the NIC %s has no free %s pool%s: a service that "
                     "reserves %ss needs one, and none is free until another "
                     "job or step on this node ends",
                     dev->name,
                     r == NIC_RSRC_TLE ? "TLE" : "LE",
                     count,
                     r == NIC_RSRC_TLE ? "TLE" : "LE");
}

/* Destroy service id on dev and check that its list no longer has it. */
static int destroy_checked(struct nic_backend *nb,
                           const struct nic_info *dev,
                           unsigned id)
{
    struct nic_svc *svcs = NULL;
    vnib_error_t ignore = {0};
    int n = 0, rc = -1;

    if (nic_svc_destroy(nb, dev, id, &ignore) < 0
        || nic_svc_list(nb, dev, &svcs, &n, &ignore) < 0)
        goto done;
    rc = 0;
    for (int i = 0; i < n; i++)
        if (svcs[i].svc_id == id)
            rc = -1;
done:
    free(svcs);
    return rc;
}

/* Allocate the job's service on one NIC, scaling back as needed. */
static int alloc_one(struct nic_backend *nb,
                     const struct nic_info *dev,
                     const struct nic_svc *svcs,
                     int n,
                     const struct services_job *job,
                     unsigned *idp,
                     FILE *warn,
                     vnib_error_t *errp)
{
    struct nic_svc want = {0}, req;
    struct nic_fail fail;
    vnib_error_t why = {0}, shortfall = {0};
    char note[256];

    want.restricted_members = true;
    want.has_uid = true;
    want.uid = job->uid;
    want.restricted_vnis = true;
    want.nvnis = job->nvnis;
    memcpy(want.vnis, job->vnis, sizeof(want.vnis));
    want.restricted_tcs = true;
    want.tcs_mask = job->tcs_mask;
    if (limits_plan(dev, svcs, n, job->ncores, job->limits, &want, errp) < 0)
        return -1;
    req = want;
    for (int attempt = 0; attempt < ALLOC_ATTEMPTS; attempt++) {
        memset(&fail, 0, sizeof(fail));
        if (nic_svc_alloc(nb, dev, &req, idp, &fail, &why) == 0)
            return 0;
        if (errno != ENOSPC)
            return errprintf(errp, "%s", why.text);
        if (limits_scale_back(&want,
                              &req,
                              &fail,
                              job->floor_percent,
                              note,
                              sizeof(note),
                              &shortfall)
            < 0) {
            if (errno == EAGAIN)
                continue;
            if (fail.no_tle_pools || fail.no_le_pools)
                return pools_gone(nb, dev, &fail, errp);
            errno = ENOSPC;
            return errprintf(errp,
                             "%s: cannot reserve the job's resources: %s",
                             dev->name,
                             shortfall.text);
        }
        if (warn)
            fprintf(warn,
                    "vnib-agent: warning: %s: NIC short, scaled back: %s\n",
                    dev->name,
                    note);
    }
    errno = ENOSPC;
    return errprintf(errp,
                     "%s: cannot reserve the job's resources after %d "
                     "attempts: %s",
                     dev->name,
                     ALLOC_ATTEMPTS,
                     why.text);
}

int services_create(struct nic_backend *nb,
                    const struct nic_info *devs,
                    int ndev,
                    const struct services_job *job,
                    int *ids,
                    bool *created,
                    FILE *warn,
                    vnib_error_t *errp)
{
    int d;

    for (d = 0; d < ndev; d++) {
        ids[d] = -1;
        created[d] = false;
    }
    for (d = 0; d < ndev; d++) {
        struct nic_svc *svcs = NULL;
        int n = 0;
        if (nic_svc_list(nb, &devs[d], &svcs, &n, errp) < 0)
            goto undo;
        for (int i = 0; i < n; i++) {
            if (services_match(&svcs[i], job))
                ids[d] = (int)svcs[i].svc_id;
            if (svcs[i].svc_id == 1 && svcs[i].enabled && warn)
                fprintf(warn,
                        "vnib-agent: warning: %s: the default CXI service "
                        "(svc 1) is enabled, so jobs can bypass VNI "
                        "isolation (set disable_default_svc=1)\n",
                        devs[d].name);
        }
        if (ids[d] < 0) {
            unsigned id;
            int rc = alloc_one(nb, &devs[d], svcs, n, job, &id, warn, errp);
            free(svcs);
            if (rc < 0)
                goto undo;
            ids[d] = (int)id;
            created[d] = true;
        } else
            free(svcs);
    }
    return 0;
undo : {
    int saved = errno;
    for (int k = 0; k < ndev; k++) {
        if (created[k]) {
            if (destroy_checked(nb, &devs[k], (unsigned)ids[k]) < 0)
                continue; /* left: created[k] and ids[k] say which */
            created[k] = false;
            ids[k] = -1;
        } else
            ids[k] = -1;
    }
    errno = saved;
    return -1;
}
}

json_t *services_json(const struct nic_info *dev, const struct nic_svc *svc)
{
    json_t *vnis = json_array();
    for (int i = 0; vnis && i < svc->nvnis; i++)
        json_array_append_new(vnis, json_integer(svc->vnis[i]));
    return json_pack("{s:s, s:I, s:I, s:o}",
                     "device",
                     dev->name,
                     "svc_id",
                     (json_int_t)svc->svc_id,
                     "uid",
                     svc->has_uid ? (json_int_t)svc->uid : (json_int_t)-1,
                     "vnis",
                     vnis);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int services_destroy(struct nic_backend *nb,
                     const struct nic_info *devs,
                     int ndev,
                     services_pick_fn pick,
                     const void *arg,
                     long retry_ms,
                     bool dry_run,
                     json_t *done,
                     json_t *left,
                     vnib_error_t *errp)
{
    long end = (long)monotime_ms() + retry_ms;

    for (;;) {
        bool busy_only = true;
        json_array_clear(left);
        for (int d = 0; d < ndev; d++) {
            struct nic_svc *svcs = NULL;
            int n = 0;
            if (nic_svc_list(nb, &devs[d], &svcs, &n, errp) < 0)
                return -1;
            for (int i = 0; i < n; i++) {
                if (!pick(&svcs[i], arg))
                    continue;
                json_t *o = services_json(&devs[d], &svcs[i]);
                vnib_error_t why = {0};
                if (dry_run
                    || nic_svc_destroy(nb, &devs[d], svcs[i].svc_id, &why)
                           == 0) {
                    json_array_append_new(done, o);
                    continue;
                }
                if (errno != EBUSY)
                    busy_only = false;
                json_object_set_new(
                    o,
                    "error",
                    json_string(errno == EBUSY ? "busy" : why.text));
                json_array_append_new(left, o);
            }
            free(svcs);
        }
        long now = (long)monotime_ms();
        if (json_array_size(left) == 0 || dry_run || !busy_only || now >= end)
            break;
        sleep_ms(end - now < 1000 ? end - now : 1000);
    }
    return (int)json_array_size(left);
}
