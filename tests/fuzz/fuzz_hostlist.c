/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for the hostlist and idset parsers.
 *
 * Both parsers read text from the network.  Beyond "does not crash under
 * ASan and UBSan", this target checks the properties the broker relies on
 * and aborts when one fails:
 *   - hostlist_count_expr agrees with hostlist_decode on success and errno;
 *   - decode(encode(decode(x))) is the same set as decode(x), and encoding
 *     that set again gives the same text;
 *   - decoded names are found by hostlist_contains, before and after uniq;
 *   - a hostset of the same text (read into ranges, not expanded) holds
 *     every decoded name, and agrees with the list on names next to them
 *     (a digit more or less, a leading zero, another last byte);
 *   - an idset that decodes re-encodes to text that decodes to the same
 *     ranges, and next_after returns members.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/hostlist.h"
#include "vnib/hostset.h"
#include "vnib/idset.h"

/* Small enough that one input never takes long to expand. */
#define FUZZ_MAX_NAMES 10000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a and b (both uniq'd) hold the same names. */
static void check_same(const struct hostlist *a, const struct hostlist *b)
{
    if (hostlist_count(a) != hostlist_count(b))
        abort();
    for (size_t i = 0; i < hostlist_count(a); i++)
        if (strcmp(hostlist_nth(a, i), hostlist_nth(b, i)) != 0)
            abort();
}

/* The hostset of s agrees with a (s decoded, uniq'd) on a's names and on
 * the names next to some of them.
 */
static void check_hostset(const char *s, const struct hostlist *a)
{
    struct hostset *hs = hostset_decode(s, FUZZ_MAX_NAMES, NULL);
    char buf[HOSTLIST_MAX_NAME_LEN + 2];

    if (!hs) {
        if (errno != ENOMEM)
            abort(); /* what decodes must read as a set */
        return;
    }
    for (size_t i = 0; i < hostlist_count(a); i++) {
        const char *name = hostlist_nth(a, i);
        size_t len = strlen(name), d = len;
        if (!hostset_contains(hs, name))
            abort();
        if (i % 7 != 0)
            continue;
        while (d > 0 && (name[d - 1] < '0' || name[d - 1] > '9'))
            d--;
        while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
            d--;
        /* A leading zero before the last digit run, a "0" after the name,
         * the name less its last byte, its last byte another digit.
         */
        memcpy(buf, name, d);
        buf[d] = '0';
        memcpy(buf + d + 1, name + d, len - d + 1);
        for (int k = 0; k < 4; k++) {
            if (k == 1) {
                memcpy(buf, name, len);
                memcpy(buf + len, "0", 2);
            } else if (k == 2 || k == 3) {
                memcpy(buf, name, len + 1);
                if (k == 2)
                    buf[len - 1] = '\0';
                else
                    buf[len - 1] = buf[len - 1] == '9' ? '0' : '9';
            }
            if (hostset_contains(hs, buf) != hostlist_contains(a, buf))
                abort();
        }
    }
    hostset_destroy(hs);
}

static void fuzz_hostlist(const char *s)
{
    struct hostlist *a = NULL;
    struct hostlist *b = NULL;
    char *enc = NULL;
    char *enc2 = NULL;
    size_t count = 0;
    int count_rc;
    int count_errno;

    errno = 0;
    count_rc = hostlist_count_expr(s, FUZZ_MAX_NAMES, &count, NULL);
    count_errno = errno;
    errno = 0;
    a = hostlist_decode(s, FUZZ_MAX_NAMES, NULL);
    if (!a) {
        /* Same verdict as the counter, unless memory ran out. */
        if (errno != ENOMEM && (count_rc == 0 || count_errno != errno))
            abort();
        return;
    }
    if (count_rc != 0 || count != hostlist_count(a))
        abort();
    /* Before uniq, contains is a linear scan: sample a few names rather
     * than making every input quadratic.
     */
    for (size_t i = 0; i < hostlist_count(a); i += 1 + i / 4)
        if (!hostlist_contains(a, hostlist_nth(a, i)))
            abort();

    if (!(enc = hostlist_encode(a)))
        goto done;
    if (!(b = hostlist_decode(enc, FUZZ_MAX_NAMES, NULL)))
        abort(); /* an encoding must always decode */
    hostlist_uniq(a);
    hostlist_uniq(b);
    check_same(a, b);
    check_hostset(s, a);
    for (size_t i = 0; i < hostlist_count(b); i++)
        if (!hostlist_contains(a, hostlist_nth(b, i)))
            abort();
    if (!(enc2 = hostlist_encode(b)))
        goto done;
    if (strcmp(enc, enc2) != 0)
        abort();
done:
    free(enc2);
    free(enc);
    hostlist_destroy(b);
    hostlist_destroy(a);
}

static void fuzz_idset(const char *s)
{
    struct idset *a = idset_decode(s, 65535, NULL);
    struct idset *b = NULL;
    char *enc = NULL;
    uint32_t id;

    if (!a)
        return;
    if (!(enc = idset_encode(a)))
        goto done;
    if (!(b = idset_decode(enc, 65535, NULL)))
        abort();
    if (idset_range_count(a) != idset_range_count(b)
        || idset_count(a) != idset_count(b))
        abort();
    for (size_t i = 0; i < idset_range_count(a); i++) {
        uint32_t alo, ahi, blo, bhi;
        if (idset_range(a, i, &alo, &ahi) < 0
            || idset_range(b, i, &blo, &bhi) < 0 || alo != blo || ahi != bhi)
            abort();
        /* Ranges are sorted with gaps between them. */
        if (i > 0) {
            uint32_t plo, phi;
            if (idset_range(a, i - 1, &plo, &phi) < 0
                || (uint64_t)phi + 1 >= alo)
                abort();
        }
    }
    if (idset_count(a) > 0) {
        uint32_t cursors[] = {0, 1024, 65535, UINT32_MAX};
        for (size_t i = 0; i < sizeof(cursors) / sizeof(cursors[0]); i++)
            if (idset_next_after(a, cursors[i], &id) < 0
                || !idset_contains(a, id))
                abort();
    }
done:
    free(enc);
    idset_destroy(b);
    idset_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;

    if (size > 0 && memchr(data, '\0', size))
        return 0; /* the APIs take C strings */
    if (!(s = malloc(size + 1)))
        return 0;
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    fuzz_hostlist(s);
    fuzz_idset(s);
    free(s);
    return 0;
}
