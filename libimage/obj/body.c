/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: regular file bodies written, cut and removed inside a
 * transaction: tail items in leaves, extent items in twigs with the data
 * in contiguous runs (txn_alloc_run, txn_write_data). */
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
#include "format/node.h"

#define DATA_BATCH 64		/* blocks written in one call */

int obj_body_tails(const struct r4_txn *x, uint64_t size)
{
	return enc_tails((unsigned)x->formatting, x->vol->blksize, size);
}

static int oom(struct r4_error *err)
{
	return r4i_fail(err, -ENOMEM, "out of memory");
}

/* ---- extents ------------------------------------------------------------ */

/* Extent items for units s (file offset 0 on). */
static int units_store(struct r4_txn *x, const struct r4_objref *ref,
		       const struct enc_units *s, struct r4_error *err)
{
	size_t per = tree_max_item(&x->mod) / FMT_EXTENT40_UNIT_SIZE, i = 0;
	uint8_t *buf = malloc(per * FMT_EXTENT40_UNIT_SIZE);
	uint64_t off = 0;
	int rc = buf ? 0 : oom(err);

	while (!rc && i < s->n) {
		size_t k = s->n - i < per ? s->n - i : per;
		struct fmt_key key;
		uint64_t span = 0;

		for (size_t j = 0; j < k; j++) {
			fmt_extent40_unit_encode(&s->u[i + j], buf +
						 j * FMT_EXTENT40_UNIT_SIZE);
			span += s->u[i + j].width * x->vol->blksize;
		}
		fmt_key_body(&key, ref->locality, ref->ordering, ref->oid, off);
		rc = tree_insert(&x->mod, 2, &key, FMT_ITEM_EXTENT40, buf,
				 k * FMT_EXTENT40_UNIT_SIZE, err);
		off += span;
		i += k;
	}
	free(buf);
	return rc;
}

/* Streaming data into runs of blocks. */
struct extw {
	struct r4_txn *x;
	struct enc_units s;
	uint64_t nblk;		/* file blocks */
	uint64_t next;		/* next file block to place */
	uint64_t run, left;	/* unused part of the current run */
	uint8_t *batch;
	size_t nb;
	uint64_t bstart;
};

static int extw_flush(struct extw *w, struct r4_error *err)
{
	int rc = 0;

	if (w->nb)
		rc = txn_write_data(w->x->t, w->bstart, w->batch, w->nb, err);
	w->x->data_blocks += w->nb;
	w->nb = 0;
	return rc;
}

/* File block fb (> every earlier one) has the bytes in w->batch slot. */
static int extw_place(struct extw *w, uint64_t fb, const uint8_t *blk,
		      struct r4_error *err)
{
	uint32_t bs = w->x->vol->blksize;
	int rc = 0;

	if (fb > w->next && enc_unit_add(&w->s, 0, fb - w->next))
		return oom(err);
	if (!w->left) {
		rc = extw_flush(w, err);
		if (!rc)
			rc = txn_alloc_run(w->x->t, w->x->data_hint,
					   w->nblk - fb, &w->run, &w->left,
					   err);
		if (rc)
			return rc;
	}
	if (w->nb && (w->nb == DATA_BATCH || w->bstart + w->nb != w->run))
		rc = extw_flush(w, err);
	if (rc)
		return rc;
	if (!w->nb)
		w->bstart = w->run;
	memcpy(w->batch + w->nb++ * bs, blk, bs);
	if (enc_unit_add(&w->s, w->run, 1))
		return oom(err);
	w->run++;
	w->left--;
	w->x->data_hint = w->run;
	w->next = fb + 1;
	return 0;
}

/* ---- reading the data source ------------------------------------------- */

/* Calls out(ctx, piece) with whole pieces of 'piece' bytes (zero-filled
 * gaps; the last one short) for file offsets 0..size. Pieces entirely
 * inside a hole are skipped when skip_holes. */
typedef int (*piece_fn)(void *ctx, uint64_t off, const uint8_t *p, size_t n,
			struct r4_error *err);

struct feed {
	uint64_t size;
	size_t piece;
	uint8_t *buf;
	uint64_t boff;		/* file offset of buf */
	int dirty;		/* buf holds data */
	int ready;		/* buf's piece is zero but for that data */
};

/* Bytes of the piece at f->boff. */
static size_t feed_len(const struct feed *f)
{
	return f->size - f->boff < f->piece ? (size_t)(f->size - f->boff) :
					      f->piece;
}

/* Zero buf for the piece at f->boff: what out reads of it (skip: the
 * extents' whole block, else the piece's bytes). */
