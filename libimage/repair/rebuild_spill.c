/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the tree rebuild's items kept out of memory (rebuild.c says
 * what the rebuild does). Only body items (tails, extents, ctail40
 * items) are ever mended: every mend reads or changes them, and reads
 * other items only by keys a body item gives (its stat data, its
 * object id, its locality and ordering). So the walk and the scan keep
 * body items in memory and put every other item in sorted runs
 * (check/runs.c: memory bounded by the run budget, the rest in a
 * temporary file in $TMPDIR), its body in a second temporary file.
 * Once gathered, one pass over the runs in key order drops second
 * copies of a key and takes back into memory (pulls) the items a mend
 * may look at: those sharing the first three key elements of a body
 * item or of its stat data's key, stat data with a body item's object
 * id, items under a body item's locality and ordering, any item with a
 * body key, and the root directory's stat data. The mends then run on
 * memory as before and see what they saw when every item was there.
 * The new tree takes the items in key order from both: the memory list
 * and the runs (less the second copies and the pulled items).
 *
 * Each item keeps the place it had in the order of gathering (seq) and
 * an item a mend adds the one it had when all were in one list, so
 * ties between equal keys break as before: the result is the same
 * tree, byte for byte. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "r4/util.h"
#include "libimage/repair/rebuild.h"
#include "libimage/obj/write.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"
#include "format/item.h"

/* The run budget when the caller sets none. */
#define RB_RUN_BYTES ((size_t)16 << 20)
/* The read window of the bodies' file: a body is at most a block. */
#define RB_WIN ((size_t)1 << 20)

static int srec_cmp(const void *x, const void *y)
{
	const struct rb_srec *a = x, *c = y;
	int r = fmt_key_cmp(&a->key, &c->key);

	return r ? r : a->seq < c->seq ? -1 : a->seq > c->seq;
}

static int srec_pos_cmp(const void *x, const void *y)
{
	const struct rb_srec *a = x, *c = y;

	if (a->blk != c->blk)
		return a->blk < c->blk ? -1 : 1;
	return a->idx < c->idx ? -1 : a->idx > c->idx;
}

int rb_spill_init(struct rb *b, size_t budget)
{
	struct rb_spill *s = &b->sp;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->budget = budget ? budget : RB_RUN_BYTES;
	return chk_runs_init(&s->runs, sizeof(struct rb_srec), srec_cmp,
			     s->budget);
}

void rb_spill_free(struct rb *b)
{
	struct rb_spill *s = &b->sp;

	chk_runs_free(&s->runs);
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s->win);
	free(s->pulled);
	s->fd = -1;
	s->buf = s->win = NULL;
	s->pulled = NULL;
}

/* A body into the bodies' store: memory up to the budget, then the
 * temporary file; its place in *off. */
static int body_put(struct rb_spill *s, const uint8_t *body, size_t len,
		    uint64_t *off)
{
	int rc;

	if (!s->buf) {
		s->buf = malloc(s->budget);
		if (!s->buf)
			return -ENOMEM;
	}
	if (s->used + len > s->budget && (s->used || len > s->budget)) {
		if (s->fd < 0) {
			rc = r4i_scratch_open("r4fsck-rebuild", &s->fd);
			if (rc)
				return rc;
		}
		rc = r4i_pwrite_all(s->fd, s->buf, s->used, s->base);
		if (rc)
			return rc;
		s->base += s->used;
		s->used = 0;
		if (len > s->budget) {	/* a budget below a body */
			*off = s->base;
			rc = r4i_pwrite_all(s->fd, body, len, s->base);
			s->base += len;
			return rc;
		}
	}
	*off = s->base + s->used;
	memcpy(s->buf + s->used, body, len);
	s->used += len;
	return 0;
}

/* The body of len bytes at off read back into dst. */
static int body_get(struct rb_spill *s, uint64_t off, size_t len,
		    uint8_t *dst)
{
	int rc;

	if (off >= s->base) {
		if (off - s->base > s->used || len > s->used - (off - s->base))
			return -EIO;
		memcpy(dst, s->buf + (off - s->base), len);
		return 0;
	}
	if (off + len > s->base || len > RB_WIN)
		return -EIO;
	if (!s->win || off < s->woff || off + len > s->woff + s->wlen) {
		if (!s->win && !(s->win = malloc(RB_WIN)))
			return -ENOMEM;
		s->woff = off;
		s->wlen = s->base - off < RB_WIN ? (size_t)(s->base - off) :
			  RB_WIN;
		rc = r4i_pread_all(s->fd, s->win, s->wlen, off);
		if (rc) {
			s->wlen = 0;
			return rc;
		}
	}
	memcpy(dst, s->win + (off - s->woff), len);
	return 0;
}

