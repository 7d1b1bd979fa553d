/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The node agent's configuration, /etc/vnibroker/agent.toml.
 *
 * Every key has a default, so a node needs a file only to say where the
 * broker is and which NIC backend to use.  Unknown tables and keys are
 * errors naming the file and line, as in the broker's own configuration:
 * an ignored typo on thousands of nodes is an outage waiting to happen.
 * Command-line flags override the file (agent/main.c).
 */
#ifndef VNIB_AGENT_AGENTCFG_H
#define VNIB_AGENT_AGENTCFG_H

#include <stdbool.h>

#include "vnib/error.h"

#define AGENTCFG_DEFAULT_PATH "/etc/vnibroker/agent.toml"

struct agentcfg {
    /* [broker] */
    char *url;               /* "http://127.0.0.1:8080" */
    char *token_file;        /* "/etc/vnibroker/node.token" */
    char *cacert;            /* "" = the system store */
    long fetch_timeout_ms;   /* overall deadline of a fetch, with retries */
    long request_timeout_ms; /* one HTTP request */
    long spool_after_ms;     /* a job-end report's deadline before spooling */
    /* [node] */
    char *name;      /* "" = the name the node token carries */
    char *state_dir; /* "/run/vnibroker": per-job records and env files */
    char *spool_dir; /* "/var/spool/vnibroker/agent": reports to send */
    /* [nic] */
    char *backend;                   /* "libcxi" or "sim" */
    char *sim_dir;                   /* the sim backend's NIC files */
    char *libcxi;                    /* the library the libcxi backend loads */
    long floor_percent;              /* scale-back floor, % of the request */
    long epilog_retry_busy_ms;       /* epilog's EBUSY window */
    long housekeeping_retry_busy_ms; /* housekeeping's */
    /* [lease] */
    char *lease_public_keys; /* PEM files, joined by CFGTABLE_LIST_SEP;
                              * read only when a lease is verified */
    long lease_max_skew_s;   /* clock difference allowed with the broker */
};

/* Load path.  A missing file is fine when !must_exist (the defaults
 * apply); otherwise and for every other problem returns NULL with errno
 * and errp ("agent.toml:7: nic.backend: ...").  The file names the library
 * loaded into this root process, so one not owned by root or the
 * effective uid, or writable by group or others, is refused (EPERM).
 */
struct agentcfg *agentcfg_load(const char *path,
                               bool must_exist,
                               vnib_error_t *errp);
void agentcfg_destroy(struct agentcfg *cfg);

/* Replace a string setting (a flag overriding the file).  Returns 0 or -1
 * with errno ENOMEM.
 */
int agentcfg_set(char **field, const char *value);

#endif /* !VNIB_AGENT_AGENTCFG_H */
