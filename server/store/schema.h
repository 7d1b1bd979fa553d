/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The SQL migrations compiled into vnibrokerd.
 *
 * deploy/tools/embed-sql.sh turns schema/NNNN_name.sql into a C table at
 * build time, so the binary carries exactly the schema it was written for
 * and never depends on SQL files being installed beside it.  Versions are
 * contiguous from 1; the last one is the version this binary requires.
 *
 * The SQL functions are not in the migrations (from schema 20 on): each
 * is stated once in a file of schema/functions/; --migrate applies the
 * files after the migrations, in file-name order (the order of this
 * table), and records them by the SHA-256 of their texts in that order
 * (schema/README.md).
 */
#ifndef VNIB_SERVER_SCHEMA_H
#define VNIB_SERVER_SCHEMA_H

#include <stddef.h>

struct schema_migration {
    int version;      /* NNNN from the file name */
    const char *name; /* file name, recorded in schema_version */
    const char *sql;  /* the script, applied inside one transaction */
};

extern const struct schema_migration schema_migrations[];
extern const size_t schema_migrations_count;

struct schema_function_file {
    const char *name; /* file name in schema/functions/ */
    const char *sql;  /* CREATE OR REPLACE FUNCTION statements */
};

extern const struct schema_function_file schema_functions[];
extern const size_t schema_functions_count;

#endif /* !VNIB_SERVER_SCHEMA_H */
