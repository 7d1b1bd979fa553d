/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_ctld: the controller side of switch/vnib (see swv_ctld.h).
 *
 * Each call makes its own client (slurmctld calls the plugin from several
 * threads; a client is not thread-safe) with slurmctld's scheduler token,
 * read from its file each time so that a rotated token needs no restart;
 * or, in a job's stepmgr, with the job token slurmctld got at job start.
 * Requests are bounded by vnib_timeout_ms: slurmctld holds its job lock
 * meanwhile, so an unreachable broker costs at most that per step.
 */
#include "swv_ctld.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "swv_broker.h"
#include "vnib/client.h"
#include "vnib/monotime.h"
#include "vnib/secfile.h"

/* A client of the broker and the calls to make with it. */
struct ctld_conn {
    const struct swv_client_api *api;
    struct vnib_client *c;
};

static void ctld_close(struct ctld_conn *cc)
{
    if (cc->c)
        cc->api->destroy(cc->c);
    cc->c = NULL;
}

/* Connect *cc to cfg's broker with slurmctld's token (job_token NULL) or
 * a job's token (the stepmgr); 0, or -1 with errno and errp set. */
static int ctld_client(const struct swv_config *cfg,
                       const char *job_token,
                       struct ctld_conn *cc,
                       vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;

    cc->c = NULL;
    if (cfg->url[0] == '\0') {
        errno = EINVAL;
        return errprintf(errp, "SwitchParameters has no vnib_url");
    }
    if (!(cc->api = swv_broker_client(errp)))
        return -1;
    if (job_token != NULL) {
        cc->c = cc->api->create(cfg->url, job_token, errp);
    } else {
        if (secfile_read(cfg->token_file, &buf, &len, errp) < 0)
            return -1;
        while (len > 0 && strchr(" \t\r\n", buf[len - 1]) != NULL)
            buf[--len] = '\0';
        cc->c = cc->api->create(cfg->url, buf, errp);
        secfile_free(buf, len);
    }
    if (cc->c == NULL)
        return -1;
    if ((cfg->cacert[0] != '\0' && cc->api->set_cacert(cc->c, cfg->cacert) < 0)
        || cc->api->set_timeout_ms(cc->c, cfg->timeout_ms) < 0) {
        errprintf(errp, "%s: client settings: %s", cfg->url, strerror(errno));
        ctld_close(cc);
        return -1;
    }
    return 0;
}

/* The broker's error code in a reply ({"error": {"code": ...}}), or "". */
static const char *reply_code(const json_t *reply)
{
    const char *code = json_string_value(
        json_object_get(json_object_get(reply, "error"), "code"));

    return code != NULL ? code : "";
}

/* errno for a refusal: EAGAIN for an exhausted pool (the step may wait
 * and retry), EACCES for a role refused, EINVAL otherwise. */
static int refusal_errno(int status, const json_t *reply)
{
    if (status == 503 && strcmp(reply_code(reply), "vni_pool_exhausted") == 0)
        return EAGAIN;
    if (status == 401 || status == 403)
        return EACCES;
    return EINVAL;
}

/* The id of the reservation a reserve call answered with (200 or 201);
 * else -1 with errno from refusal_errno and errp naming what (a job or
 * a step) was refused. */
static int reserved_id(int status,
                       const json_t *reply,
                       const char *what,
                       long long *idp,
                       vnib_error_t *errp)
{
    if (status != 200 && status != 201) {
        errno = refusal_errno(status, reply);
        return errprintf(errp,
                         "%s: the broker refused the reservation (%d %s)",
                         what,
                         status,
                         reply_code(reply));
    }
    *idp = (long long)json_integer_value(json_object_get(reply, "id"));
    return 0;
}

