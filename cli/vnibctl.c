/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl: the command-line client of vnibroker, for admins and scheduler
 * scripts (Slurm prolog/epilog, cron checks).
 *
 * Every broker command is one REST call (list --all follows the `next`
 * cursors) made through lib/client.c; the output is an aligned table or
 * "key: value" lines, or the broker's JSON with --json.  `token` commands
 * mint credentials locally (cli/tokencmd.c).
 *
 * This file holds main, the global options and the dispatcher.  Each
 * command is a table for cli/opts.c in its group's file: cmd_reserve.c
 * (reserve, release, show, report), cmd_list.c (list, events) and
 * cmd_admin.c (pool, vni, node), cmd_topo.c (topology), cmd_status.c
 * (status, printed by statusfmt.c), cmd_lease.c (lease show).
 *
 * Exit statuses, which scripts rely on:
 *   0  success, including idempotent repeats (HTTP 200, 201, 202)
 *   1  the broker refused (any HTTP status >= 400; "vnibctl: CODE: MESSAGE"
 *      on stderr) or a local action failed
 *   2  usage error: unknown option or command, missing or bad argument
 *      (the message says which), or an unusable token, key or CA file
 *   3  the broker could not be reached or gave no usable answer
 *      (connection refused, unresolvable host, timeout, TLS failure,
 *      reply that is not JSON)
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/client.h"
#include "cli/cmd_admin.h"
#include "cli/cmd_lease.h"
#include "cli/cmd_list.h"
#include "cli/cmd_reserve.h"
#include "cli/cmd_status.h"
#include "cli/cmd_topo.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/tokencmd.h"
#include "vnib/version.h"

#define DEFAULT_URL "http://127.0.0.1:8080"

static const char usage_text[] =
    "Usage: vnibctl [OPTIONS] COMMAND [ARGS]\n"
    "Talk to the vnibroker VNI broker.\n"
    "\n"
    "Commands:\n"
    "  reserve JOB_ID --uid N --user NAME --nodes HOSTLIST [--vnis N]\n"
    "          [--lease]\n"
    "  release JOB_ID [--force]\n"
    "  show JOB_ID\n"
    "  list [--state active|releasing|released] [--node NAME] [--uid N]\n"
    "       [--limit N] [--after CURSOR] [--all]\n"
    "  pool\n"
    "  vni N\n"
    "  events [--job JOB_ID] [--action ACTION] [--node NAME] [--newest]\n"
    "         [--limit N] [--after CURSOR]\n"
    "  status [--quarantine-limit N] [--drained-limit N]\n"
    "  node NAME [--undrain]\n"
    "  report JOB_ID NODE --cxi creating|created|destroyed|failed\n"
    "         [--service DEV:SVCID]... [--message TEXT]\n"
    "  topology [--file PATH] [--check] [JOB_ID]   (topology.conf)\n"
    "  lease show [--key PUBFILE]... LEASE   (local; no broker needed)\n"
    "  token new ROLE NAME | token node NAME --key-file FILE |\n"
    "  token key --out FILE          (local; no broker needed)\n"
    "'vnibctl COMMAND --help' describes each command.\n"
    "\n"
    "Options:\n"
    "  --url URL           broker URL (default $VNIB_URL, else " DEFAULT_URL
    ")\n"
    "  --token-file FILE   file holding the bearer token, mode 0600\n"
    "                      (default $VNIB_TOKEN, else the file\n"
    "                      $VNIB_TOKEN_FILE)\n"
    "  --cacert FILE       CA bundle for https (default $VNIB_CACERT, else\n"
    "                      the system store)\n"
    "  --timeout SECONDS   per request (default 10)\n"
    "  --json              print the broker's JSON instead of text (a\n"
    "                      refusal's error object too, on stdout)\n"
    "  -h, --help          this text\n"
    "  -V, --version       print the version\n"
    "\n"
    "Exit status:\n"
    "  0  success, including idempotent repeats\n"
    "  1  refused by the broker (HTTP >= 400) or a local action failed\n"
    "  2  usage error, or an unusable token, key or CA file\n"
    "  3  broker unreachable (refused, timeout, TLS or protocol failure)\n";

