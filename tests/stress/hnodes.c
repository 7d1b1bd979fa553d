/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's nodes reporting at once (see hnodes.h).
 *
 * Each node has an easy handle of its own, kept from job to job (its
 * connection, kept alive, as an agent's process would not, but a
 * connection of its own all the same).  An attempt is recorded when it
 * is sent, by its index in the log, since appending moves the records;
 * its answer fills the record in when it comes.  A node that must try
 * again waits 20 ms doubling (at most 160 ms), then goes to the next
 * replica.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "tests/stress/hnodes.h"
#include "vnib/httpc.h"

#define REPLY_MAX (1024 * 1024)

struct node {
    CURL *e;
    struct curl_slist *headers;
    struct httpc_reply reply;
    char errbuf[CURL_ERROR_SIZE];
    char url[512];
    size_t rec;         /* its attempt in flight: index in the log */
    int attempt;        /* attempts made */
    int64_t not_before; /* mono ns: when the next may go */
    bool in_flight;
    bool done;
};

struct hnodes {
    CURLM *multi;
    struct node nodes[HREC_MAX_NODES];
};

struct hnodes *hnodes_create(void)
{
    struct hnodes *hn = calloc(1, sizeof(*hn));

    if (!hn || !(hn->multi = curl_multi_init()))
        goto fail;
    for (int i = 0; i < HREC_MAX_NODES; i++) {
        struct node *nd = &hn->nodes[i];
        if (!(nd->e = curl_easy_init()))
            goto fail;
        nd->reply.max = REPLY_MAX;
        curl_easy_setopt(nd->e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(nd->e, CURLOPT_ERRORBUFFER, nd->errbuf);
        curl_easy_setopt(nd->e, CURLOPT_WRITEFUNCTION, httpc_write_cb);
        curl_easy_setopt(nd->e, CURLOPT_WRITEDATA, &nd->reply);
        curl_easy_setopt(nd->e, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
        curl_easy_setopt(nd->e, CURLOPT_TIMEOUT_MS, 20000L);
        curl_easy_setopt(nd->e, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(nd->e, CURLOPT_PRIVATE, (char *)nd);
    }
    return hn;
fail:
    hnodes_destroy(hn);
    return NULL;
}

void hnodes_destroy(struct hnodes *hn)
{
    if (!hn)
        return;
    for (int i = 0; i < HREC_MAX_NODES; i++) {
        struct node *nd = &hn->nodes[i];
        if (nd->e) {
            if (nd->in_flight && hn->multi)
                curl_multi_remove_handle(hn->multi, nd->e);
            curl_easy_cleanup(nd->e);
        }
        curl_slist_free_all(nd->headers);
        httpc_reply_free(&nd->reply);
    }
    if (hn->multi)
        curl_multi_cleanup(hn->multi);
    free(hn);
}

/* Send node i's next attempt.  -1 when the client broke. */
static int send_attempt(struct hnodes *hn, struct hrec_log *log,
                        const struct hnodes_call *call, int i)
{
    struct node *nd = &hn->nodes[i];
    char auth[256];
    struct hrec *r = hrec_add(log);

    if (!r)
        return -1;
    nd->rec = log->nrecs - 1;
    r->thread = call->thread;
    r->attempt = nd->attempt;
    r->op = call->op;
    r->url = (call->first_url + i + nd->attempt) % call->nurls;
    r->job = call->job;
    snprintf(r->node, sizeof(r->node), "%s", call->nodes[i]);
    snprintf(nd->url, sizeof(nd->url), "%s%.300s/nodes/%s",
             call->urls[r->url], call->path, call->nodes[i]);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", call->tokens[i]);
    curl_slist_free_all(nd->headers);
    nd->headers = NULL;
    struct curl_slist *h = curl_slist_append(NULL, auth);
    if (!h)
        return -1;
    nd->headers = h;
    if (!(h = curl_slist_append(nd->headers, "Content-Type: application/json")))
        return -1;
    nd->headers = h;
    nd->reply.len = 0;
    nd->reply.too_large = false;
    if (nd->reply.buf)
        nd->reply.buf[0] = '\0';
    nd->errbuf[0] = '\0';
    curl_easy_setopt(nd->e, CURLOPT_URL, nd->url);
    curl_easy_setopt(nd->e, CURLOPT_HTTPHEADER, nd->headers);
    curl_easy_setopt(nd->e, CURLOPT_POSTFIELDS, call->body);
    curl_easy_setopt(nd->e, CURLOPT_POSTFIELDSIZE, (long)strlen(call->body));
    r->send_mono = hrec_now(CLOCK_MONOTONIC);
    r->send_real = hrec_now(CLOCK_REALTIME);
    if (nd->attempt == 0)
        call->first_send[i] = r->send_mono;
    nd->attempt++;
    if (curl_multi_add_handle(hn->multi, nd->e) != CURLM_OK)
        return -1;
    nd->in_flight = true;
    return 0;
}

/* Whether an attempt's outcome is worth another (history.c's rule). */
static bool worth_retrying(const struct hrec *r)
{
    return r->status == 0 || r->status >= 500;
}

/* Node i's attempt ended with result: record it, and retry or finish. */
static void attempt_done(struct hnodes *hn, struct hrec_log *log,
                         const struct hnodes_call *call, int i,
                         CURLcode result)
{
    struct node *nd = &hn->nodes[i];
    struct hrec *r = &log->recs[nd->rec];

    curl_multi_remove_handle(hn->multi, nd->e);
    nd->in_flight = false;
    r->recv_mono = hrec_now(CLOCK_MONOTONIC);
    r->recv_real = hrec_now(CLOCK_REALTIME);
    r->status = 0;
    if (result != CURLE_OK) {
        snprintf(r->transport, sizeof(r->transport), "%.63s",
                 nd->errbuf[0] ? nd->errbuf : curl_easy_strerror(result));
    } else {
        curl_easy_getinfo(nd->e, CURLINFO_RESPONSE_CODE, &r->status);
        if (r->status < 200 || r->status >= 300)
            hrec_parse_error(r, nd->reply.buf, nd->reply.len);
    }
    call->status[i] = r->status;
    if (worth_retrying(r)) {
        call->ambiguous[i] = true;
        if (nd->attempt < call->attempts) {
            int a = nd->attempt;
            nd->not_before =
                r->recv_mono + (int64_t)(20L << (a < 4 ? a - 1 : 3)) * 1000000;
            return;
        }
    }
    nd->done = true;
}

int hnodes_run(struct hnodes *hn, struct hrec_log *log,
               const struct hnodes_call *call)
{
    int left = call->n;

    if (call->n > HREC_MAX_NODES || call->attempts < 1)
        return -1;
    for (int i = 0; i < call->n; i++) {
        struct node *nd = &hn->nodes[i];
        nd->attempt = 0;
        nd->not_before = 0;
        nd->done = false;
        call->status[i] = 0;
        call->ambiguous[i] = false;
        call->first_send[i] = 0;
    }
    while (left > 0) {
        int64_t now = hrec_now(CLOCK_MONOTONIC);
        for (int i = 0; i < call->n; i++) {
            struct node *nd = &hn->nodes[i];
            if (!nd->done && !nd->in_flight && now >= nd->not_before
                && send_attempt(hn, log, call, i) < 0)
                return -1;
        }
        int running = 0;
        if (curl_multi_perform(hn->multi, &running) != CURLM_OK
            || curl_multi_poll(hn->multi, NULL, 0, 10, NULL) != CURLM_OK)
            return -1;
        CURLMsg *m;
        int queued;
        while ((m = curl_multi_info_read(hn->multi, &queued))) {
            char *priv = NULL;
            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
            int i = (int)((struct node *)(void *)priv - hn->nodes);
            attempt_done(hn, log, call, i, m->data.result);
            if (hn->nodes[i].done)
                left--;
        }
    }
    return 0;
}
