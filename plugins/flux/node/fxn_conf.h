/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fxn_conf: the settings of vnib-flux-node, vnibroker's node side for Flux
 * (plugins/flux/README.md, node/flux-node.conf.example).
 *
 * The file, /etc/vnibroker/flux-node.conf by default (vnib-flux-node
 * --config names another), is written in sh syntax,
 * as it was when the node side was a script that sourced it: lines
 * NAME=value, the value bare, 'single-quoted' or "double-quoted", comments
 * from '#'.  It is read, never executed: a value that would need a shell
 * (an expansion, a command substitution, an escape) is an error naming
 * the line.  As root reads it, a file not owned by root, or writable by
 * group or others, is refused.  The names VNIB_AGENT and FLUX, which the
 * script used, are accepted and ignored: the program runs neither.
 *
 * Plain C: no Flux, no agent.
 */
#ifndef FXN_CONF_H
#define FXN_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "vnib/error.h"

#define FXN_PATH_MAX 4096

struct fxn_conf {
    char agent_config[FXN_PATH_MAX]; /* AGENT_CONFIG; "%n": the node */
    long reservation_wait_ms;        /* RESERVATION_WAIT; 0: as long as the
                                      * prolog runs (its timeout ends it) */
    long retry_busy_ms;              /* HOUSEKEEPING_RETRY_BUSY (5m) */
    bool syslog;                     /* LOGGER not empty */
};

/* The defaults; confdir is where agent.toml is (/etc/vnibroker). */
void fxn_conf_defaults(struct fxn_conf *c, const char *confdir);

/* Read the settings file path into c (which holds the defaults).  A file
 * that does not exist leaves the defaults.  Returns 0, or -1 with errno
 * and errp: EPERM (owner or mode), EINVAL (a line, named "path:N: ...").
 */
int fxn_conf_load(struct fxn_conf *c, const char *path, vnib_error_t *errp);

/* The same from the file's text (path names it in messages). */
int fxn_conf_parse(struct fxn_conf *c,
                   const char *text,
                   const char *path,
                   vnib_error_t *errp);

/* AGENT_CONFIG with every "%n" replaced by node, into buf.  Returns 0, or
 * -1 with errno ENAMETOOLONG and errp. */
int fxn_conf_agent_path(const struct fxn_conf *c,
                        const char *node,
                        char *buf,
                        size_t size,
                        vnib_error_t *errp);

#endif /* !FXN_CONF_H */