static void feed_zero(struct feed *f, int skip)
{
	if (!f->ready)
		memset(f->buf, 0, skip ? f->piece : feed_len(f));
	f->ready = 1;
}

static int feed_emit(struct feed *f, piece_fn out, void *ctx, int skip,
		     struct r4_error *err)
{
	size_t n = feed_len(f);
	int rc = 0;

	if (n && (f->dirty || !skip)) {
		feed_zero(f, skip);
		rc = out(ctx, f->boff, f->buf, n, err);
	}
	f->dirty = f->ready = 0;
	f->boff += f->piece;
	return rc;
}

/* A chunk of len bytes at file offset off holds the whole piece at
 * f->boff (a short last one only where out takes n bytes): it goes out
 * from where it is, not through buf. */
static int feed_whole(const struct feed *f, uint64_t off, size_t len,
		      int skip)
{
	size_t n = feed_len(f);

	return off == f->boff && !f->dirty && len >= n &&
	       (n == f->piece || !skip);
}

static int feed_run(struct feed *f, r4_data_fn fn, void *dctx,
		    const char *path, piece_fn out, void *ctx, int skip,
		    struct r4_error *err)
{
	uint64_t pos = 0, off;
	const void *vb;
	size_t len;
	int rc = 0, got = 0;

	while ((got = enc_chunk_next(fn, dctx, path, &off, &vb, &len,
				     err)) > 0) {
		const uint8_t *p = vb;

		rc = enc_chunk_check(path, f->size, pos, off, len, err);
		if (rc)
			return rc;
		while (len) {
			size_t in, n;

			while (off >= f->boff + f->piece && !rc) {
				rc = feed_emit(f, out, ctx, skip, err);
				/* a hole: straight to the piece of off */
				if (skip && off >= f->boff + f->piece)
					f->boff += (off - f->boff) / f->piece *
						   f->piece;
			}
			if (rc)
				return rc;
			if (feed_whole(f, off, len, skip)) {
				n = feed_len(f);
				rc = out(ctx, off, p, n, err);
				if (rc)
					return rc;
				f->boff += f->piece;
				p += n;
				off += n;
				len -= n;
				continue;
			}
			feed_zero(f, skip);
			in = (size_t)(off - f->boff);
			n = f->piece - in < len ? f->piece - in : len;
			memcpy(f->buf + in, p, n);
			f->dirty = 1;
			p += n;
			off += n;
			len -= n;
		}
		pos = off;
	}
	if (got < 0)
		return got;
	while (f->boff < f->size && !rc) {
		rc = feed_emit(f, out, ctx, skip, err);
		if (skip)	/* the rest is a hole */
			break;
	}
	return rc;
}

struct tailw {
	struct r4_txn *x;
	const struct r4_objref *ref;
};

static int tail_piece(void *ctx, uint64_t off, const uint8_t *p, size_t n,
		      struct r4_error *err)
{
	struct tailw *t = ctx;
	struct fmt_key k;

	fmt_key_body(&k, t->ref->locality, t->ref->ordering, t->ref->oid, off);
	return tree_insert(&t->x->mod, 1, &k, FMT_ITEM_TAIL40, p, n, err);
}

static int ext_piece(void *ctx, uint64_t off, const uint8_t *p, size_t n,
		     struct r4_error *err)
{
	struct extw *w = ctx;

	(void)n;
	return extw_place(w, off / w->x->vol->blksize, p, err);
}

static int write_extents(struct r4_txn *x, const struct r4_objref *ref,
			 uint64_t size, r4_data_fn fn, void *ctx,
			 const char *path, uint64_t *bytes,
			 struct r4_error *err)
{
	uint32_t bs = x->vol->blksize;
	struct extw w = { .x = x, .nblk = (size + bs - 1) / bs };
	struct feed f = { size, bs, NULL, 0, 0, 0 };
	int rc;

	w.batch = malloc((size_t)DATA_BATCH * bs);
	f.buf = calloc(1, bs);
	rc = w.batch && f.buf ? 0 : oom(err);
	if (!rc)
		rc = feed_run(&f, fn, ctx, path, ext_piece, &w, 1, err);
	if (!rc)
		rc = extw_flush(&w, err);
	if (!rc && w.nblk > w.next && enc_unit_add(&w.s, 0, w.nblk - w.next))
		rc = oom(err);
	if (!rc && w.left)
		rc = txn_free(x->t, w.run, w.left, err);
	if (!rc)
		rc = units_store(x, ref, &w.s, err);
	*bytes = enc_units_bytes(&w.s, x->vol->blksize);
	free(w.s.u);
	free(w.batch);
	free(f.buf);
	return rc;
}

