/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the space map, i.e. the alloc40 bitmap blocks of a volume, held
 * in memory and loaded region by region on first use. One bitmap block
 * describes one region of (blksize - 4) * 8 blocks. */
#ifndef R4_LIBIMAGE_SPACE_H
#define R4_LIBIMAGE_SPACE_H

#include <stdint.h>
#include "libimage/io/dev.h"

struct space {
	struct io_dev *dev;
	uint32_t blksize;
	uint64_t block_count;
	uint64_t nregions;
	uint64_t bpb;		/* blocks per bitmap block */
	uint8_t **map;		/* per region: a bitmap block, or NULL */
	uint8_t *dirty;		/* per region */
	uint8_t *bad_csum;	/* per region: the checksum read was wrong */
	/* The repair rewrites the bitmaps from what is in use: it loads a
	 * block whose checksum is wrong (marked in bad_csum) instead of
	 * refusing it. Nobody else sets this. */
	int keep_bad;
	/* Blocks known to be in use whatever the bitmap says (nodes read,
	 * blocks their pointers and extents reference): sorted, disjoint
	 * [start, end) ranges. */
	struct space_pin { uint64_t start, end; } *pins;
	size_t npins, pins_cap;
};

int space_init(struct space *s, struct io_dev *dev, uint32_t blksize,
	       uint64_t block_count, struct r4_error *err);
void space_fini(struct space *s);

/* Load region k's bitmap block from disk (no-op when loaded). A wrong
 * checksum is an R4_ECORRUPT error naming the block (as the kernel
 * refuses such a block): the space map only serves allocation, and bits
 * that cannot be trusted would hand out live blocks. r4fsck reads the
 * bitmaps on its own and reports it. */
int space_load(struct space *s, uint64_t k, struct r4_error *err);
/* Load every region (a writable open checks every bitmap up front). */
int space_load_all(struct space *s, struct r4_error *err);

/* Mark count blocks from start as known used (a node read, a block it
 * points to): space_test calls them used and space_find_free never
 * returns them, whatever the bitmap says. space_unpin forgets them (a
 * committed transaction freed them). */
int space_pin(struct space *s, uint64_t start, uint64_t count);
void space_unpin(struct space *s, uint64_t start, uint64_t count);
/* Whether block blk is marked used (or pinned): 1, 0, or a negative
 * error. */
int space_test(struct space *s, uint64_t blk, struct r4_error *err);
int space_mark(struct space *s, uint64_t blk, int used,
	       struct r4_error *err);
/* Free blocks by the bitmaps (loads every region). */
int space_count_free(struct space *s, uint64_t *free_out,
		     struct r4_error *err);
/* Free blocks the allocator can hand out: those the bitmaps mark free
 * that no pin holds (loads every region). */
int space_count_usable(struct space *s, uint64_t *free_out,
		       struct r4_error *err);
/* First block >= from marked free (loading regions as needed); R4_ENOSPC
 * when there is none up to the end of the volume. */
int space_find_free(struct space *s, uint64_t from, uint64_t *out,
		    struct r4_error *err);
/* First block >= from that space_test calls used (marked in the
 * bitmaps, or pinned), loading regions as needed up to it; block_count
 * in *out when there is none. 0 or a negative error (a region that
 * cannot be loaded). */
int space_next_used(struct space *s, uint64_t from, uint64_t *out,
		    struct r4_error *err);
/* Forget every loaded region (the bitmaps changed on disk: replay). */
void space_unload(struct space *s);

#endif
