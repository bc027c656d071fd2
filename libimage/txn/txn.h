/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: transactions over a volume: the journal40 wandering log.
 *
 * Every change to an existing volume goes through a transaction. The
 * tree is copy-on-write: a changed node is written to a fresh block (the
 * relocate set, written once, before commit), its parent is changed the
 * same way, up to the root; the blocks that must stay put (the format40
 * super block, bitmap blocks, and any block the caller captures in place)
 * form the overwrite set and go through the journal:
 *
 *   1. relocate set written to its new blocks (txn_alloc + txn_new /
 *      txn_write_data);
 *   2. wandered copies of the overwrite set, wander records and the tx
 *      head written to free blocks that are neither allocated nor freed
 *      by this transaction; fsync;
 *   3. commit point: the journal header names the tx head; fsync;
 *   4. the overwrite set written home: the format40 super block first,
 *      fsync, then the rest; fsync (the kernel's own replay keeps the
 *      root pointer only once the super block is home: doc/kernel.md);
 *   5. the journal footer names the tx head, with the counters
 *      (free blocks, file count, next oid); fsync.
 *
 * A crash before 3 leaves the old volume (nothing it references was
 * touched: relocated blocks were free, freed blocks are not reused in the
 * same transaction); after 3, replay (txn_replay, run on every writable
 * open and by r4fsck) finishes 4 and 5. Blocks freed by a transaction
 * become free in the bitmap it commits and are never reused before. */
#ifndef R4_LIBIMAGE_TXN_TXN_H
#define R4_LIBIMAGE_TXN_TXN_H

#include <stdint.h>
#include "libimage/vol/volume.h"
#include "libimage/io/cache.h"

struct txn;

/* Start a transaction on a volume opened read-write (one at a time). */
int txn_begin(struct r4_vol *vol, struct txn **out, struct r4_error *err);

/* A block to change in place (overwrite set): pinned, its bytes are the
 * current ones, writes go through the journal at commit. Put with
 * txn_put. Capturing the same block twice returns the same buffer. */
int txn_capture(struct txn *t, uint64_t blk, struct io_block **out,
		struct r4_error *err);
/* Allocate a free block near 'hint' (relocate set): marked used in the
 * transaction's bitmap; never a block freed in this transaction. */
int txn_alloc(struct txn *t, uint64_t hint, uint64_t *blk,
	      struct r4_error *err);
/* Allocate a run of up to 'want' contiguous blocks near hint; *got is
 * how many (at least 1). */
int txn_alloc_run(struct txn *t, uint64_t hint, uint64_t want,
		  uint64_t *start, uint64_t *got, struct r4_error *err);
/* A zeroed buffer for a block allocated by this transaction (a new or
 * relocated node); written before commit. */
int txn_new(struct txn *t, uint64_t blk, struct io_block **out,
	    struct r4_error *err);
/* The same with the buffer's bytes undefined (not zeroed): for a caller
 * that writes every byte of the block (a node written whole) before its
 * txn_put: once its pin is dropped, write-behind or the commit may write
 * the block as it is. On an error the caller gets no buffer and the
 * block, still new, holds zeros. */
int txn_new_raw(struct txn *t, uint64_t blk, struct io_block **out,
		struct r4_error *err);
/* Write-behind, for a transaction that makes many nodes: once more than
 * 'keep' blocks have had txn_new buffers, the one whose last txn_new is
 * the oldest is written now (a relocated block: free in the committed
 * state, as step 1 allows) and its buffer goes back to the cache, as if
 * txn_write_data had written it, and with it the blocks beside it that
 * have txn_new buffers nobody else holds (neighbours go in one write);
 * a later txn_new or txn_capture of any of them works as for such a
 * block. Memory then stays bounded by 'keep' blocks of nodes. A block
 * still pinned by anyone else is left in memory.
 * keep = 0 turns it off (the default). */
int txn_write_behind(struct txn *t, size_t keep, struct r4_error *err);
/* Spill, for a transaction that makes many nodes on a volume whose free
 * blocks must stay as they are until its commit point (a rebuild that
 * may still fail): txn_write_behind's ring of 'keep' blocks, but the
 * blocks it lets go are written to a scratch file, not to the volume: a
 * new file in $TMPDIR (else /tmp), unlinked at once, made at the first
 * such write, block nr at byte nr * block size. Their buffers go back to
 * the cache; reads of them (io_cache_get, io_cache_read, txn_capture)
 * get the file's bytes, and the commit reads them back to write them
 * where and when it writes any new block (the same writes, in the same
 * order, as with the blocks in memory). Only txn_new blocks spill; an
 * error of the file (none made, a full disk) fails the call that wrote
 * it, naming the folder, the volume untouched. keep = 0 turns it off;
 * it replaces a write-behind (and txn_write_behind a spill). */
