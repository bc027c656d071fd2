/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the packer's window over a stream (pack/ccreg.h): compressed
 * files of an archive read into memory and compressed by worker threads
 * while the packer reads on; they leave the window in the order they
 * came. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/ccreg.h"
#include "libimage/obj/ccreg_encode.h"
#include "libimage/util/err.h"
#include "libimage/util/workq.h"
#include "format/cluster.h"
#include "format/item.h"
#include "format/plugin.h"
#include "libimage/obj/encode.h"
#include "r4/util.h"
#include "libimage/pack/ccreg_int.h"

/* ---- reading ahead from a stream ----------------------------------- */

/* A job's chunks as an r4_data_fn, from offset 'from' on. */
struct sfeed {
	const struct sjob *j;
	size_t i, at;		/* next chunk, its place in in[] */
	uint64_t from;
};

static int sfeed_fn(void *ctx, uint64_t *off, const void **buf, size_t *len,
		    struct r4_error *err)
{
	struct sfeed *f = ctx;

	(void)err;
	while (f->i < f->j->nch) {
		const struct schunk *c = &f->j->ch[f->i];
		const uint8_t *p = f->j->in + f->at;
		uint64_t skip = c->off < f->from ? f->from - c->off : 0;

		f->i++;
		f->at += c->len;
		if (skip >= c->len)
			continue;
		*off = c->off + skip;
		*buf = p + skip;
		*len = c->len - (size_t)skip;
		return 1;
	}
	return 0;
}

/* conv turned the file into an ordinary one: its data again, as the
 * packer's own path gives it (obj_ccreg_refeed_fn): cluster 0 whole, gaps
 * as zeros, then the chunks after it. */
struct sconv {
	uint8_t *c0;
	size_t c0len;
	int stage;
	struct sfeed f;
};

static int sconv_fn(void *ctx, uint64_t *off, const void **buf, size_t *len,
		    struct r4_error *err)
{
	struct sconv *s = ctx;

	if (!s->stage) {
		s->stage = 1;
		*off = 0;
		*buf = s->c0;
		*len = s->c0len;
		return 1;
	}
	return sfeed_fn(&s->f, off, buf, len, err);
}

static void sjob_free(struct sjob *j)
{
	if (!j)
		return;
	free(j->path);
	free(j->ch);
	free(j->data);
	free(j->len);
	free(j);
}

static int sink_sjob(void *sctx, uint64_t idx, const uint8_t *dc, size_t len,
		     struct r4_error *err)
{
	struct sjob *j = sctx;

	(void)err;
	j->len[idx] = (uint32_t)len;
	if (len) {	/* the disk clusters add up to at most the size */
		if (j->dst + j->used != dc)	/* over in[]: may overlap */
			memmove(j->dst + j->used, dc, len);
		j->used += len;
	}
	return 0;
}

/* One file on a worker: the calls pack_ccreg_take makes, so the same
 * bytes. */
static void sjob_run(struct r4_pack *b, struct obj_ccreg_enc *e, struct sjob *j)
{
	struct bobj *o = j->o;
	uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
	struct sfeed f = { j, 0, 0, 0 };
	struct obj_ccreg_rd r;
	int keep = 1, rc;

	obj_ccreg_rd_init(&r, sfeed_fn, &f, j->path, o->size);
	rc = obj_ccreg_enc_conv_first(e, &r, &keep, &j->err);
	/* Input in one piece, from 0 to the size: the disk clusters go over
	 * it (cluster i's ends at or before cluster i + 1 starts, and the
	 * batch's clusters were all compressed before any is written). */
	j->dst = j->nch == 1 && !j->ch[0].off && j->ch[0].len == o->size ?
		 j->in : NULL;
	if (!rc && keep) {	/* buffers of a job before reused */
		if (!j->dst && j->data_cap < o->size) {
			free(j->data);
			j->data = malloc((size_t)o->size);
			j->data_cap = j->data ? (size_t)o->size : 0;
		}
		if (j->len_cap < n) {
			free(j->len);
			j->len = malloc((size_t)n * sizeof(*j->len));
			j->len_cap = j->len ? (size_t)n : 0;
		}
		if (!j->dst)
			j->dst = j->data;
		if (!j->dst || !j->len)
			rc = r4i_fail(&j->err, -ENOMEM, "%s: out of memory",
				      j->path);
		else	/* holes get no call of the sink */
			memset(j->len, 0, (size_t)n * sizeof(*j->len));
	}
	if (!rc && keep)
		rc = obj_ccreg_enc_file(e, &r, 0, obj_ccreg_enc_c0_done(e, o->size),
				    sink_sjob, j, &j->err);
	if (!rc && keep)
		rc = obj_ccreg_rd_finish(&r, &j->err);
	j->keep = keep;
	j->rc = rc;
}

