/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the TOML reader's files (toml.c, toml_lex.c, toml_value.c,
 * toml_table.c) share: the parser's state and the helpers one file defines
 * and the others call.  Private to lib/: not installed, not for callers,
 * who have vnib/toml.h.
 */
#ifndef VNIB_TOML_INT_H
#define VNIB_TOML_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "vnib/toml.h"

/* Longest key path ("server.tls.cert") the reader accepts, in bytes. */
#define TOML_PATH_MAX 512

/* Longest excerpt of a key or token quoted in an error message. */
#define SHOW_MAX 48

/* How a table or array came to exist.  The kind decides what later lines
 * may do with it; 0 (no entry) means a plain value such as a static array.
 */
enum kind {
    KIND_NONE = 0,
    KIND_IMPLICIT,    /* made on the way to a header: "a" in [a.b] */
    KIND_HEADER,      /* defined by [header], or an [[array]] element */
    KIND_DOTTED,      /* made by a dotted key: "a" in a.b = 1 */
    KIND_INLINE,      /* an inline table { ... }: sealed once closed */
    KIND_TABLE_ARRAY, /* the array behind [[header]] */
};

/* A growable byte buffer, always NUL-terminated once allocated. */
struct buf {
    char *data; /* NULL until the first reservation */
    size_t len; /* bytes in use, not counting the NUL */
    size_t cap; /* bytes allocated */
};

/* A key as written: one or more parts joined by dots. */
struct key {
    char *part[TOML_MAX_DEPTH]; /* owned, NUL-terminated */
    size_t n;                   /* parts in use */
};

/* Parser state for one toml_parse() call. */
struct parser {
    const char *name;   /* prefix of error messages */
    const char *text;   /* input, not NUL-terminated */
    size_t len;         /* bytes in text */
    size_t pos;         /* next byte to read */
    int line;           /* 1-based line of text[pos] */
    json_t *root;       /* the document */
    json_t *lines;      /* path -> line, or NULL if not wanted */
    json_t *kinds;      /* "%p" of a container -> enum kind */
    json_t *cur;        /* table the current section fills */
    int cur_depth;      /* nesting depth of cur (root is 0) */
    struct buf path;    /* path of the key being defined */
    struct buf scratch; /* decoded text of the last string */
    vnib_error_t *errp; /* caller's message buffer, may be NULL */
    int err;            /* errno of the first error */
    bool failed;        /* an error has been recorded */
};

/* Record the first error as "NAME:LINE: message", set errno, return -1.
 * Later errors (typically ENOMEM while unwinding) are ignored.
 */