int obj_body_write(struct r4_txn *x, const struct r4_objref *ref,
		   uint64_t size, r4_data_fn fn, void *ctx, const char *path,
		   uint64_t *bytes, struct r4_error *err)
{
	struct tailw t = { x, ref };
	struct feed f = { size, 0, NULL, 0, 0, 0 };
	int rc;

	*bytes = 0;
	if (!size)
		return enc_data_empty(fn, ctx, path, err);
	if (!obj_body_tails(x, size))
		return write_extents(x, ref, size, fn, ctx, path, bytes, err);
	f.piece = tree_max_item(&x->mod);
	if (R4_RESERVE(x->tail_buf, x->tail_bufcap, f.piece, f.piece))
		return oom(err);
	f.buf = x->tail_buf;
	rc = feed_run(&f, fn, ctx, path, tail_piece, &t, 0, err);
	*bytes = size;
	return rc;
}

/* ---- removing and cutting ----------------------------------------------- */

/* The first body item of ref at or after offset off: key, level, a copy
 * of its body. R4_ENOTFOUND when there is none. */
struct bitem {
	struct fmt_key key;
	unsigned level, pid;
	uint8_t *body;
	size_t len;
};

/* body_next through the transaction's own leaves (tree_mod_peek, no
 * deferred leaf written): 0 with bi filled for a tail or ctail item
 * whose key is k or the one after it, R4_ENOTFOUND when the key after
 * k's item (above k) is past ref's body, 1 when that is not known this
 * way (an extent, no item at that key, the tree's end) and the cursor
 * must look. */
static int body_peek(struct r4_txn *x, const struct r4_objref *ref,
		     const struct fmt_key *k, struct bitem *bi,
		     struct r4_error *err)
{
	struct tree_peek pk;
	struct fmt_key want = *k;
	int rc = tree_mod_peek(&x->mod, k, &pk, &x->find_in, &x->find_incap,
			       err);

	if (!rc && fmt_key_cmp(&pk.key, k) < 0) {
		if (pk.next_at < 0 || fmt_key_cmp(&pk.next, k) <= 0)
			return 1;
		/* what follows is at or above that key: past ref's body */
		if (!obj_is_body(ref, &pk.next))
			return R4_ENOTFOUND;
		/* the item after: it has exactly that key (a parent's key
		 * may be below its child's first one: then the cursor) */
		want = pk.next;
		rc = tree_mod_peek(&x->mod, &want, &pk, &x->find_in,
				   &x->find_incap, err);
	}
	if (rc)
		return rc;
	if (fmt_key_cmp(&pk.key, &want) || !obj_is_body(ref, &pk.key) ||
	    (pk.pid != FMT_ITEM_TAIL40 && pk.pid != FMT_ITEM_CTAIL40))
		return 1;
	bi->key = pk.key;
	bi->level = FMT_NODE_LEAF_LEVEL;
	bi->pid = pk.pid;
	bi->len = pk.len;
	bi->body = malloc(pk.len ? pk.len : 1);
	if (!bi->body)
		return oom(err);
	memcpy(bi->body, x->find_in, pk.len);
	return 0;
}

static int body_next(struct r4_txn *x, const struct r4_objref *ref,
		     uint64_t off, struct bitem *bi, struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	memset(bi, 0, sizeof(*bi));
	fmt_key_body(&k, ref->locality, ref->ordering, ref->oid, off);
	rc = body_peek(x, ref, &k, bi, err);
	if (rc != 1)
		return rc;
	tree_cursor_init(&c, x->vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && !obj_is_body(ref, &it.key))
		rc = R4_ENOTFOUND;
	if (!rc && it.plugin_id != FMT_ITEM_TAIL40 &&
	    it.plugin_id != FMT_ITEM_CTAIL40 &&
	    it.plugin_id != FMT_ITEM_EXTENT40)
		rc = r4i_fail(err, R4_EUNSUPP, "%s: tree node %llu, item %u: "
			     "body item plugin %u is not supported",
			     obj_vol_name(x->vol), (unsigned long long)it.blk,
			     it.pos, it.plugin_id);
	if (!rc) {
		bi->key = it.key;
		bi->level = it.level;
		bi->pid = it.plugin_id;
		bi->len = it.len;
		bi->body = malloc(it.len);
		if (bi->body)
			memcpy(bi->body, it.body, it.len);
		else
			rc = oom(err);
	}
	tree_cursor_fini(&c);
	return rc;
}

