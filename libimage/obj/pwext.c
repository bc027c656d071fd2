/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: writing into a regular file whose body is extents, in place:
 * the cost is the bytes written (and the extent items that map them),
 * not the file's size.
 *
 * A touched block the committed volume uses is never written over: its
 * new contents go to a block allocated by the transaction, the old one
 * is freed at commit, and the extent unit is cut to map the new one
 * (copy-on-write, the relocate set). The twig holding the extent item
 * is copied on write by the tree editor anyway, so the commit stays
 * atomic with no block written twice: a crash before the commit point
 * leaves the old blocks and the old twig; after it, the new ones. The
 * other way, capturing the data block into the overwrite set, would
 * write every byte twice (wandered copy, then home) and pin each block
 * in memory until the commit. A block this transaction allocated (an
 * earlier write since the last commit) is written again where it is:
 * the committed state does not use it (txn_owns).
 *
 * Blocks past the end of the last extent item extend it (new blocks
 * from the transaction's allocator, next to the last one when free); a
 * write past the end leaves a hole unit (start 0) in between. Unwritten
 * bytes of a new or relocated block are zero from the old size on, so
 * the space between the old end and the write reads as zeros. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/write.h"
#include "libimage/obj/encode.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "libimage/txn/txn.h"
#include "format/plugin.h"

#define PX_BATCH 64		/* blocks in one txn_write_data */

struct pwx {
	struct r4_txn *x;
	const struct r4_objref *ref;
	uint64_t off, oldsize;	/* the write; the size before it */
	const uint8_t *buf;
	size_t len;
	uint32_t bs;
	uint64_t b0, b1;	/* file blocks touched: [b0, b1) */
	uint64_t run, left;	/* unused part of the allocated run */
	uint64_t hint;
	uint8_t *blk;		/* one block being made */
	uint8_t *batch;		/* blocks to write at bstart.. */
	size_t nb;
	uint64_t bstart;
	int64_t dblocks;	/* allocated blocks gained */
	int moved;		/* a block allocated or freed: an error
				 * from now on fails the transaction */
};

static int oom(struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "out of memory");
}

static int px_flush(struct pwx *p, struct r4_error *err)
{
	int rc = 0;

	if (p->nb)
		rc = txn_write_data(p->x->t, p->bstart, p->batch, p->nb, err);
	if (!rc)
		p->x->data_blocks += p->nb;
	p->nb = 0;
	return rc;
}

/* p->blk goes to block dest (allocated by the transaction). */
static int px_put(struct pwx *p, uint64_t dest, struct r4_error *err)
{
	int rc = 0;

	if (p->nb && (p->nb == PX_BATCH || p->bstart + p->nb != dest))
		rc = px_flush(p, err);
	if (rc)
		return rc;
	if (!p->nb)
		p->bstart = dest;
	memcpy(p->batch + p->nb++ * p->bs, p->blk, p->bs);
	return 0;
}

/* File block fb's new bytes into p->blk: the old block's (old != 0) or
 * zeros, zero from the old size on, then the written bytes. */
static int px_make(struct pwx *p, uint64_t fb, uint64_t old,
		   struct r4_error *err)
{
	uint64_t bo = fb * p->bs, lo = p->off > bo ? p->off : bo;
	uint64_t hi = p->off + p->len, keep;

	if (hi > bo + p->bs)
		hi = bo + p->bs;
	if (lo == bo && hi == bo + p->bs) {
		memcpy(p->blk, p->buf + (lo - p->off), p->bs);
		return 0;
	}
	keep = p->oldsize > bo ? p->oldsize - bo : 0;
	if (keep > p->bs)
		keep = p->bs;
	if (old && keep) {
		int rc = io_read(p->x->vol->dev, p->blk, p->bs, old * p->bs,
				 err);

		if (rc)
			return rc;
	} else {
		keep = 0;
	}
	memset(p->blk + keep, 0, p->bs - keep);
	memcpy(p->blk + (lo - bo), p->buf + (lo - p->off), (size_t)(hi - lo));
	return 0;
}

/* A block for file block fb whose current block is old (0: a hole or
 * past the end): old itself when the transaction owns it, else a new
 * one (old is freed at commit). */
static int px_dest(struct pwx *p, uint64_t fb, uint64_t old, uint64_t *dest,
		   struct r4_error *err)
{
	int rc;

	if (old && txn_owns(p->x->t, old)) {
		*dest = old;
		return 0;
	}
	p->moved = 1;
	if (!p->left) {
		rc = txn_alloc_run(p->x->t, old ? old : p->hint, p->b1 - fb,
				   &p->run, &p->left, err);
		if (rc)
			return rc;
	}
	*dest = p->run++;
	p->left--;
	p->hint = p->run;
	if (old)
		return txn_free(p->x->t, old, 1, err);
	p->dblocks++;
	return 0;
}

/* File blocks [lo, hi), mapped from old block 'start' on (0: a hole),
 * get their new bytes; their units go onto s. */
