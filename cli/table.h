/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Aligned text tables for vnibctl's human-readable output.
 *
 * A table collects rows of strings (copied) and prints them with every
 * column padded to its widest cell, two spaces apart, the header first.
 * Empty or NULL cells print as "-" so that columns stay parseable with
 * awk.
 */
#ifndef VNIB_CLI_TABLE_H
#define VNIB_CLI_TABLE_H

#include <stdio.h>

#include "vnib/error.h"

struct table;

/* A table with ncols columns named by headers (borrowed: they must
 * outlive the table).  Returns NULL with errno set.
 */
struct table *table_create(size_t ncols,
                           const char *const *headers) VNIB_MUST_CHECK;

/* Free a table and its cells (NULL accepted); errno is preserved. */
void table_destroy(struct table *t);

/* Append a row of ncols cells (copied).  Returns 0 or -1 (ENOMEM). */
int table_add(struct table *t, const char *const *cells);

/* Print the header and the rows.  Returns 0 or -1 (ENOMEM). */
int table_print(const struct table *t, FILE *f);

#endif /* !VNIB_CLI_TABLE_H */
