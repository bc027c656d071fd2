/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: compressed (ccreg40) files in the packer (doc/compress.md). */
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

/* Reading ahead (deferred data from a parallel source): one job per
 * compressed file, in the order the leaves take them, done by worker
 * threads while the packer packs the leaves. */
#define AHEAD_BYTES (64u << 20)	/* file bytes held ahead, at most */
#define AHEAD_FILE (4u << 20)	/* larger files: decided ahead only */
#define AHEAD_THREADS 8

struct ccjob {
	struct workq_item wi;	/* on the read-ahead's queue */
	struct r4_pack *b;
	struct bobj *o;
	int full;		/* the disk clusters are in data */
	int keep;		/* doc/compress.md §4.4: stays compressed */
	int rc;
	struct r4_error *err;	/* when rc */
	uint8_t *data;		/* disk clusters back to back */
	uint32_t *len;		/* per cluster (0: a hole) */
	size_t used;		/* bytes in data */
	uint64_t held;		/* bytes counted against AHEAD_BYTES */
};

/* Worker threads (util/workq.h), each with its own encoder, that the
 * directory read-ahead (ccpipe) and the stream window (ccstream) both
 * run: worker i compresses with enc[i - 1]. */
struct ccpool {
	struct workq *q;		/* NULL: no worker */
	unsigned nth;
	struct obj_ccreg_enc *enc[AHEAD_THREADS];
};

struct ccpipe {
	struct ccpool pool;
	pthread_mutex_t mu;	/* next, need, held, running (mu_on) */
	int mu_on;
	struct ccjob *jobs;
	size_t njobs, next;	/* next job to hand to the workers */
	size_t need;		/* the packer waits for jobs before this */
	size_t running;		/* handed over, not finished */
	uint64_t held;
};

/* Reading ahead from a stream (an archive, read once, in order): the
 * packer copies each compressed file's data chunks into memory and
 * hands the file to worker threads; the files leave the window in the
 * order they came (into the spool, or, when conv turns a file into an
 * ordinary one, through the ordinary path), so everything the image
 * depends on happens in the same order as without the window. */
#define STREAM_BYTES (32u << 20)	/* file bytes held, at most */
#define STREAM_FILE AHEAD_FILE		/* larger files: not read ahead */
#define STREAM_JOBS 4096u		/* files held, at most */
/* Handoffs in batches, so that a build of many small files does not pay
 * a thread wake-up (two futex calls and a context switch) per file:
 * files go to the work queue once STREAM_KICK_JOBS files or
 * STREAM_KICK_BYTES bytes wait (or the packer itself waits); a full
 * window waits for the file STREAM_BATCH places after its oldest, and
 * then lets all the finished ones go at once. */
#define STREAM_KICK_JOBS 16u
#define STREAM_KICK_BYTES (1u << 20)
#define STREAM_BATCH 32u
/* The files' bytes go into one ring of STREAM_BYTES, made once, in the
 * order they came (which is the order they leave), so that a file costs
 * no malloc and no fresh pages. Finished jobs are kept for the next
 * files with their other buffers: at most STREAM_SPARE, with buffers of
 * at most SPARE_BUF bytes. */
#define STREAM_SPARE 64u
#define SPARE_BUF (1u << 20)

struct schunk {
	uint64_t off;
	size_t len;
};

struct sjob {
	struct workq_item wi;	/* on the window's queue */
	struct r4_pack *b;
	struct bobj *o;
	char *path;
	size_t path_cap, ch_cap, data_cap, len_cap;
	size_t roff;		/* in[]'s place in the ring */
	struct sjob *spare_next;
	/* the input: chunks back to back in in[] (in the ring), as the
	 * stream gave them (adjacent ones joined); kept until the file
	 * leaves the window (conv may need it again; the disk clusters
	 * may be written over it) */
	uint8_t *in;
	struct schunk *ch;
	size_t nch;
	int keep, rc;
	struct r4_error err;	/* when rc */
	uint8_t *data;		/* a buffer for the disk clusters */
	uint8_t *dst;		/* the disk clusters back to back: in data,
				 * or over in[] (sjob_run) */
	uint32_t *len;		/* per cluster (0: a hole) */
	size_t used;
};

