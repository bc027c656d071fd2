/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: compressed (ccreg40) files in the builder (doc/compress.md). */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/pack/cluster.h"
#include "libimage/util/compress.h"
#include "libimage/util/err.h"
#include "format/cluster.h"
#include "format/item.h"
#include "format/plugin.h"

#define CC_THREADS 8		/* at most, the calling thread included */
#define CC_BATCH 32		/* clusters compressed at once */

struct ccjob {
	const uint8_t *plain;
	size_t lsize;
	int has_data;		/* 0: a hole in the input, no items */
	uint8_t *out;		/* the disk cluster when packed */
	size_t slen;		/* stream length, SIZE_MAX if none */
	size_t dlen;		/* disk cluster length when packed */
	int packed;
};

struct pack_cc {
	unsigned shift, alg, mode;
	size_t csize, cap;	/* cluster size, output room per cluster */
	/* the pool: workers take jobs [next, njobs) of generation gen */
	pthread_t th[CC_THREADS];
	unsigned nth;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	struct ccjob *jobs;
	size_t njobs, next, finished;
	unsigned gen;
	int stop, failed;
	struct r4_codec *codec[CC_THREADS];
	/* batch buffers */
	uint8_t *plain, *out;
	struct ccjob batch[CC_BATCH];
};

/* doc/compress.md §4.1-§4.2: compress one cluster, keep it if it saves. */
static void run_job(struct pack_cc *cc, struct r4_codec *codec,
		    struct ccjob *j)
{
	size_t sl;

	j->packed = 0;
	j->slen = SIZE_MAX;
	if (cc->mode == FMT_CMODE_NONE || !j->has_data ||
	    j->lsize < fmt_compress_min_size(cc->alg))
		return;
	if (r4_codec_compress(codec, j->plain, j->lsize, j->out,
			      cc->cap - FMT_DC_SUM_SIZE, &sl))
		return;
	j->slen = sl;
	if (fmt_dc_keep(j->lsize, sl)) {
		j->dlen = fmt_dc_seal(j->out, sl);
		j->packed = 1;
	}
}

/* Take jobs of the current batch until none is left. */
static void drain_jobs(struct pack_cc *cc, struct r4_codec *codec)
{
	pthread_mutex_lock(&cc->mu);
	while (cc->next < cc->njobs) {
		struct ccjob *j = &cc->jobs[cc->next++];

		pthread_mutex_unlock(&cc->mu);
		run_job(cc, codec, j);
		pthread_mutex_lock(&cc->mu);
		if (++cc->finished == cc->njobs)
			pthread_cond_broadcast(&cc->done);
	}
	pthread_mutex_unlock(&cc->mu);
}

struct worker {
	struct pack_cc *cc;
	unsigned id;
};

static void *worker_main(void *arg)
{
	struct pack_cc *cc = ((struct worker *)arg)->cc;
	unsigned id = ((struct worker *)arg)->id, seen = 0;

	free(arg);
	for (;;) {
		pthread_mutex_lock(&cc->mu);
		while (!cc->stop && cc->gen == seen)
			pthread_cond_wait(&cc->go, &cc->mu);
		if (cc->stop) {
			pthread_mutex_unlock(&cc->mu);
			return NULL;
		}
		seen = cc->gen;
		pthread_mutex_unlock(&cc->mu);
		drain_jobs(cc, cc->codec[id]);
	}
}

/* Compress jobs[0..n) on every thread, this one included. */
static void run_batch(struct pack_cc *cc, struct ccjob *jobs, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&cc->mu);
	cc->jobs = jobs;
	cc->njobs = n;
	cc->next = 0;
	cc->finished = 0;
	cc->gen++;
	pthread_cond_broadcast(&cc->go);
	pthread_mutex_unlock(&cc->mu);
	drain_jobs(cc, cc->codec[0]);
	pthread_mutex_lock(&cc->mu);
	while (cc->finished < cc->njobs)
		pthread_cond_wait(&cc->done, &cc->mu);
	cc->njobs = 0;
	pthread_mutex_unlock(&cc->mu);
}

