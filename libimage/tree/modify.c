/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: copy-on-write tree changes: paths, node rewrites, balancing. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tree/modify.h"
#include "libimage/tree/tree.h"
#include "libimage/tree/nodebuf.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/item.h"
#include "format/node.h"
#include "format/plugin.h"

struct mpath {
	uint64_t blk[FMT_TREE_HEIGHT_MAX + 2];
	int pos[FMT_TREE_HEIGHT_MAX + 2];	/* item on the path */
};

static const char *vname(const struct tree_mod *m)
{
	return m->vol->dev && m->vol->dev->path ? m->vol->dev->path : "volume";
}

/* ---- setup ------------------------------------------------------------ */

int tree_mod_init(struct tree_mod *m, struct r4_vol *vol, struct txn *t,
		  struct r4_error *err)
{
	memset(m, 0, sizeof(*m));
	m->vol = vol;
	m->t = t;
	m->root = vol->sb.root_block;
	m->height = vol->sb.tree_height;
	m->ins_end = -1;
	if (m->height < FMT_TREE_HEIGHT_MIN || m->height > FMT_TREE_HEIGHT_MAX)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree height %u is not "
			       "in %u..%u", vname(m), m->height,
			       FMT_TREE_HEIGHT_MIN, FMT_TREE_HEIGHT_MAX);
	return 0;
}

/* ---- decoded nodes ------------------------------------------------------
 * A direct-mapped cache of item lists, one block per slot. The rule that
 * keeps it true: a slot holds a list only while the block reads as that
 * list. A list is taken out (dc_get) to be changed and comes back only
 * unchanged (dc_keep) or as what emit just wrote; a block freed or
 * rewritten otherwise loses its slot (dc_forget). */

#define TREE_DCACHE_SLOTS 1024u	/* a power of 2 */

struct tree_dslot {
	uint64_t blk;		/* 0: empty */
	unsigned level;
	struct ilist l;
};

static struct tree_dslot *dc_slot(struct tree_mod *m, uint64_t blk)
{
	if (!m->dc) {
		m->dc = calloc(TREE_DCACHE_SLOTS, sizeof(*m->dc));
		if (!m->dc)
			return NULL;
	}
	return &m->dc[(blk * 0x9e3779b97f4a7c15ull) >> 54 &
		      (TREE_DCACHE_SLOTS - 1)];
}

static int is_stale(const struct tree_mod *m, uint64_t blk)
{
	return m->stale.n && r4_u64map_find(&m->stale, blk);
}

/* The block is rewritten or freed: its list goes, deferred or not. */
static void dc_forget(struct tree_mod *m, uint64_t blk)
{
	struct tree_dslot *s = m->dc ? dc_slot(m, blk) : NULL;

	if (m->stale.n)
		r4_u64map_del(&m->stale, blk);
	if (s && s->blk == blk) {
		ilist_free(&s->l);
		s->blk = 0;
	}
}

static int write_node(struct tree_mod *m, uint64_t nb, unsigned level,
		      const struct ilist *l, int *ok, struct r4_error *err);

/* Write the deferred list of slot s into its block (s keeps it). */
static int dc_sync(struct tree_mod *m, struct tree_dslot *s,
		   struct r4_error *err)
{
	int ok = 0, rc;

	if (!s->blk || !is_stale(m, s->blk))
		return 0;
	rc = write_node(m, s->blk, s->level, &s->l, &ok, err);
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
static int dc_get(struct tree_mod *m, uint64_t blk, unsigned level,
		  struct ilist *out, struct r4_error *err)
{
	struct tree_dslot *s = m->dc ? dc_slot(m, blk) : NULL;

	if (s && s->blk == blk && blk && s->level == level) {
		*out = s->l;
		memset(&s->l, 0, sizeof(s->l));
		s->blk = 0;
		m->st.dec_hits++;
		return 0;
	}
	dc_forget(m, blk);
	m->st.dec_misses++;
	return ilist_load(m->vol, blk, level, out, err);
}

/* l is what block blk reads as: the cache takes it (l is emptied). */
static void dc_keep(struct tree_mod *m, uint64_t blk, unsigned level,
		    struct ilist *l)
{
	struct tree_dslot *s = blk ? dc_slot(m, blk) : NULL;

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

