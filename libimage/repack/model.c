/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repacker's view of the tree, a window at a time.
 *
 * The elements (nodes and extent units) in target order: the nodes
 * above the leaves (the root, then each level down, each level in key
 * order), then what the twigs point at in their item order: leaves and
 * extent units (holes have no blocks). Targets are handed out in that
 * order from the base block, skipping the positions r4pack create never
 * uses (bitmap blocks and every possible backup block); a unit that
 * would straddle one starts after it instead. The base is the first
 * usable block, or the root's block when everything before the root is
 * free and everything after it is in place (r4pack create leaves a free
 * area in front of the upper nodes).
 *
 * Nothing is kept for the whole tree: a walk reads the nodes above the
 * leaves depth-first (one node a level held at a time) and hands each
 * element with its target to a visitor. A first walk counts the nodes
 * of each level (where each level's targets start; once a run, again
 * only after a batch changed the tree's shape), a second sums the
 * plan and finds the frontier (the first target whose element is not
 * there), a third keeps the window: the elements whose targets lie in
 * the next RP_WINDOW batches' worth of blocks from the frontier, and
 * every element on a block there (what is in their way). The batches
 * work on the window until its targets are filled; then it is walked
 * again from the volume. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "r4/util.h"
#include "libimage/repack/repack_int.h"
#include "libimage/tree/tree.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/item.h"
#include "format/plugin.h"
#include "format/node.h"

#define CAND_MAX 128

static int oom(struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "out of memory");
}