/* A file of the window on worker w: its encoder is the pool's. */
static void sjob_fn(struct workq_item *it, unsigned w)
{
	struct sjob *j = (struct sjob *)((char *)it -
					 offsetof(struct sjob, wi));

	sjob_run(j->b, j->b->ccreg->st.pool.enc[w - 1], j);
}

/* Hand the files not handed over yet to the workers, in the order they
 * came (a batch: one wake-up for many small files). */
static void stream_kick(struct ccreg_stream *st)
{
	while (st->next < st->tail) {
		struct sjob *j = st->ring[st->next++ % STREAM_JOBS];

		workq_submit(st->pool.q, &j->wi, sjob_fn);
	}
	st->queued = 0;
}

/* The packer waits for job j (handed over first, with any before it). */
static void stream_wait(struct ccreg_stream *st, struct sjob *j)
{
	stream_kick(st);
	workq_wait(st->pool.q, &j->wi, 0);
}

/* A retired job is kept for a later file (the packer's thread only). */
static void sjob_spare(struct ccreg_stream *st, struct sjob *j)
{
	if (st->nspare >= STREAM_SPARE || j->ch_cap > SPARE_BUF / 16 ||
	    j->data_cap > SPARE_BUF || j->len_cap > SPARE_BUF / 4) {
		sjob_free(j);
		return;
	}
	j->o = NULL;
	j->in = NULL;
	j->nch = 0;
	j->keep = j->rc = 0;
	j->used = 0;
	j->dst = NULL;
	j->spare_next = st->spare;
	st->spare = j;
	st->nspare++;
}

void ccreg_stream_stop(struct r4_pack *b)
{
	struct ccreg_stream *st = &b->ccreg->st;

	ccreg_pool_halt(&st->pool);
	for (; st->head < st->tail; st->head++) {
		sjob_free(st->ring[st->head % STREAM_JOBS]);
		st->ring[st->head % STREAM_JOBS] = NULL;
	}
	while (st->spare) {
		struct sjob *j = st->spare;

		st->spare = j->spare_next;
		sjob_free(j);
	}
	st->nspare = 0;
	free(st->rbuf);
	st->rbuf = NULL;
	st->rend = 0;
	st->wrapped = 0;
}

/* Where n more bytes go in the ring: 1 and *at, or 0 when they do not
 * fit until older files leave. The files in the ring run from the
 * oldest's roff to rend, past the end and on from 0 when wrapped. */
static int ring_fit(const struct ccreg_stream *st, size_t n, size_t *at)
{
	size_t h;

	if (st->head == st->tail) {
		*at = 0;
		return 1;
	}
	h = st->ring[st->head % STREAM_JOBS]->roff;
	if (!st->wrapped) {
		if (n <= STREAM_BYTES - st->rend) {
			*at = st->rend;
			return 1;
		}
		*at = 0;
		return n <= h;
	}
	*at = st->rend;
	return n <= h - st->rend;
}

/* Start the workers the first time a file could use them: 1 when they
 * run, 0 when the packer compresses every file itself (1 thread, or
 * they could not start: the same bytes either way). */
