/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for the TOML reader (lib/toml.c).
 *
 * Feeds arbitrary bytes to toml_parse() with the line table requested, so
 * both trees are built and freed on every path.  Any crash, leak or
 * sanitizer report is a bug; the reader must only ever accept or refuse.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "vnib/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vnib_error_t err;
    json_t *lines = NULL;
    json_t *root;

    root = toml_parse("fuzz", (const char *)data, size, &lines, &err);
    /* Success and failure must agree on the line table. */
    if ((root == NULL) != (lines == NULL))
        abort();
    json_decref(root);
    json_decref(lines);
    return 0;
}
