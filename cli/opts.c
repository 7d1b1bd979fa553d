/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one command-line parser of vnibctl (see opts.h).
 *
 * It builds getopt_long's tables from the command's, runs ctl_getopt (so
 * unknown options and missing arguments read the same everywhere), and
 * stores each argument where the table says.  The order of the checks is
 * part of the interface: scripts see the first problem only.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ctl.h"
#include "cli/opts.h"

/* Options a command may have besides --json and --help. */
#define OPTS_MAX 16

static size_t count_options(const struct opts_command *cmd)
{
    size_t n = 0;

    while (cmd->options && cmd->options[n].name)
        n++;
    return n;
}

static void *target(void *args, const struct opts_option *o)
{
    return (char *)args + o->offset;
}

static bool in_choices(const char *const *choices, const char *s)
{
    while (choices && *choices && strcmp(*choices, s) != 0)
        choices++;
    return choices && *choices;
}

/* The check of one argument: returns OPTS_GO_ON or an exit status. */
static int check_value(const struct opts_command *cmd,
                       const struct opts_option *o,
                       void *args,
                       const char *arg)
{
    char what[64];

    switch (o->type) {
        case OPTS_UINT: {
            struct opts_uint *u = target(args, o);
            snprintf(what, sizeof(what), "--%s", o->name);
            if (ctl_parse_uint(cmd->name, what, arg, o->min, o->max, &u->value)
                < 0)
                return CTL_EXIT_USAGE;
            break;
        }
        case OPTS_CHOICE:
            if (!in_choices(o->choices, arg))
                return ctl_usage_error(cmd->name,
                                       "--%s '%s' is not %s",
                                       o->name,
                                       arg,
                                       o->choices_text);
            break;
        case OPTS_CALL:
            return o->call(args, cmd->name, arg);
        case OPTS_FLAG:
        case OPTS_STRING:
            break;
    }
    if (o->check) {
        int rc = o->check(cmd->name, arg);
        if (rc != 0)
            return rc;
    }
    return OPTS_GO_ON;
}

/* Store one option's argument, checking it now unless it is OPTS_LATE. */
static int take(const struct opts_command *cmd,
                const struct opts_option *o,
                void *args,
                const char *arg)
{
    switch (o->type) {
        case OPTS_FLAG:
            if (o->call)
                return o->call(args, cmd->name, NULL);
            *(bool *)target(args, o) = true;
            return OPTS_GO_ON;
        case OPTS_UINT:
            ((struct opts_uint *)target(args, o))->text = arg;
            break;
        case OPTS_STRING:
        case OPTS_CHOICE:
            *(const char **)target(args, o) = arg;
            break;
        case OPTS_CALL:
            break;
    }
    if (o->flags & OPTS_LATE)
        return OPTS_GO_ON;
    return check_value(cmd, o, args, arg);
}

/* The argument an option was given, or NULL. */
static const char *given(const struct opts_option *o, void *args)
{
    if (o->type == OPTS_UINT)
        return ((struct opts_uint *)target(args, o))->text;
    if (o->type == OPTS_STRING || o->type == OPTS_CHOICE)
        return *(const char **)target(args, o);
    return NULL;
}

/* After the loop: positional arguments, required options, late checks. */
static int check_rest(
    const struct opts_command *cmd, size_t n, int argc, char **argv, void *args)
{
    int have = argc - optind;
    int rc;

    if (cmd->nargs < 0)
        return OPTS_GO_ON;
    if (have < cmd->nargs)
        return ctl_usage_error(cmd->name, "missing %s", cmd->args_text);
    if (have > cmd->nargs)
        return ctl_usage_error(
            cmd->name, "unexpected argument '%s'", argv[optind + cmd->nargs]);
    for (int i = 0; i < cmd->nargs && i < 2; i++) {
        if (cmd->arg_check[i]
            && (rc = cmd->arg_check[i](cmd->name, argv[optind + i])) != 0)
            return rc;
    }
    for (size_t i = 0; i < n; i++) {
        const struct opts_option *o = &cmd->options[i];
        if ((o->flags & OPTS_REQUIRED) && !given(o, args))
            return ctl_usage_error(
                cmd->name, "--%s %s is required", o->name, o->arg);
    }
    for (size_t i = 0; i < n; i++) {
        const struct opts_option *o = &cmd->options[i];
        const char *arg = given(o, args);
        if ((o->flags & OPTS_LATE) && arg
            && (rc = check_value(cmd, o, args, arg)) != OPTS_GO_ON)
            return rc;
    }
    return OPTS_GO_ON;
}

int opts_parse(const struct opts_command *cmd,
               int argc,
               char **argv,
               void *args,
               bool *jsonp)
{
    struct option longopts[OPTS_MAX + 3];
    char shortopts[OPTS_MAX + 5];
    size_t n = count_options(cmd);
    size_t s = 0;
    bool first = true;
    int c, rc;

    if (n > OPTS_MAX)
        return ctl_fail(CTL_EXIT_FAILED, "%s: too many options", cmd->name);
    /* ':' for our own messages; '+' to stop at the command's name. */
    if (cmd->stop_at_arg)
        shortopts[s++] = '+';
    shortopts[s++] = ':';
    shortopts[s++] = 'h';
    for (size_t i = 0; i < n; i++) {
        const struct opts_option *o = &cmd->options[i];
        longopts[i] = (struct option){
            o->name,
            o->type == OPTS_FLAG ? no_argument : required_argument,
            NULL,
            o->key,
        };
        if (o->flags & OPTS_SHORT) {
            shortopts[s++] = (char)o->key;
            if (o->type != OPTS_FLAG)
                shortopts[s++] = ':';
        }
    }
    shortopts[s] = '\0';
    longopts[n] = (struct option){"json", no_argument, NULL, 'j'};
    longopts[n + 1] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n + 2] = (struct option){NULL, 0, NULL, 0};

    while ((c = ctl_getopt(argc, argv, cmd->name, shortopts, longopts, &first))
           != -1) {
        const struct opts_option *o = NULL;
        for (size_t i = 0; i < n && !o; i++) {
            if (cmd->options[i].key == c)
                o = &cmd->options[i];
        }
        if (o) {
            if ((rc = take(cmd, o, args, optarg)) != OPTS_GO_ON)
                return rc;
        } else if (c == 'j') {
            *jsonp = true;
        } else if (c == 'h') {
            fputs(cmd->help, stdout);
            return CTL_EXIT_OK;
        } else {
            return CTL_EXIT_USAGE;
        }
    }
    return check_rest(cmd, n, argc, argv, args);
}

int opts_run(const struct opts_command *cmd,
             struct ctl *ctl,
             int argc,
             char **argv)
{
    void *args = calloc(1, cmd->args_size ? cmd->args_size : 1);
    int rc;

    if (!args)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    rc = opts_parse(cmd, argc, argv, args, &ctl->json);
    /* Every command here talks to the broker, after its checks. */
    if (rc == OPTS_GO_ON && (rc = ctl_connect(ctl)) == 0)
        rc = cmd->run(ctl, args, argv + optind);
    if (cmd->cleanup)
        cmd->cleanup(args);
    free(args);
    return rc;
}