int txn_spill(struct txn *t, size_t keep, struct r4_error *err);
/* Writes of blocks to t's scratch file so far (txn_spill; a block
 * written there again counts again). */
uint64_t txn_spilled(const struct txn *t);
/* Write data straight to blocks allocated by this transaction (file
 * data: not kept in memory): each run of them in one write; a block
 * that has a txn_new buffer gets the bytes in its buffer instead. */
int txn_write_data(struct txn *t, uint64_t blk, const void *buf,
		   size_t nblocks, struct r4_error *err);
void txn_put(struct txn *t, struct io_block *b);
/* 1 when blk was allocated by this transaction and not freed again:
 * the committed state does not use it, so t may write it in place
 * (txn_write_data) instead of moving its contents to a new block. */
int txn_owns(const struct txn *t, uint64_t blk);
/* Scopes: one record of which writer allocated a block. A writer that
 * needs to tell its own blocks from the rest of the transaction's (the
 * tree writer: a node it made is rewritten in place, one made before,
 * even by this transaction, moves again) takes a scope, allocates in it
 * and asks about it. txn_scope_begin gives a fresh scope; 0 once
 * TXN_SCOPE_MAX scopes were given out in one transaction: scope 0 owns
 * nothing (its writer relocates every block: safe, only less compact). */
#define TXN_SCOPE_BITS 24
#define TXN_SCOPE_MAX ((1u << TXN_SCOPE_BITS) - 1)
uint32_t txn_scope_begin(struct txn *t);
/* txn_alloc, the block recorded as allocated in scope. */
int txn_alloc_in(struct txn *t, uint32_t scope, uint64_t hint,
		 uint64_t *blk, struct r4_error *err);
/* 1 when txn_owns(t, blk) and blk was allocated in scope (not 0). */
int txn_owns_in(const struct txn *t, uint64_t blk, uint32_t scope);
/* How many blocks txn_owns_in(t, ., scope) holds for (a walk). */
uint64_t txn_scope_blocks(const struct txn *t, uint32_t scope);
/* Free a block at commit (old location of a relocated node, data of a
 * removed file). Freeing a block allocated by this same transaction
 * frees it at once. */
int txn_free(struct txn *t, uint64_t blk, uint64_t count,
	     struct r4_error *err);

/* The counters the commit stores (super block, tx head, footer). The
 * caller adjusts them as objects come and go; free blocks are computed
 * by the transaction itself. */
void txn_set_root(struct txn *t, uint64_t root, uint16_t height);
void txn_add_files(struct txn *t, int64_t delta);
uint64_t txn_next_oid(struct txn *t);
/* Free blocks this transaction may still allocate (blocks it frees
 * become free only at commit). */
uint64_t txn_free_left(const struct txn *t);	/* allocate an object id */

/* ---- repair (libimage/repair) ----------------------------------------
 * The repair writes what the checker found to be true, still through the
 * journal. */
/* Region k's bitmap block is written at commit from the in-memory space
 * map (which the caller has set to the blocks in use), with a fresh
 * checksum, whether or not this transaction allocated there. */
int txn_rewrite_bitmap(struct txn *t, uint64_t k, struct r4_error *err);
/* The commit stores these counters instead of the old super block's:
 * free_blocks and file_count as they are before this transaction's own
 * allocations, frees and files; next_oid as it is. */
void txn_set_counters(struct txn *t, uint64_t free_blocks,
		      uint64_t file_count, uint64_t next_oid);
/* ---- resize (libimage/resize) ---------------------------------------
 * The commit stores this block count in the format40 super block
 * (doc/format.md §1.9). The caller has made every other block the new
 * size needs: the bitmaps inside the old volume through
 * txn_rewrite_bitmap, the blocks past the old end written and synced
 * before the commit, the counters through txn_set_counters. Every block
 * the journal names stays inside the old volume (the log is allocated
 * from the old space map), so replay works at either size. */
void txn_set_block_count(struct txn *t, uint64_t block_count);
/* Capture a block of the fixed layout in place (the status block or a
 * backup copy of the super blocks): as txn_capture, without the rules
 * for tree blocks. Never the super, bitmap or journal blocks. */
int txn_capture_fixed(struct txn *t, uint64_t blk, struct io_block **out,
		      struct r4_error *err);

/* Commit (steps above) and end the transaction; on failure the volume
 * is as it was before txn_begin and the handle is sticky-failed: later
 * calls on the volume fail until it is reopened. */