static int free_units(struct r4_txn *x, const uint8_t *body, size_t len,
		      struct r4_error *err)
{
	int n = fmt_extent40_units(body, len), rc = 0;
	struct fmt_extent40_unit u;

	for (int i = 0; !rc && i < n; i++) {
		fmt_extent40_unit_decode(body + (size_t)i * 16, &u);
		if (fmt_extent40_kind(&u) == FMT_EXTENT_ALLOCATED) {
			if (u.start >= x->vol->sb.block_count ||
			    u.width > x->vol->sb.block_count - u.start)
				return r4i_fail(err, R4_ECORRUPT, "extent unit "
					       "%llu+%llu is outside the "
					       "volume",
					       (unsigned long long)u.start,
					       (unsigned long long)u.width);
			rc = txn_free(x->t, u.start, u.width, err);
		}
	}
	return rc;
}

/* A unit from the disk that truncate may keep or free. */
static int unit_check(struct r4_txn *x, const struct fmt_extent40_unit *u,
		      struct r4_error *err)
{
	uint64_t n = x->vol->sb.block_count;

	if (u->start == 1)
		return r4i_fail(err, R4_EUNSUPP, "an unallocated extent unit");
	if (u->start && (u->start >= n || u->width > n - u->start))
		return r4i_fail(err, R4_ECORRUPT, "extent unit %llu+%llu is "
			       "outside the volume",
			       (unsigned long long)u->start,
			       (unsigned long long)u->width);
	return 0;
}

/* Remove body items from offset 'from' on; with units != NULL, extent
 * items are collected there instead of freed. */
static int body_cut(struct r4_txn *x, const struct r4_objref *ref,
		    uint64_t from, struct enc_units *units,
		    struct r4_error *err)
{
	struct bitem bi;
	int rc;

	while (!(rc = body_next(x, ref, from, &bi, err))) {
		if (bi.pid == FMT_ITEM_EXTENT40 && units) {
			struct fmt_extent40_unit u;

			for (size_t i = 0; !rc && i + 16 <= bi.len; i += 16) {
				fmt_extent40_unit_decode(bi.body + i, &u);
				rc = unit_check(x, &u, err);
				if (!rc && enc_unit_add(units, u.start,
							u.width))
					rc = oom(err);
			}
		} else if (bi.pid == FMT_ITEM_EXTENT40) {
			rc = free_units(x, bi.body, bi.len, err);
		}
		if (!rc)
			rc = tree_delete(&x->mod, bi.level, &bi.key, err);
		free(bi.body);
		if (rc)
			return rc;
	}
	return rc == R4_ENOTFOUND ? 0 : rc;
}

int obj_body_kill(struct r4_txn *x, const struct r4_objref *ref,
		  struct r4_error *err)
{
	return body_cut(x, ref, 0, NULL, err);
}

/* Keep the first nb blocks of s, freeing the rest. */
static int units_shrink(struct r4_txn *x, struct enc_units *s, uint64_t nb,
			struct r4_error *err)
{
	uint64_t have = 0;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->n && have < nb; i++) {
		if (have + s->u[i].width > nb) {
			uint64_t keep = nb - have;

			if (s->u[i].start)
				rc = txn_free(x->t, s->u[i].start + keep,
					      s->u[i].width - keep, err);
			s->u[i].width = keep;
		}
		have += s->u[i].width;
	}
	for (size_t j = i; !rc && j < s->n; j++)
		if (s->u[j].start)
			rc = txn_free(x->t, s->u[j].start, s->u[j].width, err);
	s->n = i;
	return rc;
}

/* The last block of s holds file bytes up to 'size': write it again
 * with the bytes after 'size' zeroed (to a new block: copy-on-write). */
static int last_block_zero(struct r4_txn *x, struct enc_units *s,
			   uint64_t size, struct r4_error *err)
{
	uint32_t bs = x->vol->blksize;
	struct fmt_extent40_unit *l = s->n ? &s->u[s->n - 1] : NULL;
	uint64_t old, nb;
	uint8_t *buf;
	int rc;

	if (!l || !l->start || size % bs == 0)
		return 0;
	old = l->start + l->width - 1;
	buf = malloc(bs);
	if (!buf)
		return oom(err);
	rc = io_read(x->vol->dev, buf, bs, old * bs, err);
	memset(buf + size % bs, 0, bs - size % bs);
	if (!rc)
		rc = txn_alloc(x->t, old, &nb, err);
	if (!rc)
		rc = txn_write_data(x->t, nb, buf, 1, err);
	if (!rc)
		rc = txn_free(x->t, old, 1, err);
	free(buf);
	if (rc)
		return rc;
	l->width--;
	if (!l->width)
		s->n--;
	return enc_unit_add(s, nb, 1) ? oom(err) : 0;
}

