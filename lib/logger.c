/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Leveled, line-atomic logging (see include/vnib/logger.h).
 *
 * Format on a terminal or file: "2026-11-21T18:05:00.123Z
 * vnibrokerd[4242]: info: req=9f..: text".  The timestamp is UTC with
 * milliseconds so that lines from several replicas on several hosts sort
 * together.  Under systemd (JOURNAL_STREAM set when the logger is
 * created) the line is "<6>info: req=9f..: text": the sd-daemon(3)
 * priority prefix lets `journalctl -p` filter, and the journal records
 * its own timestamp, identifier and pid.
 *
 * Repeats: a message with the same level and the same text (the request
 * id aside) as one written less than a window ago is counted, not
 * written.  Each distinct message has its own slot, so two floods that
 * interleave are both suppressed.  When the window of a slot with
 * suppressed repeats has passed, the next call (or logger_destroy)
 * writes one "message repeated N more times" line at the message's
 * level, under the request id of the last repeat (so that the id of a
 * folded reply still finds the reason, if it was the last).  A mutex guards the
 * slots; lines are still one write(2) each, made under that mutex, so a
 * slow reader of the descriptor slows every thread that logs (write_line).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vnib/monotime.h"
#include "vnib/logger.h"

enum {
    MSG_MAX = 1024,    /* formatted text, then truncated */
    LINE_MAX_ = 1200,  /* one whole line */
    REPEAT_SLOTS = 16, /* distinct messages tracked at once */
    REPEAT_WINDOW_MS_DEFAULT = 10000,
};

/* One recently written message and the repeats counted since. */
struct repeat {
    bool used;
    int level;
    int64_t since_ms;    /* when the message was last written */
    unsigned long count; /* repeats suppressed since then */
    char last_reqid[40]; /* request id of the last repeat ("": none) */
    char text[MSG_MAX];
};

struct logger {
    char ident[32];       /* program name written on every line */
    int level;            /* most verbose syslog level written */
    int fd;               /* destination, borrowed */
    pid_t pid;            /* written after ident, as syslog does */
    bool journal;         /* JOURNAL_STREAM was set: "<N>" prefix, no stamp */
    int64_t window_ms;    /* repeat window, 0: every message written */
    pthread_mutex_t lock; /* guards slots */
    struct repeat slots[REPEAT_SLOTS];
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

static bool journal_from_env(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    return js && *js;
}

struct logger *logger_create(const char *ident, int level, int fd)
{
    struct logger *log = calloc(1, sizeof(*log));
    if (!log)
        return NULL;
    snprintf(log->ident, sizeof(log->ident), "%s", ident ? ident : "vnib");
    log->level = level;
    log->fd = fd;
    log->pid = getpid();
    log->journal = journal_from_env();
    log->window_ms = REPEAT_WINDOW_MS_DEFAULT;
    int e = pthread_mutex_init(&log->lock, NULL);
    if (e != 0) {
        free(log);
        errno = e;
        return NULL;
    }
    return log;
}

static void flush_repeats(struct logger *log, int64_t now, bool all);

void logger_destroy(struct logger *log)
{
    int saved_errno = errno;
    if (log) {
        pthread_mutex_lock(&log->lock);
        flush_repeats(log, 0, true);
        pthread_mutex_unlock(&log->lock);
        pthread_mutex_destroy(&log->lock);
        free(log);
    }
    errno = saved_errno;
}

void logger_set_repeat_window(struct logger *log, long window_ms)
{
    pthread_mutex_lock(&log->lock);
    flush_repeats(log, 0, true);
    log->window_ms = window_ms > 0 ? window_ms : 0;
    pthread_mutex_unlock(&log->lock);
}

bool logger_journal(const struct logger *log)
{
    return log ? log->journal : journal_from_env();
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

/* Format and write one line: prefix (stamp and ident, or the journal's
 * priority), level name, optional request id, then text (already
 * sanitized).  log may be NULL.
 */
static void write_line(const struct logger *log,
                       int level,
                       const char *reqid,
                       const char *lead,
                       const char *text)
{
    char line[LINE_MAX_];
    const char *rq = reqid ? "req=" : "";
    const char *rid = reqid ? reqid : "";
    const char *rsep = reqid ? ": " : "";
    int n;

    if (logger_journal(log)) {
        int prio = level < LOG_EMERG   ? LOG_EMERG
                   : level > LOG_DEBUG ? LOG_DEBUG
                                       : level;
        n = snprintf(
            line, sizeof(line), "<%d>%s: ", prio, logger_level_name(level));
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line,
                     sizeof(line),
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld]: %s: ",
                     tm.tm_year + 1900,
                     tm.tm_mon + 1,
                     tm.tm_mday,
                     tm.tm_hour,
                     tm.tm_min,
                     tm.tm_sec,
                     ts.tv_nsec / 1000000,
                     log ? log->ident : "vnib",
                     (long)(log ? log->pid : getpid()),
                     logger_level_name(level));
    }
    /* Then what both share: the request id and the text. */
    if (n < 0 || (size_t)n >= sizeof(line))
        return;
    int m = snprintf(line + n,
                     sizeof(line) - (size_t)n,
                     "%s%s%s%s%s\n",
                     rq,
                     rid,
                     rsep,
                     lead,
                     text);
    if (m < 0)
        return;
    n += m;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    /* One write per line keeps concurrent lines whole.  The descriptor is
     * left blocking: when its reader is slow (a full pipe to the journal,
     * a stalled terminal) write(2) waits, with the logger's lock held, so
     * every thread that logs waits with it, requests included.  A short
     * write (interrupted, or a non-blocking descriptor it was given) is
     * not retried: the rest of that line is lost, never repeated.
     */
    ssize_t w = write(log ? log->fd : STDERR_FILENO, line, (size_t)n);
    (void)w;
}

