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

struct tree_dslot *tmod_dc_slot(struct tree_mod *m, uint64_t blk)
{
	if (!m->dc) {
		m->dc = calloc(TREE_DCACHE_SLOTS, sizeof(*m->dc));
		if (!m->dc)
			return NULL;
	}
	return &m->dc[(blk * 0x9e3779b97f4a7c15ull) >> 54 &
		      (TREE_DCACHE_SLOTS - 1)];
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
