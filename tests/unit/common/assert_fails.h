/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An assertion the unit tests share, in cmocka's style: a call that fails
 * with -1 and sets errno.
 */
#ifndef VNIB_TESTS_ASSERT_FAILS_H
#define VNIB_TESTS_ASSERT_FAILS_H

#include <errno.h>

/* call returns -1 with errno err (cleared before the call). */
#define assert_fails(call, err)         \
    do {                                \
        errno = 0;                      \
        assert_int_equal((call), -1);   \
        assert_int_equal(errno, (err)); \
    } while (0)

#endif /* !VNIB_TESTS_ASSERT_FAILS_H */
