/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Fabric Manager leader: one replica at a time (the holder of an
 * advisory lock) reconciles the database with the FM's job list, follows
 * up the reserves that timed out (the FM may have completed them late:
 * adopted while the job is active, deleted otherwise) and those left
 * pending by a broker that stopped, and runs hooks.on_reservation_lost
 * for each reservation the FM lost.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "vnib/fmclient.h"
#include "vnib/logger.h"
#include "vnib/spawn.h"
#include "server/broker.h"
#include "server/config.h"
#include "server/hwcoll/hwcoll_int.h"
#include "server/store/store.h"
#include "server/store/store_fm.h"

/* Reservations the leader checks per pass. */
#define WORK_BATCH 32

/* Check one reserve that timed out (or was left pending); returns 0, or
 * -1 when the FM failed.
 */
static int work_one(struct hwcoll *h, json_t *w)
{
    long long id = json_integer_value(json_object_get(w, "id"));
    const char *fm = json_string_value(json_object_get(w, "fm_job_id"));
    const char *st = json_string_value(json_object_get(w, "hwcoll_state"));
    bool active = json_is_true(json_object_get(w, "active"));
    struct fmc_error fail = {.fault = FMC_FAULT_NONE};
    vnib_error_t error = {0};
    enum store_hwset_outcome outcome;
    enum hwstate state;
    char *token = NULL, *hex = NULL;
    int rc = -1;

    if (!fm || !hwstate_parse(st, &state))
        return 0;
    if (state == HWSTATE_RELEASING) {
        if (fmc_job_delete(h->fmc, fm, &fail) < 0)
            goto failed;
        hwcoll_note_result(h, "release", NULL);
        hwcoll_record(h, id, HWSTATE_RELEASED, HWSTATE_CAUSE_NONE, NULL);
        logger_printf(h->b->log, LOG_INFO, NULL, "hwcoll: %s released", fm);
        return 0;
    }
    /* A reserve that timed out, or one left pending by a broker that
     * stopped during the call: did the FM complete it after all?
     */
    if (fmc_job_get(h->fmc, fm, &token, &fail) < 0) {
        if (errno != ENOENT)
            goto failed;
        hwcoll_note_result(h, "check", NULL);
        /* Not there yet is not an answer while the FM may still be
         * working on the POST the request gave up on: look again on
         * later passes until that call cannot land any more (twice the
         * longer of the two timeouts after the time-out); the release
         * of a job whose reservation lands later still finds it then.
         */
        double grace = 2e-3
                       * (double)(h->b->cfg->hwcoll.request_timeout_ms
                                          > h->b->cfg->hwcoll.reserve_timeout_ms
                                      ? h->b->cfg->hwcoll.request_timeout_ms
                                      : h->b->cfg->hwcoll.reserve_timeout_ms);
        if (state == HWSTATE_UNAVAILABLE
            && json_real_value(json_object_get(w, "age_s")) < grace)
            return 0;
        hwcoll_record(h,
                      id,
                      HWSTATE_UNAVAILABLE,
                      HWSTATE_CAUSE_TIMEOUT_NO_RESERVATION,
                      NULL);
        return 0;
    }
    hwcoll_note_result(h, "check", NULL);
    if (active && hwcoll_seal_hex(h, id, token, &hex) == 0
        && store_hwcoll_set(h->b->store,
                            id,
                            HWSTATE_RESERVED,
                            HWSTATE_CAUSE_NONE,
                            NULL,
                            hex,
                            "hwcoll",
                            NULL,
                            &outcome,
                            &error)
               == 0
        && outcome == STORE_HWSET_OK) {
        logger_printf(
            h->b->log,
            LOG_NOTICE,
            NULL,
            "hwcoll: %s: adopted a reservation the FM made after the timeout",
            fm);
        rc = 0;
        goto done;
    }
    /* The job ended (or cannot take it): delete the late reservation. */
    if (fmc_job_delete(h->fmc, fm, &fail) < 0)
        goto failed;
    hwcoll_record(
        h, id, HWSTATE_UNAVAILABLE, HWSTATE_CAUSE_TIMEOUT_LATE_DELETED, NULL);
    logger_printf(
        h->b->log,
        LOG_NOTICE,
        NULL,
        "hwcoll: %s: deleted a reservation the FM made after the job ended",
        fm);
    rc = 0;
    goto done;
failed:
    hwcoll_note_result(h, st, &fail);
    logger_printf(
        h->b->log, LOG_WARNING, NULL, "hwcoll: %s: %s", fm, fail.msg.text);
done:
    free(hex);
    fmc_free_secret(token);
    return rc;
}

/* Check the reserves that timed out, a few at a time. */
static void follow_up_timeouts(struct hwcoll *h)
{
    vnib_error_t error = {0};
    json_t *work = NULL;
    if (store_hwcoll_work(h->b->store, WORK_BATCH, &work, &error) < 0)
        return;
    size_t i;
    json_t *w;
    json_array_foreach (work, i, w) {
        if (work_one(h, w) < 0)
            break;
    }
    json_decref(work);
}

/* Run hooks.on_reservation_lost for one job, without a shell, bounded by
 * hooks.timeout_s.  Its failure is logged, never fatal.
 */
