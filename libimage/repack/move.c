/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: one repack batch, one transaction.
 *
 * From the first element of the window not at its place (the
 * frontier), in target order: an element whose target blocks are all free moves there; else
 * the elements in the way move, to their own targets when those are
 * free, else, for the elements whose targets are in the window (the
 * next 2 batches' worth of blocks from the frontier), out of the way:
 * past the end of the target layout when there is room, else past the
 * window. Past the window only moves into place are made. A block
 * freed by the batch stays in use until its commit, so it is filled by
 * a later batch, never by this one.
 *
 * A move: the node's bytes (or the extent's data) are written to the
 * new blocks (relocate set), the old ones are freed, and the one
 * pointer to them (a node pointer or an extent unit's start, in the
 * parent node) is changed in place: the parent is captured (overwrite
 * set) or, when the batch moved it already, changed in its new block.
 * The root's move changes the super block.
 *
 * An extent unit wider than a batch (or than the distance it slides
 * left) moves a piece at a time: the batch moves its first blocks and
 * cuts the unit in two; the extent item grows by one unit through the
 * tree layer (tree_replace: the twig and the nodes above it are written
 * copy-on-write), which is why such a batch does that alone. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/repack/repack_int.h"
#include "libimage/tree/tree.h"
#include "libimage/tree/modify.h"
#include "libimage/txn/txn.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "format/endian.h"
#include "format/node.h"
#include "format/item.h"
#include "format/plugin.h"

#define COPY_BLOCKS 256

struct bctx {
	struct rp_model *m;
	struct r4_vol *vol;
	struct txn *t;
	uint8_t *buf;
	uint64_t lo, hi;	/* the window of targets this batch fills */
	struct rp_batch_stats *st;
	int64_t *occ;
	size_t nocc, capocc;
	uint64_t fix_from, fix;	/* rp_next_fixed(b) == fix for every b in
				 * [fix_from, fix] (none when fix_from >
				 * fix) */
};

/* rp_next_fixed(at), the last answer kept: the range tests of a batch
 * ask about nearby blocks. */
static uint64_t next_fixed(struct bctx *c, uint64_t at)
{
	if (at < c->fix_from || at > c->fix) {
		c->fix = rp_next_fixed(c->m, at);
		c->fix_from = at;
	}
	return c->fix;
}

/* Whether every block of [at, at + w) is free: 1, 0, or an error; on 0
 * *bad is the first block of it that is not (in use or fixed), or the
 * volume's block count when the range passes its end. */
static int range_free_at(struct bctx *c, uint64_t at, uint64_t w,
			 uint64_t *bad, struct r4_error *err)
{
	uint64_t fixed;

	*bad = c->vol->sb.block_count;
	if (at + w > c->vol->sb.block_count || at + w < at)
		return 0;
	fixed = next_fixed(c, at);
	for (uint64_t k = 0; k < w; k++) {
		int rc;

		*bad = at + k;
		if (at + k == fixed)
			return 0;
		rc = space_test(&c->vol->space, at + k, err);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return 1;
}

static int range_free(struct bctx *c, uint64_t at, uint64_t w,
		      struct r4_error *err)
{
	uint64_t bad;

	return range_free_at(c, at, w, &bad, err);
}

static int patch_parent(struct bctx *c, const struct rp_el *e, uint64_t dst,
			struct r4_error *err)
{
	struct io_block *b;
	uint64_t pb;
	int rc;

	if (e->parent == -1) {
		txn_set_root(c->t, dst, (uint16_t)c->m->height);
		return 0;
	}
	pb = rp_parent_blk(c->m, e);
	if (e->off + 8 > c->vol->blksize)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: pointer "
			       "at byte %u", c->vol->dev->path,
			       (unsigned long long)pb, e->off);
	rc = txn_capture(c->t, pb, &b, err);
	if (rc)
		return rc;
	put_le64(b->data + e->off, dst);
	fmt_node_stamp(b->data, c->vol->blksize);
	txn_put(c->t, b);
	return 0;
}

static int copy_node(struct bctx *c, const struct rp_el *e, uint64_t dst,
		     struct r4_error *err)
{
	struct io_block *from, *to;
	int rc = tree_node_get(c->vol, e->cur, e->level, &from, err);