static int reserve_job(struct ctld_conn *cc,
                       const struct swv_step_req *req,
                       const struct swv_network *net,
                       long long *idp,
                       struct swv_jobdata *jd,
                       vnib_error_t *errp)
{
    const char *token;
    char name[256] = "";
    struct passwd pw, *pwp = NULL;
    char pwbuf[4096];
    struct vnib_reserve r = {
        .job_id = req->job_id,
        .uid = req->uid,
        .user = req->user,
        .nodes = req->job_nodes,
        .vni_count = net->vnis,
        .hwcoll = net->hwcoll[0] != '\0' ? net->hwcoll : NULL,
    };
    json_t *reply = NULL;
    char what[64];
    int status, rc = -1;

    if (r.user == NULL || r.user[0] == '\0') {
        if (getpwuid_r((uid_t)req->uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0
            && pwp != NULL)
            snprintf(name, sizeof(name), "%s", pwp->pw_name);
        else
            snprintf(name, sizeof(name), "%u", (unsigned)req->uid);
        r.user = name;
    }
    snprintf(what, sizeof(what), "job %s", req->job_id);
    status = cc->api->reserve(cc->c, &r, &reply, errp);
    if (status < 0 || reserved_id(status, reply, what, idp, errp) < 0)
        goto cleanup;
    if (jd != NULL) {
        token = json_string_value(json_object_get(reply, "job_token"));
        if (token == NULL || strlen(token) >= sizeof(jd->token)) {
            errno = EPROTO;
            errprintf(errp,
                      "%s: the broker gave no job token (is "
                      "auth.node_key_file set?)",
                      what);
            goto cleanup;
        }
        jd->job_resv = *idp;
        snprintf(jd->token, sizeof(jd->token), "%s", token);
    }
    rc = 0;
cleanup:
    json_decref(reply);
    return rc;
}

/* When the broker last said it issues no leases (monotonic ms, 0 never):
 * it is not asked for one again for LEASE_RETRY_MS. */
#define LEASE_RETRY_MS 60000
static _Atomic int64_t lease_disabled_at;

static int reserve_step(struct ctld_conn *cc,
                        const struct swv_config *cfg,
                        const struct swv_step_req *req,
                        const struct swv_network *net,
                        struct swv_step_resv *out,
                        vnib_error_t *errp)
{
    int64_t off = atomic_load(&lease_disabled_at), now = monotime_ms();
    struct vnib_step_reserve r = {
        .job_id = req->job_id,
        .step_id = req->step_id,
        .nodes = req->step_nodes,
        .vni_count = net->step_vnis,
        .lease = cfg->lease && (off == 0 || now - off >= LEASE_RETRY_MS),
    };
    const char *lease;
    json_t *reply = NULL;
    char what[64];
    int status, rc = -1;

    snprintf(what, sizeof(what), "step %s.%s", req->job_id, req->step_id);
    status = cc->api->step_reserve(cc->c, &r, &reply, errp);
    if (r.lease && status == 400
        && strcmp(reply_code(reply), "lease_disabled") == 0) {
        /* Nothing was made: the same reserve without a lease. */
        atomic_store(&lease_disabled_at, now > 0 ? now : 1);
        out->lease_disabled = 1;
        json_decref(reply);
        reply = NULL;
        r.lease = false;
        status = cc->api->step_reserve(cc->c, &r, &reply, errp);
    }
    if (status < 0
        || reserved_id(status, reply, what, &out->step_resv, errp) < 0)
        goto cleanup;
    lease = json_string_value(json_object_get(reply, "lease"));
    if (r.lease && lease == NULL) {
        errno = EPROTO;
        errprintf(errp, "%s: the broker's answer has no lease", what);
        goto cleanup;
    }
    if (lease != NULL && (out->lease = strdup(lease)) == NULL) {
        errno = ENOMEM;
        errprintf(errp, "%s: out of memory", what);
        goto cleanup;
    }
    rc = 0;
cleanup:
    json_decref(reply);
    return rc;
}

/* Is e the errno of a transport failure (no HTTP answer; see client.h)? */
static int unreachable(int e)
{
    return e == ECONNREFUSED || e == ETIMEDOUT || e == EIO || e == EPROTO;
}

/* What an unreachable broker means for a step or a job: 0 and out
 * unisolated under vnib_outage=open, else -1 with errno EHOSTUNREACH;
 * any other failure stays as it is. */
static int outage(const struct swv_config *cfg, int *unisolatedp)
{
    if (!unreachable(errno))
        return -1;
    if (cfg->outage == SWV_OUTAGE_OPEN) {
        *unisolatedp = 1;
        return 0;
    }
    errno = EHOSTUNREACH;
    return -1;
}

int swv_ctld_step_begin(const struct swv_config *cfg,
                        const struct swv_step_req *req,
                        const struct swv_network *net,
                        struct swv_step_resv *out,
                        vnib_error_t *errp)
{
    struct ctld_conn cc = {0};
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (ctld_client(cfg, req->job_token, &cc, errp) < 0)
        goto cleanup;
    errno = 0;
    if (req->job_token != NULL)
        out->job_resv = req->job_resv;
    if ((req->job_token == NULL
         && reserve_job(&cc, req, net, &out->job_resv, NULL, errp) < 0)
        || reserve_step(&cc, cfg, req, net, out, errp) < 0) {
        free(out->lease);
        out->lease = NULL;
        if (outage(cfg, &out->unisolated) == 0) {
            out->job_resv = out->step_resv = 0;
            rc = 0;
        }
        goto cleanup;
    }
    rc = 0;
cleanup:
    ctld_close(&cc);
    return rc;
}

int swv_ctld_job_begin(const struct swv_config *cfg,
                       const struct swv_step_req *req,
                       const struct swv_network *net,
                       struct swv_jobdata *out,
                       int *unisolatedp,
                       vnib_error_t *errp)
{
    struct ctld_conn cc = {0};
    long long id = 0;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    *unisolatedp = 0;
    if (ctld_client(cfg, NULL, &cc, errp) < 0)
        goto cleanup;
    errno = 0;
    if (reserve_job(&cc, req, net, &id, out, errp) < 0) {
        memset(out, 0, sizeof(*out));
        rc = outage(cfg, unisolatedp);
        goto cleanup;
    }
    rc = 0;
cleanup:
    ctld_close(&cc);
    return rc;
}

int swv_ctld_step_end(const struct swv_config *cfg,
                      const char *job_token,
                      const char *job_id,
                      const char *step_id,
                      vnib_error_t *errp)
{
    struct ctld_conn cc = {0};
    json_t *reply = NULL;
    int status, rc = -1;

    if (ctld_client(cfg, job_token, &cc, errp) < 0)
        goto cleanup;
    status = cc.api->step_release(cc.c, job_id, step_id, false, &reply, errp);
    if (status < 0)
        goto cleanup;
    if (status != 200 && status != 202 && status != 404) {
        errno = EINVAL;
        errprintf(errp,
                  "step %s.%s: the broker refused the release (%d %s)",
                  job_id,
                  step_id,
                  status,
                  reply_code(reply));
        goto cleanup;
    }
    rc = 0;
cleanup:
    json_decref(reply);
    ctld_close(&cc);
    return rc;
}

int swv_ctld_pool_free(const struct swv_config *cfg,
                       long *freep,
                       long *per_job_defaultp,
                       vnib_error_t *errp)
{
    struct ctld_conn cc = {0};
    json_t *reply = NULL, *f, *d;
    int status, rc = -1;

    if (ctld_client(cfg, NULL, &cc, errp) < 0)
        goto cleanup;
    status = cc.api->request(cc.c, "GET", "/v1/pool", NULL, &reply, errp);
    if (status < 0)
        goto cleanup;
    f = json_object_get(reply, "free");
    d = json_object_get(reply, "per_job_default");
    if (status != 200 || !json_is_integer(f) || !json_is_integer(d)) {
        errno = EPROTO;
        errprintf(errp, "GET /v1/pool: HTTP %d without free counts", status);
        goto cleanup;
    }
    *freep = (long)json_integer_value(f);
    *per_job_defaultp = (long)json_integer_value(d);
    rc = 0;
cleanup:
    json_decref(reply);
    ctld_close(&cc);
    return rc;
}

int swv_ctld_job_end(const struct swv_config *cfg,
                     const char *job_id,
                     vnib_error_t *errp)
{
    struct ctld_conn cc = {0};
    vnib_error_t why = {0}, serr = {0};
    json_t *reply = NULL;
    int status = -1;

    if (ctld_client(cfg, NULL, &cc, &why) == 0) {
        status = cc.api->release(cc.c, job_id, 0, false, &reply, &why);
        if (status >= 400 && status != 404)
            errprintf(&why,
                      "the broker refused the release (%d %s)",
                      status,
                      reply_code(reply));
    }
    json_decref(reply);
    ctld_close(&cc);
    if (status == 200 || status == 202 || status == 404)
        return 0;
    if (swv_ctld_spool(cfg->spool, job_id, why.text, &serr) < 0) {
        errprintf(errp,
                  "job %s: RELEASE FAILED (%s) and not spooled: %s",
                  job_id,
                  why.text,
                  serr.text);
        return -1;
    }
    errprintf(errp,
              "job %s: release failed (%s); spooled in %s/%s",
              job_id,
              why.text,
              cfg->spool,
              job_id);
    return 1;
}

/* Make dir (0700) if missing; refuse one others may write. */
static int spool_dir(const char *dir, vnib_error_t *errp)
{
    struct stat st;
    char parent[SWV_PATH_MAX], *slash;

    if (mkdir(dir, 0700) < 0 && errno == ENOENT) {
        /* one missing level above, as `mkdir -p` would for the default */
        snprintf(parent, sizeof(parent), "%s", dir);
        if ((slash = strrchr(parent, '/')) != NULL && slash != parent) {
            *slash = '\0';
            (void)mkdir(parent, 0755);
        }
        (void)mkdir(dir, 0700);
    }
    if (lstat(dir, &st) < 0)
        return errprintf(errp, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return errprintf(errp, "%s is not a directory", dir);
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        errno = EPERM;
        return errprintf(errp, "%s is writable by others; refusing", dir);
    }
    return 0;
}

int swv_ctld_spool(const char *dir,
                   const char *job_id,
                   const char *error,
                   vnib_error_t *errp)
{
    char tmp[SWV_PATH_MAX + 64], dst[SWV_PATH_MAX + 32], when[32];
    const char *p;
    struct tm tm;
    time_t now = time(NULL);
    FILE *f = NULL;
    int fd = -1, rc = -1;

    if (job_id[0] == '\0' || strspn(job_id, "0123456789") != strlen(job_id)
        || strlen(job_id) > 20) {
        errno = EINVAL;
        return errprintf(errp, "job id '%s' is not a number", job_id);
    }
    if (spool_dir(dir, errp) < 0)
        return -1;
    snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", dir, job_id, (long)getpid());
    snprintf(dst, sizeof(dst), "%s/%s", dir, job_id);
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if ((fd = open(
             tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600))
        < 0) {
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if ((f = fdopen(fd, "w")) == NULL) {
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    fd = -1;
    fprintf(f, "job %s\nfailed_at %s\nerror ", job_id, when);
    for (p = error; *p != '\0'; p++) /* one line */
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
    if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if (fclose(f) != 0) {
        f = NULL;
        errprintf(errp, "%s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    f = NULL;
    if (rename(tmp, dst) < 0) {
        errprintf(errp, "%s: %s", dst, strerror(errno));
        goto cleanup;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(fd);
        close(fd);
        fd = -1;
    }
    rc = 0;
cleanup:
    if (f != NULL)
        fclose(f);
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}
