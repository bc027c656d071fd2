/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: space and file data for the builder.
 *
 * Blocks are handed out in increasing order from the first usable block.
 * Positions that are bitmap blocks (k * 32736) or could be backup blocks
 * for some volume size are never handed out, so nothing placed depends
 * on the final block count; the candidates a smaller volume does not use
 * simply stay free. Each file's data is written as it is read: one extent
 * unit per contiguous run, a hole unit (start 0) for every run of blocks
 * no chunk touches. Tail files' bytes go to the spool file (not memory)
 * until the leaves are packed. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "build.h"
#include "../err.h"
#include "format/bitmap.h"

int space_setup(struct r4_build *b, struct r4_error *err)
{
	b->ncand = fmt_backup_blocks(1ULL << 44, b->bs, b->cand,
				     sizeof(b->cand) / sizeof(b->cand[0]));
	if (b->ncand > sizeof(b->cand) / sizeof(b->cand[0]))
		return r4_fail(err, R4_ERANGE, "too many backup positions");
	b->cursor = fmt_blk_first_usable(b->bs);
	b->hi = b->cursor;
	b->used_cap = 1 << 20;
	b->used = calloc(b->used_cap / 8, 1);
	b->wb.buf = malloc((size_t)BUILD_WBUF_BLOCKS * b->bs);
	if (!b->used || !b->wb.buf)
		return r4_fail(err, -ENOMEM, "out of memory");
	return 0;
}

