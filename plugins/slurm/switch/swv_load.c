/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_load: loading vnib-switch-helper.so (see swv_load.h).
 *
 * The one handle and table of the process are the plugin's only state
 * here, under a mutex: Slurm calls the plugin from several threads.
 */
#define _GNU_SOURCE /* dladdr */
#include "swv_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "vnib/trustload.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct swv_helper *loaded;
/* An object of the plugin's, for dladdr to say where the plugin is. */
static const char plugin_anchor;

/* Where the helper is: cfg's vnib_helper, else beside the plugin when it
 * is there, else SWV_HELPER_DEFAULT. */
static void helper_path(const struct swv_config *cfg, char *path, size_t size)
{
    Dl_info info;
    const char *slash;
    struct stat st;

    if (cfg->helper[0] != '\0') {
        snprintf(path, size, "%s", cfg->helper);
        return;
    }
    if (dladdr(&plugin_anchor, &info) && info.dli_fname
        && (slash = strrchr(info.dli_fname, '/'))
        && (size_t)snprintf(path,
                            size,
                            "%.*s/%s",
                            (int)(slash - info.dli_fname),
                            info.dli_fname,
                            SWV_HELPER_NAME)
               < size
        && stat(path, &st) == 0)
        return;
    snprintf(path, size, "%s", SWV_HELPER_DEFAULT);
}

const struct swv_helper *swv_load(const struct swv_config *cfg,
                                  vnib_error_t *errp)
{
    const struct swv_helper *h = NULL;
    char path[PATH_MAX];
    swv_helper_fn *entry;
    void *handle;

    pthread_mutex_lock(&load_lock);
    if (loaded) {
        h = loaded;
        goto cleanup;
    }
    helper_path(cfg, path, sizeof(path));
    if (!(handle = trustload_open(path, errp)))
        goto cleanup;
    *(void **)&entry = dlsym(handle, SWV_HELPER_SYMBOL);
    if (!entry) {
        errno = ELIBBAD;
        errprintf(errp, "%s: no %s in it", path, SWV_HELPER_SYMBOL);
        dlclose(handle);
        goto cleanup;
    }
    h = entry();
    if (!h || h->abi != SWV_HELPER_ABI || h->sizes != SWV_HELPER_SIZES) {
        errno = ELIBBAD;
        errprintf(errp,
                  "%s: from another build of vnibroker than switch_vnib.so "
                  "(ABI %u, want %u): install the two together",
                  path,
                  h ? (unsigned)h->abi : 0u,
                  (unsigned)SWV_HELPER_ABI);
        h = NULL;
        dlclose(handle);
        goto cleanup;
    }
    loaded = h;
cleanup:
    pthread_mutex_unlock(&load_lock);
    return h;
}

const struct swv_helper *swv_loaded(void)
{
    const struct swv_helper *h;

    pthread_mutex_lock(&load_lock);
    h = loaded;
    pthread_mutex_unlock(&load_lock);
    return h;
}