int rb_spill_put(struct rb *b, const struct fmt_key *k, unsigned pid,
		 const uint8_t *body, size_t len, uint64_t blk, unsigned idx,
		 int suspect)
{
	struct rb_srec r;
	int rc;

	if (len > UINT32_MAX)
		return -ENOMEM;
	memset(&r, 0, sizeof(r));
	rc = body_put(&b->sp, body, len, &r.boff);
	if (rc)
		return rc;
	r.key = *k;
	r.blk = blk;
	r.len = (uint32_t)len;
	r.seq = (uint32_t)(b->seq_off + b->n);
	r.pid = (uint16_t)pid;
	r.idx = (uint16_t)idx;
	r.suspect = (uint8_t)suspect;
	rc = chk_runs_put(&b->sp.runs, &r);
	if (!rc)
		b->seq_off++;
	return rc;
}

/* ---- what the mends may look at ---- */

struct k3 {
	uint64_t a, b, c;
};

static int k3_cmp(const void *x, const void *y)
{
	const struct k3 *p = x, *q = y;

	return chk_cmp3(p->a, p->b, p->c, q->a, q->b, q->c);
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;

	return a < c ? -1 : a > c;
}

static int u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;

	return a < c ? -1 : a > c;
}

/* The keys of the body items in memory, sorted: their first three
 * elements and their stat data's (pfx), their object ids (oid), their
 * stat data's locality and ordering (lo, c = 0). */
struct wants {
	struct k3 *pfx, *lo;
	uint64_t *oid;
	size_t npfx, nlo, noid;
};

static void wants_free(struct wants *w)
{
	free(w->pfx);
	free(w->lo);
	free(w->oid);
}

static int wants_make(const struct rb *b, struct wants *w)
{
	size_t n = b->n ? b->n : 1;

	memset(w, 0, sizeof(*w));
	w->pfx = malloc(2 * n * sizeof(*w->pfx));
	w->lo = malloc(n * sizeof(*w->lo));
	w->oid = malloc(n * sizeof(*w->oid));
	if (!w->pfx || !w->lo || !w->oid)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		const struct fmt_key *k = &b->it[i].key;
		uint64_t sd = (fmt_key_locality(k) << 4) | FMT_KEY_SD;

		w->pfx[w->npfx++] = (struct k3){ k->el[0], k->el[1], k->el[2] };
		w->pfx[w->npfx++] = (struct k3){ sd, k->el[1], k->el[2] };
		w->lo[w->nlo++] = (struct k3){ sd, k->el[1], 0 };
		w->oid[w->noid++] = fmt_key_objectid(k);
	}
	qsort(w->pfx, w->npfx, sizeof(*w->pfx), k3_cmp);
	qsort(w->lo, w->nlo, sizeof(*w->lo), k3_cmp);
	qsort(w->oid, w->noid, sizeof(*w->oid), u64_cmp);
	return 0;
}

/* Whether a mend may look at the spilled item r (see the top). */
static int wanted(const struct wants *w, const struct rb_srec *r)
{
	const struct fmt_key *k = &r->key;
	struct k3 p = { k->el[0], k->el[1], k->el[2] };
	struct k3 l = { k->el[0], k->el[1], 0 };
	uint64_t o = fmt_key_objectid(k);

	if (fmt_key_type(k) == FMT_KEY_BODY ||
	    (k->el[0] == ((FMT_ROOT_LOCALITY << 4) | FMT_KEY_SD) &&
	     !k->el[1] && k->el[2] == FMT_ROOT_OID && !k->el[3]))
		return 1;
	if (w->npfx && bsearch(&p, w->pfx, w->npfx, sizeof(p), k3_cmp))
		return 1;
	if (w->nlo && bsearch(&l, w->lo, w->nlo, sizeof(l), k3_cmp))
		return 1;
	return r->pid == FMT_ITEM_STAT40 && w->noid &&
	       bsearch(&o, w->oid, w->noid, sizeof(o), u64_cmp);
}

static int pulled(const struct rb_spill *s, uint32_t seq)
{
	return s->npulled && bsearch(&seq, s->pulled, s->npulled,
				     sizeof(seq), u32_cmp);
}

/* The next spilled item in key order that is not a second copy of a
 * key (nor pulled, with skip_pulled): 1, 0 at the end, or -errno. */
static int spill_next(struct rb_spill *s, struct rb_srec *r, int skip_pulled)
{
	int rc;

	for (;;) {
		rc = chk_runs_next(&s->runs, r);
		if (rc <= 0)
			return rc;
		if (s->any && !fmt_key_cmp(&s->last, &r->key)) {
			s->seen_dup++;
			continue;
		}
		s->last = r->key;
		s->any = 1;
		if (skip_pulled && pulled(s, r->seq))
			continue;
		return 1;
	}
}