struct ccstream {
	struct ccpool pool;
	struct sjob *ring[STREAM_JOBS];
	uint64_t head, next, tail;	/* oldest held, next to hand to the
					 * workers, end */
	uint64_t held;			/* file bytes in the window */
	uint64_t queued;		/* of them, not handed over yet */
	int off;			/* could not start */
	uint8_t *rbuf;			/* the ring, STREAM_BYTES */
	size_t rend;			/* the end of the newest file in it */
	int wrapped;			/* the files run past the end to 0 */
	struct sjob *spare;		/* finished jobs to reuse */
	unsigned nspare;
};

struct pack_ccreg {
	struct obj_ccreg_enc *e;
	unsigned shift;
	size_t csize;
	unsigned alg, mode;
	struct ccpipe pipe;
	struct ccstream st;
};

static void pipe_stop(struct r4_pack *b);
static void stream_stop(struct r4_pack *b);

/* How many workers a pool runs: --threads, else one per CPU. */
static unsigned pool_want(const struct r4_pack *b)
{
	unsigned want = b->o.threads ? b->o.threads : obj_ccreg_enc_cpus();

	return want > AHEAD_THREADS ? AHEAD_THREADS : want;
}

/* One encoder for each of want workers. */
static int pool_encoders(const struct pack_ccreg *cc, struct ccpool *w,
			 unsigned want, struct r4_error *err)
{
	int rc = 0;

	for (unsigned i = 0; i < want && !rc; i++)
		rc = obj_ccreg_enc_new_threads(cc->shift, cc->alg, cc->mode, 1,
					   &w->enc[i], err);
	return rc;
}

/* Start up to want workers; w->nth says how many started (0: none). */
static void pool_run(struct ccpool *w, unsigned want)
{
	if (workq_new(want, &w->q))
		w->q = NULL;
	w->nth = workq_threads(w->q);
}

/* Let the workers finish what they were handed, stop and join them,
 * and free the encoders. */
static void pool_halt(struct ccpool *w)
{
	workq_free(w->q);
	w->q = NULL;
	w->nth = 0;
	for (unsigned i = 0; i < AHEAD_THREADS; i++) {
		obj_ccreg_enc_free(w->enc[i]);
		w->enc[i] = NULL;
	}
}

int pack_ccreg_initial(const struct r4_pack *b)
{
	return b->ccreg ? CCREG_YES : CCREG_NO;
}

uint32_t pack_ccreg_cluster(const struct r4_pack *b)
{
	return b->ccreg ? (uint32_t)b->ccreg->csize : 0;
}

int pack_ccreg_lattd(const struct r4_pack *b, const struct bobj *o)
{
	return b->ccreg && b->ccreg->mode == FMT_CMODE_CONV && o->size > b->ccreg->csize;
}

uint64_t pack_ccreg_bytes(const struct r4_pack *b, const struct bobj *o)
{
	uint64_t n;

	if (o->data == BD_DEFERRED && !o->u.reg->ccreg_len) {
		/* every cluster until emitted; patched then */
		n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
		return n << b->ccreg->shift;
	}
	return o->u.reg->ccreg_used << b->ccreg->shift;
}

int pack_ccreg_init(struct r4_pack *b, struct r4_error *err)
{
	const uint16_t *p = b->o.mkfs.plugin;
	struct pack_ccreg *cc;

	if (!b->o.compress_files || p[R4_PT_CREATE] != FMT_OBJ_CCREG40)
		return 0;
	if (!fmt_cluster_shift_of(p[R4_PT_CLUSTER]) ||
	    p[R4_PT_COMPRESS] > FMT_COMPRESS_ZSTD1 ||
	    p[R4_PT_CMODE] > FMT_CMODE_CONV)
		return r4i_fail(err, R4_EINVAL, "create=ccreg40: unknown "
			       "cluster, compress or compressMode plugin");
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return r4i_fail(err, -ENOMEM, "out of memory");
	cc->shift = fmt_cluster_shift_of(p[R4_PT_CLUSTER]);
	cc->csize = (size_t)1 << cc->shift;
	cc->alg = p[R4_PT_COMPRESS];
	cc->mode = p[R4_PT_CMODE];
	b->ccreg = cc;
	return obj_ccreg_enc_new_threads(cc->shift, cc->alg, cc->mode,
				     b->o.threads, &cc->e, err);
}

