/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib-agent: the node agent, run as root by the scheduler's prolog,
 * epilog and housekeeping on every compute node.
 *
 * This file is only the command line: the options, declared in tables and
 * parsed by one loop, into a struct cmd_ctx and a struct cmd_opts, then
 * the command of agent/commands.h.  What each command does, and the exit
 * statuses the scheduler hooks rely on, are in agent/commands.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnib/duration.h"
#include "vnib/token.h"
#include "agent/agentcfg.h"
#include "agent/brokerso.h"
#include "agent/commands.h"
#include "agent/jobstate.h"
#include "vnib/version.h"

static const char usage_text[] =
    "Usage: vnib-agent [OPTIONS] COMMAND [ARGS]\n"
    "The vnibroker node agent: CXI services for a job on this node.\n"
    "\n"
    "Commands:\n"
    "  prolog --job ID [--step STEP] [--uid U] [--ncores N] [--allow-missing]\n"
    "                                           create the job's services\n"
    "  prolog --job ID [--step STEP] --uid U --lease TEXT|@FILE|-\n"
    "                                           the same from the broker's\n"
    "                                           lease, without asking it\n"
    "  prolog --job ID --report-only [--uid U]  only tell the broker this\n"
    "                                           node will hold them (another\n"
    "                                           tool creates them)\n"
    "  epilog --job ID [--retry-busy D]         destroy them (default 5s)\n"
    "  housekeeping --job ID [--retry-busy D]   the same, longer (5m); exit\n"
    "                                           1 when services remain\n"
    "  clean --all [--retry-busy D]             destroy every job service in\n"
    "                                           the broker's pool (after a\n"
    "                                           crash or reboot)\n"
    "  flush [--retry-busy D]                   send the reports spooled\n"
    "                                           while the broker was down;\n"
    "                                           end what waits on this node\n"
    "                                           of jobs it has no record of\n"
    "  env --job ID [--format export|json|slurm-taskprolog]\n"
    "                                           print the job environment\n"
    "  list                                     services on this node\n"
    "  sim-init --nics N                        create simulated NICs\n"
    "Every command takes --dry-run and --json.  D is a duration: 500ms, 5s,\n"
    "5m, 1h (a bare number is seconds).  prolog, epilog, housekeeping and\n"
    "env take --step STEP: the same for that step of the job (its own VNIs,\n"
    "then the job's; its own record and reports).  Without --step, epilog\n"
    "and housekeeping also end the job's steps that still have a record.\n"
    "\n"
    "Options:\n"
    "  --config FILE      default " AGENTCFG_DEFAULT_PATH
    "\n"
    "  --url URL          the broker (overrides broker.url)\n"
    "  --token-file FILE  the node token (overrides broker.token_file)\n"
    "  --cacert FILE      CA bundle for an https broker\n"
    "  --node NAME        this node's name (default: the token's)\n"
    "  --version, --help\n"
    "\n"
    "Exit: 0 done, 1 failed (drain the node), 2 usage or configuration,\n"
    "3 broker unreachable.\n";

static int parse_long(const char *s, long lo, long hi, long *vp)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *vp = v;
    return 0;
}

/* Everything the command line sets. */
struct args {
    const char *config, *url, *token_file, *cacert, *node;
    bool json, dry_run;
    struct cmd_opts o;
};

/* How an option's value is taken. */
enum opt_kind {
    OPT_STRING,   /* kept as it is */
    OPT_FLAG,     /* no value: sets a bool */
    OPT_LONG,     /* an integer lo..hi */
    OPT_DURATION, /* duration_parse_ms, into milliseconds */
    OPT_HELP,
    OPT_VERSION,
};

/* One option: where in struct args it goes, and what a bad value is not. */
struct opt_def {
    const char *name;
    enum opt_kind kind;
    size_t offset;
    long lo, hi;
    const char *bad; /* "--NAME 'VALUE' <bad>" */
};

#define ARG(field) offsetof(struct args, field)

static const struct opt_def main_opts[] = {
    {"config", OPT_STRING, ARG(config), 0, 0, NULL},
    {"url", OPT_STRING, ARG(url), 0, 0, NULL},
    {"token-file", OPT_STRING, ARG(token_file), 0, 0, NULL},
    {"cacert", OPT_STRING, ARG(cacert), 0, 0, NULL},
    {"node", OPT_STRING, ARG(node), 0, 0, NULL},
    {"json", OPT_FLAG, ARG(json), 0, 0, NULL},
    {"dry-run", OPT_FLAG, ARG(dry_run), 0, 0, NULL},
    {"version", OPT_VERSION, 0, 0, 0, NULL},
    {"help", OPT_HELP, 0, 0, 0, NULL},
    {NULL, OPT_FLAG, 0, 0, 0, NULL},
};

