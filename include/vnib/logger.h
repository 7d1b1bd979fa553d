/* Leveled logging for vnibroker daemons and tools.
 *
 * One line per message on a file descriptor (stderr under systemd, where
 * the journal adds its own metadata), written with a single write(2) so
 * that lines from concurrent threads never interleave.  Each line carries
 * an optional request id so that every line about one HTTP request can be
 * found together.  Control characters in messages are replaced, so a value
 * taken from a request cannot forge extra log lines.
 *
 * Secrets never go through here: callers log token names and masked
 * connection strings, never the values.
 */
#ifndef VNIB_LOGGER_H
#define VNIB_LOGGER_H

#include <stdbool.h>
#include <syslog.h> /* LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG */

struct logger;

/* Create a logger writing to fd (not closed by logger_destroy), prefixing
 * lines with ident and dropping messages less severe than level.
 */
struct logger *logger_create(const char *ident, int level, int fd)
    __attribute__((warn_unused_result));

/* Free the logger (NULL accepted). */
void logger_destroy(struct logger *log);

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
