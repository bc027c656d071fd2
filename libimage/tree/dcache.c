/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree writer's decoded-node cache and its deferred node
 * writes (tree_mod_lazy, tree_mod_flush). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tree/modify_int.h"
#include "libimage/tree/tree.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/item.h"
#include "format/node.h"
#include "format/plugin.h"

struct tree_dslot *tmod_dc_make(struct tree_mod *m, uint64_t blk)
{
	if (!m->dc && !(m->dc = calloc(TREE_DCACHE_SLOTS, sizeof(*m->dc))))
		return NULL;
	return tmod_dc_slot(m, blk);
}

int tmod_is_stale(const struct tree_mod *m, uint64_t blk)
{
	return m->stale.n && r4_u64map_find(&m->stale, blk);
}

/* The block is rewritten or freed: its list goes, deferred or not. */
void tmod_dc_forget(struct tree_mod *m, uint64_t blk)
{
	struct tree_dslot *s = m->dc ? tmod_dc_slot(m, blk) : NULL;

	if (m->stale.n)
		r4_u64map_del(&m->stale, blk);
	if (s && s->blk == blk) {
		ilist_free(&s->l);
		s->blk = 0;
	}
}


/* Write the deferred list of slot s into its block (s keeps it). */
static int dc_sync(struct tree_mod *m, struct tree_dslot *s,
		   struct r4_error *err)
{
	int ok = 0, rc;

	if (!s->blk || !tmod_is_stale(m, s->blk))
		return 0;
	rc = tmod_write_node(m, s->blk, s->level, &s->l, &ok, err);
	if (rc) {
		if (!m->sync_rc)
			m->sync_rc = rc;
		return rc;
	}
	r4_u64map_del(&m->stale, s->blk);
	m->st.synced++;
	return 0;
}

/* Block blk's items at 'level' into *out (the caller owns them). */
int tmod_dc_get(struct tree_mod *m, uint64_t blk, unsigned level,
		  struct ilist *out, struct r4_error *err)
{
	struct tree_dslot *s = m->dc ? tmod_dc_slot(m, blk) : NULL;

	if (s && s->blk == blk && blk && s->level == level) {
		*out = s->l;
		memset(&s->l, 0, sizeof(s->l));
		s->blk = 0;
		m->st.dec_hits++;
		return 0;
	}
	tmod_dc_forget(m, blk);
	m->st.dec_misses++;
	return ilist_load(m->vol, blk, level, out, err);
}

/* l is what block blk reads as: the cache takes it (l is emptied). */
void tmod_dc_keep(struct tree_mod *m, uint64_t blk, unsigned level,
		    struct ilist *l)
{
	struct tree_dslot *s = blk ? tmod_dc_slot(m, blk) : NULL;

	if (!s || !l->n) {
		ilist_free(l);
		return;
	}
	if (s->blk != blk) {
		struct r4_error tmp = { 0, "", 0 };

		dc_sync(m, s, &tmp);	/* a failure stays in sync_rc */
	}
	ilist_free(&s->l);
	s->blk = blk;
	s->level = level;
	s->l = *l;
	memset(l, 0, sizeof(*l));
}

/* Items a coalesce pass may join with a neighbour (ilist.c's join). */
static int joinable(unsigned pid)
{
	return pid == FMT_ITEM_CDE40 || pid == FMT_ITEM_TAIL40 ||
	       pid == FMT_ITEM_EXTENT40 || pid == FMT_ITEM_CTAIL40;
}

/* The deferred leaf of path p as tmod_dc_put may change it in place:
 * its slot, else NULL. Its parent's list must be cached too (the key
 * and pointer level_set checks). */
static struct tree_dslot *put_slot(struct tree_mod *m, const struct mpath *p)
{
	uint64_t blk = p->blk[1];
	struct tree_dslot *s, *ps;
	long pp = p->pos[2];

	if (!m->lazy || m->no_merge || m->height < FMT_TREE_HEIGHT_MIN ||
	    !m->dc || !tmod_is_stale(m, blk))
		return NULL;
	s = tmod_dc_slot(m, blk);
	ps = tmod_dc_slot(m, p->blk[2]);
	if (s->blk != blk || s->level != FMT_NODE_LEAF_LEVEL || !s->l.n ||
	    ps == s || ps->blk != p->blk[2] || ps->level != FMT_NODE_TWIG_LEVEL ||
	    pp < 0 || (size_t)pp >= ps->l.n || tmod_sib(&ps->l, pp) != blk ||
	    !txn_owns_in(m->t, blk, m->scope))
		return NULL;
	return s;
}

