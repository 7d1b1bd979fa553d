/* SPDX-License-Identifier: GPL-2.0-or-later */
/* history: a load client that records everything and checks the history.
 *
 * N client threads (default 16) each act as a scheduler and its nodes for
 * D seconds against one or more broker replicas: reserve a fresh job
 * (1-4 VNIs on a 1-2 node hostlist), report "created" from each node
 * (the node's own HMAC token), release, report "destroyed" (which ends
 * the quarantine).  A request that gets no reply or a 5xx other than
 * 503 vni_pool_exhausted is sent again, with the same parameters, to the
 * next replica after a short sleep, as a scheduler would; a reserve that
 * finally fails after such an attempt is followed by a release, since an
 * unseen attempt may have committed.  Every attempt is recorded (hrec.h).
 *
 * At the end the client waits --settle seconds (statements orphaned by a
 * killed replica finish), reads the audit trail, the live reservations
 * and the pool, and hcheck.c prints PASS or FAIL per invariant.  The exit
 * status is 0 only when every invariant holds (1: an invariant failed,
 * 2: usage or set-up error).  With --bench it prints `make bench` rows
 * instead (pairs/s, reserve p99, 503s and deadlocks beside their targets)
 * with the invariants as "#" detail lines, and exits 0 unless the harness
 * broke.  --log writes the whole history as JSON lines.  With --hwcoll
 * the jobs ask for hardware collectives, and every session token a reserve
 * reports is read back and compared with what the broker keeps.
 *
 * With --job-nodes N each job has N nodes (up to HREC_MAX_NODES) that
 * report as a job's agents do, all at once (hnodes.c: each node on a
 * connection of its own): creating, then created, and after the release
 * destroyed, so that the broker writes them in groups.  The checker then
 * also compares what every node was told with the node_reports the
 * broker keeps (GET /v1/reservations/{job}/nodes).  With --lease too the
 * jobs reserve with "lease": true, as a job that starts from a lease:
 * every node holds from the reserve on (presumed, docs/node-path.md) and
 * reports only destroyed, and the checker holds every quarantine end to
 * every node of the reservation.  With --stop-file the load ends early
 * once that file exists, so a harness can end it a set time after an
 * event it watches (a failover's recovery) rather than guess a length.
 *
 * With --steps each job, once reserved and its nodes' created reports in,
 * acts as its own step manager (Slurm's stepmgr): with the job token of
 * its reserve's reply, never the scheduler's, it reserves 1-2 steps with
 * VNIs of their own (jobs then take 1-2 VNIs, each step 1-2, within the
 * 4 a CXI service holds), reads each back, and ends each before the job
 * is released (hsteps.c).  The checker then holds the steps to their own
 * invariants as well (hstepcheck.h), and counts a step's VNIs as held from
 * its acknowledged reserve until its end.
 *
 * With --deadline-ms MIN-MAX some jobs send their reserves with a short
 * Vnib-Deadline-Ms, so that some expire queued for a group commit; a 503
 * deadline_exceeded is then a certain "nothing was done", and the checker
 * holds the broker to it (hdeadline.h).  The command line is read in
 * hargs.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "tests/stress/hcheck.h"
#include "tests/stress/hdeadline.h"
#include "tests/stress/history.h"
#include "tests/stress/hnodes.h"
#include "tests/stress/hrec.h"
#include "tests/stress/hsteps.h"
#include "tests/stress/hview.h"
#include "vnib/client.h"
#include "vnib/httpc.h"
#include "vnib/secfile.h"

/* ---- small helpers ------------------------------------------------------ */

uint64_t history_rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

void history_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void b64url(const unsigned char *in, size_t n, char *out)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = a[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = a[v & 63];
    }
    out[o] = '\0';
}

/* A node's token: vnibnode.NODE.base64url(HMAC-SHA256(key,
 * "vnib-node:NODE")), computed here rather than by the broker's library.
 */
