/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fjt_spool: the releases the broker could not take, kept on disk.
 *
 * One file per job in a directory of root's (0700; refused when it is not
 * the plugin's owner's or others may write it), named by the job's
 * decimal id, holding {"job_id":...,"spooled_at":...}.  A file is written
 * to a temporary name, synced, renamed and the directory synced, so a
 * release the plugin said it kept survives a crash of the job-manager or
 * the node.  Thread-safe: the worker's threads add and remove while the
 * plugin counts.
 */
#ifndef FJT_SPOOL_H
#define FJT_SPOOL_H

#include <stddef.h>

#include "vnib/error.h"

struct fjt_spool;

/* Open (creating it 0700 when missing) the spool directory at path.
 * Returns NULL with errno and errp set: EPERM for a directory others may
 * write or that another user owns.
 */
struct fjt_spool *fjt_spool_create(const char *path, vnib_error_t *errp);
void fjt_spool_destroy(struct fjt_spool *s);

const char *fjt_spool_path(const struct fjt_spool *s);

/* Keep a release of job_id (decimal).  Returns 0 or -1 with errp set. */
int fjt_spool_add(struct fjt_spool *s, const char *job_id, vnib_error_t *errp);

/* Forget job_id's release (sent, or refused for good).  A missing file is
 * not an error.
 */
int fjt_spool_remove(struct fjt_spool *s,
                     const char *job_id,
                     vnib_error_t *errp);

/* The spooled job ids: a NULL-terminated array of strings, oldest file
 * first (free with fjt_spool_list_free), or NULL with errp set.  Files
 * whose names are not decimal job ids are skipped.
 */
char **fjt_spool_list(struct fjt_spool *s, vnib_error_t *errp);
void fjt_spool_list_free(char **list);

/* How many releases are spooled (read from the directory). */
int fjt_spool_count(struct fjt_spool *s);

#endif /* !FJT_SPOOL_H */