/* The bytes of s's list once items [a, b) are it[0..n). */
static size_t put_bytes(const struct tree_dslot *s, size_t a, size_t b,
			const struct tree_newitem *it, size_t n, size_t ih)
{
	size_t total = ilist_bytes(&s->l, ih);

	for (size_t i = a; i < b; i++)
		total -= s->l.v[i].len + ih;
	for (size_t i = 0; i < n; i++)
		total += it[i].len + ih;
	return total;
}

/* Which neighbour joins 'total' bytes of items (lb, rb: the left and
 * right neighbours' bytes, SIZE_MAX none): -1 left, +1 right, 0 none. A
 * list that fits goes whole into a neighbour with room; one that does
 * not fit shares with the emptier neighbour when the two make two
 * nodes. */
int tmod_choose_side(size_t total, size_t lb, size_t rb, size_t cap,
		     size_t ih)
{
	size_t best = lb < rb ? lb : rb;

	if (total <= cap) {
		if (lb != SIZE_MAX && lb + total <= cap)
			return -1;
		if (rb != SIZE_MAX && rb + total <= cap)
			return 1;
		return 0;
	}
	if (best != SIZE_MAX && best + total + 2 * ih + 64 <= 2 * cap)
		return lb <= rb ? -1 : 1;
	return 0;
}

/* The leaf of path p, under half a node or over a node with 'total'
 * bytes: level_set would load its neighbours and join it with one that
 * has room, or share with one (choose). Its choice (-1 left, +1 right,
 * 0 none: the general way changes the leaf alone) when each neighbour
 * is cached, 2 when not known without a read (the general way). */
static int side(struct tree_mod *m, const struct mpath *p, size_t total,
		size_t cap, size_t ih)
{
	const struct ilist *P = &tmod_dc_slot(m, p->blk[2])->l;
	size_t bytes[2] = { SIZE_MAX, SIZE_MAX };

	for (int k = 0; k < 2; k++) {
		uint64_t nb = tmod_sib(P, p->pos[2] + (k ? 1 : -1));
		const struct tree_dslot *ns;

		if (!nb)
			continue;
		ns = tmod_dc_slot(m, nb);
		if (ns->blk != nb || ns->level != FMT_NODE_LEAF_LEVEL)
			return 2;
		bytes[k] = ilist_bytes(&ns->l, ih);
	}
	return tmod_choose_side(total, bytes[0], bytes[1], cap, ih);
}

/* The list of the leaf the path's twig points to at item pos[2] + d,
 * taken out of the cache (side found it there), into *l after *l's
 * items (d > 0) or before them; *blk: its block. */
static int take_side(struct tree_mod *m, const struct mpath *p, int d,
		     struct ilist *l, uint64_t *blk)
{
	struct tree_dslot *ns;
	struct ilist o;
	int rc;

	*blk = tmod_sib(&tmod_dc_slot(m, p->blk[2])->l, p->pos[2] + d);
	ns = tmod_dc_slot(m, *blk);
	o = ns->l;
	memset(&ns->l, 0, sizeof(ns->l));
	ns->blk = 0;
	m->st.dec_hits++;
	m->st.shifts++;
	if (d > 0) {
		rc = ilist_move(l, &o);
		ilist_free(&o);		/* moved, or not to be kept */
		return rc;
	}
	rc = ilist_move(&o, l);
	if (rc)
		ilist_free(l);
	*l = o;
	return rc;
}

/* tmod_dc_put of a change that makes the leaf of slot s more than a
 * node ('total' bytes): level_set's way without its choose, when the
 * neighbours it would load are cached (the one it shares with taken as
 * it takes it) and, sharing with none, the new items end near the
 * list's end (its pack then fills the leaf, the rest goes to a new one). */
static int split(struct tree_mod *m, const struct mpath *p,
		 struct tree_dslot *s, size_t a, size_t b,
		 const struct tree_newitem *it, size_t n, size_t total,
		 struct r4_error *err)
{
	size_t ih = fmt_item_header_size(m->vol->keypol), after = 0;
	size_t cap = m->vol->blksize - fmt_node_header_size(m->vol->sb.node_pid);
	uint64_t blks[2] = { p->blk[1], 0 };
	struct mpath q = *p;
	struct ilist l;
	int use, rc;

