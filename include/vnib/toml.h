/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small TOML reader that yields a jansson tree.
 *
 * Debian ships no C TOML library, so vnibroker carries its own.  It reads
 * the subset of TOML 1.0 a configuration file needs: tables, arrays of
 * tables, dotted keys, inline tables, basic and literal strings (single and
 * multi-line, with escapes), integers (decimal, hex, octal, binary, with
 * underscores), floats, booleans, arrays and comments.  Dates and times are
 * refused with a clear error.  The result is a plain JSON object so that
 * the caller can validate it with json_unpack_ex() in strict mode.
 *
 * Because a JSON tree has no room for source positions, the reader also
 * returns a side table mapping every key's path to the line it was defined
 * on, so that a validator can say "config.toml:12: server.port: ...".
 */
#ifndef VNIB_TOML_H
#define VNIB_TOML_H

#include <stddef.h>
#include <jansson.h>

#include "vnib/error.h"

/* Largest input toml_parse_file() reads, and largest nesting depth of
 * tables, arrays and inline tables.  Inputs beyond either are refused.
 */
#define TOML_MAX_FILE_SIZE (4u * 1024 * 1024)
#define TOML_MAX_DEPTH 64

/* Parse len bytes of TOML text.  `name` (e.g. the file name) prefixes every
 * error message as "NAME:LINE: message".  The text need not be
 * NUL-terminated and may contain NUL bytes (which are an error).
 *
 * On success returns a new reference to a JSON object.  If linesp is not
 * NULL, *linesp receives a new reference to a JSON object whose keys are
 * key paths and whose values are JSON integers (1-based line numbers).
 * A path joins keys with '.', and an element of an array of tables is
 * written with its index: "server.port", "pool[2].name".  Tables that are
 * only headers ("[server]") get an entry too ("server"), and so do tables
 * inside arrays; scalars inside arrays do not (their array's entry names
 * the line), which keeps a hostile array of millions of numbers cheap.
 *
 * On failure returns NULL, sets errno (EINVAL for malformed input, ENOMEM,
 * E2BIG for input past the limits) and fills errp.
 */
json_t *toml_parse(const char *name,
                   const char *text,
                   size_t len,
                   json_t **linesp,
                   vnib_error_t *errp) VNIB_MUST_CHECK;

/* Read and parse a file (at most TOML_MAX_FILE_SIZE bytes).  Messages are
 * prefixed with the path.  Same return convention as toml_parse().
 */
json_t *toml_parse_file(const char *path,
                        json_t **linesp,
                        vnib_error_t *errp) VNIB_MUST_CHECK;

/* toml_parse_file() for a file that says what a root process loads or
 * runs: also refuses (EPERM, the message naming the file) one that is not
 * owned by root or the effective uid, or that group or others may write.
 * The check is made on the descriptor the text is read from.
 */
json_t *toml_parse_trusted_file(const char *path,
                                json_t **linesp,
                                vnib_error_t *errp) VNIB_MUST_CHECK;

#endif /* !VNIB_TOML_H */
