/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: repack internals.
 *
 * model.c  the tree as a list of elements (nodes and extent units) in
 *          target order, each with its place in the target layout
 * frag.c   measurefs.reiser4's fragmentation figures
 * move.c   one batch: moves into place and out of the way, one
 *          transaction
 * repack.c the run: plan, free space, batches, time limit */
#ifndef R4_LIBIMAGE_REPACK_REPACK_INT_H
#define R4_LIBIMAGE_REPACK_REPACK_INT_H

#include <stddef.h>
#include <stdint.h>
#include "r4/repack.h"

struct r4_vol;

/* A node (level >= 1) or an extent unit (level 0, width >= 1). */
struct rp_el {
	uint64_t cur;		/* where it is */
	uint64_t tgt;		/* where it belongs */
	uint64_t w;		/* blocks */
	int64_t parent;		/* element pointing at it; -1: the root */
	uint32_t off;		/* byte offset of the pointer / unit start
				 * in the parent node */
	uint8_t level;
};

struct rp_model {
	struct r4_vol *vol;
	struct rp_el *el;
	size_t n, cap;
	unsigned height;
	uint64_t base;		/* first target block */
	uint64_t end;		/* one past the last target block */
	uint64_t blocks;	/* sum of widths */
	uint64_t *cand;		/* blocks never used as targets */
	size_t ncand;
	size_t *bypos;		/* element indexes sorted by cur */
};

/* Walk the tree into m (elements in target order, targets set). */
int rp_model_build(struct r4_vol *vol, struct rp_model *m,
		   struct r4_error *err);
void rp_model_fini(struct rp_model *m);
/* A block no element may be placed on (bitmap and backup positions). */
int rp_fixed(const struct rp_model *m, uint64_t blk);
/* The element that was at blk when the model was built (check its cur:
 * it may have moved since); -1 none. */
int64_t rp_owner(const struct rp_model *m, uint64_t blk);
/* Index of the first element not at its place; m->n when none. */
size_t rp_frontier(const struct rp_model *m);
void rp_plan(const struct rp_model *m, uint64_t batch,
	     struct r4_repack_plan *p);

struct rp_batch_stats {
	uint64_t moved, evicted;
};

/* One batch of at most 'batch' blocks moved (one element more when the
 * first is wider), committed. */
int rp_batch(struct rp_model *m, uint64_t batch, struct rp_batch_stats *st,
	     struct r4_error *err);

#endif