static int node_token(const struct run *run, const char *node, char *out,
                      size_t size)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    char msg[HREC_NODE_SIZE + 16], enc[EVP_MAX_MD_SIZE * 2];

    snprintf(msg, sizeof(msg), "vnib-node:%s", node);
    if (!HMAC(EVP_sha256(), run->key, (int)run->key_len,
              (const unsigned char *)msg, strlen(msg), mac, &maclen))
        return -1;
    b64url(mac, maclen, enc);
    int n = snprintf(out, size, "vnibnode.%s.%s", node, enc);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* ---- HTTP ------------------------------------------------------------- */

long history_attempt(struct client *c, struct hrec *r, const char *method,
                     const char *path, const char *body, const char *token)
{
    char url[512], auth[512]; /* a node's token or a job's */
    char dl[64];
    struct curl_slist *h = NULL, *h2;
    CURL *e = c->curl;

    snprintf(url, sizeof(url), "%s%s", c->run->urls[r->url], path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    snprintf(dl, sizeof(dl), "%s: %d", VNIB_DEADLINE_HEADER, r->deadline_ms);
    c->reply.len = 0;
    c->reply.too_large = false;
    if (c->reply.buf)
        c->reply.buf[0] = '\0';
    c->errbuf[0] = '\0';
    if (!(h = curl_slist_append(NULL, auth))
        || !(h2 = curl_slist_append(h, "Content-Type: application/json"))
        || (r->deadline_ms > 0 && !(h2 = curl_slist_append(h2, dl)))) {
        curl_slist_free_all(h);
        snprintf(r->transport, sizeof(r->transport), "out of memory");
        return 0;
    }
    h = h2;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(e,
                     CURLOPT_CUSTOMREQUEST,
                     strcmp(method, body ? "POST" : "GET") ? method : NULL);
    r->send_mono = hrec_now(CLOCK_MONOTONIC);
    r->send_real = hrec_now(CLOCK_REALTIME);
    CURLcode rc = curl_easy_perform(e);
    r->recv_mono = hrec_now(CLOCK_MONOTONIC);
    r->recv_real = hrec_now(CLOCK_REALTIME);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        snprintf(r->transport, sizeof(r->transport), "%.63s",
                 c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        return r->status = 0;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status < 200 || r->status >= 300)
        hrec_parse_error(r, c->reply.buf, c->reply.len);
    return r->status;
}

static bool worth_retrying(const struct hrec *r)
{
    if (r->status == 0)
        return true;
    return r->status >= 500
           && !(r->status == 503 && !strcmp(r->code, "vni_pool_exhausted"));
}

long history_request(struct client *c, uint64_t job, enum hrec_op op,
                     const char *node, const char *step, const char *method,
                     const char *path, const char *body, const char *token,
                     int64_t *first_send, bool *ambiguous, struct hrec **last)
{
    const struct run *run = c->run;
    struct hrec *r = NULL;
    long st = 0;
    int start = c->index < 0 ? 0 : c->index % run->nurls;

    *ambiguous = false;
    for (int a = 0; a < run->attempts; a++) {
        if (a > 0)
            history_sleep_ms(20L << (a < 4 ? a - 1 : 3));
        if (!(r = hrec_add(&c->log))) {
            c->failed = 1;
            break;
        }
        r->thread = c->index;
        r->attempt = a;
        r->op = op;
        r->url = (start + a) % run->nurls;
        r->job = job;
        snprintf(r->node, sizeof(r->node), "%s", node ? node : "");
        snprintf(r->step, sizeof(r->step), "%s", step ? step : "");
        if (op == HREC_RESERVE && job < c->log.njobs)
            r->deadline_ms = hdeadline_ms(c, &c->log.jobs[job]);
        st = history_attempt(c, r, method, path, body, token);
        if (a == 0 && first_send)
            *first_send = r->send_mono;
        if (!worth_retrying(r))
            break;
        /* 503 deadline_exceeded: certainly not done (the broker's
         * promise, which hdeadline.c checks) */
        if (hrec_expired_where(r)) {
            if (hdeadline_expired(c, job, r))
                break;
            continue;
        }
        *ambiguous = true;
    }
    *last = r;
    return r ? st : -1;
}

/* ---- one job ----------------------------------------------------------- */

void history_parse_reservation(const char *buf, long long *id, int *vnis,
                               int *n)
{
    json_t *j = json_loads(buf ? buf : "", 0, NULL);
    json_t *v;
    size_t i;

    *id = json_integer_value(json_object_get(j, "id"));
    *n = 0;
    json_array_foreach(json_object_get(j, "vnis"), i, v)
    {
        if (*n < HREC_MAX_VNIS)
            vnis[(*n)++] = (int)json_integer_value(v);
    }
    json_decref(j);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* --hwcoll: the reserve reply in c->reply.buf told the scheduler its
 * multicast reservation; when it said "reserved", what the broker keeps
 * (read back with GET, from any replica) must be the same session token.
 * A reply that said "reserved" without a token is a mismatch too.
 */
static void check_hwcoll(struct client *c, const char *job, const char *path)
{
    json_t *told = json_loadb(c->reply.buf ? c->reply.buf : "",
                              c->reply.len, 0, NULL);
    json_t *hw = json_object_get(told, "hwcoll");
    const char *state = json_string_value(json_object_get(hw, "state"));
    const char *token = json_string_value(json_object_get(hw, "session_token"));
    char *want = token ? strdup(token) : NULL;
    const char *why = NULL;

    if (!state || strcmp(state, "reserved"))
        goto done;
    c->hw_told++;
    if (!want) {
        why = "replied reserved without a session token";
        goto done;
    }
    json_t *got = hview_get_json(c, path, c->run->sched);
    if (!got)
        goto done; /* not read back: counted as told, not checked */
    c->hw_checked++;
    json_t *ghw = json_object_get(got, "hwcoll");
    const char *gstate = json_string_value(json_object_get(ghw, "state"));
    const char *gtoken =
        json_string_value(json_object_get(ghw, "session_token"));
    if (!gstate || strcmp(gstate, "reserved"))
        why = "read back in another hwcoll state";
    else if (!gtoken || strcmp(gtoken, want))
        why = "read back with another session token";
    json_decref(got);
done:
    if (why && c->hw_mismatch++ == 0)
        snprintf(c->hw_bad, sizeof(c->hw_bad), "%s: %s", job, why);
    free(want);
    json_decref(told);
}

/* --job-nodes: every node of job ji reports cxi at once (hnodes.c), op
 * naming it in the records; each node's first attempt's send time in
 * first_send.  How far each node got goes into the job's told and tried.
 * Returns the number of nodes not answered 200, or -1 when the client
 * broke.
 */
static int job_reports(struct client *c, uint64_t ji, enum hrec_op op,
                       const char *cxi, const char *path, long long rid,
                       const char *const *tokens, int64_t *first_send)
{
    const struct run *run = c->run;
    struct hjob *j = &c->log.jobs[ji]; /* jobs do not move while it runs */
    enum hrec_cxi k = hrec_cxi_of(cxi);
    long status[HREC_MAX_NODES];
    bool amb[HREC_MAX_NODES];
    char body[128];
    int failed = 0;

    snprintf(body, sizeof(body), "{\"cxi\":\"%s\",\"reservation_id\":%lld}",
             cxi, rid);
    struct hnodes_call call = {.urls = run->urls,
                               .nurls = run->nurls,
                               .first_url = c->index % run->nurls,
                               .attempts = run->attempts,
                               .thread = c->index,
                               .job = ji,
                               .op = op,
                               .path = path,
                               .body = body,
                               .n = j->nnodes,
                               .nodes = (const char (*)[HREC_NODE_SIZE])j->nodes,
                               .tokens = tokens,
                               .status = status,
                               .ambiguous = amb,
                               .first_send = first_send};
    if (hnodes_run(c->hn, &c->log, &call) < 0)
        return -1;
    for (int i = 0; i < j->nnodes; i++) {
        if (j->tried[i] < k)
            j->tried[i] = (unsigned char)k;
        if (status[i] == 200 && j->told[i] < k)
            j->told[i] = (unsigned char)k;
        failed += status[i] != 200;
    }
    return failed;
}

/* --job-nodes: the rest of job ji's life once reserved (reservation rid):
 * its nodes report creating, then created (not with --lease: they start
 * from the lease and tell the broker nothing), the job is released, its
 * nodes report destroyed.  -1 when the client broke.
 */
static int run_job_nodes(struct client *c, uint64_t ji, const char *path,
                         long long rid, const char *const *tokens)
{
    const struct run *run = c->run;
    struct hrec *last = NULL;
    int64_t t_send = 0, d_send[HREC_MAX_NODES];
    bool amb = false;
    int bad;

    if (!run->lease) {
        if ((bad = job_reports(c, ji, HREC_CREATING, "creating", path, rid,
                               tokens, d_send)) < 0)
            return -1;
        c->log.jobs[ji].abandoned |= bad > 0;
        if ((bad = job_reports(c, ji, HREC_CREATED, "created", path, rid,
                               tokens, d_send)) < 0)
            return -1;
        c->log.jobs[ji].abandoned |= bad > 0;
    }
    long st = history_request(c, ji, HREC_RELEASE, NULL, NULL, "DELETE",
                              path, NULL, run->sched, &t_send, &amb, &last);
    if (st < 0)
        return -1;
    struct hjob *j = &c->log.jobs[ji];
    if (st != 200 && st != 202) {
        j->abandoned = true;
        j->live_until = t_send;
        return 0;
    }
    c->pairs++;
    if ((bad = job_reports(c, ji, HREC_DESTROYED, "destroyed", path, rid,
                           tokens, d_send)) < 0)
        return -1;
    j = &c->log.jobs[ji];
    j->abandoned |= bad > 0;
    /* a node that may hold services (its creating was sent; with a
     * lease, every node) holds the VNIs until its destroyed report is
     * in: not before that was sent */
    int64_t until = t_send;
    for (int i = 0; i < j->nnodes; i++)
        if (run->lease || j->tried[i] >= HREC_IS_CREATING)
            until = max64(until, d_send[i]);
    j->live_until = until;
    return 0;
}

/* --steps: the job token of the reserve reply in c->reply.buf, which the
 * job's steps are reserved with (never written to the log: a secret).  -1
 * when the reply has none (the broker has no node key): the client cannot
 * run.
 */
static int job_token(struct client *c, const char *job, char *out,
                     size_t size)
{
    json_t *told = json_loadb(c->reply.buf ? c->reply.buf : "",
                              c->reply.len, 0, NULL);
    const char *tok =
        json_string_value(json_object_get(told, "job_token"));
    int n = tok ? snprintf(out, size, "%s", tok) : -1;

    json_decref(told);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr,
                "history: the reserve of %s answered without a usable "
                "job_token (has the broker a node key?)\n",
                job);
        return -1;
    }
    return 0;
}

