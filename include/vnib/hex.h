/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hexadecimal digits and byte strings.
 *
 * Digests, request ids and sealed session tokens are stored and shown as
 * lowercase hex; parsers (TOML numbers, URL escapes) read either case.
 */
#ifndef VNIB_HEX_H
#define VNIB_HEX_H

#include <stddef.h>

/* The value of one hex digit (0-9, a-f, A-F), or -1.  The decimal, octal
 * and binary digits are among them: a parser compares with its base.
 */
int hex_digit(int c);

/* Write n bytes as 2n lowercase hex digits and a NUL into out, which
 * holds 2n + 1 bytes.
 */
void hex_encode(const unsigned char *bytes, size_t n, char *out);

/* Read exactly 2n hex digits from hex into n bytes.  Returns 0, or -1
 * with errno EINVAL when a character is not a hex digit (bytes is then
 * partly written).  It reads no further than the first bad character.
 */
int hex_decode(const char *hex, unsigned char *bytes, size_t n);

#endif /* !VNIB_HEX_H */