static int stream_start(struct r4_pack *b)
{
	struct pack_ccreg *cc = b->ccreg;
	struct ccreg_stream *st = &cc->st;
	struct r4_error tmp = { 0, "", 0 };
	unsigned want;

	if (st->pool.q || st->off)
		return st->pool.q != NULL;
	st->off = 1;		/* unless it starts */
	if (b->o.threads == 1)
		return 0;
	want = ccreg_pool_want(b);
	st->rbuf = malloc(STREAM_BYTES);
	if (!st->rbuf || ccreg_pool_encoders(cc, &st->pool, want, &tmp)) {
		ccreg_stream_stop(b);
		return 0;
	}
	ccreg_pool_run(&st->pool, want);
	if (!st->pool.nth) {
		ccreg_stream_stop(b);
		return 0;
	}
	st->off = 0;
	return 1;
}

/* The oldest file leaves the window: wait for its job, then place it as
 * pack_ccreg_take would have. */
static int stream_retire(struct r4_pack *b, struct r4_error *err)
{
	struct ccreg_stream *st = &b->ccreg->st;
	struct sjob *j = st->ring[st->head % STREAM_JOBS];
	struct bobj *o = j->o;
	uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
	int rc = 0;

	stream_wait(st, j);
	st->ring[st->head++ % STREAM_JOBS] = NULL;
	st->held -= o->size;
	/* the oldest file is now the first one at 0: not wrapped */
	if (st->head == st->tail ||
	    st->ring[st->head % STREAM_JOBS]->roff < j->roff)
		st->wrapped = 0;
	if (j->rc) {
		rc = j->rc;
		if (err)
			*err = j->err;
	} else if (j->keep) {
		o->u.reg->ccreg_len = j->len;	/* the object's now */
		j->len = NULL;
		j->len_cap = 0;
		o->u.reg->spool_off = b->spool_len;
		o->u.reg->ccreg_used = 0;
		for (uint64_t i = 0; i < n; i++)
			o->u.reg->ccreg_used += o->u.reg->ccreg_len[i] != 0;
		if (j->used)
			rc = pack_spool_put(b, j->dst, j->used, err);
		o->data = BD_SPOOL;
		b->done_bytes += o->size;
		if (!rc && b->o.progress)
			b->o.progress(b->o.progress_ctx, b->done_bytes,
				      b->total_bytes);
	} else {
		struct sconv cv = { .f = { j, 0, 0, b->ccreg->csize } };

		cv.c0len = b->ccreg->csize;	/* < the size: conv tested */
		cv.c0 = calloc(1, cv.c0len);
		if (!cv.c0)
			rc = r4i_fail(err, -ENOMEM, "%s: out of memory",
				      j->path);
		for (size_t i = 0, at = 0; !rc && i < j->nch; i++) {
			const struct schunk *c = &j->ch[i];

			if (c->off < cv.c0len)
				memcpy(cv.c0 + c->off, j->in + at,
				       c->len < cv.c0len - c->off ? c->len :
				       cv.c0len - (size_t)c->off);
			at += c->len;
		}
		o->ccreg = CCREG_CONVERTED;
		if (!rc)
			rc = pack_data_take(b, o, sconv_fn, &cv, j->path, err);
		free(cv.c0);
	}
	sjob_spare(st, j);
	return rc;
}

static int stream_head_done(struct ccreg_stream *st)
{
	return st->head < st->next &&
	       workq_done(st->pool.q, &st->ring[st->head % STREAM_JOBS]->wi);
}

int pack_ccreg_stream_drain(struct r4_pack *b, struct r4_error *err)
{
	struct ccreg_stream *st;
	int rc = 0;

	if (!b->ccreg || !b->ccreg->st.pool.q)
		return 0;
	st = &b->ccreg->st;
	while (!rc && st->head < st->tail)
		rc = stream_retire(b, err);
	return rc;
}

/* Streamed data of a compressed file into the window: 0 taken, 1 to be
 * compressed by the caller now (a large file, or no workers; everything
 * before it has left the window), or an error. */
