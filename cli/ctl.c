/* Shared vnibctl helpers (see ctl.h).
 *
 * getopt's own messages name argv[0], which is the subcommand here, so
 * ctl_getopt turns them off and prints its own, in the same shape as every
 * other usage error.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ctl.h"

int ctl_getopt(int argc,
               char **argv,
               const char *cmd,
               const char *shortopts,
               const struct option *longopts,
               bool *first)
{
    int c;

    if (*first) {
        optind = 0; /* glibc: a full restart, argv[0] skipped */
        *first = false;
    }
    opterr = 0;
    c = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (c == '?') {
        if (optopt)
            ctl_usage_error(cmd, "unknown option '-%c'", optopt);
        else
            ctl_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        return '?';
    }
    if (c == ':') {
        ctl_usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
        return '?';
    }
    return c;
}

int ctl_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "vnibctl%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr,
            "\nTry 'vnibctl%s%s --help'.\n",
            cmd ? " " : "",
            cmd ? cmd : "");
    return CTL_EXIT_USAGE;
}

int ctl_fail(int status, const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    /* Messages may quote the broker: keep them on one harmless line. */
    for (char *p = text; *p; p++) {
        if ((unsigned char)*p < ' ' || *p == 0x7f)
            *p = '?';
    }
    fprintf(stderr, "vnibctl: %s\n", text);
    return status;
}

int ctl_parse_uint(const char *cmd,
                   const char *what,
                   const char *s,
                   unsigned long long min,
                   unsigned long long max,
                   unsigned long long *valuep)
{
    unsigned long long v = 0;
    size_t n = strspn(s, "0123456789");
    char *end = NULL;

    /* strtoull alone would take signs, spaces and hex prefixes. */
    if (n > 0 && s[n] == '\0') {
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == 0 && *end == '\0' && v >= min && v <= max) {
            *valuep = v;
            return 0;
        }
    }
    ctl_usage_error(
        cmd, "%s: '%s' is not a number in %llu-%llu", what, s, min, max);
    return -1;
}

int ctl_print_json(const json_t *v)
{
    if (json_dumpf(v, stdout, JSON_INDENT(2)) < 0 || putchar('\n') == EOF
        || fflush(stdout) == EOF)
        return ctl_fail(CTL_EXIT_FAILED, "cannot write to stdout");
    return CTL_EXIT_OK;
}
