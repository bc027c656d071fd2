/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: forensic reading of a volume: what a block is, and objects that
 * are no longer reachable but whose stat data and body survive in free
 * blocks (old copies of relocated nodes, freed extents).
 *
 * Nothing here writes to the volume. Conventions are those of r4/r4.h;
 * every byte taken from a free block is checked (free blocks hold
 * anything at all). */
#ifndef R4_FORENSIC_H
#define R4_FORENSIC_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/read.h"

/* What a block is, by the super block layout, the journal and the
 * bitmap. */
enum r4_block_class {
	R4_BC_FIXED = 0,	/* reserved area, super blocks, bitmap blocks */
	R4_BC_JOURNAL = 1,	/* a logged copy of a pending transaction */
	R4_BC_FREE = 2,		/* marked free in the bitmap */
	R4_BC_USED = 3,		/* marked used (see r4_block_owner) */
	R4_BC_BACKUP = 4	/* a backup copy of the super block
				 * (doc/format.md §1.7) */
};
int r4_block_class(struct r4_vol *vol, uint64_t blk, int *cls,
		   struct r4_error *err);
const char *r4_block_class_name(int cls);

/* An object found in free blocks whose stat data is no longer in the
 * tree. 'st' is decoded from the newest surviving copy of its stat data
 * (st.sd_block: where). 'name' is a former name found in an old
 * directory node (name_len 0 when none survived), 'parent' the
 * directory that held it. 'found' = bytes of [0, size) covered by
 * surviving body items; 'recoverable' = those whose bytes still lie in
 * free blocks (an extent block used again since is not counted). */
struct r4_deleted {
	struct r4_stat st;
	char name[256];
	size_t name_len;
	uint64_t parent;
	uint64_t found;
	uint64_t recoverable;
	/* An orphan: its stat data is still in the live tree, but no
	 * directory entry names it (an unlinked file still open when the
	 * volume was last written, or a lost name); its body is read
	 * through the tree. safe_link: the kernel's safe link for it
	 * (R4_SAFELINK_*), or -1 when the tree holds none. */
	int orphan;
	int safe_link;
};
enum { R4_SAFELINK_UNLINK = 0, R4_SAFELINK_TRUNCATE = 1 };
typedef int (*r4_deleted_fn)(void *ctx, const struct r4_deleted *d);
/* Scan every free block of the volume, and the journal's copies of a
 * pending transaction, for formatted nodes of this
 * volume (its mkfs id) and report the deleted objects, by object id;
 * then walk the tree and report the orphans (orphan = 1). */
int r4_lsdel(struct r4_vol *vol, r4_deleted_fn fn, void *ctx,
	     struct r4_error *err);
/* The same, and what was read: free blocks, and blocks of a pending
 * transaction replayed in memory (its wandered copies and the home
 * copies they overwrite, both scanned as old nodes). */
struct r4_lsdel_stats {
	uint64_t free_blocks;
	uint64_t journal_blocks;
};
int r4_lsdel_ex(struct r4_vol *vol, r4_deleted_fn fn, void *ctx,
		struct r4_lsdel_stats *st, struct r4_error *err);

/* What survives of deleted object oid: data(ctx, off, buf, len) for
 * every surviving piece (newest copies last, so a later call for the
 * same range wins), then missing(ctx, off, len) for every range of
 * [0, size) nothing covers. *out (may be NULL) gets what r4_lsdel would
 * say. An orphan's body is read through the tree. R4_ENOTFOUND if no
 * stat data of oid survives in a free block, R4_EEXIST if oid is still
 * in the tree under a name. */
typedef int (*r4_undel_data_fn)(void *ctx, uint64_t off, const void *buf,
				size_t len);
typedef int (*r4_undel_gap_fn)(void *ctx, uint64_t off, uint64_t len);
int r4_undel(struct r4_vol *vol, uint64_t oid, struct r4_deleted *out,
	     r4_undel_data_fn data, r4_undel_gap_fn missing, void *ctx,
	     struct r4_error *err);

/* Every deleted object of the volume in one scan of its free space (and
 * the orphans of its tree): plan (may be NULL) is called for each first,
 * then for each begin (0: recover it, 1: pass over it, < 0: stop), its
 * surviving bytes to data and the ranges nothing covers to missing (for
 * regular files, as r4_undel), then end with the status of that
 * object's reading (end returns 0 to go on, < 0 to stop, and may clear
 * err). */
struct r4_undel_all_fns {
	int (*plan)(void *ctx, const struct r4_deleted *d);
	int (*begin)(void *ctx, const struct r4_deleted *d);
	r4_undel_data_fn data;
	r4_undel_gap_fn missing;
	int (*end)(void *ctx, const struct r4_deleted *d, int rc);
	void *ctx;
};
int r4_undel_all(struct r4_vol *vol, const struct r4_undel_all_fns *f,
		 struct r4_error *err);

/* The scanner on one block's bytes (for the fuzzer): decode the node in
 * buf as a candidate old node of a volume with this mkfs id and key
 * policy; returns the number of stat data, entry and body items taken,
 * or a negative code. */
int r4_lsdel_scan_node(const uint8_t *buf, size_t blksize, uint32_t mkfs_id,
		       int large_keys, struct r4_error *err);

#endif