int txn_commit(struct txn *t, struct r4_error *err);
/* Drop everything the transaction did (nothing reached the volume's
 * committed state). Accepts NULL. */
void txn_abort(struct txn *t);
/* Blocks of t written in place so far (new data, nodes written behind):
 * free blocks before t, holding t's bytes. An abort frees them again,
 * so the volume's contents stay as before, but not their bytes. */
uint64_t txn_written_in_place(const struct txn *t);

/* Replay committed transactions not yet written home (doc/format.md §8.7),
 * oldest first, writing the footer after each; then reload the super
 * block and apply the footer counters. *replayed = how many. Needs a
 * read-write volume. */
int txn_replay(struct r4_vol *vol, unsigned *replayed,
	       struct r4_error *err);

/* For read-only opens of a volume with unreplayed transactions: map
 * each overwritten block to its wandered copy in memory, so readers see
 * the committed state without writing anything. */
int txn_overlay(struct r4_vol *vol, struct r4_error *err);

/* The overlay is a layer of the read-only device's chain, over the
 * file (libimage/txn/overlay.c): reads of block from[i] are served from
 * block to[i] (the arrays are copied; a later pair for the same block
 * wins; n = 0: no layer). txn_overlay_set replaces the layer there was,
 * txn_overlay_drop takes it away. */
int txn_overlay_set(struct r4_vol *vol, const uint64_t *from,
		    const uint64_t *to, size_t n, struct r4_error *err);
void txn_overlay_drop(struct r4_vol *vol);
/* The overlay's pairs (sorted by from, one a block): their number, 0
 * when the open has no overlay. */
size_t txn_overlay_pairs(const struct r4_vol *vol, const uint64_t **from,
			 const uint64_t **to);
/* Read len bytes at byte off as they lie on the device, under the
 * overlay (the home copy of a block a pending transaction overwrites):
 * 0, -errno or R4_ERANGE; the caller checks the bounds. */
int txn_read_under(struct r4_vol *vol, void *buf, size_t len, uint64_t off);

/* ---- raw restore (r4fsck --undo) -------------------------------------
 * Put blocks back to the bytes they held before, as one crash-safe step
 * through the wandering log, and leave every other block as it was:
 *
 *   1. the wandered copies of every block but the journal header and
 *      footer, the wander records and a tx head (whose counters are the
 *      restored volume's, as a mount sees them) go to scratch blocks;
 *      fsync;
 *   2. commit point: the journal header names that tx head; fsync;
 *   3. the blocks home, the format40 super block first; fsync;
 *   4. the footer names the tx head (nothing to replay); fsync;
 *   5. the tx head is rewritten to follow the restored footer's
 *      transaction; the restored footer, then the restored header are
 *      written (between the two, replay finds the tx head and writes
 *      the footer again, which ends in the state of 4); fsync each;
 *   6. the scratch blocks get their old bytes back; fsync.
 *
 * A cut before 2 leaves the volume as it was; after it, the volume is
 * restored once the journal is replayed (r4fsck -p, any writer's open);
 * after 5 it is restored but for free blocks that nothing reads. The
 * scratch blocks are free both now and in the restored bitmaps, and not
 * among the restored blocks; the caller saves their bytes before 1 (a
 * rerun after a cut gives the same blocks and bytes back). */
struct txn_restore {
	size_t n;		/* blocks to put back, ascending, distinct;
				 * the journal header and footer among them */
	const uint64_t *blk;
	/* the bytes block blk[i] is to hold */
	int (*old)(void *ctx, size_t i, uint8_t *buf, struct r4_error *err);
	void *ctx;
	uint64_t limit;		/* scratch blocks below this block */
};
/* The scratch blocks, ascending (malloc'ed). R4_EUNSUPP: the restore
 * cannot go through the journal (a block below the master super block or
 * past the volume, a restored volume with a transaction to replay or
 * another size); R4_ENOSPC: too few blocks free in both states. */
int txn_restore_plan(struct r4_vol *vol, const struct txn_restore *r,
		     uint64_t **scratch, size_t *nscratch,
		     struct r4_error *err);
/* Steps 1-6 with those scratch blocks; saved(ctx, i, buf) gives scratch
 * block i's old bytes. The volume's journal must have nothing to replay
 * (txn_replay first). The caches are dropped; on failure the handle is
 * sticky-failed. */
int txn_restore_run(struct r4_vol *vol, const struct txn_restore *r,
		    const uint64_t *scratch, size_t ns,
		    int (*saved)(void *ctx, size_t i, uint8_t *buf,
				 struct r4_error *err),
		    struct r4_error *err);

#endif
