/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: tree search, the item cursor and the tree walk. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tree/tree.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "r4/util.h"
#include "format/node.h"
#include "format/plugin.h"
#include "format/item.h"
#include "format/endian.h"

static const char *devpath(const struct r4_vol *vol)
{
	return vol->dev && vol->dev->path ? vol->dev->path : "volume";
}

/* A writable volume's allocator must never hand out a block the tree
 * uses, even where a damaged bitmap calls it free: pin the node, the
 * children its pointers name and the blocks its extents hold, once per
 * verification of its bytes. */
static int pin_refs(struct r4_vol *vol, uint64_t blk, const uint8_t *node,
		    struct r4_error *err)
{
	unsigned nr = tree_node_nr(node);
	int rc = space_pin(&vol->space, blk, 1);

	for (unsigned i = 0; i < nr && !rc; i++) {
		struct tree_item it;

		rc = tree_node_item(vol, node, blk, i, &it, err);
		if (rc)
			return rc;
		if (it.plugin_id == FMT_ITEM_NODEPTR40 &&
		    it.len >= FMT_NODEPTR40_SIZE) {
			rc = space_pin(&vol->space, get_le64(it.body), 1);
		} else if (it.plugin_id == FMT_ITEM_EXTENT40) {
			int n = fmt_extent40_units(it.body, it.len);

			for (int u = 0; u < n && !rc; u++) {
				struct fmt_extent40_unit x;

				fmt_extent40_unit_decode(it.body + (size_t)u *
							 FMT_EXTENT40_UNIT_SIZE,
							 &x);
				if (fmt_extent40_kind(&x) ==
				    FMT_EXTENT_ALLOCATED)
					rc = space_pin(&vol->space, x.start,
						       x.width);
			}
		}
	}
	if (rc)
		return r4i_fail(err, rc, "%s: out of memory", devpath(vol));
	return 0;
}

int tree_node_get(struct r4_vol *vol, uint64_t blk, unsigned level,
		  struct io_block **out, struct r4_error *err)
{
	struct io_block *b;
	const char *why;
	int bad = -1, rc;

	if (blk < fmt_blk_first_usable(vol->blksize) ||
	    blk >= vol->sb.block_count)
		return r4i_fail(err, R4_ERANGE, "%s: tree node %llu (level %u) "
			       "is outside the usable blocks [%llu, %llu)",
			       devpath(vol), (unsigned long long)blk, level,
			       (unsigned long long)fmt_blk_first_usable(
				       vol->blksize),
			       (unsigned long long)vol->sb.block_count);
	if (vol->node_sync &&
	    (rc = vol->node_sync(vol->node_sync_ctx, blk, err)))
		return rc;
	rc = io_cache_get(&vol->cache, blk, &b, err);
	if (rc)
		return rc;
	/* A clean node verified once stays verified until its bytes may
	 * change. A dirty node (being built by a transaction) is verified
	 * at every read, unless the tree's node writer verified it when
	 * it wrote it (emit in modify.c) and nobody captured it since
	 * (capturing clears the mark: libimage/txn). */
	why = b->verified ? NULL :
	      fmt_node_verify(b->data, vol->blksize, vol->keypol, &bad);
	if (why) {
		io_cache_put(&vol->cache, b);
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu (level "
			       "%u): %s (item %d)", devpath(vol),
			       (unsigned long long)blk, level, why, bad);
	}
	if (b->data[FMT_NODE_OFF_LEVEL] != level) {
		unsigned got = b->data[FMT_NODE_OFF_LEVEL];

		io_cache_put(&vol->cache, b);
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: level "
			       "%u, expected %u from its parent",
			       devpath(vol), (unsigned long long)blk, got,
			       level);
	}
	if (!b->dirty && !b->verified && !vol->dev->readonly) {
		rc = pin_refs(vol, blk, b->data, err);
		if (rc) {
			io_cache_put(&vol->cache, b);
			return rc;
		}
	}
	if (!b->dirty)
		b->verified = 1;
	*out = b;
	return 0;
}

