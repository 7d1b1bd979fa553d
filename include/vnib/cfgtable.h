/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Settings tables: one row per configuration key, applied to a parsed TOML
 * file (lib/toml.c gives the jansson tree and the line of every key).
 *
 * vnibrokerd (server/config.c) and vnib-agent (agent/agentcfg.c) keep
 * their settings in a struct of char * and long fields; a row names a key
 * ("table.key"), the field's offset, its type, bounds and default.  The
 * walk refuses unknown tables and keys and values of the wrong type or out
 * of bounds, with messages that name the file and line
 * ("agent.toml:7: nic.floor_percent: 101 is out of range 0-100").
 */
#ifndef VNIB_CFGTABLE_H
#define VNIB_CFGTABLE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "vnib/error.h"

/* Items of a CFGTABLE_STRINGS value are kept joined by this character. */
#define CFGTABLE_LIST_SEP "\x1f"

enum cfgtable_type {
    CFGTABLE_STRING,
    CFGTABLE_INT,
    CFGTABLE_STRINGS, /* a TOML array of strings, joined by CFGTABLE_LIST_SEP */
    CFGTABLE_BOOL,    /* kept as a long, 0 or 1 */
};

/* True for the types kept as a malloc'd char *. */
#define CFGTABLE_IS_TEXT(type) \
    ((type) == CFGTABLE_STRING || (type) == CFGTABLE_STRINGS)

enum {
    CFGTABLE_SECRET = 1, /* wiped before it is freed; printed masked */
};

struct cfgtable_row {
    const char *key; /* "table.key" */
    enum cfgtable_type type;
    size_t offset; /* of the char * or long in the settings struct */
    long min;      /* CFGTABLE_INT bounds, inclusive */
    long max;
    const char *def_str; /* default of the text types */
    long def_int;        /* default of CFGTABLE_INT and CFGTABLE_BOOL */
    int flags;
    const char *doc; /* one line, for printed configurations; may be NULL */
};

/* A table: its rows and how many. */
struct cfgtable {
    const struct cfgtable_row *rows;
    size_t nrows;
};

/* The field of row in the settings struct at base. */
char **cfgtable_str(void *base, const struct cfgtable_row *row);
long *cfgtable_long(void *base, const struct cfgtable_row *row);
const char *cfgtable_str_value(const void *base,
                               const struct cfgtable_row *row);
long cfgtable_long_value(const void *base, const struct cfgtable_row *row);

/* The row of key ("table.key"), or NULL. */
const struct cfgtable_row *cfgtable_find(const struct cfgtable *t,
                                         const char *key);

/* Set every field of base to its row's default (text fields strdup'd, any
 * previous value freed).  Returns 0, or -1 with errno ENOMEM and "out of
 * memory" in errp; the fields set so far stay for cfgtable_free.
 */
int cfgtable_defaults(const struct cfgtable *t, void *base, vnib_error_t *errp);

/* Free the text fields of base (CFGTABLE_SECRET ones wiped first) and set
 * them to NULL.  base may be NULL.  errno is preserved.
 */
void cfgtable_free(const struct cfgtable *t, void *base);

/* The line of key in the lines object of toml_parse_*, or 0. */
int cfgtable_line(json_t *lines, const char *key);

/* Apply the tree root (from toml_parse_*, with its lines) read from path to
 * base: every table and key must have a row, every value the row's type
 * and bounds.  Returns 0, or -1 with errno (EINVAL, ENOMEM) and errp
 * ("PATH:LINE: KEY: expected an integer").  Keys before the bad one stay
 * set.
 */
int cfgtable_apply(const struct cfgtable *t,
                   void *base,
                   const char *path,
                   json_t *root,
                   json_t *lines,
                   vnib_error_t *errp);

#endif /* !VNIB_CFGTABLE_H */
