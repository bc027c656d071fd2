/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: copy-on-write tree changes: paths, node rewrites, balancing. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tree/modify_int.h"
#include "libimage/tree/tree.h"
#include "libimage/tree/nodebuf.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/item.h"
#include "format/node.h"
#include "format/plugin.h"

/* The volume's name for messages. */
const char *tmod_vname(const struct tree_mod *m)
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
	m->scope = txn_scope_begin(t);
	if (m->height < FMT_TREE_HEIGHT_MIN || m->height > FMT_TREE_HEIGHT_MAX)
		return r4i_fail(err, R4_ECORRUPT, "%s: tree height %u is not "
			       "in %u..%u", tmod_vname(m), m->height,
			       FMT_TREE_HEIGHT_MIN, FMT_TREE_HEIGHT_MAX);
	return 0;
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
 * the deferred content of its block nb, which this writer made: a
 * node split again before it leaves the cache is encoded once. 1 when
 * deferred (l is emptied), 0 when it is to be written now. */
static int emit_defer(struct tree_mod *m, uint64_t nb, unsigned level,
		      struct ilist *l)
{
	if (!m->lazy || level > FMT_NODE_TWIG_LEVEL || !l->n ||
	    !tmod_dc_slot(m, nb) || r4_u64set_add(&m->stale, nb) < 0)
		return 0;
	tmod_dc_keep(m, nb, level, l);
	m->st.nodes_written++;
	m->st.deferred++;
	return 1;
}

/* Write items as a node of 'level': in place when this writer made
 * 'old' (allocated it in its scope), else to a new block near old (or
 * hint) and free old. With take, the decoded-node cache takes l once
 * the node is written. */
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
		tmod_dc_forget(m, old);

	if (!old || !txn_owns_in(m->t, old, m->scope)) {
		rc = txn_alloc_in(m->t, m->scope, old ? old : hint, &nb, err);
		if (rc)
			return rc;
		m->st.nodes_alloc++;
		tmod_dc_forget(m, nb);
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
	rc = tmod_write_node(m, nb, level, l, &ok, err);
	if (rc)
		return rc;
	m->st.nodes_written++;
	if (take && ok)
		tmod_dc_keep(m, nb, level, l);
	return 0;
}

/* Encode items l as node nb of 'level' (a block of the transaction). */
int tmod_write_node(struct tree_mod *m, uint64_t nb, unsigned level,
		      const struct ilist *l, int *ok, struct r4_error *err)
{
	struct io_block *b;
	struct node_fill f;
	int rc, rc2, bad = -1;

	*ok = 0;
	/* node_fill writes every byte: the buffer is not zeroed first */
	rc = txn_new_raw(m->t, nb, &b, err);
	if (rc)
		return rc;
	rc = node_fill_begin(&f, b->data, m->vol->blksize, m->vol->keypol,
			     m->vol->sb.node_pid, level, m->vol->sb.mkfs_id);
	if (rc)
		memset(b->data, 0, m->vol->blksize);	/* as txn_new's */
	for (size_t i = 0; !rc && i < l->n; i++)
		rc = node_fill_item(&f, &l->v[i].key, l->v[i].pid,
				    l->v[i].body, l->v[i].len);
	rc2 = node_fill_end(&f);
	if (!rc)
		rc = rc2;
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
			       "%u, %zu items): %s", tmod_vname(m),
			       (unsigned long long)nb, level, l->n,
			       r4_strerror(rc));
	return 0;
}

static int drop(struct tree_mod *m, uint64_t blk, struct r4_error *err)
{
	tmod_dc_forget(m, blk);
	m->st.nodes_freed++;
	return txn_free(m->t, blk, 1, err);
}

/* ---- rewriting a level ------------------------------------------------- */

static int level_set(struct tree_mod *m, struct mpath *p, unsigned l,
		     struct ilist *items, struct r4_error *err);