	if (!is_stale(m, blk))
		return 0;
	s = dc_slot(m, blk);
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
		if (m->dc[i].blk && is_stale(m, m->dc[i].blk))
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
	r4_u64map_fini(&m->own);
	if (m->dc) {
		for (unsigned i = 0; i < TREE_DCACHE_SLOTS; i++)
			ilist_free(&m->dc[i].l);
		free(m->dc);
		m->dc = NULL;
	}
}

static size_t ihsize(const struct tree_mod *m)
{
	return fmt_item_header_size(m->vol->keypol);
}

/* Bytes for items and their headers in one node. */
static size_t capacity(const struct tree_mod *m)
{
	return m->vol->blksize - fmt_node_header_size(m->vol->sb.node_pid);
}

size_t tree_max_item(const struct tree_mod *m)
{
	return capacity(m) - ihsize(m);
}

static void set_root(struct tree_mod *m, uint64_t root, unsigned height)
{
	m->root = root;
	m->height = height;
	m->vol->sb.root_block = root;
	m->vol->sb.tree_height = (uint16_t)height;
	txn_set_root(m->t, root, (uint16_t)height);
}

/* ---- writing nodes ------------------------------------------------------ */

/* A lazy writer's leaf or twig (joined already) goes to the cache as
 * the deferred content of its block nb, which this transaction owns: a
 * node split again before it leaves the cache is encoded once. 1 when
 * deferred (l is emptied), 0 when it is to be written now. */
static int emit_defer(struct tree_mod *m, uint64_t nb, unsigned level,
		      struct ilist *l)
{
	if (!m->lazy || level > FMT_NODE_TWIG_LEVEL || !l->n ||
	    !dc_slot(m, nb) || r4_u64set_add(&m->stale, nb) < 0)
		return 0;
	dc_keep(m, nb, level, l);
	m->st.nodes_written++;
	m->st.deferred++;
	return 1;
}

/* Write items as a node of 'level': in place when this transaction owns
 * 'old', else to a new block near old (or hint) and free old. With
 * take, the decoded-node cache takes l once the node is written. */
static int emit(struct tree_mod *m, uint64_t old, uint64_t hint,
		unsigned level, struct ilist *l, int take, uint64_t *blk,
		struct r4_error *err)
{
	uint64_t nb = old;
	int rc = 0, ok = 0;

	/* items that continue each other are one item, as pack and defer
	 * make them: the kernel merges two ctail40 items of one disk
	 * cluster in a leaf and its flush assumes it (doc/compress.md
	 * §3.1) */
	if (ilist_coalesce(l, capacity(m) - ihsize(m), m->vol->blksize,
			   m->vol->keypol))
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (old)
		dc_forget(m, old);

	if (!old || !r4_u64map_find(&m->own, old)) {
		rc = txn_alloc(m->t, old ? old : hint, &nb, err);
		if (rc)
			return rc;
		if (r4_u64set_add(&m->own, nb) < 0)
			return r4i_fail(err, -ENOMEM, "out of memory");
		m->st.nodes_alloc++;
		dc_forget(m, nb);
		if (old) {
			rc = txn_free(m->t, old, 1, err);
			m->st.nodes_freed++;
		}
		if (rc)
			return rc;
	}
	*blk = nb;
	if (take && emit_defer(m, nb, level, l))
		return 0;
	rc = write_node(m, nb, level, l, &ok, err);
	if (rc)
		return rc;
	m->st.nodes_written++;
	if (take && ok)
		dc_keep(m, nb, level, l);
	return 0;
}

/* Encode items l as node nb of 'level' (a block of the transaction). */
static int write_node(struct tree_mod *m, uint64_t nb, unsigned level,
		      const struct ilist *l, int *ok, struct r4_error *err)
{
	struct io_block *b;
	int rc, bad = -1;

	*ok = 0;
	rc = txn_new(m->t, nb, &b, err);
	if (rc)
		return rc;
	rc = fmt_node_init(b->data, m->vol->blksize, m->vol->sb.node_pid,
			   level, m->vol->sb.mkfs_id);
	for (size_t i = 0; !rc && i < l->n; i++)
		rc = node_append_item(b->data, m->vol->blksize,
				      m->vol->keypol, &l->v[i].key,
				      l->v[i].pid, l->v[i].body, l->v[i].len,
				      NULL);
	fmt_node_stamp(b->data, m->vol->blksize);
	if (!rc) {
		/* verified once here, readers trust it until it is captured
		 * again (tree_node_get); a node that does not pass is left
		 * for them to report, as before (and is not cached) */
		b->verified = !fmt_node_verify(b->data, m->vol->blksize,
					       m->vol->keypol, &bad);
		*ok = b->verified;
	}
	txn_put(m->t, b);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot build node %llu (level "
			       "%u, %zu items): %s", vname(m),
			       (unsigned long long)nb, level, l->n,
			       r4_strerror(rc));
	return 0;
}

static int drop(struct tree_mod *m, uint64_t blk, struct r4_error *err)
{
	dc_forget(m, blk);
	r4_u64map_del(&m->own, blk);
	m->st.nodes_freed++;
	return txn_free(m->t, blk, 1, err);
}

/* ---- finding a path ------------------------------------------------------ */

/* Index of the last item with key <= k, or -1. */
static int node_le(struct tree_mod *m, const uint8_t *node, uint64_t blk,
		   const struct fmt_key *k, struct r4_error *err)
{
	struct fmt_item_header ih;
	int lo = 0, hi = (int)tree_node_nr(node) - 1, ans = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (fmt_node_ih_decode(node, m->vol->blksize, m->vol->keypol,
				       (unsigned)mid, &ih))
			return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: "
				       "item header %d unreadable", vname(m),
				       (unsigned long long)blk, mid);
		if (fmt_key_cmp(&ih.key, k) <= 0) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

static int child_of(struct tree_mod *m, const uint8_t *node, uint64_t blk,
		    int pos, uint64_t *child, int *isptr,
		    struct r4_error *err)
{
	struct tree_item it;
	int rc = tree_node_item(m->vol, node, blk, (unsigned)pos, &it, err);

