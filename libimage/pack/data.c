/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: file data for the packer.
 *
 * Blocks are handed out by pack/space.c, in the order the tree is
 * built (the layout r4repacker aims at: each file's blocks right after
 * the leaf holding its stat data, in key order). Data read while the
 * entries are added (a stream: standard input, a compressed archive,
 * another format) waits in the spool (pack/spool.c: memory up to a
 * budget, then a file beside the image), each block the data touches
 * padded to a block (BD_SPX), until the tree reaches the file; then the
 * writer writes it into place (from memory, or copy_file_range from the
 * file, as below) and it gets one extent unit per contiguous run, a hole
 * unit (start 0) for every run of blocks no chunk touched. Data read
 * while the tree is built (a directory's files) is written as it is
 * read. Tail files' bytes wait in the spool too until the leaves are
 * packed.
 *
 * Data that lies as it is in the source file (r4_entry.data_file: an
 * uncompressed tar file) is not read here: an extent file's blocks are
 * handed out the same way and the writer thread copies its bytes file
 * to file (copy_file_range: no user-space copy; read and written
 * through a buffer when the kernel cannot), a last partial block filled
 * up with zeros; a tail file keeps its offset in the source (BD_AT) and
 * is read from there when the leaves are packed. The image is the same
 * byte for byte. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/packer.h"
#include "libimage/pack/ccreg.h"
#include "libimage/util/err.h"
#include "format/bitmap.h"

/* The source ended before len bytes of the file 'what' were read (the
 * message of the read that found it is replaced: it names no file). */
static int src_short(const struct io_dev *src, const char *what,
		     struct r4_error *err)
{
	return r4i_fail_over(err, R4_ECORRUPT, "%s: '%s': the archive ends "
			    "inside the file's data (truncated, or changed "
			    "during the build)", src->path, what);
}

/* A failed copy of the file 'what': the message names the entry too. */
static int copy_fail(const struct copy1 *c, int rc, struct r4_error *err)
{
	char m[R4_ERRMSG_MAX];

	if (!err)
		return rc;
	snprintf(m, sizeof(m), "%s", err->msg);
	return r4i_fail_over(err, rc, "'%s': %s", c->what, m);
}

/* One copy: in the kernel while it can, the rest (and everything once
 * the kernel could not: from then on for the rest of the build) read
 * and written through the bounce buffer, a last partial block filled
 * up with zeros. The kernel copies whole blocks only, unless the image
 * is a new file (cb->zeroed): there the rest of a last partial block
 * already reads as zeros, and copying the file's bytes as they are
 * saves a read and a write a file. */
static int copy_one(struct wq *q, const struct cbatch *cb,
		    const struct copy1 *c, struct r4_error *err)
{
	uint64_t whole = cb->zeroed ? c->len : c->len / cb->bs * cb->bs;
	uint64_t done = 0, mem;
	int rc = pack_spool_copy_mem(cb, c, &mem, err);

	if (rc)
		return copy_fail(c, rc, err);
	done = mem;
	if (!q->nocopy && whole > done) {
		rc = io_copy(cb->dev, c->off + mem, cb->src, c->soff + mem,
			     whole - mem, &done, err);
		if (rc && rc != -EOPNOTSUPP)
			return copy_fail(c, rc, err);
		if (rc)
			q->nocopy = 1;
		/* a copy cut inside a block: that block again, so each
		 * bounced piece starts on a block and is padded to one */
		done = mem + done == c->len ? c->len :
		       (mem + done) / cb->bs * cb->bs;
	}
	if (done < c->len && !q->bounce &&
	    !(q->bounce = malloc(PACK_COPY_BUF)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	while (done < c->len) {
		size_t k = c->len - done < PACK_COPY_BUF ?
			   (size_t)(c->len - done) : PACK_COPY_BUF;
		size_t pad = (cb->bs - k % cb->bs) % cb->bs;

		rc = io_read(cb->src, q->bounce, k, c->soff + done, err);
		if (rc == R4_ERANGE)
			return src_short(cb->src, c->what, err);
		memset(q->bounce + k, 0, pad);
		if (!rc)
			rc = io_write(cb->dev, q->bounce, k + pad,
				      c->off + done, err);
		if (rc)
			return copy_fail(c, rc, err);
		done += k;
	}
	if (cb->punch && c->len > mem)	/* spooled, never read again */
		io_punch(cb->src, c->soff + mem, c->len - mem);
	return 0;
}

static void cbatch_free(struct cbatch *cb)
{
	if (!cb)
		return;
	for (size_t i = 0; i < cb->n; i++)
		free(cb->c[i].what);
	free(cb);
}

/* Do a batch of copies (skipped when fail); then free it. */
static int copy_batch(struct wq *q, struct cbatch *cb, int fail,
		      struct r4_error *err)
{
	int rc = 0;

	for (size_t i = 0; !fail && !rc && i < cb->n; i++)
		rc = copy_one(q, cb, &cb->c[i], err);
	cbatch_free(cb);
	return rc;
}

/* The writer thread: jobs in order; after a failure the rest are only
 * given back. */
static void wjob_run(struct workq_item *it, unsigned worker)
{
	struct wjob *j = (struct wjob *)((char *)it -
					 offsetof(struct wjob, wi));
	struct wq *q = j->q;

	j->rc = 0;
	if (j->cb)
		j->rc = copy_batch(q, j->cb, q->wfail, &j->err);
	else if (!q->wfail)
		j->rc = io_write(j->dev, j->buf, j->len, j->off, &j->err);
	if (j->rc)
		q->wfail = 1;
}

static int wq_failed(struct wq *q, struct r4_error *err)
{
	if (err)
		*err = q->err;
	return q->rc;
}

/* Take back the oldest job handed over (wait when wait, else only if it
 * is done): its buffer, and its failure if it is the first. 1 when one
 * was taken back. */
static int wq_reclaim(struct wq *q, int wait)
{
	struct wjob *j = &q->job[q->head];

	if (!q->n || (!wait && !workq_done(q->pool, &j->wi)))
		return 0;
	workq_wait(q->pool, &j->wi, 0);
	if (j->rc && !q->rc) {
		q->rc = j->rc;
		q->err = j->err;
	}
	if (j->buf)
		q->free[q->nfree++] = j->buf;
	q->head = (q->head + 1) % PACK_WQ_JOBS;
	q->n--;
	return 1;
}

/* Hand a job to the writer (room made by the caller). */
static void wq_hand(struct wq *q, struct wjob j)
{
	struct wjob *slot = &q->job[(q->head + q->n) % PACK_WQ_JOBS];

	*slot = j;
	slot->q = q;
	q->n++;
	workq_submit(q->pool, &slot->wi, wjob_run);
}

/* Write len bytes of *buf at off: at once, or handed to the writer
 * (*buf then becomes a free buffer). */
int pack_submit(struct r4_pack *b, struct io_dev *dev, uint8_t **buf,
		size_t len, uint64_t off, struct r4_error *err)
{
	struct wq *q = &b->wq;

	if (!q->on)
		return io_write(dev, *buf, len, off, err);
	while (wq_reclaim(q, !q->nfree || q->n == PACK_WQ_JOBS))
		;
	if (q->rc)
		return wq_failed(q, err);
	wq_hand(q, (struct wjob){ .dev = dev, .buf = *buf, .len = len,
				  .off = off });
	*buf = q->free[--q->nfree];
	return 0;
}

/* Hand the copies gathered to the writer. */
static int cbatch_submit(struct wq *q, struct r4_error *err)
{
	if (!q->cur)
		return 0;
	while (wq_reclaim(q, q->n == PACK_WQ_JOBS))
		;
	if (q->rc) {
		cbatch_free(q->cur);
		q->cur = NULL;
		return wq_failed(q, err);
	}
	wq_hand(q, (struct wjob){ .cb = q->cur });
	q->cur = NULL;
	return 0;
}

int pack_copy_submit(struct r4_pack *b, struct io_dev *src, uint64_t off,
		       uint64_t soff, uint64_t len, const char *what,
		       struct r4_error *err)
{
	struct wq *q = &b->wq;
	struct copy1 c = { off, soff, len, (char *)what };
	int rc;

	if (!q->on) {
		struct cbatch one = { b->m.dev, src, src == b->spool,
				      src == b->spool ? b->smem : NULL,
				      b->smem_cap, b->bs, !b->in_place, 0, 0,
				      { c } };

		return copy_one(q, &one, &c, err);
	}
	if (q->cur && q->cur->src != src && (rc = cbatch_submit(q, err)))
		return rc;	/* a batch copies from one file */
	if (!q->cur && !(q->cur = calloc(1, sizeof(*q->cur))))
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (!(c.what = strdup(what)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	q->cur->dev = b->m.dev;
	q->cur->src = src;
	q->cur->punch = src == b->spool;
	q->cur->mem = q->cur->punch ? b->smem : NULL;
	q->cur->mem_cap = b->smem_cap;
	q->cur->bs = b->bs;
	q->cur->zeroed = !b->in_place;
	q->cur->c[q->cur->n++] = c;
	q->cur->bytes += len;
	if (q->cur->n == PACK_CBATCH || q->cur->bytes >= PACK_CBATCH_BYTES)
		return cbatch_submit(q, err);
	return 0;
}

/* Wait until every job handed over is written. */
static int drain(struct r4_pack *b, struct r4_error *err)
{
	struct wq *q = &b->wq;
	int rc;

	if (!q->on)
		return 0;
	rc = cbatch_submit(q, err);
	if (rc)
		return rc;
	while (wq_reclaim(q, 1))
		;
	return q->rc ? wq_failed(q, err) : 0;
}

int pack_img_wait(struct r4_pack *b, struct r4_error *err)
{
	return drain(b, err);
}

int pack_async_begin(struct r4_pack *b, struct r4_error *err)
{
	struct wq *q = &b->wq;
	size_t sz = (size_t)PACK_WBUF_BLOCKS * b->bs;

	if (q->on)
		return 0;
	free(q->bounce);
	memset(q, 0, sizeof(*q));
	for (size_t i = 0; i + 2 < PACK_WQ_BUFS; i++) {
		if (!(q->free[i] = malloc(sz))) {
			while (i)
				free(q->free[--i]);
			return r4i_fail(err, -ENOMEM, "out of memory");
		}
		q->nfree++;
	}
	if (workq_new(1, &q->pool) || !q->pool) {
		for (size_t i = 0; i < q->nfree; i++)
			free(q->free[i]);
		q->nfree = 0;
		return 0;	/* write synchronously instead */
	}
	q->on = 1;
	return 0;
}

int pack_async_end(struct r4_pack *b, struct r4_error *err)
{
	struct wq *q = &b->wq;
	int rc;

	if (!q->on)
		return 0;
	rc = drain(b, err);
	workq_free(q->pool);
	q->pool = NULL;
	for (size_t i = 0; i < q->nfree; i++)
		free(q->free[i]);
	q->nfree = 0;
	q->on = 0;
	free(q->bounce);
	q->bounce = NULL;
	return rc;
}

static int wb_submit(struct r4_pack *b, struct r4_error *err)
{
	int rc = 0;

	if (b->wb.n)
		rc = pack_submit(b, b->m.dev, &b->wb.buf, b->wb.n * b->bs,
			    b->wb.start * b->bs, err);
	b->wb.n = 0;
	return rc;
}

int pack_img_flush(struct r4_pack *b, struct r4_error *err)
{
	int rc = wb_submit(b, err);

	return rc ? rc : drain(b, err);
}

/* *p: the slot of block blk in the write buffer, valid until the next
 * write or flush (so filled at once). */
static int img_slot(struct r4_pack *b, uint64_t blk, uint8_t **p,
		    struct r4_error *err)
{
	if (b->wb.n && (blk != b->wb.start + b->wb.n ||
			b->wb.n == PACK_WBUF_BLOCKS)) {
		int rc = wb_submit(b, err);

		if (rc)
			return rc;
	}
	if (!b->wb.n)
		b->wb.start = blk;
	*p = b->wb.buf + b->wb.n++ * b->bs;
	return 0;
}

int pack_img_write(struct r4_pack *b, uint64_t blk, const uint8_t *data,
	      struct r4_error *err)
{
	uint8_t *p;
	int rc = img_slot(b, blk, &p, err);

	if (!rc)
		memcpy(p, data, b->bs);
	return rc;
}

/* Extent writer: each file block gets its image block (and its slot in
 * the write buffer) when the data first reaches it. */
struct extw {
	struct r4_pack *b;
	struct bobj *o;
	uint64_t next;		/* first file block not yet placed */
	uint64_t cur;		/* file block in blk, or UINT64_MAX */
	uint8_t *blk;
};

static int start_block(struct extw *w, uint64_t i, int whole,
		       struct r4_error *err)
{
	struct r4_pack *b = w->b;
	uint64_t start, got;
	int rc = 0;

	if (i > w->next && enc_unit_add(&w->o->u.reg->ext, 0, i - w->next))
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = pack_alloc_run(b, 1, &start, &got, err);
	if (!rc && enc_unit_add(&w->o->u.reg->ext, start, 1))
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = img_slot(b, start, &w->blk, err);
	if (rc)
		return rc;
	if (!whole)
		memset(w->blk, 0, b->bs);
	b->data_blocks++;
	w->next = i + 1;
	w->cur = i;
	return 0;
}

static int extw_chunk(struct extw *w, uint64_t off, const uint8_t *p,
		      size_t len, struct r4_error *err)
{
	uint32_t bs = w->b->bs;

	while (len) {
		uint64_t i = off / bs;
		size_t in = (size_t)(off % bs), n = bs - in;

		if (w->cur != i) {
			int rc = start_block(w, i, !in && len >= bs, err);

			if (rc)
				return rc;
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

static int take_extents(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
			void *ctx, const char *path, struct r4_error *err)
{
	struct extw w = { .b = b, .o = o, .cur = UINT64_MAX };
	uint64_t pos = 0, off, nblk = (o->size + b->bs - 1) / b->bs;
	const void *buf;
	size_t len;
	int rc;

	o->u.reg->ext.n = 0;
	while ((rc = enc_chunk_next(fn, ctx, path, &off, &buf, &len,
				    err)) > 0) {
		rc = enc_chunk_check(path, o->size, pos, off, len, err);
		if (!rc)
			rc = extw_chunk(&w, off, buf, len, err);
		if (rc)
			return rc;
		pos = off + len;
	}
	if (!rc && nblk > w.next &&
	    enc_unit_add(&o->u.reg->ext, 0, nblk - w.next))
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	o->data = BD_EXTENTS;
	return rc;
}

static int take_tails(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		      void *ctx, const char *path, struct r4_error *err)
{
	uint64_t pos = 0, off;
	const void *buf;
	size_t len;
	int rc;

	o->u.reg->spool_off = b->spool_len;
	while ((rc = enc_chunk_next(fn, ctx, path, &off, &buf, &len,
				    err)) > 0) {
		rc = enc_chunk_check(path, o->size, pos, off, len, err);
		if (!rc)
			rc = pack_spool_put(b, NULL, off - pos, err);
		if (!rc)
			rc = pack_spool_put(b, buf, len, err);
		if (rc)
			return rc;
		pos = off + len;
	}
	if (!rc)
		rc = pack_spool_put(b, NULL, o->size - pos, err);
	o->data = BD_SPOOL;
	return rc;
}

int pack_data_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn, void *ctx,
	      const char *path, struct r4_error *err)
{
	int rc;

	if (!o->size) {
		o->data = BD_NONE;
		return enc_data_empty(fn, ctx, path, err);
	}
	if (o->ccreg == CCREG_YES)	/* compressed: pack/ccreg.c */
		return pack_ccreg_take(b, o, fn, ctx, path, err);
	if (o->tails)
		rc = take_tails(b, o, fn, ctx, path, err);
	else if (!b->placing)
		rc = pack_data_take_spx(b, o, fn, ctx, path, err);
	else
		rc = take_extents(b, o, fn, ctx, path, err);
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

/* Extents of a file whose bytes are at soff of b->src: copied by the
 * writer, file to file, a run of blocks at a time; the last partial
 * block read and filled up with zeros (the image never shows what the
 * target held before). Blocks are handed out as take_extents does (one
 * run after another from the cursor), so the image is the same. */
static int take_extents_at(struct r4_pack *b, struct bobj *o, uint64_t soff,
			   const char *path, struct r4_error *err)
{
	uint64_t nblk = (o->size + b->bs - 1) / b->bs, i = 0, start, got;
	int rc;

	o->u.reg->ext.n = 0;
	o->data = BD_EXTENTS;
	while (i < nblk) {
		uint64_t at = i * b->bs, len;

		rc = pack_alloc_run(b, nblk - i, &start, &got, err);
		if (rc)
			return rc;
		if (enc_unit_add(&o->u.reg->ext, start, got))
			return r4i_fail(err, -ENOMEM, "out of memory");
		b->data_blocks += got;
		len = o->size - at < got * b->bs ? o->size - at : got * b->bs;
		rc = pack_copy_submit(b, b->src, start * b->bs, soff + at, len,
				 path, err);
		if (rc)
			return rc;
		i += got;
	}
	return 0;
}

int pack_data_take_at(struct r4_pack *b, struct bobj *o,
		      const struct r4_entry *e, struct r4_error *err)
{
	uint64_t soff = e->data_off;
	int rc;

	if (!o->size || o->ccreg == CCREG_YES || b->src_fd == -2)
		return 1;
	if (!b->src) {
		struct r4_error e2 = { 0 };

		if (io_open_fd(e->data_fd, e->data_file, &b->src, &e2)) {
			b->src_fd = -2;
			return 1;
		}
		b->src_fd = e->data_fd;
	}
	if (e->data_fd != b->src_fd || strcmp(e->data_file, b->src->path))
		return 1;
	if (soff > b->src->size || o->size > b->src->size - soff)
		return src_short(b->src, e->path, err);
	/* both copied when the tree reaches the file, in key order: the
	 * layout of a directory's build (and r4repacker's) */
	o->u.reg->spool_off = soff;
	o->data = o->tails ? BD_AT : BD_ATX;
	rc = 0;
	b->direct_bytes += o->size;
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

void pack_src_fini(struct r4_pack *b)
{
	io_close(b->src);
	b->src = NULL;
	free(b->atwin);
	b->atwin = NULL;
	b->atwin_len = 0;
	free(b->wq.bounce);
	b->wq.bounce = NULL;
	cbatch_free(b->wq.cur);
	b->wq.cur = NULL;
}

int pack_data_atx_extents(struct r4_pack *b, struct bobj *o,
			  const char *path, struct r4_error *err)
{
	return take_extents_at(b, o, o->u.reg->spool_off, path, err);
}

int pack_data_deferred_extents(struct r4_pack *b, struct bobj *o,
			  const char *path, struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	r4_data_fn fn;
	void *ctx = NULL;
	int rc = s->open(s->src_ctx, path, &fn, &ctx, err);

	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	rc = take_extents(b, o, fn, ctx, path, err);
	s->close(ctx);
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

int pack_tail_open(struct r4_pack *b, struct bobj *o, const char *path,
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
			return r4i_fail(err, rc, "%s: cannot open the data: %s",
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

		if (t->cbuf && t->pos < t->coff + t->clen &&
		    t->pos >= t->coff) {
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
			int rc = enc_chunk_next(t->fn, t->ctx, t->path,
						&t->coff, &p, &t->clen, err);

			if (rc < 0)
				return rc;
			t->cbuf = p;
			t->eof = rc == 0;
			if (!t->eof)
				rc = enc_chunk_check(t->path, t->o->size, end,
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

/* Where a run of BD_AT files that starts with [start, end) of b->src
 * ends: the files whose bodies come next (b->ahead) while each starts
 * at most PACK_AT_GAP bytes after the one before ends and the run fits
 * in PACK_AT_WIN; names without a body of their own read are passed
 * over. Each name is looked at by one run's search only: those it
 * takes are read with it. */
static uint64_t at_run_end(const struct r4_pack *b, uint64_t start,
			   uint64_t end)
{
	for (size_t i = 0; i < b->nahead; i++) {
		const struct bent *e = b->ahead[i];
		const struct bobj *o = e->obj;
		uint64_t s;

		if (o->primary != e || o->type != R4_ENT_REG || !o->size ||
		    o->data != BD_AT)
			continue;
		s = o->u.reg->spool_off;
		if (s < end || s - end > PACK_AT_GAP ||
		    s + o->size - start > PACK_AT_WIN)
			break;
		end = s + o->size;
	}
	return end;
}

/* Read the window: the run from t's file on; a run that cannot be read
 * whole (a source that changed) is given up for the file alone, so that
 * a short read names the file it is in. */
static int at_window(struct tailrd *t, uint64_t at, uint64_t size,
		     struct r4_error *err)
{
	struct r4_pack *b = t->b;
	uint64_t end = at_run_end(b, at, at + size);
	int rc;

	if (!b->atwin && !(b->atwin = malloc(PACK_AT_WIN)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	b->atwin_len = 0;
	rc = io_read(b->src, b->atwin, (size_t)(end - at), at,
		     end > at + size ? NULL : err);
	if (rc && end > at + size)
		rc = io_read(b->src, b->atwin, (size_t)size, at, err);
	else if (!rc)
		size = end - at;
	if (!rc) {
		b->atwin_off = at;
		b->atwin_len = size;
	}
	return rc;
}

/* A file's bytes where they lie in b->src: from the window, read with
 * the run it starts when it is not there; a file larger than the
 * window is read straight into its items. */
static int tail_at(struct tailrd *t, uint8_t *dst, size_t n,
		   struct r4_error *err)
{
	struct r4_pack *b = t->b;
	uint64_t at = t->o->u.reg->spool_off, size = t->o->size;
	int rc = 0;

	if (size > PACK_AT_WIN)
		rc = io_read(b->src, dst, n, at + t->pos, err);
	else if (b->atwin_len && at >= b->atwin_off &&
		 at + size <= b->atwin_off + b->atwin_len)
		memcpy(dst, b->atwin + (at - b->atwin_off) + t->pos, n);
	else if (!(rc = at_window(t, at, size, err)))
		memcpy(dst, b->atwin + t->pos, n);
	t->pos += n;
	if (rc == R4_ERANGE)
		return src_short(b->src, t->path, err);
	if (rc && err) {
		char m[R4_ERRMSG_MAX];

		snprintf(m, sizeof(m), "%s", err->msg);
		return r4i_fail_over(err, rc, "'%s': %s", t->path, m);
	}
	return rc;
}

int pack_tail_read(struct tailrd *t, uint8_t *dst, size_t n,
		   struct r4_error *err)
{
	int rc;

	if (t->o->data == BD_AT)
		return tail_at(t, dst, n, err);
	if (t->o->data != BD_DEFERRED) {
		rc = pack_spool_get(t->b, dst, n, t->o->u.reg->spool_off + t->pos,
			       err);
		t->pos += n;
		return rc;
	}
	return tail_from_fn(t, dst, n, err);
}

void pack_tail_close(struct tailrd *t)
{
	if (t->fn)
		t->b->o.source->close(t->ctx);
	t->fn = NULL;
}
