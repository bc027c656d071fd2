/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the cluster encoder of ccreg40 files (doc/compress.md §4). */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/obj/ccreg_encode.h"
#include "libimage/obj/encode.h"
#include "libimage/util/compress.h"
#include "libimage/util/err.h"
#include "libimage/util/workq.h"
#include "format/cluster.h"
#include "format/plugin.h"

#define CCREG_THREADS 8	/* at most, the calling thread included */
#define CCREG_BATCH 32	/* clusters compressed at once */

struct ccreg_job {
	const uint8_t *plain;	/* this slot's buffer */
	const uint8_t *src;	/* the cluster's bytes: plain, or in the
				 * reader's chunk while it lasts */
	size_t lsize;
	int has_data;		/* 0: a hole in the input, no items */
	uint8_t *out;		/* the disk cluster when packed */
	size_t slen;		/* stream length, SIZE_MAX if none */
	size_t dlen;		/* disk cluster length when packed */
	int packed;
	struct workq_item wi;	/* on the encoder's queue */
	struct obj_ccreg_enc *cc;
};

struct obj_ccreg_enc {
	unsigned shift, alg, mode;
	size_t csize, cap;	/* cluster size, output room per cluster */
	/* the pool: codec[0] is the calling thread's, codec[i] worker i's */
	struct workq *q;
	struct r4_codec *codec[CCREG_THREADS];
	int c0_data;		/* conv_first: cluster 0 held data */
	/* batch buffers */
	uint8_t *plain, *out;
	struct ccreg_job batch[CCREG_BATCH];
};

/* doc/compress.md §4.1-§4.2: compress one cluster, keep it if it saves. */
static void run_job(struct obj_ccreg_enc *cc, struct r4_codec *codec,
		    struct ccreg_job *j)
{
	size_t sl;

	j->packed = 0;
	j->slen = SIZE_MAX;
	if (cc->mode == FMT_CMODE_NONE || !j->has_data ||
	    j->lsize < fmt_compress_min_size(cc->alg))
		return;
	if (r4_codec_compress(codec, j->src, j->lsize, j->out,
			      cc->cap - FMT_DC_SUM_SIZE, &sl))
		return;
	j->slen = sl;
	if (fmt_dc_keep(j->lsize, sl)) {
		j->dlen = fmt_dc_seal(j->out, sl);
		j->packed = 1;
	}
}

static void job_fn(struct workq_item *it, unsigned worker)
{
	struct ccreg_job *j = (struct ccreg_job *)((char *)it -
					   offsetof(struct ccreg_job, wi));

	run_job(j->cc, j->cc->codec[worker], j);
}

/* Compress jobs[0..n) on every thread, this one included. */
static void run_batch(struct obj_ccreg_enc *cc, struct ccreg_job *jobs,
		      size_t n)
{
	if (n == 1 || !cc->q) {
		/* nothing to share (a small file's one cluster): waking
		 * the workers would cost more than the job */
		for (size_t i = 0; i < n; i++)
			run_job(cc, cc->codec[0], &jobs[i]);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		jobs[i].cc = cc;
		workq_submit(cc->q, &jobs[i].wi, job_fn);
	}
	workq_drain(cc->q, 1);
}

int obj_ccreg_enc_new(unsigned shift, unsigned alg, unsigned mode,
		  struct obj_ccreg_enc **out, struct r4_error *err)
{
	return obj_ccreg_enc_new_threads(shift, alg, mode, 0, out, err);
}

unsigned obj_ccreg_enc_cpus(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	return ncpu < 1 ? 1 : ncpu > CCREG_THREADS ? CCREG_THREADS
						   : (unsigned)ncpu;
}

int obj_ccreg_enc_new_threads(unsigned shift, unsigned alg, unsigned mode,
			  unsigned threads, struct obj_ccreg_enc **out,
			  struct r4_error *err)
{
	struct obj_ccreg_enc *cc;
	unsigned want;
	int rc = 0;

