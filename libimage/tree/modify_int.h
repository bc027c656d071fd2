/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: what the three files of the tree writer share (modify.c: node
 * rewrites and balancing; dcache.c: the decoded-node cache and deferred
 * writes; path.c: paths and peeks). Not a public interface. */
#ifndef R4_LIBIMAGE_TREE_MODIFY_INT_H
#define R4_LIBIMAGE_TREE_MODIFY_INT_H

#include "libimage/tree/modify.h"
#include "format/super.h"

struct mpath {
	uint64_t blk[FMT_TREE_HEIGHT_MAX + 2];
	int pos[FMT_TREE_HEIGHT_MAX + 2];	/* item on the path */
};

/* ---- decoded nodes ------------------------------------------------------
 * A direct-mapped cache of item lists, one block per slot. The rule that
 * keeps it true: a slot holds a list only while the block reads as that
 * list. A list is taken out (tmod_dc_get) to be changed and comes back only
 * unchanged (tmod_dc_keep) or as what emit just wrote; a block freed or
 * rewritten otherwise loses its slot (tmod_dc_forget). */

#define TREE_DCACHE_SLOTS 1024u	/* a power of 2 */

struct tree_dslot {
	uint64_t blk;		/* 0: empty */
	unsigned level;
	struct ilist l;
	long hint;		/* the last answer of a search of l (path.c):
				 * tried first, taken only when l's keys
				 * around it still say so */
};

/* The volume's name for messages. */
const char *tmod_vname(const struct tree_mod *m);
/* An out-of-memory failure into err. */
int tmod_oom(struct r4_error *err);
/* Child block of parent item i, 0 when it is not a node pointer. */
uint64_t tmod_sib(const struct ilist *P, long i);

/* dcache.c */
/* The cache slot block blk maps to (NULL: out of memory); inline, as
 * each path search asks it once a level (tmod_dc_make makes the cache
 * at the first ask). */
struct tree_dslot *tmod_dc_make(struct tree_mod *m, uint64_t blk);
static inline struct tree_dslot *tmod_dc_slot(struct tree_mod *m,
					      uint64_t blk)
{
	if (!m->dc)
		return tmod_dc_make(m, blk);
	return &m->dc[(blk * 0x9e3779b97f4a7c15ull) >> 54 &
		      (TREE_DCACHE_SLOTS - 1)];
}
/* 1 when block blk has deferred content not written yet. */
int tmod_is_stale(const struct tree_mod *m, uint64_t blk);
/* The block is rewritten or freed: its list goes, deferred or not. */
void tmod_dc_forget(struct tree_mod *m, uint64_t blk);
/* Block blk's items at 'level' into *out (the caller owns them). */
int tmod_dc_get(struct tree_mod *m, uint64_t blk, unsigned level,
		struct ilist *out, struct r4_error *err);
/* l is what block blk reads as: the cache takes it (l is emptied). */
void tmod_dc_keep(struct tree_mod *m, uint64_t blk, unsigned level,
		  struct ilist *l);

/* put_once's quick way: items it[0..n) go into the leaf at the end of
 * path p (found for key 'at'), which this writer deferred, in its cached
 * list, when level_set would only defer the result (one node, at least
 * half full, the same first key, parent cached): what level_set would
 * make, without taking the leaf and its parent out and back. A leaf the
 * put makes more than a node is split as level_set would split it when
 * its choice is known from cached neighbours (tmod_split_leaf). 1 done,
 * 0 not so (the caller goes the general way), < 0 an error. */
int tmod_dc_put(struct tree_mod *m, const struct mpath *p,
		const struct fmt_key *at, int replace,
		const struct tree_newitem *it, size_t n, struct r4_error *err);

/* modify.c (tmod_choose_side: dcache.c) */
/* Which neighbour a level's node of 'total' bytes joins (lb, rb: the
 * left and right neighbours' bytes, SIZE_MAX none): -1 left, +1 right,
 * 0 none (level_set's choice). */
int tmod_choose_side(size_t total, size_t lb, size_t rb, size_t cap,
		     size_t ih);
/* tmod_dc_put's split: items, the deferred leaf p->blk[1]'s list with
 * the change made (and the neighbour choose would share with, blks[1]
 * or blks[0]), taken out of the cache, more than a node: what
 * level_set would make of it after its choose (its pack; the twig's
 * items [first, first + count) set as level_set would set them). */
int tmod_split_leaf(struct tree_mod *m, struct mpath *p,
		    struct ilist *items, long first, size_t count,
		    const uint64_t *blks, struct r4_error *err);
/* Encode items l as node nb of 'level' (a block of the transaction). */
int tmod_write_node(struct tree_mod *m, uint64_t nb, unsigned level,
		    const struct ilist *l, int *ok, struct r4_error *err);

/* path.c */
/* Path from the root to level 'to' for key k. */
int tmod_path_find(struct tree_mod *m, const struct fmt_key *k,
		   unsigned to, struct mpath *p, int *none,
		   struct r4_error *err);

#endif
