/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/io/cache.h"
#include "libimage/util/err.h"
#include "libimage/util/hugemem.h"
#include "r4/util.h"

/* Blocks the first slab holds, and every later one: a volume that only
 * reads a little takes 256 KiB; one that writes many nodes takes 2 MiB
 * at a time, as huge pages where the system gives them (one page fault
 * for 512 blocks, not one each). */
#define IO_CACHE_SLAB0 64
#define IO_CACHE_SLAB 512

/* Under AddressSanitizer every buffer is its own allocation, so an
 * overrun or a use after release is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define IO_CACHE_OWN_BUFFERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IO_CACHE_OWN_BUFFERS 1
#endif
#endif

static uint8_t *buf_get(struct io_cache *c)
{
#ifdef IO_CACHE_OWN_BUFFERS
	return malloc(c->blksize);
#else
	size_t per = c->nslab ? IO_CACHE_SLAB : IO_CACHE_SLAB0;
	uint8_t *s;

	if (c->nfree)
		return c->freebuf[--c->nfree];
	if (!c->nslab || c->slab_used == c->slab_cap) {
		size_t total = c->nbuf + per;

		/* the free list can take every buffer: a release never
		 * fails */
		if (R4_RESERVE(c->freebuf, c->capfree, total, 64) ||
		    R4_RESERVE(c->slab, c->capslab, c->nslab + 1, 16))
			return NULL;
		s = r4i_alloc_huge(per * c->blksize);
		if (!s)
			return NULL;
		c->slab[c->nslab++] = s;
		c->slab_used = 0;
		c->slab_cap = per;
		c->nbuf = total;
	}
	return c->slab[c->nslab - 1] + c->slab_used++ * (size_t)c->blksize;
#endif
}

static void buf_put(struct io_cache *c, uint8_t *p)
{
#ifdef IO_CACHE_OWN_BUFFERS
	free(p);
#else
	if (p)
		c->freebuf[c->nfree++] = p;
#endif
}

static size_t bucket(const struct io_cache *c, uint64_t nr)
{
	return (size_t)((nr * 0x9E3779B97F4A7C15ULL) >> 20) % c->nbuckets;
}

int io_cache_init(struct io_cache *c, struct io_dev *dev, uint32_t blksize,
		  size_t max_blocks, struct r4_error *err)
{
	memset(c, 0, sizeof(*c));
	c->dev = dev;
	c->blksize = blksize;
	c->nblocks = dev->size / blksize;
	c->max = max_blocks < 16 ? 16 : max_blocks;
	c->nbuckets = c->max * 2 + 1;
	c->hash = calloc(c->nbuckets, sizeof(*c->hash));
	if (!c->hash)
		return r4i_fail(err, -ENOMEM, "%s: out of memory for the "
			       "block cache", dev->path);
	return 0;
}

static void lru_unlink(struct io_cache *c, struct io_block *b)
{
	if (b->lru_prev)
		b->lru_prev->lru_next = b->lru_next;
	else if (c->lru_head == b)
		c->lru_head = b->lru_next;
	if (b->lru_next)
		b->lru_next->lru_prev = b->lru_prev;
	else if (c->lru_tail == b)
		c->lru_tail = b->lru_prev;
	b->lru_prev = b->lru_next = NULL;
}

static void lru_push(struct io_cache *c, struct io_block *b)
{
	b->lru_prev = NULL;
	b->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = b;
	c->lru_head = b;
	if (!c->lru_tail)
		c->lru_tail = b;
}

