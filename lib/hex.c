/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hexadecimal digits and byte strings (see hex.h). */
#include <errno.h>

#include "vnib/hex.h"

int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void hex_encode(const unsigned char *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0x0f];
    }
    out[2 * n] = '\0';
}

int hex_decode(const char *hex, unsigned char *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit((unsigned char)hex[2 * i]);
        int lo = hi < 0 ? -1 : hex_digit((unsigned char)hex[2 * i + 1]);
        if (lo < 0) {
            errno = EINVAL;
            return -1;
        }
        bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
