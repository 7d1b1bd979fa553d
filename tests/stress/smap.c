/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A string-keyed hash map for the history checker (see smap.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stress/smap.h"

static uint64_t smap_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct smap_entry *smap_slot(const struct smap *m, const char *key)
{
    size_t i = (size_t)(smap_hash(key) & (m->cap - 1));

    while (m->e[i].key && strcmp(m->e[i].key, key) != 0)
        i = (i + 1) & (m->cap - 1);
    return &m->e[i];
}

void *smap_get(const struct smap *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    return smap_slot(m, key)->val;
}

int smap_put(struct smap *m, const char *key, void *val)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct smap old = *m;
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        if (!(m->e = calloc(ncap, sizeof(*m->e)))) {
            *m = old;
            errno = ENOMEM;
            return -1;
        }
        m->cap = ncap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.e[i].key)
                *smap_slot(m, old.e[i].key) = old.e[i];
        free(old.e);
    }
    struct smap_entry *s = smap_slot(m, key);
    if (!s->key) {
        if (!(s->key = strdup(key)))
            return -1;
        m->n++;
    }
    s->val = val;
    return 0;
}

void smap_cleanup(struct smap *m, bool free_vals)
{
    for (size_t i = 0; i < m->cap; i++) {
        free(m->e[i].key);
        if (free_vals)
            free(m->e[i].val);
    }
    free(m->e);
    memset(m, 0, sizeof(*m));
}

const char *smap_id_key(char *buf, size_t size, long long id)
{
    snprintf(buf, size, "%lld", id);
    return buf;
}