/* Wait until the window has a place for one more file of size bytes:
 * *roff its place in the ring. */
static int stream_room(struct r4_pack *b, uint64_t size, size_t *roff,
		       struct r4_error *err)
{
	struct ccreg_stream *st = &b->ccreg->st;
	int rc;

	while (st->tail - st->head >= STREAM_JOBS ||
	       !ring_fit(st, (size_t)size, roff)) {
		uint64_t k = st->tail - st->head - 1;

		/* full: wait for a batch to finish, not for one file */
		stream_wait(st, st->ring[(st->head + (k < STREAM_BATCH ?
					  k : STREAM_BATCH)) % STREAM_JOBS]);
		if ((rc = stream_retire(b, err)))
			return rc;
	}
	return 0;
}

/* A job for the file at path: a spare one, else a new one. NULL when
 * out of memory (said in err). */
static struct sjob *sjob_get(struct ccreg_stream *st, const char *path,
			     struct r4_error *err)
{
	size_t plen = strlen(path) + 1;
	struct sjob *j;

	if ((j = st->spare)) {
		st->spare = j->spare_next;
		st->nspare--;
		j->spare_next = NULL;
	} else if (!(j = calloc(1, sizeof(*j)))) {
		r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	if (j->path_cap < plen) {
		free(j->path);
		j->path = malloc(plen);
		j->path_cap = j->path ? plen : 0;
	}
	if (!j->path) {
		sjob_free(j);
		r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	memcpy(j->path, path, plen);
	return j;
}

/* Copy the file's chunks from fn into j->in, adjacent ones joined. The
 * chunks are checked as they come, as the packer's own path does, so
 * they fit in the size. */
static int sjob_fill(struct sjob *j, r4_data_fn fn, void *ctx,
		     const char *path, uint64_t size, struct r4_error *err)
{
	uint64_t pos = 0, off;
	size_t len, at = 0;
	const void *buf;
	int rc;

	while ((rc = enc_chunk_next(fn, ctx, path, &off, &buf, &len,
				    err)) > 0) {
		rc = enc_chunk_check(path, size, pos, off, len, err);
		if (rc)
			break;
		pos = off + len;
		if (!len)
			continue;
		if (j->nch && j->ch[j->nch - 1].off +
			      j->ch[j->nch - 1].len == off)
			j->ch[j->nch - 1].len += len;
		else if (R4_RESERVE(j->ch, j->ch_cap, j->nch + 1, 4))
			return r4i_fail(err, -ENOMEM, "%s: out of memory",
					path);
		else {
			j->ch[j->nch].off = off;
			j->ch[j->nch++].len = len;
		}
		memcpy(j->in + at, buf, len);
		at += len;
	}
	return rc;
}

int ccreg_stream_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		       void *ctx, const char *path, struct r4_error *err)
{
	struct ccreg_stream *st = &b->ccreg->st;
	size_t roff;
	struct sjob *j;
	int rc;

	if (o->size > STREAM_FILE || !stream_start(b))
		return (rc = pack_ccreg_stream_drain(b, err)) ? rc : 1;
	if ((rc = stream_room(b, o->size, &roff, err)))
		return rc;
	if (!(j = sjob_get(st, path, err)))
		return -ENOMEM;
	j->b = b;
	j->o = o;
	j->in = st->rbuf + roff;
	j->roff = roff;
	if ((rc = sjob_fill(j, fn, ctx, path, o->size, err))) {
		sjob_free(j);
		return rc;
	}
	if (st->head != st->tail && roff < st->rend)
		st->wrapped = 1;
	st->rend = roff + (size_t)o->size;
	st->ring[st->tail++ % STREAM_JOBS] = j;
	st->held += o->size;
	st->queued += o->size;
	if (st->tail - st->next >= STREAM_KICK_JOBS ||
	    st->queued >= STREAM_KICK_BYTES)
		stream_kick(st);
	/* what is done already leaves the window now */
	while (!rc && stream_head_done(st))
		rc = stream_retire(b, err);
	return rc;
}
