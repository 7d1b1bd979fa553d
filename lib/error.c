/* vnib_error_t helpers: bounded, errno-preserving error messages.
 *
 * Modelled on flux-core's errprintf: the formatter never changes errno,
 * accepts a NULL destination, and marks truncation so that a reader knows
 * the message was cut rather than complete.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vnib/error.h"

static void verrfmt(vnib_error_t *errp, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Format into errp (NULL: nothing), keeping errno. */
static void verrfmt(vnib_error_t *errp, const char *fmt, va_list ap)
{
    int saved_errno = errno;
    if (errp) {
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
    verrfmt(errp, fmt, ap);
    va_end(ap);
    return -1;
}

int(errprintf_first)(vnib_error_t *errp, const char *fmt, ...)
{
    va_list ap;
    /* An empty buffer is the only one written: the first error wins. */
    if (errp && errp->text[0] != '\0')
        return -1;
    va_start(ap, fmt);
    verrfmt(errp, fmt, ap);
    va_end(ap);
    return -1;
}

void vnib_error_clear(vnib_error_t *errp)
{
    if (errp)
        errp->text[0] = '\0';
}

void vnib_memburn(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n-- > 0)
        *v++ = 0;
}
