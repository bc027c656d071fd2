/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair's pass of blocks claimed twice (block-shared). A
 * block that holds file data of an extent and is also owned by someone
 * else stays with the owner tree position gives it: the volume's layout
 * (reserved area, bitmap and backup blocks) and formatted nodes before
 * file data, else the extent first in key order. Every other extent
 * unit claiming it gets a fresh block holding a copy of its bytes: the
 * unit is split around the shared blocks and repointed, the extent item
 * replaced (cut into several when it outgrows a node) through the tree
 * engine, R->batch items per transaction. Nothing is zeroed: each owner
 * reads what the shared block held.
 *
 * Before each batch the tree is looked at afresh (a batch moves nodes,
 * copy-on-write, so the nodes of the last look may be free blocks now);
 * a block an extent keeps that the bitmap marks free (a node moved away
 * from under an extent) stops the pass, so that the space pass marks it
 * used before any allocation could take it. A node two parents point at
 * is tree damage (block-twice), left to the tree rebuild: a node cannot
 * be copied meaningfully. The work of one look is bounded by a few
 * passes over the volume's blocks; past that the pass gives up and the
 * problem is left (exit 4). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/repair/repair.h"
#include "libimage/alloc/space.h"
#include "libimage/obj/write.h"
#include "libimage/tree/modify.h"
#include "libimage/tree/tree.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/node.h"
#include "r4/util.h"

/* Blocks [off, off + count) of unit 'unit' go to fresh copies. */
struct run {
	unsigned unit;
	int cls;			/* owner_class of its blocks */
	uint64_t off, count;
};

/* An extent item with blocks to copy. */
struct change {
	struct fmt_key key;
	uint8_t *body;
	size_t len;
	struct run *runs;
	size_t nruns, capruns;
};

#define OWNERS_NAMED 64

struct owner {
	struct fmt_key key;
	int set;
};

struct tw {
	struct rep *R;
	struct chk v;			/* layout; nodes and kept blocks */
	struct r4_check_report vrep;
	struct r4_u64map nodes;		/* node blocks: a set */
	struct r4_u64map ask;		/* first blocks of runs: owners */
	struct change *ch;
	size_t n, cap;
	uint64_t work, budget;
	int gave_up;			/* too much work, or a bad tree */
	int space_wrong;		/* a kept block marked free */
	struct r4_error e;
};

static void tw_free(struct tw *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->ch[i].body);
		free(w->ch[i].runs);
	}
	free(w->ch);
	w->ch = NULL;
	w->n = w->cap = 0;
	r4_u64map_fini(&w->nodes);
	r4_u64map_fini(&w->ask);
	chk_release(&w->v);
	memset(&w->v, 0, sizeof(w->v));
}

static int on_node(void *ctx, uint64_t blk, unsigned level,
		   const uint8_t *node)
{
	struct tw *w = ctx;
	int rc;

	(void)level;
	(void)node;
	if (blk >= w->v.blocks)
		return R4_ECORRUPT;
	rc = chk_map_set(&w->v.used, blk);
	if (rc < 0)
		return rc;
	if (rc)
		w->gave_up = 1;	/* a node in the layout: tree damage */
	rc = r4_u64set_add(&w->nodes, blk);
	if (rc < 0)
		return rc;
	rc = space_test(&w->R->vol->space, blk, &w->e);
	if (rc < 0)
		return rc;
	if (!rc)
		w->space_wrong = 1;
	return 0;
}

static struct change *new_change(struct tw *w, const struct fmt_key *k,
				 const uint8_t *body, size_t len)
{
	struct change *c;

	if (R4_RESERVE(w->ch, w->cap, w->n + 1, 16))
		return NULL;
	c = &w->ch[w->n];
	memset(c, 0, sizeof(*c));
	c->body = malloc(len);
	if (!c->body)
		return NULL;
	memcpy(c->body, body, len);
	c->key = *k;
	c->len = len;
	w->n++;
	return c;
}

/* Who has a block already: 0 an extent, 1 a node, 2 the layout. */
static int owner_class(const struct tw *w, uint64_t blk)
{
	if (r4_u64map_find(&w->nodes, blk))
		return 1;
	if (chk_is_bitmap_blk(&w->v, blk) || blk < w->v.first_usable)
		return 2;
	for (size_t i = 0; i < w->v.nbackups; i++)
		if (w->v.backups[i] == blk)
			return 2;
	return 0;
}

static int add_run(struct tw *w, struct change *c, unsigned u, uint64_t off,
		   uint64_t blk)
{
	struct run *r = c->nruns ? &c->runs[c->nruns - 1] : NULL;
	int cls = owner_class(w, blk);

	if (r && r->unit == u && r->off + r->count == off && r->cls == cls) {
		r->count++;
		return 0;
	}
	if (R4_RESERVE(c->runs, c->capruns, c->nruns + 1, 4))
		return -ENOMEM;
	r = &c->runs[c->nruns++];
	r->unit = u;
	r->off = off;
	r->count = 1;
	r->cls = cls;
	if (!cls && r4_u64set_add(&w->ask, blk) < 0)
		return -ENOMEM;
	return 0;
}

