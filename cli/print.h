/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Printing the broker's replies as text: aligned "key: value" lines and
 * tables (cli/table.c), the form every vnibctl command uses without
 * --json.  Values print as people read them: booleans as yes/no, null as
 * "-", lists comma-separated, control characters as '?'.
 */
#ifndef VNIB_CLI_PRINT_H
#define VNIB_CLI_PRINT_H

#include <stddef.h>

#include <jansson.h>

struct ctl;

/* Print obj as aligned "key: value" lines: the keys of `order` first (when
 * present), then the others in the broker's order, leaving out `skip`.
 * Both lists end with NULL and may be NULL.  Returns an exit status.
 */
int print_kv(json_t *obj, const char *const *order, const char *const *skip);

/* A table from an array of objects: one column per key of `keys`, headed
 * by `headers`.  Returns an exit status.
 */
int print_table(json_t *rows,
                size_t ncols,
                const char *const *headers,
                const char *const *keys);

/* A reservation as "key: value" lines, its main keys first. */
int print_reservation_kv(json_t *r);

/* The reply of reserve, release, show and report: print_reservation_kv
 * (whose lease, a reserve's with --lease, is a last line "lease LEASE"),
 * or the JSON with --json.  Returns an exit status.
 */
int print_reservation(const struct ctl *ctl, json_t *r);

/* A string member of obj, or NULL. */
const char *print_str(json_t *obj, const char *key);

#endif /* !VNIB_CLI_PRINT_H */
