/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fjt_conf: the jobtap plugin's settings and a job's options.
 *
 * Settings come from the instance's [vnibroker] table (flux-config), and
 * the plugin's own load arguments (`flux jobtap load vnib-jobtap.so
 * url=...`, or conf = {...} in [job-manager] plugins) override them key by
 * key.  Every key, its default and its meaning are in
 * plugins/flux/README.md.  A job's options are read from its jobspec's
 * attributes.system.shell.options: cray-slingshot ("off", or {vnicount})
 * in flux-coral2's spelling, and vnibroker ({hwcoll}).
 *
 * Plain C and jansson: no Flux.
 */
#ifndef FJT_CONF_H
#define FJT_CONF_H

#include <stdbool.h>

#include <jansson.h>

#include "vnib/error.h"

#define FJT_DEFAULT_TOKEN_FILE "/etc/vnibroker/flux.token"
#define FJT_DEFAULT_SPOOL_DIR "/var/spool/vnibroker/flux/release"
/* How long a job whose reserve finds the pool short waits for VNIs, held
 * in its prolog: 25 minutes, under perilog's default prolog timeout (30
 * minutes), so that the wait ends with the broker's refusal rather than
 * the prolog's timeout.  At most a day. */
#define FJT_DEFAULT_POOL_WAIT_MS (25L * 60 * 1000)
#define FJT_MAX_POOL_WAIT_MS (24L * 3600 * 1000)

struct fjt_conf {
    char url[512];
    char token_file[512];
    char cacert[512]; /* "" for the system store */
    char spool_dir[512];
    long timeout_ms;         /* one HTTP request (default 10000) */
    long reserve_timeout_ms; /* a reserve's retries (default 60000) */
    long retry_ms;           /* spooled releases sent again (default 30000) */
    int threads;             /* concurrent broker calls (default 4) */
    bool reserve_fatal;      /* a failed reserve raises an exception */
    int vnis_per_job;        /* -1: the broker's default */
    char hwcoll[8];          /* "": the broker's default */
    long reconcile_s;        /* 0: never (default 300) */
    long pool_wait_ms;       /* a job waits for VNIs; 0: refused at once */
    char token_name[128];    /* the token's name at the broker; "": learnt */
};

/* Fill c from the [vnibroker] table (may be NULL) and the load arguments
 * (may be NULL), defaults for the rest.  Returns 0, or -1 with errp
 * naming the key and what it must be.
 */
int fjt_conf_parse(struct fjt_conf *c,
                   json_t *table,
                   json_t *load,
                   vnib_error_t *errp);

/* A job's request, from its jobspec. */
struct fjt_jobopts {
    bool off;       /* -o cray-slingshot=off */
    int vni_count;  /* -1: the site's vnis-per-job */
    char hwcoll[8]; /* "": the site's default */
};

/* Read a job's options.  Returns 0, or -1 with errp holding the message
 * the job's exception (or empty-reason) carries.
 */
int fjt_jobopts_parse(struct fjt_jobopts *o,
                      json_t *jobspec,
                      vnib_error_t *errp);

/* The nodes of a job's R (execution.nodelist) as one hostlist
 * expression (the caller frees it), or NULL with errp set.
 */
char *fjt_R_nodes(json_t *R, vnib_error_t *errp);

/* The cores each node of a job's R has (R_lite's children.core), when
 * every node has as many; else (or for an R it cannot read) 0.  The node
 * side sizes the CXI services by it without reading R itself.
 */
int fjt_R_ncores(json_t *R);

#endif /* !FJT_CONF_H */