	if (rc)
		return rc;
	*isptr = it.plugin_id == FMT_ITEM_NODEPTR40;
	if (*isptr && fmt_nodeptr40_decode(it.body, it.len, child))
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item "
			       "%d: bad nodeptr40", vname(m),
			       (unsigned long long)blk, pos);
	if (!*isptr && node[FMT_NODE_OFF_LEVEL] > FMT_NODE_TWIG_LEVEL)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item "
			       "%d: plugin %u above the twig level", vname(m),
			       (unsigned long long)blk, pos, it.plugin_id);
	return 0;
}

/* No child to descend into at level l of block blk: a twig may hold no
 * leaf for a key (*none = 1, then ok is returned); any other level
 * must. */
static int no_child(struct tree_mod *m, uint64_t blk, unsigned l, int *none,
		    int ok, struct r4_error *err)
{
	if (l != FMT_NODE_TWIG_LEVEL)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu (level "
			       "%u) has no node pointer", vname(m),
			       (unsigned long long)blk, l);
	*none = 1;
	return ok;
}

/* Pick the child to descend into at level l for key k. *none = 1 when a
 * twig has no leaf that may hold k (a new leaf goes after pos[l]). */
static int pick(struct tree_mod *m, const uint8_t *node, uint64_t blk,
		unsigned l, const struct fmt_key *k, struct mpath *p,
		int *none, struct r4_error *err)
{
	unsigned nr = tree_node_nr(node);
	int q = node_le(m, node, blk, k, err), isptr = 0, rc;
	uint64_t child = 0;

	if (q < -1)
		return q;
	if (!nr)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu (level "
			       "%u) is empty", vname(m),
			       (unsigned long long)blk, l);
	p->pos[l] = q;
	if (q >= 0) {
		rc = child_of(m, node, blk, q, &child, &isptr, err);
		if (rc)
			return rc;
	}
	if (!isptr && (q < 0 || l == FMT_NODE_TWIG_LEVEL) &&
	    (unsigned)(q + 1) < nr) {
		rc = child_of(m, node, blk, q + 1, &child, &isptr, err);
		if (rc)
			return rc;
		if (isptr)
			p->pos[l] = q + 1;
	}
	if (!isptr)
		return no_child(m, blk, l, none, 0, err);
	p->blk[l - 1] = child;
	return 0;
}

/* When block blk's items are in the cache (deferred or not): *pos =
 * the index of its last item with key <= k (-1 none), and 1. Reading a
 * deferred leaf's block would write it first. */
static int dc_find_le(struct tree_mod *m, uint64_t blk, unsigned level,
		      const struct fmt_key *k, int *pos)
{
	struct tree_dslot *s = m->dc ? dc_slot(m, blk) : NULL;
	long lo = 0, hi, ans = -1;

	if (!s || s->blk != blk || s->level != level || !s->l.n)
		return 0;
	hi = (long)s->l.n - 1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (fmt_key_cmp(&s->l.v[mid].key, k) <= 0) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	*pos = (int)ans;
	return 1;
}

static uint64_t sib(const struct ilist *P, long i);

/* pick() from the cached items of p->blk[l] (a deferred twig is not
 * written for it): 1 done, 0 not cached, < 0 error. */
static int dc_pick(struct tree_mod *m, unsigned l, const struct fmt_key *k,
		   struct mpath *p, int *none, struct r4_error *err)
{
	uint64_t blk = p->blk[l], child = 0;
	int q = -1;
	struct tree_dslot *s;

	if (!dc_find_le(m, blk, l, k, &q))
		return 0;
	s = dc_slot(m, blk);
	p->pos[l] = q;
	if (q >= 0)
		child = sib(&s->l, q);
	if (!child && (q < 0 || l == FMT_NODE_TWIG_LEVEL) &&
	    (size_t)(q + 1) < s->l.n && (child = sib(&s->l, q + 1)) != 0)
		p->pos[l] = q + 1;
	if (!child)
		return no_child(m, blk, l, none, 1, err);
	p->blk[l - 1] = child;
	return 1;
}

/* Path from the root to level 'to' for key k. */
static int path_find(struct tree_mod *m, const struct fmt_key *k,
		     unsigned to, struct mpath *p, int *none,
		     struct r4_error *err)
{
	struct io_block *b;
	int rc = 0;