unsigned tree_node_nr(const uint8_t *node)
{
	return get_le16(node + FMT_NODE_OFF_NR_ITEMS);
}

int tree_node_item(struct r4_vol *vol, const uint8_t *node, uint64_t blk,
		   unsigned i, struct tree_item *it, struct r4_error *err)
{
	struct fmt_item_header ih;
	int rc;

	rc = fmt_node_ih_decode(node, vol->blksize, vol->keypol, i, &ih);
	if (!rc)
		rc = fmt_node_item_body(node, vol->blksize, vol->keypol, i,
					&it->off, &it->len);
	if (rc)
		return r4i_fail(err, rc, "%s: tree node %llu, item %u: bad "
			       "item header or body: %s", devpath(vol),
			       (unsigned long long)blk, i, r4_strerror(rc));
	it->blk = blk;
	it->level = node[FMT_NODE_OFF_LEVEL];
	it->pos = i;
	it->plugin_id = ih.plugin_id;
	it->key = ih.key;
	it->body = node + it->off;
	return 0;
}

/* ---- cursor ------------------------------------------------------------ */

void tree_cursor_init(struct tree_cursor *c, struct r4_vol *vol)
{
	memset(c, 0, sizeof(*c));
	c->vol = vol;
	c->height = vol->sb.tree_height;
}

static void level_put(struct tree_cursor *c, unsigned l)
{
	if (c->lv[l].b)
		io_cache_put(&c->vol->cache, c->lv[l].b);
	c->lv[l].b = NULL;
}

void tree_cursor_fini(struct tree_cursor *c)
{
	for (unsigned l = 0; l <= FMT_TREE_HEIGHT_MAX; l++)
		level_put(c, l);
	c->stop = 0;
}

static int level_load(struct tree_cursor *c, unsigned l, uint64_t blk,
		      struct r4_error *err)
{
	int rc;

	level_put(c, l);
	rc = tree_node_get(c->vol, blk, l, &c->lv[l].b, err);
	if (rc)
		return rc;
	c->lv[l].blk = blk;
	c->lv[l].nr = tree_node_nr(c->lv[l].b->data);
	c->lv[l].pos = 0;
	return 0;
}

static int item_at(struct tree_cursor *c, unsigned l, struct tree_item *it,
		   struct r4_error *err)
{
	return tree_node_item(c->vol, c->lv[l].b->data, c->lv[l].blk,
			      (unsigned)c->lv[l].pos, it, err);
}

/* Item (l, pos) is a nodeptr: load its child into level l - 1. */
static int enter_child(struct tree_cursor *c, unsigned l,
		       const struct tree_item *it, struct r4_error *err)
{
	uint64_t child;

	if (fmt_nodeptr40_decode(it->body, it->len, &child))
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item "
			       "%u: nodeptr40 body is %zu bytes, not 8",
			       devpath(c->vol), (unsigned long long)it->blk,
			       it->pos, it->len);
	return level_load(c, l - 1, child, err);
}

/* Is the item at (l, pos) one the cursor stops at? 1 yes, 0 it is a
 * nodeptr to descend, < 0 error. */
static int stops_here(struct tree_cursor *c, unsigned l,
		      const struct tree_item *it, struct r4_error *err)
{
	if (l == FMT_NODE_LEAF_LEVEL)
		return 1;
	if (it->plugin_id == FMT_ITEM_NODEPTR40)
		return 0;
	if (l == FMT_NODE_TWIG_LEVEL && it->plugin_id == FMT_ITEM_EXTENT40)
		return 1;
	return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item %u: "
		       "item plugin %u does not belong at level %u",
		       devpath(c->vol), (unsigned long long)it->blk, it->pos,
		       it->plugin_id, l);
}