int pack_cc_initial(const struct r4_build *b)
{
	return b->cc ? BCC_YES : BCC_NO;
}

uint32_t pack_cc_cluster(const struct r4_build *b)
{
	return b->cc ? (uint32_t)b->cc->csize : 0;
}

uint64_t pack_cc_bytes(const struct r4_build *b, const struct bobj *o)
{
	uint64_t n;

	if (o->data == BD_DEFERRED && !o->cc_len) {
		/* every cluster until emitted; patched then */
		n = (o->size + b->cc->csize - 1) >> b->cc->shift;
		return n << b->cc->shift;
	}
	return o->cc_used << b->cc->shift;
}

int pack_cc_init(struct r4_build *b, struct r4_error *err)
{
	const uint16_t *p = b->o.mkfs.plugin;
	struct pack_cc *cc;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want;
	int rc = 0;

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
	cc->cap = r4_codec_bound(cc->alg, cc->csize);
	cc->plain = malloc(CC_BATCH * cc->csize);
	cc->out = malloc(CC_BATCH * cc->cap);
	pthread_mutex_init(&cc->mu, NULL);
	pthread_cond_init(&cc->go, NULL);
	pthread_cond_init(&cc->done, NULL);
	b->cc = cc;
	if (!cc->plain || !cc->out)
		return r4i_fail(err, -ENOMEM, "out of memory");
	want = ncpu < 1 ? 1 : ncpu > CC_THREADS ? CC_THREADS : (unsigned)ncpu;
	cc->nth = 1;		/* this thread; workers are counted as made */
	for (unsigned i = 0; i < want; i++) {
		cc->codec[i] = r4_codec_new(cc->alg, &rc);
		if (!cc->codec[i])
			return r4i_fail(err, rc, "cannot set up the %s "
				       "compressor", fmt_plugin_name(
				       FMT_PT_COMPRESS, cc->alg));
	}
	for (unsigned i = 1; i < want; i++) {
		struct worker *w = malloc(sizeof(*w));

		if (!w)
			return r4i_fail(err, -ENOMEM, "out of memory");
		w->cc = cc;
		w->id = i;
		if (pthread_create(&cc->th[i], NULL, worker_main, w)) {
			free(w);
			break;	/* fewer threads: still correct */
		}
		cc->nth = i + 1;
	}
	for (size_t i = 0; i < CC_BATCH; i++) {
		cc->batch[i].plain = cc->plain + i * cc->csize;
		cc->batch[i].out = cc->out + i * cc->cap;
	}
	return 0;
}

void pack_cc_fini(struct r4_build *b)
{
	struct pack_cc *cc = b->cc;

	for (size_t i = 0; i < b->nobj; i++)
		if (b->objs && b->objs[i]) {
			free(b->objs[i]->cc_len);
			b->objs[i]->cc_len = NULL;
		}
	if (!cc)
		return;
	pthread_mutex_lock(&cc->mu);
	cc->stop = 1;
	pthread_cond_broadcast(&cc->go);
	pthread_mutex_unlock(&cc->mu);
	for (unsigned i = 1; i < cc->nth; i++)
		pthread_join(cc->th[i], NULL);
	for (unsigned i = 0; i < CC_THREADS; i++)
		r4_codec_free(cc->codec[i]);
	pthread_mutex_destroy(&cc->mu);
	pthread_cond_destroy(&cc->go);
	pthread_cond_destroy(&cc->done);
	free(cc->plain);
	free(cc->out);
	free(cc);
	b->cc = NULL;
}

/* ---- reading a file's data cluster by cluster ---------------------- */

struct ccrd {
	r4_data_fn fn;
	void *ctx;
	const char *path;
	uint64_t size;
	uint64_t end;		/* end of the last chunk taken */
	const uint8_t *cbuf;	/* current chunk, kept while it lasts */
	uint64_t coff;
	size_t clen;
	int eof;
};

/* Fill dst with file bytes [start, start + n), zeros in the gaps;
 * *has_data = some chunk byte fell inside. */
