/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: an open volume: the device, the block cache, the decoded super
 * blocks and the space map. */
#ifndef R4_LIBIMAGE_VOLUME_H
#define R4_LIBIMAGE_VOLUME_H

#include "r4/r4.h"
#include "r4/util.h"
#include "libimage/io/dev.h"
#include "libimage/io/cache.h"
#include "libimage/alloc/space.h"
#include "format/super.h"
#include "format/journal.h"
#include "format/key.h"

struct txn;

/* What the last commit on a volume wrote (measurements, tests). */
struct txn_stats {
	uint64_t relocated;	/* relocate set blocks (txn_new, data) */
	uint64_t overwritten;	/* overwrite set blocks (wandered + home) */
	uint64_t log_blocks;	/* tx head + wander records */
	uint64_t writes, bytes, syncs;	/* device calls of the commit */
};

/* The path of the last descent that reached a leaf on a read-only
 * volume (libimage/tree/tree.c): a later key between the same
 * delimiting keys takes the same path, so the cursor loads those blocks
 * without searching the nodes above the leaf. */
struct tree_hint {
	int valid;
	unsigned height;
	uint64_t root;
	uint64_t blk[FMT_TREE_HEIGHT_MAX + 1];
	int pos[FMT_TREE_HEIGHT_MAX + 1];
	struct fmt_key lo, hi;	/* the keys [lo, hi) that lead there */
	int has_hi;		/* else no upper bound */
	uint64_t hits;		/* descents it served (tests count them) */
};

struct r4_vol {
	struct io_dev *dev;
	struct io_cache cache;
	struct space space;
	uint32_t blksize;
	unsigned flags;
	struct fmt_master master;
	struct fmt_format40 sb;
	/* The format40 super block as it is on disk (after any replay or
	 * overlay), before the journal footer's counters are laid over sb:
	 * the checker compares its counters too (doc/format.md §10.9). */
	struct fmt_format40 sb_own;
	struct fmt_status status;
	int status_present;	/* the status magic is there */
	int status_garbage;	/* no magic, yet not the zeros of a volume
				 * made without a status block */
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	enum fmt_key_policy keypol;
	int sb_dirty;
	struct txn *txn;	/* the open transaction, or NULL */
	int failed;		/* sticky: a commit failed; reopen */
	int commit_pending;	/* a failed commit got past its commit point:
				 * replay (the next writable open) ends it */
	unsigned replayed;	/* transactions replayed at open */
	unsigned overlaid;	/* read-only: transactions seen via overlay */
	char journal_msg[R4_ERRMSG_MAX];	/* why the overlay failed */
	struct txn_stats last_commit;
	/* Read-only opens: what each directory inherits from its
	 * ancestors' plugin sets, by oid (kept by libimage/obj/obj.c; the
	 * tree cannot change under a read-only handle). */
	struct r4_u64map dir_inherit;
	/* Set by a tree writer that defers node writes (libimage/tree,
	 * tree_mod_lazy): tree_node_get calls it first, so a deferred node
	 * is in its block before anyone reads the block. */
	int (*node_sync)(void *ctx, uint64_t blk, struct r4_error *err);
	void *node_sync_ctx;
	/* The time stamp of changes (r4_vol_set_clock); < 0: the clock. */
	int64_t clock;
	struct tree_hint hint;	/* read-only volumes only */
};

/* Open the device, read and check the master and format40 super blocks,
 * the status block and the journal control blocks, and set up the block
 * cache and the space map. The journal's transactions are not looked
 * at: r4_vol_open (libimage/open/open.c) replays or overlays them.
 * vol->flags: opts->flags with opts->wait. */
int vol_open(const char *path, const struct r4_open_opts *opts,
	     struct r4_vol **out, struct r4_error *err);
/* Free what vol_open set up (the caller has ended any transaction).
 * Accepts NULL. */
/* Free the volume; returns how many cache blocks were still referenced
 * (a leak: r4_vol_close reports it). */
size_t vol_free(struct r4_vol *vol);

/* Read a whole block into buf through the cache-less path (super blocks,
 * journal). Names the block and what it is on failure. */
int vol_read_block(struct r4_vol *vol, uint64_t blk, uint8_t *buf,
		   const char *what, struct r4_error *err);

#endif