	*out = NULL;
	if (shift < 12 || shift > 16 || alg > FMT_COMPRESS_ZSTD1 ||
	    mode > FMT_CMODE_CONV)
		return r4i_fail(err, R4_EINVAL, "ccreg40: unknown cluster, "
			       "compress or compressMode plugin");
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return r4i_fail(err, -ENOMEM, "out of memory");
	cc->shift = shift;
	cc->csize = (size_t)1 << shift;
	cc->alg = alg;
	cc->mode = mode;
	cc->cap = r4_codec_bound(alg, cc->csize);
	cc->plain = malloc(CCREG_BATCH * cc->csize);
	cc->out = malloc(CCREG_BATCH * cc->cap);
	*out = cc;
	if (!cc->plain || !cc->out)
		return r4i_fail(err, -ENOMEM, "out of memory");
	want = !threads ? obj_ccreg_enc_cpus() : threads > CCREG_THREADS ?
	       CCREG_THREADS : threads;
	for (unsigned i = 0; i < want; i++) {
		cc->codec[i] = r4_codec_new(alg, &rc);
		if (!cc->codec[i])
			return r4i_fail(err, rc, "cannot set up the %s "
				       "compressor", fmt_plugin_name(
				       FMT_PT_COMPRESS, alg));
	}
	/* fewer threads than asked (or none) is still correct */
	if (want > 1 && workq_new(want - 1, &cc->q))
		return r4i_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < CCREG_BATCH; i++) {
		cc->batch[i].plain = cc->plain + i * cc->csize;
		cc->batch[i].out = cc->out + i * cc->cap;
	}
	return 0;
}

void obj_ccreg_enc_free(struct obj_ccreg_enc *cc)
{
	if (!cc)
		return;
	workq_free(cc->q);
	for (unsigned i = 0; i < CCREG_THREADS; i++)
		r4_codec_free(cc->codec[i]);
	free(cc->plain);
	free(cc->out);
	free(cc);
}

int obj_ccreg_enc_is(const struct obj_ccreg_enc *e, unsigned shift,
		     unsigned alg, unsigned mode)
{
	return e && e->shift == shift && e->alg == alg && e->mode == mode;
}

size_t obj_ccreg_enc_cap(const struct obj_ccreg_enc *e)
{
	return e->cap;
}

size_t obj_ccreg_enc_csize(const struct obj_ccreg_enc *e)
{
	return e->csize;
}

unsigned obj_ccreg_enc_shift(const struct obj_ccreg_enc *e)
{
	return e->shift;
}

unsigned obj_ccreg_enc_mode(const struct obj_ccreg_enc *e)
{
	return e->mode;
}

/* ---- reading a file's data cluster by cluster ---------------------- */

void obj_ccreg_rd_init(struct obj_ccreg_rd *r, r4_data_fn fn, void *ctx,
		   const char *path, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->fn = fn;
	r->ctx = ctx;
	r->path = path;
	r->size = size;
	r->eof = fn == NULL;
}

/* Fill dst with file bytes [start, start + n), zeros in the gaps;
 * *has_data = some chunk byte fell inside. */
static int rd_fill(struct obj_ccreg_rd *r, uint64_t start, size_t n,
		   uint8_t *dst, int *has_data, struct r4_error *err)
{
	uint64_t stop = start + n;

	memset(dst, 0, n);
	*has_data = 0;
	for (;;) {
		if (r->cbuf) {
			uint64_t a = r->coff > start ? r->coff : start;
			uint64_t z = r->coff + r->clen < stop ?
				     r->coff + r->clen : stop;

			if (a < z) {
				memcpy(dst + (a - start),
				       r->cbuf + (a - r->coff), (size_t)(z - a));
				*has_data = 1;
			}
			if (r->coff + r->clen > stop)
				return 0;	/* the rest is for later */
			r->cbuf = NULL;
		}
		if (r->eof)
			return 0;
		{
			const void *p;
			int rc = r->fn(r->ctx, &r->coff, &p, &r->clen, err);

			if (rc < 0)
				return r4i_fail(err, rc, "%s: cannot read the "
					       "data: %s", r->path,
					       r4_strerror(rc));
			if (rc == 0) {
				r->eof = 1;
				return 0;
			}
			rc = enc_chunk_check(r->path, r->size, r->end,
					      r->coff, r->clen, err);
			if (rc)
				return rc;
			r->end = r->coff + r->clen;
			if (r->coff == r->dense)
				r->dense = r->end;
			r->cbuf = p;
		}
	}
}

