/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: compressed (ccreg40) files in the builder (doc/compress.md). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/pack/cluster.h"
#include "libimage/obj/ccenc.h"
#include "libimage/util/err.h"
#include "format/cluster.h"
#include "format/item.h"
#include "format/plugin.h"

struct pack_cc {
	struct obj_ccenc *e;
	unsigned shift;
	size_t csize;
};

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

	if (o->data == BD_DEFERRED && !o->u.reg->cc_len) {
		/* every cluster until emitted; patched then */
		n = (o->size + b->cc->csize - 1) >> b->cc->shift;
		return n << b->cc->shift;
	}
	return o->u.reg->cc_used << b->cc->shift;
}

int pack_cc_init(struct r4_build *b, struct r4_error *err)
{
	const uint16_t *p = b->o.mkfs.plugin;
	struct pack_cc *cc;

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
	b->cc = cc;
	return obj_ccenc_new(cc->shift, p[R4_PT_COMPRESS], p[R4_PT_CMODE],
			     &cc->e, err);
}

void pack_cc_fini(struct r4_build *b)
{
	struct pack_cc *cc = b->cc;

	/* the objects' cluster lengths go with them (pack_ns_fini) */
	if (!cc)
		return;
	obj_ccenc_free(cc->e);
	free(cc);
	b->cc = NULL;
}

struct sinkctx {
	struct r4_build *b;
	struct bobj *o;
};

static int sink_spool(void *sctx, uint64_t idx, const uint8_t *dc,
		      size_t len, struct r4_error *err)
{
	struct sinkctx *s = sctx;

	s->o->u.reg->cc_len[idx] = (uint32_t)len;
	if (!len)
		return 0;
	s->o->u.reg->cc_used++;
	return pack_spool_put(s->b, dc, len, err);
}

int pack_cc_take(struct r4_build *b, struct bobj *o, r4_data_fn fn,
		 void *ctx, const char *path, struct r4_error *err)
{
	struct pack_cc *cc = b->cc;
	struct sinkctx sc = { b, o };
	struct obj_ccrd r;
	uint64_t n = (o->size + cc->csize - 1) >> cc->shift;
	int keep, rc;

	obj_ccrd_init(&r, fn, ctx, path, o->size);
	rc = obj_ccenc_conv_first(cc->e, &r, &keep, err);
	if (rc)
		return rc;
	if (!keep) {
		struct obj_ccrefeed f;

		obj_ccrefeed_init(&f, cc->e, &r);
		o->cc = BCC_CONVERTED;
		return pack_data_take(b, o, obj_ccrefeed_fn, &f, path, err);
	}
	if (n > SIZE_MAX / sizeof(uint32_t) ||
	    !(o->u.reg->cc_len = calloc((size_t)n, sizeof(uint32_t))))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	o->u.reg->spool_off = b->spool_len;
	rc = obj_ccenc_file(cc->e, &r, 0, obj_ccenc_c0_done(cc->e, o->size),
			    sink_spool, &sc, err);
	if (!rc)
		rc = obj_ccrd_finish(&r, err);
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
	s->o->u.reg->cc_used++;
	return emit_dc(s->b, s->o, idx, dc, NULL, len, err);
}

int pack_cc_decide(struct r4_build *b, struct bobj *o, const char *path,
		   struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct obj_ccrd r;
	int keep = 1, rc;

	if (o->cc != BCC_YES || o->data != BD_DEFERRED ||
	    !obj_ccenc_c0_done(b->cc->e, o->size))
		return 0;
	obj_ccrd_init(&r, NULL, NULL, path, o->size);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	r.eof = 0;
	rc = obj_ccenc_conv_first(b->cc->e, &r, &keep, err);
	s->close(r.ctx);
	if (!rc && !keep)
		o->cc = BCC_CONVERTED;
	return rc;
}

int pack_cc_emit(struct r4_build *b, struct bobj *o, const char *path,
		 struct r4_error *err)
{
	const struct r4_data_source *s = b->o.source;
	struct sinkctx sc = { b, o };
	struct obj_ccrd r;
	uint64_t dense;
	int rc;

	if (o->data != BD_DEFERRED) {
		struct tailrd t;
		uint64_t n = (o->size + b->cc->csize - 1) >> b->cc->shift;

		rc = pack_tail_open(b, o, path, &t, err);
		for (uint64_t i = 0; !rc && i < n; i++)
			rc = emit_dc(b, o, i, NULL, &t, o->u.reg->cc_len[i],
				     err);
		pack_tail_close(&t);
		return rc;
	}
	dense = pack_cc_bytes(b, o);
	obj_ccrd_init(&r, NULL, NULL, path, o->size);
	rc = s->open(s->src_ctx, path, &r.fn, &r.ctx, err);
	if (rc)
		return r4i_fail(err, rc, "%s: cannot open the data: %s", path,
			       r4_strerror(rc));
	r.eof = 0;
	o->u.reg->cc_used = 0;
	rc = obj_ccenc_file(b->cc->e, &r, 0, 0, sink_emit, &sc, err);
	if (!rc)
		rc = obj_ccrd_finish(&r, err);
	s->close(r.ctx);
	b->done_bytes += o->size;
	if (!rc && b->o.progress)
		b->o.progress(b->o.progress_ctx, b->done_bytes,
			      b->total_bytes);
	/* holes found: the stat data's bytes go down */
	if (!rc && (o->u.reg->cc_used << b->cc->shift) != dense)
		rc = pack_leaf_patch_u64(b, o->u.reg->sd_leaf,
					 o->u.reg->sd_off,
					 o->u.reg->cc_used << b->cc->shift, err);
	return rc;
}