static int reserved(const struct r4_build *b, uint64_t blk)
{
	size_t lo = 0, hi = b->ncand;

	if (blk < fmt_blk_first_usable(b->bs) ||
	    blk % fmt_bitmap_bpb(b->bs) == 0)
		return 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->cand[mid] == blk)
			return 1;
		if (b->cand[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void alloc_reserve_area(struct r4_build *b, uint64_t k)
{
	uint64_t c = b->cursor, i = 0;

	while (i < k) {
		if (reserved(b, c + i)) {
			c += i + 1;
			i = 0;
			continue;
		}
		i++;
	}
	b->res_start = c;
	b->res_len = k;
	b->cursor = c + k;
	if (b->cursor > b->hi)
		b->hi = b->cursor;
}

static int mark_used(struct r4_build *b, uint64_t start, uint64_t n)
{
	if (start + n > b->used_cap) {
		uint64_t cap = b->used_cap;
		uint8_t *t;

		while (cap < start + n)
			cap *= 2;
		t = realloc(b->used, cap / 8);
		if (!t)
			return -ENOMEM;
		memset(t + b->used_cap / 8, 0, (cap - b->used_cap) / 8);
		b->used = t;
		b->used_cap = cap;
	}
	for (uint64_t i = start; i < start + n; i++)
		b->used[i >> 3] |= (uint8_t)(1u << (i & 7));
	return 0;
}

int alloc_mark(struct r4_build *b, uint64_t start, uint64_t n,
	       struct r4_error *err)
{
	if (mark_used(b, start, n))
		return r4_fail(err, -ENOMEM, "out of memory");
	b->allocated += n;
	return 0;
}

int alloc_run(struct r4_build *b, uint64_t want, uint64_t *start,
	      uint64_t *got, struct r4_error *err)
{
	uint64_t c = b->cursor, n = 1;

	while (reserved(b, c))
		c++;
	if (b->limit && c >= b->limit)
		return r4_fail(err, R4_ENOSPC, "%s: the volume is full (%llu "
			       "blocks)", b->target,
			       (unsigned long long)b->limit);
	while (n < want && !reserved(b, c + n) &&
	       (!b->limit || c + n < b->limit))
		n++;
	if (mark_used(b, c, n))
		return r4_fail(err, -ENOMEM, "out of memory");
	*start = c;
	*got = n;
	b->cursor = c + n;
	if (b->cursor > b->hi)
		b->hi = b->cursor;
	b->allocated += n;
	return 0;
}

int img_flush(struct r4_build *b, struct r4_error *err)
{
	int rc = 0;

	if (b->wb.n)
		rc = io_write(b->m.dev, b->wb.buf, b->wb.n * b->bs,
			      b->wb.start * b->bs, err);
	b->wb.n = 0;
	return rc;
}

int img_write(struct r4_build *b, uint64_t blk, const uint8_t *data,
	      struct r4_error *err)
{
	if (b->wb.n && (blk != b->wb.start + b->wb.n ||
			b->wb.n == BUILD_WBUF_BLOCKS)) {
		int rc = img_flush(b, err);

		if (rc)
			return rc;
	}
	if (!b->wb.n)
		b->wb.start = blk;
	memcpy(b->wb.buf + b->wb.n * b->bs, data, b->bs);
	b->wb.n++;
	return 0;
}

int chunk_check(const char *path, uint64_t size, uint64_t pos,
		uint64_t off, size_t len, struct r4_error *err)
{
	if (off < pos)
		return r4_fail(err, R4_EINVAL, "%s: data chunk at offset %llu "
			       "is out of order", path,
			       (unsigned long long)off);
	if (off > size || len > size - off)
		return r4_fail(err, R4_EINVAL, "%s: data is longer than its "
			       "size (%llu bytes)", path,
			       (unsigned long long)size);
	return 0;
}

static int next_chunk(r4_data_fn fn, void *ctx, const char *path,
		      uint64_t *off, const void **buf, size_t *len,
		      struct r4_error *err)
{
	int rc = fn(ctx, off, buf, len, err);

	if (rc < 0)
		return r4_fail(err, rc, "%s: cannot read the data: %s", path,
			       r4_strerror(rc));
	return rc;
}

static int add_unit(struct bobj *o, uint64_t start, uint64_t width)
{
	struct bext *l = o->next ? &o->ext[o->next - 1] : NULL;

	if (l && ((!start && !l->start) ||
		  (start && l->start && l->start + l->width == start))) {
		l->width += width;
		return 0;
	}
	if (o->next == o->capext) {
		size_t n = o->capext ? o->capext * 2 : 2;
		struct bext *t = realloc(o->ext, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		o->ext = t;
		o->capext = n;
	}
	o->ext[o->next].start = start;
	o->ext[o->next++].width = width;
	return 0;
}

/* Extent writer: file block 'idx' has content 'data'. */
struct extw {
	struct r4_build *b;
	struct bobj *o;
	uint64_t next;		/* first file block not yet placed */
	uint64_t cur;		/* file block in blk, or UINT64_MAX */
	uint8_t *blk;
};

static int put_block(struct extw *w, struct r4_error *err)
{
	struct r4_build *b = w->b;
	uint64_t start, got;
	int rc = 0;

	if (w->cur > w->next)
		rc = add_unit(w->o, 0, w->cur - w->next);
	if (rc)
		return r4_fail(err, -ENOMEM, "out of memory");
	rc = alloc_run(b, 1, &start, &got, err);
	if (!rc && add_unit(w->o, start, 1))
		rc = r4_fail(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = img_write(b, start, w->blk, err);
	b->data_blocks++;
	w->next = w->cur + 1;
	w->cur = UINT64_MAX;
	return rc;
}

static int extw_chunk(struct extw *w, uint64_t off, const uint8_t *p,
		      size_t len, struct r4_error *err)
{
	uint32_t bs = w->b->bs;

	while (len) {
		uint64_t i = off / bs;
		size_t in = (size_t)(off % bs), n = bs - in;
		int rc;

		if (w->cur != i && w->cur != UINT64_MAX) {
			rc = put_block(w, err);
			if (rc)
				return rc;
		}
		if (w->cur != i) {
			memset(w->blk, 0, bs);
			w->cur = i;
		}
		if (n > len)
			n = len;
		memcpy(w->blk + in, p, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int take_extents(struct r4_build *b, struct bobj *o, r4_data_fn fn,
			void *ctx, const char *path, struct r4_error *err)
{
	struct extw w = { .b = b, .o = o, .cur = UINT64_MAX, .blk = b->scratch };
	uint64_t pos = 0, off, nblk = (o->size + b->bs - 1) / b->bs;
	const void *buf;
	size_t len;
	int rc;

	o->next = 0;
	while ((rc = next_chunk(fn, ctx, path, &off, &buf, &len, err)) > 0) {
		rc = chunk_check(path, o->size, pos, off, len, err);
		if (!rc)
			rc = extw_chunk(&w, off, buf, len, err);
		if (rc)
			return rc;
		pos = off + len;
	}
	if (!rc && w.cur != UINT64_MAX)
		rc = put_block(&w, err);
	if (!rc && nblk > w.next && add_unit(o, 0, nblk - w.next))
		rc = r4_fail(err, -ENOMEM, "out of memory");
	o->data = BD_EXTENTS;
	return rc;
}

static int spool_zeros(struct r4_build *b, uint64_t n, struct r4_error *err)
{
	while (n) {
		size_t k = n > 65536 ? 65536 : (size_t)n;
		int rc;

		memset(b->scratch, 0, k);
		rc = io_write(b->spool, b->scratch, k, b->spool_len, err);
		if (rc)
			return rc;
		b->spool_len += k;
		n -= k;
	}
	return 0;
}

static int take_tails(struct r4_build *b, struct bobj *o, r4_data_fn fn,
		      void *ctx, const char *path, struct r4_error *err)
{
	uint64_t pos = 0, off;
	const void *buf;
	size_t len;
	int rc;

	o->spool_off = b->spool_len;
	while ((rc = next_chunk(fn, ctx, path, &off, &buf, &len, err)) > 0) {
		rc = chunk_check(path, o->size, pos, off, len, err);
		if (!rc)
			rc = spool_zeros(b, off - pos, err);
		if (!rc && len)
			rc = io_write(b->spool, buf, len, b->spool_len, err);
		if (rc)
			return rc;
		b->spool_len += len;
		pos = off + len;
	}
	if (!rc)
		rc = spool_zeros(b, o->size - pos, err);
	o->data = BD_SPOOL;
	return rc;
}

int data_take(struct r4_build *b, struct bobj *o, r4_data_fn fn, void *ctx,
	      const char *path, struct r4_error *err)
{
	int rc;

	if (!o->size) {
		const void *buf;
		size_t len;
		uint64_t off;

		rc = next_chunk(fn, ctx, path, &off, &buf, &len, err);
		if (rc > 0 && len)
			return chunk_check(path, 0, 0, off, len, err);
		o->data = BD_NONE;
		return rc < 0 ? rc : 0;
	}
	rc = o->tails ? take_tails(b, o, fn, ctx, path, err) :
			take_extents(b, o, fn, ctx, path, err);
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

int data_deferred_extents(struct r4_build *b, struct bobj *o,
			  const char *path, struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	r4_data_fn fn;
	void *ctx = NULL;
	int rc = s->open(s->src_ctx, path, &fn, &ctx, err);

	if (rc)
		return r4_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	rc = take_extents(b, o, fn, ctx, path, err);
	s->close(ctx);
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

int tail_open(struct r4_build *b, struct bobj *o, const char *path,
	      struct tailrd *t, struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	t->b = b;
	t->o = o;
	t->path = path;
	if (o->data == BD_DEFERRED) {
		rc = s->open(s->src_ctx, path, &t->fn, &t->ctx, err);
		if (rc)
			return r4_fail(err, rc, "%s: cannot open the data: %s",
				       path, r4_strerror(rc));
	}
	return 0;
}

/* Deferred reads: copy chunk bytes, zeros for gaps. */
static int tail_from_fn(struct tailrd *t, uint8_t *dst, size_t n,
			struct r4_error *err)
{
	while (n) {
		size_t k;

		if (t->cbuf && t->pos < t->coff + t->clen && t->pos >= t->coff) {
			k = (size_t)(t->coff + t->clen - t->pos);
			k = k < n ? k : n;
			memcpy(dst, t->cbuf + (t->pos - t->coff), k);
		} else if (t->eof || (t->cbuf && t->coff > t->pos)) {
			uint64_t gap = t->eof ? n : t->coff - t->pos;

			k = gap < n ? (size_t)gap : n;
			memset(dst, 0, k);
		} else {
			uint64_t end = t->cbuf ? t->coff + t->clen : 0;
			const void *p;
			int rc = next_chunk(t->fn, t->ctx, t->path, &t->coff,
					    &p, &t->clen, err);

			if (rc < 0)
				return rc;
			t->cbuf = p;
			t->eof = rc == 0;
			if (!t->eof)
				rc = chunk_check(t->path, t->o->size, end,
						 t->coff, t->clen, err);
			if (rc)
				return rc;
			continue;
		}
		dst += k;
		n -= k;
		t->pos += k;
	}
	return 0;
}

int tail_read(struct tailrd *t, uint8_t *dst, size_t n, struct r4_error *err)
{
	int rc;

	if (t->o->data != BD_DEFERRED) {
		rc = io_read(t->b->spool, dst, n, t->o->spool_off + t->pos,
			     err);
		t->pos += n;
		return rc;
	}
	return tail_from_fn(t, dst, n, err);
}

void tail_close(struct tailrd *t)
{
	if (t->fn)
		t->b->o.source->close(t->ctx);
	t->fn = NULL;
}
