/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the containers the library and the tools share (as libext2fs
 * exports its u32 lists): growable arrays, and a hash map from u64 keys
 * (block numbers, object ids) to fixed-size values, or a set. */
#ifndef R4_UTIL_H
#define R4_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* ---- Growable arrays ---------------------------------------------------
 * An array is a pointer and a capacity the caller keeps (with its own
 * count), so a struct needs no new member:
 *
 *	if (R4_RESERVE(v, cap, n + 1, 16))
 *		return -ENOMEM;
 *	v[n++] = x;
 */

/* Room for need elements of elem bytes in the array whose pointer is at
 * pp (a T **) and whose capacity is *cap: the capacity doubles from
 * first (or from need, when larger). 0, or -ENOMEM with the array and
 * *cap untouched. */
int r4_reserve(void *pp, size_t *cap, size_t need, size_t elem,
	       size_t first);

#define R4_RESERVE(arr, cap, need, first) \
	r4_reserve(&(arr), &(cap), (need), sizeof(*(arr)), (first))

/* ---- u64 hash map and set ----------------------------------------------
 * Open addressing with linear probing; any u64 is a key. With a value
 * size of 0 it is a set. Pointers to values stay valid until the next
 * r4_u64map_get (which may rehash, even for a key already there);
 * a delete moves nothing. */
struct r4_u64map {
	uint64_t *keys;
	uint8_t *state;		/* per slot: 0 free, 1 used, 2 deleted */
	unsigned char *vals;	/* cap * vsize bytes (NULL for a set) */
	size_t cap, n, used;	/* n live keys; used = live + deleted */
	size_t vsize;
	unsigned shift;		/* 64 - log2(cap) */
};

/* An empty map of values of vsize bytes (0: a set; an all-zero struct
 * is an empty set too); fini frees it (and is safe on an empty map). */
void r4_u64map_init(struct r4_u64map *m, size_t vsize);
void r4_u64map_fini(struct r4_u64map *m);
/* The value of key (for a set: any non-NULL pointer), or NULL. */
void *r4_u64map_find(const struct r4_u64map *m, uint64_t key);
/* The value of key, inserted zeroed when missing (*added = 1, else 0;
 * added may be NULL). NULL when out of memory. */
void *r4_u64map_get(struct r4_u64map *m, uint64_t key, int *added);
/* A set's insertion: 0 added, 1 already there, -ENOMEM. */
int r4_u64set_add(struct r4_u64map *m, uint64_t key);
/* Remove key: 1 when it was there. */
int r4_u64map_del(struct r4_u64map *m, uint64_t key);
/* Walking: for (i = r4_u64map_next(m, 0); i < m->cap;
 * i = r4_u64map_next(m, i + 1)) -- key m->keys[i], value
 * r4_u64map_val(m, i); the order is the table's, not the keys'. */
size_t r4_u64map_next(const struct r4_u64map *m, size_t i);
static inline void *r4_u64map_val(const struct r4_u64map *m, size_t i)
{
	return m->vals ? m->vals + i * m->vsize : (void *)&m->keys[i];
}

#endif