/* Load the next chunk of data unless one is kept or the input ended. */
static int rd_next(struct obj_ccreg_rd *r, struct r4_error *err)
{
	while (!r->eof && !r->cbuf) {
		const void *p;
		int rc = r->fn(r->ctx, &r->coff, &p, &r->clen, err);

		if (rc < 0)
			return r4i_fail(err, rc, "%s: cannot read the data: %s",
				       r->path, r4_strerror(rc));
		if (rc == 0)
			r->eof = 1;
		else if ((rc = enc_chunk_check(r->path, r->size, r->end,
						r->coff, r->clen, err)))
			return rc;
		else {
			r->end = r->coff + r->clen;
			if (r->coff == r->dense)
				r->dense = r->end;
			r->cbuf = p;
		}
	}
	return 0;
}

int obj_ccreg_rd_finish(struct obj_ccreg_rd *r, struct r4_error *err)
{
	if (r->cbuf)
		return 0;
	for (;;) {	/* every further chunk must pass the size checks */
		int rc = rd_next(r, err);

		if (rc || r->eof)
			return rc;
		r->cbuf = NULL;
	}
}

void obj_ccreg_refeed_init(struct obj_ccreg_refeed *f, struct obj_ccreg_enc *e,
		       struct obj_ccreg_rd *r)
{
	f->rd = r;
	f->c0 = e->batch[0].plain;
	f->c0len = e->csize;
	f->stage = 0;
}

int obj_ccreg_refeed_fn(void *ctx, uint64_t *off, const void **buf,
		    size_t *len, struct r4_error *err)
{
	struct obj_ccreg_refeed *f = ctx;
	struct obj_ccreg_rd *r = f->rd;

	if (f->stage == 0) {
		f->stage = 1;
		*off = 0;
		*buf = f->c0;
		*len = f->c0len;
		return 1;
	}
	if (f->stage == 1) {
		f->stage = 2;
		if (r->cbuf && r->coff + r->clen > f->c0len) {
			uint64_t skip = r->coff < f->c0len ?
					f->c0len - r->coff : 0;

			*off = r->coff + skip;
			*buf = r->cbuf + skip;
			*len = r->clen - (size_t)skip;
			r->cbuf = NULL;
			return 1;
		}
	}
	if (r->eof)
		return 0;
	return r->fn(r->ctx, off, buf, len, err);
}

/* ---- the clusters of one file -------------------------------------- */

/* doc/compress.md §3.4.1: cluster 0 of a file whose data starts past it,
 * as zeros (compressed when that saves, in every mode: the stored form
 * is read from the lengths), so that the kernel never reads a file
 * whose first item is not at cluster 0. */
static int sink_zero_c0(struct obj_ccreg_enc *cc, uint64_t size,
			obj_ccreg_sink sink, void *sctx, struct r4_error *err)
{
	size_t lsize = (size_t)fmt_cluster_lsize(size, 0, cc->shift);
	size_t min = fmt_compress_min_size(cc->alg), sl;
	uint8_t *z = calloc(1, lsize + cc->cap), *out;
	int rc;

	if (!z)
		return r4i_fail(err, -ENOMEM, "out of memory");
	out = z + lsize;
	if (lsize >= min && lsize &&
	    !r4_codec_compress(cc->codec[0], z, lsize, out,
			       cc->cap - FMT_DC_SUM_SIZE, &sl) &&
	    fmt_dc_keep(lsize, sl))
		rc = sink(sctx, 0, out, fmt_dc_seal(out, sl), err);
	else
		rc = sink(sctx, 0, z, lsize, err);
	free(z);
	return rc;
}

/* One file being encoded by obj_ccreg_enc_file. */
struct encfile {
	struct obj_ccreg_enc *cc;
	struct obj_ccreg_rd *r;
	uint64_t n;		/* clusters of the file */
	struct fmt_cmode m;
	int c0_hole;		/* cluster 0 without data, stored before
				 * the first later cluster */
	obj_ccreg_sink sink;
	obj_ccreg_room room;	/* NULL: the encoder's own buffers */
	void *sctx;
};

/* Clusters before the next chunk of data are holes, without items
 * (doc/compress.md §3.4): jump *idx over them, so a sparse file costs
 * its data, not its size. */
static int enc_skip(struct encfile *f, uint64_t *idx, struct r4_error *err)
{
	uint64_t next;
	int rc = rd_next(f->r, err);

	if (rc)
		return rc;
	next = f->r->cbuf ? f->r->coff >> f->cc->shift : f->n;
	if (next > *idx) {
		if (*idx == 0)
			f->c0_hole = 1;
		*idx = next < f->n ? next : f->n;
	}
	return 0;
}