static int trunc_extents(struct r4_txn *x, const struct r4_objref *ref,
			 uint64_t size, uint64_t *bytes, struct r4_error *err)
{
	uint32_t bs = x->vol->blksize;
	uint64_t nb = (size + bs - 1) / bs, have = 0;
	struct enc_units s = { NULL, 0, 0 };
	int rc = body_cut(x, ref, 0, &s, err);

	for (size_t i = 0; i < s.n; i++)
		have += s.u[i].width;
	if (!rc && nb <= have) {
		rc = units_shrink(x, &s, nb, err);
		if (!rc)
			rc = last_block_zero(x, &s, size, err);
	} else if (!rc && enc_unit_add(&s, 0, nb - have)) {
		rc = oom(err);
	}
	if (!rc)
		rc = units_store(x, ref, &s, err);
	*bytes = enc_units_bytes(&s, x->vol->blksize);
	free(s.u);
	return rc;
}

/* Tail file staying a tail file. */
static int trunc_tails(struct r4_txn *x, const struct r4_objref *ref,
		       uint64_t old, uint64_t size, struct r4_error *err)
{
	struct tailw t = { x, ref };
	struct feed f = { size, tree_max_item(&x->mod), NULL, old, 0, 0 };
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k, ik;
	uint8_t *cut = NULL;
	size_t clen = 0;
	int rc;

	if (size > old) {
		f.buf = calloc(1, f.piece);
		rc = f.buf ? feed_run(&f, NULL, NULL, "", tail_piece, &t, 0,
				      err) : oom(err);
		free(f.buf);
		return rc;
	}
	fmt_key_body(&k, ref->locality, ref->ordering, ref->oid, size);
	tree_cursor_init(&c, x->vol);
	rc = tree_seek_le(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && obj_is_body(ref, &it.key) &&
	    it.plugin_id == FMT_ITEM_TAIL40 && fmt_key_offset(&it.key) < size &&
	    fmt_key_offset(&it.key) + it.len > size) {
		ik = it.key;
		clen = (size_t)(size - fmt_key_offset(&it.key));
		cut = malloc(clen);
		if (cut)
			memcpy(cut, it.body, clen);
	}
	tree_cursor_fini(&c);
	rc = rc == R4_ENOTFOUND ? 0 : rc;
	if (!rc && clen && !cut)
		rc = oom(err);
	if (!rc && cut)
		rc = tree_replace(&x->mod, 1, &ik, FMT_ITEM_TAIL40, cut, clen,
				  err);
	free(cut);
	return rc ? rc : body_cut(x, ref, size, NULL, err);
}

struct memsrc {
	const uint8_t *buf;
	size_t len;
	int done;
};

static int mem_data(void *ctx, uint64_t *off, const void **buf, size_t *len,
		    struct r4_error *err)
{
	struct memsrc *m = ctx;

	(void)err;
	if (m->done || !m->len)
		return 0;
	m->done = 1;
	*off = 0;
	*buf = m->buf;
	*len = m->len;
	return 1;
}

int obj_body_truncate(struct r4_txn *x, const struct r4_objref *ref,
		      uint64_t old, uint64_t size, uint64_t *bytes,
		      struct r4_error *err)
{
	struct memsrc ms = { NULL, 0, 0 };
	struct bitem bi;
	uint8_t *data;
	size_t got = 0;
	int rc = body_next(x, ref, 0, &bi, err);

	if (rc && rc != R4_ENOTFOUND)
		return rc;
	free(bi.body);
	if (!rc && bi.pid == FMT_ITEM_EXTENT40)
		return trunc_extents(x, ref, size, bytes, err);
	*bytes = size;
	if (obj_body_tails(x, size) || size <= old)
		return trunc_tails(x, ref, old, size, err);
	data = malloc(old ? old : 1);
	if (!data)
		return oom(err);
	rc = old ? r4_read(x->vol, ref, 0, data, old, &got, err) : 0;
	ms.buf = data;
	ms.len = got;
	if (!rc)
		rc = obj_body_kill(x, ref, err);
	if (!rc)
		rc = write_extents(x, ref, size, mem_data, &ms, "truncate",
				   bytes, err);
	free(data);
	return rc;
}