static int rd_fill(struct ccrd *r, uint64_t start, size_t n, uint8_t *dst,
		   int *has_data, struct r4_error *err)
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
			r->cbuf = p;
		}
	}
}

/* After the last cluster: the reader must have nothing more (a chunk
 * past the size fails the chunk check). */
static int rd_finish(struct ccrd *r, struct r4_error *err)
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
		else
			r->end = r->coff + r->clen;
	}
	return 0;
}

/* conv fallback: the data again from the start, for the plain path. */
struct refeed {
	struct ccrd *rd;
	const uint8_t *c0;
	size_t c0len;
	int stage;
};

static int refeed_fn(void *ctx, uint64_t *off, const void **buf, size_t *len,
		     struct r4_error *err)
{
	struct refeed *f = ctx;
	struct ccrd *r = f->rd;

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

typedef int (*cc_sink)(struct r4_build *b, struct bobj *o, uint64_t idx,
		       const uint8_t *dc, size_t len, void *sctx,
		       struct r4_error *err);

/* Compress clusters [first, n) read from r and give each disk cluster to
 * sink, in order. The first job may already be done (c0_done). */
static int cc_encode(struct r4_build *b, struct bobj *o, struct ccrd *r,
		     int c0_done, cc_sink sink, void *sctx,
		     struct r4_error *err)
{
	struct pack_cc *cc = b->cc;
	uint64_t n = (o->size + cc->csize - 1) >> cc->shift, idx = 0;
	struct fmt_cmode m;
	int rc = 0;