/* Fill the batch's slots from 'start' with the clusters from idx on:
 * *k = the end of the batch. */
static int enc_fill(struct encfile *f, uint64_t idx, size_t start,
		    size_t *k, struct r4_error *err)
{
	struct obj_ccreg_enc *cc = f->cc;
	struct obj_ccreg_rd *r = f->r;
	int rc = 0, zc = 0;

	for (*k = start; !rc && *k < CCREG_BATCH && idx + *k < f->n; (*k)++) {
		struct ccreg_job *j = &cc->batch[*k];
		uint64_t at = (idx + *k) << cc->shift;

		j->lsize = fmt_cluster_lsize(r->size, idx + *k, cc->shift);
		/* A cluster starting past the reader's chunk, while no
		 * slot of the batch lies in it: on to the next chunk, so
		 * that a cluster starting one is compressed where it lies
		 * too, not copied (rd_fill would drop the chunk all the
		 * same). */
		if (!zc && r->cbuf && r->coff + r->clen <= at) {
			r->cbuf = NULL;
			rc = rd_next(r, err);
			if (rc)
				break;
		}
		/* A cluster inside the reader's chunk is compressed where
		 * it is; the batch ends before the reader moves on (the
		 * chunk lasts until then). */
		if (r->cbuf && r->coff <= at &&
		    at + j->lsize <= r->coff + r->clen) {
			j->src = r->cbuf + (at - r->coff);
			j->has_data = 1;
			zc = 1;
			continue;
		}
		if (zc)
			break;
		j->src = j->plain;
		rc = rd_fill(r, at, j->lsize, (uint8_t *)j->plain,
			     &j->has_data, err);
	}
	return rc;
}

/* What goes before slot i's disk cluster: a hole is handed over
 * (*hole set: nothing more for the slot), or cluster 0's zeros when it
 * was one and this is the first cluster with data. */
static int emit_before(struct encfile *f, uint64_t idx, size_t i,
		       int *hole, struct r4_error *err)
{
	struct ccreg_job *j = &f->cc->batch[i];

	*hole = !j->has_data;
	if (*hole) {
		if (idx + i == 0) {
			f->c0_hole = 1;
			return 0;
		}
		return f->sink(f->sctx, idx + i, NULL, 0, err);
	}
	if (!f->c0_hole)
		return 0;
	f->c0_hole = 0;
	return sink_zero_c0(f->cc, f->r->size, f->sink, f->sctx, err);
}

/* Slot i's disk cluster to the sink, as the compression mode decides. */
static int emit_one(struct encfile *f, uint64_t idx, size_t i,
		    struct r4_error *err)
{
	struct obj_ccreg_enc *cc = f->cc;
	struct ccreg_job *j = &cc->batch[i];
	int kept = 0;

	/* doc/compress.md §4.3: the mode's state decides whether the
	 * (speculative) result counts. */
	if (fmt_cmode_try(&f->m, cc->alg, idx + i, j->lsize)) {
		kept = j->packed;
		fmt_cmode_after(&f->m, kept, j->lsize == cc->csize);
	}
	return kept ? f->sink(f->sctx, idx + i, j->out, j->dlen, err) :
		      f->sink(f->sctx, idx + i, j->src, j->lsize, err);
}

/* Hand the k compressed clusters of the batch (from idx) to the sink, in
 * order. */
static int enc_emit(struct encfile *f, uint64_t idx, size_t k,
		    struct r4_error *err)
{
	int rc = 0, hole;

	for (size_t i = 0; !rc && i < k; i++) {
		rc = emit_before(f, idx, i, &hole, err);
		if (!rc && !hole)
			rc = emit_one(f, idx, i, err);
	}
	return rc;
}

/* The same on this thread alone, one slot at a time, each cluster from
 * 'start' compressed straight into the room the sink gives for it (the
 * sink then finds it in place): the bytes and calls of run_batch and
 * enc_emit, less a copy, and less the compression of a cluster the
 * mode's state already says it will store as it is (run_batch's
 * threads compress ahead of that state and discard such results).
 * Slots compressed before (start) keep theirs. */
