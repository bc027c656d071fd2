/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a small open-addressing hash map with byte-string keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tar/tar.h"

/* 64-bit FNV-1a. */
static uint64_t map_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

void tar_map_init(struct tar_map *m)
{
	m->slot = NULL;
	m->cap = 0;
	m->used = 0;
}

void tar_map_free(struct tar_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++) {
		free(m->slot[i].key);
		free(m->slot[i].str);
	}
	free(m->slot);
	tar_map_init(m);
}

static struct tar_map_ent *map_find(const struct tar_map *m, const void *key,
				    size_t len, uint64_t h)
{
	size_t i = (size_t)h & (m->cap - 1);

	for (;;) {
		struct tar_map_ent *e = &m->slot[i];

		if (!e->key)
			return e;
		if (e->hash == h && e->key_len == len &&
		    !memcmp(e->key, key, len))
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

struct tar_map_ent *tar_map_get(const struct tar_map *m, const void *key,
				size_t len)
{
	struct tar_map_ent *e;

	if (!m->cap)
		return NULL;
	e = map_find(m, key, len, map_hash(key, len));
	return e->key ? e : NULL;
}

static int map_grow(struct tar_map *m)
{
	struct tar_map old = *m;
	size_t cap = old.cap ? old.cap * 2 : 64;

	m->slot = calloc(cap, sizeof(*m->slot));
	if (!m->slot) {
		*m = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < old.cap; i++) {
		struct tar_map_ent *o = &old.slot[i];

		if (o->key)
			*map_find(m, o->key, o->key_len, o->hash) = *o;
	}
	free(old.slot);
	return 0;
}

int tar_map_put(struct tar_map *m, const void *key, size_t len, int val,
		const char *str)
{
	struct tar_map_ent *e;
	uint64_t h = map_hash(key, len);
	char *copy = NULL;

	if ((m->used + 1) * 4 > m->cap * 3 && map_grow(m))
		return -ENOMEM;
	if (str && !(copy = strdup(str)))
		return -ENOMEM;
	e = map_find(m, key, len, h);
	if (!e->key) {
		e->key = malloc(len + 1);
		if (!e->key) {
			free(copy);
			return -ENOMEM;
		}
		memcpy(e->key, key, len);
		e->key[len] = '\0';
		e->key_len = len;
		e->hash = h;
		m->used++;
	}
	free(e->str);
	e->val = val;
	e->str = copy;
	return 0;
}
