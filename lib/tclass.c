/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Traffic class names and masks (see tclass.h). */
#include <errno.h>
#include <stdio.h>
#include <strings.h>

#include "vnib/tclass.h"

static const struct {
    const char *name;
    unsigned bit;
} classes[] = {
    {"DEDICATED_ACCESS", TCLASS_DEDICATED_ACCESS},
    {"LOW_LATENCY", TCLASS_LOW_LATENCY},
    {"BULK_DATA", TCLASS_BULK_DATA},
    {"BEST_EFFORT", TCLASS_BEST_EFFORT},
};

unsigned tclass_bit(const char *name)
{
    if (!name)
        return 0;
    if (strncasecmp(name, "TC_", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (strcasecmp(name, classes[i].name) == 0)
            return classes[i].bit;
    return 0;
}

const char *tclass_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (classes[i].bit == bit)
            return classes[i].name;
    return NULL;
}

void tclass_mask_hex(unsigned mask, char *buf, size_t size)
{
    snprintf(buf, size, "0x%x", mask);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int tclass_mask_parse(const char *s, unsigned *maskp)
{
    unsigned mask = 0;
    size_t n = 0;

    if (!s || s[0] != '0' || s[1] != 'x')
        goto invalid;
    for (s += 2; *s && n < 3; s++, n++) {
        int d = hex_digit(*s);
        if (d < 0)
            goto invalid;
        mask = mask * 16 + (unsigned)d;
    }
    if (n < 1 || n > 2)
        goto invalid;
    *maskp = mask;
    return 0;
invalid:
    errno = EINVAL;
    return -1;
}
