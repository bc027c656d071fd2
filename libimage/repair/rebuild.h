/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild's state and the functions its files share:
 * rebuild_take.c gathers the items (the reachable nodes, then a scan of
 * the unreachable used blocks), rebuild_spill.c keeps those that are
 * not body items in sorted runs and gives them back in key order,
 * rebuild_keys.c mends their keys and places bodies that fit nowhere,
 * rebuild.c mends the boundaries between files, fills the breaks and
 * builds the new tree. */
#ifndef R4_LIBIMAGE_REPAIR_REBUILD_H
#define R4_LIBIMAGE_REPAIR_REBUILD_H

#include "libimage/repair/repair.h"
#include "format/key.h"

struct r4_txn;

/* One gathered item: 64 bytes, its body in the rebuild's arena. */
struct ritem {
	struct fmt_key key;
	uint8_t *body;
	uint64_t blk;			/* the node it came from, 0 none */
	uint32_t len;
	uint32_t seq;
	uint16_t pid;
	uint16_t idx;			/* its position there */
	uint8_t suspect;		/* out of place in its node */
	uint8_t orphan;			/* to a fresh object (lost+found) */
};

/* The items' bodies, packed in chunks freed all at once (a body an
 * item stops using is not given back: few are). */
struct rb_arena {
	uint8_t **chunk;
	size_t n, cap;
	size_t used;			/* bytes taken of the last chunk */
};

/* Items a node can hold (up to 64 KiB blocks, an item header at least
 * 30 bytes). */
#define NODE_ITEMS_MAX 2200

/* What the walk reads of an object the check's tables held (rb_objs):
 * the tables themselves are let go before it; one record of the
 * scratch file rebuild_objs.c keeps them in. */
struct rb_obj {
	uint64_t el0, el1, el2;		/* its stat-data key */
	uint64_t size;
	uint16_t mode;
	uint8_t ccreg;			/* CHK_OBJ_CCREG */
};

/* A gathered item that is not a body item, kept in sorted runs
 * (rebuild_spill.c): 64 bytes, its body in the bodies' store at boff. */
struct rb_srec {
	struct fmt_key key;
	uint64_t boff;
	uint64_t blk;
	uint32_t len;
	uint32_t seq;
	uint16_t pid;
	uint16_t idx;
	uint8_t suspect;
	uint8_t pad[3];
};

/* The spilled items: runs of records by (key, seq), their bodies in
 * memory up to the budget, then in a temporary file. */
struct rb_spill {
	struct chk_runs runs;
	size_t budget;
	int fd;				/* the bodies' file, -1 until needed */
	uint8_t *buf;			/* bodies from file offset base on */
	size_t used;
	uint64_t base;
	uint8_t *win;			/* a read window of the file */
	uint64_t woff;
	size_t wlen;
	uint32_t *pulled;		/* seq of the items pulled, sorted */
	size_t npulled, cappulled;
	uint64_t kept;			/* left spilled: not a second copy,
					 * not pulled */
	uint64_t next_oid;		/* one past their highest object id */
	uint64_t bytes;			/* their bodies and item headers */
	/* the read position's last key: second copies are skipped */
	struct fmt_key last;
	int any;
	uint64_t seen_dup;
};

