/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_broker: vnib-agent-broker.so, loaded beside the helper (see
 * swv_broker.h).
 *
 * The handle and the table filled from it are the process's, under a
 * mutex (slurmctld calls from several threads); a load that failed is
 * tried again at the next call.
 */
#define _GNU_SOURCE /* dladdr */
#include "swv_broker.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "agent/broker.h"
#include "agent/brokerso.h"
#include "vnib/trustload.h"

/* An object of the helper's, for dladdr to say where the helper is. */
static const char helper_anchor;

static pthread_mutex_t broker_lock = PTHREAD_MUTEX_INITIALIZER;
static void *broker_handle;
static struct swv_client_api client_api;

/* The path of the object: beside the helper. */
static int object_path(char *path, size_t size, vnib_error_t *errp)
{
    Dl_info info;
    const char *slash;

    if (!dladdr(&helper_anchor, &info) || !info.dli_fname
        || !(slash = strrchr(info.dli_fname, '/'))) {
        errno = ENOENT;
        return errprintf(errp, "cannot tell where the switch helper is");
    }
    if ((size_t)snprintf(path,
                         size,
                         "%.*s/%s",
                         (int)(slash - info.dli_fname),
                         info.dli_fname,
                         BROKERSO_NAME)
        >= size) {
        errno = ENAMETOOLONG;
        return errprintf(errp, "%s: path too long", info.dli_fname);
    }
    return 0;
}

/* Resolve name in h into *fn; -1 with errp when missing. */
static int resolve(void *h, const char *name, void **fn, vnib_error_t *errp)
{
    if (!(*fn = dlsym(h, name))) {
        errno = ELIBBAD;
        return errprintf(errp, "%s: no %s in it", BROKERSO_NAME, name);
    }
    return 0;
}

/* The object loaded and the table filled, under broker_lock. */
static void *load_locked(vnib_error_t *errp)
{
    char path[PATH_MAX];
    struct swv_client_api api;
    void *h;

    if (broker_handle)
        return broker_handle;
    if (object_path(path, sizeof(path), errp) < 0
        || !(h = trustload_open(path, errp)))
        return NULL;
    if (resolve(h, "vnib_client_create", (void **)&api.create, errp) < 0
        || resolve(h, "vnib_client_destroy", (void **)&api.destroy, errp) < 0
        || resolve(h, "vnib_client_set_cacert", (void **)&api.set_cacert, errp)
               < 0
        || resolve(h,
                   "vnib_client_set_timeout_ms",
                   (void **)&api.set_timeout_ms,
                   errp)
               < 0
        || resolve(h, "vnib_client_request", (void **)&api.request, errp) < 0
        || resolve(h, "vnib_client_reserve", (void **)&api.reserve, errp) < 0
        || resolve(
               h, "vnib_client_step_reserve", (void **)&api.step_reserve, errp)
               < 0
        || resolve(h, "vnib_client_release", (void **)&api.release, errp) < 0
        || resolve(
               h, "vnib_client_step_release", (void **)&api.step_release, errp)
               < 0) {
        dlclose(h);
        return NULL;
    }
    client_api = api;
    broker_handle = h;
    return h;
}

const struct swv_client_api *swv_broker_client(vnib_error_t *errp)
{
    const struct swv_client_api *api = NULL;

    pthread_mutex_lock(&broker_lock);
    if (load_locked(errp))
        api = &client_api;
    pthread_mutex_unlock(&broker_lock);
    return api;
}

/* agent/broker.h's broker_open for the agent's code in the helper
 * (stepapi.c's contexts): the object's own. */
int broker_open(const char *url,
                const char *token,
                const char *cacert,
                struct broker_conn *c,
                vnib_error_t *errp)
{
    broker_open_fn *open_fn = NULL;
    void *h;

    *c = (struct broker_conn){NULL, NULL, NULL, NULL};
    pthread_mutex_lock(&broker_lock);
    h = load_locked(errp);
    pthread_mutex_unlock(&broker_lock);
    if (!h || resolve(h, BROKER_OPEN_SYMBOL, (void **)&open_fn, errp) < 0)
        return -1;
    return open_fn(url, token, cacert, c, errp);
}
