/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the files of vnibctl: the global options and the
 * client and its calls, exit codes, strict option and number parsing,
 * argument checks, and the error and JSON printers, so that every command
 * reports problems the same way.
 */
#ifndef VNIB_CLI_CTL_H
#define VNIB_CLI_CTL_H

#include <getopt.h>
#include <stdbool.h>

#include <jansson.h>

#include "vnib/client.h"

/* The exit statuses scripts rely on (printed by `vnibctl --help`). */
enum ctl_exit {
    CTL_EXIT_OK = 0,          /* done, including idempotent repeats */
    CTL_EXIT_FAILED = 1,      /* the broker refused (HTTP >= 400) or an
                                 action failed */
    CTL_EXIT_USAGE = 2,       /* bad command line or unusable local file */
    CTL_EXIT_UNREACHABLE = 3, /* no HTTP answer from the broker */
};

/* Global options and the client, created on first use. */
struct ctl {
    const char *url;
    const char *token_file; /* --token-file, or NULL */
    const char *cacert;     /* --cacert / $VNIB_CACERT, or NULL */
    long timeout_ms;
    bool json;
    struct vnib_client *client;
};

/* Create ctl->client on first use, with the token from --token-file,
 * $VNIB_TOKEN or $VNIB_TOKEN_FILE.  Returns 0 or an exit status (having
 * printed why).
 */
int ctl_connect(struct ctl *ctl);

/* Turn the outcome of a call into an exit status, printing errors.  A
 * refusal prints "vnibctl: CODE: MESSAGE" (and the error JSON on stdout
 * with --json).
 */
int ctl_outcome(const struct ctl *ctl,
                int status,
                const json_t *reply,
                const vnib_error_t *error);

/* The job id pattern of the API and the node name rule, checked here for
 * a clear message: 0, or CTL_EXIT_USAGE having printed it.
 */
int ctl_check_job_id(const char *cmd, const char *id);
int ctl_check_node(const char *cmd, const char *node);

/* Connect, call METHOD PATH with a query string of params (name, value
 * pairs ending with a NULL name; NULL values are left out, the others
 * escaped), and return ctl_outcome's exit status.  *replyp holds the
 * reply, if any, also on failure; the caller json_decrefs it.
 */
int ctl_call(struct ctl *ctl,
             const char *method,
             const char *path,
             const char *const *params,
             json_t **replyp);

/* getopt_long over argv (argv[0] is the command name, cmd names it in
 * messages).  Returns the option, -1 at the end, or '?' after printing
 * "vnibctl CMD: unknown option ..." or "... needs an argument" on stderr.
 * shortopts must start with ':'.  Restarts parsing when *first is true and
 * clears it.
 */
int ctl_getopt(int argc,
               char **argv,
               const char *cmd,
               const char *shortopts,
               const struct option *longopts,
               bool *first);

/* Print "vnibctl CMD: MESSAGE" and a hint to CMD's --help on stderr;
 * returns CTL_EXIT_USAGE.  cmd may be NULL for the tool itself.
 */
int ctl_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print "vnibctl: MESSAGE" on stderr, control characters replaced by '?',
 * and return status.
 */
int ctl_fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parse s as a decimal integer in min..max, digits only.  On failure
 * prints "vnibctl CMD: WHAT: 'S' is not a number in MIN-MAX" and returns
 * -1.
 */
int ctl_parse_uint(const char *cmd,
                   const char *what,
                   const char *s,
                   unsigned long long min,
                   unsigned long long max,
                   unsigned long long *valuep);

/* Print v as indented JSON (JSON_INDENT(2)) and a newline on stdout.
 * Returns CTL_EXIT_OK, or CTL_EXIT_FAILED when stdout cannot be written.
 */
int ctl_print_json(const json_t *v);

#endif /* !VNIB_CLI_CTL_H */
