/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Address blocks in CIDR notation (see cidr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "vnib/cidr.h"

int cidr_address(const struct sockaddr *sa, unsigned char out[16], int *lenp)
{
    static const unsigned char v4mapped[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        memcpy(out, &in->sin_addr, 4);
        *lenp = 4;
        return AF_INET;
    }
    if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        const unsigned char *b = in6->sin6_addr.s6_addr;
        if (memcmp(b, v4mapped, sizeof(v4mapped)) == 0) {
            memcpy(out, b + 12, 4);
            *lenp = 4;
            return AF_INET;
        }
        memcpy(out, b, 16);
        *lenp = 16;
        return AF_INET6;
    }
    *lenp = 0;
    return 0;
}

/* Whether the first `bits` bits of a and b agree. */
static bool prefix_equal(const unsigned char *a,
                         const unsigned char *b,
                         unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;

    if (memcmp(a, b, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

int cidr_parse(const char *text, struct cidr *c, vnib_error_t *errp)
{
    char host[INET6_ADDRSTRLEN];
    const char *slash = strchr(text, '/');
    size_t hlen = slash ? (size_t)(slash - text) : strlen(text);

    memset(c, 0, sizeof(*c));
    if (hlen == 0 || hlen >= sizeof(host))
        goto bad;
    memcpy(host, text, hlen);
    host[hlen] = '\0';
    if (inet_pton(AF_INET, host, c->addr) == 1)
        c->family = AF_INET;
    else if (inet_pton(AF_INET6, host, c->addr) == 1)
        c->family = AF_INET6;
    else
        goto bad;
    unsigned max = c->family == AF_INET ? 32 : 128;
    c->prefix = max;
    if (slash) {
        char *end;
        errno = 0;
        long n = strtol(slash + 1, &end, 10);
        if (slash[1] < '0' || slash[1] > '9' || *end || errno || n < 0
            || n > (long)max)
            goto bad;
        c->prefix = (unsigned)n;
    }
    /* The host bits of the block must be zero. */
    unsigned char masked[16];
    memcpy(masked, c->addr, sizeof(masked));
    for (unsigned bit = c->prefix; bit < max; bit++)
        masked[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
    if (memcmp(masked, c->addr, max / 8) != 0) {
        errno = EINVAL;
        return errprintf(
            errp, "'%s' has bits set past its /%u prefix", text, c->prefix);
    }
    return 0;
bad:
    errno = EINVAL;
    return errprintf(
        errp, "'%s' is not a numeric address or ADDRESS/PREFIX block", text);
}

bool cidr_match(const struct cidr *c, const struct sockaddr *sa)
{
    unsigned char addr[16];
    int len;
    int family = cidr_address(sa, addr, &len);

    return family != 0 && family == c->family
           && prefix_equal(addr, c->addr, c->prefix);
}
