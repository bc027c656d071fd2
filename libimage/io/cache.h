/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the block cache. Blocks are reference counted: io_cache_get()
 * returns a pinned block that stays valid until io_cache_put(). Clean,
 * unreferenced blocks are evicted least recently used first; dirty blocks
 * stay until the transaction that captured them commits, writes them and
 * marks them clean (io_cache_clean). */
#ifndef R4_LIBIMAGE_IO_CACHE_H
#define R4_LIBIMAGE_IO_CACHE_H

#include <stdint.h>
#include "libimage/io/dev.h"

struct io_block {
	uint64_t nr;
	uint8_t *data;
	unsigned ref;
	unsigned dirty : 1;
	unsigned orphan : 1;	/* discarded while pinned: freed at last put */
	/* Set by a reader that verified the bytes of a clean block (a tree
	 * node), or by the tree's node writer for a dirty one, so they
	 * need not be verified again; cleared whenever the bytes may
	 * change (new, dirtied, captured, cleaned by a commit). */
	unsigned verified : 1;
	struct io_block *hnext;			/* hash chain */
	struct io_block *lru_prev, *lru_next;	/* unreferenced, clean */
};

/* Where a miss looks before the device: 1 with block nr's bytes in buf,
 * 0 when it does not hold the block, or an error (err filled). */
typedef int (*io_cache_under_fn)(void *ctx, uint64_t nr, uint8_t *buf,
				 struct r4_error *err);

struct io_cache {
	struct io_dev *dev;
	/* Set by a transaction whose blocks wait in a scratch file
	 * (libimage/txn: txn_spill) while it runs; NULL: none. */
	io_cache_under_fn under;
	void *under_ctx;
	uint32_t blksize;
	uint64_t nblocks;	/* blocks addressable (device size) */
	size_t nbuckets;
	struct io_block **hash;
	struct io_block *lru_head, *lru_tail;	/* head = most recent */
	size_t count, max;
	uint64_t hits, misses;
	/* Block buffers: carved from slabs (cache.c) and recycled through
	 * a free list (a transaction holds every node it writes: thousands
	 * of buffers, which malloc serves slowly from a heap full of small
	 * item bodies); given back at fini. */
	uint8_t **slab;
	size_t nslab, capslab, slab_used, slab_cap, nbuf;
	uint8_t **freebuf;
	size_t nfree, capfree;
	/* Tests: io_cache_new_raw fills a buffer with these bytes (0: left
	 * as they are), so a byte its caller did not write shows. */
	uint8_t raw_fill;
};

int io_cache_init(struct io_cache *c, struct io_dev *dev, uint32_t blksize,
		  size_t max_blocks, struct r4_error *err);
/* Frees every block; returns how many were still referenced (a leak in
 * the caller) so debug builds and tests can check it. */
size_t io_cache_fini(struct io_cache *c);

/* Read block nr (from the cache when present). A block past the end of
 * the device is an R4_ERANGE error naming the block. */
int io_cache_get(struct io_cache *c, uint64_t nr, struct io_block **out,
		 struct r4_error *err);
/* Copy blocks nr..nr+count-1 into buf (count * blksize bytes) without
 * keeping them: blocks in the cache (dirty ones included) or under it
 * come from there,
 * each run of the others from the device in one read. For file data,
 * which is read once: it neither evicts tree nodes nor costs an
 * allocation per block. */
int io_cache_read(struct io_cache *c, uint64_t nr, uint64_t count,
		  uint8_t *buf, struct r4_error *err);
/* A block to be overwritten whole: zero-filled, not read from disk. */
int io_cache_new(struct io_cache *c, uint64_t nr, struct io_block **out,
		 struct r4_error *err);
/* The same with the buffer's bytes left as they are (any: a buffer used
 * before): the caller writes every byte before anyone may read or write
 * the block (libimage/txn: txn_new_raw). */
int io_cache_new_raw(struct io_cache *c, uint64_t nr, struct io_block **out,
		     struct r4_error *err);
void io_cache_put(struct io_cache *c, struct io_block *b);
void io_cache_dirty(struct io_cache *c, struct io_block *b);

/* The block's bytes are on disk now (a transaction wrote them). */
void io_cache_clean(struct io_cache *c, struct io_block *b);
/* Forget a pinned block's bytes (a transaction aborted): it leaves the
 * cache at once, so the next get reads the disk; the caller's pin is
 * dropped (other pins stay valid until their puts). */
void io_cache_discard(struct io_cache *c, struct io_block *b);

/* Drop block nr from the cache if present (its disk bytes changed
 * behind the cache); a pinned copy becomes an orphan. */
void io_cache_forget(struct io_cache *c, uint64_t nr);

/* Forget every clean unreferenced block (e.g. after a journal replay
 * rewrote blocks underneath). */
void io_cache_drop_clean(struct io_cache *c);

/* io_cache_drop_clean, then the buffer slabs none of whose blocks is
 * left (pinned or dirty) given back to the system: after a transaction
 * that wrote many more nodes than the cache keeps (a tree rebuild).
 * Returns how many slabs went. */
size_t io_cache_trim(struct io_cache *c);

#endif