	*none = 0;
	p->blk[m->height] = m->root;
	for (unsigned l = m->height; !rc && l >= to; l--) {
		if (l == to && dc_find_le(m, p->blk[l], l, k, &p->pos[l]))
			break;
		if (l != to && (rc = dc_pick(m, l, k, p, none, err)) != 0) {
			if (rc < 0)
				return rc;
			rc = 0;
			if (*none)
				break;
			continue;
		}
		rc = tree_node_get(m->vol, p->blk[l], l, &b, err);
		if (rc)
			return rc;
		if (l == to) {
			rc = node_le(m, b->data, p->blk[l], k, err);
			p->pos[l] = rc;
			rc = rc < -1 ? rc : 0;
		} else {
			rc = pick(m, b->data, p->blk[l], l, k, p, none, err);
		}
		io_cache_put(&m->vol->cache, b);
		if (*none || l == to)
			break;
	}
	return rc;
}

static int oom(struct r4_error *err);

static int peek_copy(const struct fmt_key *ik, unsigned ipid,
		     const uint8_t *body, size_t ilen, struct tree_peek *out,
		     uint8_t **buf, size_t *cap)
{
	if (R4_RESERVE(*buf, *cap, ilen ? ilen : 1, 1024))
		return -ENOMEM;
	if (ilen)
		memcpy(*buf, body, ilen);
	out->key = *ik;
	out->pid = ipid;
	out->len = ilen;
	return 0;
}

/* The key of item pos + 1 of node blk at level l: 1 with *key, 0 when
 * pos is its last item, < 0 an error (cached lists first). */
static int key_after(struct tree_mod *m, uint64_t blk, unsigned l, int pos,
		     struct fmt_key *key, struct r4_error *err)
{
	struct tree_dslot *s = m->dc ? dc_slot(m, blk) : NULL;
	struct io_block *b;
	struct tree_item it;
	int rc;

	if (s && s->blk == blk && s->level == l && s->l.n) {
		if ((size_t)(pos + 1) >= s->l.n)
			return 0;
		*key = s->l.v[pos + 1].key;
		return 1;
	}
	rc = tree_node_get(m->vol, blk, l, &b, err);
	if (rc)
		return rc;
	if ((unsigned)(pos + 1) >= tree_node_nr(b->data))
		rc = 0;
	else if (!(rc = tree_node_item(m->vol, b->data, blk,
				       (unsigned)(pos + 1), &it, err)))
		rc = 1;
	if (rc == 1)
		*key = it.key;
	io_cache_put(&m->vol->cache, b);
	return rc;
}

int tree_mod_peek(struct tree_mod *m, const struct fmt_key *k,
		  struct tree_peek *out, uint8_t **buf, size_t *cap,
		  struct r4_error *err)
{
	struct tree_dslot *s;
	struct tree_item it;
	struct io_block *b;
	struct mpath p;
	int none = 0, rc = path_find(m, k, FMT_NODE_LEAF_LEVEL, &p, &none, err);

	if (rc)
		return rc;
	if (none || p.pos[1] < 0)
		return 1;
	out->blk = p.blk[1];
	out->pos = (unsigned)p.pos[1];
	/* the next key in the tree: in the leaf, else the first key after
	 * the leaf's range in the lowest ancestor that has one */
	out->next_at = 0;
	for (unsigned l = 1; !out->next_at && l <= m->height; l++) {
		rc = key_after(m, p.blk[l], l, p.pos[l], &out->next, err);
		if (rc < 0)
			return rc;
		if (rc)
			out->next_at = (int)l;
	}
	if (!out->next_at)
		out->next_at = -1;
	s = m->dc ? dc_slot(m, p.blk[1]) : NULL;
	if (s && s->blk == p.blk[1] && s->level == FMT_NODE_LEAF_LEVEL &&
	    (size_t)p.pos[1] < s->l.n) {
		const struct mitem *mi = &s->l.v[p.pos[1]];

		rc = peek_copy(&mi->key, mi->pid, mi->body, mi->len, out, buf,
			       cap);
		return rc ? oom(err) : 0;
	}
	rc = tree_node_get(m->vol, p.blk[1], FMT_NODE_LEAF_LEVEL, &b, err);
	if (rc)
		return rc;
	if ((unsigned)p.pos[1] >= tree_node_nr(b->data))
		rc = 1;
	else
		rc = tree_node_item(m->vol, b->data, p.blk[1],
				    (unsigned)p.pos[1], &it, err);
	if (!rc && peek_copy(&it.key, it.plugin_id, it.body, it.len, out,
			     buf, cap))
		rc = oom(err);
	io_cache_put(&m->vol->cache, b);
	return rc;
}

/* ---- rewriting a level ------------------------------------------------- */

static int level_set(struct tree_mod *m, struct mpath *p, unsigned l,
		     struct ilist *items, struct r4_error *err);

