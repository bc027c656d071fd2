/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the compressed bodies of deleted ccreg40 files, from the
 * old copies of their ctail pieces. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "r4/forensic.h"
#include "libimage/util/err.h"
#include "libimage/vol/volume.h"
#include "libimage/alloc/space.h"
#include "format/super.h"
#include "format/node.h"
#include "format/item.h"
#include "format/plugin.h"
#include "format/bitmap.h"
#include "format/cluster.h"
#include "libimage/util/compress.h"
#include "libimage/obj/obj.h"
#include "libimage/obj/ccreg.h"
#include "libimage/tree/tree.h"
#include "r4/util.h"
#include "libimage/forensic/forensic.h"

/* ---- Compressed bodies ---------------------------------------------------- */

/* A ccreg40 file's body is ctail items, each a piece of one disk
 * cluster (doc/compress.md §3.1). Old copies of a cluster's pieces may
 * lie in several free nodes (one per flush that relocated the leaf);
 * a cluster is recovered when a chain of pieces from its start, one
 * copy at each offset, makes a disk cluster that decodes to the logical
 * cluster (doc/compress.md §3.2: raw, or checksum plus a stream that
 * gives exactly its bytes). Newest copies are tried first, and a bounded
 * number of pieces per cluster, since a hostile image may offer many. */
#define CCREG_BUDGET 256

struct ccreg_work {
	struct r4_vol *vol;
	const struct fpiece **v;	/* by offset, newest first */
	size_t n;
	uint8_t *node, *dc, *plain;
	struct r4_codec *codec;
	unsigned shift;
	size_t lsize;
	uint64_t start;
	unsigned budget;
	struct r4_error *err;
};

static int cmp_cpiece(const void *a, const void *b)
{
	const struct fpiece *x = *(const struct fpiece *const *)a;
	const struct fpiece *y = *(const struct fpiece *const *)b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->flush != y->flush)
		return x->flush > y->flush ? -1 : 1;
	return x->blk < y->blk ? 1 : x->blk > y->blk ? -1 : 0;
}

/* The bytes of a ctail piece, read again from its node and checked as
 * at scan time: 0, 1 when the node no longer holds them, or an error. */
static int ccreg_piece_bytes(struct ccreg_work *w, const struct fpiece *p,
			  uint8_t *dst)
{
	size_t bs = w->vol->blksize;
	int rc = fsc_read_copy(w->vol, p->blk, p->raw, w->node, w->err);

	if (rc)
		return rc;
	if (fmt_node_verify(w->node, bs, w->vol->keypol, NULL) ||
	    p->boff > bs || p->len > bs - p->boff)
		return 1;
	memcpy(dst, w->node + p->boff, (size_t)p->len);
	return 0;
}

/* First piece at or after offset 'at'. */
static size_t ccreg_lower(const struct ccreg_work *w, uint64_t at)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->v[mid]->off < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Extend the disk cluster gathered in w->dc[0, pos): 1 with *out the
 * logical cluster, 0 when no chain decodes, or an error. */
static int ccreg_chain(struct ccreg_work *w, size_t pos, const uint8_t **out)
{
	uint64_t at = w->start + pos;

	for (size_t i = ccreg_lower(w, at); i < w->n && w->v[i]->off == at;
	     i++) {
		const struct fpiece *p = w->v[i];
		enum fmt_dc_form form;
		const char *why;
		size_t end, slen;
		int rc;

		if (p->shift != w->shift || p->len > w->lsize - pos)
			continue;
		if (!w->budget)
			return 0;
		w->budget--;
		rc = ccreg_piece_bytes(w, p, w->dc + pos);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		end = pos + (size_t)p->len;
		if (end == w->lsize) {
			*out = w->dc;	/* stored raw */
			return 1;
		}
		if (!fmt_dc_open(w->dc, end, w->lsize, &form, &slen, NULL) &&
		    form == FMT_DC_PACKED) {
			rc = r4_codec_decompress(w->codec, w->dc, slen,
						 w->plain, w->lsize, &why);
			if (rc == -ENOMEM)
				return rc;
			if (!rc) {
				*out = w->plain;
				return 1;
			}
		}
		rc = ccreg_chain(w, end, out);
		if (rc)
			return rc;
	}
	return 0;
}

