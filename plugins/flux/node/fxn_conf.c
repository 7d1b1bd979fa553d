/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fxn_conf: vnib-flux-node's settings file (see fxn_conf.h), read as the
 * sh assignments it is written in, without a shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/flux/node/fxn_conf.h"
#include "vnib/duration.h"

/* The largest settings file read. */
#define CONF_MAX_SIZE (64 * 1024)
/* The longest value of a setting. */
#define VALUE_MAX FXN_PATH_MAX

void fxn_conf_defaults(struct fxn_conf *c, const char *confdir)
{
    memset(c, 0, sizeof(*c));
    snprintf(
        c->agent_config, sizeof(c->agent_config), "%s/agent.toml", confdir);
    c->reservation_wait_ms = 0;
    c->retry_busy_ms = 5 * 60 * 1000;
    c->syslog = true;
}

/* One line's value, from p (just past '='), unquoted into buf.  *endp is
 * where the value ends.  Returns 0, or -1 with why set. */
static int read_value(
    const char *p, char *buf, size_t size, const char **endp, const char **why)
{
    size_t n = 0;

    while (*p && *p != ' ' && *p != '\t') {
        if (*p == '\'' || *p == '"') {
            char q = *p++;
            while (*p && *p != q) {
                if (q == '"' && strchr("$`\\", *p)) {
                    *why =
                        "an expansion or escape needs a shell; write the "
                        "value as it is";
                    return -1;
                }
                if (n + 1 >= size) {
                    *why = "the value is too long";
                    return -1;
                }
                buf[n++] = *p++;
            }
            if (*p != q) {
                *why = "a quote is not closed on its line";
                return -1;
            }
            p++;
            continue;
        }
        if (strchr("$`\\;&|<>()", *p)) {
            *why =
                "an expansion, escape or command needs a shell; write the "
                "value as it is";
            return -1;
        }
        if (n + 1 >= size) {
            *why = "the value is too long";
            return -1;
        }
        buf[n++] = *p++;
    }
    buf[n] = '\0';
    *endp = p;
    return 0;
}

/* Apply NAME=value.  Returns 0, or -1 with why set. */
static int apply(struct fxn_conf *c,
                 const char *name,
                 const char *value,
                 const char **why)
{
    long ms;

    if (!strcmp(name, "AGENT_CONFIG")) {
        if (!*value) {
            *why = "AGENT_CONFIG is empty";
            return -1;
        }
        snprintf(c->agent_config, sizeof(c->agent_config), "%s", value);
    } else if (!strcmp(name, "RESERVATION_WAIT")) {
        if (duration_parse_ms(value, &ms) < 0) {
            *why =
                "RESERVATION_WAIT is not a duration (seconds, or 30s, "
                "5m, 1h; 0: as long as the prolog runs)";
            return -1;
        }
        c->reservation_wait_ms = ms;
    } else if (!strcmp(name, "HOUSEKEEPING_RETRY_BUSY")) {
        if (duration_parse_ms(value, &ms) < 0) {
            *why =
                "HOUSEKEEPING_RETRY_BUSY is not a duration (500ms, 5s, "
                "5m, 1h)";
            return -1;
        }
        c->retry_busy_ms = ms;
    } else if (!strcmp(name, "LOGGER")) {
        c->syslog = *value != '\0';
    } else if (strcmp(name, "VNIB_AGENT") != 0 && strcmp(name, "FLUX") != 0) {
        *why =
            "unknown setting (AGENT_CONFIG, RESERVATION_WAIT, "
            "HOUSEKEEPING_RETRY_BUSY, LOGGER)";
        return -1;
    }
    return 0;
}