static int spill_rewind(struct rb_spill *s)
{
	s->any = 0;
	s->seen_dup = 0;
	return chk_runs_rewind(&s->runs);
}

/* Spilled item r into the memory list as it was gathered. */
static int pull(struct rb *b, const struct rb_srec *r, uint8_t *tmp)
{
	struct ritem *p;
	int rc = body_get(&b->sp, r->boff, r->len, tmp);

	if (!rc)
		rc = rb_push(b, &r->key, r->pid, tmp, r->len);
	if (rc)
		return rc;
	p = &b->it[b->n - 1];
	p->seq = r->seq;
	p->blk = r->blk;
	p->idx = r->idx;
	p->suspect = r->suspect;
	if (R4_RESERVE(b->sp.pulled, b->sp.cappulled, b->sp.npulled + 1, 64))
		return -ENOMEM;
	b->sp.pulled[b->sp.npulled++] = r->seq;
	return 0;
}

/* What a spilled item that stays spilled adds to the counts the mends
 * and the build read of the whole list. */
static void count_kept(struct rb_spill *s, const struct rb_srec *r)
{
	uint64_t o = fmt_key_objectid(&r->key);

	s->kept++;
	s->bytes += (uint64_t)r->len + 40;	/* an item header */
	if (o < CHK_OID_MASK && o + 1 > s->next_oid &&
	    (r->pid == FMT_ITEM_STAT40 || !(r->key.el[2] >> 60)))
		s->next_oid = o + 1;
}

int rb_spill_pull(struct rb *b, uint64_t *dup)
{
	struct rb_spill *s = &b->sp;
	struct wants w = { 0 };
	struct rb_srec r;
	uint8_t *tmp = malloc(b->R->c.bs);
	int rc = tmp ? wants_make(b, &w) : -ENOMEM;

	if (!rc)
		rc = chk_runs_finish(&s->runs);
	if (!rc)
		rc = spill_rewind(s);
	while (!rc && (rc = spill_next(s, &r, 0)) == 1) {
		rc = 0;
		if (r.len > b->R->c.bs)
			rc = -EIO;
		else if (wanted(&w, &r))
			rc = pull(b, &r, tmp);
		else
			count_kept(s, &r);
	}
	*dup += s->seen_dup;
	if (s->npulled)
		qsort(s->pulled, s->npulled, sizeof(*s->pulled), u32_cmp);
	/* from here on an item added takes the place it would have had */
	b->seq_off = s->kept;
	wants_free(&w);
	free(tmp);
	return rc;
}

/* ---- the items in key order ---- */

int rb_iter_start(struct rb *b, struct rb_iter *it)
{
	memset(it, 0, sizeof(*it));
	it->b = b;
	it->body = malloc(b->R->c.bs);
	if (!it->body)
		return -ENOMEM;
	return spill_rewind(&b->sp);
}

void rb_iter_end(struct rb_iter *it)
{
	free(it->body);
	it->body = NULL;
}

int rb_iter_next(struct rb_iter *it, const struct ritem **out)
{
	struct rb *b = it->b;
	const struct ritem *m = it->i < b->n ? &b->it[it->i] : NULL;
	int rc;

	if (!it->have) {
		rc = spill_next(&b->sp, &it->rec, 1);
		if (rc < 0)
			return rc;
		it->have = rc;
	}
	if (it->have && (!m || rb_item_cmp(&(struct ritem){
			.key = it->rec.key, .seq = it->rec.seq }, m) < 0)) {
		const struct rb_srec *r = &it->rec;

		if (r->len > b->R->c.bs)	/* it->body holds a block */
			return -EIO;
		rc = body_get(&b->sp, r->boff, r->len, it->body);
		if (rc)
			return rc;
		it->cur = (struct ritem){ .key = r->key, .body = it->body,
			.blk = r->blk, .len = r->len, .seq = r->seq,
			.pid = r->pid, .idx = r->idx, .suspect = r->suspect };
		it->have = 0;
		*out = &it->cur;
		return 1;
	}
	if (!m)
		return 0;
	it->i++;
	*out = m;
	return 1;
}

/* The blocks a new tree of all the items takes, about: the first
 * 'done' in key order took 'used' of them. 0 when the items cannot be
 * read again. */