static const struct opt_def command_opts[] = {
    {"job", OPT_STRING, ARG(o.job), 0, 0, NULL},
    {"step", OPT_STRING, ARG(o.step), 0, 0, NULL},
    {"uid", OPT_LONG, ARG(o.uid), 0, 4294967294L, "is not a uid"},
    {"ncores", OPT_LONG, ARG(o.ncores), 1, 65535, "is not 1-65535"},
    {"retry-busy",
     OPT_DURATION,
     ARG(o.retry_ms),
     0,
     0,
     "is not a duration (500ms, 5s, 5m, 1h)"},
    {"format", OPT_STRING, ARG(o.format), 0, 0, NULL},
    {"all", OPT_FLAG, ARG(o.all), 0, 0, NULL},
    {"allow-missing", OPT_FLAG, ARG(o.allow_missing), 0, 0, NULL},
    {"report-only", OPT_FLAG, ARG(o.report_only), 0, 0, NULL},
    {"lease", OPT_STRING, ARG(o.lease), 0, 0, NULL},
    {"nics", OPT_LONG, ARG(o.nics), 0, 64, "is not 0-64"},
    {"json", OPT_FLAG, ARG(json), 0, 0, NULL},
    {"dry-run", OPT_FLAG, ARG(dry_run), 0, 0, NULL},
    {"help", OPT_HELP, 0, 0, 0, NULL},
    {NULL, OPT_FLAG, 0, 0, 0, NULL},
};

#define OPT_MAX 16

/* The commands; needs_job: --job ID is required (and --step STEP is
 * taken). */
static const struct command {
    const char *name;
    cmd_fn *run;
    bool needs_job;
} commands[] = {
    {"prolog", cmd_prolog, true},
    {"epilog", cmd_epilog, true},
    {"housekeeping", cmd_housekeeping, true},
    {"clean", cmd_clean, false},
    {"flush", cmd_flush, false},
    {"env", cmd_env, true},
    {"list", cmd_list, false},
    {"sim-init", cmd_sim_init, false},
    {NULL, NULL, false},
};

/* Parse argv by defs into *args.  cmd is NULL for the options before the
 * command (parsing stops at the command), or the command for its own.
 * Returns CMD_DONE, an exit status, or -1 after --help or --version (which
 * printed and succeeded).
 */
static int parse_opts(struct cmd_ctx *a,
                      const struct opt_def *defs,
                      const char *cmd,
                      int argc,
                      char **argv,
                      struct args *args)
{
    struct option opts[OPT_MAX + 1] = {{0}};
    const char *pre = cmd ? cmd : "", *sep = cmd ? ": " : "";
    int c, n;

    for (n = 0; defs[n].name && n < OPT_MAX; n++)
        opts[n] = (struct option){defs[n].name,
                                  defs[n].kind == OPT_STRING
                                          || defs[n].kind == OPT_LONG
                                          || defs[n].kind == OPT_DURATION
                                      ? required_argument
                                      : no_argument,
                                  NULL,
                                  256 + n};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, cmd ? ":h" : "+:h", opts, NULL))
           != -1) {
        if (c == ':')
            return cmd_fail(a,
                            CMD_USAGE,
                            "%s%s%s needs a value",
                            pre,
                            sep,
                            argv[optind - 1]);
        if (c == 'h') /* -h: the --help row */
            for (c = 256; c < 256 + n && defs[c - 256].kind != OPT_HELP; c++)
                ;
        if (c < 256 || c >= 256 + n)
            return cmd_fail(a,
                            CMD_USAGE,
                            "%s%sunknown option '%s'%s",
                            pre,
                            sep,
                            argv[optind - 1],
                            cmd ? "" : " (see --help)");
        const struct opt_def *d = &defs[c - 256];
        char *field = (char *)args + d->offset;
        switch (d->kind) {
            case OPT_STRING:
                *(const char **)field = optarg;
                break;
            case OPT_FLAG:
                *(bool *)field = true;
                break;
            case OPT_LONG:
            case OPT_DURATION:
                if ((d->kind == OPT_LONG
                         ? parse_long(optarg, d->lo, d->hi, (long *)field)
                         : duration_parse_ms(optarg, (long *)field))
                    < 0)
                    return cmd_fail(a,
                                    CMD_USAGE,
                                    "%s%s--%s '%s' %s",
                                    pre,
                                    sep,
                                    d->name,
                                    optarg,
                                    d->bad);
                break;
            case OPT_HELP:
                fputs(usage_text, stdout);
                return -1;
            case OPT_VERSION:
                printf("vnib-agent %s\n", VNIB_VERSION);
                return -1;
        }
    }
    return CMD_DONE;
}

