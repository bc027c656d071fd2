/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the offline repacker (r4repacker) and the fragmentation
 * figures of measurefs.reiser4.
 *
 * The target layout is the one r4pack create builds: the nodes above the
 * leaves first (the root, then each level down, each level in key
 * order), then the leaves and the extent blocks in key order, so each
 * file's data is contiguous and every node sits next to what it
 * describes; the free space is left after them. Only block numbers
 * change: every node keeps its bytes, every extent unit its width.
 *
 * The work is done in batches, each one transaction: the blocks moved
 * go to blocks that were free (the relocate set), the parents that point
 * at them and the bitmaps are changed in place through the journal (the
 * overwrite set). What to do next is computed from the volume alone, so
 * an interrupted run (time limit, crash) is resumed by running again. */
#ifndef R4_REPACK_H
#define R4_REPACK_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"

/* measurefs.reiser4's figures: -T (tree), -D (data, the mean over every
 * object of its own figure) and -F (one object). */
struct r4_frag {
	double tree;			/* -T: bad / total */
	uint64_t tree_bad, tree_total;
	double data;			/* -D */
	uint64_t objects;
};

/* One object's figure (-F). */
struct r4_frag_obj {
	uint64_t oid;
	double ratio;
	uint64_t bad, total;
	char path[256];			/* "" when not looked up */
};

#define R4_REPACK_WORST 10

/* The volume's figures; worst (may be NULL) receives up to nworst
 * objects with the highest figures (highest first, then by oid), with
 * their paths; *nfound how many. */
int r4_frag_measure(struct r4_vol *vol, struct r4_frag *out,
		    struct r4_frag_obj *worst, size_t nworst, size_t *nfound,
		    struct r4_error *err);
/* -F PATH: the figure of the object at path. */
int r4_frag_file(struct r4_vol *vol, const char *path,
		 struct r4_frag_obj *out, struct r4_error *err);

typedef void (*r4_repack_progress_fn)(void *ctx, uint64_t done,
				      uint64_t total);

struct r4_repack_opts {
	uint64_t batch;			/* blocks moved per transaction */
	double time_limit;		/* seconds; < 0 = none (0: one batch) */
	double min_gain;		/* skip when misplaced/total < this */
	int dry_run;			/* plan only (read-only volume) */
	r4_repack_progress_fn progress;
	void *progress_ctx;
};

void r4_repack_opts_init(struct r4_repack_opts *o);

/* What the volume needs (the plan) and what a run did. */
struct r4_repack_plan {
	uint64_t tree_blocks;		/* nodes + extent blocks */
	uint64_t elements;		/* nodes + extent units */
	uint64_t misplaced_blocks;	/* not at their place: to move */
	uint64_t misplaced_elements;
	uint64_t free_blocks;
	uint64_t free_needed;		/* one batch plus its log, at most */
	double gain;			/* misplaced_blocks / tree_blocks */
	uint64_t batch_asked;		/* the batch size asked for */
	uint64_t batch;			/* the one the run uses: batch_asked,
					 * or less when the free space cannot
					 * hold a batch that size and its log
					 * (never below 64 blocks unless
					 * asked) */
	int too_little;			/* even that batch does not fit: a
					 * run is refused (free_needed says
					 * how much it needs) */
};

enum r4_repack_outcome {
	R4_REPACK_DONE = 0,		/* packed now */
	R4_REPACK_NOTHING = 1,		/* was packed: nothing written */
	R4_REPACK_NOT_WORTH = 2,	/* below --min-gain: nothing written */
	R4_REPACK_TIME_LIMIT = 3	/* stopped at a batch boundary */
};

struct r4_repack_result {
	enum r4_repack_outcome outcome;
	struct r4_repack_plan plan;	/* before the run */
	uint64_t moved;			/* blocks written to new places */
	uint64_t evicted;		/* of those, moves out of the way */
	uint64_t batches;		/* transactions committed */
	double seconds;
};

/* The plan only (any open). */
int r4_repack_plan(struct r4_vol *vol, uint64_t batch,
		   struct r4_repack_plan *out, struct r4_error *err);

/* Repack a volume opened read-write, in batches of plan.batch blocks.
 * Fails up front (nothing written) with R4_ENOSPC when plan.too_little
 * (the free space is less than plan.free_needed). On
 * a failure after some batches the volume is as after the last
 * committed one. */
int r4_repack(struct r4_vol *vol, const struct r4_repack_opts *o,
	      struct r4_repack_result *res, struct r4_error *err);

#endif