uint64_t rb_need_about(struct rb *b, size_t done, uint64_t used)
{
	double all = 0, part = 0;
	struct rb_iter it;
	const struct ritem *p;
	size_t i = 0;
	int rc = rb_iter_start(b, &it);

	while (!rc && (rc = rb_iter_next(&it, &p)) == 1) {
		double sz = (double)p->len + 40;	/* an item header */

		rc = 0;
		all += sz;
		if (i++ < done)
			part += sz;
	}
	rb_iter_end(&it);
	if (rc)
		return 0;
	if (part <= 0 || used == 0)
		return (uint64_t)(all / (b->R->c.bs / 2)) + 1;
	return (uint64_t)(all / part * (double)used) + 1;
}

/* The first item in key order that is not an extent (the new tree's
 * first leaf item), copied into *first with its body in *body
 * (malloc'ed), its place in *at; R4_ECORRUPT when there is none. */
int rb_first_leaf_item(struct rb *b, struct ritem *first, uint8_t **body,
			   size_t *at, struct r4_error *err)
{
	struct rb_iter it;
	const struct ritem *p;
	int rc = rb_iter_start(b, &it);

	*body = NULL;
	for (*at = 0; !rc && (rc = rb_iter_next(&it, &p)) == 1; ++*at) {
		rc = 0;
		if (p->pid == FMT_ITEM_EXTENT40)
			continue;
		*first = *p;
		*body = malloc(p->len ? p->len : 1);
		if (!*body) {
			rc = -ENOMEM;
			break;
		}
		memcpy(*body, p->body, p->len);
		first->body = *body;
		rb_iter_end(&it);
		return 0;
	}
	rb_iter_end(&it);
	return rc ? rc : r4i_fail(err, R4_ECORRUPT, "no leaf item survived");
}

/* Every item but the one at place 'skip' into the new tree, in key
 * order; *done: how many were taken (the one that failed too). */
int rb_insert_all(struct rb *b, struct r4_txn *x, size_t skip,
		      size_t *done, struct r4_error *err)
{
	struct rb_iter it;
	const struct ritem *p;
	size_t i = 0;
	int rc = rb_iter_start(b, &it);

	while (!rc && (rc = rb_iter_next(&it, &p)) == 1) {
		rc = 0;
		if (i++ == skip)
			continue;
		rc = tree_insert(&x->mod, p->pid == FMT_ITEM_EXTENT40 ? 2 : 1,
				 &p->key, p->pid, p->body, p->len, err);
		if (rc == R4_EEXIST) {
			/* Two items the tree takes for one key (the
			 * sorted items have none): the first stays. */
			b->items_dropped++;
			rc = 0;
		}
	}
	rb_iter_end(&it);
	*done = i;
	if (rc < 0 && rc != -ENOMEM && !err->code)
		rc = r4i_fail(err, rc, "%s: cannot read back the tree "
			      "rebuild's temporary files (in $TMPDIR, else "
			      "/tmp): %s",
			      b->R->vol->dev->path, r4_strerror(rc));
	return rc;
}

/* ---- the spilled items of walked nodes, by node and place ---- */

int rb_np_start(struct rb *b, struct rb_np *np)
{
	struct rb_srec r;
	int rc;

	memset(np, 0, sizeof(*np));
	np->runs.fd = -1;
	np->b = b;
	np->body = malloc(b->R->c.bs);
	rc = np->body ? chk_runs_init(&np->runs, sizeof(r), srec_pos_cmp,
				      b->sp.budget) : -ENOMEM;
	if (!rc)
		rc = spill_rewind(&b->sp);
	while (!rc && (rc = spill_next(&b->sp, &r, 1)) == 1) {
		rc = 0;
		if (r.blk && chk_map_test(&b->walked, r.blk)) {
			rc = chk_runs_put(&np->runs, &r);
			np->n++;
		}
	}
	if (!rc)
		rc = chk_runs_finish(&np->runs);
	if (!rc)
		rc = chk_runs_next(&np->runs, &np->head);
	if (rc >= 0) {
		np->have = rc;
		rc = 0;
	}
	return rc;
}

int rb_np_match(struct rb_np *np, uint64_t blk, unsigned idx,
		const struct fmt_key *k, unsigned pid, const uint8_t *body,
		size_t len)
{
	int rc;

	if (!np->have || np->head.blk != blk || np->head.idx != idx)
		return 0;
	if (fmt_key_cmp(&np->head.key, k) || np->head.pid != pid ||
	    np->head.len != len)
		return 0;
	rc = body_get(&np->b->sp, np->head.boff, len, np->body);
	if (rc)
		return rc;
	if (memcmp(np->body, body, len))
		return 0;
	rc = chk_runs_next(&np->runs, &np->head);
	if (rc < 0)
		return rc;
	np->have = rc;
	return 1;
}

void rb_np_end(struct rb_np *np)
{
	chk_runs_free(&np->runs);
	free(np->body);
	np->body = NULL;
}
