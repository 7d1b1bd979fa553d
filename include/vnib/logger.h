/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Leveled logging for vnibroker daemons and tools.
 *
 * One line per message on a file descriptor (stderr under systemd, where
 * the journal adds its own metadata), written with a single write(2) so
 * that lines from concurrent threads never interleave.  Each line carries
 * an optional request id so that every line about one HTTP request can be
 * found together.  Control characters in messages are replaced, so a value
 * taken from a request cannot forge extra log lines.
 *
 * Under systemd (the environment variable JOURNAL_STREAM set when the
 * logger is created) each line starts with the sd-daemon(3) priority
 * "<3>".."<7>" instead of a timestamp, ident and pid, which the journal
 * records itself; `journalctl -p warning` then filters by level.
 *
 * The same message (same level, same text; the request id is not
 * compared) written again within a window (10 s by default) is counted,
 * not written; once the window has passed, the next call or
 * logger_destroy writes one "message repeated N more times in 10 s: text"
 * line, under the request id of the last repeat.  So a database outage
 * makes a few lines, not thousands.
 *
 * Secrets never go through here: callers log token names and masked
 * connection strings, never the values.
 */
#ifndef VNIB_LOGGER_H
#define VNIB_LOGGER_H

#include <stdbool.h>
#include <syslog.h> /* LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG */

#include "vnib/error.h"

struct logger;

/* Create a logger writing to fd (not closed by logger_destroy), prefixing
 * lines with ident and dropping messages less severe than level.  The
 * journal format is chosen here, from JOURNAL_STREAM, once.
 */
struct logger *logger_create(const char *ident,
                             int level,
                             int fd) VNIB_MUST_CHECK;

/* Write pending repeat summaries and free the logger (NULL accepted). */
void logger_destroy(struct logger *log);

/* Set the repeat window in milliseconds (0: write every message).  Pending
 * repeat summaries are written first.
 */
void logger_set_repeat_window(struct logger *log, long window_ms);

/* True when lines carry the journal's priority prefix (log may be NULL:
 * then JOURNAL_STREAM is read now).
 */
bool logger_journal(const struct logger *log);

/* Log one message.  reqid may be NULL.  log may be NULL (then the message
 * goes to stderr at every level: used before the logger exists).
 */
void logger_printf(struct logger *log,
                   int level,
                   const char *reqid,
                   const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

/* True when messages at level would be written (to skip costly formatting). */
bool logger_enabled(const struct logger *log, int level);

/* Map "error", "warning", "notice", "info", "debug" to a level.
 * Returns 0, or -1 with errno EINVAL.
 */
int logger_level_parse(const char *name, int *levelp);

/* The name of a level ("info"), for printing configuration. */
const char *logger_level_name(int level);

#endif /* !VNIB_LOGGER_H */