/* The command's own options, and what they require. */
static int parse_command(struct cmd_ctx *a,
                         const struct command *cmd,
                         int argc,
                         char **argv,
                         struct args *args)
{
    int rc = parse_opts(a, command_opts, cmd->name, argc, argv, args);
    if (rc != CMD_DONE)
        return rc;
    if (optind < argc)
        return cmd_fail(a,
                        CMD_USAGE,
                        "%s: unexpected argument '%s'",
                        cmd->name,
                        argv[optind]);
    if (cmd->needs_job && !args->o.job)
        return cmd_fail(a, CMD_USAGE, "%s: --job ID is required", cmd->name);
    if (args->o.job && !jobstate_job_id_valid(args->o.job))
        return cmd_fail(a,
                        CMD_USAGE,
                        "%s: --job '%s' is not a job id (1-128 of letters, "
                        "digits, '.', '_', '-')",
                        cmd->name,
                        args->o.job);
    if (args->o.step && !cmd->needs_job)
        return cmd_fail(
            a, CMD_USAGE, "%s: --step applies to a job's command", cmd->name);
    if (args->o.lease && strcmp(cmd->name, "prolog") != 0)
        return cmd_fail(
            a, CMD_USAGE, "%s: --lease applies to prolog", cmd->name);
    if (args->o.lease && args->o.uid < 0)
        return cmd_fail(a,
                        CMD_USAGE,
                        "%s: --lease needs --uid (the job's owner, as the "
                        "scheduler knows it)",
                        cmd->name);
    if (args->o.lease && args->o.report_only)
        return cmd_fail(a,
                        CMD_USAGE,
                        "%s: --lease and --report-only exclude each other",
                        cmd->name);
    args->o.lease_arg = args->o.lease != NULL;
    if (args->o.step && !jobstate_step_id_valid(args->o.step))
        return cmd_fail(a,
                        CMD_USAGE,
                        "%s: --step '%s' is not a step id (1-128 of letters, "
                        "digits, '.', '_', '-')",
                        cmd->name,
                        args->o.step);
    return CMD_DONE;
}

int main(int argc, char **argv)
{
    struct cmd_ctx a = {
        .out = stdout, .err = stderr, .open_broker = brokerso_open};
    struct args args = {
        .o = {.uid = -1, .retry_ms = -1, .format = "export", .nics = -1}};
    const struct command *cmd = commands;
    vnib_error_t error = {0};
    int rc;

    if ((rc = parse_opts(&a, main_opts, NULL, argc, argv, &args)) != CMD_DONE)
        return rc < 0 ? CMD_DONE : rc;
    if (optind >= argc)
        return cmd_fail(&a, CMD_USAGE, "a command is required (see --help)");
    while (cmd->name && strcmp(cmd->name, argv[optind]) != 0)
        cmd++;
    if (!cmd->name)
        return cmd_fail(
            &a, CMD_USAGE, "unknown command '%s' (see --help)", argv[optind]);
    if ((rc = parse_command(&a, cmd, argc - optind, argv + optind, &args))
        != CMD_DONE)
        return rc < 0 ? CMD_DONE : rc;
    a.json = args.json;
    a.dry_run = args.dry_run;
    if (!(a.cfg =
              agentcfg_load(args.config ? args.config : AGENTCFG_DEFAULT_PATH,
                            args.config != NULL,
                            &error)))
        return cmd_fail(&a, CMD_USAGE, "%s", error.text);
    if ((args.url && agentcfg_set(&a.cfg->url, args.url) < 0)
        || (args.token_file
            && agentcfg_set(&a.cfg->token_file, args.token_file) < 0)
        || (args.cacert && agentcfg_set(&a.cfg->cacert, args.cacert) < 0)
        || (args.node && agentcfg_set(&a.cfg->name, args.node) < 0)) {
        rc = cmd_fail(&a, CMD_FAILED, "out of memory");
        goto done;
    }
    if (args.node && !token_node_name_valid(args.node)) {
        rc = cmd_fail(
            &a, CMD_USAGE, "--node '%s' is not a node name", args.node);
        goto done;
    }
    if (!(a.warnings = json_array())) {
        rc = cmd_fail(&a, CMD_FAILED, "out of memory");
        goto done;
    }
    rc = cmd->run(&a, &args.o);
done:
    cmd_ctx_fini(&a);
    return rc;
}