/* Check the key order of a step and remember the new key. */
static int step_key(struct tree_cursor *c, const struct tree_item *it,
		    int dir, int same_node, struct r4_error *err)
{
	int cmp = fmt_key_cmp(&it->key, &c->last);
	char a[FMT_KEY_STR_MAX], b[FMT_KEY_STR_MAX];

	if (c->stop && ((dir > 0 && (cmp < 0 || (!same_node && cmp == 0))) ||
			(dir < 0 && (cmp > 0 || (!same_node && cmp == 0))))) {
		fmt_key_str(&it->key, a, sizeof(a));
		fmt_key_str(&c->last, b, sizeof(b));
		return r4i_fail(err, R4_ELOOP, "%s: tree node %llu, item %u: "
			       "key [%s] is out of order after [%s] (a block "
			       "linked twice?)", devpath(c->vol),
			       (unsigned long long)it->blk, it->pos, a, b);
	}
	c->last = it->key;
	return 0;
}

/* Settle forward from level l whose pos may be past its end: find the
 * next item in key order. dir = +1 forward, -1 backward. */
static int settle(struct tree_cursor *c, unsigned l, int dir,
		  uint64_t from_blk, struct r4_error *err)
{
	struct tree_item it;
	int rc;

	for (;;) {
		struct tree_level *lv = &c->lv[l];

		if (lv->pos < 0 || (unsigned)lv->pos >= lv->nr) {
			level_put(c, l);
			if (l >= c->height) {
				tree_cursor_fini(c);
				return R4_ENOTFOUND;
			}
			l++;
			c->lv[l].pos += dir;
			continue;
		}
		rc = item_at(c, l, &it, err);
		if (rc < 0)
			goto fail;
		rc = stops_here(c, l, &it, err);
		if (rc < 0)
			goto fail;
		if (rc) {
			rc = step_key(c, &it, dir, it.blk == from_blk, err);
			if (rc)
				goto fail;
			c->stop = l;
			return 0;
		}
		rc = enter_child(c, l, &it, err);
		if (rc)
			goto fail;
		l--;
		c->lv[l].pos = dir > 0 ? 0 : (int)c->lv[l].nr - 1;
	}
fail:
	tree_cursor_fini(c);
	return rc;
}

int tree_next(struct tree_cursor *c, struct r4_error *err)
{
	unsigned l = c->stop;

	if (!l)
		return R4_ENOTFOUND;
	c->lv[l].pos++;
	return settle(c, l, 1, c->lv[l].blk, err);
}

int tree_prev(struct tree_cursor *c, struct r4_error *err)
{
	unsigned l = c->stop;

	if (!l)
		return R4_ENOTFOUND;
	c->lv[l].pos--;
	return settle(c, l, -1, c->lv[l].blk, err);
}

int tree_cur(struct tree_cursor *c, struct tree_item *it,
	     struct r4_error *err)
{
	if (!c->stop)
		return r4i_fail(err, R4_EINVAL, "tree cursor has no item");
	return item_at(c, c->stop, it, err);
}

/* Index of the last item of level l's node with key <= key, or -1. */
static int node_find_le(struct tree_cursor *c, unsigned l,
			const struct fmt_key *key, struct r4_error *err)
{
	struct fmt_item_header ih;
	const uint8_t *node = c->lv[l].b->data;
	int lo = 0, hi = (int)c->lv[l].nr - 1, ans = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (fmt_node_ih_decode(node, c->vol->blksize, c->vol->keypol,
				       (unsigned)mid, &ih))
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: "
				       "item header %d unreadable",
				       devpath(c->vol),
				       (unsigned long long)c->lv[l].blk, mid);
		if (fmt_key_cmp(&ih.key, key) <= 0) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

/* A volume whose tree cannot change under this handle: read-only, no
 * transaction, no deferred node writes. */
static int tree_fixed(const struct r4_vol *vol)
{
	return vol->dev->readonly && !vol->txn && !vol->node_sync;
}