static int px_blocks(struct pwx *p, uint64_t lo, uint64_t hi, uint64_t start,
		     struct enc_units *s, struct r4_error *err)
{
	for (uint64_t fb = lo; fb < hi; fb++) {
		uint64_t old = start ? start + (fb - lo) : 0, dest;
		int rc = px_make(p, fb, old, err);

		if (!rc)
			rc = px_dest(p, fb, old, &dest, err);
		if (!rc)
			rc = px_put(p, dest, err);
		if (rc)
			return rc;
		if (enc_unit_add(s, dest, 1))
			return oom(err);
	}
	return 0;
}

/* Units s in place of the item at key 'at' (file offset aoff): as many
 * items as they need. */
static int px_store(struct pwx *p, const struct fmt_key *at, uint64_t aoff,
		    const struct enc_units *s, struct r4_error *err)
{
	size_t per = tree_max_item(&p->x->mod) / FMT_EXTENT40_UNIT_SIZE;
	size_t nit = (s->n + per - 1) / per;
	struct tree_newitem *it = calloc(nit ? nit : 1, sizeof(*it));
	uint8_t *body = malloc(s->n * FMT_EXTENT40_UNIT_SIZE + 1);
	uint64_t off = aoff;
	int rc;

	if (!it || !body) {
		free(it);
		free(body);
		return oom(err);
	}
	for (size_t i = 0; i < s->n; i++) {
		if (i % per == 0) {
			struct tree_newitem *w = &it[i / per];

			fmt_key_body(&w->key, p->ref->locality,
				     p->ref->ordering, p->ref->oid, off);
			w->pid = FMT_ITEM_EXTENT40;
			w->body = body + i * FMT_EXTENT40_UNIT_SIZE;
		}
		it[i / per].len += FMT_EXTENT40_UNIT_SIZE;
		fmt_extent40_unit_encode(&s->u[i], body +
					 i * FMT_EXTENT40_UNIT_SIZE);
		off += s->u[i].width * p->bs;
	}
	rc = tree_put_items(&p->x->mod, 2, at, 1, it, nit, err);
	free(it);
	free(body);
	return rc;
}

/* One extent item of the body, a copy of it. */
struct pxitem {
	struct fmt_key key;
	uint64_t fb, end;	/* file blocks it maps: [fb, end) */
	int last;		/* no body item follows */
	uint8_t *body;
	size_t len;
};

static int px_bad(struct pwx *p, const char *what, struct r4_error *err)
{
	return r4i_fail(err, R4_ECORRUPT, "object %llx: %s",
			(unsigned long long)p->ref->oid, what);
}

/* The units of item i; a unit the kernel keeps only in memory
 * (unallocated) or outside the volume is an error. */
static int px_units(struct pwx *p, const struct pxitem *i,
		    struct fmt_extent40_unit **u, int *n,
		    struct r4_error *err)
{
	uint64_t nblk = p->x->vol->sb.block_count;

	*n = fmt_extent40_units(i->body, i->len);
	*u = calloc(*n > 0 ? (size_t)*n : 1, sizeof(**u));
	if (!*u)
		return oom(err);
	for (int k = 0; k < *n; k++) {
		struct fmt_extent40_unit *v = &(*u)[k];

		fmt_extent40_unit_decode(i->body + (size_t)k * 16, v);
		if (v->start == 1)
			return px_bad(p, "an unallocated extent unit", err);
		if (v->start && (v->start >= nblk || v->width > nblk - v->start))
			return px_bad(p, "an extent unit outside the volume",
				      err);
	}
	return 0;
}

/* Item i with the write applied: its units cut around the touched
 * blocks; when it is the last, blocks past its end added. */
static int px_item(struct pwx *p, struct pxitem *i, struct r4_error *err)
{
	struct enc_units s = { NULL, 0, 0 };
	struct fmt_extent40_unit *u;
	uint64_t fb = i->fb;
	int n, rc = px_units(p, i, &u, &n, err);

	for (int k = 0; !rc && k < n; k++) {
		uint64_t a = fb, e = fb + u[k].width, st = u[k].start;
		uint64_t lo = a > p->b0 ? a : p->b0, hi = e < p->b1 ? e : p->b1;

		fb = e;
		if (lo >= hi) {
			rc = enc_unit_add(&s, st, e - a) ? oom(err) : 0;
			continue;
		}
		if (lo > a && enc_unit_add(&s, st, lo - a))
			rc = oom(err);
		if (!rc)
			rc = px_blocks(p, lo, hi, st ? st + (lo - a) : 0, &s,
				       err);
		if (!rc && hi < e && enc_unit_add(&s, st ? st + (hi - a) : 0,
						   e - hi))
			rc = oom(err);
	}
	if (!rc && i->last && p->b0 > fb && enc_unit_add(&s, 0, p->b0 - fb))
		rc = oom(err);
	if (!rc && i->last && p->b1 > fb)
		rc = px_blocks(p, fb > p->b0 ? fb : p->b0, p->b1, 0, &s, err);
	if (!rc)
		rc = px_flush(p, err);
	if (!rc)
		rc = px_store(p, &i->key, i->fb * p->bs, &s, err);
	free(u);
	free(s.u);
	return rc;
}

