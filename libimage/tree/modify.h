/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: changing the tree inside a transaction (copy-on-write).
 *
 * One engine does every change: a list of items replaces the item with a
 * given key (or goes in at that key's position), at the leaf level (stat
 * data, directory entries, tails) or the twig level (extents). The node
 * is rewritten from its decoded item list:
 *  - a node the transaction has not written yet goes to a fresh block
 *    near the old one (txn_alloc + txn_new) and the old block is freed
 *    (txn_free); its parent then changes the same way, up to the root
 *    (txn_set_root). A node this writer made (allocated in its
 *    transaction scope) is rewritten in place: the committed tree does
 *    not reference it;
 *  - an overflowing node first shifts items into its left, then its
 *    right neighbour (same parent); else it splits into as many nodes as
 *    needed, sizes evened out, each new node's pointer added to the
 *    parent (a root split grows the tree); but when what follows the new
 *    items takes at most a quarter of a node (inserts in key order), the
 *    first node stays full and only what does not fit moves on.
 *    Directory entry, tail, ctail and extent items are cut at unit
 *    boundaries where that packs better;
 *  - an empty node is removed with its pointer; a node under half full
 *    merges into its left or right neighbour when both fit one node; a
 *    root above the twig level with one child gives way to that child;
 *  - a parent's pointer key is always its child's first key.
 * Leaf items never straddle an extent: putting an extent inside a leaf's
 * key range first cuts the leaf in two. */
#ifndef R4_LIBIMAGE_TREE_MODIFY_H
#define R4_LIBIMAGE_TREE_MODIFY_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "format/key.h"
#include "r4/util.h"

struct r4_vol;
struct txn;

struct tree_mod_stats {
	uint64_t nodes_written;	/* node images made (new + rewritten) */
	uint64_t nodes_alloc;	/* blocks allocated for nodes */
	uint64_t nodes_freed;	/* node blocks freed */
	uint64_t splits, merges, shifts, grows, shrinks;
	uint64_t dec_hits, dec_misses;	/* decoded-node cache */
	uint64_t deferred, synced;	/* lazy leaf rewrites; deferred
					 * leaves written */
	uint64_t quick;		/* of the deferred: changed in the cached
				 * list itself (tmod_dc_put) */
	uint64_t patched;	/* of the quick: by tree_mod_patch */
	uint64_t quick_split;	/* leaves split by tmod_dc_put (level_set's
				 * choice of neighbour known without it) */
	uint64_t quick_shared;	/* of those, shared with a neighbour */
	uint64_t quick_twig;	/* of those, the twig deferred as level_set
				 * would, without it */
	uint64_t quick_small;	/* of the quick: a leaf under half a node
				 * whose neighbours have no room for it */
};

struct tree_dslot;

struct tree_mod {
	struct r4_vol *vol;
	struct txn *t;
	/* The transaction's scope this writer allocates its nodes in
	 * (txn_scope_begin): a node it allocated is rewritten in place
	 * (the committed tree does not reference it); any other, even
	 * one this transaction allocated before (by an earlier writer, or
	 * by hand, as the repair's first leaf), moves to a new block. */
	uint32_t scope;
	uint64_t root;
	unsigned height;
	int no_merge;		/* internal: while cutting a leaf */
	int general;		/* tests: every change the general way,
				 * none in a deferred leaf's cached list
				 * (tmod_dc_put); the same tree either way */
	long ins_end;		/* internal: index after the new items in
				 * the list level_set gets, -1 unknown */
	/* Decoded nodes kept between changes of one transaction, so a node
	 * changed by consecutive inserts is decoded once (dcache.c): each
	 * slot holds the item list of one block exactly as the block now
	 * reads; bounded (TREE_DCACHE_SLOTS), allocated on first use. */
	struct tree_dslot *dc;
	/* Deferred node writes (tree_mod_lazy): leaves and twigs whose list
	 * in dc is newer than their block (a node changed in place, or one
	 * a split or merge just made: encoded once, not at each split);
	 * the list is written into the block when a reader asks for it
	 * (vol->node_sync), when its slot is needed, and at
	 * tree_mod_flush. A node freed before that is never written. */
	int lazy;
	struct r4_u64map stale;
	int sync_rc;		/* a deferred write that failed */
	struct tree_mod_stats st;
};