void pack_ccreg_fini(struct r4_pack *b)
{
	struct pack_ccreg *cc = b->ccreg;

	/* the objects' cluster lengths go with them (pack_ns_fini) */
	if (!cc)
		return;
	pipe_stop(b);
	stream_stop(b);
	obj_ccreg_enc_free(cc->e);
	free(cc);
	b->ccreg = NULL;
}

struct sinkctx {
	struct r4_pack *b;
	struct bobj *o;
};

static int sink_spool(void *sctx, uint64_t idx, const uint8_t *dc,
		      size_t len, struct r4_error *err)
{
	struct sinkctx *s = sctx;

	s->o->u.reg->ccreg_len[idx] = (uint32_t)len;
	if (!len)
		return 0;
	s->o->u.reg->ccreg_used++;
	return pack_spool_put(s->b, dc, len, err);
}

static int stream_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		       void *ctx, const char *path, struct r4_error *err);

int pack_ccreg_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		 void *ctx, const char *path, struct r4_error *err)
{
	struct pack_ccreg *cc = b->ccreg;
	struct sinkctx sc = { b, o };
	struct obj_ccreg_rd r;
	uint64_t n = (o->size + cc->csize - 1) >> cc->shift;
	int keep, rc = stream_take(b, o, fn, ctx, path, err);

	if (rc <= 0)
		return rc;	/* read ahead (0), or failed */
	obj_ccreg_rd_init(&r, fn, ctx, path, o->size);
	rc = obj_ccreg_enc_conv_first(cc->e, &r, &keep, err);
	if (rc)
		return rc;
	if (!keep) {
		struct obj_ccreg_refeed f;

		obj_ccreg_refeed_init(&f, cc->e, &r);
		o->ccreg = CCREG_CONVERTED;
		return pack_data_take(b, o, obj_ccreg_refeed_fn, &f, path, err);
	}
	if (n > SIZE_MAX / sizeof(uint32_t) ||
	    !(o->u.reg->ccreg_len = calloc((size_t)n, sizeof(uint32_t))))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	o->u.reg->spool_off = b->spool_len;
	rc = obj_ccreg_enc_file(cc->e, &r, 0, obj_ccreg_enc_c0_done(cc->e, o->size),
			    sink_spool, &sc, err);
	if (!rc)
		rc = obj_ccreg_rd_finish(&r, err);
	o->data = BD_SPOOL;
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

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
static void stream_kick(struct ccstream *st)
{
	while (st->next < st->tail) {
		struct sjob *j = st->ring[st->next++ % STREAM_JOBS];

		workq_submit(st->pool.q, &j->wi, sjob_fn);
	}
	st->queued = 0;
}

/* The packer waits for job j (handed over first, with any before it). */
static void stream_wait(struct ccstream *st, struct sjob *j)
{
	stream_kick(st);
	workq_wait(st->pool.q, &j->wi, 0);
}

/* A retired job is kept for a later file (the packer's thread only). */
static void sjob_spare(struct ccstream *st, struct sjob *j)
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

static void stream_stop(struct r4_pack *b)
{
	struct ccstream *st = &b->ccreg->st;

	pool_halt(&st->pool);
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
static int ring_fit(const struct ccstream *st, size_t n, size_t *at)
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
	struct ccstream *st = &cc->st;
	struct r4_error tmp = { 0, "", 0 };
	unsigned want;

	if (st->pool.q || st->off)
		return st->pool.q != NULL;
	st->off = 1;		/* unless it starts */
	if (b->o.threads == 1)
		return 0;
	want = pool_want(b);
	st->rbuf = malloc(STREAM_BYTES);
	if (!st->rbuf || pool_encoders(cc, &st->pool, want, &tmp)) {
		stream_stop(b);
		return 0;
	}
	pool_run(&st->pool, want);
	if (!st->pool.nth) {
		stream_stop(b);
		return 0;
	}
	st->off = 0;
	return 1;
}

/* The oldest file leaves the window: wait for its job, then place it as
 * pack_ccreg_take would have. */
static int stream_retire(struct r4_pack *b, struct r4_error *err)
{
	struct ccstream *st = &b->ccreg->st;
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

static int stream_head_done(struct ccstream *st)
{
	return st->head < st->next &&
	       workq_done(st->pool.q, &st->ring[st->head % STREAM_JOBS]->wi);
}

int pack_ccreg_stream_drain(struct r4_pack *b, struct r4_error *err)
{
	struct ccstream *st;
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
static int stream_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		       void *ctx, const char *path, struct r4_error *err)
{
	struct ccstream *st = &b->ccreg->st;
	uint64_t pos = 0, off;
	size_t len, at = 0, plen = strlen(path) + 1, roff;
	const void *buf;
	struct sjob *j;
	int rc;

	if (o->size > STREAM_FILE || !stream_start(b))
		return (rc = pack_ccreg_stream_drain(b, err)) ? rc : 1;
	while (st->tail - st->head >= STREAM_JOBS ||
	       !ring_fit(st, (size_t)o->size, &roff)) {
		uint64_t k = st->tail - st->head - 1;

		/* full: wait for a batch to finish, not for one file */
		stream_wait(st, st->ring[(st->head + (k < STREAM_BATCH ?
					  k : STREAM_BATCH)) % STREAM_JOBS]);
		if ((rc = stream_retire(b, err)))
			return rc;
	}
	if ((j = st->spare)) {
		st->spare = j->spare_next;
		st->nspare--;
		j->spare_next = NULL;
	} else if (!(j = calloc(1, sizeof(*j)))) {
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	if (j->path_cap < plen) {
		free(j->path);
		j->path = malloc(plen);
		j->path_cap = j->path ? plen : 0;
	}
	if (!j->path) {
		sjob_free(j);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	memcpy(j->path, path, plen);
	j->b = b;
	j->o = o;
	j->in = st->rbuf + roff;
	j->roff = roff;
	/* the chunks are checked as they come, as the packer's own path
	 * does, so they fit in the size */
	while ((rc = enc_chunk_next(fn, ctx, path, &off, &buf, &len,
				    err)) > 0) {
		rc = enc_chunk_check(path, o->size, pos, off, len, err);
		if (rc)
			break;
		pos = off + len;
		if (!len)
			continue;
		if (j->nch && j->ch[j->nch - 1].off +
			      j->ch[j->nch - 1].len == off)
			j->ch[j->nch - 1].len += len;
		else if (R4_RESERVE(j->ch, j->ch_cap, j->nch + 1, 4)) {
			rc = r4i_fail(err, -ENOMEM, "%s: out of memory", path);
			break;
		} else {
			j->ch[j->nch].off = off;
			j->ch[j->nch++].len = len;
		}
		memcpy(j->in + at, buf, len);
		at += len;
	}
	if (rc) {
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

/* ---- reading ahead ------------------------------------------------- */

static int sink_job(void *sctx, uint64_t idx, const uint8_t *dc, size_t len,
		    struct r4_error *err)
{
	struct ccjob *j = sctx;

	(void)err;
	j->len[idx] = (uint32_t)len;
	if (len) {	/* a hole: dc is NULL (memcpy must not see it) */
		memcpy(j->data + j->used, dc, len);	/* <= the cluster's */
		j->used += len;
	}
	return 0;
}

/* One file on a worker: conv's test, then (full) every disk cluster
 * into memory. The same calls as the packer's own path, so the same
 * bytes. */
static void job_run(struct r4_pack *b, struct obj_ccreg_enc *e, struct ccjob *j)
{
	const struct r4_data_source *s = b->o.source;
	struct bobj *o = j->o;
	uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
	struct r4_error err = { 0 };
	struct obj_ccreg_rd r;
	char path[4096];
	int keep = 1, rc;

	j->keep = 1;
	if (!j->full && !obj_ccreg_enc_c0_done(e, o->size))
		return;		/* nothing to decide: the packer reads it */
	pack_ns_obj_path(b, o, path, sizeof(path));
	obj_ccreg_rd_init(&r, NULL, NULL, path, o->size);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, &err);
	if (rc) {
		rc = r4i_fail(&err, rc, "%s: cannot open the data: %s", path,
			      r4_strerror(rc));
		goto out;
	}
	r.eof = 0;
	rc = obj_ccreg_enc_conv_first(e, &r, &keep, &err);
	if (!rc && keep && j->full) {
		j->data = malloc((size_t)o->size);
		j->len = calloc((size_t)n, sizeof(*j->len));
		if (!j->data || !j->len)
			rc = r4i_fail(&err, -ENOMEM, "%s: out of memory", path);
		/* As pack_ccreg_emit: cluster 0 reused when conv read it
		 * (zeros when the input has none there, doc/compress.md
		 * §3.4.1) */
		if (!rc)
			rc = obj_ccreg_enc_file(e, &r, 0,
					    obj_ccreg_enc_c0_done(e, o->size),
					    sink_job, j, &err);
		if (!rc)
			rc = obj_ccreg_rd_finish(&r, &err);
	}
	s->close(r.ctx);
out:
	j->keep = keep;
	if (rc) {
		j->rc = rc;
		j->err = malloc(sizeof(err));
		if (j->err)
			*j->err = err;
	}
	if (rc || !keep || !j->full) {
		free(j->data);
		free(j->len);
		j->data = NULL;
		j->len = NULL;
		j->full = 0;
	}
}

static void pipe_fn(struct workq_item *it, unsigned w);

/* Hand jobs to the workers, in order (p->mu held): any the packer waits
 * for; others while fewer than AHEAD_BYTES of file data are held and a
 * worker is free. Past that, or for a large file, only conv's decision
 * is made ahead and the packer compresses the file itself (on its own
 * pool) when it gets there. */
static void pipe_feed(struct ccpipe *p)
{
	while (p->next < p->njobs &&
	       (p->next < p->need ||
		(p->held < AHEAD_BYTES && p->running < p->pool.nth))) {
		struct ccjob *j = &p->jobs[p->next++];

		p->running++;
		workq_submit(p->pool.q, &j->wi, pipe_fn);
	}
}

/* A job on worker w: whole in memory when it fits in what may be held
 * when it starts. */
static void pipe_fn(struct workq_item *it, unsigned w)
{
	struct ccjob *j = (struct ccjob *)((char *)it -
					   offsetof(struct ccjob, wi));
	struct ccpipe *p = &j->b->ccreg->pipe;
	uint64_t size = j->o->size;

	pthread_mutex_lock(&p->mu);
	j->full = size <= AHEAD_FILE &&
		  (!p->held || p->held + size <= AHEAD_BYTES);
	if (j->full) {
		j->held = size;
		p->held += size;
	}
	pthread_mutex_unlock(&p->mu);
	job_run(j->b, p->pool.enc[w - 1], j);
	pthread_mutex_lock(&p->mu);
	if (!j->full && j->held) {
		p->held -= j->held;
		j->held = 0;
	}
	p->running--;
	pipe_feed(p);
	pthread_mutex_unlock(&p->mu);
}

int pack_ccreg_ahead_begin(struct r4_pack *b, struct r4_error *err)
{
	struct pack_ccreg *cc = b->ccreg;
	struct ccpipe *p;
	size_t n = 0;
	unsigned want;
	int rc = 0;

	if (!cc || !b->o.source || !b->o.source->parallel ||
	    b->o.threads == 1)
		return 0;
	p = &cc->pipe;
	want = pool_want(b);
	for (struct bobj *d = b->root; d; d = d->u.sub->qnext)
		for (size_t i = 0; i < d->u.sub->nkids; i++) {
			struct bobj *o = d->u.sub->kids[i]->obj;

			n += o->primary == d->u.sub->kids[i] &&
			     o->type == R4_ENT_REG && o->ccreg == CCREG_YES &&
			     o->data == BD_DEFERRED && o->size;
		}
	if (!n)
		return 0;
	p->jobs = calloc(n, sizeof(*p->jobs));
	if (!p->jobs)
		return r4i_fail(err, -ENOMEM, "out of memory");
	if (pthread_mutex_init(&p->mu, NULL))
		return r4i_fail(err, -ENOMEM, "cannot make a lock");
	p->mu_on = 1;
	rc = pool_encoders(cc, &p->pool, want, err);
	if (rc)
		return rc;	/* pack_ccreg_fini frees them */
	for (struct bobj *d = b->root; d; d = d->u.sub->qnext)
		for (size_t i = 0; i < d->u.sub->nkids; i++) {
			struct bobj *o = d->u.sub->kids[i]->obj;

			if (o->primary == d->u.sub->kids[i] &&
			    o->type == R4_ENT_REG && o->ccreg == CCREG_YES &&
			    o->data == BD_DEFERRED && o->size) {
				p->jobs[p->njobs].b = b;
				p->jobs[p->njobs].o = o;
				o->u.reg->ccreg_job = ++p->njobs;
			}
		}
	pool_run(&p->pool, want);
	if (!p->pool.nth) {	/* no thread: the packer does every file */
		for (size_t i = 0; i < p->njobs; i++)
			p->jobs[i].o->u.reg->ccreg_job = 0;
		return 0;
	}
	pthread_mutex_lock(&p->mu);
	pipe_feed(p);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

static void pipe_stop(struct r4_pack *b)
{
	struct ccpipe *p = &b->ccreg->pipe;

	if (p->mu_on) {		/* nothing more handed over */
		pthread_mutex_lock(&p->mu);
		p->next = p->njobs;
		pthread_mutex_unlock(&p->mu);
	}
	pool_halt(&p->pool);
	if (p->mu_on)
		pthread_mutex_destroy(&p->mu);
	p->mu_on = 0;
	p->next = p->need = p->running = 0;
	p->held = 0;
	for (size_t i = 0; i < p->njobs; i++) {
		p->jobs[i].o->u.reg->ccreg_job = 0;
		free(p->jobs[i].data);
		free(p->jobs[i].len);
		free(p->jobs[i].err);
	}
	free(p->jobs);
	p->jobs = NULL;
	p->njobs = 0;
}

void pack_ccreg_ahead_end(struct r4_pack *b)
{
	if (b->ccreg)
		pipe_stop(b);
}

/* The packer's turn for o: wait until its job is done. NULL when o has
 * no job. */
static struct ccjob *pipe_wait(struct r4_pack *b, const struct bobj *o)
{
	struct ccpipe *p = &b->ccreg->pipe;
	struct ccjob *j;
	size_t job = o->type == R4_ENT_REG && o->size && o->u.reg ?
		     o->u.reg->ccreg_job : 0;

	if (!job || !p->pool.nth)
		return NULL;
	j = &p->jobs[job - 1];
	pthread_mutex_lock(&p->mu);
	if (p->need < job) {
		p->need = job;
		pipe_feed(p);	/* j is handed over now */
	}
	pthread_mutex_unlock(&p->mu);
	workq_wait(p->pool.q, &j->wi, 0);
	return j;
}

static int job_fail(struct ccjob *j, struct r4_error *err)
{
	if (j->err)
		*err = *j->err;
	else
		r4i_fail(err, j->rc, "%s", r4_strerror(j->rc));
	return j->rc;
}

/* ---- the items ------------------------------------------------------ */

/* One disk cluster as ctail40 items (doc/compress.md §3.1): a new item
 * at the cluster start, continued in the next leaves when it does not
 * fit. Bytes from src, or from the spool through t. */
static int emit_dc(struct r4_pack *b, struct bobj *o, uint64_t idx,
		   const uint8_t *src, struct tailrd *t, size_t len,
		   struct r4_error *err)
{
	unsigned shift = b->ccreg->shift;
	uint64_t base = idx << shift;
	size_t done = 0;
	int rc = 0;

	while (!rc && done < len) {
		size_t room = pack_leaf_room(b), n, want = len - done;
		struct fmt_key k;
		uint8_t *body;

		/* not a sliver of a few bytes at the end of a leaf */
		if (room < FMT_CTAIL40_HDR_SIZE + (want < 64 ? want : 64)) {
			rc = pack_leaf_close(b, err);
			continue;
		}
		n = want < room - FMT_CTAIL40_HDR_SIZE ? want :
		    room - FMT_CTAIL40_HDR_SIZE;
		fmt_key_body(&k, obj_locality(b, o), pack_obj_ordering(b, o),
			     o->oid,
			     base + done);
		rc = pack_leaf_add(b, &k, FMT_ITEM_CTAIL40,
				   n + FMT_CTAIL40_HDR_SIZE, &body, err);
		if (rc)
			break;
		body[0] = (uint8_t)shift;
		if (src)
			memcpy(body + FMT_CTAIL40_HDR_SIZE, src + done, n);
		else
			rc = pack_tail_read(t, body + FMT_CTAIL40_HDR_SIZE, n,
					    err);
		done += n;
	}
	return rc;
}

static int sink_emit(void *sctx, uint64_t idx, const uint8_t *dc,
		     size_t len, struct r4_error *err)
{
	struct sinkctx *s = sctx;

	if (!len)
		return 0;
	s->o->u.reg->ccreg_used++;
	return emit_dc(s->b, s->o, idx, dc, NULL, len, err);
}

int pack_ccreg_decide(struct r4_pack *b, struct bobj *o, const char *path,
		   struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct obj_ccreg_rd r;
	struct ccjob *j;
	int keep = 1, rc;

	if (o->ccreg != CCREG_YES || o->data != BD_DEFERRED ||
	    !obj_ccreg_enc_c0_done(b->ccreg->e, o->size))
		return 0;
	if ((j = pipe_wait(b, o))) {
		if (j->rc)
			return job_fail(j, err);
		if (!j->keep)
			o->ccreg = CCREG_CONVERTED;
		return 0;
	}
	obj_ccreg_rd_init(&r, NULL, NULL, path, o->size);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	r.eof = 0;
	rc = obj_ccreg_enc_conv_first(b->ccreg->e, &r, &keep, err);
	s->close(r.ctx);
	if (!rc && !keep)
		o->ccreg = CCREG_CONVERTED;
	return rc;
}

/* A file read ahead: its disk clusters from memory. */
static int emit_job(struct r4_pack *b, struct bobj *o, struct ccjob *j,
		    struct r4_error *err)
{
	uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
	size_t off = 0;
	int rc = 0;

	o->u.reg->ccreg_used = 0;
	for (uint64_t i = 0; !rc && i < n; i++) {
		if (!j->len[i])
			continue;
		o->u.reg->ccreg_used++;
		rc = emit_dc(b, o, i, j->data + off, NULL, j->len[i], err);
		off += j->len[i];
	}
	return rc;
}

int pack_ccreg_emit(struct r4_pack *b, struct bobj *o, const char *path,
		 struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct sinkctx sc = { b, o };
	struct obj_ccreg_rd r;
	struct ccjob *j;
	uint64_t dense;
	int rc;

	if (o->data != BD_DEFERRED) {
		struct tailrd t;
		uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;

		rc = pack_tail_open(b, o, path, &t, err);
		for (uint64_t i = 0; !rc && i < n; i++)
			rc = emit_dc(b, o, i, NULL, &t, o->u.reg->ccreg_len[i],
				     err);
		pack_tail_close(&t);
		return rc;
	}
	dense = pack_ccreg_bytes(b, o);
	if ((j = pipe_wait(b, o)) && (j->rc || j->full)) {
		struct ccpipe *p = &b->ccreg->pipe;

		rc = j->rc ? job_fail(j, err) : emit_job(b, o, j, err);
		pthread_mutex_lock(&p->mu);
		p->held -= j->held;
		j->held = 0;
		/* jobs held back by AHEAD_BYTES go on once a quarter of it
		 * is free again, not after every file */
		if (p->held <= AHEAD_BYTES / 4 * 3)
			pipe_feed(p);
		pthread_mutex_unlock(&p->mu);
		free(j->data);
		free(j->len);
		j->data = NULL;
		j->len = NULL;
		goto done;
	}
	obj_ccreg_rd_init(&r, NULL, NULL, path, o->size);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	r.eof = 0;
	o->u.reg->ccreg_used = 0;
	rc = obj_ccreg_enc_file(b->ccreg->e, &r, 0, 0, sink_emit, &sc, err);
	if (!rc)
		rc = obj_ccreg_rd_finish(&r, err);
	s->close(r.ctx);
done:
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	/* holes found: the stat data's bytes go down */
	if (!rc && (o->u.reg->ccreg_used << b->ccreg->shift) != dense)
		rc = pack_leaf_patch_u64(b, o->u.reg->sd_leaf,
					 o->u.reg->sd_off,
					 o->u.reg->ccreg_used << b->ccreg->shift, err);
	return rc;
}
