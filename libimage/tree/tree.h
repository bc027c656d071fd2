/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reading the tree: verified node loads, key search and a cursor
 * that visits every item in key order (leaf items and twig extents
 * interleaved), and a whole-tree walk with cycle detection.
 *
 * A cursor keeps the path from the root to its current item as pinned
 * cache blocks, one per level. Every node entered is verified
 * (fmt_node_verify) and must carry the level its parent implies; every
 * step to another node must find a strictly greater (next) or smaller
 * (prev) key, so a block linked twice cannot make a cursor loop. */
#ifndef R4_LIBIMAGE_TREE_TREE_H
#define R4_LIBIMAGE_TREE_TREE_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "format/key.h"
#include "format/super.h"
#include "libimage/io/cache.h"

struct r4_vol;

/* Load block blk as a tree node of the given level: bounds, fmt_node_verify
 * and the level. *out is pinned; release with io_cache_put. */
int tree_node_get(struct r4_vol *vol, uint64_t blk, unsigned level,
		  struct io_block **out, struct r4_error *err);

struct tree_level {
	struct io_block *b;	/* NULL when not loaded */
	uint64_t blk;
	int pos;
	unsigned nr;
};

struct tree_cursor {
	struct r4_vol *vol;
	unsigned height;
	unsigned stop;		/* level of the current item; 0 = none */
	struct tree_level lv[FMT_TREE_HEIGHT_MAX + 1];
	struct fmt_key last;	/* key of the current item */
};

/* One item, as seen through a cursor. body points into the pinned
 * block and lives until the cursor moves. */
struct tree_item {
	uint64_t blk;
	unsigned level, pos, plugin_id;
	struct fmt_key key;
	const uint8_t *body;
	size_t off, len;
};

void tree_cursor_init(struct tree_cursor *c, struct r4_vol *vol);
/* Releases every pinned block; the cursor may be reused. */
void tree_cursor_fini(struct tree_cursor *c);

/* Position at the item with the largest key <= key (tree_seek_le) or
 * the smallest key >= key (tree_seek_ge). R4_ENOTFOUND when there is
 * none (the cursor is then empty). */
int tree_seek_le(struct tree_cursor *c, const struct fmt_key *key,
		 struct r4_error *err);
int tree_seek_ge(struct tree_cursor *c, const struct fmt_key *key,
		 struct r4_error *err);
/* Move to the next / previous item in key order; R4_ENOTFOUND past the
 * end (the cursor is then empty). */
int tree_next(struct tree_cursor *c, struct r4_error *err);
int tree_prev(struct tree_cursor *c, struct r4_error *err);
/* The current item (its header and body bounds checked). */
int tree_cur(struct tree_cursor *c, struct tree_item *it,
	     struct r4_error *err);

/* Every node, parents before children, left to right. node is the
 * verified block; a block reached twice is an R4_ELOOP error. A non-zero
 * return of fn stops the walk and is returned. */
typedef int (*tree_node_fn)(void *ctx, uint64_t blk, unsigned level,
			    const uint8_t *node);
int tree_walk(struct r4_vol *vol, tree_node_fn fn, void *ctx,
	      struct r4_error *err);

/* Decode item i of a verified node (header and body bounds). */
int tree_node_item(struct r4_vol *vol, const uint8_t *node, uint64_t blk,
		   unsigned i, struct tree_item *it, struct r4_error *err);
/* Number of items of a verified node. */
unsigned tree_node_nr(const uint8_t *node);

#endif