int tmod_oom(struct r4_error *err)
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
			       tmod_vname(m));
	if (rc == -ENOMEM)
		return tmod_oom(err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot pack items into nodes: %s",
			       tmod_vname(m), r4_strerror(rc));
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
			rc = tmod_oom(err);
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
uint64_t tmod_sib(const struct ilist *P, long i)
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
		rc = tmod_dc_get(m, child, m->height, &cur, err);
	}
	/* cur is what the root reads as (perhaps deferred): keep it */
	if (!rc && m->height < height0)
		tmod_dc_keep(m, m->root, m->height, &cur);
	ilist_free(&cur);
	return rc;
}

static int root_set(struct tree_mod *m, unsigned l, struct ilist *items,
		    struct r4_error *err)
{
	struct ilist *ch = NULL, np = ILIST_EMPTY, one = ILIST_EMPTY;
	uint64_t nb, old = m->root;
	size_t nch = 0;
	int rc;

	if (!items->n) {
		ilist_free(items);
		return r4i_fail(err, R4_ECORRUPT, "%s: the change would leave "
			       "the tree empty", tmod_vname(m));
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
			       "than %u levels", tmod_vname(m),
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

/* Which nodes take part: [first, first + count) of the parent's items
 * (total: items' bytes). Loads the siblings' items in front of / after
 * items. */
static int choose(struct tree_mod *m, struct ilist *P, long pos,
		  unsigned l, struct ilist *items, size_t total, long *first,
		  size_t *count, uint64_t *blks, struct r4_error *err)
{
	size_t cap = capacity(m), ih = ihsize(m);
	size_t lb = SIZE_MAX, rb = SIZE_MAX;
	uint64_t lblk = tmod_sib(P, pos - 1), rblk = tmod_sib(P, pos + 1);
	struct ilist L = ILIST_EMPTY, R = ILIST_EMPTY, tmp;
	int rc = 0, use = 0;	/* -1 left, +1 right */

	*first = pos;
	*count = 1;
	if (!items->n || (m->no_merge && total <= cap))
		return 0;
	if (total > cap || total < cap / 2) {
		if (lblk && !(rc = tmod_dc_get(m, lblk, l, &L, err)))
			lb = ilist_bytes(&L, ih);
		if (!rc && rblk && !(rc = tmod_dc_get(m, rblk, l, &R, err)))
			rb = ilist_bytes(&R, ih);
	}
	if (rc)
		goto out;
	use = tmod_choose_side(total, lb, rb, cap, ih);
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
		rc = tmod_oom(err);
	if (use)
		m->st.shifts += total > cap;
out:
	/* a neighbour not taken is unchanged */
	if (!rc && use >= 0 && L.n)
		tmod_dc_keep(m, lblk, l, &L);
	if (!rc && use <= 0 && R.n)
		tmod_dc_keep(m, rblk, l, &R);
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
 * writer made (its scope), with the same first key: its list goes to the cache
 * as the block's deferred content (written by dc_sync). total: items'
 * bytes. 1 when done, 0 when not for deferring, < 0 error. */
static int defer(struct tree_mod *m, unsigned l, uint64_t blk,
		 const struct fmt_key *first, struct ilist *items,
		 size_t total)
{
	if (!m->lazy || l > FMT_NODE_TWIG_LEVEL || !items->n ||
	    fmt_key_cmp(&items->v[0].key, first) ||
	    !txn_owns_in(m->t, blk, m->scope) || total > capacity(m) ||
	    !tmod_dc_slot(m, blk) || r4_u64set_add(&m->stale, blk) < 0)
		return 0;
	/* what pack would make of it: one chunk, the items joined (the
	 * first item keeps its key) */
	if (ilist_coalesce(items, capacity(m) - ihsize(m), m->vol->blksize,
			   m->vol->keypol)) {
		r4_u64map_del(&m->stale, blk);
		items->n = 0;	/* half joined: leaked, not freed twice */
		return -ENOMEM;
	}
	tmod_dc_keep(m, blk, l, items);
	m->st.nodes_written++;
	m->st.deferred++;
	return 1;
}

/* P's items [first, first + count) become the node pointers np. */
static int parent_splice(struct ilist *P, long first, size_t count,
			 const struct ilist *np)
{
	struct tree_newitem few[4] = { { .pid = 0 } };
	struct tree_newitem *w = np->n <= 4 ? few :
				 calloc(np->n, sizeof(*w));
	int rc;

	for (size_t i = 0; w && i < np->n; i++) {
		w[i].key = np->v[i].key;
		w[i].pid = FMT_ITEM_NODEPTR40;
		w[i].body = np->v[i].body;
		w[i].len = np->v[i].len;
	}
	rc = w ? ilist_splice(P, (size_t)first, (size_t)first + count, w,
			      np->n) : -ENOMEM;
	if (w != few)
		free(w);
	return rc;
}

/* The parent P of level l: its items [first, first + count) become the
 * node pointers np, and P is set at level l + 1 (P is emptied). */
static int parent_set(struct tree_mod *m, struct mpath *p, unsigned l,
		      struct ilist *P, long first, size_t count,
		      const struct ilist *np, struct r4_error *err)
{
	return parent_splice(P, first, count, np) ? tmod_oom(err) :
	       level_set(m, p, l + 1, P, err);
}

/* Items become level l's node p->blk[l] (with a neighbour when choose
 * says so), the parents above follow. */
static int level_set(struct tree_mod *m, struct mpath *p, unsigned l,
		     struct ilist *items, struct r4_error *err)
{
	struct ilist P = ILIST_EMPTY, np = ILIST_EMPTY, *ch = NULL;
	long pos = p->pos[l + 1], first = pos;
	uint64_t blks[2] = { p->blk[l], 0 };
	size_t count = 1, nch = 0, total = ilist_bytes(items, ihsize(m));
	long ie = m->ins_end;
	int rc;

	m->ins_end = -1;
	if (l >= m->height)
		return root_set(m, l, items, err);
	rc = tmod_dc_get(m, p->blk[l + 1], l + 1, &P, err);
	if (!rc && (pos < 0 || (size_t)pos >= P.n || tmod_sib(&P, pos) != blks[0]))
		rc = r4i_fail(err, R4_ECORRUPT, "%s: tree node %llu: item %ld "
			     "does not point to %llu", tmod_vname(m),
			     (unsigned long long)p->blk[l + 1], pos,
			     (unsigned long long)blks[0]);
	if (!rc)
		rc = choose(m, &P, pos, l, items, total, &first, &count, blks,
			    err);
	if (!rc && count == 1 &&
	    (rc = defer(m, l, blks[0], &P.v[pos].key, items, total)) != 0) {
		if (rc > 0)
			tmod_dc_keep(m, p->blk[l + 1], l + 1, &P);
		ilist_free(&P);
		ilist_free(items);
		return rc > 0 ? 0 : tmod_oom(err);	/* the parent is unchanged */
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
		tmod_dc_keep(m, p->blk[l + 1], l + 1, &P);
		goto out;	/* the parent does not change */
	}
	if (!rc)
		rc = parent_set(m, p, l, &P, first, count, &np, err);
out:
	ilist_free(&P);
	ilist_free(&np);
	return rc;
}

/* The twig P (out of the cache), changed by a split of its leaf: what
 * level_set would make of it at level 2 when that is a deferral (one
 * node at least half full, its first key its pointer's in the cached
 * level 3 node: choose takes no neighbour), else level_set itself. */
static int twig_set(struct tree_mod *m, struct mpath *p, struct ilist *P,
		    struct r4_error *err)
{
	size_t total = ilist_bytes(P, ihsize(m));
	struct tree_dslot *s3 = m->height > FMT_NODE_TWIG_LEVEL ?
				tmod_dc_slot(m, p->blk[3]) : NULL;
	long pos = p->pos[3];
	int rc;

	if (!s3 || s3->blk != p->blk[3] || s3->level != FMT_NODE_TWIG_LEVEL + 1 || pos < 0 ||
	    (size_t)pos >= s3->l.n || tmod_sib(&s3->l, pos) != p->blk[2] ||
	    total > capacity(m) || total < capacity(m) / 2)
		return level_set(m, p, FMT_NODE_TWIG_LEVEL, P, err);
	rc = defer(m, FMT_NODE_TWIG_LEVEL, p->blk[2], &s3->l.v[pos].key, P,
		   total);
	if (!rc)
		return level_set(m, p, FMT_NODE_TWIG_LEVEL, P, err);
	if (rc > 0)
		m->st.quick_twig++;
	ilist_free(P);
	return rc > 0 ? 0 : tmod_oom(err);
}

/* Chunks of items as level_set's pack(even = 0) makes them. */
static int split_chunks(struct tree_mod *m, struct ilist *items,
			struct ilist *two, struct ilist **ch, size_t *nch,
			struct r4_error *err)
{
	int rc;

	two[0] = *items;
	memset(items, 0, sizeof(*items));
	rc = ilist_split(&two[0], capacity(m), ihsize(m), m->vol->blksize,
			 m->vol->keypol, &two[1]);
	if (rc > 0) {
		*ch = two;
		*nch = 2;
		return 0;
	}
	*items = two[0];
	memset(&two[0], 0, sizeof(two[0]));
	return rc ? tmod_oom(err) : pack(m, items, 0, ch, nch, err);
}

int tmod_split_leaf(struct tree_mod *m, struct mpath *p,
		    struct ilist *items, long first, size_t count,
		    const uint64_t *blks, struct r4_error *err)
{
	struct ilist P = ILIST_EMPTY, np = ILIST_EMPTY, *ch = NULL;
	struct ilist two[2] = { ILIST_EMPTY, ILIST_EMPTY };
	long pos = p->pos[2];
	size_t nch = 0;
	int rc;

	m->ins_end = -1;
	rc = tmod_dc_get(m, p->blk[2], FMT_NODE_TWIG_LEVEL, &P, err);
	if (!rc)
		rc = split_chunks(m, items, two, &ch, &nch, err);
	if (!rc)
		rc = emit_chunks(m, FMT_NODE_LEAF_LEVEL, ch, nch, blks, count,
				 &np, err);
	ilist_free(items);
	if (ch == two) {
		ilist_free(&two[0]);
		ilist_free(&two[1]);
	} else {
		chunks_free(ch, nch);
	}
	if (!rc && count == 1 && np.n == 1 &&
	    !fmt_key_cmp(&np.v[0].key, &P.v[pos].key) &&
	    !memcmp(np.v[0].body, P.v[pos].body, FMT_NODEPTR40_SIZE))
		tmod_dc_keep(m, p->blk[2], FMT_NODE_TWIG_LEVEL, &P);
	else if (!rc)
		rc = parent_splice(&P, first, count, &np) ? tmod_oom(err) :
		     twig_set(m, p, &P, err);
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
	struct ilist all = ILIST_EMPTY, np = ILIST_EMPTY, *ch = NULL;
	struct tree_newitem *w = NULL;
	size_t nch = 0;
	int rc = ilist_splice(&all, 0, 0, it, n) ? tmod_oom(err) : 0;

	if (!rc)
		rc = pack(m, &all, 1, &ch, &nch, err);
	if (!rc)
		rc = emit_chunks(m, FMT_NODE_LEAF_LEVEL, ch, nch, &hint, 0,
				 &np, err);
	if (!rc && !(w = as_new(&np)))
		rc = tmod_oom(err);
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
	struct ilist twig = ILIST_EMPTY, leaf = ILIST_EMPTY;
	uint64_t child;
	size_t k = 0;
	int rc;

	if (p->pos[2] < 0)
		return 0;
	rc = tmod_dc_get(m, p->blk[2], 2, &twig, err);
	child = rc ? 0 : tmod_sib(&twig, p->pos[2]);
	if (!rc)
		tmod_dc_keep(m, p->blk[2], 2, &twig);
	ilist_free(&twig);
	if (rc || !child)
		return rc;
	rc = tmod_dc_get(m, child, 1, &leaf, err);
	if (rc)
		return rc;
	while (k < leaf.n && fmt_key_cmp(&leaf.v[k].key, at) < 0)
		k++;
	if (k < leaf.n && !fmt_key_cmp(&leaf.v[k].key, at))
		rc = r4i_fail(err, R4_EEXIST, "%s: tree node %llu: an item "
			     "with that key exists", tmod_vname(m),
			     (unsigned long long)child);
	if (rc || k == leaf.n) {
		tmod_dc_keep(m, child, 1, &leaf);	/* unchanged */
		return rc;
	}
	rc = ilist_cut(&leaf, k, right);
	if (rc) {
		ilist_free(&leaf);
		return tmod_oom(err);
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
	struct ilist L = ILIST_EMPTY;
	struct mpath p;
	int none = 0, rc, pos, found;

	rc = tmod_path_find(m, at, level, &p, &none, err);
	if (!rc && none)
		return replace ? r4i_fail(err, R4_ENOTFOUND, "%s: no item to "
					 "replace", tmod_vname(m)) :
				 new_leaves(m, p.blk[2], it, n, err);
	if (!rc && level == FMT_NODE_TWIG_LEVEL && !replace && !right->n) {
		rc = twig_cut(m, &p, at, right, err);
		if (!rc && right->n)
			rc = tmod_path_find(m, at, level, &p, &none, err);
	}
	if (!rc && level == FMT_NODE_LEAF_LEVEL &&
	    (rc = tmod_dc_put(m, &p, at, replace, it, n, err)) > 0)
		return 0;
	if (!rc)
		rc = tmod_dc_get(m, p.blk[level], level, &L, err);
	if (rc)
		return rc;
	pos = p.pos[level];
	found = pos >= 0 && (size_t)pos < L.n &&
		!fmt_key_cmp(&L.v[pos].key, at);
	if (replace && !found)
		rc = r4i_fail(err, R4_ENOTFOUND, "%s: tree node %llu: no item "
			     "to replace", tmod_vname(m),
			     (unsigned long long)p.blk[level]);
	else if (!replace && found)
		rc = r4i_fail(err, R4_EEXIST, "%s: tree node %llu: an item "
			     "with that key exists", tmod_vname(m),
			     (unsigned long long)p.blk[level]);
	if (rc)
		tmod_dc_keep(m, p.blk[level], level, &L);	/* unchanged */
	else if (ilist_splice(&L, (size_t)(pos + !replace), (size_t)pos + 1,
			      it, n))
		rc = tmod_oom(err);
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
	struct ilist right = ILIST_EMPTY;
	struct tree_newitem *w;
	int rc;

	if (level != FMT_NODE_LEAF_LEVEL && level != FMT_NODE_TWIG_LEVEL)
		return r4i_fail(err, R4_EINVAL, "items go to level 1 or 2");
	for (size_t i = 0; i < n; i++)
		if (it[i].len > tree_max_item(m) || !it[i].len)
			return r4i_fail(err, R4_EINVAL, "%s: item of %zu bytes "
				       "(at most %zu)", tmod_vname(m), it[i].len,
				       tree_max_item(m));
	rc = put_once(m, level, at, replace, it, n, &right, err);
	if (rc || !right.n) {
		ilist_free(&right);
		return rc;
	}
	w = as_new(&right);
	rc = w ? tree_put_items(m, FMT_NODE_LEAF_LEVEL, &w[0].key, 0, w,
				right.n, err) : tmod_oom(err);
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