/* The hint leads to key: same tree, key in [lo, hi). */
static int hint_leads(const struct tree_cursor *c, const struct fmt_key *key)
{
	const struct tree_hint *h = &c->vol->hint;

	return h->valid && h->height == c->height &&
	       h->root == c->vol->sb.root_block && tree_fixed(c->vol) &&
	       fmt_key_cmp(&h->lo, key) <= 0 &&
	       (!h->has_hi || fmt_key_cmp(key, &h->hi) < 0);
}

/* Level l's item pos was taken towards a key (pos >= 0, a nodeptr):
 * narrow the hint's bounds to the keys that take it too. */
static int hint_narrow(struct tree_cursor *c, unsigned l,
		       const struct tree_item *it, struct r4_error *err)
{
	struct tree_hint *h = &c->vol->hint;
	struct fmt_item_header ih;

	h->blk[l] = c->lv[l].blk;
	h->pos[l] = c->lv[l].pos;
	if (l == c->height || fmt_key_cmp(&it->key, &h->lo) > 0)
		h->lo = it->key;
	if ((unsigned)c->lv[l].pos + 1 >= c->lv[l].nr)
		return 0;
	if (fmt_node_ih_decode(c->lv[l].b->data, c->vol->blksize,
			       c->vol->keypol, (unsigned)c->lv[l].pos + 1, &ih))
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: item "
			       "header %d unreadable", devpath(c->vol),
			       (unsigned long long)c->lv[l].blk,
			       c->lv[l].pos + 1);
	if (!h->has_hi || fmt_key_cmp(&ih.key, &h->hi) < 0)
		h->hi = ih.key;
	h->has_hi = 1;
	return 0;
}

/* The path of the hint, down to the leaf, then the leaf's last item <=
 * key: what descend would find, without searching the nodes above. */
static int descend_hinted(struct tree_cursor *c, const struct fmt_key *key,
			  struct r4_error *err)
{
	const struct tree_hint *h = &c->vol->hint;
	unsigned l;
	int rc, pos;

	for (l = c->height; l >= FMT_NODE_LEAF_LEVEL; l--) {
		rc = level_load(c, l, h->blk[l], err);
		if (rc)
			return rc;
		c->lv[l].pos = h->pos[l];
	}
	pos = node_find_le(c, FMT_NODE_LEAF_LEVEL, key, err);
	if (pos < -1)
		return pos;
	c->lv[FMT_NODE_LEAF_LEVEL].pos = pos;
	c->stop = FMT_NODE_LEAF_LEVEL;
	return 0;
}

/* Descend towards key. On return c->stop is the level reached and its
 * pos the last item <= key there, or -1 when the node's items are all
 * greater. On a tree that cannot change, a descent that reached a leaf
 * through items <= key at every level leaves its path as the hint. */
static int descend(struct tree_cursor *c, const struct fmt_key *key,
		   struct r4_error *err)
{
	struct tree_hint *h = &c->vol->hint;
	struct tree_item it;
	unsigned l = c->height;
	int rc, pos, hint = tree_fixed(c->vol);

	tree_cursor_fini(c);
	if (l < FMT_TREE_HEIGHT_MIN || l > FMT_TREE_HEIGHT_MAX)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree height %u is not "
			       "in %u..%u", devpath(c->vol), l,
			       FMT_TREE_HEIGHT_MIN, FMT_TREE_HEIGHT_MAX);
	if (hint_leads(c, key)) {
		h->hits++;
		return descend_hinted(c, key, err);
	}
	h->valid = 0;
	h->has_hi = 0;
	rc = level_load(c, l, c->vol->sb.root_block, err);
	for (; !rc; l--) {
		pos = node_find_le(c, l, key, err);
		if (pos < -1)
			return pos;
		c->lv[l].pos = pos;
		c->stop = l;
		if (l == FMT_NODE_LEAF_LEVEL) {
			h->blk[l] = c->lv[l].blk;
			h->valid = hint;
			h->height = c->height;
			h->root = c->vol->sb.root_block;
			return 0;
		}
		if (pos < 0) {
			hint = 0;
			if (c->lv[l].nr == 0)
				return 0;
			c->lv[l].pos = 0;
		}
		rc = item_at(c, l, &it, err);
		if (!rc)
			rc = stops_here(c, l, &it, err);
		if (rc > 0) {
			c->lv[l].pos = pos;
			return 0;
		}
		if (!rc && hint)
			rc = hint_narrow(c, l, &it, err);
		if (!rc)
			rc = enter_child(c, l, &it, err);
	}
	return rc;
}

