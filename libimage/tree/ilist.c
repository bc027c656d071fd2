/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: decoded item lists of nodes being rewritten, and packing them
 * into nodes (cutting directory-entry, tail, ctail and extent items at
 * unit boundaries). */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/tree/ibody.h"
#include "libimage/tree/modify.h"
#include "libimage/tree/tree.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "format/item.h"
#include "format/node.h"
#include "format/plugin.h"
#include "r4/util.h"

/* Do not cut an item for less room than this. */
#define CUT_MIN_ROOM 64

void ilist_free(struct ilist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		ibody_free(l->v[i].body);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int ilist_room(struct ilist *l, size_t more)
{
	return R4_RESERVE(l->v, l->cap, l->n + more, 16);
}

/* Items [a, b) of l are new or changed: the span the next pass tries
 * grows to take them in (wider than needed only costs tries). */
static void mark(struct ilist *l, size_t a, size_t b)
{
	if (l->joined == ILIST_JOINED) {
		l->joined = ILIST_JOINED_SPAN;
		l->ja = a;
		l->jb = b;
	} else if (l->joined == ILIST_JOINED_SPAN) {
		if (a < l->ja)
			l->ja = a;
		if (b > l->jb)
			l->jb = b;
	}
}

static int item_copy(struct mitem *it, const struct fmt_key *k,
		     unsigned pid, const void *body, size_t len)
{
	it->key = *k;
	it->pid = pid;
	it->checked = 0;
	it->len = len;
	it->body = ibody_alloc(len);
	if (!it->body)
		return -ENOMEM;
	if (len)
		memcpy(it->body, body, len);
	return 0;
}

int ilist_push(struct ilist *l, const struct fmt_key *k, unsigned pid,
	       const void *body, size_t len)
{
	int rc = ilist_room(l, 1);

	if (!rc)
		rc = item_copy(&l->v[l->n], k, pid, body, len);
	if (!rc)
		mark(l, l->n, l->n + 1);
	if (!rc)
		l->n++;
	return rc;
}

static int push_owned(struct ilist *l, struct mitem *it)
{
	int rc = ilist_room(l, 1);

	if (rc) {
		ibody_free(it->body);
		return rc;
	}
	l->v[l->n++] = *it;
	return 0;
}

int ilist_move(struct ilist *dst, struct ilist *src)
{
	int rc = ilist_room(dst, src->n);

	if (rc)
		return rc;
	memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
	dst->n += src->n;
	dst->joined = 0;
	free(src->v);
	memset(src, 0, sizeof(*src));
	return 0;
}

int ilist_cut(struct ilist *l, size_t k, struct ilist *tail)
{
	int rc = ilist_room(tail, l->n - k);

	if (rc)
		return rc;
	memcpy(tail->v + tail->n, l->v + k, (l->n - k) * sizeof(*l->v));
	tail->n += l->n - k;
	tail->joined = 0;
	l->n = k;
	/* a head of a joined list is joined */
	if (l->joined == ILIST_JOINED_SPAN && l->ja > k)
		l->ja = k;
	if (l->joined == ILIST_JOINED_SPAN && l->jb > k)
		l->jb = k;
	return 0;
}

int ilist_splice(struct ilist *l, size_t a, size_t b,
		 const struct tree_newitem *w, size_t n)
{
	int rc = ilist_room(l, n);

	if (rc)
		return rc;
	for (size_t i = a; i < b; i++)
		ibody_free(l->v[i].body);
	memmove(l->v + a + n, l->v + b, (l->n - b) * sizeof(*l->v));
	l->n = l->n - (b - a) + n;
	/* the span's end moves with the items after it; an end among the
	 * items replaced becomes the end of the new ones (mark takes the
	 * start down to a) */
	if (l->joined == ILIST_JOINED_SPAN && l->jb > a)
		l->jb = l->jb >= b ? l->jb - (b - a) + n : a + n;
	mark(l, a, a + n);
	for (size_t i = 0; i < n; i++) {
		rc = item_copy(&l->v[a + i], &w[i].key, w[i].pid, w[i].body,
			       w[i].len);
		if (rc) {
			/* keep the list consistent: empty bodies */
			for (size_t j = i; j < n; j++) {
				l->v[a + j].body = NULL;
				l->v[a + j].len = 0;
				l->v[a + j].checked = 0;
			}
			return rc;
		}
	}
	return 0;
}

size_t ilist_bytes(const struct ilist *l, size_t ih)
{
	size_t s = 0;

	for (size_t i = 0; i < l->n; i++)
		s += l->v[i].len + ih;
	return s;
}

int ilist_load(struct r4_vol *vol, uint64_t blk, unsigned level,
	       struct ilist *out, struct r4_error *err)
{
	struct fmt_node_header nh;
	struct fmt_item_header ih;
	struct io_block *b;
	struct tree_item it;
	unsigned nr;
	int rc, fast;

	memset(out, 0, sizeof(*out));
	rc = tree_node_get(vol, blk, level, &b, err);
	if (rc)
		return rc;
	nr = tree_node_nr(b->data);
	/* room for the node's items and a few more (the caller's change)
	 * at once, not by doubling from 16 */
	if (nr && ilist_room(out, (size_t)nr + 4))
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	/* the header checked once (fmt_node_item_at); an item it refuses
	 * is read again by tree_node_item, for its error */
	fast = !fmt_node_layout(b->data, vol->blksize, vol->keypol, &nh) &&
	       nh.nr_items == nr;
	for (unsigned i = 0; !rc && i < nr; i++) {
		if (fast && !fmt_node_item_at(b->data, vol->blksize,
					      vol->keypol, &nh, i, &ih,
					      &it.off, &it.len)) {
			it.key = ih.key;
			it.plugin_id = ih.plugin_id;
			it.body = b->data + it.off;
		} else {
			rc = tree_node_item(vol, b->data, blk, i, &it, err);
		}
		if (!rc && ilist_push(out, &it.key, it.plugin_id, it.body,
				      it.len))
			rc = r4i_fail(err, -ENOMEM, "out of memory");
	}
	io_cache_put(&vol->cache, b);
	if (rc)
		ilist_free(out);
	return rc;
}

/* ---- cutting items ------------------------------------------------------ */

/* Cut a cde40 item so the head takes at most room bytes. 1 = cut. */
static int cut_cde40(const struct mitem *it, size_t room,
		     enum fmt_key_policy pol, struct mitem *h, struct mitem *t)
{
	int n = fmt_cde40_units(it->body, it->len, pol);
	size_t uh = fmt_cde40_unit_header_size(pol);
	size_t id = fmt_cde40_objid_size(pol), size = FMT_CDE40_UNITS_SIZE;
	struct fmt_cde40_entry *e;
	size_t hs = 0, ts = 0;
	int k = 0, rc = 0;

	if (n < 2)
		return 0;
	e = calloc((size_t)n, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (int i = 0; i < n && !rc; i++)
		rc = fmt_cde40_entry(it->body, it->len, pol, (unsigned)i,
				     &e[i]);
	while (!rc && k < n - 1) {
		size_t one = uh + id + (fmt_cde40_entry_is_long(&e[k], pol) ?
					e[k].name_len + 1 : 0);

		if (size + one > room)
			break;
		size += one;
		k++;
	}
	if (rc || k == 0) {
		free(e);
		return rc < 0 ? rc : (rc ? R4_ECORRUPT : 0);
	}
	rc = fmt_cde40_size(e, (size_t)k, pol, &hs);
	if (!rc)
		rc = fmt_cde40_size(e + k, (size_t)(n - k), pol, &ts);
	h->body = rc ? NULL : ibody_alloc(hs);
	t->body = rc ? NULL : ibody_alloc(ts);
	if (!rc && (!h->body || !t->body))
		rc = -ENOMEM;
	if (!rc)
		rc = fmt_cde40_encode(e, (size_t)k, pol, h->body, hs);
	if (!rc)
		rc = fmt_cde40_encode(e + k, (size_t)(n - k), pol, t->body, ts);
	h->key = it->key;
	fmt_cde40_entry_key(&it->key, &e[k], &t->key);
	h->pid = t->pid = it->pid;
	h->len = hs;
	t->len = ts;
	free(e);
	if (rc) {
		ibody_free(h->body);
		ibody_free(t->body);
		return rc;
	}
	return 1;
}

/* Head h and tail t of item it, with bodies of hl and tl bytes to fill;
 * the tail's key is skip bytes further on. 0 or -ENOMEM. */
static int cut_pieces(const struct mitem *it, uint64_t skip, size_t hl,
		      size_t tl, struct mitem *h, struct mitem *t)
{
	h->key = t->key = it->key;
	t->key.el[3] += skip;
	h->pid = t->pid = it->pid;
	h->len = hl;
	t->len = tl;
	h->body = ibody_alloc(h->len);
	t->body = ibody_alloc(t->len);
	if (!h->body || !t->body) {
		ibody_free(h->body);
		ibody_free(t->body);
		return -ENOMEM;
	}
	return 0;
}

/* The head keeps the item's body (its first hl bytes; pack_one does not free
 * it then), only the tail is copied. */
static int cut_bytes(const struct mitem *it, size_t hl, uint64_t skip,
		     struct mitem *h, struct mitem *t)
{
	h->key = t->key = it->key;
	t->key.el[3] += skip;
	h->pid = t->pid = it->pid;
	h->len = hl;
	t->len = it->len - hl;
	t->body = ibody_alloc(t->len);
	if (!t->body)
		return -ENOMEM;
	memcpy(t->body, it->body + hl, t->len);
	h->body = it->body;
	return 1;
}

static int cut_extent(const struct mitem *it, size_t room, uint32_t bs,
		      struct mitem *h, struct mitem *t)
{
	size_t units = it->len / FMT_EXTENT40_UNIT_SIZE;
	size_t k = room / FMT_EXTENT40_UNIT_SIZE;
	struct fmt_extent40_unit u;
	uint64_t skip = 0;

	if (units < 2 || k == 0)
		return 0;
	if (k > units - 1)
		k = units - 1;
	for (size_t i = 0; i < k; i++) {
		fmt_extent40_unit_decode(it->body + i * FMT_EXTENT40_UNIT_SIZE,
					 &u);
		skip += u.width * bs;
	}
	return cut_bytes(it, k * FMT_EXTENT40_UNIT_SIZE, skip, h, t);
}

/* doc/compress.md §3.1: a disk cluster may be cut into ctail items at
 * any byte; each piece has the header byte, the second starts at the
 * byte offset in the cluster stream where the first ends. An unprepped
 * placeholder (one unit) is never cut. */
static int cut_ctail(const struct mitem *it, size_t room, struct mitem *h,
		     struct mitem *t)
{
	struct fmt_ctail40 ct;
	size_t k;

	if (fmt_ctail40_decode(it->body, it->len, &ct) ||
	    ct.shift == FMT_CTAIL40_UNPREPPED || ct.len < 2 ||
	    room <= FMT_CTAIL40_HDR_SIZE)
		return 0;
	k = room - FMT_CTAIL40_HDR_SIZE;
	if (k > ct.len - 1)
		k = ct.len - 1;
	if (cut_pieces(it, k, FMT_CTAIL40_HDR_SIZE + k,
		       FMT_CTAIL40_HDR_SIZE + ct.len - k, h, t))
		return -ENOMEM;
	h->body[0] = t->body[0] = ct.shift;
	memcpy(h->body + FMT_CTAIL40_HDR_SIZE, ct.data, k);
	memcpy(t->body + FMT_CTAIL40_HDR_SIZE, ct.data + k, ct.len - k);
	return 1;
}

/* 1 with h/t filled, 0 when the item cannot be cut for room, < 0. */
static int item_cut(const struct mitem *it, size_t room, uint32_t bs,
		    enum fmt_key_policy pol, struct mitem *h, struct mitem *t)
{
	/* new bytes: no mark (tree_mod_mark_checked) */
	memset(h, 0, sizeof(*h));
	memset(t, 0, sizeof(*t));
	switch (it->pid) {
	case FMT_ITEM_CDE40:
		return cut_cde40(it, room, pol, h, t);
	case FMT_ITEM_TAIL40:
		if (it->len < 2 || room == 0)
			return 0;
		return cut_bytes(it, room < it->len ? room : it->len - 1,
				 room < it->len ? room : it->len - 1, h, t);
	case FMT_ITEM_EXTENT40:
		return cut_extent(it, room, bs, h, t);
	case FMT_ITEM_CTAIL40:
		return cut_ctail(it, room, h, t);
	default:
		return 0;
	}
}

/* ---- merging neighbours ------------------------------------------------ */

/* Entries of two cde40 items of one directory as one item. 1 merged,
 * 0 not, < 0 error. */
static int join_cde40(struct mitem *a, const struct mitem *b, size_t max,
		      enum fmt_key_policy pol)
{
	int na = fmt_cde40_units(a->body, a->len, pol);
	int nb = fmt_cde40_units(b->body, b->len, pol);
	struct fmt_cde40_entry *e;
	uint8_t *buf = NULL;
	size_t size = 0;
	int rc = 0;

	if (na < 1 || nb < 1 || a->len + b->len - FMT_CDE40_UNITS_SIZE > max)
		return 0;
	e = calloc((size_t)(na + nb), sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (int i = 0; !rc && i < na + nb; i++)
		rc = i < na ? fmt_cde40_entry(a->body, a->len, pol,
					      (unsigned)i, &e[i]) :
			      fmt_cde40_entry(b->body, b->len, pol,
					      (unsigned)(i - na), &e[i]);
	if (!rc)
		rc = fmt_cde40_size(e, (size_t)(na + nb), pol, &size);
	if (!rc && size <= max && (buf = ibody_alloc(size)) != NULL)
		rc = fmt_cde40_encode(e, (size_t)(na + nb), pol, buf, size);
	free(e);
	if (rc || !buf) {
		ibody_free(buf);
		return rc == -ENOMEM ? rc : 0;
	}
	ibody_free(a->body);
	a->body = buf;
	a->len = size;
	return 1;
}

static int same_object(const struct fmt_key *a, const struct fmt_key *b)
{
	return a->el[0] == b->el[0] && a->el[1] == b->el[1] &&
	       a->el[2] == b->el[2];
}

/* Bytes of file an item covers (tail: its length, extent: the span). */
static uint64_t item_span(const struct mitem *it, uint32_t bs)
{
	uint64_t span = it->len;

	if (it->pid == FMT_ITEM_EXTENT40 &&
	    fmt_extent40_span(it->body, it->len, bs, &span))
		return UINT64_MAX;
	return span;
}

/* doc/compress.md §3.1: two ctail items of one disk cluster, b starting
 * where a ends (not at a cluster start), as one item. */
static int join_ctail(struct mitem *a, const struct mitem *b, size_t max)
{
	struct fmt_ctail40 x, y;
	uint8_t *buf;

	if (!same_object(&a->key, &b->key) ||
	    fmt_ctail40_decode(a->body, a->len, &x) ||
	    fmt_ctail40_decode(b->body, b->len, &y) || x.shift != y.shift ||
	    x.shift == FMT_CTAIL40_UNPREPPED ||
	    a->key.el[3] + x.len != b->key.el[3] ||
	    !(b->key.el[3] & ((1ull << x.shift) - 1)) ||
	    a->len + y.len > max)
		return 0;
	buf = ibody_realloc(a->body, a->len + y.len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf + a->len, y.data, y.len);
	a->body = buf;
	a->len += y.len;
	return 1;
}

/* Join item b into a when they continue each other. */
static int join(struct mitem *a, const struct mitem *b, size_t max,
		uint32_t bs, enum fmt_key_policy pol)
{
	uint8_t *buf;

	if (a->pid != b->pid)
		return 0;
	if (a->pid == FMT_ITEM_CDE40)
		return a->key.el[0] == b->key.el[0] ?
		       join_cde40(a, b, max, pol) : 0;
	if (a->pid == FMT_ITEM_CTAIL40)
		return join_ctail(a, b, max);
	if ((a->pid != FMT_ITEM_TAIL40 && a->pid != FMT_ITEM_EXTENT40) ||
	    !same_object(&a->key, &b->key) || a->len + b->len > max ||
	    item_span(a, bs) == UINT64_MAX ||
	    a->key.el[3] + item_span(a, bs) != b->key.el[3])
		return 0;
	buf = ibody_realloc(a->body, a->len + b->len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf + a->len, b->body, b->len);
	a->body = buf;
	a->len += b->len;
	return 1;
}

/* One pass from item 'from' on: items [0, from] must be such a pass's
 * result already (none joins its neighbour). Once a pair at or after
 * item 'stop' does not join, the rest are pairs that did not join
 * before either (a pass leaves no pair that joins): they are only moved
 * down. The result is the whole list's pass. */
static int coalesce_from(struct ilist *l, size_t from, size_t stop,
			 size_t max, uint32_t bs, enum fmt_key_policy pol)
{
	size_t w = from;

	for (size_t r = from + 1; r < l->n; r++) {
		int rc = join(&l->v[w], &l->v[r], max, bs, pol);

		if (rc < 0) {
			/* keep the list whole for the caller's cleanup:
			 * slots w+1..r-1 were joined (bodies freed) or moved
			 * down; close the gap over them */
			memmove(l->v + w + 1, l->v + r,
				(l->n - r) * sizeof(*l->v));
			l->n = w + 1 + (l->n - r);
			return rc;
		}
		if (rc) {
			ibody_free(l->v[r].body);
			l->v[w].checked = 0;	/* new bytes */
			continue;
		}
		l->v[++w] = l->v[r];
		if (r >= stop) {
			if (w < r)
				memmove(l->v + w + 1, l->v + r + 1,
					(l->n - r - 1) * sizeof(*l->v));
			w += l->n - r - 1;
			break;
		}
	}
	if (l->n > from)
		l->n = w + 1;
	return 0;
}

static int coalesce(struct ilist *l, size_t max, uint32_t bs,
		    enum fmt_key_policy pol)
{
	size_t from = 0, stop = SIZE_MAX;
	int rc;

	if (l->joined == ILIST_JOINED)
		return 0;
	if (l->joined == ILIST_JOINED_SPAN) {
		from = l->ja ? l->ja - 1 : 0;
		stop = l->jb;
	}
	rc = coalesce_from(l, from, stop, max, bs, pol);
	l->joined = rc ? 0 : ILIST_JOINED;
	return rc;
}

int ilist_coalesce(struct ilist *l, size_t max, uint32_t blksize,
		   enum fmt_key_policy pol)
{
	return coalesce(l, max, blksize, pol);
}

/* ---- packing --------------------------------------------------------- */

struct packer {
	struct ilist *out;
	size_t n, cap;
	size_t used;
	size_t left;		/* items not packed yet (+1 for a cut) */
};

/* A new chunk, with room for the items left (most often one chunk takes
 * them all: no growing item by item). */
static int pack_open(struct packer *p)
{
	if (R4_RESERVE(p->out, p->cap, p->n + 1, 4))
		return -ENOMEM;
	memset(&p->out[p->n++], 0, sizeof(*p->out));
	/* a run of the joined list: only a piece cut off an item may
	 * join its neighbour (pack_one marks it) */
	p->out[p->n - 1].joined = ILIST_JOINED;
	p->used = 0;
	return ilist_room(&p->out[p->n - 1], p->left ? p->left : 1);
}

static int pack_one(struct packer *p, struct mitem *it, size_t cap,
		    size_t target, size_t ih, uint32_t bs,
		    enum fmt_key_policy pol)
{
	struct mitem h, t;
	int rc, cut = 0;

	for (;;) {
		struct ilist *cur = &p->out[p->n - 1];

		if (cur->n && p->used >= target) {
			rc = pack_open(p);
			if (rc)
				goto fail;
			continue;
		}
		if (p->used + ih + it->len <= cap) {
			p->used += ih + it->len;
			if (cut)
				mark(cur, cur->n, cur->n + 1);
			return push_owned(cur, it);
		}
		rc = 0;
		if (cap - p->used >= ih + CUT_MIN_ROOM)
			rc = item_cut(it, cap - p->used - ih, bs, pol, &h, &t);
		if (rc < 0)
			goto fail;
		if (rc) {
			if (h.body != it->body)
				ibody_free(it->body);
			*it = t;
			cut = 1;
			p->used += ih + h.len;
			mark(cur, cur->n, cur->n + 1);
			rc = push_owned(cur, &h);
			if (rc)
				goto fail;
		}
		if (!cur->n && !rc) {
			rc = R4_ERANGE;		/* item larger than a node */
			goto fail;
		}
		rc = pack_open(p);
		if (rc)
			goto fail;
	}
fail:
	ibody_free(it->body);
	return rc;
}

/* The chunks ilist_pack(target = cap) makes of l when they are two:
 * where the first is full, the item there cut as pack_one cuts it. */
int ilist_split(struct ilist *l, size_t cap, size_t ih, uint32_t bs,
		enum fmt_key_policy pol, struct ilist *tail)
{
	size_t used = 0, rest = 0, k = 0;
	struct mitem h, t;
	int rc = coalesce(l, cap - ih, bs, pol), cut = 0;

	while (!rc && k < l->n && !(k && used >= cap) &&
	       used + ih + l->v[k].len <= cap)
		used += ih + l->v[k++].len;
	for (size_t i = k; !rc && i < l->n; i++)
		rest += ih + l->v[i].len;
	/* one chunk, more than two, or an item larger than a node */
	if (rc || !k || k == l->n || rest > cap)
		return rc;
	if (used < cap && cap - used >= ih + CUT_MIN_ROOM)
		cut = item_cut(&l->v[k], cap - used - ih, bs, pol, &h, &t);
	if (cut < 0)
		return cut;
	/* l has room for the head: k < n */
	if (ilist_cut(l, k, tail)) {
		if (cut && h.body != l->v[k].body)
			ibody_free(h.body);
		if (cut)
			ibody_free(t.body);
		return -ENOMEM;
	}
	l->joined = tail->joined = ILIST_JOINED;
	if (cut) {
		if (h.body != tail->v[0].body)
			ibody_free(tail->v[0].body);
		tail->v[0] = t;
		mark(l, k, k + 1);
		mark(tail, 0, 1);
		l->v[l->n++] = h;
	}
	return 1;
}

int ilist_pack(struct ilist *all, size_t cap, size_t target, size_t ih,
	       uint32_t blksize, enum fmt_key_policy pol, struct ilist **out,
	       size_t *nout)
{
	struct packer p = { NULL, 0, 0, 0, 0 };
	size_t i = 0;
	int rc = coalesce(all, cap - ih, blksize, pol);
	size_t total = rc ? 0 : ilist_bytes(all, ih);

	/* all in one node (most changes): the list is the chunk */
	if (!rc && all->n && total <= cap && total <= target) {
		p.out = malloc(sizeof(*p.out));
		if (p.out) {
			p.out[0] = *all;
			memset(all, 0, sizeof(*all));
			*out = p.out;
			*nout = 1;
			return 0;
		}
	}
	p.left = all->n + 1;
	if (!rc)
		rc = pack_open(&p);

	for (; !rc && i < all->n; i++, p.left--)
		rc = pack_one(&p, &all->v[i], cap, target, ih, blksize, pol);
	if (rc) {
		for (size_t j = i; j < all->n; j++)
			ibody_free(all->v[j].body);
		for (size_t j = 0; j < p.n; j++)
			ilist_free(&p.out[j]);
		free(p.out);
	} else {
		*out = p.out;
		*nout = p.n;
	}
	free(all->v);
	memset(all, 0, sizeof(*all));
	return rc;
}
