/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A string-keyed hash map for the history checker (hcheck.c,
 * hstepcheck.c): jobs and steps by name, reservations by decimal id.
 * Open addressing, linear probing, never shrinks; the keys are copies,
 * the values the caller's.  A zeroed struct smap is an empty map.
 */
#ifndef VNIB_TESTS_SMAP_H
#define VNIB_TESTS_SMAP_H

#include <stdbool.h>
#include <stddef.h>

struct smap_entry {
    char *key; /* owned; NULL: empty slot */
    void *val; /* not owned */
};

struct smap {
    struct smap_entry *e;
    size_t cap, n;
};

/* The value kept under key, or NULL. */
void *smap_get(const struct smap *m, const char *key);

/* Keep val under key (replacing what was there).  0, or -1 with errno
 * ENOMEM.
 */
int smap_put(struct smap *m, const char *key, void *val);

/* Free the keys, and the values too when free_vals (with free()). */
void smap_cleanup(struct smap *m, bool free_vals);

/* id as a key: its decimal text in buf (size bytes), returned. */
const char *smap_id_key(char *buf, size_t size, long long id);

#endif /* !VNIB_TESTS_SMAP_H */