static void run_lost_hook(struct hwcoll *h,
                          const char *job_id,
                          const char *fm_job_id)
{
    const struct config *cfg = h->b->cfg;
    char *copy = NULL, *argv[64];
    int argc = 0;
    char *save = NULL;
    vnib_error_t error = {0};
    int status = 0;
    bool killed;

    if (!cfg->hooks.on_reservation_lost[0]
        || !(copy = strdup(cfg->hooks.on_reservation_lost)))
        return;
    char *subst[64] = {0};
    for (char *a = strtok_r(copy, CONFIG_LIST_SEP, &save); a && argc < 63;
         a = strtok_r(NULL, CONFIG_LIST_SEP, &save)) {
        const char *with = !strcmp(a, "{job_id}")      ? job_id
                           : !strcmp(a, "{fm_job_id}") ? fm_job_id
                                                       : NULL;
        argv[argc] = with ? (subst[argc] = strdup(with)) : a;
        if (!argv[argc])
            goto done;
        argc++;
    }
    argv[argc] = NULL;
    if (argc == 0) /* the command was only separators */
        goto done;
    if (spawn_run(argv, cfg->hooks.timeout_s, &status, &killed, &error) < 0)
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hook on_reservation_lost: %s",
                      error.text);
    else if (killed)
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hook on_reservation_lost for job %s: killed after %lds",
                      job_id,
                      cfg->hooks.timeout_s);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        logger_printf(h->b->log,
                      LOG_WARNING,
                      NULL,
                      "hook on_reservation_lost for job %s failed (status %d)",
                      job_id,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else
        logger_printf(h->b->log,
                      LOG_INFO,
                      NULL,
                      "hook on_reservation_lost ran for job %s",
                      job_id);
done:
    for (int i = 0; i < argc; i++)
        free(subst[i]);
    free(copy);
}

/* Reconcile the database with the FM's job list (leader only). */
static void reconcile(struct hwcoll *h)
{
    struct fmc_error fail = {.fault = FMC_FAULT_NONE};
    vnib_error_t error = {0};
    char listed_at[64];
    char **ids = NULL;
    size_t n = 0;
    json_t *res = NULL;
    int released = 0, lost = 0;
    long long foreign = 0;

    if (store_db_now(h->b->store, listed_at, sizeof(listed_at), &error) < 0)
        goto done;
    if (fmc_job_list(h->fmc, h->prefix, &ids, &n, &fail) < 0) {
        hwcoll_note_result(h, "list", &fail);
        snprintf(error.text, sizeof(error.text), "%s", fail.msg.text);
        goto done;
    }
    hwcoll_note_result(h, "list", NULL);
    if (store_reconcile(
            h->b->store, ids, n, listed_at, "reconciler", &res, &error)
        < 0)
        goto done;
    size_t i;
    json_t *r;
    json_array_foreach (res, i, r) {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        const char *job = json_string_value(json_object_get(r, "job_id"));
        const char *fm = json_string_value(json_object_get(r, "fm_job_id"));
        if (!strcmp(kind, "foreign")) {
            /* FM jobs with our prefix that this database never made:
             * another cluster's (a prefix is not ownership).
             */
            foreign = strtoll(fm ? fm : "0", NULL, 10);
            logger_printf(h->b->log,
                          LOG_DEBUG,
                          NULL,
                          "hwcoll: %lld FM jobs carry the prefix %s- but are "
                          "not this cluster's; left alone",
                          foreign,
                          h->prefix);
        } else if (!strcmp(kind, "lost")) {
            lost++;
            logger_printf(
                h->b->log,
                LOG_WARNING,
                NULL,
                "hwcoll: job %s: the Fabric Manager lost reservation %s",
                job,
                fm);
            run_lost_hook(h, job, fm);
        } else {
            released++;
            logger_printf(
                h->b->log,
                LOG_NOTICE,
                NULL,
                "hwcoll: %s in the Fabric Manager belongs to no active "
                "job: queued for release",
                fm);
        }
    }
    vnib_error_clear(&error);
done:
    pthread_mutex_lock(&h->lock);
    h->rec_at = time(NULL);
    h->rec_released = released;
    h->rec_lost = lost;
    h->rec_foreign = foreign;
    h->lost_total += (unsigned long long)lost;
    h->reconciles++;
    snprintf(h->rec_error, sizeof(h->rec_error), "%s", error.text);
    pthread_mutex_unlock(&h->lock);
    if (released)
        hwcoll_kick(h);
    json_decref(res);
    fmc_free_ids(ids, n);
}

/* The leader: holds an advisory lock on a session of its own; while it
 * does, it reconciles at start, after each FM outage and every
 * hwcoll.reconcile_interval_s, and checks reserves that timed out.
 * Another replica takes over within seconds of the lock's session ending.
 */
void *fmleader_main(void *arg)
{
    struct hwcoll *h = arg;
    struct store_session *ss = store_session_create(h->b->store, NULL);
    int64_t next_reconcile = 0;

    pthread_mutex_lock(&h->lock);
    while (ss && !h->stop) {
        pthread_mutex_unlock(&h->lock);
        bool lead = store_session_lead(ss, h->replica);
        pthread_mutex_lock(&h->lock);
        if (lead && !h->leading) {
            logger_printf(h->b->log,
                          LOG_NOTICE,
                          NULL,
                          "hwcoll: this replica (%s) now leads reconciliation",
                          h->replica);
            h->reconcile_now = true;
        }
        h->leading = lead;
        if (lead && (h->reconcile_now || monotime_ms() >= next_reconcile)) {
            h->reconcile_now = false;
            pthread_mutex_unlock(&h->lock);
            reconcile(h);
            follow_up_timeouts(h);
            pthread_mutex_lock(&h->lock);
            next_reconcile =
                monotime_ms() + h->b->cfg->hwcoll.reconcile_interval_s * 1000;
        } else if (lead) {
            pthread_mutex_unlock(&h->lock);
            follow_up_timeouts(h);
            pthread_mutex_lock(&h->lock);
        }
        if (!hwcoll_nap(h, &h->cond, h->generation, 2000))
            break;
    }
    pthread_mutex_unlock(&h->lock);
    store_session_destroy(ss);
    return NULL;
}
