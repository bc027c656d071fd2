/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the checker's walk of the storage tree, depth first from the
 * root named by the format40 super block.
 *
 * Every node pointer is checked before it is followed: inside the
 * volume, not below the first usable block, not already in use (the map
 * of used blocks doubles as the visited set, so a block referenced twice
 * is reported and not descended, which also ends cycles) except as file
 * data of an extent found before it (the node keeps the block then, and
 * the extent's claim is reported as block-shared). Each node must
 * verify (header, item headers, key order, node41 checksum), carry the
 * super block's mkfs id, sit at the level its depth gives, hold items,
 * and keep every key inside the delimiting keys its parent gives it. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "libimage/check/check.h"
#include "libimage/obj/obj.h"
#include "r4/util.h"
#include "format/item.h"
#include "format/node.h"

struct walk_pos {
	uint64_t blk;
	unsigned level;
	const struct fmt_key *ldk;	/* NULL for the root */
	const struct fmt_key *rdk;
	uint64_t parent;		/* R4_CHECK_NO_BLOCK for the root */
	int pitem;
	const struct chk_rowsrc *row;	/* the pointer; NULL for the root */
};

static int walk(struct chk *c, const struct walk_pos *p);

/* Where the pointer to p->blk is, for a message (only when one is said:
 * formatting it for every node cost 5% of a check). */
static void where(const struct walk_pos *p, char *buf, size_t len)
{
	if (p->parent == R4_CHECK_NO_BLOCK)
		snprintf(buf, len, "the super block's root pointer");
	else
		snprintf(buf, len, "block %llu item %d",
			 (unsigned long long)p->parent, p->pitem);
}

/* Claim p->blk for a node. 1 = go on, 0 = reported, do not descend. */
static int claim(struct chk *c, const struct walk_pos *p)
{
	char from[64];
	int old;

	if (p->blk < c->first_usable || p->blk >= c->blocks) {
		where(p, from, sizeof(from));
		CHK_SAY(c, CHK_M_NODE_OUTSIDE, p->parent, p->pitem, NULL,
			CHK_U(at, p->blk), CHK_S(via, from),
			CHK_U(first, c->first_usable),
			CHK_U(last, c->blocks - 1));
		return 0;
	}
	/* A node beats file data: an extent found first in this block
	 * loses it (the repair gives the extent a copy). */
	if (chk_map_test(&c->ext, p->blk)) {
		chk_map_clear(&c->ext, p->blk);
		c->rep->extent_blocks--;
		where(p, from, sizeof(from));
		CHK_SAY(c, CHK_M_NODE_ON_EXTENT, p->blk, -1, NULL,
			CHK_U(level, p->level), CHK_S(via, from));
		return 1;
	}
	if (chk_map_test(&c->used, p->blk) || chk_is_bitmap_blk(c, p->blk)) {
		where(p, from, sizeof(from));
		CHK_SAY(c, CHK_M_NODE_TWICE, p->blk, -1, NULL,
			CHK_U(level, p->level), CHK_S(via, from),
			CHK_S(owner, chk_block_owner(c, p->blk)));
		return 0;
	}
	old = chk_map_set(&c->used, p->blk);
	return old < 0 ? old : 1;
}

/* Header-level checks. 1 = look at the items, 0 = reported, stop. */
static int check_header(struct chk *c, const struct walk_pos *p,
			const uint8_t *blk, struct fmt_node_header *nh)
{
	struct fmt_item_header ih;
	const char *why;
	int bad = -1;

	/* A node that is a node but sits at the wrong level says so first
	 * (its items would be wrong for the level too). */
	if (!fmt_node_header_decode(blk, c->bs, nh) &&
	    nh->magic == fmt_node_magic(nh->plugin_id) &&
	    nh->level != p->level) {
		CHK_SAY(c, CHK_M_NODE_LEVEL, p->blk, -1, NULL,
			CHK_U(have, nh->level), CHK_U(want, p->level));
		return 0;
	}
	why = fmt_node_verify(blk, c->bs, c->pol, &bad);
	if (why) {
		int have = bad >= 0 &&
			!fmt_node_ih_decode(blk, c->bs, c->pol,
					    (unsigned)bad, &ih);
		char from[64];

		where(p, from, sizeof(from));
		CHK_SAY(c, CHK_M_NODE_BAD, p->blk, bad, have ? &ih.key : NULL,
			CHK_S(what, why), CHK_U(level, p->level),
			CHK_S(via, from));
		return 0;
	}
	fmt_node_header_decode(blk, c->bs, nh);
	if (nh->mkfs_id != c->vol->sb.mkfs_id)
		CHK_SAY(c, CHK_M_NODE_MKFS_ID, p->blk, -1, NULL,
			CHK_U(have, nh->mkfs_id),
			CHK_U(want, c->vol->sb.mkfs_id));
	if (nh->plugin_id != c->vol->sb.node_pid)
		CHK_SAY(c, CHK_M_NODE_PLUGIN, p->blk, -1, NULL,
			CHK_U(have, nh->plugin_id),
			CHK_U(want, c->vol->sb.node_pid));
	if (nh->nr_items == 0) {
		CHK_SAY0(c, CHK_M_NODE_EMPTY, p->blk, -1, NULL);
		return 0;
	}
	return 1;
}

static void check_dkeys(struct chk *c, const struct walk_pos *p, unsigned i,
			const struct fmt_item_header *ih,
			const struct fmt_key *last, const struct fmt_key *next)
{
	char ks[FMT_KEY_STR_MAX];

	if (i == 0 && p->ldk && fmt_key_cmp(&ih->key, p->ldk) != 0) {
		fmt_key_str(p->ldk, ks, sizeof(ks));
		CHK_SAY(c, CHK_M_DKEY_POINTER, p->blk, 0, &ih->key,
			CHK_U(parent, p->parent), CHK_U(pitem, p->pitem),
			CHK_S(tkey, ks));
	} else if (p->ldk && fmt_key_cmp(&ih->key, p->ldk) < 0) {
		fmt_key_str(p->ldk, ks, sizeof(ks));
		CHK_SAY(c, CHK_M_DKEY_LEFT, p->blk, (int)i, &ih->key,
			CHK_S(tkey, ks));
	}
	if (fmt_key_cmp(last, next) >= 0) {
		char ls[FMT_KEY_STR_MAX];

		fmt_key_str(last, ls, sizeof(ls));
		fmt_key_str(next, ks, sizeof(ks));
		CHK_SAY(c, CHK_M_DKEY_LAST, p->blk, (int)i, &ih->key,
			CHK_S(lkey, ls), CHK_U(rdk, next == p->rdk),
			CHK_S(tkey, ks));
	}
}

/* Items i and i + 1 of leaf blk: two tail40 items of one file, the
 * second starting where the first ends. The Reiser4 kernel never
 * writes that (it appends to the item before) and reads such a file
 * short: its read ends where the second item starts (doc/kernel.md
 * §2.2). Older r4kit writers left it; -p and -y join them. */
static int tail_pair(struct chk *c, const uint8_t *node, uint64_t blk,
		     unsigned i, const struct fmt_item_header *a, size_t len,
		     const struct fmt_item_header *z)
{
	size_t zoff, zlen;

	uint64_t at = fmt_key_offset(&a->key);
	char path[512];
	struct r4_objref ref;

	if (a->plugin_id != FMT_ITEM_TAIL40 ||
	    z->plugin_id != FMT_ITEM_TAIL40 ||
	    fmt_key_type(&a->key) != FMT_KEY_BODY ||
	    a->key.el[0] != z->key.el[0] || a->key.el[1] != z->key.el[1] ||
	    a->key.el[2] != z->key.el[2] || !len ||
	    at > UINT64_MAX - len || at + len != fmt_key_offset(&z->key) ||
	    fmt_node_item_body(node, c->bs, c->pol, i + 1, &zoff, &zlen) ||
	    at + len > UINT64_MAX - zlen)
		return 0;
	if (R4_RESERVE(c->tunm, c->captunm, c->ntunm + 1, 16))
		return -ENOMEM;
	c->tunm[c->ntunm].a = a->key;
	c->tunm[c->ntunm].end = at + len + zlen;
	c->tunm[c->ntunm++].blk = blk;
	obj_ref_from_key(&a->key, &ref);
	chk_ccreg_path(c, &ref, path, sizeof(path));
	CHK_SAY(c, CHK_M_TAIL_UNMERGED, blk, (int)i + 1, &z->key,
		CHK_S(path, path), CHK_U(oid, ref.oid), CHK_U(at, blk),
		CHK_U(prev, i), CHK_U(pos, i + 1), CHK_U(prevoff, at),
		CHK_U(off, at + len));
	return 0;
}

static int walk_items(struct chk *c, const struct walk_pos *p,
		      const uint8_t *blk, const struct fmt_node_header *nh)
{
	struct fmt_item_header ih, nih;
	struct fmt_key last;
	size_t hsize = fmt_node_header_size(nh->plugin_id);
	int rc;

	for (unsigned i = 0; i < nh->nr_items; i++) {
		const struct fmt_key *next = p->rdk;
		uint64_t child = 0;
		size_t off, end, len;

		/* Item i's header was item i + 1's of the turn before. */
		if (i == 0)
			fmt_node_ih_decode(blk, c->bs, c->pol, i, &ih);
		else
			ih = nih;
		if (i + 1 < nh->nr_items) {
			fmt_node_ih_decode(blk, c->bs, c->pol, i + 1, &nih);
			next = &nih.key;
		}
		c->rep->items++;
		/* The body as fmt_node_item_body gives it, from the headers
		 * in hand (check_header saw the node's layout whole). */
		off = ih.offset;
		end = i + 1 < nh->nr_items ? nih.offset : nh->free_space_start;
		if (off < hsize || end > nh->free_space_start || off >= end) {
			CHK_SAY0(c, CHK_M_NODE_ITEM_OUTSIDE, p->blk, (int)i,
				 &ih.key);
			continue;
		}
		last = ih.key;
		len = end - off;
		rc = chk_item(c, p->blk, i, &ih, blk + off, len, &child,
			      &last);
		if (rc)
			return rc;
		check_dkeys(c, p, i, &ih, &last, next);
		if (i + 1 < nh->nr_items) {
			rc = tail_pair(c, blk, p->blk, i, &ih, len, &nih);
			if (rc)
				return rc;
		}
		if (ih.plugin_id == FMT_ITEM_NODEPTR40 && child) {
			struct chk_rowsrc row = { blk, i, nh->nr_items };
			struct walk_pos cp = {
				.blk = child, .level = p->level - 1,
				.ldk = &ih.key, .rdk = next,
				.parent = p->blk, .pitem = (int)i, .row = &row
			};

			rc = walk(c, &cp);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int walk(struct chk *c, const struct walk_pos *p)
{
	struct fmt_node_header nh;
	uint8_t *blk;
	int rc;

	rc = claim(c, p);
	if (rc <= 0)
		return rc;
	rc = chk_node_read(c, p->level, p->blk, p->row, &blk);
	if (rc)
		return rc;
	c->rep->nodes++;
	if (c->rep->nodes % 64 == 0) {
		if (c->rep->nodes >= c->tree_total)
			c->tree_total = c->rep->nodes + 1;
		chk_progress(c, "tree", c->rep->nodes, c->tree_total);
	}
	if (!check_header(c, p, blk, &nh))
		return 0;
	if (p->level == FMT_NODE_LEAF_LEVEL)
		c->rep->leaves++;
	else if (p->level == FMT_NODE_TWIG_LEVEL)
		c->rep->twigs++;
	return walk_items(c, p, blk, &nh);
}

int chk_tree(struct chk *c)
{
	struct fmt_key max;
	struct walk_pos p;
	uint64_t used = c->blocks - c->vol->sb.free_blocks;
	int rc;

	fmt_key_max(&max);
	c->tree_total = used > c->first_usable ? used - c->first_usable : 1;
	p.blk = c->vol->sb.root_block;
	p.level = c->vol->sb.tree_height;
	p.ldk = NULL;
	p.rdk = &max;
	p.parent = R4_CHECK_NO_BLOCK;
	p.pitem = -1;
	p.row = NULL;
	if (p.level < FMT_TREE_HEIGHT_MIN || p.level > FMT_TREE_HEIGHT_MAX)
		return 0;	/* reported with the super block */
	chk_node_read_reset(c);
	rc = walk(c, &p);
	chk_node_read_reset(c);
	chk_progress(c, "tree", c->tree_total, c->tree_total);
	return rc;
}
