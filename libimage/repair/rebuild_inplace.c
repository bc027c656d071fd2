/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild's way on a volume without room for a new
 * tree. A new tree takes as many blocks as the old one, whose blocks
 * become free only when the new tree's transaction commits (txn.h: a
 * block freed is never reused before), so an auto-sized image, with a
 * few free blocks, cannot take one. When the old tree's only damage is
 * leaves the walk takes nothing from (a zeroed leaf; a salvaged one,
 * with its header mended or items taken one by one, refuses the mend),
 * plus items lost
 * from the tree that the scan found, the old tree is mended in place
 * instead, in one transaction of the tree writer (copy-on-write: a
 * cut before its commit leaves the volume as it was): each twig
 * pointer to a dead leaf is cut, the items the walk did not take from
 * the tree are put in, and the nodes the scan took them from are
 * freed. That costs the nodes on the changed paths and the leaves the
 * put items need, not a whole tree. It applies only when every item
 * the walk took is in the rebuild's list exactly as it lies in its
 * node (nothing the mends changed there) and every pointer the walk
 * met led to a node it took, or to a dead leaf: then the mended tree
 * holds the very items a new one would. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repair/rebuild.h"
#include "libimage/alloc/space.h"
#include "libimage/obj/write.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/endian.h"
#include "format/item.h"
#include "format/node.h"

/* The listed items taken from walked nodes, sorted by node and place. */
static struct rb_nodepos *walked_items(const struct rb *b, size_t *nw)
{
	struct rb_nodepos *w = malloc((b->n ? b->n : 1) * sizeof(*w));

	*nw = 0;
	if (!w)
		return NULL;
	for (size_t i = 0; i < b->n; i++)
		if (b->it[i].blk && chk_map_test(&b->walked, b->it[i].blk))
			w[(*nw)++] = (struct rb_nodepos){ b->it[i].blk,
						    b->it[i].idx, i };
	if (*nw)
		qsort(w, *nw, sizeof(*w), rb_nodepos_cmp);
	return w;
}

/* Whether the items of walked node blk (read again: the walk's copy
 * may have been mended) are the listed ones at (blk, their place),
 * byte for byte; pointers aside. Counts them into *matched. */
static int node_kept(struct rb *b, uint64_t blk, const struct rb_nodepos *w,
		     size_t nw, struct rb_np *np, size_t *matched)
{
	struct chk *c = &b->R->c;
	struct fmt_node_header nh;

	if (vol_read_block(c->vol, blk, b->buf, "tree node", NULL) ||
	    fmt_node_header_decode(b->buf, c->bs, &nh))
		return 0;
	for (unsigned k = 0; k < nh.nr_items; k++) {
		struct fmt_item_header ih;
		struct rb_nodepos key = { blk, k, 0 }, *f;
		const struct ritem *p;
		size_t off, len;
		int rc;

		if (fmt_node_ih_decode(b->buf, c->bs, c->pol, k, &ih) ||
		    fmt_node_item_body(b->buf, c->bs, c->pol, k, &off, &len))
			return 0;
		if (ih.plugin_id == FMT_ITEM_NODEPTR40)
			continue;
		f = bsearch(&key, w, nw, sizeof(*w), rb_nodepos_cmp);
		if (!f) {	/* a spilled item, or none */
			rc = rb_np_match(np, blk, k, &ih.key, ih.plugin_id,
					 b->buf + off, len);
			if (rc <= 0)
				return rc;
			(*matched)++;
			continue;
		}
		p = &b->it[f->i];
		if (fmt_key_cmp(&p->key, &ih.key) || p->pid != ih.plugin_id ||
		    p->len != len || memcmp(p->body, b->buf + off, len))
			return 0;
		(*matched)++;
	}
	return 1;
}

/* 1 when the tree can be mended in place (above), 0 when not, < 0 an
 * error. */
