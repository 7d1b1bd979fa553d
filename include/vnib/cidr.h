/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Address blocks in CIDR notation ("10.1.0.0/16", "2001:db8::/32").
 *
 * The broker lists the hosts whose connections it keeps room for (the
 * scheduler's controllers, admin hosts) as address blocks.  A block
 * without a prefix length is one host.  IPv4-mapped IPv6 addresses
 * (::ffff:192.0.2.7, what a dual-stack listener sees of an IPv4 client)
 * match IPv4 blocks, so one list serves both kinds of listener.
 */
#ifndef VNIB_CIDR_H
#define VNIB_CIDR_H

#include <stdbool.h>

#include "vnib/error.h"

struct sockaddr;

struct cidr {
    int family;             /* AF_INET or AF_INET6 */
    unsigned char addr[16]; /* network byte order; 4 bytes for AF_INET */
    unsigned prefix;        /* 0-32 or 0-128 */
};

/* Parse "ADDR" or "ADDR/LEN" (numeric only; no host names).  Bits past
 * the prefix must be zero ("10.1.2.3/16" is refused as a likely typo for
 * a host or a wider block).  Returns 0, or -1 with errno EINVAL and errp
 * quoting the text.
 */
int cidr_parse(const char *text, struct cidr *c, vnib_error_t *errp);

/* Whether sa (AF_INET or AF_INET6; NULL never matches) lies in c. */
bool cidr_match(const struct cidr *c, const struct sockaddr *sa);

/* Reduce sa to its family and address bytes: an IPv4-mapped IPv6
 * address becomes AF_INET.  *lenp is 4 or 16.  Returns the family, or
 * 0 for another family (or NULL).
 */
int cidr_address(const struct sockaddr *sa, unsigned char out[16], int *lenp);

#endif /* !VNIB_CIDR_H */