static int oom(struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "out of memory");
}

/* Pack items into nodes: fill from the left (target = capacity) or even
 * out (even != 0). */
static int pack(struct tree_mod *m, struct ilist *items, int even,
		struct ilist **ch, size_t *nch, struct r4_error *err)
{
	size_t cap = capacity(m), total = ilist_bytes(items, ihsize(m));
	size_t target = cap, k = (total + cap - 1) / cap;
	int rc;

	if (even && k >= 2)
		target = (total + k - 1) / k;
	rc = ilist_pack(items, cap, target, ihsize(m), m->vol->blksize,
			m->vol->keypol, ch, nch);
	if (rc == R4_ERANGE)
		return r4i_fail(err, rc, "%s: an item does not fit in a node",
			       vname(m));
	if (rc == -ENOMEM)
		return oom(err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot pack items into nodes: %s",
			       vname(m), r4_strerror(rc));
	return 0;
}

static void chunks_free(struct ilist *ch, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ilist_free(&ch[i]);
	free(ch);
}

/* Write chunks over the blocks old[0..nold) (then new blocks), free the
 * old blocks left over; the pointers to them go into np. */
static int emit_chunks(struct tree_mod *m, unsigned l, struct ilist *ch,
		       size_t n, const uint64_t *old, size_t nold,
		       struct ilist *np, struct r4_error *err)
{
	uint64_t hint = nold ? old[0] : m->root, nb;
	uint8_t buf[FMT_NODEPTR40_SIZE];
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i++) {
		struct fmt_key first = ch[i].v[0].key;

		rc = emit(m, i < nold ? old[i] : 0, hint, l, &ch[i], 1, &nb,
			  err);
		if (rc)
			break;
		hint = nb;
		fmt_nodeptr40_encode(nb, buf);
		if (ilist_push(np, &first, FMT_ITEM_NODEPTR40, buf,
			       sizeof(buf)))
			rc = oom(err);
	}
	for (size_t i = n; !rc && i < nold; i++)
		rc = drop(m, old[i], err);
	if (n > nold && !rc)
		m->st.splits++;
	if (n < nold && !rc)
		m->st.merges++;
	return rc;
}

/* Child block of parent item i, 0 when it is not a node pointer. */
static uint64_t sib(const struct ilist *P, long i)
{
	uint64_t b = 0;

	if (i < 0 || (size_t)i >= P->n || P->v[i].pid != FMT_ITEM_NODEPTR40 ||
	    fmt_nodeptr40_decode(P->v[i].body, P->v[i].len, &b))
		return 0;
	return b;
}

static int root_shrink(struct tree_mod *m, struct ilist *top,
		       struct r4_error *err)
{
	struct ilist cur = *top;
	unsigned height0 = m->height;
	uint64_t child;
	int rc = 0;

	memset(top, 0, sizeof(*top));
	while (!rc && m->height > FMT_TREE_HEIGHT_MIN && cur.n == 1 &&
	       cur.v[0].pid == FMT_ITEM_NODEPTR40 &&
	       !fmt_nodeptr40_decode(cur.v[0].body, cur.v[0].len, &child)) {
		rc = drop(m, m->root, err);
		if (rc)
			break;
		set_root(m, child, m->height - 1);
		m->st.shrinks++;
		ilist_free(&cur);
		rc = dc_get(m, child, m->height, &cur, err);
	}
	/* cur is what the root reads as (perhaps deferred): keep it */
	if (!rc && m->height < height0)
		dc_keep(m, m->root, m->height, &cur);
	ilist_free(&cur);
	return rc;
}

static int root_set(struct tree_mod *m, unsigned l, struct ilist *items,
		    struct r4_error *err)
{
	struct ilist *ch = NULL, np = { NULL, 0, 0 }, one = { NULL, 0, 0 };
	uint64_t nb, old = m->root;
	size_t nch = 0;
	int rc;

	if (!items->n) {
		ilist_free(items);
		return r4i_fail(err, R4_ECORRUPT, "%s: the change would leave "
			       "the tree empty", vname(m));
	}
	if (ilist_bytes(items, ihsize(m)) <= capacity(m)) {
		rc = emit(m, old, old, l, items, 0, &nb, err);
		if (!rc && nb != old)
			set_root(m, nb, l);
		if (!rc)
			rc = root_shrink(m, items, err);
		ilist_free(items);
		return rc;
	}
	if (l + 1 > FMT_KERNEL_TREE_HEIGHT_MAX) {
		ilist_free(items);
		return r4i_fail(err, R4_ENOSPC, "%s: the tree would be higher "
			       "than %u levels", vname(m),
			       FMT_KERNEL_TREE_HEIGHT_MAX);
	}
	rc = pack(m, items, 1, &ch, &nch, err);
	if (!rc)
		rc = emit_chunks(m, l, ch, nch, &old, 1, &np, err);
	if (!rc)
		rc = emit(m, 0, old, l + 1, &np, 0, &nb, err);
	if (!rc) {
		set_root(m, nb, l + 1);
		m->st.grows++;
	}
	chunks_free(ch, nch);
	ilist_free(&np);
	ilist_free(&one);
	return rc;
}