/* One item to put: key, item plugin id and body (copied). */
struct tree_newitem {
	struct fmt_key key;
	unsigned pid;
	const void *body;
	size_t len;
};

/* Start / end the tree changes of one transaction (root and height are
 * taken from vol->sb, which txn_set_root keeps current). */
int tree_mod_init(struct tree_mod *m, struct r4_vol *vol, struct txn *t,
		  struct r4_error *err);
void tree_mod_fini(struct tree_mod *m);

/* Defer leaf writes from now on: a change that keeps a leaf this
 * writer made in one node (the common insert) updates its decoded
 * list only; the block is written once, when read (tree_node_get), when
 * the list leaves the cache, or at tree_mod_flush. Many inserts into one
 * leaf then cost one node encoding, not one each. The caller must call
 * tree_mod_flush before the transaction commits. */
int tree_mod_lazy(struct tree_mod *m, struct r4_error *err);
/* Write every deferred leaf into its block. */
int tree_mod_flush(struct tree_mod *m, struct r4_error *err);

/* The largest item body one node holds. */
size_t tree_max_item(const struct tree_mod *m);

/* Put items it[0..n) at level 1 (leaf items) or 2 (extent items): with
 * replace, in place of the item whose key is 'at' (R4_ENOTFOUND if
 * none; n may be 0 to delete it); else at at's position (R4_EEXIST if
 * an item has that key). The new keys must be ascending and lie between
 * the neighbouring items' keys. */
int tree_put_items(struct tree_mod *m, unsigned level,
		   const struct fmt_key *at, int replace,
		   const struct tree_newitem *it, size_t n,
		   struct r4_error *err);
int tree_insert(struct tree_mod *m, unsigned level, const struct fmt_key *key,
		unsigned pid, const void *body, size_t len,
		struct r4_error *err);
int tree_delete(struct tree_mod *m, unsigned level, const struct fmt_key *key,
		struct r4_error *err);
int tree_replace(struct tree_mod *m, unsigned level,
		 const struct fmt_key *key, unsigned pid, const void *body,
		 size_t len, struct r4_error *err);

/* The leaf item with the largest key <= k as this transaction now has
 * it, read from the decoded (deferred) lists where they are, so no
 * deferred leaf is written for it: 0 with *out and the body copied into
 * *buf (grown as needed, *cap its size); 1 when the path for k does not
 * end on such an item in its leaf (k below the leaf's first key, or in
 * a twig's extent range): the caller asks the tree (tree_seek_le)
 * instead; < 0 an error. */
struct tree_peek {
	struct fmt_key key;
	unsigned pid, pos;	/* item plugin; index in leaf blk */
	uint64_t blk;
	size_t len;
	/* the key that follows the item in the tree: next_at = 1 the
	 * next item of the leaf's; l > 1 the key of the item after the
	 * path's at level l (a parent's key is its child's first key);
	 * -1 none, the item is the tree's last */
	int next_at;
	struct fmt_key next;
	/* 1: the item is a cached one a reader marked (below) and its
	 * bytes have not changed since; 0 read from a node, or unmarked */
	int checked;
};

int tree_mod_peek(struct tree_mod *m, const struct fmt_key *k,
		  struct tree_peek *out, uint8_t **buf, size_t *cap,
		  struct r4_error *err);
/* Mark the cached item pk found as checked: the caller verified body
 * (pk->len bytes, the copy the peek gave) the way its plugin's reader
 * does, so a later peek need not verify it again (pk->checked). Marked
 * only while the cached item still holds those bytes: 1 marked, 0 not
 * (read from a node, or changed). The mark goes with any change to the
 * item's bytes (a copy, cut, join or overwrite clears it). The mark
 * does not say which reader verified: one that trusts it checks the
 * item's plugin is the one it verified (today only cde40, by
 * obj_find_in_txn). */
int tree_mod_mark_checked(struct tree_mod *m, const struct tree_peek *pk,
			  const uint8_t *body);
/* tree_mod_mark_checked for the item of key k the caller has just put
 * (tree_put_items) with body (len bytes, plugin pid), bytes the caller
 * vouches for as its plugin's reader would verify them (built from
 * verified bytes by a rule that keeps them sound). Found through the
 * cached lists only (no node is read for it): 1 marked, 0 not (not
 * cached, or the cached item is not those bytes, e.g. cut in a split). */
