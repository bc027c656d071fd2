/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: repack internals.
 *
 * model.c  walks of the tree: each element (node, extent unit) with its
 *          place in the target layout; the plan; the window of
 *          elements the next batches move
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
	int64_t parent;		/* element of the window pointing at it;
				 * -1: the root; -2: a node not in the
				 * window, at pblk */
	uint64_t pblk;		/* the parent's block when walked */
	uint32_t off;		/* byte offset of the pointer / unit start
				 * in the parent node */
	uint8_t level;
	uint8_t moved;		/* moved since the last rp_model_index */
};

/* The highest tree the walks take. */
#define RP_LEVELS_MAX 32

/* Batches' worth of target blocks a window holds, at least; and the
 * most windows a run needs (a window grows to a share of the tree). */
#define RP_WINDOW 16
#define RP_WINDOWS_MAX 64

/* What the walks found, and the window: the elements whose targets are
 * in [lo, hi) (el[0..ntgt), in target order) and those on a block of
 * [lo, hi + batch) (the rest). Memory: the window, not the tree (a
 * window spans at most 1/RP_WINDOWS_MAX of the tree's blocks beyond
 * RP_WINDOW batches). */
struct rp_model {
	struct r4_vol *vol;
	uint64_t batch;
	unsigned height;
	uint64_t count[RP_LEVELS_MAX + 1];	/* nodes of each level above
					 * the leaves */
	uint64_t base;		/* first target block */
	uint64_t end;		/* one past the last target block */
	uint64_t elements, blocks;	/* the whole tree */
	uint64_t misplaced_elements, misplaced_blocks;
	uint64_t frontier;	/* the first target not filled */
	uint64_t *cand;		/* blocks never used as targets */
	size_t ncand;
	struct rp_el *el;
	size_t n, cap, ntgt;
	uint64_t lo, hi;
	size_t *bypos;		/* element indexes sorted by cur */
	size_t *moved;		/* elements moved since then, once each */
	size_t nmoved, capmoved;
	int indexed;		/* bypos was sorted for these elements */
	int stale;		/* the tree changed shape: walk again */
	int counted;		/* count[] is the tree's, as walked */
};

/* Walk the tree: the plan and, when something is out of place, the
 * window from the first target not filled. */
int rp_model_open(struct r4_vol *vol, struct rp_model *m, uint64_t batch,
		  struct r4_error *err);
int rp_model_scan(struct rp_model *m, struct r4_error *err);
/* Before a batch: the window again from the volume when its targets are
 * (nearly) filled or the tree changed shape; 1 when nothing is left to
 * move, 0 when a batch can run. */
int rp_model_next(struct rp_model *m, struct r4_error *err);
/* bypos sorted by cur again: in full after a walk, else the moved
 * elements taken out and merged back in. */
void rp_model_index(struct rp_model *m);
/* Element i has a new cur (for rp_model_index). */
void rp_model_moved(struct rp_model *m, size_t i);
void rp_model_fini(struct rp_model *m);
/* A block no element may be placed on (bitmap and backup positions). */
int rp_fixed(const struct rp_model *m, uint64_t blk);
/* The first such block at or after blk. */
uint64_t rp_next_fixed(const struct rp_model *m, uint64_t blk);
/* The window's element that was at blk when last indexed (check its
 * cur: it may have moved since); -1 none. */
int64_t rp_owner(const struct rp_model *m, uint64_t blk);
/* The block of the node pointing at e (e not the root). */
uint64_t rp_parent_blk(const struct rp_model *m, const struct rp_el *e);
/* Index of the first window element not at its place; ntgt when none. */
size_t rp_frontier(const struct rp_model *m);
/* The plan for batches of at most 'batch' blocks: p->batch is cut to
 * what the free space holds (rp_fit), p->free_needed what one batch of
 * that size needs at most (rp_need). */
void rp_plan(const struct rp_model *m, uint64_t batch,
	     struct r4_repack_plan *p);
/* The smallest batch the free space must hold unless asked smaller. */
#define RP_BATCH_MIN 64
/* Free blocks a batch of 'batch' blocks needs at most: the moved
 * blocks (evictions included) and its log. */
uint64_t rp_need(uint64_t batch, uint64_t regions, uint32_t bs);
/* The largest batch <= 'batch' whose need fits free_blocks; 0 none. */
uint64_t rp_fit(uint64_t batch, uint64_t free_blocks, uint64_t regions,
		uint32_t bs);

struct rp_batch_stats {
	uint64_t moved, evicted;
};

/* One batch of at most 'batch' blocks moved (one element more when the
 * first is wider), committed. */
int rp_batch(struct rp_model *m, uint64_t batch, struct rp_batch_stats *st,
	     struct r4_error *err);

#endif