struct rb {
	struct rep *R;
	struct chk v;			/* item verifier: quiet check state */
	struct r4_check_report vrep;
	struct chk_map seen;		/* nodes looked at */
	struct ritem *it;
	size_t n, cap;
	struct rb_arena bodies;
	uint8_t *buf;
	uint64_t nodes_kept, nodes_dropped, nodes_salvaged, items_dropped;
	uint64_t mended;
	uint64_t bytes_moved;		/* body bytes put at another key */
	uint64_t offsets_mended;	/* item body offsets set back */
	uint64_t pids_mended;		/* item plugin ids set back */
	uint64_t bytes_dropped;		/* body bytes of items dropped */
	uint64_t scanned;
	uint64_t freed;			/* old nodes freed by the rebuild */
	/* Stat-data keys the key pass gives an orphan stat data (keys.c):
	 * body items under them are that stat data's, left as they are. */
	struct fmt_key *named;
	size_t nnamed;
	/* The check's objects in its table order: in the scratch file
	 * objs_fd (-1 none), else in objs; objs_err: a read of the file
	 * failed (the rebuild fails after its walk). */
	struct rb_obj *objs;
	size_t nobjs;
	int objs_fd;
	int objs_err;
	/* With the file: the records the search's first objs_levels steps
	 * visit (the same for every look-up), by heap index (node i at
	 * objs_top[i - 1], its children 2i and 2i + 1), and room for the
	 * window of records left after them. objs_levels 0: 16 (2^16 - 1
	 * records, 2.6 MB); no file when the table is no larger. */
	struct rb_obj *objs_top, *objs_win;
	unsigned objs_levels;
	/* For the mend in place (rebuild_inplace.c): the nodes the walk
	 * took, the keys of twig pointers to leaves that do not verify,
	 * and whether the walk met a pointer that mend cannot cut (to a
	 * node taken already, outside the volume, a bitmap block, a dead
	 * node above the leaves, a pointer item the checks refused). */
	struct chk_map walked;
	struct fmt_key *dead;
	size_t ndead, capdead;
	int odd_walk;
	int in_place;			/* the tree was mended in place */
	int committed;			/* a new or mended tree committed */
	uint64_t put_back;		/* items it put in */
	/* The walked nodes and the children their pointers name, as
	 * rb_pin_kept pinned them (rb_unpin_gone lets go of them): a bit
	 * a volume block (the pins are a set of ranges: pinning twice is
	 * pinning once). */
	struct chk_map pinned;
	/* Items other than body items (rebuild_spill.c); an item's seq is
	 * seq_off + its index when it joins the memory list. */
	struct rb_spill sp;
	uint64_t seq_off;
};

/* rebuild_spill.c: the spill set up (budget: bytes of records and of
 * bodies in memory, 0 the default) and freed; an item other than a
 * body item spilled; the spilled items read once in key order, second
 * copies of a key dropped (counted in *dup) and those a mend may read
 * pulled into the memory list (unsorted). */
int rb_spill_init(struct rb *b, size_t budget);
void rb_spill_free(struct rb *b);
int rb_spill_put(struct rb *b, const struct fmt_key *k, unsigned pid,
		 const uint8_t *body, size_t len, uint64_t blk, unsigned idx,
		 int suspect);
int rb_spill_pull(struct rb *b, uint64_t *dup);
/* Every item (the sorted memory list, no item dropped in it, and the
 * spilled ones left) in key order: rb_iter_next gives 1 and the item
 * in *out (valid until the next call), 0 at the end, or -errno. */
struct rb_iter {
	struct rb *b;
	size_t i;
	int have;
	struct rb_srec rec;
	struct ritem cur;
	uint8_t *body;
};
int rb_iter_start(struct rb *b, struct rb_iter *it);
int rb_iter_next(struct rb_iter *it, const struct ritem **out);
void rb_iter_end(struct rb_iter *it);
/* In key order: the blocks a new tree of all the items takes, about,
 * when the first 'done' took 'used' (0 when the items cannot be read
 * again); the first item that is not an extent, copied (its body
 * malloc'ed in *body, its place in *at; R4_ECORRUPT when none); every
 * item but the one at place 'skip' inserted into x's tree (*done: how
 * many were taken, the one that failed too). */
uint64_t rb_need_about(struct rb *b, size_t done, uint64_t used);
int rb_first_leaf_item(struct rb *b, struct ritem *first, uint8_t **body,
		       size_t *at, struct r4_error *err);
int rb_insert_all(struct rb *b, struct r4_txn *x, size_t skip,
		  size_t *done, struct r4_error *err);
/* The spilled items left that came from walked nodes, by node and
 * place (n of them), for the mend in place: rb_np_match is 1 when the
 * next of them is item idx of node blk with that key, plugin id and
 * body (then the next one is read), 0 when not, or -errno. */
struct rb_np {
	struct rb *b;
	struct chk_runs runs;
	struct rb_srec head;
	int have;
	uint64_t n;
	uint8_t *body;
};
int rb_np_start(struct rb *b, struct rb_np *np);
int rb_np_match(struct rb_np *np, uint64_t blk, unsigned idx,
		const struct fmt_key *k, unsigned pid, const uint8_t *body,
		size_t len);
void rb_np_end(struct rb_np *np);

/* An item dropped from the list (its pid set to this). */
#define DROPPED 0xffffu

struct kid {
	uint64_t blk;
	struct fmt_key lo, hi;
};

/* rebuild_take.c: add an item to the list (its body copied); the walk
 * from a node down; the scan of the used blocks no one reaches. */
int rb_push(struct rb *b, const struct fmt_key *k, unsigned pid,
	    const uint8_t *body, size_t len);