/* Which nodes take part: [first, first + count) of the parent's items.
 * Loads the siblings' items in front of / after items. */
static int choose(struct tree_mod *m, struct ilist *P, long pos,
		  unsigned l, struct ilist *items, long *first, size_t *count,
		  uint64_t *blks, struct r4_error *err)
{
	size_t cap = capacity(m), ih = ihsize(m);
	size_t total = ilist_bytes(items, ih), lb = SIZE_MAX, rb = SIZE_MAX;
	uint64_t lblk = sib(P, pos - 1), rblk = sib(P, pos + 1);
	struct ilist L = { NULL, 0, 0 }, R = { NULL, 0, 0 }, tmp;
	int rc = 0, use = 0;	/* -1 left, +1 right */

	*first = pos;
	*count = 1;
	if (!items->n || (m->no_merge && total <= cap))
		return 0;
	if (total > cap || total < cap / 2) {
		if (lblk && !(rc = dc_get(m, lblk, l, &L, err)))
			lb = ilist_bytes(&L, ih);
		if (!rc && rblk && !(rc = dc_get(m, rblk, l, &R, err)))
			rb = ilist_bytes(&R, ih);
	}
	if (rc)
		goto out;
	if (total <= cap) {
		if (lb != SIZE_MAX && lb + total <= cap)
			use = -1;
		else if (rb != SIZE_MAX && rb + total <= cap)
			use = 1;
	} else {
		size_t best = lb < rb ? lb : rb;

		if (best != SIZE_MAX && best + total + 2 * ih + 64 <= 2 * cap)
			use = lb <= rb ? -1 : 1;
	}
	if (use < 0) {
		tmp = *items;
		*items = L;
		memset(&L, 0, sizeof(L));
		rc = ilist_move(items, &tmp);
		ilist_free(&tmp);
		*first = pos - 1;
		blks[1] = blks[0];
		blks[0] = lblk;
		*count = 2;
	} else if (use > 0) {
		rc = ilist_move(items, &R);
		blks[1] = rblk;
		*count = 2;
	}
	if (rc)
		rc = oom(err);
	if (use)
		m->st.shifts += total > cap;
out:
	/* a neighbour not taken is unchanged */
	if (!rc && use >= 0 && L.n)
		dc_keep(m, lblk, l, &L);
	if (!rc && use <= 0 && R.n)
		dc_keep(m, rblk, l, &R);
	ilist_free(&L);
	ilist_free(&R);
	return rc;
}

/* 1 when the new items, ending at index ie of items, are at or near the
 * end of the node: what follows them takes at most a quarter of a node.
 * Inserts in key order come this way; splitting such a node so its left
 * part stays full (moving only what does not fit) leaves full nodes
 * behind them, where halves would leave every node half empty. */
static int near_end(const struct tree_mod *m, const struct ilist *items,
		    long ie)
{
	size_t after = 0;

	if (ie < 0 || (size_t)ie > items->n)
		return 0;
	for (size_t i = (size_t)ie; i < items->n; i++)
		after += ihsize(m) + items->v[i].len;
	return after <= capacity(m) / 4;
}

/* A lazy writer's leaf or twig that stays one node, in the block this
 * transaction owns, with the same first key: its list goes to the cache
 * as the block's deferred content (written by dc_sync). 1 when done,
 * 0 when not for deferring, < 0 error. */
static int defer(struct tree_mod *m, unsigned l, uint64_t blk,
		 const struct fmt_key *first, struct ilist *items)
{
	if (!m->lazy || l > FMT_NODE_TWIG_LEVEL || !items->n ||
	    fmt_key_cmp(&items->v[0].key, first) ||
	    !r4_u64map_find(&m->own, blk) ||
	    ilist_bytes(items, ihsize(m)) > capacity(m) ||
	    !dc_slot(m, blk) || r4_u64set_add(&m->stale, blk) < 0)
		return 0;
	/* what pack would make of it: one chunk, the items joined (the
	 * first item keeps its key) */
	if (ilist_coalesce(items, capacity(m) - ihsize(m), m->vol->blksize,
			   m->vol->keypol)) {
		r4_u64map_del(&m->stale, blk);
		items->n = 0;	/* half joined: leaked, not freed twice */
		return -ENOMEM;
	}
	dc_keep(m, blk, l, items);
	m->st.nodes_written++;
	m->st.deferred++;
	return 1;
}

