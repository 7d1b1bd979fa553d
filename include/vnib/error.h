/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Error reporting shared by every vnibroker module.
 *
 * Functions that can fail for a reason a person should read return -1 (or
 * NULL) with errno set, and write a one-line explanation into a caller
 * supplied vnib_error_t.  The caller may pass NULL when it does not care.
 * The buffer has a fixed size so that it can live on the stack and be
 * passed across threads without allocation.  A message may be marked as
 * the operator's alone (public_text), so that what decides whether a
 * client may read it is that mark, never the words.
 *
 * `vnib_error_t e = {0};` leaves public_text NULL: C zero-fills what an
 * initializer leaves out (the Makefile turns off GCC's and clang's
 * -Wmissing-field-initializers, which would flag each such line).
 */
#ifndef VNIB_ERROR_H
#define VNIB_ERROR_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char text[160]; /* NUL-terminated message; "" when no error recorded */
    /* NULL: text may be shown to anyone.  Else text is for the operator
     * only (it carries a database's host names, tables or values), and
     * this static text is what a client reads in its place.  Set by
     * errprintf_private(), cleared by every other writer.
     */
    const char *public_text;
} vnib_error_t;

/* Format a message into errp (which may be NULL).  errno is preserved.
 * Text that does not fit is truncated and ends with '+'.  Always returns -1
 * so that a failing function can write `return errprintf (errp, ...)`.
 */
int errprintf(vnib_error_t *errp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* errprintf with its arguments as a va_list, for a function of the same
 * contract that formats a message of its own.  Always returns -1.
 */
int verrprintf(vnib_error_t *errp, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Like errprintf, but only when errp does not hold a message yet: the first
 * error of an operation is the one worth reporting.  Always returns -1.
 */
int errprintf_first(vnib_error_t *errp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like errprintf, for a message that carries words only the operator may
 * read: errp->public_text becomes public_text (static, borrowed), what a
 * client is told instead (see vnib_error_t).  Always returns -1.
 */
int errprintf_private(vnib_error_t *errp,
                      const char *public_text,
                      const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));

/* All three are also macros that make the -1 visible where they are called:
 * clang's static analyzer looks at one file at a time and does not follow
 * variadic calls, so without them it would take `if (f (..., errp) < 0)`
 * as possibly false after f returned errprintf's value, and f's results
 * as set when they were not.  The functions are still what is called
 * (and what checks the format).
 */
static inline int vnib_error_ret(int rc)
{
    (void)rc;
    return -1;
}
#define errprintf(...) vnib_error_ret(errprintf(__VA_ARGS__))
#define errprintf_first(...) vnib_error_ret(errprintf_first(__VA_ARGS__))
#define errprintf_private(...) vnib_error_ret(errprintf_private(__VA_ARGS__))

/* Copy src, message and mark, into errp (which may be NULL): the way to
 * hand a failure on unchanged, where errprintf (errp, "%s", src->text)
 * would drop the mark.  errno is preserved.  Always returns -1.
 */
static inline int vnib_error_copy(vnib_error_t *errp, const vnib_error_t *src)
{
    if (errp)
        *errp = *src;
    return -1;
}

/* On a function whose int status (0 or -1) or new object must be looked
 * at: the compiler warns at every call that drops it.  GCC warns even
 * through a (void) cast, so a call that may fail harmlessly says what it
 * does about it instead.
 */
#define VNIB_MUST_CHECK __attribute__((warn_unused_result))

/* Reset errp to the empty, unmarked message (errp may be NULL). */
void vnib_error_clear(vnib_error_t *errp);

/* Overwrite n bytes at p with zeros in a way the compiler may not elide.
 * Used for key material and tokens before they are freed.
 */
void vnib_memburn(void *p, size_t n);

#endif /* !VNIB_ERROR_H */
