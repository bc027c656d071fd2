/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repacker's picture of the tree.
 *
 * Elements in target order: the nodes above the leaves (the root, then
 * each level down, each level in key order), then what the twigs point
 * at in their item order: leaves and extent units (holes have no
 * blocks). Targets are handed out in that order from the base block,
 * skipping the positions r4pack create never uses (bitmap blocks and
 * every possible backup block); a unit that would straddle one starts
 * after it instead. The base is the first usable block, or the root's
 * block when everything before the root is free and everything after
 * it is in place (r4pack create leaves a free area in front of the
 * upper nodes). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repack/repack_int.h"
#include "libimage/tree/tree.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"
#include "format/item.h"
#include "format/plugin.h"
#include "format/node.h"

#define CAND_MAX 128

struct walk {
	struct rp_model *m;
	struct rp_el *up, *low;
	size_t nup, capup, nlow, caplow;
};

static int push(struct rp_el **v, size_t *n, size_t *cap,
		const struct rp_el *e)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct rp_el *t = realloc(*v, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*v = t;
		*cap = c;
	}
	(*v)[(*n)++] = *e;
	return 0;
}

static int oom(struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "out of memory");
}

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     int64_t self, struct r4_error *err);

/* One item of an internal node: children and extent units. */
static int walk_item(struct walk *w, const struct tree_item *it,
		     unsigned level, int64_t self, struct r4_error *err)
{
	struct r4_vol *vol = w->m->vol;
	struct rp_el e = { 0, 0, 1, self, (uint32_t)it->off, 0 };
	uint64_t child;

	if (it->plugin_id == FMT_ITEM_NODEPTR40) {
		if (fmt_nodeptr40_decode(it->body, it->len, &child))
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, "
				       "item %u: bad node pointer",
				       vol->dev->path,
				       (unsigned long long)it->blk, it->pos);
		e.cur = child;
		e.level = (uint8_t)(level - 1);
		if (level - 1 == FMT_NODE_LEAF_LEVEL)
			return push(&w->low, &w->nlow, &w->caplow, &e) ?
			       oom(err) : 0;
		if (push(&w->up, &w->nup, &w->capup, &e))
			return oom(err);
		return walk_node(w, child, level - 1,
				 (int64_t)w->nup - 1, err);
	}
	if (it->plugin_id != FMT_ITEM_EXTENT40)
		return 0;
	for (unsigned u = 0;; u++) {
		struct fmt_extent40_unit eu;
		int rc = fmt_extent40_unit(it->body, it->len, u, &eu);

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
		e.off = (uint32_t)(it->off + u * FMT_EXTENT40_UNIT_SIZE);
		if (push(&w->low, &w->nlow, &w->caplow, &e))
			return oom(err);
	}
}

static int walk_node(struct walk *w, uint64_t blk, unsigned level,
		     int64_t self, struct r4_error *err)
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
			rc = walk_item(w, &it, level, self, err);
	}
	io_cache_put(&vol->cache, b);
	return rc;
}