static int level_set(struct tree_mod *m, struct mpath *p, unsigned l,
		     struct ilist *items, struct r4_error *err)
{
	struct ilist P = { NULL, 0, 0 }, np = { NULL, 0, 0 }, *ch = NULL;
	long pos = p->pos[l + 1], first = pos;
	uint64_t blks[2] = { p->blk[l], 0 };
	size_t count = 1, nch = 0;
	long ie = m->ins_end;
	int rc;

	m->ins_end = -1;
	if (l >= m->height)
		return root_set(m, l, items, err);
	rc = dc_get(m, p->blk[l + 1], l + 1, &P, err);
	if (!rc && (pos < 0 || (size_t)pos >= P.n || sib(&P, pos) != blks[0]))
		rc = r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: item %ld "
			     "does not point to %llu", vname(m),
			     (unsigned long long)p->blk[l + 1], pos,
			     (unsigned long long)blks[0]);
	if (!rc)
		rc = choose(m, &P, pos, l, items, &first, &count, blks, err);
	if (!rc && count == 1 &&
	    (rc = defer(m, l, blks[0], &P.v[pos].key, items)) != 0) {
		if (rc > 0)
			dc_keep(m, p->blk[l + 1], l + 1, &P);
		ilist_free(&P);
		ilist_free(items);
		return rc > 0 ? 0 : oom(err);	/* the parent is unchanged */
	}
	if (!rc && items->n)
		rc = pack(m, items, count == 1 && !near_end(m, items, ie),
			  &ch, &nch, err);
	if (!rc)
		rc = emit_chunks(m, l, ch, nch, blks, count, &np, err);
	ilist_free(items);
	chunks_free(ch, nch);
	if (!rc && count == 1 && np.n == 1 &&
	    !fmt_key_cmp(&np.v[0].key, &P.v[pos].key) &&
	    !memcmp(np.v[0].body, P.v[pos].body, FMT_NODEPTR40_SIZE)) {
		dc_keep(m, p->blk[l + 1], l + 1, &P);
		goto out;	/* the parent does not change */
	}
	if (!rc) {
		struct tree_newitem *w = calloc(np.n + 1, sizeof(*w));

		for (size_t i = 0; w && i < np.n; i++) {
			w[i].key = np.v[i].key;
			w[i].pid = FMT_ITEM_NODEPTR40;
			w[i].body = np.v[i].body;
			w[i].len = np.v[i].len;
		}
		rc = w ? ilist_splice(&P, (size_t)first, (size_t)first + count,
				      w, np.n) : -ENOMEM;
		free(w);
		if (rc)
			rc = oom(err);
		else
			rc = level_set(m, p, l + 1, &P, err);
	}
out:
	ilist_free(&P);
	ilist_free(&np);
	return rc;
}

/* ---- public operations ---------------------------------------------- */

static struct tree_newitem *as_new(const struct ilist *l)
{
	struct tree_newitem *w = calloc(l->n + 1, sizeof(*w));

	for (size_t i = 0; w && i < l->n; i++) {
		w[i].key = l->v[i].key;
		w[i].pid = l->v[i].pid;
		w[i].body = l->v[i].body;
		w[i].len = l->v[i].len;
	}
	return w;
}

/* Leaf items that no leaf may take: new leaves, pointed to from the
 * twig level. */
static int new_leaves(struct tree_mod *m, uint64_t hint,
		      const struct tree_newitem *it, size_t n,
		      struct r4_error *err)
{
	struct ilist all = { NULL, 0, 0 }, np = { NULL, 0, 0 }, *ch = NULL;
	struct tree_newitem *w = NULL;
	size_t nch = 0;
	int rc = ilist_splice(&all, 0, 0, it, n) ? oom(err) : 0;

	if (!rc)
		rc = pack(m, &all, 1, &ch, &nch, err);
	if (!rc)
		rc = emit_chunks(m, FMT_NODE_LEAF_LEVEL, ch, nch, &hint, 0,
				 &np, err);
	if (!rc && !(w = as_new(&np)))
		rc = oom(err);
	if (!rc)
		rc = tree_put_items(m, FMT_NODE_TWIG_LEVEL, &w[0].key, 0, w,
				    np.n, err);
	free(w);
	chunks_free(ch, nch);
	ilist_free(&all);
	ilist_free(&np);
	return rc;
}

/* Before an item goes into a twig after item pos[2]: when that item
 * points to a leaf holding keys on both sides of 'at', cut the leaf;
 * *right receives the items above 'at', to put back afterwards. */
static int twig_cut(struct tree_mod *m, struct mpath *p,
		    const struct fmt_key *at, struct ilist *right,
		    struct r4_error *err)
{
	struct ilist twig = { NULL, 0, 0 }, leaf = { NULL, 0, 0 };
	uint64_t child;
	size_t k = 0;
	int rc;

