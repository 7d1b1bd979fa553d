/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How vnibctl prints the broker's replies for people: "key: value" lines
 * and aligned tables (see print.h).  Text from the broker is made harmless
 * for a terminal on the way.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/ctl.h"
#include "cli/print.h"
#include "cli/table.h"

/* Text of a JSON value for a table cell or a "key: value" line, in a new
 * string: strings as they are, booleans as yes/no, null as "-", arrays of
 * scalars comma-separated, an object of numbers as "N key, N key", and
 * anything else as compact JSON.  NULL only when out of memory.
 */
static char *value_text(json_t *v)
{
    char *s = NULL;
    size_t size = 0;
    FILE *f;

    if (!v || json_is_null(v))
        return strdup("-");
    if (json_is_string(v)) {
        /* Text from the broker (a node's message, say) must not move the
         * cursor or drive the terminal: control characters become '?'.
         */
        if ((s = strdup(json_string_value(v)))) {
            for (char *p = s; *p; p++) {
                if ((unsigned char)*p < ' ' || *p == 0x7f)
                    *p = '?';
            }
        }
        return s;
    }
    if (json_is_true(v))
        return strdup("yes");
    if (json_is_false(v))
        return strdup("no");
    if (json_is_number(v))
        return json_dumps(v, JSON_ENCODE_ANY);
    if (!(f = open_memstream(&s, &size)))
        return NULL;
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach (v, i, item) {
            char *t = json_is_array(item) || json_is_object(item)
                          ? json_dumps(item, JSON_COMPACT)
                          : value_text(item);
            fprintf(f, "%s%s", i ? "," : "", t ? t : "?");
            free(t);
        }
        if (json_array_size(v) == 0)
            fputs("-", f);
    } else {
        const char *key;
        json_t *item;
        bool numbers = true;
        json_object_foreach (v, key, item) {
            if (!json_is_integer(item))
                numbers = false;
        }
        if (numbers) {
            const char *sep = "";
            json_object_foreach (v, key, item) {
                fprintf(f,
                        "%s%" JSON_INTEGER_FORMAT " %s",
                        sep,
                        json_integer_value(item),
                        key);
                sep = ", ";
            }
        } else {
            char *t = json_dumps(v, JSON_COMPACT);
            fputs(t ? t : "?", f);
            free(t);
        }
    }
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

static bool in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list && list[i]; i++) {
        if (strcmp(list[i], key) == 0)
            return true;
    }
    return false;
}

static void print_line(const char *key, json_t *v, size_t width)
{
    char *t = value_text(v);
    printf("%s:%*s %s\n", key, (int)(width - strlen(key)), "", t ? t : "?");
    free(t);
}

int print_kv(json_t *obj, const char *const *order, const char *const *skip)
{
    const char *key;
    json_t *v;
    size_t width = 0;

    if (!json_is_object(obj))
        return ctl_fail(CTL_EXIT_UNREACHABLE,
                        "the broker's reply is not a JSON object");
    json_object_foreach (obj, key, v) {
        if (!in_list(skip, key) && strlen(key) > width)
            width = strlen(key);
    }
    for (size_t i = 0; order && order[i]; i++) {
        if (!in_list(skip, order[i]) && (v = json_object_get(obj, order[i])))
            print_line(order[i], v, width);
    }
    json_object_foreach (obj, key, v) {
        if (!in_list(order, key) && !in_list(skip, key))
            print_line(key, v, width);
    }
    return CTL_EXIT_OK;
}

const char *print_str(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* value_text of a member into a table cell (the caller frees). */
static char *cell(json_t *obj, const char *key)
{
    return value_text(json_object_get(obj, key));
}

int print_table(json_t *rows,
                size_t ncols,
                const char *const *headers,
                const char *const *keys)
{
    struct table *t = NULL;
    char *cells[16] = {NULL};
    size_t i;
    json_t *row;
    int rc = CTL_EXIT_FAILED;

    if (ncols > sizeof(cells) / sizeof(cells[0]) || !json_is_array(rows))
        return ctl_fail(CTL_EXIT_UNREACHABLE,
                        "the broker's reply lacks the expected list");
    if (!(t = table_create(ncols, headers)))
        goto nomem;
    json_array_foreach (rows, i, row) {
        for (size_t c = 0; c < ncols; c++) {
            if (!(cells[c] = cell(row, keys[c])))
                goto nomem;
        }
        if (table_add(t, (const char *const *)cells) < 0)
            goto nomem;
        for (size_t c = 0; c < ncols; c++) {
            free(cells[c]);
            cells[c] = NULL;
        }
    }
    if (table_print(t, stdout) < 0)
        goto nomem;
    rc = CTL_EXIT_OK;
    goto done;
nomem:
    ctl_fail(rc, "out of memory");
done:
    for (size_t c = 0; c < ncols; c++)
        free(cells[c]);
    table_destroy(t);
    return rc;
}

static const char *const reservation_order[] = {
    "job_id",      "step_id",      "state",
    "uid",         "user",         "nodes",
    "node_count",  "vni_count",    "vnis",
    "job_vnis",    "empty_reason", "traffic_classes",
    "tcs_mask",    "quarantined",  "cleanup",
    "created_at",  "created_by",   "release_requested_at",
    "released_at", "released_by",  "forced",
    "presumed",    NULL,
};

int print_reservation_kv(json_t *r)
{
    static const char *const skip[] = {"lease", NULL};
    const char *lease = print_str(r, "lease");
    int rc = print_kv(r, reservation_order, skip);

    /* A lease is one word on a line of its own, for scripts to take; it is
     * base64url and dots, nothing that could drive a terminal.
     */
    if (rc != CTL_EXIT_OK || !lease)
        return rc;
    if (strspn(lease,
               "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
               "0123456789-_.")
        != strlen(lease))
        return ctl_fail(CTL_EXIT_UNREACHABLE,
                        "the broker's reply has a lease that is not one");
    printf("lease %s\n", lease);
    return rc;
}

int print_reservation(const struct ctl *ctl, json_t *r)
{
    if (ctl->json)
        return ctl_print_json(r);
    return print_reservation_kv(r);
}
