/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The TOML reader's tables (see toml.c): "key = value" lines with dotted
 * keys, [table] and [[array of tables]] headers and the rules on which
 * table each may define or extend, and the document as a list of lines.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "toml_int.h"

int toml_parse_keyval(struct parser *ps, json_t *tbl, int depth)
{
    struct key k = {.n = 0};
    char shown[SHOW_MAX];
    size_t save = ps->path.len, unused, i;
    json_t *t = tbl, *v;
    int line = ps->line;
    int rc = -1;

    if (toml_parse_key(ps, &k) < 0)
        goto done;
    if (toml_peek(ps) != '=') {
        toml_fail(ps,
                  EINVAL,
                  line,
                  "expected '=' after key '%s'",
                  toml_show_key(&k, shown));
        goto done;
    }
    ps->pos++;
    toml_skip_ws(ps);

    /* Every part but the last names a table.  A missing one is created;
     * an existing one must have been made by dotted keys too.  Tables
     * from headers and sealed inline tables cannot be reopened this way.
     */
    for (i = 0; i + 1 < k.n; i++) {
        json_t *next;
        enum kind kind;

        if (toml_path_push_key(ps, k.part[i], &unused) < 0)
            goto done;
        if (!(next = json_object_get(t, k.part[i]))) {
            if (toml_check_depth(ps, depth + (int)i + 1) < 0
                || !(next = toml_add_table(ps, t, k.part[i], KIND_DOTTED))
                || toml_record_line(ps, line, false) < 0)
                goto done;
        } else if (!json_is_object(next)) {
            toml_fail_not_table(ps, line, toml_show_path(ps, shown), next);
            goto done;
        } else if ((kind = toml_kind_get(ps, next)) == KIND_INLINE) {
            toml_fail_inline(ps, line, toml_show_path(ps, shown));
            goto done;
        } else if (kind != KIND_DOTTED) {
            toml_fail(ps,
                      EINVAL,
                      line,
                      "cannot add to table '%s' with dotted keys: it is defined"
                      " by a header",
                      toml_show_path(ps, shown));
            goto done;
        }
        t = next;
    }
    /* The last part must be new: TOML never lets a key be set twice,
     * whether the first definition was a value or a table.  Checking
     * before the value is parsed reports the key's own line.
     */
    if (toml_path_push_key(ps, k.part[k.n - 1], &unused) < 0)
        goto done;
    if (json_object_get(t, k.part[k.n - 1])) {
        toml_fail(
            ps, EINVAL, line, "duplicate key '%s'", toml_show_path(ps, shown));
        goto done;
    }
    if (!(v = toml_parse_value(ps, depth + (int)k.n)))
        goto done;
    if (json_object_set_new(t, k.part[k.n - 1], v) < 0) {
        toml_oom(ps);
        goto done;
    }
    if (toml_record_line(ps, line, true) < 0)
        goto done;
    rc = 0;
done:
    toml_buf_truncate(&ps->path, save);
    toml_key_free(&k);
    return rc;
}

/* ---- headers and the document ---------------------------------------- */

/* Make the last part of a [[header]]: append a new table to the array of
 * tables parent[name] (creating it), and return the new element.
 */
static json_t *append_table(
    struct parser *ps, json_t *parent, const char *name, int line, int *depthp)
{
    json_t *arr = json_object_get(parent, name);
    json_t *elem;
    char shown[SHOW_MAX];
    size_t unused;

    if (!arr) {
        arr = json_array();
        if (json_object_set_new(parent, name, arr) < 0) {
            toml_oom(ps);
            return NULL;
        }
        if (toml_kind_set(ps, arr, KIND_TABLE_ARRAY) < 0
            || toml_record_line(ps, line, false) < 0)
            return NULL;
    } else if (toml_kind_get(ps, arr) != KIND_TABLE_ARRAY) {
        if (json_is_array(arr))
            toml_fail(ps,
                      EINVAL,
                      line,
                      "cannot append to static array '%s'",
                      toml_show_path(ps, shown));
        else
            toml_fail(
                ps,
                EINVAL,
                line,
                "key '%s' is already defined as %s, not an array of tables",
                toml_show_path(ps, shown),
                toml_describe(arr));
        return NULL;
    }
    if (toml_path_push_index(ps, json_array_size(arr), &unused) < 0
        || toml_check_depth(ps, ++*depthp) < 0)
        return NULL;
    elem = json_object();
    if (json_array_append_new(arr, elem) < 0) {
        toml_oom(ps);
        return NULL;
    }
    if (toml_kind_set(ps, elem, KIND_HEADER) < 0
        || toml_record_line(ps, line, true) < 0)
        return NULL;
    return elem;
}

/* Make the last part of a [header]: parent[name] must be new, or a table
 * so far only implied by an earlier header.
 */