int tree_mod_mark_put(struct tree_mod *m, const struct fmt_key *k,
		      unsigned pid, const uint8_t *body, size_t len);

/* Where tree_mod_patch last found an item: its leaf and index there,
 * the leaf's parent and the pointer's index there (blk 0: unknown).
 * Only a hint: each use is checked against the cached lists. */
struct tree_spot {
	uint64_t blk, pblk;
	int pos, ppos;
};

/* tree_replace of the leaf item of key k by body (plugin pid, len
 * bytes), done only when the item's body now is old (len bytes, the
 * same plugin) and the replace would take tmod_dc_put's quick way (a
 * deferred leaf of this writer, cached with its parent, at least half
 * full): the bytes are copied over the cached item's, which is all the
 * general way would change. *spot (kept by the caller, zeros at first)
 * is tried before a search from the root. 1 done; 0 not so, nothing
 * changed (the caller reads the item again and goes the general way);
 * < 0 an error. Never with tree_mod.general set. */
int tree_mod_patch(struct tree_mod *m, struct tree_spot *spot,
		   const struct fmt_key *k, unsigned pid, const void *old,
		   const void *body, size_t len, struct r4_error *err);

/* ---- item lists (ilist.c) ------------------------------------------- */

struct mitem {
	struct fmt_key key;
	unsigned pid;
	unsigned char checked;	/* tree_mod_mark_checked, bytes unchanged */
	size_t len;
	uint8_t *body;		/* owned */
};

/* joined: what a coalesce pass (below) may find to join. The changes
 * made through ilist_* since the last pass are in items [ja, jb), so
 * only the pairs from item ja - 1 to item jb may join (ja == jb: a
 * removal, the pair ja - 1, ja). 0: unknown (a list read from a node,
 * or moved or cut into): the next pass tries every pair. */
struct ilist {
	struct mitem *v;
	size_t n, cap;
	size_t ja, jb;
	int joined;
};

#define ILIST_EMPTY { NULL, 0, 0, 0, 0, 0 }
#define ILIST_JOINED_SPAN 1	/* joined, but for the pairs of [ja - 1, jb] */
#define ILIST_JOINED 2		/* a pass would join nothing */

void ilist_free(struct ilist *l);
int ilist_push(struct ilist *l, const struct fmt_key *k, unsigned pid,
	       const void *body, size_t len);
/* Take src's items onto the end of dst (src becomes empty). */
int ilist_move(struct ilist *dst, struct ilist *src);
/* Move l[k..n) onto the end of tail. */
int ilist_cut(struct ilist *l, size_t k, struct ilist *tail);
/* Replace l[a..b) by copies of w[0..n). */
int ilist_splice(struct ilist *l, size_t a, size_t b,
		 const struct tree_newitem *w, size_t n);
/* Bytes the items take in a node: bodies + item headers. */
size_t ilist_bytes(const struct ilist *l, size_t ih);
/* Decode a node's items (verified load at the given level). */
int ilist_load(struct r4_vol *vol, uint64_t blk, unsigned level,
	       struct ilist *out, struct r4_error *err);
/* Join neighbouring items that continue each other (what ilist_pack
 * does first); max = the largest item body. Only the pairs around the
 * span l->joined names are tried when it is set; the result is the
 * whole list's pass either way. On an error (< 0) the list stays
 * whole: ilist_free still frees each body once. */
int ilist_coalesce(struct ilist *l, size_t max, uint32_t blksize,
		   enum fmt_key_policy pol);
/* ilist_pack(l, cap, target = cap) when it makes two chunks: l becomes
 * the first (cut in place), *tail (empty) the second; 1 done, 0 not two
 * chunks (l coalesced, else unchanged), < 0 an error. */
int ilist_split(struct ilist *l, size_t cap, size_t ih, uint32_t blksize,
		enum fmt_key_policy pol, struct ilist *tail);
/* Cut all into chunks of at most cap bytes each (items + headers),
 * closing a chunk once it holds 'target' bytes; an item that does not
 * fit whole is cut at a unit boundary when the part fits. *out receives
 * *nout lists (free each, then the array); all is emptied, also on an
 * error (R4_ERANGE: an item that cannot be cut is larger than cap). */
int ilist_pack(struct ilist *all, size_t cap, size_t target, size_t ih,
	       uint32_t blksize, enum fmt_key_policy pol, struct ilist **out,
	       size_t *nout);

#endif