/* Item 'it' of the body into i (a copy). */
static int px_take(struct pwx *p, const struct tree_item *it,
		   struct pxitem *i, struct r4_error *err)
{
	uint64_t span, off = fmt_key_offset(&it->key);

	if (it->plugin_id != FMT_ITEM_EXTENT40)
		return R4_EUNSUPP;
	if (off % p->bs || fmt_extent40_span(it->body, it->len, p->bs,
					     &span) || off + span < off)
		return px_bad(p, "an extent item at an unaligned offset or of "
			      "a bad size", err);
	i->key = it->key;
	i->fb = off / p->bs;
	i->end = (off + span) / p->bs;
	i->len = it->len;
	i->body = malloc(it->len);
	if (!i->body)
		return oom(err);
	memcpy(i->body, it->body, it->len);
	return 0;
}

/* The body item with the largest key <= file offset off: R4_ENOTFOUND
 * when there is none; R4_EUNSUPP (err untouched) when it is not an
 * extent item. */
static int px_find(struct pwx *p, uint64_t off, struct pxitem *i,
		   struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	memset(i, 0, sizeof(*i));
	fmt_key_body(&k, p->ref->locality, p->ref->ordering, p->ref->oid,
		     off);
	tree_cursor_init(&c, p->x->vol);
	rc = tree_seek_le(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && !obj_is_body(p->ref, &it.key))
		rc = R4_ENOTFOUND;
	if (!rc)
		rc = px_take(p, &it, i, err);
	if (!rc) {
		rc = tree_next(&c, err);
		if (!rc)
			rc = tree_cur(&c, &it, err);
		if (rc == R4_ENOTFOUND || (!rc && !obj_is_body(p->ref,
							       &it.key))) {
			i->last = 1;
			rc = 0;
		}
	}
	tree_cursor_fini(&c);
	if (rc) {
		free(i->body);
		i->body = NULL;
	}
	return rc;
}

/* 1 when the body is extent items from the first to the last (the
 * in-place path applies), 0 when not (tails, no body): nothing read
 * here is kept. */
static int px_probe(struct pwx *p, struct r4_error *err)
{
	struct pxitem i;
	int rc = px_find(p, 0, &i, err);

	free(i.body);
	if (!rc) {
		rc = px_find(p, UINT64_MAX, &i, err);
		free(i.body);
	}
	if (rc == R4_ENOTFOUND || rc == R4_EUNSUPP)
		return 0;
	return rc ? rc : 1;
}

/* The items from the one holding block b0 on, until b1 is passed. */
static int px_walk(struct pwx *p, struct r4_error *err)
{
	uint64_t fb = p->b0;
	int rc = 0;

	for (;;) {
		struct pxitem i;
		uint64_t next;
		int last;

		rc = px_find(p, fb * p->bs, &i, err);
		if (rc == R4_EUNSUPP || rc == R4_ENOTFOUND)
			rc = px_bad(p, "its body mixes extent items with other "
				    "items or misses its first", err);
		if (!rc && fb >= i.end && !i.last)
			rc = px_bad(p, "its extent items leave a gap", err);
		if (!rc)
			rc = px_item(p, &i, err);
		next = i.end;
		last = i.last;
		free(i.body);
		if (rc || last || next >= p->b1)
			return rc;
		fb = next;
	}
}

int obj_pwrite_extents(struct r4_txn *x, const struct r4_objref *ref,
		       uint64_t oldsize, uint64_t off, const void *buf,
		       size_t len, uint64_t *dbytes, struct r4_error *err)
{
	uint32_t bs = x->vol->blksize;
	struct pwx p = { .x = x, .ref = ref, .off = off, .oldsize = oldsize,
			 .buf = buf, .len = len, .bs = bs, .b0 = off / bs,
			 .b1 = (off + len + bs - 1) / bs,
			 .hint = x->data_hint };
	int rc;

	*dbytes = 0;
	if (!len)
		return 0;
	rc = px_probe(&p, err);
	if (rc != 1)
		return rc ? rc : 1;
	p.blk = malloc(bs);
	p.batch = malloc((size_t)PX_BATCH * bs);
	rc = p.blk && p.batch ? px_walk(&p, err) : oom(err);
	if (!rc && p.left)
		rc = txn_free(x->t, p.run, p.left, err);
	/* blocks taken or freed for an extent the tree does not show */
	if (rc && p.moved)
		x->failed = 1;
	x->data_hint = p.hint;
	*dbytes = (uint64_t)p.dblocks * bs;
	free(p.blk);
	free(p.batch);
	return rc;
}
