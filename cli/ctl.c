/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared vnibctl helpers (see ctl.h): connecting with the configured
 * token, turning a call's outcome into an exit status, argument checks,
 * query strings, and the error printers.
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

#include <unistd.h>

#include "vnib/secfile.h"
#include "vnib/token.h"
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

/* The token from --token-file, $VNIB_TOKEN or $VNIB_TOKEN_FILE, in a
 * buffer the caller wipes with secfile_free(*tokenp, *sizep); NULL when
 * none is configured.  Returns 0 or an exit status.
 */
static int token_load(const struct ctl *ctl, char **tokenp, size_t *sizep)
{
    vnib_error_t error = {0};
    const char *file = ctl->token_file;
    const char *env = getenv("VNIB_TOKEN");
    char *buf = NULL;
    size_t len = 0;

    *tokenp = NULL;
    *sizep = 0;
    if (!file && env && env[0]) {
        len = strlen(env);
        if (!(buf = malloc(len + 1)))
            return ctl_fail(CTL_EXIT_FAILED, "out of memory");
        memcpy(buf, env, len + 1);
    } else {
        if (!file)
            file = getenv("VNIB_TOKEN_FILE");
        if (!file || !file[0])
            return 0;
        if (secfile_read(file, &buf, &len, &error) < 0)
            return ctl_fail(CTL_EXIT_USAGE, "%s", error.text);
    }
    /* Trailing newlines and blanks are an editor's, not the token's. */
    while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
        buf[--len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] >= 0x7f) {
            secfile_free(buf, len);
            return ctl_fail(CTL_EXIT_USAGE,
                            "%s: must hold one token on one line",
                            file ? file : "$VNIB_TOKEN");
        }
    }
    if (len == 0) {
        secfile_free(buf, len);
        return ctl_fail(
            CTL_EXIT_USAGE, "%s: holds no token", file ? file : "$VNIB_TOKEN");
    }
    *tokenp = buf;
    *sizep = len;
    return 0;
}

/* Create the client on first use.  Returns 0 or an exit status. */
int ctl_connect(struct ctl *ctl)
{
    vnib_error_t error = {0};
    char *token = NULL;
    size_t size = 0;
    int rc;

    if (ctl->client)
        return 0;
    if (ctl->cacert && access(ctl->cacert, R_OK) < 0)
        return ctl_fail(
            CTL_EXIT_USAGE, "CA file %s: %s", ctl->cacert, strerror(errno));
    if ((rc = token_load(ctl, &token, &size)) != 0)
        return rc;
    ctl->client = vnib_client_create(ctl->url, token, &error);
    secfile_free(token, size);
    if (!ctl->client)
        return ctl_fail(errno == EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_FAILED,
                        "%s",
                        error.text);
    if ((ctl->cacert && vnib_client_set_cacert(ctl->client, ctl->cacert) < 0)
        || vnib_client_set_timeout_ms(ctl->client, ctl->timeout_ms) < 0)
        return ctl_fail(CTL_EXIT_FAILED, "%s", strerror(errno));
    return 0;
}

int ctl_outcome(const struct ctl *ctl,
                int status,
                const json_t *reply,
                const vnib_error_t *error)
{
    if (status < 0) {
        int rc = errno == EINVAL || errno == ENOMEM ? CTL_EXIT_FAILED
                                                    : CTL_EXIT_UNREACHABLE;
        return ctl_fail(rc, "%s", error->text);
    }
    if (status >= 400) {
        if (ctl->json && reply)
            ctl_print_json(reply);
        return ctl_fail(CTL_EXIT_FAILED, "%s", error->text);
    }
    if (status >= 300)
        return ctl_fail(CTL_EXIT_FAILED,
                        "unexpected HTTP %d from %s (redirects are not "
                        "followed; check --url)",
                        status,
                        vnib_client_url(ctl->client));
    return CTL_EXIT_OK;
}

/* The job id pattern of the API, checked here for a clear message. */
int ctl_check_job_id(const char *cmd, const char *id)
{
    size_t n = strspn(id,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._:@+-");
    if (n == 0 || n > 128 || id[n] != '\0')
        return ctl_usage_error(cmd,
                               "'%s' is not a valid job id (1-128 of "
                               "letters, digits and ._:@+-)",
                               id);
    if (id[0] == '-')
        return ctl_usage_error(cmd,
                               "'%s' is not a valid job id (it must not "
                               "start with '-')",
                               id);
    return 0;
}

int ctl_check_node(const char *cmd, const char *node)
{
    if (!token_node_name_valid(node))
        return ctl_usage_error(cmd,
                               "'%s' is not a valid node name (1-255 of "
                               "letters, digits and -_. ; not starting with "
                               "- or .)",
                               node);
    return 0;
}

/* A path with a query string of escaped values, built up one parameter at
 * a time in a memstream.
 */
struct query {
    FILE *f;
    char *buf;
    size_t size;
    char sep; /* '?' before the first parameter, then '&' */
};

static int query_open(struct query *q, const char *path)
{
    q->buf = NULL;
    q->size = 0;
    q->sep = '?';
    if (!(q->f = open_memstream(&q->buf, &q->size)))
        return -1;
    fputs(path, q->f);
    return 0;
}

/* Append name=escaped(value) when value is not NULL. */
static int query_add(struct query *q, const char *name, const char *value)
{
    char *esc;

    if (!value)
        return 0;
    if (!(esc = vnib_client_escape(value)))
        return -1;
    fprintf(q->f, "%c%s=%s", q->sep, name, esc);
    q->sep = '&';
    free(esc);
    return 0;
}

/* Close the stream; returns the path (the caller frees) or NULL. */
static char *query_close(struct query *q)
{
    if (fclose(q->f) != 0) {
        free(q->buf);
        return NULL;
    }
    return q->buf;
}

int ctl_call(struct ctl *ctl,
             const char *method,
             const char *path,
             const char *const *params,
             json_t **replyp)
{
    vnib_error_t error = {0};
    struct query q;
    char *full = NULL;
    int rc;

    *replyp = NULL;
    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    if (query_open(&q, path) < 0)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    for (size_t i = 0; params && params[i]; i += 2)
        query_add(&q, params[i], params[i + 1]);
    if (!(full = query_close(&q)))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    int status =
        vnib_client_request(ctl->client, method, full, NULL, replyp, &error);
    free(full);
    return ctl_outcome(ctl, status, *replyp, &error);
}