	fmt_cmode_init(&m, cc->mode);
	while (!rc && idx < n) {
		size_t k = 0, start = c0_done ? 1 : 0;

		for (k = start; !rc && k < CC_BATCH && idx + k < n; k++) {
			struct ccjob *j = &cc->batch[k];

			j->lsize = fmt_cluster_lsize(o->size, idx + k,
						     cc->shift);
			rc = rd_fill(r, (idx + k) << cc->shift, j->lsize,
				     (uint8_t *)j->plain, &j->has_data, err);
		}
		if (rc)
			break;
		run_batch(cc, cc->batch + start, k - start);
		c0_done = 0;
		for (size_t i = 0; !rc && i < k; i++) {
			struct ccjob *j = &cc->batch[i];
			int kept = 0;

			if (!j->has_data) {
				rc = sink(b, o, idx + i, NULL, 0, sctx, err);
				continue;
			}
			/* doc/compress.md §4.3: the mode's state decides
			 * whether the (speculative) result counts. */
			if (fmt_cmode_try(&m, cc->alg, idx + i, j->lsize)) {
				kept = j->packed;
				fmt_cmode_after(&m, kept,
						j->lsize == cc->csize);
			}
			rc = kept ? sink(b, o, idx + i, j->out, j->dlen, sctx,
					 err) :
				    sink(b, o, idx + i, j->plain, j->lsize,
					 sctx, err);
		}
		idx += k;
	}
	return rc;
}

/* doc/compress.md §4.4: in conv mode a file longer than one cluster
 * stays compressed only if its first cluster compresses to under half.
 * Reads cluster 0 into batch job 0 and compresses it. */
static int conv_first(struct r4_build *b, struct bobj *o, struct ccrd *r,
		      int *keep, struct r4_error *err)
{
	struct pack_cc *cc = b->cc;
	struct ccjob *j = &cc->batch[0];
	int rc;

	*keep = 1;
	if (cc->mode != FMT_CMODE_CONV || o->size <= cc->csize)
		return 0;
	j->lsize = cc->csize;
	rc = rd_fill(r, 0, j->lsize, (uint8_t *)j->plain, &j->has_data, err);
	if (rc)
		return rc;
	j->has_data = 1;	/* tried even when zeros: the kernel does */
	run_batch(cc, j, 1);
	*keep = j->slen != SIZE_MAX && fmt_conv_keeps(j->slen, cc->csize);
	return 0;
}

static int sink_spool(struct r4_build *b, struct bobj *o, uint64_t idx,
		      const uint8_t *dc, size_t len, void *sctx,
		      struct r4_error *err)
{
	(void)sctx;
	o->cc_len[idx] = (uint32_t)len;
	if (!len)
		return 0;
	o->cc_used++;
	return pack_spool_put(b, dc, len, err);
}

int pack_cc_take(struct r4_build *b, struct bobj *o, r4_data_fn fn,
		 void *ctx, const char *path, struct r4_error *err)
{
	struct pack_cc *cc = b->cc;
	struct ccrd r = { fn, ctx, path, o->size, 0, NULL, 0, 0, 0 };
	uint64_t n = (o->size + cc->csize - 1) >> cc->shift;
	int keep, rc;

	rc = conv_first(b, o, &r, &keep, err);
	if (rc)
		return rc;
	if (!keep) {
		struct refeed f = { &r, cc->batch[0].plain, cc->csize, 0 };

		o->cc = BCC_CONVERTED;
		return pack_data_take(b, o, refeed_fn, &f, path, err);
	}
	if (n > SIZE_MAX / sizeof(uint32_t) ||
	    !(o->cc_len = calloc((size_t)n, sizeof(uint32_t))))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	o->spool_off = b->spool_len;
	rc = cc_encode(b, o, &r, cc->mode == FMT_CMODE_CONV &&
		       o->size > cc->csize, sink_spool, NULL, err);
	if (!rc)
		rc = rd_finish(&r, err);
	o->data = BD_SPOOL;
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	return rc;
}

/* ---- the items ------------------------------------------------------ */

/* One disk cluster as ctail40 items (doc/compress.md §3.1): a new item
 * at the cluster start, continued in the next leaves when it does not
 * fit. Bytes from src, or from the spool through t. */
static int emit_dc(struct r4_build *b, struct bobj *o, uint64_t idx,
		   const uint8_t *src, struct tailrd *t, size_t len,
		   struct r4_error *err)
{
	unsigned shift = b->cc->shift;
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
		fmt_key_body(&k, o->locality, o->ordering, o->oid,
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

static int sink_emit(struct r4_build *b, struct bobj *o, uint64_t idx,
		     const uint8_t *dc, size_t len, void *sctx,
		     struct r4_error *err)
{
	(void)sctx;
	if (!len)
		return 0;
	o->cc_used++;
	return emit_dc(b, o, idx, dc, NULL, len, err);
}

int pack_cc_decide(struct r4_build *b, struct bobj *o, const char *path,
		   struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct ccrd r = { NULL, NULL, path, o->size, 0, NULL, 0, 0, 0 };
	int keep = 1, rc;

	if (o->cc != BCC_YES || o->data != BD_DEFERRED ||
	    b->cc->mode != FMT_CMODE_CONV || o->size <= b->cc->csize)
		return 0;
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	rc = conv_first(b, o, &r, &keep, err);
	s->close(r.ctx);
	if (!rc && !keep)
		o->cc = BCC_CONVERTED;
	return rc;
}

int pack_cc_emit(struct r4_build *b, struct bobj *o, const char *path,
		 struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct ccrd r = { NULL, NULL, path, o->size, 0, NULL, 0, 0, 0 };
	uint64_t dense;
	int rc;

	if (o->data != BD_DEFERRED) {
		struct tailrd t;
		uint64_t n = (o->size + b->cc->csize - 1) >> b->cc->shift;

		rc = pack_tail_open(b, o, path, &t, err);
		for (uint64_t i = 0; !rc && i < n; i++)
			rc = emit_dc(b, o, i, NULL, &t, o->cc_len[i], err);
		pack_tail_close(&t);
		return rc;
	}
	dense = pack_cc_bytes(b, o);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	o->cc_used = 0;
	rc = cc_encode(b, o, &r, 0, sink_emit, NULL, err);
	if (!rc)
		rc = rd_finish(&r, err);
	s->close(r.ctx);
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	/* holes found: the stat data's bytes go down */
	if (!rc && (o->cc_used << b->cc->shift) != dense)
		rc = pack_leaf_patch_u64(b, o->sd_leaf, o->sd_off,
					 o->cc_used << b->cc->shift, err);
	return rc;
}