/* The object's ctail pieces below size, sorted for ccreg_chain. */
static int ccreg_pieces(const struct fscan *s, const struct fsd *sd,
		     const struct fpiece ***out, size_t *n)
{
	const struct fpiece **v;
	size_t k, m = 0;

	*out = NULL;
	*n = 0;
	for (k = 0; k < s->npc; k++)
		if (s->pc[k].ctail && s->pc[k].oid == sd->oid &&
		    s->pc[k].ord == sd->ord && s->pc[k].off < sd->st.size)
			m++;
	if (!m)
		return 0;
	v = malloc(m * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m = 0;
	for (k = 0; k < s->npc; k++)
		if (s->pc[k].ctail && s->pc[k].oid == sd->oid &&
		    s->pc[k].ord == sd->ord && s->pc[k].off < sd->st.size)
			v[m++] = &s->pc[k];
	qsort(v, m, sizeof(*v), cmp_cpiece);
	*out = v;
	*n = m;
	return 0;
}

/* The compression plugin of a deleted ccreg40 file: its own stat data's
 * plugin set, else the root's, else the default (doc/compress.md §5).
 * 0 and *id, or 1 when it names one we do not know. */
static int ccreg_compress_of(struct r4_vol *vol, const struct fsd *sd,
			  unsigned *id)
{
	struct r4_objref ref = { sd->loc, sd->ord, sd->oid };
	struct r4_error tmp = { 0, "", 0 };
	struct obj_sd fake;
	struct obj_ccreg cc;

	memset(&fake, 0, sizeof(fake));
	fake.st.pset = sd->pset;
	if (obj_ccreg_params(vol, &ref, &fake, &cc, &tmp))
		return 1;
	*id = cc.compress;
	return 0;
}

/* fn(ctx, off, bytes, len) for every logical cluster of the object of
 * sd that decodes from surviving pieces; found(ctx, off, len) (may be
 * NULL) for every cluster some piece of which survives. */
int fsc_ccreg_recover(struct r4_vol *vol, const struct fscan *s,
		      const struct fsd *sd, cluster_fn fn, void *ctx,
		      cluster_fn found, void *fctx, struct r4_error *err)
{
	struct ccreg_work w = { 0 };
	unsigned id;
	int rc;

	w.vol = vol;
	w.err = err;
	rc = ccreg_pieces(s, sd, &w.v, &w.n);
	if (rc || !w.n)
		return rc;
	if (ccreg_compress_of(vol, sd, &id)) {
		free(w.v);
		return 0;	/* nothing decodes */
	}
	w.node = malloc(vol->blksize);
	w.dc = malloc((size_t)1 << 16);
	w.plain = malloc((size_t)1 << 16);
	w.codec = r4_codec_new(id, &rc);
	if (!w.node || !w.dc || !w.plain || !w.codec) {
		rc = rc && rc != -ENOMEM ? 0 : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w.n && !rc; i++) {
		const struct fpiece *p = w.v[i];
		const uint8_t *bytes;

		if (i && p->off == w.v[i - 1]->off)
			continue;	/* one try per cluster start */
		if (p->shift < 12 || p->shift > 16 ||
		    p->off & (((uint64_t)1 << p->shift) - 1))
			continue;	/* not the start of a cluster */
		w.shift = p->shift;
		w.start = p->off;
		w.lsize = fmt_cluster_lsize(sd->st.size, p->off >> p->shift,
					    p->shift);
		if (!w.lsize)
			continue;
		if (found)
			rc = found(fctx, w.start, NULL, w.lsize);
		w.budget = CCREG_BUDGET;
		if (!rc)
			rc = ccreg_chain(&w, 0, &bytes);
		if (rc == 1)
			rc = fn(ctx, w.start, bytes, w.lsize);
	}
out:
	free(w.v);
	free(w.node);
	free(w.dc);
	free(w.plain);
	r4_codec_free(w.codec);
	return rc;
}

int fsc_cluster_to_range(void *ctx, uint64_t off, const uint8_t *buf,
			    size_t len)
{
	(void)buf;
	return fsc_ranges_add(ctx, off, off + len);
}

/* Fill d from the scan for the object of s->sd[i] (the newest copy). */