static json_t *define_table(struct parser *ps,
                            json_t *parent,
                            const char *name,
                            int line)
{
    json_t *t = json_object_get(parent, name);
    char shown[SHOW_MAX];
    const char *path = toml_show_path(ps, shown);

    if (!t) {
        if (!(t = toml_add_table(ps, parent, name, KIND_HEADER)))
            return NULL;
    } else if (!json_is_object(t)) {
        if (toml_kind_get(ps, t) == KIND_TABLE_ARRAY)
            toml_fail(ps,
                      EINVAL,
                      line,
                      "table '%s' is already an array of tables",
                      path);
        else
            toml_fail_not_table(ps, line, path, t);
        return NULL;
    } else {
        switch (toml_kind_get(ps, t)) {
            case KIND_IMPLICIT:
                if (toml_kind_set(ps, t, KIND_HEADER) < 0)
                    return NULL;
                break;
            case KIND_DOTTED:
                toml_fail(ps,
                          EINVAL,
                          line,
                          "table '%s' already defined by dotted keys",
                          path);
                return NULL;
            case KIND_INLINE:
                toml_fail(ps,
                          EINVAL,
                          line,
                          "table '%s' already defined as an inline table",
                          path);
                return NULL;
            default:
                toml_fail(ps, EINVAL, line, "table '%s' defined twice", path);
                return NULL;
        }
    }
    if (toml_record_line(ps, line, true) < 0)
        return NULL;
    return t;
}

/* Parse a [table] or [[array.of.tables]] header and make it the current
 * section.  Tables on the way are created (implicitly) or entered; for an
 * array of tables on the way, its last element is entered.
 */
static int parse_header(struct parser *ps)
{
    struct key k = {.n = 0};
    char shown[SHOW_MAX];
    json_t *t = ps->root;
    int line = ps->line, depth = 0, rc = -1;
    size_t i, unused;
    bool aot;

    ps->pos++;
    if ((aot = toml_peek(ps) == '['))
        ps->pos++;
    toml_skip_ws(ps);
    if (toml_parse_key(ps, &k) < 0)
        goto done;
    if (toml_peek(ps) != ']' || (aot && toml_peek_at(ps, 1) != ']')) {
        toml_fail(ps,
                  EINVAL,
                  line,
                  aot ? "expected ']]' after array of tables name '%s'"
                      : "expected ']' after table name '%s'",
                  toml_show_key(&k, shown));
        goto done;
    }
    ps->pos += aot ? 2 : 1;

    /* Walk from the root: a header names its table absolutely.  Each part
     * deepens the nesting by one, and entering an array of tables by one
     * more (the array, then its element).
     */
    toml_buf_truncate(&ps->path, 0);
    for (i = 0; i < k.n; i++) {
        const char *name = k.part[i];
        json_t *next;
        enum kind kind;

        if (toml_path_push_key(ps, name, &unused) < 0
            || toml_check_depth(ps, ++depth) < 0)
            goto done;
        /* The last part is the table being defined. */
        if (i + 1 == k.n) {
            t = aot ? append_table(ps, t, name, line, &depth)
                    : define_table(ps, t, name, line);
            if (!t)
                goto done;
            break;
        }
        /* Parts on the way may be created, entered (any table not sealed
         * as inline, including dotted-key tables), or followed into the
         * last element of an array of tables.
         */
        if (!(next = json_object_get(t, name))) {
            if (!(next = toml_add_table(ps, t, name, KIND_IMPLICIT))
                || toml_record_line(ps, line, false) < 0)
                goto done;
        } else if ((kind = toml_kind_get(ps, next)) == KIND_TABLE_ARRAY) {
            /* [a.b] after [[a]] means b in the last element of a. */
            size_t last = json_array_size(next) - 1;
            if (toml_path_push_index(ps, last, &unused) < 0
                || toml_check_depth(ps, ++depth) < 0)
                goto done;
            next = json_array_get(next, last);
        } else if (!json_is_object(next)) {
            toml_fail_not_table(ps, line, toml_show_path(ps, shown), next);
            goto done;
        } else if (kind == KIND_INLINE) {
            toml_fail_inline(ps, line, toml_show_path(ps, shown));
            goto done;
        }
        t = next;
    }
    /* Key/value lines that follow fill this table; the path buffer keeps
     * its path as the prefix of theirs.
     */
    ps->cur = t;
    ps->cur_depth = depth;
    rc = 0;
done:
    toml_key_free(&k);
    return rc;
}

int toml_parse_document(struct parser *ps)
{
    /* A byte order mark is not TOML, but editors add it; skip it. */
    if (ps->len >= 3 && memcmp(ps->text, "\xEF\xBB\xBF", 3) == 0)
        ps->pos = 3;
    for (;;) {
        size_t nl;
        int c;

        toml_skip_ws(ps);
        if ((c = toml_peek(ps)) < 0)
            return 0;
        if (c == '#') {
            if (toml_skip_comment(ps) < 0)
                return -1;
        } else if ((nl = toml_newline_len(ps)) > 0) {
            ps->pos += nl;
            ps->line++;
        } else if (c == '[') {
            if (parse_header(ps) < 0
                || toml_end_of_line(ps, "table header") < 0)
                return -1;
        } else {
            /* The path holds the section's path between lines. */
            if (toml_parse_keyval(ps, ps->cur, ps->cur_depth) < 0
                || toml_end_of_line(ps, "value") < 0)
                return -1;
        }
    }
}
