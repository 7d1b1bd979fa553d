/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The settings-table walk shared by vnibrokerd's and vnib-agent's
 * configurations (see include/vnib/cfgtable.h).
 *
 * Every key must have a row: a typo silently ignored is a production
 * outage later.  Messages name the file and the line of the key (or of the
 * table, for an unknown table) so an admin can go straight to it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/cfgtable.h"

char **cfgtable_str(void *base, const struct cfgtable_row *row)
{
    return (char **)((char *)base + row->offset);
}

long *cfgtable_long(void *base, const struct cfgtable_row *row)
{
    return (long *)((char *)base + row->offset);
}

const char *cfgtable_str_value(const void *base, const struct cfgtable_row *row)
{
    return *(char *const *)((const char *)base + row->offset);
}

long cfgtable_long_value(const void *base, const struct cfgtable_row *row)
{
    return *(const long *)((const char *)base + row->offset);
}

const struct cfgtable_row *cfgtable_find(const struct cfgtable *t,
                                         const char *key)
{
    for (size_t i = 0; i < t->nrows; i++) {
        if (strcmp(t->rows[i].key, key) == 0)
            return &t->rows[i];
    }
    return NULL;
}

/* True when some row lives in table `name`. */
static bool table_known(const struct cfgtable *t, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < t->nrows; i++) {
        if (strncmp(t->rows[i].key, name, n) == 0 && t->rows[i].key[n] == '.')
            return true;
    }
    return false;
}

/* Replace the text field of row with value (NULL: keep none). */
static int set_text(void *base, const struct cfgtable_row *row, char *value)
{
    char **field = cfgtable_str(base, row);

    if (*field && (row->flags & CFGTABLE_SECRET))
        vnib_memburn(*field, strlen(*field));
    free(*field);
    *field = value;
    return 0;
}

int cfgtable_defaults(const struct cfgtable *t, void *base, vnib_error_t *errp)
{
    for (size_t i = 0; i < t->nrows; i++) {
        const struct cfgtable_row *row = &t->rows[i];
        if (!CFGTABLE_IS_TEXT(row->type)) {
            *cfgtable_long(base, row) = row->def_int;
            continue;
        }
        char *s = strdup(row->def_str ? row->def_str : "");
        if (!s) {
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
        set_text(base, row, s);
    }
    return 0;
}

void cfgtable_free(const struct cfgtable *t, void *base)
{
    int saved_errno = errno;

    if (base) {
        for (size_t i = 0; i < t->nrows; i++) {
            if (CFGTABLE_IS_TEXT(t->rows[i].type))
                set_text(base, &t->rows[i], NULL);
        }
    }
    errno = saved_errno;
}

int cfgtable_line(json_t *lines, const char *key)
{
    return (int)json_integer_value(json_object_get(lines, key));
}

/* An array of strings, kept joined (items may not hold the separator). */
static int set_strings(void *base,
                       const struct cfgtable_row *row,
                       json_t *val,
                       const char *where,
                       vnib_error_t *errp)
{
    size_t i, len = 0;
    json_t *item;
    char *joined;

    if (!json_is_array(val)) {
        errno = EINVAL;
        return errprintf(
            errp, "%s: %s: expected an array of strings", where, row->key);
    }
    json_array_foreach (val, i, item) {
        if (!json_is_string(item)
            || strchr(json_string_value(item), CFGTABLE_LIST_SEP[0])
            || json_string_length(item) == 0) {
            errno = EINVAL;
            return errprintf(errp,
                             "%s: %s: item %zu must be a non-empty string "
                             "without control character 0x1f",
                             where,
                             row->key,
                             i + 1);
        }
        len += json_string_length(item) + 1;
    }
    if (!(joined = calloc(1, len + 1)))
        return errprintf(errp, "%s: out of memory", where);
    json_array_foreach (val, i, item) {
        if (i > 0)
            strcat(joined, CFGTABLE_LIST_SEP);
        strcat(joined, json_string_value(item));
    }
    return set_text(base, row, joined);
}

/* Set one value from the tree, checking type and bounds. */
static int set_value(void *base,
                     const struct cfgtable_row *row,
                     json_t *val,
                     const char *where,
                     vnib_error_t *errp)
{
    json_int_t v;
    char *s;

    switch (row->type) {
        case CFGTABLE_STRING:
            if (!json_is_string(val)) {
                errno = EINVAL;
                return errprintf(
                    errp, "%s: %s: expected a string", where, row->key);
            }
            if (!(s = strdup(json_string_value(val))))
                return errprintf(errp, "%s: out of memory", where);
            return set_text(base, row, s);
        case CFGTABLE_STRINGS:
            return set_strings(base, row, val, where, errp);
        case CFGTABLE_BOOL:
            if (!json_is_boolean(val)) {
                errno = EINVAL;
                return errprintf(
                    errp, "%s: %s: expected true or false", where, row->key);
            }
            *cfgtable_long(base, row) = json_is_true(val) ? 1 : 0;
            return 0;
        case CFGTABLE_INT:
            break;
    }
    if (!json_is_integer(val)) {
        errno = EINVAL;
        return errprintf(errp, "%s: %s: expected an integer", where, row->key);
    }
    v = json_integer_value(val);
    if (v < row->min || v > row->max) {
        errno = EINVAL;
        return errprintf(errp,
                         "%s: %s: %lld is out of range %ld-%ld",
                         where,
                         row->key,
                         (long long)v,
                         row->min,
                         row->max);
    }
    *cfgtable_long(base, row) = (long)v;
    return 0;
}

int cfgtable_apply(const struct cfgtable *t,
                   void *base,
                   const char *path,
                   json_t *root,
                   json_t *lines,
                   vnib_error_t *errp)
{
    const char *tname, *name;
    json_t *table, *val;
    char where[512];
    char key[256];

    json_object_foreach (root, tname, table) {
        snprintf(
            where, sizeof(where), "%s:%d", path, cfgtable_line(lines, tname));
        if (!json_is_object(table) || !table_known(t, tname)) {
            errno = EINVAL;
            return errprintf(errp,
                             "%s: %s: unknown %s",
                             where,
                             tname,
                             json_is_object(table) ? "table" : "key");
        }
        json_object_foreach (table, name, val) {
            snprintf(key, sizeof(key), "%s.%s", tname, name);
            snprintf(
                where, sizeof(where), "%s:%d", path, cfgtable_line(lines, key));
            const struct cfgtable_row *row = cfgtable_find(t, key);
            if (!row) {
                errno = EINVAL;
                return errprintf(errp, "%s: %s: unknown key", where, key);
            }
            if (set_value(base, row, val, where, errp) < 0)
                return -1;
        }
    }
    return 0;
}
