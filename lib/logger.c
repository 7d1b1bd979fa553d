/* Leveled, line-atomic logging (see include/vnib/logger.h).
 *
 * Format: "2026-11-21T18:05:00.123Z vnibrokerd[4242]: info: req=9f..: text".
 * The timestamp is UTC with milliseconds so that lines from several
 * replicas on several hosts sort together.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnib/logger.h"

struct logger {
    char ident[32]; /* program name written on every line */
    int level;      /* most verbose syslog level written */
    int fd;         /* destination, borrowed */
    pid_t pid;      /* written after ident, as syslog does */
};

static const struct {
    const char *name;
    int level;
} level_names[] = {
    {"error", LOG_ERR},
    {"warning", LOG_WARNING},
    {"notice", LOG_NOTICE},
    {"info", LOG_INFO},
    {"debug", LOG_DEBUG},
};

struct logger *logger_create(const char *ident, int level, int fd)
{
    struct logger *log = calloc(1, sizeof(*log));
    if (!log)
        return NULL;
    snprintf(log->ident, sizeof(log->ident), "%s", ident ? ident : "vnib");
    log->level = level;
    log->fd = fd;
    log->pid = getpid();
    return log;
}

void logger_destroy(struct logger *log)
{
    int saved_errno = errno;
    free(log);
    errno = saved_errno;
}

bool logger_enabled(const struct logger *log, int level)
{
    return !log || level <= log->level;
}

int logger_level_parse(const char *name, int *levelp)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (name && strcmp(name, level_names[i].name) == 0) {
            *levelp = level_names[i].level;
            return 0;
        }
    }
    errno = EINVAL;
    return -1;
}

const char *logger_level_name(int level)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (level_names[i].level == level)
            return level_names[i].name;
    return level < LOG_ERR ? "error" : "debug";
}

/* Replace bytes that could break the one-line-per-message rule. */
static void sanitize(char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            *s = '?';
    }
}

void logger_printf(
    struct logger *log, int level, const char *reqid, const char *fmt, ...)
{
    int saved_errno = errno;
    char msg[1024];
    char line[1200];
    struct timespec ts;
    struct tm tm;
    va_list ap;

    if (log && level > log->level)
        goto done;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sanitize(msg);

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n =
        snprintf(line,
                 sizeof(line),
                 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld]: %s: %s%s%s%s\n",
                 tm.tm_year + 1900,
                 tm.tm_mon + 1,
                 tm.tm_mday,
                 tm.tm_hour,
                 tm.tm_min,
                 tm.tm_sec,
                 ts.tv_nsec / 1000000,
                 log ? log->ident : "vnib",
                 (long)(log ? log->pid : getpid()),
                 logger_level_name(level),
                 reqid ? "req=" : "",
                 reqid ? reqid : "",
                 reqid ? ": " : "",
                 msg);
    if (n < 0)
        goto done;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    /* One write per line keeps concurrent lines whole; a short write to a
     * full pipe is not retried: logging must never block a request.
     */
    ssize_t w = write(log ? log->fd : STDERR_FILENO, line, (size_t)n);
    (void)w;
done:
    errno = saved_errno;
}