/* --timeout SECONDS: a positive decimal up to a day. */
static int parse_timeout(void *args, const char *cmd, const char *s)
{
    long *msp = &((struct ctl *)args)->timeout_ms;
    char *end = NULL;
    double secs;

    errno = 0;
    secs = s[0] >= '0' && s[0] <= '9' ? strtod(s, &end) : -1;
    if (errno != 0 || !end || *end != '\0' || !isfinite(secs) || secs <= 0
        || secs > 86400)
        return ctl_usage_error(cmd,
                               "--timeout: '%s' is not a number of seconds "
                               "in (0, 86400]",
                               s);
    *msp = (long)(secs * 1000 + 0.5);
    if (*msp < 1)
        *msp = 1;
    return OPTS_GO_ON;
}

static int print_version(void *args, const char *cmd, const char *arg)
{
    (void)args;
    (void)cmd;
    (void)arg;
    printf("vnibctl %s\n", VNIB_VERSION);
    return CTL_EXIT_OK;
}

/* The global options, up to the command ('+': the command's options are
 * its own).
 */
/* clang-format off */
static const struct opts_option global_options[] = {
    OPTS_ROW_STRING("url", 'u', struct ctl, url, 0, "URL", NULL),
    OPTS_ROW_STRING("token-file", 't', struct ctl, token_file, 0, "FILE", NULL),
    OPTS_ROW_STRING("cacert", 'c', struct ctl, cacert, 0, "FILE", NULL),
    OPTS_ROW_CALL("timeout", 'T', "SECONDS", parse_timeout),
    OPTS_ROW_ACTION("version", 'V', OPTS_SHORT, print_version),
    OPTS_ROW_END,
};
/* clang-format on */

static const struct opts_command global = {
    .name = NULL,
    .help = usage_text,
    .stop_at_arg = true,
    .nargs = -1,
    .options = global_options,
};

/* The command called name, or NULL. */
static const struct opts_command *command_find(const char *name)
{
    static const struct opts_command *const groups[] = {
        cmd_reserve_commands,
        cmd_list_commands,
        cmd_admin_commands,
        cmd_topo_commands,
        cmd_status_commands,
        cmd_lease_commands,
    };

    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        for (const struct opts_command *c = groups[g]; c->name; c++) {
            if (strcmp(c->name, name) == 0)
                return c;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct ctl ctl = {
        .url = getenv("VNIB_URL"),
        .cacert = getenv("VNIB_CACERT"),
        .timeout_ms = VNIB_CLIENT_TIMEOUT_MS,
    };
    const struct opts_command *cmd;
    int rc;

    if (!ctl.url || !ctl.url[0])
        ctl.url = DEFAULT_URL;
    if (ctl.cacert && !ctl.cacert[0])
        ctl.cacert = NULL;
    if ((rc = opts_parse(&global, argc, argv, &ctl, &ctl.json)) != OPTS_GO_ON)
        return rc;
    if (optind >= argc)
        return ctl_usage_error(NULL, "no command given");
    const char *name = argv[optind];
    if (strcmp(name, "token") == 0)
        rc = tokencmd_run(argc - optind, argv + optind, ctl.json);
    else if ((cmd = command_find(name)))
        rc = opts_run(cmd, &ctl, argc - optind, argv + optind);
    else
        rc = ctl_usage_error(NULL, "unknown command '%s'", name);
    vnib_client_destroy(ctl.client);
    if (fflush(stdout) == EOF && rc == CTL_EXIT_OK)
        rc = ctl_fail(CTL_EXIT_FAILED, "cannot write to stdout");
    return rc;
}