/* Write the summary of one slot with suppressed repeats. */
static void write_summary(const struct logger *log, const struct repeat *r)
{
    char lead[96];
    snprintf(lead,
             sizeof(lead),
             "message repeated %lu more time%s in %lld s: ",
             r->count,
             r->count == 1 ? "" : "s",
             (long long)((log->window_ms + 999) / 1000));
    write_line(
        log, r->level, r->last_reqid[0] ? r->last_reqid : NULL, lead, r->text);
}

/* Write the summaries of the slots whose window has passed (all of them
 * when all is set) and free those slots.  Called with the lock held.
 */
static void flush_repeats(struct logger *log, int64_t now, bool all)
{
    for (size_t i = 0; i < REPEAT_SLOTS; i++) {
        struct repeat *r = &log->slots[i];
        if (!r->used || (!all && now - r->since_ms < log->window_ms))
            continue;
        if (r->count > 0)
            write_summary(log, r);
        r->used = false;
        r->count = 0;
    }
}

/* Decide, with the lock held, whether text is a repeat to count (true)
 * or a line to write (false; it then opens a window of its own).
 */
static bool count_repeat(struct logger *log,
                         int level,
                         const char *reqid,
                         const char *text)
{
    int64_t now = monotime_ms();
    struct repeat *free_slot = NULL;
    struct repeat *oldest = NULL;

    flush_repeats(log, now, false);
    for (size_t i = 0; i < REPEAT_SLOTS; i++) {
        struct repeat *r = &log->slots[i];
        if (!r->used) {
            if (!free_slot)
                free_slot = r;
            continue;
        }
        if (r->level == level && strcmp(r->text, text) == 0) {
            r->count++;
            snprintf(
                r->last_reqid, sizeof(r->last_reqid), "%s", reqid ? reqid : "");
            return true;
        }
        if (!oldest || r->since_ms < oldest->since_ms)
            oldest = r;
    }
    if (!free_slot) {
        /* More distinct messages than slots: the oldest gives way. */
        free_slot = oldest;
        if (free_slot->count > 0)
            write_summary(log, free_slot);
    }
    free_slot->used = true;
    free_slot->level = level;
    free_slot->since_ms = now;
    free_slot->count = 0;
    free_slot->last_reqid[0] = '\0';
    snprintf(free_slot->text, sizeof(free_slot->text), "%s", text);
    return false;
}

void logger_printf(
    struct logger *log, int level, const char *reqid, const char *fmt, ...)
{
    int saved_errno = errno;
    char msg[MSG_MAX];
    va_list ap;

    if (log && level > log->level)
        goto done;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sanitize(msg);

    if (!log) {
        write_line(NULL, level, reqid, "", msg);
        goto done;
    }
    pthread_mutex_lock(&log->lock);
    if (log->window_ms == 0 || !count_repeat(log, level, reqid, msg))
        write_line(log, level, reqid, "", msg);
    pthread_mutex_unlock(&log->lock);
done:
    errno = saved_errno;
}
