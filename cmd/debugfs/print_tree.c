/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: print tree: every formatted node, read raw from the root
 * down, a parent before its children. The walk trusts nothing: a block
 * seen twice (a cycle or a shared subtree), a child outside the volume,
 * a node at the wrong level or whose keys fall outside its parent's
 * delimiting keys is reported by block number and not descended into. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../common/common.h"
#include "debugfs.h"
#include "r4/util.h"
#include "format/node.h"
#include "format/item.h"
#include "format/key.h"
#include "format/plugin.h"
#include "format/super.h"

struct walk {
	struct dbg *d;
	struct r4_u64map seen;	/* blocks walked (a set) */
	enum fmt_key_policy pol;
	uint64_t nodes;
	int rc;
};

static int fail(struct walk *w, uint64_t blk, const char *what)
{
	fprintf(stderr, "%s: print tree: block %" PRIu64 ": %s\n", r4cmd_prog,
		blk, what);
	w->rc = DBG_FAIL;
	return DBG_FAIL;
}

/* The node's keys must lie in [lkey, rkey). */
static int check_keys(struct walk *w, uint64_t blk, const uint8_t *buf,
		      unsigned nr, const struct fmt_key *lkey,
		      const struct fmt_key *rkey)
{
	struct fmt_item_header first, last;
	uint32_t bs = w->d->si.blksize;

	if (!nr)
		return fail(w, blk, "empty node in the tree");
	if (fmt_node_ih_decode(buf, bs, w->pol, 0, &first) ||
	    fmt_node_ih_decode(buf, bs, w->pol, nr - 1, &last))
		return fail(w, blk, "item header outside the block");
	if (fmt_key_cmp(&first.key, lkey) < 0)
		return fail(w, blk, "first key is less than the parent's "
			    "delimiting key");
	if (fmt_key_cmp(&last.key, rkey) > 0)
		return fail(w, blk, "last key is greater than the right "
			    "delimiting key");
	return DBG_OK;
}

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     const struct fmt_key *lkey, const struct fmt_key *rkey);

/* Descend into every nodeptr40 child of an internal node. */
static void walk_children(struct walk *w, uint64_t blk, const uint8_t *buf,
			  unsigned nr, unsigned level, const struct fmt_key *rkey)
{
	uint32_t bs = w->d->si.blksize;
	struct fmt_item_header ih, next;
	size_t off, len;
	uint64_t child;

	for (unsigned i = 0; i < nr; i++) {
		const struct fmt_key *right = rkey;

		if (fmt_node_ih_decode(buf, bs, w->pol, i, &ih) ||
		    fmt_node_item_body(buf, bs, w->pol, i, &off, &len))
			continue;	/* reported by dbg_show_node */
		if (ih.plugin_id != FMT_ITEM_NODEPTR40)
			continue;	/* extents at the twig level */
		if (i + 1 < nr &&
		    !fmt_node_ih_decode(buf, bs, w->pol, i + 1, &next))
			right = &next.key;
		if (fmt_nodeptr40_decode(buf + off, len, &child))
			continue;
		if (child < fmt_blk_first_usable(bs) ||
		    child >= w->d->si.block_count) {
			char msg[128];

			snprintf(msg, sizeof(msg), "item %u points to block %"
				 PRIu64 ", outside the usable blocks", i,
				 child);
			fail(w, blk, msg);
			continue;
		}
		walk_node(w, child, level - 1, &ih.key, right);
	}
}

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     const struct fmt_key *lkey, const struct fmt_key *rkey)
{
	struct fmt_node_header h;
	uint32_t bs = w->d->si.blksize;
	uint8_t *buf;
	int seen = r4_u64set_add(&w->seen, blk);

	if (seen)
		return fail(w, blk, seen < 0 ? "out of memory" :
			    "reached twice (a cycle or a shared subtree)");
	if (dbg_read(w->d, blk))
		return w->rc = DBG_FAIL;
	buf = malloc(bs);
	if (!buf)
		return fail(w, blk, "out of memory");
	memcpy(buf, w->d->buf, bs);
	if (w->nodes++)
		putchar('\n');
	if (dbg_show_node(w->d, blk, buf)) {
		w->rc = DBG_FAIL;
	} else {
		fmt_node_header_decode(buf, bs, &h);
		if (h.level != level) {
			char msg[96];

			snprintf(msg, sizeof(msg), "level %u, expected %u",
				 h.level, level);
			fail(w, blk, msg);
		} else if (!check_keys(w, blk, buf, h.nr_items, lkey, rkey) &&
			   level > FMT_NODE_LEAF_LEVEL) {
			walk_children(w, blk, buf, h.nr_items, level, rkey);
		}
	}
	free(buf);
	return w->rc;
}

int dbg_print_tree(struct dbg *d, int argc, const char **argv)
{
	struct walk w = { .d = d, .rc = DBG_OK };
	struct fmt_key lo, hi;
	uint64_t root = d->si.root_block;

	if (argc != 1)
		return dbg_usage(argv[0]);
	w.pol = d->large_keys ? FMT_KEY_LARGE : FMT_KEY_SHORT;
	fmt_key_min(&lo);
	fmt_key_max(&hi);
	if (d->si.tree_height < 1 || d->si.tree_height > FMT_NODE_MAX_LEVEL) {
		fprintf(stderr, "%s: print tree: tree height %u is not "
			"1..%d\n", r4cmd_prog, d->si.tree_height,
			FMT_NODE_MAX_LEVEL);
		return DBG_FAIL;
	}
	if (root < fmt_blk_first_usable(d->si.blksize) ||
	    root >= d->si.block_count)
		return fail(&w, root, "root block outside the usable blocks");
	walk_node(&w, root, d->si.tree_height, &lo, &hi);
	r4_u64map_fini(&w.seen);
	return w.rc;
}