int rp_fixed(const struct rp_model *m, uint64_t blk)
{
	size_t lo = 0, hi = m->ncand;
	uint32_t bs = m->vol->blksize;

	if (blk < fmt_blk_first_usable(bs) || blk % fmt_bitmap_bpb(bs) == 0)
		return 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->cand[mid] == blk)
			return 1;
		if (m->cand[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Targets from base on; 0 when they all fit in the volume. */
static int place(struct rp_model *m, uint64_t base)
{
	uint64_t c = base, count = m->vol->sb.block_count;

	for (size_t i = 0; i < m->n; i++) {
		struct rp_el *e = &m->el[i];
		uint64_t k = 0;

		while (k < e->w) {
			if (c + k >= count)
				return -1;
			if (rp_fixed(m, c + k)) {
				c += k + 1;
				k = 0;
				continue;
			}
			k++;
		}
		e->tgt = c;
		c += e->w;
	}
	m->base = base;
	m->end = c;
	return 0;
}

/* The root's block when nothing before it is in use. */
static int root_base(struct rp_model *m, uint64_t *base,
		     struct r4_error *err)
{
	struct r4_vol *vol = m->vol;
	uint64_t first = fmt_blk_first_usable(vol->blksize);
	uint64_t root = m->el[0].cur;

	*base = first;
	for (uint64_t b = first; b < root; b++) {
		int rc;

		if (rp_fixed(m, b))
			continue;
		rc = space_test(&vol->space, b, err);
		if (rc < 0)
			return rc;
		if (rc)
			return 0;
	}
	*base = root;
	return 0;
}

/* qsort has no context argument: the elements being sorted. */
static const struct rp_el *sort_el;

static int cmp_pos(const void *a, const void *b)
{
	uint64_t x = sort_el[*(const size_t *)a].cur;
	uint64_t y = sort_el[*(const size_t *)b].cur;

	return x < y ? -1 : x > y;
}

/* up[] in walk order, ordered by level (highest first; walk order, i.e.
 * key order, within a level), then low[]; parent indexes remapped. */
static int assemble(struct rp_model *m, struct walk *w, struct r4_error *err)
{
	size_t *perm = malloc((w->nup + 1) * sizeof(*perm));
	size_t k = 0;

	m->cap = w->nup + w->nlow;
	m->el = malloc((m->cap + 1) * sizeof(*m->el));
	if (!perm || !m->el) {
		free(perm);
		return oom(err);
	}
	for (unsigned l = m->height; l >= 2; l--)
		for (size_t i = 0; i < w->nup; i++)
			if (w->up[i].level == l) {
				perm[i] = k;
				m->el[k++] = w->up[i];
			}
	for (size_t i = 0; i < k; i++)
		if (m->el[i].parent >= 0)
			m->el[i].parent = (int64_t)perm[m->el[i].parent];
	for (size_t i = 0; i < w->nlow; i++) {
		m->el[k] = w->low[i];
		m->el[k++].parent = (int64_t)perm[w->low[i].parent];
	}
	m->n = k;
	free(perm);
	return 0;
}

static int index_positions(struct rp_model *m, struct r4_error *err)
{
	m->bypos = malloc((m->n + 1) * sizeof(*m->bypos));
	if (!m->bypos)
		return oom(err);
	for (size_t i = 0; i < m->n; i++) {
		m->bypos[i] = i;
		m->blocks += m->el[i].w;
	}
	sort_el = m->el;
	qsort(m->bypos, m->n, sizeof(*m->bypos), cmp_pos);
	return 0;
}

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

int rp_model_build(struct r4_vol *vol, struct rp_model *m,
		   struct r4_error *err)
{
	struct walk w = { .m = m };
	struct rp_el root = { vol->sb.root_block, 0, 1, -1, 0,
			      (uint8_t)vol->sb.tree_height };
	uint64_t base;
	int rc;

	memset(m, 0, sizeof(*m));
	m->vol = vol;
	m->height = vol->sb.tree_height;
	m->cand = malloc(CAND_MAX * sizeof(*m->cand));
	if (!m->cand)
		return oom(err);
	m->ncand = fmt_backup_blocks(1ULL << 44, vol->blksize, m->cand,
				     CAND_MAX);
	if (m->ncand > CAND_MAX)
		return r4i_fail(err, R4_ERANGE, "too many backup positions");
	if (m->height < 2)
		return r4i_fail(err, R4_EUNSUPP, "%s: tree height %u: nothing "
			       "above the leaves", vol->dev->path, m->height);
	rc = push(&w.up, &w.nup, &w.capup, &root) ? oom(err) : 0;
	if (!rc)
		rc = walk_node(&w, root.cur, m->height, 0, err);
	if (!rc)
		rc = assemble(m, &w, err);
	free(w.up);
	free(w.low);
	if (!rc)
		rc = index_positions(m, err);
	if (!rc)
		rc = root_base(m, &base, err);
	/* the root's block as the base only when everything is in place
	 * from there: a volume r4pack create made; else the targets could
	 * change as the run frees the blocks before the root */
	if (!rc && base != fmt_blk_first_usable(vol->blksize) &&
	    (place(m, base) || rp_frontier(m) != m->n))
		base = fmt_blk_first_usable(vol->blksize);
	if (!rc && place(m, base))
		rc = r4i_fail(err, R4_ENOSPC, "%s: the tree does not fit in "
			     "the volume", vol->dev->path);
	return rc;
}

void rp_model_fini(struct rp_model *m)
{
	free(m->el);
	free(m->cand);
	free(m->bypos);
	memset(m, 0, sizeof(*m));
}

size_t rp_frontier(const struct rp_model *m)
{
	size_t i = 0;

	while (i < m->n && m->el[i].cur == m->el[i].tgt)
		i++;
	return i;
}

void rp_plan(const struct rp_model *m, uint64_t batch,
	     struct r4_repack_plan *p)
{
	uint64_t nb = 0, ne = 0, regions;
	uint32_t bs = m->vol->blksize;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < m->n; i++)
		if (m->el[i].cur != m->el[i].tgt) {
			nb += m->el[i].w;
			ne++;
		}
	p->tree_blocks = m->blocks;
	p->elements = m->n;
	p->misplaced_blocks = nb;
	p->misplaced_elements = ne;
	p->free_blocks = m->vol->sb.free_blocks;
	p->gain = m->blocks ? (double)nb / (double)m->blocks : 0;
	if (!nb)
		return;
	regions = fmt_bitmap_count(m->vol->sb.block_count, bs);
	nb = nb < batch ? nb : batch;
	ne = ne < batch ? ne : batch;
	/* the blocks moved, then the log: the parents changed in place
	 * (one per element at most), the bitmaps, the super block, the
	 * wander records and the tx head */
	p->free_needed = nb + ne + regions + 1 +
			 (ne + regions + 1) / (bs / 16 - 2) + 2;
}
