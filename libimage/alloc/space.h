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
};

int space_init(struct space *s, struct io_dev *dev, uint32_t blksize,
	       uint64_t block_count, struct r4_error *err);
void space_fini(struct space *s);

/* Load region k's bitmap block from disk (no-op when loaded). A wrong
 * checksum is remembered in bad_csum[k], not an error: the bits are still
 * the best knowledge there is, and fsck reports it. */
int space_load(struct space *s, uint64_t k, struct r4_error *err);

/* Whether block blk is marked used: 1, 0, or a negative error. */
int space_test(struct space *s, uint64_t blk, struct r4_error *err);
int space_mark(struct space *s, uint64_t blk, int used,
	       struct r4_error *err);
/* Free blocks by the bitmaps (loads every region). */
int space_count_free(struct space *s, uint64_t *free_out,
		     struct r4_error *err);
/* First block >= from marked free (loading regions as needed); R4_ENOSPC
 * when there is none up to the end of the volume. */
int space_find_free(struct space *s, uint64_t from, uint64_t *out,
		    struct r4_error *err);
/* Forget every loaded region (the bitmaps changed on disk: replay). */
void space_unload(struct space *s);

#endif