int tree_seek_le(struct tree_cursor *c, const struct fmt_key *key,
		 struct r4_error *err)
{
	struct tree_item it;
	unsigned l;
	int rc = descend(c, key, err);

	if (rc)
		goto fail;
	l = c->stop;
	if (c->lv[l].pos >= 0) {
		rc = item_at(c, l, &it, err);
		if (rc)
			goto fail;
		c->last = it.key;
		return 0;
	}
	c->stop = 0;	/* no key order to check against yet */
	c->lv[l].pos--;
	return settle(c, l, -1, c->lv[l].blk, err);
fail:
	tree_cursor_fini(c);
	return rc;
}

int tree_seek_ge(struct tree_cursor *c, const struct fmt_key *key,
		 struct r4_error *err)
{
	struct tree_item it;
	unsigned l;
	int rc = descend(c, key, err);

	if (rc)
		goto fail;
	l = c->stop;
	if (c->lv[l].pos >= 0) {
		rc = item_at(c, l, &it, err);
		if (rc)
			goto fail;
		c->last = it.key;
		if (fmt_key_cmp(&it.key, key) == 0)
			return 0;
	} else {
		c->stop = 0;
	}
	c->lv[l].pos++;
	return settle(c, l, 1, c->lv[l].blk, err);
fail:
	tree_cursor_fini(c);
	return rc;
}

/* ---- walk ---------------------------------------------------------------- */

struct walk {
	struct r4_vol *vol;
	tree_node_fn fn;
	void *ctx;
	struct r4_u64map seen;	/* blocks walked */
};

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     struct r4_error *err)
{
	struct io_block *b;
	struct tree_item it;
	unsigned i, nr;
	int rc;

	rc = r4_u64set_add(&w->seen, blk);
	if (rc < 0)
		return r4i_fail(err, rc, "out of memory walking the tree");
	if (rc)
		return r4i_fail(err, R4_ELOOP, "%s: tree node %llu (level %u) "
			       "is reached twice", devpath(w->vol),
			       (unsigned long long)blk, level);
	rc = tree_node_get(w->vol, blk, level, &b, err);
	if (rc)
		return rc;
	rc = w->fn(w->ctx, blk, level, b->data);
	nr = tree_node_nr(b->data);
	for (i = 0; !rc && level > FMT_NODE_LEAF_LEVEL && i < nr; i++) {
		uint64_t child;

		rc = tree_node_item(w->vol, b->data, blk, i, &it, err);
		if (rc || it.plugin_id != FMT_ITEM_NODEPTR40)
			continue;
		if (fmt_nodeptr40_decode(it.body, it.len, &child))
			rc = r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				     "item %u: bad nodeptr40", devpath(w->vol),
				     (unsigned long long)blk, i);
		else
			rc = walk_node(w, child, level - 1, err);
	}
	io_cache_put(&w->vol->cache, b);
	return rc;
}

int tree_walk(struct r4_vol *vol, tree_node_fn fn, void *ctx,
	      struct r4_error *err)
{
	struct walk w = { .vol = vol, .fn = fn, .ctx = ctx };
	unsigned h = vol->sb.tree_height;
	int rc;

	r4_u64map_init(&w.seen, 0);
	if (h < FMT_TREE_HEIGHT_MIN || h > FMT_TREE_HEIGHT_MAX)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree height %u is not "
			       "in %u..%u", devpath(vol), h,
			       FMT_TREE_HEIGHT_MIN, FMT_TREE_HEIGHT_MAX);
	rc = walk_node(&w, vol->sb.root_block, h, err);
	r4_u64map_fini(&w.seen);
	return rc;
}
