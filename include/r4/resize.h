/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: growing and shrinking a volume offline (r4resize), by the
 * rules of doc/format.md §1.9.
 *
 * Grow: an image file is extended sparsely first (a block device must
 * already hold the new size); the new bitmap and backup blocks past the
 * old end are written and synced; then one transaction changes the
 * bitmap blocks and backup copies inside the old volume, the block
 * count and the free count. A cut at any write leaves the old or the
 * new size.
 *
 * Shrink: the used blocks past the new end are moved below it first by
 * the repacker (r4_repack: crash-safe batches, each one transaction; a
 * cut run is resumed by running again), then one transaction changes
 * the size, then an image file is truncated (a device is left as it
 * is). */
#ifndef R4_RESIZE_H
#define R4_RESIZE_H

#include <stdint.h>
#include "r4/r4.h"

typedef void (*r4_resize_progress_fn)(void *ctx, const char *stage,
				      uint64_t done, uint64_t total);

struct r4_resize_opts {
	int dry_run;			/* plan only; any open */
	uint64_t batch;			/* shrink: blocks moved a batch */
	r4_resize_progress_fn progress;
	void *progress_ctx;
};

void r4_resize_opts_init(struct r4_resize_opts *o);

struct r4_resize_result {
	uint32_t blksize;
	uint64_t old_blocks, new_blocks;
	uint64_t min_blocks;		/* the smallest size it can shrink to */
	uint64_t max_blocks;		/* the largest the format addresses */
	uint64_t device_blocks;		/* what the device or file holds now */
	uint64_t free_before, free_after;
	uint64_t bitmaps_before, bitmaps_after;
	uint64_t backups_before, backups_after;
	uint64_t to_move;		/* shrink: used blocks past the new end */
	uint64_t moved, batches;	/* shrink: what the repacker did */
	int changed;			/* 0: the size was already that */
};

/* The largest block count the format can address with this block size
 * (block_count * blksize below 2^63). */
uint64_t r4_resize_max_blocks(uint32_t blksize);

/* The smallest block count the volume can be shrunk to: its used blocks
 * (the fixed ones excepted) fit below it with room for the journal of
 * the resize and what the kernel wants free at mount. */
int r4_resize_min(struct r4_vol *vol, uint64_t *min_blocks,
		  struct r4_error *err);

/* Resize a volume opened read-write (read-only with o->dry_run) to
 * new_blocks blocks. Refused, nothing changed: below r4_resize_min
 * (R4_ERANGE, the minimum in the message), above the format's largest
 * size or a block device's length (R4_ERANGE), a damaged super block
 * or backup (R4_ECORRUPT). res (may be NULL) says what was (or with
 * dry_run would be) done. */
int r4_resize(struct r4_vol *vol, uint64_t new_blocks,
	      const struct r4_resize_opts *o, struct r4_resize_result *res,
	      struct r4_error *err);

#endif