/* Reserve, report created, (--steps: reserve the job's steps and end
 * them, with the job token), release, report destroyed.  Returns -1 only
 * when the client itself broke (out of memory, or no job token).
 */
static int run_job(struct client *c, uint64_t seq)
{
    const struct run *run = c->run;
    char path[256], body[512], hostlist[96];
    char tokens[HREC_MAX_NODES][NODE_TOKEN_SIZE];
    char jtoken[HSTEPS_TOKEN_SIZE] = "";
    struct hrec *last = NULL;
    bool amb = false, created[HREC_MAX_NODES] = {false};
    int64_t t_send = 0;
    long st;
    struct hjob *j = hrec_add_job(&c->log);

    if (!j)
        return -1;
    uint64_t ji = c->log.njobs - 1;
    snprintf(j->job, sizeof(j->job), "%s%d-%" PRIu64, run->job_prefix,
             c->index, seq);
    j->thread = c->index;
    /* --steps: 1-2, so that the steps' own VNIs fit beside the job's in
     * the HREC_MAX_VNIS a CXI service holds */
    j->vni_count = run->vni_count ? run->vni_count
                   : run->steps   ? 1 + (int)(history_rng(&c->rng) % 2)
                                  : 1 + (int)(history_rng(&c->rng) % 4);
    j->nnodes = run->job_nodes ? run->job_nodes
                : run->hwcoll  ? 2
                : run->reports ? 1 + (int)(history_rng(&c->rng) % 2)
                               : 1;
    j->live_until = INT64_MAX;
    hdeadline_job(c, j);
    int base = c->index * HREC_MAX_NODES;
    for (int i = 0; i < j->nnodes; i++) {
        snprintf(j->nodes[i], sizeof(j->nodes[i]), "%s%d", run->nodes_prefix,
                 base + i);
        if (run->reports
            && node_token(run, j->nodes[i], tokens[i], sizeof(tokens[i])) < 0)
            return -1;
    }
    if (j->nnodes == 1)
        snprintf(hostlist, sizeof(hostlist), "%s", j->nodes[0]);
    else
        snprintf(hostlist, sizeof(hostlist), "%s[%d-%d]", run->nodes_prefix,
                 base, base + j->nnodes - 1);
    snprintf(body, sizeof(body),
             "{\"job_id\":\"%s\",\"uid\":1000,\"user\":\"history\","
             "\"nodes\":\"%s\",\"vni_count\":%d,\"hwcoll\":\"%s\"%s}",
             j->job, hostlist, j->vni_count, run->hwcoll ? "on" : "off",
             run->lease ? ",\"lease\":true" : "");
    char job[HREC_JOB_SIZE];
    snprintf(job, sizeof(job), "%s", j->job);
    st = history_request(c, ji, HREC_RESERVE, NULL, NULL, "POST",
                         "/v1/reservations", body, run->sched, NULL, &amb,
                         &last);
    if (st < 0)
        return -1;
    j->ambiguous = amb;
    snprintf(path, sizeof(path), "/v1/reservations/%s", job);
    if (st != 200 && st != 201) {
        j->refused = st == 503 && !strcmp(last->code, "vni_pool_exhausted");
        /* given up after a deadline_exceeded, which wrote nothing: no
         * release, and nothing may be left (not abandoned) */
        bool expired = st == 503 && hrec_expired_where(last);
        if (amb) {
            /* an unseen attempt may hold VNIs: release it as a scheduler
             * would after a failed job start */
            st = history_request(c, ji, HREC_CLEANUP, NULL, NULL, "DELETE",
                                 path, NULL, run->sched, NULL, &amb, &last);
            if (st != 200 && st != 202 && st != 404)
                j->abandoned = true;
        } else if (!j->refused && !expired) {
            j->abandoned = true;
        }
        history_sleep_ms(j->refused ? 20 + (long)(history_rng(&c->rng) % 30) : 5);
        return st < 0 ? -1 : 0;
    }
    j->acked = true;
    j->acked_status = st;
    j->live_from = last->recv_mono;
    history_parse_reservation(c->reply.buf, &j->resv_id, j->vnis, &j->nvnis);
    if (run->steps && job_token(c, job, jtoken, sizeof(jtoken)) < 0)
        return -1;
    long long rid = j->resv_id;
    int nnodes = j->nnodes;
    if (run->hwcoll)
        check_hwcoll(c, job, path);
    if (run->job_nodes) {
        const char *toks[HREC_MAX_NODES];
        for (int i = 0; i < nnodes; i++)
            toks[i] = tokens[i];
        return run_job_nodes(c, ji, path, rid, toks);
    }

    for (int i = 0; run->reports && i < nnodes; i++) {
        char npath[256];
        snprintf(npath, sizeof(npath), "%.200s/nodes/%.31s", path,
                 j->nodes[i]);
        snprintf(body, sizeof(body),
                 "{\"cxi\":\"created\",\"reservation_id\":%lld}", rid);
        st = history_request(c, ji, HREC_CREATED, j->nodes[i], NULL, "PUT",
                             npath, body, tokens[i], NULL, &amb, &last);
        if (st < 0)
            return -1;
        created[i] = st == 200;
        if (!created[i])
            j->abandoned = true;
    }
    if (run->steps && hsteps_run(c, ji, hostlist, jtoken) < 0)
        return -1;
    j = &c->log.jobs[ji];
    st = history_request(c, ji, HREC_RELEASE, NULL, NULL, "DELETE", path,
                         NULL, run->sched, &t_send, &amb, &last);
    if (st < 0)
        return -1;
    if (run->steps)
        hsteps_job_released(c, ji, t_send, st == 200 || st == 202);
    int64_t until = t_send;
    if (st != 200 && st != 202) {
        j->abandoned = true;
        j->live_until = until;
        return 0;
    }
    c->pairs++;
    for (int i = 0; run->reports && i < nnodes; i++) {
        char npath[256];
        int64_t d_send = 0;
        snprintf(npath, sizeof(npath), "%.200s/nodes/%.31s", path,
                 j->nodes[i]);
        snprintf(body, sizeof(body),
                 "{\"cxi\":\"destroyed\",\"reservation_id\":%lld}", rid);
        st = history_request(c, ji, HREC_DESTROYED, j->nodes[i], NULL,
                             "PUT", npath, body, tokens[i], &d_send, &amb,
                             &last);
        if (st < 0)
            return -1;
        /* a node that said created holds the VNIs until its destroyed
         * report is in: not before that report was sent */
        if (created[i])
            until = max64(until, d_send);
        if (st != 200)
            j->abandoned = true;
    }
    j->live_until = until;
    return 0;
}

