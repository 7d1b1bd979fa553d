/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job environment file, as the schedulers' plugins read it.
 *
 * The node agent's prolog (`vnib-agent prolog --job KEY`) leaves
 * STATE_DIR/jobs/KEY.env: one "export NAME=value" or "unset NAME" per
 * line, the job's Slingshot variables on this node.  A plugin in the job's
 * launcher (Slurm's SPANK plugin in slurmstepd, Flux's shell plugin in
 * flux-shell) copies them into every task.  This module is what the two
 * share: the reserved names every job starts without, which names a file
 * may set, the trusted open of the file and its parser.
 *
 * The file is trusted only as far as the directory it sits in: the jobs
 * directory must be root's and writable by no one else (so only root put
 * the file there), and the file a regular file of root or the job's user
 * that neither group nor others may write.  A file that fails a rule, or
 * that is malformed (a truncated file included), is an error: the plugins
 * fail the job rather than run it without its isolation or with half its
 * environment.  A missing jobs directory or file only means that the node
 * holds no reservation for the job.
 *
 * Nothing here logs; every error is a one-line vnib_error_t message
 * without the job's name, which the plugin adds.
 */
#ifndef VNIB_ENVFILE_H
#define VNIB_ENVFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "vnib/error.h"

#define ENVFILE_MAX_SIZE (64 * 1024) /* bytes in one job's env file */
#define ENVFILE_NAME_MAX 128         /* characters in a variable name */
#define ENVFILE_KEY_MAX 257          /* characters in a job key */
#define ENVFILE_DIR_MAX 1024         /* characters in a state directory */

/* The names the agent may set, NULL-terminated.  A plugin unsets each one
 * before it applies a file (or finds none), so a job never inherits one
 * from the environment it was submitted from.
 */
extern const char *const envfile_reserved_names[];

/* One line of a parsed file, pointing into the file's buffer. */
struct envfile_line {
    const char *name;  /* NUL-terminated; envfile_valid_name() holds */
    const char *value; /* NUL-terminated; NULL for "unset NAME" */
};

/* A job's env file: what envfile_read() read and envfile_parse() split.
 * Zero it before use (`struct envfile env = {0};`).
 */
struct envfile {
    char *buf;                  /* the contents, NUL-terminated */
    size_t len;                 /* bytes in buf, without the NUL */
    struct envfile_line *lines; /* count lines, pointing into buf */
    size_t count;
};

/* True when name can be a shell variable: a letter or '_', then letters,
 * digits and '_', at most ENVFILE_NAME_MAX characters.
 */
bool envfile_valid_name(const char *name);

/* True when a file may set name: it starts SLINGSHOT_ or FI_CXI_.  The
 * plugins skip other names, with a warning.
 */
bool envfile_honoured_name(const char *name);

/* True when name is one of envfile_reserved_names. */
bool envfile_reserved_name(const char *name);

/* Write into out (size bytes) the state directory pattern with each "%n"
 * replaced by node, this node's name (NULL when pattern has no "%n").
 * pattern must be an absolute path; node must be non-empty and hold no
 * '/'.  Returns 0, or -1 with errno (EINVAL) and errp set.
 */
int envfile_expand_dir(const char *pattern,
                       const char *node,
                       char *out,
                       size_t size,
                       vnib_error_t *errp);

/* Open STATE_DIR/jobs/KEY.env (state_dir as expanded above, key the job's
 * name in the agent's files: Slurm's job id, Flux's decimal job id, or
 * JOB+STEP; at most ENVFILE_KEY_MAX letters, digits, '.', '_', '+' or
 * '-', not starting with '.'), check the directory and the file against the
 * rules above (job_uid is the job's user, whom the file may belong to) and read
 * it whole into env->buf (env must be zeroed; the caller frees it with
 * envfile_cleanup()).  A FIFO in the file's place is refused at once, not
 * waited on.
 *
 * Returns 1 with the contents, 0 when there is no jobs directory or no
 * file (env left empty), or -1 with errno (EPERM: a rule failed; EFBIG:
 * too large; EINVAL: a bad key or path; else the system's) and errp set,
 * naming the path.
 */
int envfile_read(const char *state_dir,
                 const char *key,
                 uid_t job_uid,
                 struct envfile *env,
                 vnib_error_t *errp) VNIB_MUST_CHECK;

/* Split env->buf (env->len bytes, as envfile_read left it) into
 * env->lines in place.  The whole file must be well formed: no NUL byte,
 * at least one line, a newline after the last (a truncated file has
 * none), and every line "export NAME=value" or "unset NAME" with a valid
 * name and no control character.  Returns 0, or -1 with errno (EINVAL, or
 * ENOMEM) and errp set (the first bad line's number, not the path) and no
 * lines.
 */
int envfile_parse(struct envfile *env, vnib_error_t *errp) VNIB_MUST_CHECK;

/* Free what env holds and zero it (env may be empty; not NULL). */
void envfile_cleanup(struct envfile *env);

#endif /* !VNIB_ENVFILE_H */