/* Room for a body of len bytes in the arena (NULL without memory);
 * the arena freed. */
uint8_t *rb_body_alloc(struct rb *b, size_t len);
void rb_bodies_free(struct rb *b);
int rb_walk(struct rb *b, uint64_t blk, unsigned level,
	    const struct kid *range);
int rb_scan(struct rb *b);
/* rebuild_objs.c: the check's objects (their key, size, mode; from its
 * tables, or those the bounded check kept in their order: chk.ranked)
 * into a scratch file (else b->objs), and the check's tables freed: the
 * rebuild reads nothing else of them, and the check after it builds
 * its own; rb_objs_free lets them go. rb_obj_find: 1 and one by
 * stat-data key in *out, as chk_obj_find finds it, or 0 (none, or a
 * read failed: b->objs_err). */
int rb_objs(struct rb *b);
/* The keys the key pass would give stat data (keys.c: rep_named_keys)
 * into b->named; none without the tables, when the rebuild takes the
 * bounded check's objects (repair.c: rebuild_listed, whose list says
 * that no stat data nobody names fits a key an entry names). */
int rb_named(struct rb *b);
void rb_objs_free(struct rb *b);
int rb_obj_find(struct rb *b, uint64_t el0, uint64_t el1, uint64_t el2,
		struct rb_obj *out);
/* rebuild_keys.c: the list's order (key, then first found); the root
 * directory's stat data; where an item's bytes end; a break filled;
 * key look-ups; the key, ctail and orphan menders. */
int rb_item_cmp(const void *x, const void *y);
/* Where a listed item was found: node blk, item idx; i its index in
 * the list. rb_nodepos_cmp orders by node, then item. */
struct rb_nodepos {
	uint64_t blk;
	unsigned idx;
	size_t i;
};
int rb_nodepos_cmp(const void *x, const void *y);
int rb_root_sd(struct rb *b);
uint64_t rb_item_end(const struct ritem *p, uint32_t bs);
int rb_fill_gap(struct rb *b, const struct ritem *p, uint64_t at,
		uint64_t end);
int rb_same_body(const struct ritem *x, const struct ritem *y);
size_t rb_find_key(const struct rb *b, const struct fmt_key *k);
uint64_t rb_sd_size(const struct rb *b, size_t n, const struct ritem *p);
int rb_mend_ctails(struct rb *b, int *moved);
int rb_place_far(struct rb *b, int *moved);
int rb_rekey_orphans(struct rb *b, int *moved);
int rb_mend_keys(struct rb *b);
/* rebuild.c: the old nodes whose items the new tree takes, to free
 * (walked ones too when 'walked'), a bit a block in *out (made here,
 * chk_map_fini it) and *nout of them; rebuild_inplace.c: the mend in
 * place, for a volume without room for a new tree: 0 done, 1 it does
 * not apply (nothing written), else an error. */
int rb_old_nodes(struct rb *b, int walked, struct chk_map *out,
		 size_t *nout);
int rb_mend_in_place(struct rb *b, struct r4_error *err);
/* rebuild_inplace.c: the blocks the old tree and the listed items use
 * (walked nodes and the children they name, extents' blocks, the old
 * nodes) pinned against the allocator, for a bitmap that calls some
 * free; -ENOMEM. */
int rb_pin_kept(struct rb *b, const struct chk_map *old);
/* After the commit of a new tree ('fresh') or of the mend: the pins of
 * what rb_pin_kept pinned that the tree no longer uses let go (a new
 * tree: every walked node and child; the mend: the children it did not
 * walk, the dead leaves), so that later passes may allocate there once
 * the bitmap calls them free; the listed extents stay pinned. The nodes
 * the commit freed are unpinned by it. -ENOMEM. */
int rb_unpin_gone(struct rb *b, int fresh);
/* fn for each allocated unit of the listed extent items (start, width
 * as on disk), until it returns nonzero (that is returned). */
int rb_extents(struct rb *b,
	       int (*fn)(struct rb *b, uint64_t start, uint64_t width,
			 void *ctx), void *ctx);
/* R4_ENOSPC when the free blocks the allocator can hand out (the
 * bitmap's, less those pinned: a lying bitmap calls live ones free)
 * cannot hold the journal of a commit (its wandered copies and
 * records: one a bitmap block at most), so a transaction is aborted
 * (the volume as it was) rather than its commit failing (a failed
 * commit leaves the handle unusable). */
int rb_log_room(struct r4_vol *vol, struct r4_error *err);

#endif
