/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnib_error_t helpers: bounded, errno-preserving error messages.
 *
 * Modelled on flux-core's errprintf: the formatter never changes errno,
 * accepts a NULL destination, and marks truncation so that a reader knows
 * the message was cut rather than complete.  Every writer also sets the
 * message's public_text: errprintf_private() to the text a client reads
 * instead, the others to NULL, so that a mark never outlives its message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vnib/error.h"

/* Format into errp, keeping errno; with `first`, only when errp holds no
 * message yet (the first error of an operation wins).
 */
static void verrfmt(vnib_error_t *errp,
                    bool first,
                    const char *public_text,
                    const char *fmt,
                    va_list ap) __attribute__((format(printf, 4, 0)));

static void verrfmt(vnib_error_t *errp,
                    bool first,
                    const char *public_text,
                    const char *fmt,
                    va_list ap)
{
    int saved_errno = errno;
    if (errp && !(first && errp->text[0] != '\0')) {
        errp->public_text = public_text;
        int n = vsnprintf(errp->text, sizeof(errp->text), fmt, ap);
        if (n < 0)
            snprintf(errp->text, sizeof(errp->text), "(unformattable error)");
        else if ((size_t)n >= sizeof(errp->text))
            errp->text[sizeof(errp->text) - 2] = '+';
    }
    errno = saved_errno;
}

/* The names are in parentheses, as error.h also defines them as macros. */
int(errprintf)(vnib_error_t *errp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrfmt(errp, false, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int verrprintf(vnib_error_t *errp, const char *fmt, va_list ap)
{
    verrfmt(errp, false, NULL, fmt, ap);
    return -1;
}

int(errprintf_first)(vnib_error_t *errp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrfmt(errp, true, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int(errprintf_private)(vnib_error_t *errp,
                       const char *public_text,
                       const char *fmt,
                       ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrfmt(errp, false, public_text, fmt, ap);
    va_end(ap);
    return -1;
}

void vnib_error_clear(vnib_error_t *errp)
{
    if (errp) {
        errp->text[0] = '\0';
        errp->public_text = NULL;
    }
}

void vnib_memburn(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n-- > 0)
        *v++ = 0;
}