static int enc_direct(struct encfile *f, uint64_t idx, size_t start,
		      size_t k, struct r4_error *err)
{
	struct obj_ccreg_enc *cc = f->cc;
	int rc = 0, hole;

	for (size_t i = 0; !rc && i < k; i++) {
		struct ccreg_job *j = &cc->batch[i];

		rc = emit_before(f, idx, i, &hole, err);
		if (rc || hole)
			continue;
		if (i >= start && !fmt_cmode_try(&f->m, cc->alg, idx + i,
						 j->lsize)) {
			/* the mode will store this cluster as it is
			 * (emit_one asks the same state the same
			 * question): no need to compress it */
			j->packed = 0;
			j->slen = SIZE_MAX;
		} else if (i >= start) {
			uint8_t *at = f->room(f->sctx, cc->cap);

			j->out = at ? at : cc->out + i * cc->cap;
			run_job(cc, cc->codec[0], j);
		}
		rc = emit_one(f, idx, i, err);
		j->out = cc->out + i * cc->cap;	/* its own again */
	}
	return rc;
}

int obj_ccreg_enc_file(struct obj_ccreg_enc *cc, struct obj_ccreg_rd *r,
		       uint64_t first, int c0_done, obj_ccreg_sink sink,
		       void *sctx, struct r4_error *err)
{
	return obj_ccreg_enc_file_to(cc, r, first, c0_done, sink, NULL, sctx,
				     err);
}

int obj_ccreg_enc_file_to(struct obj_ccreg_enc *cc, struct obj_ccreg_rd *r,
			  uint64_t first, int c0_done, obj_ccreg_sink sink,
			  obj_ccreg_room room, void *sctx,
			  struct r4_error *err)
{
	struct encfile f = { .cc = cc, .r = r,
			     .n = (r->size + cc->csize - 1) >> cc->shift,
			     .sink = sink, .room = cc->q ? NULL : room,
			     .sctx = sctx };
	uint64_t idx = first;
	int rc = 0;

	/* doc/compress.md §4.4: a file conv keeps compressed past its
	 * first cluster has lattd stored (a shorter one tries its one
	 * cluster under either) */
	fmt_cmode_init(&f.m, cc->mode == FMT_CMODE_CONV ? FMT_CMODE_LATTD :
		       cc->mode);
	/* doc/compress.md §3.4: conv's test compressed cluster 0 even with
	 * no data in it; it is still a hole */
	if (c0_done && !cc->c0_data)
		cc->batch[0].has_data = 0;
	while (!rc && idx < f.n) {
		size_t k = 0, start = c0_done ? 1 : 0;

		if (!c0_done) {
			rc = enc_skip(&f, &idx, err);
			if (rc || idx >= f.n)
				break;
		}
		rc = enc_fill(&f, idx, start, &k, err);
		if (rc)
			break;
		if (f.room) {
			rc = enc_direct(&f, idx, start, k, err);
		} else {
			run_batch(cc, cc->batch + start, k - start);
			rc = enc_emit(&f, idx, k, err);
		}
		c0_done = 0;
		idx += k;
	}
	return rc;
}

int obj_ccreg_enc_c0_done(const struct obj_ccreg_enc *e, uint64_t size)
{
	return e->mode == FMT_CMODE_CONV && size > e->csize;
}

int obj_ccreg_enc_conv_first(struct obj_ccreg_enc *cc, struct obj_ccreg_rd *r,
			 int *keep, struct r4_error *err)
{
	struct ccreg_job *j = &cc->batch[0];
	int rc;

	*keep = 1;
	if (!obj_ccreg_enc_c0_done(cc, r->size))
		return 0;
	j->lsize = cc->csize;
	j->src = j->plain;	/* kept: the refeed and obj_ccreg_enc_file use it */
	rc = rd_fill(r, 0, j->lsize, (uint8_t *)j->plain, &j->has_data, err);
	/* the data must go on without a gap past the cluster: is there a
	 * chunk right at its end? */
	if (!rc && r->dense == cc->csize && !r->cbuf)
		rc = rd_next(r, err);
	if (rc)
		return rc;
	cc->c0_data = j->has_data;
	j->has_data = 1;	/* compressed even when zeros: c0_done */
	run_batch(cc, j, 1);
	/* A gap in the data before the kernel's test point (the first
	 * write past the first cluster) ends the test: the file stays
	 * compressed (doc/compress.md §4.4). */
	*keep = r->dense <= cc->csize ||
		(j->slen != SIZE_MAX && fmt_conv_keeps(j->slen, cc->csize));
	return 0;
}