/* Whether unit e of an item lies where an allocated unit may. */
static int unit_ok(const struct tw *w, const struct fmt_extent40_unit *e)
{
	uint64_t end;

	return fmt_extent40_kind(e) == FMT_EXTENT_ALLOCATED &&
	       !fmt_extent40_unit_end(e, &end) && end <= w->v.blocks &&
	       e->start >= w->v.first_usable;
}

/* One extent item in key order: its blocks someone has are runs. */
static int claim_item(struct tw *w, const struct tree_item *it)
{
	struct fmt_extent40_unit e;
	struct change *c = NULL;
	int n = fmt_extent40_units(it->body, it->len), rc;

	for (unsigned u = 0; n > 0 && u < (unsigned)n; u++) {
		fmt_extent40_unit(it->body, it->len, u, &e);
		if (!unit_ok(w, &e))
			continue;
		for (uint64_t b = e.start; b < e.start + e.width; b++) {
			if (++w->work > w->budget) {
				w->gave_up = 1;
				return 0;
			}
			if (!chk_is_bitmap_blk(&w->v, b) &&
			    !chk_map_test(&w->v.used, b)) {
				rc = chk_map_set(&w->v.used, b);
				if (rc < 0)
					return rc;
				rc = space_test(&w->R->vol->space, b, &w->e);
				if (rc < 0)
					return rc;
				if (!rc)
					w->space_wrong = 1;
				continue;
			}
			if (!c)
				c = new_change(w, &it->key, it->body, it->len);
			if (!c)
				return -ENOMEM;
			rc = add_run(w, c, u, b - e.start, b);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int on_twig(void *ctx, uint64_t blk, unsigned level,
		   const uint8_t *node)
{
	struct tw *w = ctx;
	struct tree_item it;
	int rc;

	if (level != FMT_NODE_TWIG_LEVEL || w->gave_up)
		return 0;
	for (unsigned i = 0; i < tree_node_nr(node); i++) {
		rc = tree_node_item(w->R->vol, node, blk, i, &it, &w->e);
		if (rc)
			return rc;
		if (it.plugin_id != FMT_ITEM_EXTENT40)
			continue;
		rc = claim_item(w, &it);
		if (rc)
			return rc;
	}
	return 0;
}

struct owners {
	struct r4_vol *vol;
	struct r4_u64map *who;
};

/* The first extent (in key order) holding each block of w->ask. */
static int on_owner(void *ctx, uint64_t blk, unsigned level,
		    const uint8_t *node)
{
	struct owners *ow = ctx;
	struct r4_u64map *who = ow->who;
	struct tree_item it;
	struct fmt_extent40_unit e;
	struct r4_error e2 = { 0 };
	int n;

	if (level != FMT_NODE_TWIG_LEVEL)
		return 0;
	for (unsigned i = 0; i < tree_node_nr(node); i++) {
		if (tree_node_item(ow->vol, node, blk, i, &it, &e2) ||
		    it.plugin_id != FMT_ITEM_EXTENT40)
			continue;
		n = fmt_extent40_units(it.body, it.len);
		for (unsigned u = 0; n > 0 && u < (unsigned)n; u++) {
			uint64_t end;

			fmt_extent40_unit(it.body, it.len, u, &e);
			if (fmt_extent40_kind(&e) != FMT_EXTENT_ALLOCATED ||
			    fmt_extent40_unit_end(&e, &end))
				continue;
			for (size_t s = r4_u64map_next(who, 0); s < who->cap;
			     s = r4_u64map_next(who, s + 1)) {
				struct owner *o = r4_u64map_val(who, s);

				if (!o->set && who->keys[s] >= e.start &&
				    who->keys[s] < end) {
					o->key = it.key;
					o->set = 1;
				}
			}
		}
	}
	return 0;
}

/* Look at the tree: which extent blocks go to copies. 0 (w->n changes,
 * or w->gave_up), or a negative operational error. */
static int look(struct tw *w)
{
	struct rep *R = w->R;
	int rc;

	w->v.vol = R->vol;
	w->v.rep = &w->vrep;
	w->v.err = R->err;
	w->work = 0;
	w->gave_up = w->space_wrong = 0;
	r4_u64map_init(&w->nodes, 0);
	r4_u64map_init(&w->ask, 0);
	rc = chk_setup(&w->v);
	if (rc)
		return rc;
	w->budget = 4 * w->v.blocks + 1024;
	rc = tree_walk(R->vol, on_node, w, &w->e);
	if (!rc && !w->gave_up)
		rc = tree_walk(R->vol, on_twig, w, &w->e);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		w->gave_up = 1;	/* a tree the walk refuses: left */
		rc = 0;
	}
	return rc;
}

/* What owns blk, for the report. */
static void owner_str(struct tw *w, struct r4_u64map *who, uint64_t blk,
		      char *buf, size_t len)
{
	struct owner *o = r4_u64map_find(who, blk);
	char ks[FMT_KEY_STR_MAX];

	if (r4_u64map_find(&w->nodes, blk)) {
		snprintf(buf, len, "a tree node");
	} else if (o && o->set) {
		fmt_key_str(&o->key, ks, sizeof(ks));
		snprintf(buf, len, "file data of object %llx [%s], first in "
			 "key order", (unsigned long long)
			 fmt_key_objectid(&o->key), ks);
	} else {
		snprintf(buf, len, "%s", chk_block_owner(&w->v, blk));
	}
}

struct units {
	struct fmt_extent40_unit *u;
	size_t n, cap;
};

static int push_unit(struct units *l, uint64_t start, uint64_t width)
{
	if (l->n && fmt_extent40_kind(&l->u[l->n - 1]) ==
	    FMT_EXTENT_ALLOCATED && start >= 2 &&
	    l->u[l->n - 1].start + l->u[l->n - 1].width == start) {
		l->u[l->n - 1].width += width;
		return 0;
	}
	if (R4_RESERVE(l->u, l->cap, l->n + 1, 16))
		return -ENOMEM;
	l->u[l->n].start = start;
	l->u[l->n].width = width;
	l->n++;
	return 0;
}

/* Copy run r (of unit e of change c) to fresh blocks. */
static int copy_run(struct tw *w, struct r4_txn *x, struct r4_u64map *who,
		    const struct change *c, const struct fmt_extent40_unit *e,
		    uint64_t at, const struct run *r, struct units *l,
		    uint8_t *buf)
{
	struct rep *R = w->R;
	uint64_t src = e->start + r->off, left = r->count, first = 0;
	char own[FMT_KEY_STR_MAX + 96], ks[FMT_KEY_STR_MAX], rng[64];
	int rc;

	while (left) {
		uint64_t ns, got;

		rc = txn_alloc_run(x->t, src, left, &ns, &got, R->err);
		if (rc)
			return rc;
		if (!first)
			first = ns;
		for (uint64_t i = 0; i < got; i++) {
			rc = vol_read_block(R->vol, src + i, buf, "file data",
					    R->err);
			if (!rc)
				rc = txn_write_data(x->t, ns + i, buf, 1,
						    R->err);
			if (rc)
				return rc;
		}
		rc = push_unit(l, ns, got);
		if (rc)
			return rc;
		R->r->blocks_copied += got;
		left -= got;
		src += got;
	}
	owner_str(w, who, e->start + r->off, own, sizeof(own));
	fmt_key_str(&c->key, ks, sizeof(ks));
	if (r->count > 1)
		snprintf(rng, sizeof(rng), "blocks %llu..%llu are",
			 (unsigned long long)(e->start + r->off),
			 (unsigned long long)(e->start + r->off + r->count - 1));
	else
		snprintf(rng, sizeof(rng), "block %llu is",
			 (unsigned long long)(e->start + r->off));
	rep_action(R, R4_CHK_BLOCK_SHARED, e->start + r->off,
		   fmt_key_objectid(&c->key), R4_LOSS_NONE, 0,
		   "%s file data of object %llx [%s] at file offset %llu and "
		   "also %s, "
		   "which keeps %s: the object's copy is in block%s %llu..",
		   rng, (unsigned long long)fmt_key_objectid(&c->key), ks,
		   (unsigned long long)at, own,
		   r->count > 1 ? "them" : "it", r->count > 1 ? "s" : "",
		   (unsigned long long)first);
	return 0;
}

/* The units change c becomes: each run claimed twice copied to fresh
 * blocks (copy_run), the blocks between runs kept as they are. */
static int collect_units(struct tw *w, struct r4_txn *x,
			 struct r4_u64map *who, const struct change *c,
			 struct units *l, uint8_t *buf)
{
	uint32_t bs = w->R->vol->blksize;
	size_t ri = 0;
	uint64_t at = fmt_key_offset(&c->key);
	int n = fmt_extent40_units(c->body, c->len), rc = 0;

	for (unsigned u = 0; n > 0 && u < (unsigned)n && !rc; u++) {
		struct fmt_extent40_unit e;
		uint64_t pos = 0;

		fmt_extent40_unit(c->body, c->len, u, &e);
		for (; ri < c->nruns && c->runs[ri].unit == u && !rc; ri++) {
			const struct run *r = &c->runs[ri];

			if (r->off > pos)
				rc = push_unit(l, e.start + pos, r->off - pos);
			if (!rc)
				rc = copy_run(w, x, who, c, &e,
					      at + r->off * bs, r, l, buf);
			pos = r->off + r->count;
		}
		if (!rc && pos < e.width)
			rc = push_unit(l, e.start + pos, e.width - pos);
		at += e.width * bs;
	}
	return rc;
}

/* The units l as extent items (as many units each as an item holds)
 * in place of change c's item. */
static int put_units(struct rep *R, struct r4_txn *x, const struct change *c,
		     const struct units *l)
{
	uint32_t bs = R->vol->blksize;
	struct tree_newitem *items = NULL;
	uint8_t *bodies = NULL;
	size_t per, nitems;
	uint64_t at = fmt_key_offset(&c->key);
	int rc;

	per = tree_max_item(&x->mod) / FMT_EXTENT40_UNIT_SIZE;
	if (!per)
		per = 1;
	nitems = (l->n + per - 1) / per;
	items = calloc(nitems, sizeof(*items));
	bodies = malloc(l->n * FMT_EXTENT40_UNIT_SIZE);
	if (!items || !bodies) {
		free(items);
		free(bodies);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->n; i++) {
		struct tree_newitem *t = &items[i / per];

		if (i % per == 0) {
			t->key = c->key;
			t->key.el[3] = at;
			t->pid = FMT_ITEM_EXTENT40;
			t->body = bodies + i * FMT_EXTENT40_UNIT_SIZE;
		}
		t->len += FMT_EXTENT40_UNIT_SIZE;
		fmt_extent40_unit_encode(&l->u[i],
					 bodies + i * FMT_EXTENT40_UNIT_SIZE);
		at += l->u[i].width * bs;
	}
	rc = tree_put_items(&x->mod, FMT_NODE_TWIG_LEVEL, &c->key, 1, items,
			    nitems, R->err);
	free(items);
	free(bodies);
	return rc;
}

/* The new units of change c; its items replace the old one. */
static int fix_item(struct tw *w, struct r4_txn *x, struct r4_u64map *who,
		    const struct change *c, uint8_t *buf)
{
	struct units l = { 0 };
	int rc = collect_units(w, x, who, c, &l, buf);

	if (!rc)
		rc = put_units(w->R, x, c, &l);
	free(l.u);
	return rc;
}

/* Changes [a, b) in one transaction. */
static int batch(struct tw *w, size_t a, size_t b)
{
	struct rep *R = w->R;
	struct r4_u64map who;
	struct r4_txn *x;
	uint8_t *buf = malloc(R->vol->blksize);
	int rc = buf ? 0 : -ENOMEM;

	struct owners ow = { R->vol, &who };

	/* The extents that keep blocks are named (a few: the search is
	 * by unit and block; more are "another node or extent"). */
	r4_u64map_init(&who, sizeof(struct owner));
	for (size_t s = r4_u64map_next(&w->ask, 0); s < w->ask.cap && !rc &&
	     w->ask.n <= OWNERS_NAMED; s = r4_u64map_next(&w->ask, s + 1))
		if (!r4_u64map_get(&who, w->ask.keys[s], NULL))
			rc = -ENOMEM;
	if (!rc && who.n)
		rc = tree_walk(R->vol, on_owner, &ow, &w->e) == -ENOMEM ?
		     -ENOMEM : 0;
	if (!rc)
		rc = r4_txn_begin(R->vol, &x, R->err);
	if (rc)
		goto out;
	for (size_t i = a; i < b && !rc; i++)
		rc = fix_item(w, x, &who, &w->ch[i], buf);
	if (rc) {
		r4_txn_abort(x);
		goto out;
	}
	rc = r4_txn_commit(x, R->err);
	if (!rc)
		R->r->transactions++;
out:
	r4_u64map_fini(&who);
	free(buf);
	return rc;
}

int rep_fix_shared(struct rep *R, int *changed)
{
	struct tw w;
	size_t before = SIZE_MAX;
	int rc = 0;

	memset(&w, 0, sizeof(w));
	w.R = R;
	for (;;) {
		rc = look(&w);
		if (rc || w.gave_up || w.space_wrong || !w.n || w.n >= before)
			break;
		before = w.n;
		rc = batch(&w, 0, w.n < R->batch ? w.n : R->batch);
		if (rc == R4_ENOSPC) {
			rc = 0;	/* no room for the copies: left (exit 4) */
			break;
		}
		if (rc)
			break;
		*changed = 1;
		tw_free(&w);
	}
	if (rc == -ENOMEM)
		rc = r4i_fail(R->err, rc, "out of memory for the copies of "
			      "blocks claimed twice");
	tw_free(&w);
	return rc;
}
