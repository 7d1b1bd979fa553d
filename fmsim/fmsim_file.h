/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim's state file on disk: a JSON document that holds session tokens.
 *
 * It is read only when it is a regular file of ours (or root's) that no
 * one else can read, and is written to a temporary file, synced and
 * renamed over the old one (the directory synced too), so a crash leaves
 * either the old or the new state, never a mix.
 */
#ifndef FMSIM_FILE_H
#define FMSIM_FILE_H

#include <jansson.h>

#include "vnib/error.h"
#include "vnib/logger.h"

/* The document at path: a new reference, or NULL with errno ENOENT (and
 * errp untouched) when there is no file, or another errno and errp set.
 */
json_t *fmsim_file_read(const char *path, vnib_error_t *errp);

/* Write doc to path atomically.  A failure is logged (the change is kept
 * in memory only) and returns -1.
 */
int fmsim_file_write(const char *path, json_t *doc, struct logger *log);

#endif /* !FMSIM_FILE_H */