int toml_fail(struct parser *ps, int err, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Allocation failures all read the same; the line helps little, but the
 * message format stays uniform.
 */
int toml_oom(struct parser *ps);

/* Copy s[0..n) into out for quoting in a message: bytes that are not
 * printable become '?', and text longer than the buffer is cut (at a
 * character boundary) and ends with "...".
 */
const char *toml_show(char out[SHOW_MAX], const char *s, size_t n);

/* The current key path, quoted for a message. */
const char *toml_show_path(const struct parser *ps, char out[SHOW_MAX]);

/* A key as written ("a.b.c"), quoted for a message. */
const char *toml_show_key(const struct key *k, char out[SHOW_MAX]);

/* "an integer", "a table", ... for messages about clashing definitions. */
const char *toml_describe(const json_t *v);

/* The message for a key that holds v where a table should be. */
int toml_fail_not_table(struct parser *ps,
                        int line,
                        const char *path,
                        const json_t *v);

/* The message for a table header or dotted key reaching into an inline
 * table, which is complete where it stands.
 */
int toml_fail_inline(struct parser *ps, int line, const char *path);

/* Append n bytes; returns 0, or -1 after recording ENOMEM. */
int toml_buf_add(struct parser *ps, struct buf *b, const char *s, size_t n);

/* Append one byte. */
int toml_buf_addc(struct parser *ps, struct buf *b, char c);

/* Cut back to len bytes (len <= b->len): how path pushes are undone. */
void toml_buf_truncate(struct buf *b, size_t len);

/* Append ".key" (just "key" at the root) to the current path.  The old
 * length goes to *savep so that the caller can undo the push.
 */
int toml_path_push_key(struct parser *ps, const char *key, size_t *savep);

/* Append "[idx]" to the current path, as for pool[2]. */
int toml_path_push_index(struct parser *ps, size_t idx, size_t *savep);

/* Note that the current path was defined on `line`.  A definition
 * replaces an earlier entry; an implicit mention (the "a" of [a.b]) only
 * fills a gap.
 */
int toml_record_line(struct parser *ps, int line, bool replace);

/* Kind of a table or array, KIND_NONE for anything not registered. */
enum kind toml_kind_get(const struct parser *ps, const json_t *v);

/* Register or change the kind of a table or array. */
int toml_kind_set(struct parser *ps, const json_t *v, enum kind kind);

/* Create an empty table of the given kind as parent[key].  Returns a
 * borrowed reference, or NULL on failure.
 */
json_t *toml_add_table(struct parser *ps,
                       json_t *parent,
                       const char *key,
                       enum kind kind);

/* Containers nest at most TOML_MAX_DEPTH deep (the root table is 0). */
int toml_check_depth(struct parser *ps, int depth);

/* Refuse NUL bytes and invalid UTF-8 anywhere in the input. */
int toml_check_encoding(struct parser *ps);

/* Byte at pos, or -1 at the end of the input. */
int toml_peek(const struct parser *ps);

/* Byte at pos + off, or -1 past the end of the input. */
int toml_peek_at(const struct parser *ps, size_t off);

/* Length of the newline at pos: 1 for LF, 2 for CRLF, 0 for anything
 * else (a lone CR is not a newline in TOML).
 */
size_t toml_newline_len(const struct parser *ps);

/* Skip blanks: TOML whitespace is only space and tab. */
void toml_skip_ws(struct parser *ps);

/* Characters of a bare key: A-Z a-z 0-9 _ - */
bool toml_is_bare(int c);

/* Skip a comment from '#' up to (not including) the end of the line. */
int toml_skip_comment(struct parser *ps);

/* Skip blanks, comments and newlines, as allowed between array items. */
int toml_skip_filler(struct parser *ps);

/* Finish a line after a header or key/value: blanks, an optional
 * comment, then a newline or the end of the input.
 */
int toml_end_of_line(struct parser *ps, const char *after);

/* Describe the byte at pos for "expected X, found Y" messages. */
const char *toml_found(const struct parser *ps, char out[16]);

/* Parse a basic or literal string, single- or multi-line, starting at the
 * opening quote.  The decoded text is left in ps->scratch.
 */
int toml_parse_string(struct parser *ps);

/* Free the parts of a key (safe on a partly parsed key). */
void toml_key_free(struct key *k);

/* Parse a possibly dotted key, and the blanks after it. */
int toml_parse_key(struct parser *ps, struct key *k);

/* Parse the value at pos.  `depth` is the depth the value would have if
 * it is a container.  Returns a new reference or NULL.
 */
json_t *toml_parse_value(struct parser *ps, int depth);

/* Parse "key = value" into `tbl` (at depth `depth`).  Dotted keys create
 * tables on the way, and may only pass through tables that dotted keys
 * made.  The path buffer is restored before returning.
 */
int toml_parse_keyval(struct parser *ps, json_t *tbl, int depth);

/* Parse the whole input, line by line.  Each line is blank, a comment, a
 * table header or a key/value pair; the last two may carry a trailing
 * comment.  Multi-line strings and arrays span lines inside a value.
 */
int toml_parse_document(struct parser *ps);

#endif /* VNIB_TOML_INT_H */
