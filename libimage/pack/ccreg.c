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
#include "libimage/pack/ccreg_int.h"

/* How many workers a pool runs: --threads, else one per CPU. */
unsigned ccreg_pool_want(const struct r4_pack *b)
{
	unsigned want = b->o.threads ? b->o.threads : obj_ccreg_enc_cpus();

	return want > AHEAD_THREADS ? AHEAD_THREADS : want;
}

/* One encoder for each of want workers. */
int ccreg_pool_encoders(const struct pack_ccreg *cc, struct ccreg_pool *w,
			 unsigned want, struct r4_error *err)
{
	int rc = 0;

	for (unsigned i = 0; i < want && !rc; i++)
		rc = obj_ccreg_enc_new_threads(cc->shift, cc->alg, cc->mode, 1,
					   &w->enc[i], err);
	return rc;
}

/* Start up to want workers; w->nth says how many started (0: none). */
void ccreg_pool_run(struct ccreg_pool *w, unsigned want)
{
	if (workq_new(want, &w->q))
		w->q = NULL;
	w->nth = workq_threads(w->q);
}

/* Let the workers finish what they were handed, stop and join them,
 * and free the encoders. */
void ccreg_pool_halt(struct ccreg_pool *w)
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
	return b->ccreg && b->ccreg->mode == FMT_CMODE_CONV &&
	       o->size > b->ccreg->csize;
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
	ccreg_pipe_stop(b);
	ccreg_stream_stop(b);
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

int pack_ccreg_take(struct r4_pack *b, struct bobj *o, r4_data_fn fn,
		 void *ctx, const char *path, struct r4_error *err)
{
	struct pack_ccreg *cc = b->ccreg;
	struct sinkctx sc = { b, o };
	struct obj_ccreg_rd r;
	uint64_t n = (o->size + cc->csize - 1) >> cc->shift;
	int keep, rc = ccreg_stream_take(b, o, fn, ctx, path, err);

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
		/* every byte of the body is written below: not zeroed */
		rc = pack_leaf_add_raw(b, &k, FMT_ITEM_CTAIL40,
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
	struct ccreg_job *j;
	int keep = 1, rc;

	if (o->ccreg != CCREG_YES || o->data != BD_DEFERRED ||
	    !obj_ccreg_enc_c0_done(b->ccreg->e, o->size))
		return 0;
	if ((j = ccreg_pipe_wait(b, o))) {
		if (j->rc)
			return ccreg_job_fail(j, err);
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
static int emit_job(struct r4_pack *b, struct bobj *o, struct ccreg_job *j,
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

/* A file spooled when taken: its disk clusters from the spool. */
static int emit_spooled(struct r4_pack *b, struct bobj *o, const char *path,
			struct r4_error *err)
{
	struct tailrd t;
	uint64_t n = (o->size + b->ccreg->csize - 1) >> b->ccreg->shift;
	int rc = pack_tail_open(b, o, path, &t, err);

	for (uint64_t i = 0; !rc && i < n; i++)
		rc = emit_dc(b, o, i, NULL, &t, o->u.reg->ccreg_len[i], err);
	pack_tail_close(&t);
	return rc;
}

/* A deferred file not compressed ahead: read and compress it now. */
static int emit_now(struct r4_pack *b, struct bobj *o, const char *path,
		    struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct sinkctx sc = { b, o };
	struct obj_ccreg_rd r;
	int rc;

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
	return rc;
}

int pack_ccreg_emit(struct r4_pack *b, struct bobj *o, const char *path,
		 struct r4_error *err)
{
	struct ccreg_job *j;
	uint64_t dense, used;
	int rc;

	if (o->data != BD_DEFERRED)
		return emit_spooled(b, o, path, err);
	dense = pack_ccreg_bytes(b, o);
	if ((j = ccreg_pipe_wait(b, o)) && (j->rc || j->full)) {
		rc = j->rc ? ccreg_job_fail(j, err) : emit_job(b, o, j, err);
		ccreg_job_done(b, j);
	} else {
		rc = emit_now(b, o, path, err);
	}
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	/* holes found: the stat data's bytes go down */
	used = o->u.reg->ccreg_used << b->ccreg->shift;
	if (!rc && used != dense)
		rc = pack_leaf_patch_u64(b, o->u.reg->sd_leaf,
					 o->u.reg->sd_off, used, err);
	return rc;
}