static int client_init(struct client *c, const struct run *run, int index)
{
    memset(c, 0, sizeof(*c));
    c->run = run;
    c->index = index;
    c->rng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)(index + 2) * 2654435761ULL)
             ^ (uint64_t)hrec_now(CLOCK_REALTIME);
    if (!c->rng)
        c->rng = 1;
    if (!(c->curl = curl_easy_init()))
        return -1;
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
    c->reply.max = REPLY_MAX;
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, httpc_write_cb);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->reply);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 20000L);
    if (run->job_nodes && index >= 0 && !(c->hn = hnodes_create()))
        return -1;
    return 0;
}

static void client_cleanup(struct client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    hnodes_destroy(c->hn);
    httpc_reply_free(&c->reply);
    hrec_log_cleanup(&c->log);
}

static void *worker(void *arg)
{
    struct client *c = arg;
    uint64_t seq = 0;

    while (hrec_now(CLOCK_MONOTONIC) < c->run->stop_mono && !c->failed
           && !(c->run->stop_file && access(c->run->stop_file, F_OK) == 0))
        if (run_job(c, ++seq) < 0)
            c->failed = 1;
    c->end_mono = hrec_now(CLOCK_MONOTONIC);
    return NULL;
}

/* ---- main -------------------------------------------------------------- */