static int mendable(struct rb *b)
{
	struct chk *c = &b->R->c;
	size_t nw, matched = 0;
	struct rb_nodepos *w;
	struct rb_np np;
	const uint64_t *codes = b->R->codes;
	int ok = 1;

	/* Damage the walk may keep as it lies (a node of another volume or
	 * level, a key outside its node's range), and a mend that would
	 * change nothing, are left to a new tree. */
	if (b->odd_walk || b->nodes_salvaged || !(b->n + b->sp.kept) ||
	    codes[R4_CHK_DKEY] || codes[R4_CHK_NODE_MKFS_ID] ||
	    codes[R4_CHK_NODE_LEVEL] || !(b->ndead || b->scanned))
		return 0;
	w = walked_items(b, &nw);
	if (!w)
		return -ENOMEM;
	ok = rb_np_start(b, &np);
	ok = ok ? ok : 1;
	for (uint64_t blk = chk_map_next(&b->walked, c->first_usable);
	     blk < c->blocks && ok > 0; blk = chk_map_next(&b->walked, blk + 1))
		ok = node_kept(b, blk, w, nw, &np, &matched);
	free(w);
	rb_np_end(&np);
	if (ok < 0)
		return ok;
	return ok && matched == nw + np.n;
}

/* Pin blocks start..start+count that lie in the volume. */
static int pin_in(struct rb *b, uint64_t start, uint64_t count)
{
	uint64_t end = b->R->c.blocks;

	if (start >= end || !count)
		return 0;
	if (count > end - start)
		count = end - start;
	return space_pin(&b->R->vol->space, start, count);
}

/* Pin one walked node or child; noted for rb_unpin_gone when it is
 * one of the blocks a node may take. */
static int pin_node(struct rb *b, uint64_t blk)
{
	if (blk >= b->R->c.first_usable && blk < b->R->c.blocks &&
	    chk_map_set(&b->pinned, blk) < 0)
		return -ENOMEM;
	return pin_in(b, blk, 1);
}

int rb_extents(struct rb *b,
	       int (*fn)(struct rb *b, uint64_t start, uint64_t width,
			 void *ctx), void *ctx)
{
	struct fmt_extent40_unit u;
	int rc = 0;

	for (size_t i = 0; i < b->n && !rc; i++) {
		const struct ritem *p = &b->it[i];
		int nu = p->pid == FMT_ITEM_EXTENT40 ?
			 fmt_extent40_units(p->body, p->len) : 0;

		for (int k = 0; k < nu && !rc; k++)
			if (!fmt_extent40_unit(p->body, p->len, (unsigned)k,
					       &u) &&
			    fmt_extent40_kind(&u) == FMT_EXTENT_ALLOCATED)
				rc = fn(b, u.start, u.width, ctx);
	}
	return rc;
}

static int pin_unit(struct rb *b, uint64_t start, uint64_t width,
		    void *ctx)
{
	(void)ctx;
	return pin_in(b, start, width);
}

/* The blocks of every listed item's extents (format.md, extent40). */
static int pin_extents(struct rb *b)
{
	return rb_extents(b, pin_unit, NULL);
}

/* Whatever the rebuilt or mended tree keeps, pinned before its
 * transaction: the allocator avoids only blocks the bitmap marks used
 * or a read pinned (tree.c), and the bitmap may call live ones free
 * (its pass runs after this one), while the tree writer reads only the
 * paths it changes and the scan's nodes are read by no one. So: every
 * walked node and each child its pointers name (dead leaves too: until
 * the commit the old tree points there), the blocks of every listed
 * item's extents (format.md, extent40), and the nodes in old (those
 * the commit frees). Read errors leave a node to its pins so far. */