uint64_t rp_next_fixed(const struct rp_model *m, uint64_t blk)
{
	uint32_t bs = m->vol->blksize;
	uint64_t bpb = fmt_bitmap_bpb(bs), next;
	size_t lo = 0, hi = m->ncand;

	if (blk < fmt_blk_first_usable(bs))
		return blk;
	next = blk % bpb ? blk + (bpb - blk % bpb) : blk;
	while (lo < hi) {	/* the first candidate >= blk */
		size_t mid = (lo + hi) / 2;

		if (m->cand[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->ncand && m->cand[lo] < next ? m->cand[lo] : next;
}

int rp_fixed(const struct rp_model *m, uint64_t blk)
{
	return rp_next_fixed(m, blk) == blk;
}

/* ---- the walk ------------------------------------------------------------ */

typedef int (*visit_fn)(void *ctx, const struct rp_el *e,
			struct r4_error *err);

struct walk {
	struct rp_model *m;
	uint64_t next[RP_LEVELS_MAX + 1];	/* next target of each level; [1]:
					 * leaves and extents */
	int nofit;			/* the targets pass the volume's end */
	uint64_t count[RP_LEVELS_MAX + 1];	/* nodes of each level */
	visit_fn fn;			/* NULL: count only */
	void *ctx;
	uint64_t fix_from, fix;		/* rp_next_fixed(b) == fix for every
					 * b in [fix_from, fix] (zeroed: block
					 * 0, which is fixed) */
};

/* The next w blocks from *c with no fixed block among them. */
static uint64_t take(struct walk *w, uint64_t *c, uint64_t width)
{
	uint64_t at = *c, count = w->m->vol->sb.block_count;

	for (;;) {
		uint64_t fixed;

		if (at < w->fix_from || at > w->fix) {
			w->fix = rp_next_fixed(w->m, at);
			w->fix_from = at;
		}
		fixed = w->fix;
		if (fixed < at + width && fixed < count) {
			at = fixed + 1;
			continue;
		}
		if (at + width > count)
			w->nofit = 1;
		break;
	}
	*c = at + width;
	return at;
}

static int emit(struct walk *w, struct rp_el *e, struct r4_error *err)
{
	if (!w->fn) {
		if (e->level >= 2)
			w->count[e->level]++;
		return 0;
	}
	e->tgt = take(w, &w->next[e->level >= 2 ? e->level : 1], e->w);
	return w->fn(w->ctx, e, err);
}

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     struct r4_error *err);

/* One item of an internal node: children and extent units. */
static int walk_item(struct walk *w, const struct tree_item *it,
		     unsigned level, struct r4_error *err)
{
	struct r4_vol *vol = w->m->vol;
	struct rp_el e = { 0, 0, 1, -2, it->blk, (uint32_t)it->off, 0, 0 };
	uint64_t child;
	int rc;

	if (it->plugin_id == FMT_ITEM_NODEPTR40) {
		if (fmt_nodeptr40_decode(it->body, it->len, &child))
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u: bad node pointer",
				       vol->dev->path,
				       (unsigned long long)it->blk, it->pos);
		e.cur = child;
		e.level = (uint8_t)(level - 1);
		rc = emit(w, &e, err);
		if (rc || level - 1 == FMT_NODE_LEAF_LEVEL)
			return rc;
		return walk_node(w, child, level - 1, err);
	}
	if (it->plugin_id != FMT_ITEM_EXTENT40)
		return 0;
	for (unsigned u = 0;; u++) {
		struct fmt_extent40_unit eu;

		rc = fmt_extent40_unit(it->body, it->len, u, &eu);
		if (rc == R4_ERANGE)
			return 0;
		if (rc)
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u: bad extent", vol->dev->path,
				       (unsigned long long)it->blk, it->pos);
		if (fmt_extent40_kind(&eu) != FMT_EXTENT_ALLOCATED)
			continue;
		if (eu.start + eu.width > vol->sb.block_count ||
		    eu.start + eu.width < eu.start || !eu.width)
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u, unit %u: blocks %llu+%llu "
				       "outside the volume", vol->dev->path,
				       (unsigned long long)it->blk, it->pos, u,
				       (unsigned long long)eu.start,
				       (unsigned long long)eu.width);
		e.cur = eu.start;
		e.w = eu.width;
		e.level = 0;
		e.off = (uint32_t)(it->off + u * FMT_EXTENT40_UNIT_SIZE);
		rc = emit(w, &e, err);
		if (rc)
			return rc;
	}
}

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     struct r4_error *err)
{
	struct r4_vol *vol = w->m->vol;
	struct io_block *b;
	unsigned nr;
	int rc = tree_node_get(vol, blk, level, &b, err);

	if (rc)
		return rc;
	nr = tree_node_nr(b->data);
	for (unsigned i = 0; !rc && i < nr; i++) {
		struct tree_item it;

		rc = tree_node_item(vol, b->data, blk, i, &it, err);
		if (!rc)
			rc = walk_item(w, &it, level, err);
	}
	io_cache_put(&vol->cache, b);
	return rc;
}

/* Walk the tree: fn sees every element with its target from base (in
 * depth-first order: each level's in key order). *nofit when the
 * targets do not fit in the volume. */
static int walk(struct rp_model *m, uint64_t base, visit_fn fn, void *ctx,
		int *nofit, struct r4_error *err)
{
	struct walk w;
	struct rp_el root = { m->vol->sb.root_block, 0, 1, -1, 0, 0,
			      (uint8_t)m->height, 0 };
	uint64_t c = base;
	int rc;

	memset(&w, 0, sizeof(w));
	w.m = m;
	memcpy(w.count, m->count, sizeof(w.count));
	for (unsigned l = m->height; l >= 2; l--) {
		w.next[l] = c;
		for (uint64_t i = 0; i < w.count[l]; i++)
			take(&w, &c, 1);
	}
	w.next[1] = c;
	w.fn = fn;
	w.ctx = ctx;
	rc = emit(&w, &root, err);
	if (!rc)
		rc = walk_node(&w, root.cur, m->height, err);
	*nofit = w.nofit;
	if (!rc && fn)
		m->end = w.next[1];
	return rc;
}

static int count_levels(struct rp_model *m, struct r4_error *err)
{
	struct walk w;
	struct rp_el root = { m->vol->sb.root_block, 0, 1, -1, 0, 0,
			      (uint8_t)m->height, 0 };
	int rc;

	memset(&w, 0, sizeof(w));
	w.m = m;
	rc = emit(&w, &root, err);
	if (!rc)
		rc = walk_node(&w, root.cur, m->height, err);
	if (!rc)
		memcpy(m->count, w.count, sizeof(m->count));
	return rc;
}

