/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: transaction internals shared by txn.c, commit.c and replay.c. */
#ifndef R4_LIBIMAGE_TXN_TXN_INT_H
#define R4_LIBIMAGE_TXN_TXN_INT_H

#include <stddef.h>
#include <stdint.h>
#include "libimage/txn/txn.h"
#include "r4/util.h"

/* What a transaction did to a block. */
enum tb_state {
	TB_DEAD = 0,	/* allocated and freed again: nothing */
	TB_ALLOC,	/* allocated, nothing written yet */
	TB_NEW,		/* allocated, buffer from txn_new (relocate set) */
	TB_DATA,	/* allocated, written by txn_write_data */
	TB_CAPTURED,	/* changed in place (overwrite set) */
	TB_FREED	/* freed at commit */
};

struct tb {
	uint64_t nr;		/* the block (the map's key too) */
	struct io_block *b;	/* the transaction's pin (NEW, CAPTURED) */
	uint32_t gen;		/* write-behind: its last txn_new */
	unsigned state : 4;
	/* its latest bytes are in the scratch file (txn_spill), not in
	 * a buffer: set only where the spill writes it, cleared by
	 * anything that gives the block other bytes */
	unsigned spilled : 1;
	/* the scope it was allocated in (txn_alloc_in; 0: none): the
	 * entry stays 24 bytes */
	unsigned scope : TXN_SCOPE_BITS;
};

/* Write-behind (txn_write_behind): the blocks txn_new gave out, oldest
 * first, each with the generation it got then; the oldest WB_BATCH go
 * at once with the blocks next to them that are ready too (WB_GATHER
 * in all at most), neighbouring blocks in one write. */
#define WB_BATCH 32
#define WB_GATHER 256
struct wb_ent {
	uint64_t nr;
	uint32_t gen;
};

/* Block number -> what the transaction did to it, in two parts. The
 * hash (an r4_u64map of struct tb) holds the blocks that need more than
 * a state and a scope: a buffer (the transaction's pin), a CAPTURED
 * state (always pinned), or a write-behind generation the ring may
 * still name. Every other block the transaction touched (the old
 * tree's nodes it freed, the new ones it spilled or wrote: millions in
 * a tree rebuild) is a nibble, state | TBC_SPILLED, in chunks of
 * TB_CHUNK blocks made when first used (half a byte a volume block at
 * most), and its scope, when it has one, 4 bytes in groups of TB_SGROUP
 * blocks made when first needed (a tree writer's new nodes: side by
 * side). A block is in one part only; 0 in the chunks and absent from
 * the hash: TB_DEAD (the state of a block never touched). */
#define TB_CHUNK_SHIFT 16
#define TB_CHUNK ((uint64_t)1 << TB_CHUNK_SHIFT)
#define TB_SGROUP_SHIFT 12
#define TB_SGROUP ((uint64_t)1 << TB_SGROUP_SHIFT)
#define TBC_SPILLED 8u
struct tbmap {
	struct r4_u64map m;
	uint8_t **chunk;	/* TB_CHUNK / 2 bytes each, or NULL */
	uint32_t *used;		/* per chunk: blocks not TB_DEAD */
	size_t nchunk;
	uint32_t **scope;	/* TB_SGROUP scopes each, or NULL */
	size_t nscope;
	uint64_t count[8];	/* blocks in the chunks, by state */
};
/* Walking the hash: for (struct tb *e = tb_next(m, &i); e;
 * e = tb_next(m, &i)) with size_t i = 0 first. */
struct tb *tb_next(const struct tbmap *m, size_t *i);

/* The chunks' next block at or after *nr in one of the states (bit
 * mask of 1 << state): 1, *out that block (b NULL, gen 0) and
 * *nr the block after it; 0 at the end. */
int tbc_next(const struct tbmap *m, uint64_t *nr, unsigned states,
	     struct tb *out);

/* Both parts in block order: tb_iter_next fills *out (a copy: b and
 * gen as the hash has them, NULL and 0 for a chunk's block) with
 * the next block in one of the states; 0 at the end. */
