/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Aligned text tables (see table.h).
 *
 * Rows are kept as one flat array of strings, row-major, and widths are
 * computed at print time; the tables printed are a page of reservations
 * or events, so nothing here needs to be clever.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"

struct table {
    size_t ncols;
    const char *const *headers; /* borrowed */
    char **cells;               /* nrows * ncols, owned */
    size_t nrows;
    size_t cap; /* rows allocated */
};

struct table *table_create(size_t ncols, const char *const *headers)
{
    struct table *t;

    if (ncols == 0 || !headers) {
        errno = EINVAL;
        return NULL;
    }
    if (!(t = calloc(1, sizeof(*t))))
        return NULL;
    t->ncols = ncols;
    t->headers = headers;
    return t;
}

void table_destroy(struct table *t)
{
    int saved_errno = errno;
    if (t) {
        for (size_t i = 0; i < t->nrows * t->ncols; i++)
            free(t->cells[i]);
        free(t->cells);
        free(t);
    }
    errno = saved_errno;
}

int table_add(struct table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        char **grown = realloc(t->cells, cap * t->ncols * sizeof(*grown));
        if (!grown)
            return -1;
        t->cells = grown;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t i = 0; i < t->ncols; i++) {
        const char *s = cells[i] && cells[i][0] ? cells[i] : "-";
        if (!(row[i] = strdup(s))) {
            while (i-- > 0)
                free(row[i]);
            return -1;
        }
    }
    t->nrows++;
    return 0;
}

static void print_row(const struct table *t,
                      const char *const *row,
                      const size_t *width,
                      FILE *f)
{
    for (size_t i = 0; i < t->ncols; i++) {
        if (i + 1 < t->ncols)
            fprintf(f, "%-*s  ", (int)width[i], row[i]);
        else
            fprintf(f, "%s\n", row[i]);
    }
}

int table_print(const struct table *t, FILE *f)
{
    size_t *width = calloc(t->ncols, sizeof(*width));

    if (!width)
        return -1;
    for (size_t i = 0; i < t->ncols; i++)
        width[i] = strlen(t->headers[i]);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t i = 0; i < t->ncols; i++) {
            size_t n = strlen(t->cells[r * t->ncols + i]);
            if (n > width[i])
                width[i] = n;
        }
    }
    print_row(t, t->headers, width, f);
    for (size_t r = 0; r < t->nrows; r++)
        print_row(t, (const char *const *)(t->cells + r * t->ncols), width, f);
    free(width);
    return 0;
}