/* ---- the plan ------------------------------------------------------------ */

static int sum_el(void *ctx, const struct rp_el *e, struct r4_error *err)
{
	struct rp_model *m = ctx;

	(void)err;
	m->elements++;
	m->blocks += e->w;
	if (e->cur != e->tgt) {
		m->misplaced_blocks += e->w;
		m->misplaced_elements++;
		if (e->tgt < m->frontier)
			m->frontier = e->tgt;
	}
	return 0;
}

static int sum(struct rp_model *m, uint64_t base, int *nofit,
	       struct r4_error *err)
{
	m->elements = m->blocks = 0;
	m->misplaced_blocks = m->misplaced_elements = 0;
	m->frontier = UINT64_MAX;
	return walk(m, base, sum_el, m, nofit, err);
}

/* Whether any block from the first usable one to the root's is in use. */
static int used_before_root(struct rp_model *m, struct r4_error *err)
{
	struct r4_vol *vol = m->vol;

	for (uint64_t b = fmt_blk_first_usable(vol->blksize);
	     b < vol->sb.root_block; b++) {
		int rc;

		if (rp_fixed(m, b))
			continue;
		rc = space_test(&vol->space, b, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the window --------------------------------------------------------- */

static int keep_el(void *ctx, const struct rp_el *e, struct r4_error *err)
{
	struct rp_model *m = ctx;

	if (!(e->tgt >= m->lo && e->tgt < m->hi) &&
	    !(e->cur < m->hi + m->batch && e->cur + e->w > m->lo))
		return 0;
	if (R4_RESERVE(m->el, m->cap, m->n + 1, 256))
		return oom(err);
	m->el[m->n++] = *e;
	return 0;
}

static int cmp_tgt(const void *a, const void *b)
{
	const struct rp_el *x = a, *y = b;

	return x->tgt < y->tgt ? -1 : x->tgt > y->tgt;
}

/* qsort has no context argument: the elements being sorted. */
static const struct rp_el *sort_el;

static int cmp_pos(const void *a, const void *b)
{
	uint64_t x = sort_el[*(const size_t *)a].cur;
	uint64_t y = sort_el[*(const size_t *)b].cur;

	return x < y ? -1 : x > y;
}

void rp_model_moved(struct rp_model *m, size_t i)
{
	if (m->el[i].moved)
		return;
	m->el[i].moved = 1;
	if (R4_RESERVE(m->moved, m->capmoved, m->nmoved + 1, 64))
		m->indexed = 0;	/* no list: the next index sorts in full */
	else
		m->moved[m->nmoved++] = i;
}

/* The moved elements out of bypos, then merged back in by cur (a batch
 * moves a few of the window's elements: no full sort). */
static void reindex_moved(struct rp_model *m)
{
	size_t kept = 0, k, j, out = m->n;

	for (k = 0; k < m->n; k++)
		if (!m->el[m->bypos[k]].moved)
			m->bypos[kept++] = m->bypos[k];
	sort_el = m->el;
	qsort(m->moved, m->nmoved, sizeof(*m->moved), cmp_pos);
	k = kept;
	j = m->nmoved;
	while (j) {		/* from the back: bypos[0..kept) stays put */
		if (k && m->el[m->bypos[k - 1]].cur > m->el[m->moved[j - 1]].cur)
			m->bypos[--out] = m->bypos[--k];
		else
			m->bypos[--out] = m->moved[--j];
	}
}

void rp_model_index(struct rp_model *m)
{
	if (m->indexed) {
		if (m->nmoved)
			reindex_moved(m);
		for (size_t i = 0; i < m->nmoved; i++)
			m->el[m->moved[i]].moved = 0;
	} else {	/* every mark cleared: one may be missing from the list */
		for (size_t i = 0; i < m->n; i++) {
			m->bypos[i] = i;
			m->el[i].moved = 0;
		}
		sort_el = m->el;
		if (m->n)	/* the table may be NULL when empty */
			qsort(m->bypos, m->n, sizeof(*m->bypos), cmp_pos);
	}
	m->nmoved = 0;
	m->indexed = 1;
}

/* The element whose block is blk now, in bypos order; -1 none. */
int64_t rp_owner(const struct rp_model *m, uint64_t blk)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {	/* first with cur > blk */
		size_t mid = (lo + hi) / 2;

		if (m->el[m->bypos[mid]].cur <= blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	lo = m->bypos[lo - 1];
	return blk < m->el[lo].cur + m->el[lo].w ? (int64_t)lo : -1;
}

uint64_t rp_parent_blk(const struct rp_model *m, const struct rp_el *e)
{
	return e->parent >= 0 ? m->el[e->parent].cur : e->pblk;
}

/* The blocks of targets a window spans: RP_WINDOW batches, or a
 * 1/RP_WINDOWS_MAX share of the tree when that is more. Every window
 * walks the whole tree once, so a run walks it at most about
 * RP_WINDOWS_MAX times whatever its size (a fixed window would make the
 * walks grow with the square of the tree). */
static uint64_t window_blocks(const struct rp_model *m)
{
	uint64_t w = RP_WINDOW * m->batch, share = m->blocks / RP_WINDOWS_MAX;

	return share > w ? share : w;
}

/* The window from the frontier: its elements in target order, the
 * parents found among them (a node pointed at from one moves with it). */
static int collect(struct rp_model *m, struct r4_error *err)
{
	size_t *v;
	int nofit, rc;

	m->n = 0;
	m->lo = m->frontier;
	m->hi = m->lo + window_blocks(m);
	rc = walk(m, m->base, keep_el, m, &nofit, err);
	if (rc)
		return rc;
	if (m->n)
		qsort(m->el, m->n, sizeof(*m->el), cmp_tgt);
	m->ntgt = 0;
	while (m->ntgt < m->n && m->el[m->ntgt].tgt < m->hi)
		m->ntgt++;
	v = realloc(m->bypos, (m->n + 1) * sizeof(*v));
	if (!v)
		return oom(err);
	m->bypos = v;
	m->indexed = 0;
	m->nmoved = 0;
	rp_model_index(m);
	for (size_t i = 0; i < m->n; i++) {
		int64_t p;

		if (m->el[i].parent != -2)
			continue;
		p = rp_owner(m, m->el[i].pblk);
		if (p >= 0 && m->el[p].level >= 2 &&
		    m->el[p].cur == m->el[i].pblk)
			m->el[i].parent = p;
	}
	return 0;
}

int rp_model_scan(struct rp_model *m, struct r4_error *err)
{
	struct r4_vol *vol = m->vol;
	uint64_t first = fmt_blk_first_usable(vol->blksize);
	int rc, nofit = 1;

	/* the nodes of each level: the same until the tree changes shape
	 * (moves change where nodes are, not how many) */
	if (m->stale || !m->counted) {
		m->counted = 0;
		rc = count_levels(m, err);
		if (rc)
			return rc;
		m->counted = 1;
	}
	m->stale = 0;
	m->n = m->ntgt = 0;
	m->nmoved = 0;
	m->indexed = 0;
	/* the root's block as the base only when everything is in place
	 * from there: a volume r4pack create made; else the targets could
	 * change as the run frees the blocks before the root */
	m->base = vol->sb.root_block;
	if (m->base > first) {
		rc = used_before_root(m, err);
		if (rc < 0)
			return rc;
		if (!rc) {
			rc = sum(m, m->base, &nofit, err);
			if (rc)
				return rc;
		}
	}
	if (nofit || m->misplaced_blocks) {
		m->base = first;
		rc = sum(m, m->base, &nofit, err);
		if (rc)
			return rc;
		if (nofit)
			return r4i_fail(err, R4_ENOSPC, "%s: the tree does not "
				       "fit in the volume", vol->dev->path);
	}
	return m->misplaced_blocks ? collect(m, err) : 0;
}

int rp_model_open(struct r4_vol *vol, struct rp_model *m, uint64_t batch,
		  struct r4_error *err)
{
	memset(m, 0, sizeof(*m));
	m->vol = vol;
	m->batch = batch;
	m->height = vol->sb.tree_height;
	if (m->height < 2)
		return r4i_fail(err, R4_EUNSUPP, "%s: tree height %u: nothing "
			       "above the leaves", vol->dev->path, m->height);
	if (m->height > RP_LEVELS_MAX)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree height %u",
			       vol->dev->path, m->height);
	m->cand = malloc(CAND_MAX * sizeof(*m->cand));
	if (!m->cand)
		return oom(err);
	m->ncand = fmt_backup_blocks(1ULL << 44, vol->blksize, m->cand,
				     CAND_MAX);
	if (m->ncand > CAND_MAX)
		return r4i_fail(err, R4_ERANGE, "too many backup positions");
	return rp_model_scan(m, err);
}

void rp_model_fini(struct rp_model *m)
{
	free(m->el);
	free(m->cand);
	free(m->bypos);
	free(m->moved);
	memset(m, 0, sizeof(*m));
}

size_t rp_frontier(const struct rp_model *m)
{
	size_t i = 0;

	while (i < m->ntgt && m->el[i].cur == m->el[i].tgt)
		i++;
	return i;
}

int rp_model_next(struct rp_model *m, struct r4_error *err)
{
	size_t f;
	int rc;

	if (!m->stale) {
		f = rp_frontier(m);
		if (f < m->ntgt && (m->el[f].tgt + 2 * m->batch <= m->hi ||
				    m->hi >= m->end)) {
			rp_model_index(m);
			return 0;
		}
	}
	rc = rp_model_scan(m, err);
	if (rc)
		return rc;
	return m->misplaced_blocks ? 0 : 1;
}

uint64_t rp_need(uint64_t batch, uint64_t regions, uint32_t bs)
{
	/* the blocks moved (evictions included: at most the batch), then
	 * the log: the parents changed in place (one per element at most,
	 * and an element is at least a block), the bitmaps, the super
	 * block, the wander records and the tx head */
	return batch + batch + regions + 1 +
	       (batch + regions + 1) / (bs / 16 - 2) + 2;
}

uint64_t rp_fit(uint64_t batch, uint64_t free_blocks, uint64_t regions,
		uint32_t bs)
{
	uint64_t lo = 0, hi = batch;

	/* the largest b <= batch whose need fits (rp_need grows with b) */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (rp_need(mid, regions, bs) <= free_blocks)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

void rp_plan(const struct rp_model *m, uint64_t batch,
	     struct r4_repack_plan *p)
{
	uint64_t nb = m->misplaced_blocks, ne = m->misplaced_elements;
	uint64_t regions;
	uint32_t bs = m->vol->blksize;

	memset(p, 0, sizeof(*p));
	p->tree_blocks = m->blocks;
	p->elements = m->elements;
	p->misplaced_blocks = nb;
	p->misplaced_elements = ne;
	p->free_blocks = m->vol->sb.free_blocks;
	p->gain = m->blocks ? (double)nb / (double)m->blocks : 0;
	p->batch_asked = batch;
	p->batch = batch;
	if (!nb)
		return;
	regions = fmt_bitmap_count(m->vol->sb.block_count, bs);
	/* A batch the free space cannot hold (with its log, and room out
	 * of the window for what is in the way) is cut to what fits, down
	 * to RP_BATCH_MIN blocks (or the asked size when smaller). */
	p->batch = rp_fit(batch, p->free_blocks, regions, bs);
	if (p->batch < (batch < RP_BATCH_MIN ? batch : RP_BATCH_MIN)) {
		p->batch = batch < RP_BATCH_MIN ? batch : RP_BATCH_MIN;
		p->too_little = 1;
	}
	p->free_needed = rp_need(p->batch, regions, bs);
}