	for (size_t i = b; i < s->l.n; i++)
		after += ih + s->l.v[i].len;
	use = side(m, p, total, cap, ih);
	/* near_end's test, on the items after the new ones */
	if (use == 2 || (!use && after > cap / 4))
		return 0;
	m->st.dec_hits++;
	l = s->l;
	memset(&s->l, 0, sizeof(s->l));
	s->blk = 0;
	rc = ilist_splice(&l, a, b, it, n);
	if (!rc && use)
		rc = take_side(m, p, use, &l, &blks[use > 0]);
	if (!rc && use < 0)
		blks[1] = p->blk[1];
	if (rc) {
		ilist_free(&l);
		return tmod_oom(err);
	}
	m->st.quick_split++;
	m->st.quick_shared += use != 0;
	rc = tmod_split_leaf(m, &q, &l, p->pos[2] - (use < 0), use ? 2 : 1,
			     blks, err);
	return rc ? rc : 1;
}

int tmod_dc_put(struct tree_mod *m, const struct mpath *p,
		const struct fmt_key *at, int replace,
		const struct tree_newitem *it, size_t n, struct r4_error *err)
{
	struct tree_dslot *s = n && !m->general ? put_slot(m, p) : NULL;
	size_t ih = fmt_item_header_size(m->vol->keypol), a, b, total;
	size_t cap = m->vol->blksize - fmt_node_header_size(m->vol->sb.node_pid);
	long pos = p->pos[1];
	struct mitem *o;
	int rc;

	if (!s || pos < -1 || pos >= (long)s->l.n ||
	    (pos >= 0 && !fmt_key_cmp(&s->l.v[pos].key, at)) != !!replace)
		return 0;	/* the general way (or its error) */
	a = (size_t)(pos + !replace);
	b = (size_t)pos + 1;
	total = put_bytes(s, a, b, it, n, ih);
	/* level_set would change the leaf's pointer */
	if (fmt_key_cmp(a ? &s->l.v[0].key : &it[0].key,
			&tmod_dc_slot(m, p->blk[2])->l.v[p->pos[2]].key))
		return 0;
	if (total > cap)
		return split(m, p, s, a, b, it, n, total, err);
	if (total < cap / 2) {
		if (side(m, p, total, cap, ih))
			return 0;
		m->st.quick_small++;
	}
	m->st.nodes_written++;
	m->st.deferred++;
	m->st.quick++;
	m->st.dec_hits += 2;
	o = &s->l.v[pos < 0 ? 0 : pos];
	if (replace && n == 1 && it[0].pid == o->pid && it[0].len == o->len &&
	    !joinable(o->pid)) {
		/* nothing a pass joins changed: the list stays coalesced */
		o->key = it[0].key;
		o->checked = 0;
		memcpy(o->body, it[0].body, it[0].len);
		return 1;
	}
	rc = ilist_splice(&s->l, a, b, it, n);
	if (!rc)
		rc = ilist_coalesce(&s->l, cap - ih, m->vol->blksize,
				    m->vol->keypol);
	if (!rc)
		return 1;
	/* the deferred list is gone; the block stays marked deferred, so a
	 * commit after this failure refuses (deferred tree nodes lost) */
	ilist_free(&s->l);
	s->blk = 0;
	return tmod_oom(err);
}

/* The item of key k in the leaf at the end of p when tmod_dc_put
 * would replace it the quick way, in place, by one of plugin pid and
 * len bytes (the same plugin and length, not one a pass joins, the
 * leaf's bytes unchanged and at least half a node, its first key its
 * pointer's): the cached item, else NULL. */