/* One line of the file.  Returns 0, or -1 with why set. */
static int parse_line(struct fxn_conf *c, const char *p, const char **why)
{
    char name[64], *value = NULL;
    size_t n = 0;
    int rc = -1;

    p += strspn(p, " \t");
    if (!*p || *p == '#')
        return 0;
    if (!strncmp(p, "export", 6) && (p[6] == ' ' || p[6] == '\t'))
        p += 6 + strspn(p + 6, " \t");
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_')) {
        *why = "not a NAME=value line";
        return -1;
    }
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')
           || (*p >= '0' && *p <= '9') || *p == '_') {
        if (n + 1 >= sizeof(name)) {
            *why = "the name is too long";
            return -1;
        }
        name[n++] = *p++;
    }
    name[n] = '\0';
    if (*p++ != '=') {
        *why = "not a NAME=value line (no spaces around '=')";
        return -1;
    }
    if (!(value = malloc(VALUE_MAX))) {
        *why = "out of memory";
        return -1;
    }
    if (read_value(p, value, VALUE_MAX, &p, why) < 0)
        goto done;
    p += strspn(p, " \t");
    if (*p && *p != '#') {
        *why = "one NAME=value per line, nothing after it but a comment";
        goto done;
    }
    rc = apply(c, name, value, why);
done:
    free(value);
    return rc;
}

int fxn_conf_parse(struct fxn_conf *c,
                   const char *text,
                   const char *path,
                   vnib_error_t *errp)
{
    const char *line = text;
    int lineno = 0;

    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *why = NULL;
        char *copy = strndup(line, len);

        lineno++;
        if (!copy) {
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
        if (copy[0] && copy[strlen(copy) - 1] == '\r')
            copy[strlen(copy) - 1] = '\0';
        if (parse_line(c, copy, &why) < 0) {
            free(copy);
            errno = EINVAL;
            return errprintf(errp, "%s:%d: %s", path, lineno, why);
        }
        free(copy);
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

int fxn_conf_load(struct fxn_conf *c, const char *path, vnib_error_t *errp)
{
    struct stat st;
    char *text = NULL;
    ssize_t n;
    int fd, rc = -1;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        if (errno == ENOENT)
            return 0;
        return errprintf(errp, "%s: %s", path, strerror(errno));
    }
    /* Root reads it: refuse what another user could have written. */
    if (fstat(fd, &st) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EPERM;
        errprintf(errp, "%s is not a regular file; refusing", path);
        goto done;
    }
    if (st.st_uid != 0) {
        errno = EPERM;
        errprintf(errp, "%s is not owned by root; refusing", path);
        goto done;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        errno = EPERM;
        errprintf(errp, "%s is writable by others; refusing", path);
        goto done;
    }
    if (st.st_size > CONF_MAX_SIZE) {
        errno = EINVAL;
        errprintf(errp, "%s is larger than %d bytes", path, CONF_MAX_SIZE);
        goto done;
    }
    if (!(text = malloc((size_t)st.st_size + 1))) {
        errno = ENOMEM;
        errprintf(errp, "out of memory");
        goto done;
    }
    if ((n = read(fd, text, (size_t)st.st_size)) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    text[n] = '\0';
    if (strlen(text) != (size_t)n) {
        errno = EINVAL;
        errprintf(errp, "%s holds a NUL byte", path);
        goto done;
    }
    rc = fxn_conf_parse(c, text, path, errp);
done:
    free(text);
    close(fd);
    return rc;
}

int fxn_conf_agent_path(const struct fxn_conf *c,
                        const char *node,
                        char *buf,
                        size_t size,
                        vnib_error_t *errp)
{
    size_t n = 0, nlen = strlen(node);

    for (const char *p = c->agent_config; *p; p++) {
        const char *piece = p;
        size_t len = 1;
        if (p[0] == '%' && p[1] == 'n') {
            piece = node;
            len = nlen;
            p++;
        }
        if (n + len >= size) {
            errno = ENAMETOOLONG;
            return errprintf(
                errp, "AGENT_CONFIG is too long for node %s", node);
        }
        memcpy(buf + n, piece, len);
        n += len;
    }
    buf[n] = '\0';
    return 0;
}
