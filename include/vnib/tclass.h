/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a CXI service holds besides its members: the Slingshot traffic
 * classes (names, bits, and the SLINGSHOT_TCS mask), and at most
 * VNIB_SERVICE_VNIS_MAX VNIs.
 *
 * A CXI service lists the traffic classes its job may use.  The broker
 * stores them per reservation as a bit mask (bit = 1 << enum
 * cxi_traffic_class) and prints them both as names and as the "0xa" form
 * of SLINGSHOT_TCS, as Slurm does.
 */
#ifndef VNIB_TCLASS_H
#define VNIB_TCLASS_H

#include <stddef.h>

#include "vnib/error.h"

/* The most VNIs one CXI service holds (libcxi's CXI_SVC_MAX_VNIS), and so
 * the most a job's reservation may have, or a step's with its job's: its
 * service holds both.
 */
#define VNIB_SERVICE_VNIS_MAX 4

enum {
    TCLASS_DEDICATED_ACCESS = 0x1,
    TCLASS_LOW_LATENCY = 0x2,
    TCLASS_BULK_DATA = 0x4,
    TCLASS_BEST_EFFORT = 0x8,
    TCLASS_ALL = 0xf,
};

/* The bit of a class name ("LOW_LATENCY", also with a "TC_" prefix, any
 * case), or 0 when the name is unknown.
 */
unsigned tclass_bit(const char *name);

/* The canonical name of one bit, or NULL. */
const char *tclass_name(unsigned bit);

/* Write the mask as SLINGSHOT_TCS does ("0xa") into buf. */
void tclass_mask_hex(unsigned mask, char *buf, size_t size);

/* Read a mask written by tclass_mask_hex(): "0x" and one or two lower-case
 * hex digits, nothing else (no sign, space or line break).  Returns 0, or
 * -1 with errno EINVAL.
 */
int tclass_mask_parse(const char *s, unsigned *maskp);

#endif /* !VNIB_TCLASS_H */