static struct mitem *patch_item(struct tree_mod *m, const struct mpath *p,
				const struct fmt_key *k, unsigned pid,
				size_t len)
{
	struct tree_dslot *s = put_slot(m, p);
	size_t ih = fmt_item_header_size(m->vol->keypol), total;
	size_t cap = m->vol->blksize - fmt_node_header_size(m->vol->sb.node_pid);
	long pos = p->pos[1];
	struct mitem *o;

	if (!s || pos < 0 || (size_t)pos >= s->l.n)
		return NULL;
	o = &s->l.v[pos];
	if (fmt_key_cmp(&o->key, k) || o->pid != pid || o->len != len ||
	    joinable(pid))
		return NULL;
	total = ilist_bytes(&s->l, ih);
	if (total > cap || total < cap / 2 ||
	    fmt_key_cmp(&s->l.v[0].key,
			&tmod_dc_slot(m, p->blk[2])->l.v[p->pos[2]].key))
		return NULL;
	return o;
}

int tree_mod_patch(struct tree_mod *m, struct tree_spot *spot,
		   const struct fmt_key *k, unsigned pid, const void *old,
		   const void *body, size_t len, struct r4_error *err)
{
	struct mitem *o = NULL;
	struct mpath p;
	int none = 0, rc;

	if (m->general || !m->lazy || !m->dc)
		return 0;
	memset(&p, 0, sizeof(p));
	if (spot->blk) {
		p.blk[1] = spot->blk;
		p.pos[1] = spot->pos;
		p.blk[2] = spot->pblk;
		p.pos[2] = spot->ppos;
		o = patch_item(m, &p, k, pid, len);
	}
	if (!o) {
		memset(spot, 0, sizeof(*spot));
		rc = tmod_path_find(m, k, FMT_NODE_LEAF_LEVEL, &p, &none, err);
		if (rc || none || !(o = patch_item(m, &p, k, pid, len)))
			return rc;
		spot->blk = p.blk[1];
		spot->pos = p.pos[1];
		spot->pblk = p.blk[2];
		spot->ppos = p.pos[2];
	}
	if (memcmp(o->body, old, len))
		return 0;
	/* as tmod_dc_put counts its change */
	m->st.nodes_written++;
	m->st.deferred++;
	m->st.quick++;
	m->st.patched++;
	m->st.dec_hits += 2;
	o->checked = 0;
	memcpy(o->body, body, len);
	return 1;
}

/* vol->node_sync: a reader wants block blk. */
static int node_sync(void *ctx, uint64_t blk, struct r4_error *err)
{
	struct tree_mod *m = ctx;
	struct tree_dslot *s;

	if (!tmod_is_stale(m, blk))
		return 0;
	s = tmod_dc_slot(m, blk);
	if (!s || s->blk != blk)
		return r4i_fail(err, R4_EINVAL, "%s: tree node %llu: its "
			       "deferred items are out of the cache",
			       m->vol->dev && m->vol->dev->path ?
			       m->vol->dev->path : "volume",
			       (unsigned long long)blk);
	return dc_sync(m, s, err);
}

int tree_mod_lazy(struct tree_mod *m, struct r4_error *err)
{
	if (m->lazy)
		return 0;
	if (m->vol->node_sync)
		return r4i_fail(err, R4_EINVAL, "another tree writer defers "
			       "node writes on this volume");
	m->lazy = 1;
	m->vol->node_sync = node_sync;
	m->vol->node_sync_ctx = m;
	return 0;
}

int tree_mod_flush(struct tree_mod *m, struct r4_error *err)
{
	int rc = 0;

	for (size_t i = 0; !rc && m->dc && i < TREE_DCACHE_SLOTS; i++)
		if (m->dc[i].blk && tmod_is_stale(m, m->dc[i].blk))
			rc = dc_sync(m, &m->dc[i], err);
	if (!rc && m->stale.n)
		rc = r4i_fail(err, R4_EINVAL, "%s: %zu deferred tree nodes "
			     "were lost", m->vol->dev && m->vol->dev->path ?
			     m->vol->dev->path : "volume", m->stale.n);
	if (!rc && m->sync_rc)
		rc = r4i_fail(err, m->sync_rc, "a deferred tree node write "
			     "failed: %s", r4_strerror(m->sync_rc));
	return rc;
}

void tree_mod_fini(struct tree_mod *m)
{
	if (m->lazy && m->vol->node_sync_ctx == m) {
		m->vol->node_sync = NULL;
		m->vol->node_sync_ctx = NULL;
	}
	r4_u64map_fini(&m->stale);
	if (m->dc) {
		for (unsigned i = 0; i < TREE_DCACHE_SLOTS; i++)
			ilist_free(&m->dc[i].l);
		free(m->dc);
		m->dc = NULL;
	}
}