static void hash_remove(struct io_cache *c, struct io_block *b)
{
	struct io_block **pp = &c->hash[bucket(c, b->nr)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
}

static void block_free(struct io_cache *c, struct io_block *b)
{
	hash_remove(c, b);
	lru_unlink(c, b);
	buf_put(c, b->data);
	free(b);
	c->count--;
}

static void evict(struct io_cache *c)
{
	while (c->count >= c->max && c->lru_tail)
		block_free(c, c->lru_tail);
}

static struct io_block *lookup(struct io_cache *c, uint64_t nr)
{
	struct io_block *b = c->hash[bucket(c, nr)];

	while (b && b->nr != nr)
		b = b->hnext;
	return b;
}

static struct io_block *pin(struct io_cache *c, struct io_block *b)
{
	if (b->ref++ == 0 && !b->dirty)
		lru_unlink(c, b);
	return b;
}

static int alloc_block(struct io_cache *c, uint64_t nr,
		       struct io_block **out, struct r4_error *err)
{
	struct io_block *b;

	if (nr >= c->nblocks)
		return r4i_fail(err, R4_ERANGE, "%s: block %llu is past the "
			       "end of the device (%llu blocks)", c->dev->path,
			       (unsigned long long)nr,
			       (unsigned long long)c->nblocks);
	evict(c);
	b = calloc(1, sizeof(*b));
	if (b)
		b->data = buf_get(c);
	if (!b || !b->data) {
		free(b);
		return r4i_fail(err, -ENOMEM, "%s: out of memory for block "
			       "%llu", c->dev->path, (unsigned long long)nr);
	}
	b->nr = nr;
	b->ref = 1;
	b->hnext = c->hash[bucket(c, nr)];
	c->hash[bucket(c, nr)] = b;
	c->count++;
	*out = b;
	return 0;
}

int io_cache_get(struct io_cache *c, uint64_t nr, struct io_block **out,
		 struct r4_error *err)
{
	struct io_block *b = lookup(c, nr);
	int rc;

	if (b) {
		c->hits++;
		*out = pin(c, b);
		return 0;
	}
	c->misses++;
	rc = alloc_block(c, nr, &b, err);
	if (rc)
		return rc;
	rc = c->under ? c->under(c->under_ctx, nr, b->data, err) : 0;
	if (rc == 0)
		rc = io_read(c->dev, b->data, c->blksize, nr * c->blksize,
			     err);
	else if (rc == 1)
		rc = 0;
	if (rc) {
		b->ref = 0;
		block_free(c, b);
		return rc;
	}
	*out = b;
	return 0;
}

/* Read blocks first..first+n-1, none of them in the cache, into buf. */
static int read_uncached(struct io_cache *c, uint64_t first, uint64_t n,
			 uint8_t *buf, struct r4_error *err)
{
	if (first >= c->nblocks || n > c->nblocks - first)
		return r4i_fail(err, R4_ERANGE, "%s: block %llu is past the "
			       "end of the device (%llu blocks)", c->dev->path,
			       (unsigned long long)(first < c->nblocks ?
						    c->nblocks : first),
			       (unsigned long long)c->nblocks);
	c->misses += n;
	return io_read(c->dev, buf, (size_t)(n * c->blksize),
		       first * c->blksize, err);
}

int io_cache_read(struct io_cache *c, uint64_t nr, uint64_t count,
		  uint8_t *buf, struct r4_error *err)
{
	uint64_t run = nr;	/* first block of the pending uncached run */
	int rc;

	for (uint64_t i = nr; i < nr + count; i++) {
		struct io_block *b = lookup(c, i);
		uint8_t *to = buf + (i - nr) * c->blksize;
		int under = 0;

		if (!b && c->under &&
		    (under = c->under(c->under_ctx, i, to, err)) < 0)
			return under;
		if (!b && !under)
			continue;
		if (i > run) {
			rc = read_uncached(c, run, i - run,
					   buf + (run - nr) * c->blksize, err);
			if (rc)
				return rc;
		}
		if (b) {
			c->hits++;
			memcpy(to, b->data, c->blksize);
		}
		run = i + 1;
	}
	if (run < nr + count)
		return read_uncached(c, run, nr + count - run,
				     buf + (run - nr) * c->blksize, err);
	return 0;
}

static int cache_new(struct io_cache *c, uint64_t nr, int zero,
		     struct io_block **out, struct r4_error *err)
{
	struct io_block *b = lookup(c, nr);
	int rc;

	if (b) {
		*out = pin(c, b);
		b->verified = 0;
	} else {
		rc = alloc_block(c, nr, &b, err);
		if (rc)
			return rc;
		*out = b;
	}
	if (zero || c->raw_fill)
		memset(b->data, zero ? 0 : c->raw_fill, c->blksize);
	return 0;
}

int io_cache_new(struct io_cache *c, uint64_t nr, struct io_block **out,
		 struct r4_error *err)
{
	return cache_new(c, nr, 1, out, err);
}

int io_cache_new_raw(struct io_cache *c, uint64_t nr, struct io_block **out,
		     struct r4_error *err)
{
	return cache_new(c, nr, 0, out, err);
}

void io_cache_put(struct io_cache *c, struct io_block *b)
{
	if (!b || b->ref == 0)
		return;
	if (--b->ref == 0 && b->orphan) {
		buf_put(c, b->data);
		free(b);
		return;
	}
	if (b->ref == 0 && !b->dirty)
		lru_push(c, b);
}

void io_cache_clean(struct io_cache *c, struct io_block *b)
{
	if (!b->dirty)
		return;
	b->dirty = 0;
	b->verified = 0;
	if (b->ref == 0 && !b->orphan)
		lru_push(c, b);
}

void io_cache_discard(struct io_cache *c, struct io_block *b)
{
	if (!b || b->orphan)
		return;
	hash_remove(c, b);
	lru_unlink(c, b);
	c->count--;
	b->dirty = 0;
	b->orphan = 1;
	if (b->ref == 0)
		b->ref = 1;
	io_cache_put(c, b);
}

void io_cache_dirty(struct io_cache *c, struct io_block *b)
{
	if (!b->dirty && b->ref == 0)
		lru_unlink(c, b);
	b->dirty = 1;
	b->verified = 0;
}

void io_cache_forget(struct io_cache *c, uint64_t nr)
{
	struct io_block *b = lookup(c, nr);

	if (!b)
		return;
	if (b->ref == 0) {
		block_free(c, b);
		return;
	}
	b->ref++;
	io_cache_discard(c, b);
}

void io_cache_drop_clean(struct io_cache *c)
{
	while (c->lru_tail)
		block_free(c, c->lru_tail);
}

#ifndef IO_CACHE_OWN_BUFFERS
static int cmp_buf(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(uint8_t *const *)a;
	uintptr_t y = (uintptr_t)*(uint8_t *const *)b;

	return (x > y) - (x < y);
}
#endif

size_t io_cache_trim(struct io_cache *c)
{
	size_t freed = 0;

	io_cache_drop_clean(c);
#ifndef IO_CACHE_OWN_BUFFERS
	uintptr_t bytes = (uintptr_t)IO_CACHE_SLAB * c->blksize;
	size_t j = 0, k = 0, ns = 1;

	/* the first slab (small) and the last (partly carved: its rest is
	 * in no free list) stay; the others and the free buffers in address
	 * order, merged: a slab whose every buffer is free goes, with them */
	if (c->nslab < 3)
		return 0;
	qsort(c->freebuf, c->nfree, sizeof(*c->freebuf), cmp_buf);
	qsort(c->slab + 1, c->nslab - 2, sizeof(*c->slab), cmp_buf);
	for (size_t i = 1; i + 1 < c->nslab; i++) {
		uintptr_t s = (uintptr_t)c->slab[i];
		size_t lo;

		while (j < c->nfree && (uintptr_t)c->freebuf[j] < s)
			c->freebuf[k++] = c->freebuf[j++];
		lo = j;
		while (j < c->nfree && (uintptr_t)c->freebuf[j] < s + bytes)
			j++;
		if (j - lo == IO_CACHE_SLAB) {
			free(c->slab[i]);
			freed++;
			continue;
		}
		while (lo < j)	/* a buffer of it is in use: it stays */
			c->freebuf[k++] = c->freebuf[lo++];
		c->slab[ns++] = c->slab[i];
	}
	while (j < c->nfree)
		c->freebuf[k++] = c->freebuf[j++];
	c->slab[ns++] = c->slab[c->nslab - 1];
	c->nslab = ns;
	c->nfree = k;
	c->nbuf -= freed * IO_CACHE_SLAB;
#endif
	return freed;
}

size_t io_cache_fini(struct io_cache *c)
{
	size_t leaked = 0;

	if (!c->hash)
		return 0;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct io_block *b = c->hash[i];

		while (b) {
			struct io_block *next = b->hnext;

			if (b->ref)
				leaked++;
			buf_put(c, b->data);
			free(b);
			b = next;
		}
	}
	for (size_t i = 0; i < c->nslab; i++)
		free(c->slab[i]);
	free(c->slab);
	free(c->freebuf);
	c->slab = c->freebuf = NULL;
	c->nslab = c->capslab = c->slab_used = c->slab_cap = 0;
	c->nfree = c->capfree = c->nbuf = 0;
	free(c->hash);
	c->hash = NULL;
	c->count = 0;
	return leaked;
}