	if (rc)
		return rc;
	rc = txn_new_raw(c->t, dst, &to, err);
	if (!rc) {
		memcpy(to->data, from->data, c->vol->blksize);
		txn_put(c->t, to);
	}
	io_cache_put(&c->vol->cache, from);
	return rc;
}

static int copy_data(struct bctx *c, const struct rp_el *e, uint64_t dst,
		     struct r4_error *err)
{
	uint32_t bs = c->vol->blksize;

	for (uint64_t i = 0; i < e->w; i += COPY_BLOCKS) {
		uint64_t k = e->w - i < COPY_BLOCKS ? e->w - i : COPY_BLOCKS;
		int rc = io_read(c->vol->dev, c->buf, (size_t)(k * bs),
				 (e->cur + i) * bs, err);

		if (!rc)
			rc = txn_write_data(c->t, dst + i, c->buf, (size_t)k,
					    err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Move element i to [dst, dst + w), which range_free() said is free. */
static int move_el(struct bctx *c, size_t i, uint64_t dst,
		   struct r4_error *err)
{
	struct rp_el *e = &c->m->el[i];
	uint64_t s, got;
	int rc = txn_alloc_run(c->t, dst, e->w, &s, &got, err);

	if (!rc && (s != dst || got != e->w))
		return r4i_fail(err, R4_EINVAL, "%s: blocks %llu+%llu are not "
			       "free as expected", c->vol->dev->path,
			       (unsigned long long)dst,
			       (unsigned long long)e->w);
	if (!rc)
		rc = e->level ? copy_node(c, e, dst, err) :
				copy_data(c, e, dst, err);
	if (!rc)
		rc = txn_free(c->t, e->cur, e->w, err);
	if (!rc)
		rc = patch_parent(c, e, dst, err);
	if (rc)
		return rc;
	e->cur = dst;
	rp_model_moved(c->m, i);
	c->st->moved += e->w;
	return 0;
}

/* The extent item holding element e's unit, its first k blocks moved to
 * dst: a copy of the item's body with the unit cut in two, or (*merge)
 * with the first part added to the unit before it when that one ends
 * right at dst (same size: changed in place). */
struct cut {
	struct fmt_key key;
	uint8_t *body;
	size_t len, off;	/* new body length, item body offset */
	int merge;
};

static void put_unit(uint8_t *p, uint64_t start, uint64_t width)
{
	struct fmt_extent40_unit u = { start, width };

	fmt_extent40_unit_encode(&u, p);
}

static int cut_item(const struct rp_el *e, const struct tree_item *it,
		    uint64_t k, uint64_t dst, struct cut *x)
{
	size_t u = e->off - it->off, us = FMT_EXTENT40_UNIT_SIZE;
	struct fmt_extent40_unit prev = { 0, 0 };

	if (u >= us)
		fmt_extent40_unit_decode(it->body + u - us, &prev);
	x->key = it->key;
	x->off = it->off;
	x->merge = u >= us && prev.start >= 2 && prev.start + prev.width == dst;
	x->len = it->len + (x->merge ? 0 : us);
	x->body = malloc(x->len);
	if (!x->body)
		return -ENOMEM;
	memcpy(x->body, it->body, u);
	if (x->merge) {
		put_unit(x->body + u - us, prev.start, prev.width + k);
		put_unit(x->body + u, e->cur + k, e->w - k);
		memcpy(x->body + u + us, it->body + u + us, it->len - u - us);
		return 0;
	}
	put_unit(x->body + u, dst, k);
	put_unit(x->body + u + us, e->cur + k, e->w - k);
	memcpy(x->body + u + 2 * us, it->body + u + us, it->len - u - us);
	return 0;
}

static int cut_body(struct bctx *c, const struct rp_el *e, uint64_t k,
		    uint64_t dst, struct cut *x, struct r4_error *err)
{
	uint64_t twig = rp_parent_blk(c->m, e);
	struct io_block *b;
	unsigned nr;
	int rc = tree_node_get(c->vol, twig, FMT_NODE_TWIG_LEVEL, &b, err);

	if (rc)
		return rc;
	nr = tree_node_nr(b->data);
	rc = R4_ENOTFOUND;
	for (unsigned i = 0; rc == R4_ENOTFOUND && i < nr; i++) {
		struct tree_item it;

		rc = tree_node_item(c->vol, b->data, twig, i, &it, err);
		if (rc)
			break;
		rc = R4_ENOTFOUND;
		if (it.plugin_id == FMT_ITEM_EXTENT40 && e->off >= it.off &&
		    e->off < it.off + it.len)
			rc = cut_item(e, &it, k, dst, x);
	}
	io_cache_put(&c->vol->cache, b);
	if (rc == -ENOMEM)
		return r4i_fail(err, rc, "out of memory");
	if (rc == R4_ENOTFOUND)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: no "
			       "extent at byte %u", c->vol->dev->path,
			       (unsigned long long)twig, e->off);
	return rc;
}

/* The item with the cut: in place, or through the tree layer. */
static int put_cut(struct bctx *c, const struct rp_el *e,
		   const struct cut *x, struct r4_error *err)
{
	struct io_block *b;
	struct tree_mod tm;
	int rc;

	if (x->merge) {
		rc = txn_capture(c->t, rp_parent_blk(c->m, e), &b, err);
		if (rc)
			return rc;
		memcpy(b->data + x->off, x->body, x->len);
		fmt_node_stamp(b->data, c->vol->blksize);
		txn_put(c->t, b);
		return 0;
	}
	rc = tree_mod_init(&tm, c->vol, c->t, err);
	if (!rc)
		rc = tree_replace(&tm, FMT_NODE_TWIG_LEVEL, &x->key,
				  FMT_ITEM_EXTENT40, x->body, x->len, err);
	tree_mod_fini(&tm);
	return rc;
}

/* Move the first k blocks of unit i to dst: the first thing a batch
 * does (the tree is as committed), and the last. */
static int split_move(struct bctx *c, size_t i, uint64_t k, uint64_t dst,
		      struct r4_error *err)
{
	struct rp_el *e = &c->m->el[i], part = *e;
	struct cut x = { .body = NULL };
	uint64_t s, got;
	int rc = cut_body(c, e, k, dst, &x, err);

	c->m->stale = 1;	/* the units (and maybe the twigs) change */
	part.w = k;
	if (!rc)
		rc = txn_alloc_run(c->t, dst, k, &s, &got, err);
	if (!rc && (s != dst || got != k))
		rc = r4i_fail(err, R4_EINVAL, "%s: blocks %llu+%llu are not "
			     "free as expected", c->vol->dev->path,
			     (unsigned long long)dst, (unsigned long long)k);
	if (!rc)
		rc = copy_data(c, &part, dst, err);
	if (!rc)
		rc = txn_free(c->t, e->cur, k, err);
	if (!rc)
		rc = put_cut(c, e, &x, err);
	free(x.body);
	if (!rc)
		c->st->moved += k;
	return rc;
}

/* First run of w free blocks at or after from, outside [lo, hi). */
static int find_run(struct bctx *c, uint64_t from, uint64_t w, uint64_t *out,
		    struct r4_error *err)
{
	uint64_t b = from, f, bad;

	for (;;) {
		int rc = space_find_free(&c->vol->space, b, &f, err), ok;

		if (rc == R4_ENOSPC) {
			r4i_error_clear(err);
			return 0;
		}
		if (rc)
			return rc;
		if (f < c->hi && f + w > c->lo) {
			b = c->hi;
			continue;
		}
		ok = range_free_at(c, f, w, &bad, err);
		if (ok < 0)
			return ok;
		if (ok) {
			*out = f;
			return 1;
		}
		/* no run starting at f .. bad holds bad (or fits) */
		if (bad >= c->vol->sb.block_count)
			return 0;
		b = bad + 1;
	}
}

/* The longest run of free blocks outside the window, up to want. */
static int longest_run(struct bctx *c, uint64_t want, uint64_t *dst,
		       uint64_t *len, struct r4_error *err)
{
	uint64_t starts[2] = { c->hi, fmt_blk_first_usable(c->vol->blksize) };

	*len = 0;
	for (int s = 0; s < 2; s++) {
		uint64_t b = starts[s], f;

		for (;;) {
			uint64_t n = 0;
			int rc = space_find_free(&c->vol->space, b, &f, err);

			if (rc == R4_ENOSPC) {
				r4i_error_clear(err);
				break;
			}
			if (rc)
				return rc;
			if (f >= c->lo && f < c->hi) {
				b = c->hi;
				continue;
			}
			while (n < want && (f + n < c->lo || f + n >= c->hi) &&
			       (rc = range_free(c, f + n, 1, err)) > 0)
				n++;
			if (rc < 0)
				return rc;
			if (n > *len) {
				*len = n;
				*dst = f;
			}
			if (n >= want)
				return 0;
			b = f + n + 1;
		}
	}
	return 0;
}

/* Move element x out of the way of the window: to its own place when
 * that is free, else (far != 0) to free blocks away from the window; a
 * unit that no free run takes whole moves its first blocks into the
 * longest one, as the first and only thing of a batch (*stop). */
static int evict(struct bctx *c, size_t x, int far, int *stop,
		 struct r4_error *err)
{
	struct rp_el *e = &c->m->el[x];
	uint64_t dst = 0, len;
	int rc = range_free(c, e->tgt, e->w, err);

	if (rc > 0)
		return move_el(c, x, e->tgt, err);
	if (rc < 0 || !far)
		return rc;
	/* past the layout's end, else past its own target: nothing there
	 * is filled before its own place is, so it moves once more, into
	 * place (a place short of its target is in the way again) */
	rc = find_run(c, c->m->end > c->hi ? c->m->end : c->hi, e->w, &dst,
		      err);
	if (!rc && e->tgt + e->w > c->hi)
		rc = find_run(c, e->tgt + e->w, e->w, &dst, err);
	if (!rc)
		rc = find_run(c, c->hi, e->w, &dst, err);
	if (!rc)
		rc = find_run(c, fmt_blk_first_usable(c->vol->blksize), e->w,
			      &dst, err);
	if (rc > 0) {
		rc = move_el(c, x, dst, err);
		if (!rc)
			c->st->evicted += e->w;
		return rc;
	}
	if (rc < 0)
		return rc;
	*stop = 1;
	if (!e->level && !c->st->moved) {
		rc = longest_run(c, e->w, &dst, &len, err);
		if (!rc && len) {
			rc = split_move(c, x, len, dst, err);
			if (!rc)
				c->st->evicted += len;
			return rc;
		}
		if (rc)
			return rc;
	}
	if (c->st->moved)
		return 0;
	return r4i_fail(err, R4_ENOSPC, "%s: no free block left to move "
		       "blocks %llu+%llu out of the way", c->vol->dev->path,
		       (unsigned long long)e->cur, (unsigned long long)e->w);
}

/* The elements on [at, at + w) now: *unknown when a block there is in
 * use by none of them (freed or taken by this batch, or lost). */
static int occupants(struct bctx *c, uint64_t at, uint64_t w, int *unknown,
		     struct r4_error *err)
{
	c->nocc = 0;
	*unknown = 0;
	for (uint64_t b = at; b < at + w; b++) {
		int64_t x;
		int rc = space_test(&c->vol->space, b, err);

		if (rc < 0)
			return rc;
		if (!rc)
			continue;
		x = rp_owner(c->m, b);
		if (x < 0 || c->m->el[x].cur > b ||
		    b >= c->m->el[x].cur + c->m->el[x].w) {
			*unknown = 1;
			return 0;
		}
		if (R4_RESERVE(c->occ, c->capocc, c->nocc + 1, 16))
			return r4i_fail(err, -ENOMEM, "out of memory");
		c->occ[c->nocc++] = x;
		b = c->m->el[x].cur + c->m->el[x].w - 1;
	}
	return 0;
}

/* One element: into place, or what is in its way out of it. *stop when
 * the budget does not allow it. */
static int step(struct bctx *c, size_t i, uint64_t batch, int *stop,
		struct r4_error *err)
{
	struct rp_el *e = &c->m->el[i];
	uint64_t k = e->w;
	int unknown, rc;

	if (!e->level && e->w > batch - c->st->moved) {
		if (c->st->moved) {
			*stop = 1;
			return 0;
		}
		k = batch;
		if (e->cur > e->tgt && e->cur - e->tgt < k)
			k = e->cur - e->tgt;
	}
	rc = range_free(c, e->tgt, k, err);
	if (rc < 0)
		return rc;
	if (rc && k < e->w) {
		*stop = 1;
		return split_move(c, i, k, e->tgt, err);
	}
	if (rc) {
		if (c->st->moved && c->st->moved + e->w > batch) {
			*stop = 1;
			return 0;
		}
		return move_el(c, i, e->tgt, err);
	}
	rc = occupants(c, e->tgt, k, &unknown, err);
	if (rc || unknown)
		return rc;
	for (size_t j = 0; !rc && !*stop && j < c->nocc; j++) {
		struct rp_el *x = &c->m->el[c->occ[j]];

		if (c->st->moved && c->st->moved + x->w > batch) {
			*stop = 1;
			return 0;
		}
		rc = evict(c, (size_t)c->occ[j], e->tgt < c->hi, stop, err);
	}
	return rc;
}

/* The window's element whose target holds blk; -1 none. */
static int64_t tgt_owner(const struct rp_model *m, uint64_t blk)
{
	size_t lo = 0, hi = m->ntgt;

	while (lo < hi) {	/* first with tgt > blk */
		size_t mid = (lo + hi) / 2;

		if (m->el[mid].tgt <= blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || blk >= m->el[lo - 1].tgt + m->el[lo - 1].w)
		return -1;
	return (int64_t)(lo - 1);
}

/* Every element of the window whose whole target is free moves there,
 * in target order from the frontier, as the budget allows: a move into
 * place is a block's last, and the blocks it frees are (committed) the
 * targets of the next ones. Elements are moved whole here. */
static int fill_free(struct bctx *c, size_t f, uint64_t batch,
		     struct r4_error *err)
{
	struct rp_model *m = c->m;
	uint64_t from = m->el[f].tgt, blk;

	while (c->st->moved < batch) {
		int64_t i;
		struct rp_el *e;
		int rc = space_find_free(&c->vol->space, from, &blk, err);

		if (rc == R4_ENOSPC) {
			r4i_error_clear(err);
			return 0;
		}
		if (rc)
			return rc;
		if (blk >= m->hi)
			return 0;
		i = tgt_owner(m, blk);
		if (i < 0) {
			from = blk + 1;
			continue;
		}
		e = &m->el[i];
		from = e->tgt + e->w;
		if (e->cur == e->tgt || c->st->moved + e->w > batch)
			continue;
		rc = range_free(c, e->tgt, e->w, err);
		if (rc < 0)
			return rc;
		if (rc)
			rc = move_el(c, (size_t)i, e->tgt, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int run_batch(struct bctx *c, size_t f, uint64_t batch,
		     struct r4_error *err)
{
	struct rp_model *m = c->m;
	int stop = 0, rc = fill_free(c, f, batch, err);

	if (rc || c->st->moved >= batch / 2)
		return rc;
	for (size_t i = f; !rc && !stop && i < m->ntgt; i++) {
		if (m->el[i].cur == m->el[i].tgt)
			continue;
		if (c->st->moved >= batch)
			break;
		rc = step(c, i, batch, &stop, err);
	}
	if (!rc && !c->st->moved) {
		uint64_t b = m->el[f].tgt;

		rc = r4i_fail(err, R4_ECORRUPT, "%s: cannot make room at block "
			     "%llu: a block there is in use, but no node or "
			     "extent points at it (check the volume with "
			     "r4fsck)", c->vol->dev->path,
			     (unsigned long long)b);
	}
	return rc;
}

int rp_batch(struct rp_model *m, uint64_t batch, struct rp_batch_stats *st,
	     struct r4_error *err)
{
	struct bctx c = { .m = m, .vol = m->vol, .st = st, .fix_from = 1 };
	size_t f = rp_frontier(m);
	int rc;

	memset(st, 0, sizeof(*st));
	if (f == m->ntgt)
		return 0;
	c.lo = m->el[f].tgt;
	c.hi = c.lo + 2 * batch;
	c.buf = malloc((size_t)COPY_BLOCKS * m->vol->blksize);
	if (!c.buf)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = txn_begin(m->vol, &c.t, err);
	if (!rc)
		rc = run_batch(&c, f, batch, err);
	if (!rc)
		rc = txn_commit(c.t, err);
	else
		txn_abort(c.t);
	free(c.buf);
	free(c.occ);
	return rc;
}