	if (p->pos[2] < 0)
		return 0;
	rc = dc_get(m, p->blk[2], 2, &twig, err);
	child = rc ? 0 : sib(&twig, p->pos[2]);
	if (!rc)
		dc_keep(m, p->blk[2], 2, &twig);
	ilist_free(&twig);
	if (rc || !child)
		return rc;
	rc = dc_get(m, child, 1, &leaf, err);
	if (rc)
		return rc;
	while (k < leaf.n && fmt_key_cmp(&leaf.v[k].key, at) < 0)
		k++;
	if (k < leaf.n && !fmt_key_cmp(&leaf.v[k].key, at))
		rc = r4i_fail(err, R4_EEXIST, "%s: tree node %llu: an item "
			     "with that key exists", vname(m),
			     (unsigned long long)child);
	if (rc || k == leaf.n) {
		dc_keep(m, child, 1, &leaf);	/* unchanged */
		return rc;
	}
	rc = ilist_cut(&leaf, k, right);
	if (rc) {
		ilist_free(&leaf);
		return oom(err);
	}
	p->blk[1] = child;
	m->no_merge = 1;
	rc = level_set(m, p, 1, &leaf, err);
	m->no_merge = 0;
	return rc;
}

static int put_once(struct tree_mod *m, unsigned level,
		    const struct fmt_key *at, int replace,
		    const struct tree_newitem *it, size_t n,
		    struct ilist *right, struct r4_error *err)
{
	struct ilist L = { NULL, 0, 0 };
	struct mpath p;
	int none = 0, rc, pos, found;

	rc = path_find(m, at, level, &p, &none, err);
	if (!rc && none)
		return replace ? r4i_fail(err, R4_ENOTFOUND, "%s: no item to "
					 "replace", vname(m)) :
				 new_leaves(m, p.blk[2], it, n, err);
	if (!rc && level == FMT_NODE_TWIG_LEVEL && !replace && !right->n) {
		rc = twig_cut(m, &p, at, right, err);
		if (!rc && right->n)
			rc = path_find(m, at, level, &p, &none, err);
	}
	if (!rc)
		rc = dc_get(m, p.blk[level], level, &L, err);
	if (rc)
		return rc;
	pos = p.pos[level];
	found = pos >= 0 && (size_t)pos < L.n &&
		!fmt_key_cmp(&L.v[pos].key, at);
	if (replace && !found)
		rc = r4i_fail(err, R4_ENOTFOUND, "%s: tree node %llu: no item "
			     "to replace", vname(m),
			     (unsigned long long)p.blk[level]);
	else if (!replace && found)
		rc = r4i_fail(err, R4_EEXIST, "%s: tree node %llu: an item "
			     "with that key exists", vname(m),
			     (unsigned long long)p.blk[level]);
	if (rc)
		dc_keep(m, p.blk[level], level, &L);	/* unchanged */
	else if (ilist_splice(&L, (size_t)(pos + !replace), (size_t)pos + 1,
			      it, n))
		rc = oom(err);
	if (rc) {
		ilist_free(&L);
		return rc;
	}
	m->ins_end = pos + !replace + (long)n;
	return level_set(m, &p, level, &L, err);
}

int tree_put_items(struct tree_mod *m, unsigned level,
		   const struct fmt_key *at, int replace,
		   const struct tree_newitem *it, size_t n,
		   struct r4_error *err)
{
	struct ilist right = { NULL, 0, 0 };
	struct tree_newitem *w;
	int rc;

	if (level != FMT_NODE_LEAF_LEVEL && level != FMT_NODE_TWIG_LEVEL)
		return r4i_fail(err, R4_EINVAL, "items go to level 1 or 2");
	for (size_t i = 0; i < n; i++)
		if (it[i].len > tree_max_item(m) || !it[i].len)
			return r4i_fail(err, R4_EINVAL, "%s: item of %zu bytes "
				       "(at most %zu)", vname(m), it[i].len,
				       tree_max_item(m));
	rc = put_once(m, level, at, replace, it, n, &right, err);
	if (rc || !right.n) {
		ilist_free(&right);
		return rc;
	}
	w = as_new(&right);
	rc = w ? tree_put_items(m, FMT_NODE_LEAF_LEVEL, &w[0].key, 0, w,
				right.n, err) : oom(err);
	free(w);
	ilist_free(&right);
	return rc;
}

int tree_insert(struct tree_mod *m, unsigned level, const struct fmt_key *key,
		unsigned pid, const void *body, size_t len,
		struct r4_error *err)
{
	struct tree_newitem it = { *key, pid, body, len };

	return tree_put_items(m, level, key, 0, &it, 1, err);
}

int tree_delete(struct tree_mod *m, unsigned level, const struct fmt_key *key,
		struct r4_error *err)
{
	return tree_put_items(m, level, key, 1, NULL, 0, err);
}

int tree_replace(struct tree_mod *m, unsigned level,
		 const struct fmt_key *key, unsigned pid, const void *body,
		 size_t len, struct r4_error *err)
{
	struct tree_newitem it = { *key, pid, body, len };

	return tree_put_items(m, level, key, 1, &it, 1, err);
}