static int write_log(const struct run *run, const struct client *cs)
{
    FILE *f = fopen(run->log_path, "w");
    int rc = 0;

    if (!f) {
        fprintf(stderr, "history: %s: %s\n", run->log_path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < run->threads && rc == 0; i++)
        rc = hrec_write_json(f, &cs[i].log, run->urls);
    if (fclose(f) != 0 || rc < 0) {
        fprintf(stderr, "history: writing %s failed\n", run->log_path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct run run = {.threads = 16,
                      .seconds = 30,
                      .nodes_prefix = "hn",
                      .settle = 2,
                      .attempts = 12,
                      .reports = true,
                      .deadline_pct = 50};
    struct client *cs = NULL, final = {0};
    pthread_t *tids = NULL;
    json_t *events = NULL, *live = NULL, *pool = NULL;
    struct hcheck_tally tally;
    int started = 0, rc = 2;

    snprintf(run.job_prefix, sizeof(run.job_prefix), "h%ld-", (long)getpid());
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return 2;
    if (history_parse_args(argc, argv, &run) < 0)
        goto done;
    if (!(cs = calloc((size_t)run.threads, sizeof(*cs)))
        || !(tids = calloc((size_t)run.threads, sizeof(*tids))))
        goto done;
    for (int i = 0; i < run.threads; i++)
        if (client_init(&cs[i], &run, i) < 0)
            goto done;
    if (client_init(&final, &run, -1) < 0)
        goto done;
    run.start_mono = hrec_now(CLOCK_MONOTONIC);
    run.stop_mono = run.start_mono + (int64_t)(run.seconds * 1e9);
    for (; started < run.threads; started++)
        if (pthread_create(&tids[started], NULL, worker, &cs[started]) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (started < run.threads) {
        fprintf(stderr, "history: cannot start thread %d\n", started);
        goto done;
    }
    int64_t end = run.start_mono;
    for (int i = 0; i < run.threads; i++) {
        if (cs[i].failed) {
            fprintf(stderr, "history: client %d broke (out of memory)\n", i);
            goto done;
        }
        end = max64(end, cs[i].end_mono);
    }
    double elapsed = (double)(end - run.start_mono) / 1e9;

    if (!run.bench)
        printf("history: %d threads for %.1f s against %d replica(s); "
               "settling %.1f s\n",
               run.threads, elapsed, run.nurls, run.settle);
    history_sleep_ms((long)(run.settle * 1000));
    if (run.admin) {
        events = json_array();
        if (!events || hview_get_pages(&final, "/v1/events", "events", run.admin,
                                 events) < 0) {
            json_decref(events);
            events = NULL;
        }
    }
    live = json_array();
    if (!live
        || hview_get_pages(&final, "/v1/reservations?state=active", "reservations",
                     run.sched, live) < 0
        || hview_get_pages(&final, "/v1/reservations?state=releasing",
                     "reservations", run.sched, live) < 0) {
        json_decref(live);
        live = NULL;
    }
    pool = hview_get_json(&final, "/v1/pool", run.sched);

    struct hrec_log *logs = calloc((size_t)run.threads, sizeof(*logs));
    if (!logs)
        goto done;
    for (int i = 0; i < run.threads; i++)
        logs[i] = cs[i].log;
    hcheck_tally(logs, run.threads, &tally);
    if (run.bench)
        hview_bench_rows(&run, cs, &tally, elapsed);
    struct hcheck_input in = {.logs = logs,
                              .nlogs = run.threads,
                              .events = events,
                              .live = live,
                              .pool = pool,
                              .get = hview_get_one,
                              .get_arg = &final,
                              .get_reports = run.job_nodes ? hview_get_reports
                                                           : NULL,
                              .get_step = hview_get_step,
                              .steps = run.steps,
                              .deadlines = run.deadline_max_ms > 0,
                              .prefix = run.bench ? "#   " : "",
                              .outage = run.outage};
    int failed = hcheck_run(&in, &tally);
    free(logs);
    if (run.hwcoll && failed >= 0) {
        uint64_t told = 0, checked = 0, bad = 0;
        const char *example = "";
        for (int i = 0; i < run.threads; i++) {
            told += cs[i].hw_told;
            checked += cs[i].hw_checked;
            bad += cs[i].hw_mismatch;
            if (cs[i].hw_mismatch && !*example)
                example = cs[i].hw_bad;
        }
        /* Nothing checked proves nothing: that fails too. */
        bool pass = bad == 0 && checked > 0;
        printf("%s%s hwcoll: every session token a reserve reported is the "
               "one the broker keeps (told %" PRIu64 ", read back %" PRIu64
               ", differed %" PRIu64 "%s%s)\n",
               run.bench ? "#   " : "", pass ? "PASS" : "FAIL", told, checked,
               bad, *example ? "; first: " : "", example);
        failed += !pass;
    }
    if (run.log_path && write_log(&run, cs) < 0)
        failed = failed < 0 ? failed : failed + 1;
    if (failed < 0)
        goto done;
    if (run.bench) {
        rc = 0;
    } else {
        printf("history: %s (%d invariant%s failed)\n",
               failed ? "FAIL" : "PASS", failed, failed == 1 ? "" : "s");
        rc = failed ? 1 : 0;
    }
done:
    fflush(stdout);
    json_decref(events);
    json_decref(live);
    json_decref(pool);
    if (cs)
        for (int i = 0; i < run.threads; i++)
            client_cleanup(&cs[i]);
    client_cleanup(&final);
    free(cs);
    free(tids);
    if (run.sched)
        secfile_free(run.sched, run.sched_size);
    if (run.admin)
        secfile_free(run.admin, run.admin_size);
    if (run.key)
        secfile_free(run.key, run.key_len);
    curl_global_cleanup();
    return rc;
}
