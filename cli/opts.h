/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Declarative command lines for vnibctl: each command is one table (its
 * name, help text, positional arguments and options with their types and
 * targets, and the handler), and opts_parse is the one loop that walks
 * argv against it.
 *
 * Every command also takes --json and -h/--help.  The checks run in a
 * fixed order, the order the commands always had: options as they come
 * (unknown ones, missing arguments, numbers, choices and calls not marked
 * OPTS_LATE, --help), then the count and the checks of the positional
 * arguments, then the OPTS_REQUIRED options in table order, then the
 * OPTS_LATE checks in table order.
 */
#ifndef VNIB_CLI_OPTS_H
#define VNIB_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h> /* offsetof, for the OPTS_ROW_ macros */

/* Handlers and calls return this to go on, or an exit status to stop. */
#define OPTS_GO_ON (-1)

enum opts_type {
    OPTS_FLAG,   /* no argument; sets a bool, or runs `call` (arg NULL) */
    OPTS_STRING, /* a const char * to the argument */
    OPTS_UINT,   /* a struct opts_uint: digits only, in min..max */
    OPTS_CHOICE, /* a const char *, one of `choices` */
    OPTS_CALL,   /* `call` takes the argument (repeatable options) */
};

enum {
    OPTS_REQUIRED = 1, /* "--NAME ARG is required" when absent */
    OPTS_LATE = 2,     /* check after the positional arguments */
    OPTS_SHORT = 4,    /* -KEY too */
};

/* The target of an OPTS_UINT option. */
struct opts_uint {
    const char *text; /* the argument, or NULL when not given */
    unsigned long long value;
};

struct opts_option {
    const char *name; /* long name, without "--" */
    int key;          /* getopt's value for it: unique in the command */
    enum opts_type type;
    size_t offset; /* of the target in the command's argument struct */
    int flags;
    const char *arg; /* its argument in messages ("N"); NULL for a flag */
    unsigned long long min, max; /* OPTS_UINT */
    const char *const *choices;  /* OPTS_CHOICE, NULL-terminated */
    const char *choices_text;    /* "on, off or auto" */
    /* Extra check of an OPTS_STRING argument (messages name cmd): returns
     * 0 or an exit status.
     */
    int (*check)(const char *cmd, const char *arg);
    /* OPTS_CALL (never OPTS_LATE): take arg into args; returns
     * OPTS_GO_ON or an exit status.
     */
    int (*call)(void *args, const char *cmd, const char *arg);
};

/* Rows of an option table, one line each: TYPE is the struct the command's
 * options fill, FIELD the target in it.
 */
#define OPTS_ROW_FLAG(name, key, type, field)                             \
    {                                                                     \
        name, key, OPTS_FLAG, offsetof(type, field), 0, NULL, 0, 0, NULL, \
            NULL, NULL, NULL                                              \
    }
#define OPTS_ROW_STRING(name, key, type, field, flags, arg, check)             \
    {                                                                          \
        name, key, OPTS_STRING, offsetof(type, field), flags, arg, 0, 0, NULL, \
            NULL, check, NULL                                                  \
    }
#define OPTS_ROW_UINT(name, key, type, field, flags, arg, min, max)        \
    {                                                                      \
        name, key, OPTS_UINT, offsetof(type, field), flags, arg, min, max, \
            NULL, NULL, NULL, NULL                                         \
    }
#define OPTS_ROW_CHOICE(name, key, type, field, flags, arg, choices, text) \
    {                                                                      \
        name, key, OPTS_CHOICE, offsetof(type, field), flags, arg, 0, 0,   \
            choices, text, NULL, NULL                                      \
    }
#define OPTS_ROW_CALL(name, key, arg, call)                           \
    {                                                                 \
        name, key, OPTS_CALL, 0, 0, arg, 0, 0, NULL, NULL, NULL, call \
    }
#define OPTS_ROW_ACTION(name, key, flags, call)                            \
    {                                                                      \
        name, key, OPTS_FLAG, 0, flags, NULL, 0, 0, NULL, NULL, NULL, call \
    }
#define OPTS_ROW_END                                                 \
    {                                                                \
        NULL, 0, OPTS_FLAG, 0, 0, NULL, 0, 0, NULL, NULL, NULL, NULL \
    }

struct ctl;

struct opts_command {
    const char *name;      /* NULL for the global options */
    const char *help;      /* printed by --help */
    bool stop_at_arg;      /* stop at the first non-option (the global ones) */
    int nargs;             /* positional arguments wanted; -1: not checked */
    const char *args_text; /* named in "missing ARGS" */
    int (*arg_check[2])(const char *cmd, const char *arg);
    const struct opts_option *options; /* NULL or ends with a NULL name */
    size_t args_size;                  /* of the struct options fill */
    /* Run with the filled struct and the positional arguments, ctl
     * connected; returns an exit status.
     */
    int (*run)(struct ctl *ctl, void *args, char **pos);
    void (*cleanup)(void *args); /* frees what calls kept; may be NULL */
};

/* Parse argv (argv[0] is the command's name) against cmd into args, and
 * --json into *jsonp.  Returns OPTS_GO_ON with the positional arguments
 * from argv[optind], or an exit status (CTL_EXIT_OK after --help, having
 * printed it; CTL_EXIT_USAGE having printed why).
 */
int opts_parse(const struct opts_command *cmd,
               int argc,
               char **argv,
               void *args,
               bool *jsonp);

/* Parse argv against cmd into a zeroed argument struct, connect to the
 * broker (ctl_connect) and run the command; returns an exit status.
 */
int opts_run(const struct opts_command *cmd,
             struct ctl *ctl,
             int argc,
             char **argv);

#endif /* !VNIB_CLI_OPTS_H */