struct tb_iter {
	const struct tbmap *m;
	struct tb **h;
	size_t nh, ih;
	uint64_t nr;
	unsigned states;
	int have;
	struct tb c;
};
int tb_iter_start(struct tb_iter *it, const struct tbmap *m,
		  unsigned states);
int tb_iter_next(struct tb_iter *it, struct tb *out);
void tb_iter_fini(struct tb_iter *it);

/* Blocks in the state, in both parts. */
uint64_t tb_count(const struct tbmap *m, unsigned state);
/* What the map says of nr (a copy; TB_DEAD when it says nothing). */
struct tb tb_peek(const struct tbmap *m, uint64_t nr);
/* Entry e of the hash leaves it for the chunks when nothing but its
 * state and scope is left: no buffer, not CAPTURED, and its generation
 * 0 or older than live_gen (the oldest the write-behind ring holds).
 * e is not to be used after: it may be gone. */
void tb_settle(struct tbmap *m, struct tb *e, uint32_t live_gen);

struct txn {
	struct r4_vol *vol;
	struct tbmap map;
	uint64_t root;
	uint16_t height;
	int64_t files_delta;
	uint64_t next_oid;
	uint64_t nalloc, nfreed;	/* live TB_ALLOC/NEW/DATA, TB_FREED */
	uint64_t alloc_cursor;
	uint32_t scopes;	/* scopes given out (txn_scope_begin) */
	/* Repair (txn_rewrite_bitmap, txn_set_counters). */
	uint64_t *force_regions;
	size_t nforce, capforce;
	int set_counters;
	uint64_t free_base, files_base;
	uint64_t new_count;	/* txn_set_block_count; 0: unchanged */
	/* Write-behind: a ring of wb_keep entries; wb_n in use from
	 * wb_head on. */
	struct wb_ent *wb;
	struct tb **wb_pick;	/* WB_GATHER: the blocks one flush writes */
	uint8_t *wb_buf;	/* WB_GATHER blocks: a run of them */
	size_t wb_keep, wb_head, wb_n;
	uint32_t wb_gen;
	uint64_t wb_written;
	/* txn_spill: the ring writes to sp_dev (made at its first write),
	 * block nr at byte nr * blksize; a TB_NEW block marked spilled
	 * and without a buffer is there (spill.c) */
	int wb_spill;
	struct io_dev *sp_dev;
	uint64_t sp_blocks;
};

/* spill.c: the scratch file made and hooked under the volume's cache. */
int txn_sp_open(struct txn *t, struct r4_error *err);
/* Blocks nr..nr+n-1, all spilled, into buf. */
int txn_sp_read(struct txn *t, uint64_t nr, size_t n, uint8_t *buf,
		struct r4_error *err);
/* The file closed and unhooked; revert: the cache forgets the blocks
 * it read from it (their bytes are not the volume's). */
void txn_sp_release(struct txn *t, int revert);

/* The hash's entry of nr (a block with a buffer among them), or NULL. */
struct tb *tb_find(struct tbmap *m, uint64_t nr);
/* The entry of nr in the hash, moved there from the chunks or created
 * (state TB_DEAD) when missing; NULL: no memory. Give it back with
 * tb_settle (txn_settle) once changed. It may move every other entry
 * of the hash (a rehash): hold no struct tb * across it. */
struct tb *tb_get(struct tbmap *m, uint64_t nr);
void tb_init(struct tbmap *m);
void tb_fini(struct tbmap *m);
/* The hash's entries in one of the states (bit mask of 1 << state),
 * sorted by block; *out is malloc'ed (NULL when n = 0). */
int tb_list(const struct tbmap *m, unsigned states, struct tb ***out,
	    size_t *n);

/* Undo every in-memory effect and free t (abort, failed commit). */
void txn_release(struct txn *t, int revert);
/* tb_settle with the ring's oldest generation. */
void txn_settle(struct txn *t, struct tb *e);

#endif