int rb_pin_kept(struct rb *b, const struct chk_map *old)
{
	struct chk *c = &b->R->c;
	int rc;

	chk_map_fini(&b->pinned);
	rc = chk_map_init(&b->pinned, c->blocks, c->used.chunk_bits);
	for (uint64_t blk = chk_map_next(&b->walked, c->first_usable);
	     blk < c->blocks && !rc; blk = chk_map_next(&b->walked, blk + 1)) {
		struct fmt_node_header nh;

		rc = pin_node(b, blk);
		if (rc || vol_read_block(c->vol, blk, b->buf, "tree node",
					 NULL) ||
		    fmt_node_header_decode(b->buf, c->bs, &nh))
			continue;
		for (unsigned k = 0; k < nh.nr_items && !rc; k++) {
			struct fmt_item_header ih;
			size_t off, len;

			if (!fmt_node_ih_decode(b->buf, c->bs, c->pol, k,
						&ih) &&
			    ih.plugin_id == FMT_ITEM_NODEPTR40 &&
			    !fmt_node_item_body(b->buf, c->bs, c->pol, k, &off,
						&len) && len >= 8)
				rc = pin_node(b, get_le64(b->buf + off));
		}
	}
	if (!rc)
		rc = pin_extents(b);
	for (uint64_t blk = chk_map_next(old, 0); blk < old->nbits && !rc;
	     blk = chk_map_next(old, blk + 1))
		rc = pin_in(b, blk, 1);
	return rc ? -ENOMEM : 0;
}

int rb_unpin_gone(struct rb *b, int fresh)
{
	/* After a mend the walked nodes stay pinned: the mended tree is
	 * made of them, and the bitmap in memory may still call them free
	 * until the space pass after the rebuild mends it (a commit before
	 * that could take them for its journal) */
	for (uint64_t blk = chk_map_next(&b->pinned, 0);
	     blk < b->pinned.nbits; blk = chk_map_next(&b->pinned, blk + 1))
		if (fresh || !chk_map_test(&b->walked, blk))
			space_unpin(&b->R->vol->space, blk, 1);
	chk_map_fini(&b->pinned);
	/* a block both a node and an extent's (hostile) stays pinned */
	return pin_extents(b) ? -ENOMEM : 0;
}

/* The transaction: dead pointers cut, the other items put in, the
 * scanned nodes freed. */
static int mend_tx(struct rb *b, const struct chk_map *old,
		   struct r4_error *err)
{
	struct r4_txn *x;
	struct rb_iter it;
	const struct ritem *p;
	int rc = r4_txn_begin(b->R->vol, &x, err);

	if (rc)
		return rc;
	for (size_t k = 0; k < b->ndead && !rc; k++)
		rc = tree_delete(&x->mod, FMT_NODE_TWIG_LEVEL, &b->dead[k],
				 err);
	if (!rc)
		rc = rb_iter_start(b, &it);
	else
		it.body = NULL;
	while (!rc && (rc = rb_iter_next(&it, &p)) == 1) {
		rc = 0;
		if (p->blk && chk_map_test(&b->walked, p->blk))
			continue;
		rc = tree_insert(&x->mod, p->pid == FMT_ITEM_EXTENT40 ? 2 : 1,
				 &p->key, p->pid, p->body, p->len, err);
		if (rc == R4_EEXIST) {
			b->items_dropped++;	/* as the new tree would */
			rc = 0;
		} else if (!rc) {
			b->put_back++;
		}
	}
	rb_iter_end(&it);
	for (uint64_t blk = chk_map_next(old, 0); blk < old->nbits && !rc;
	     blk = chk_map_next(old, blk + 1))
		rc = txn_free(x->t, blk, 1, err);
	if (!rc)
		rc = rb_log_room(b->R->vol, err);
	if (rc) {
		r4_txn_abort(x);
		return rc;
	}
	return r4_txn_commit(x, err);
}

int rb_mend_in_place(struct rb *b, struct r4_error *err)
{
	struct chk_map old = { 0 };
	size_t nold = 0;
	int rc = mendable(b);

	if (rc <= 0)
		return rc < 0 ? rc : 1;
	rc = rb_old_nodes(b, 0, &old, &nold);
	if (!rc)
		rc = rb_pin_kept(b, &old);
	if (!rc)
		rc = mend_tx(b, &old, err);
	chk_map_fini(&old);
	if (!rc) {
		b->R->r->transactions++;
		b->freed = nold;
		b->in_place = 1;
		b->committed = 1;
		rc = rb_unpin_gone(b, 0);
		if (rc)
			rc = r4i_fail(err, rc, "out of memory for the tree "
				      "rebuild");
	}
	return rc;
}
