/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree writer's paths from the root (through the cache of
 * decoded nodes, whose deferred nodes are not written for a lookup) and
 * tree_mod_peek. */
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
				       "item header %d unreadable", tmod_vname(m),
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
			       "%d: bad nodeptr40", tmod_vname(m),
			       (unsigned long long)blk, pos);
	if (!*isptr && node[FMT_NODE_OFF_LEVEL] > FMT_NODE_TWIG_LEVEL)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu, item "
			       "%d: plugin %u above the twig level", tmod_vname(m),
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
			       "%u) has no node pointer", tmod_vname(m),
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
			       "%u) is empty", tmod_vname(m),
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

/* fmt_key_cmp(a, b) <= 0, inline for the searches below. */
static inline int key_le(const struct fmt_key *a, const struct fmt_key *b)
{
	for (int i = 0; i < 4; i++)
		if (a->el[i] != b->el[i])
			return a->el[i] < b->el[i];
	return 1;
}

/* When block blk's items are in the cache (deferred or not): *pos =
 * the index of its last item with key <= k (-1 none), *sp its slot,
 * and 1. Reading a deferred leaf's block would write it first. The
 * slot's last answer and the one after it are tried before a
 * bisection: inserts in key order ask for the same place or the next
 * one again and again; either is taken only when the keys on both
 * sides of it say so, as the bisection would find it. */
static int dc_find_le(struct tree_mod *m, uint64_t blk, unsigned level,
		      const struct fmt_key *k, int *pos,
		      struct tree_dslot **sp)
{
	struct tree_dslot *s = m->dc ? tmod_dc_slot(m, blk) : NULL;
	long lo = 0, hi, ans = -1, n, h;
	const struct mitem *v;

	if (!s || s->blk != blk || s->level != level || !s->l.n)
		return 0;
	*sp = s;
	n = (long)s->l.n;
	v = s->l.v;
	for (h = s->hint; h >= -1 && h < n && h <= s->hint + 1; h++) {
		if (h >= 0 && !key_le(&v[h].key, k))
			break;
		if (h + 1 == n || !key_le(&v[h + 1].key, k)) {
			s->hint = h;
			*pos = (int)h;
			return 1;
		}
	}
	hi = n - 1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (key_le(&v[mid].key, k)) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	s->hint = ans;
	*pos = (int)ans;
	return 1;
}

/* pick() from the cached items of p->blk[l] (a deferred twig is not
 * written for it): 1 done, 0 not cached, < 0 error. */
static int dc_pick(struct tree_mod *m, unsigned l, const struct fmt_key *k,
		   struct mpath *p, int *none, struct r4_error *err)
{
	uint64_t blk = p->blk[l], child = 0;
	int q = -1;
	struct tree_dslot *s;

	if (!dc_find_le(m, blk, l, k, &q, &s))
		return 0;
	p->pos[l] = q;
	if (q >= 0)
		child = tmod_sib(&s->l, q);
	if (!child && (q < 0 || l == FMT_NODE_TWIG_LEVEL) &&
	    (size_t)(q + 1) < s->l.n && (child = tmod_sib(&s->l, q + 1)) != 0)
		p->pos[l] = q + 1;
	if (!child)
		return no_child(m, blk, l, none, 1, err);
	p->blk[l - 1] = child;
	return 1;
}

/* Path from the root to level 'to' for key k. */
int tmod_path_find(struct tree_mod *m, const struct fmt_key *k,
		     unsigned to, struct mpath *p, int *none,
		     struct r4_error *err)
{
	struct tree_dslot *s;
	struct io_block *b;
	int rc = 0;

	*none = 0;
	p->blk[m->height] = m->root;
	for (unsigned l = m->height; !rc && l >= to; l--) {
		if (l == to && dc_find_le(m, p->blk[l], l, k, &p->pos[l], &s))
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
	struct tree_dslot *s = m->dc ? tmod_dc_slot(m, blk) : NULL;
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
	int none = 0, rc = tmod_path_find(m, k, FMT_NODE_LEAF_LEVEL, &p, &none, err);

	if (rc)
		return rc;
	if (none || p.pos[1] < 0)
		return 1;
	out->blk = p.blk[1];
	out->pos = (unsigned)p.pos[1];
	out->checked = 0;
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
	s = m->dc ? tmod_dc_slot(m, p.blk[1]) : NULL;
	if (s && s->blk == p.blk[1] && s->level == FMT_NODE_LEAF_LEVEL &&
	    (size_t)p.pos[1] < s->l.n) {
		const struct mitem *mi = &s->l.v[p.pos[1]];

		rc = peek_copy(&mi->key, mi->pid, mi->body, mi->len, out, buf,
			       cap);
		out->checked = mi->checked;
		return rc ? tmod_oom(err) : 0;
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
		rc = tmod_oom(err);
	io_cache_put(&m->vol->cache, b);
	return rc;
}

int tree_mod_mark_checked(struct tree_mod *m, const struct tree_peek *pk,
			  const uint8_t *body)
{
	struct tree_dslot *s = m->dc ? tmod_dc_slot(m, pk->blk) : NULL;
	struct mitem *mi;

	if (!s || s->blk != pk->blk || s->level != FMT_NODE_LEAF_LEVEL ||
	    pk->pos >= s->l.n)
		return 0;
	mi = &s->l.v[pk->pos];
	/* the bytes verified must be the item's still: the mark is only
	 * as good as that comparison */
	if (mi->pid != pk->pid || mi->len != pk->len ||
	    fmt_key_cmp(&mi->key, &pk->key) ||
	    (mi->len && memcmp(mi->body, body, mi->len)))
		return 0;
	mi->checked = 1;
	return 1;
}

int tree_mod_mark_put(struct tree_mod *m, const struct fmt_key *k,
		      unsigned pid, const uint8_t *body, size_t len)
{
	struct r4_error err = { 0, "", 0 };
	struct tree_dslot *s;
	struct tree_peek pk;
	struct mpath p;
	int none = 0, pos = -1;

	if (!m->dc || m->height < FMT_NODE_LEAF_LEVEL ||
	    m->height > FMT_TREE_HEIGHT_MAX)
		return 0;
	p.blk[m->height] = m->root;
	for (unsigned l = m->height; l > FMT_NODE_LEAF_LEVEL; l--)
		if (dc_pick(m, l, k, &p, &none, &err) != 1 || none)
			return 0;
	if (!dc_find_le(m, p.blk[FMT_NODE_LEAF_LEVEL], FMT_NODE_LEAF_LEVEL, k,
			&pos, &s) || pos < 0)
		return 0;
	memset(&pk, 0, sizeof(pk));
	pk.key = *k;
	pk.pid = pid;
	pk.blk = p.blk[FMT_NODE_LEAF_LEVEL];
	pk.pos = (unsigned)pos;
	pk.len = len;
	return tree_mod_mark_checked(m, &pk, body);
}
