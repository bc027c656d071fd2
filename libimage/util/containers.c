/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: growable arrays and the u64 hash map (include/r4/util.h). */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"

int r4_reserve(void *pp, size_t *cap, size_t need, size_t elem,
	       size_t first)
{
	size_t nc = *cap ? *cap : first;
	void *p, *old;

	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return -ENOMEM;
		nc = nc ? nc * 2 : need;
	}
	if (!elem || nc > SIZE_MAX / elem)
		return -ENOMEM;
	memcpy(&old, pp, sizeof(old));	/* *pp is a T *, not a void * */
	p = realloc(old, nc * elem);
	if (!p)
		return -ENOMEM;
	memcpy(pp, &p, sizeof(p));
	*cap = nc;
	return 0;
}

/* ---- u64 hash map ------------------------------------------------------ */

enum { SLOT_FREE, SLOT_USED, SLOT_GONE };

#define MAP_FIRST_CAP 64

void r4_u64map_init(struct r4_u64map *m, size_t vsize)
{
	memset(m, 0, sizeof(*m));
	m->vsize = vsize;
}

void r4_u64map_fini(struct r4_u64map *m)
{
	free(m->keys);
	free(m->state);
	free(m->vals);
	r4_u64map_init(m, m->vsize);
}

/* Fibonacci hashing: the top bits of key * 2^64 / phi. */
static size_t home(const struct r4_u64map *m, uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> m->shift);
}

/* The slot of key, or the first reusable one on its probe run
 * (*found = 0). The table is never full. */
static size_t probe(const struct r4_u64map *m, uint64_t key, int *found)
{
	size_t i = home(m, key), mask = m->cap - 1, reuse = m->cap;

	for (;; i = (i + 1) & mask) {
		if (m->state[i] == SLOT_FREE) {
			*found = 0;
			return reuse < m->cap ? reuse : i;
		}
		if (m->state[i] == SLOT_GONE) {
			if (reuse == m->cap)
				reuse = i;
		} else if (m->keys[i] == key) {
			*found = 1;
			return i;
		}
	}
}

void *r4_u64map_find(const struct r4_u64map *m, uint64_t key)
{
	int found;
	size_t i;

	if (!m->n)
		return NULL;
	i = probe(m, key, &found);
	return found ? r4_u64map_val(m, i) : NULL;
}

static int rehash(struct r4_u64map *m, size_t cap)
{
	struct r4_u64map t;
	unsigned bits = 0;

	r4_u64map_init(&t, m->vsize);
	while (((size_t)1 << bits) < cap)
		bits++;
	t.cap = (size_t)1 << bits;
	t.shift = 64 - bits;
	t.keys = malloc(t.cap * sizeof(*t.keys));
	t.state = calloc(t.cap, 1);
	t.vals = m->vsize ? malloc(t.cap * m->vsize) : NULL;
	if (!t.keys || !t.state || (m->vsize && !t.vals)) {
		r4_u64map_fini(&t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;
		int found;

		if (m->state[i] != SLOT_USED)
			continue;
		j = probe(&t, m->keys[i], &found);
		t.keys[j] = m->keys[i];
		t.state[j] = SLOT_USED;
		if (m->vsize)
			memcpy(t.vals + j * m->vsize, m->vals + i * m->vsize,
			       m->vsize);
		t.n++;
	}
	t.used = t.n;
	r4_u64map_fini(m);
	*m = t;
	return 0;
}

void *r4_u64map_get(struct r4_u64map *m, uint64_t key, int *added)
{
	int found;
	size_t i;

	if ((m->used + 1) * 2 > m->cap) {
		/* mostly deleted slots: clean up at the same size */
		size_t cap = m->cap && m->n * 4 < m->cap ? m->cap :
			     m->cap ? m->cap * 2 : MAP_FIRST_CAP;

		if (rehash(m, cap))
			return NULL;
	}
	i = probe(m, key, &found);
	if (!found) {
		if (m->state[i] == SLOT_FREE)
			m->used++;
		m->state[i] = SLOT_USED;
		m->keys[i] = key;
		m->n++;
		if (m->vsize)
			memset(m->vals + i * m->vsize, 0, m->vsize);
	}
	if (added)
		*added = !found;
	return r4_u64map_val(m, i);
}

int r4_u64set_add(struct r4_u64map *m, uint64_t key)
{
	int added;

	if (!r4_u64map_get(m, key, &added))
		return -ENOMEM;
	return !added;
}

int r4_u64map_del(struct r4_u64map *m, uint64_t key)
{
	int found;
	size_t i;

	if (!m->n)
		return 0;
	i = probe(m, key, &found);
	if (!found)
		return 0;
	m->state[i] = SLOT_GONE;
	m->n--;
	return 1;
}

size_t r4_u64map_next(const struct r4_u64map *m, size_t i)
{
	while (i < m->cap && m->state[i] != SLOT_USED)
		i++;
	return i;
}
