/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: ccreg40 clusters on the read path (doc/compress.md §3, §5). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/ccreg.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/util/compress.h"
#include "libimage/tree/tree.h"
#include "format/cluster.h"
#include "format/plugin.h"

/* doc/compress.md §5: file, then root, then the kernel's defaults. */
int obj_ccreg_params(struct r4_vol *vol, const struct r4_objref *obj,
		  const struct obj_sd *sd, struct obj_ccreg *out,
		  struct r4_error *err)
{
	static const unsigned member[3] = {
		FMT_PSET_CLUSTER, FMT_PSET_COMPRESSION, FMT_PSET_CMODE
	};
	int v[3] = { FMT_CLUSTER_64K, FMT_COMPRESS_LZO1, FMT_CMODE_CONV };
	int own[3], rv;
	struct r4_objref root = { FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID };
	struct obj_sd rsd;
	struct r4_error tmp = { 0, "", 0 };
	int have_root = 0;

	for (int i = 0; i < 3; i++)
		own[i] = obj_pset_find(&sd->st.pset, member[i]);
	if ((own[0] < 0 || own[1] < 0 || own[2] < 0) &&
	    obj->oid != FMT_ROOT_OID && !obj_sd_get(vol, &root, &rsd, &tmp))
		have_root = 1;
	for (int i = 0; i < 3; i++) {
		if (own[i] >= 0)
			v[i] = own[i];
		else if (have_root &&
			 (rv = obj_pset_find(&rsd.st.pset, member[i])) >= 0)
			v[i] = rv;
	}
	if (have_root)
		obj_sd_put(&rsd);
	out->shift = fmt_cluster_shift_of((unsigned)v[0]);
	out->compress = (unsigned)v[1];
	out->cmode = (unsigned)v[2];
	if (!out->shift)
		return r4i_fail(err, R4_EUNSUPP, "%s: object %llx: cluster "
			       "plugin %d is unknown", obj_vol_name(vol),
			       (unsigned long long)obj->oid, v[0]);
	if (out->compress > FMT_COMPRESS_ZSTD1)
		return r4i_fail(err, R4_EUNSUPP, "%s: object %llx: compression "
			       "plugin %d is unknown", obj_vol_name(vol),
			       (unsigned long long)obj->oid, v[1]);
	return 0;
}

#define DC_FAIL(code, ...) \
	r4i_fail(err, code, "%s: object %llx, cluster %llu, tree node %llu, " \
		"item %u: " __VA_ARGS__)
#define DC_WHERE obj_vol_name(vol), (unsigned long long)obj->oid, \
	(unsigned long long)index, (unsigned long long)it.blk, it.pos

/* Put c on the first item at or after the start of cluster 'index'; an
 * item of an earlier cluster must end before it. */
static int dc_seek(struct r4_vol *vol, const struct r4_objref *obj,
		   unsigned shift, uint64_t index, struct tree_cursor *c,
		   struct r4_error *err)
{
	uint64_t start = index << shift, off;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	fmt_key_body(&k, obj->locality, vol->keypol == FMT_KEY_LARGE ?
		     obj->ordering : 0, obj->oid, start);
	rc = tree_seek_le(c, &k, err);
	if (rc == R4_ENOTFOUND)
		return tree_seek_ge(c, &k, err);
	if (!rc)
		rc = tree_cur(c, &it, err);
	if (!rc && obj_is_body(obj, &it.key) &&
	    fmt_key_offset(&it.key) < start) {
		off = fmt_key_offset(&it.key);
		if (it.plugin_id == FMT_ITEM_CTAIL40 &&
		    it.len > FMT_CTAIL40_HDR_SIZE &&
		    off + (it.len - FMT_CTAIL40_HDR_SIZE) > start)
			return DC_FAIL(R4_ECORRUPT, "ctail40 item at offset "
				       "%llu runs into this cluster",
				       DC_WHERE, (unsigned long long)off);
	}
	if (!rc && (!obj_is_body(obj, &it.key) ||
		    fmt_key_offset(&it.key) < start))
		rc = tree_next(c, err);
	return rc;
}

/* Check one item of cluster 'index' (at offset off) and append its bytes
 * to buf and dc (doc/compress.md §3.1). */
static int dc_take(struct r4_vol *vol, const struct r4_objref *obj,
		   unsigned shift, uint64_t index, const struct tree_item *item,
		   uint8_t *buf, struct obj_dc *dc, struct r4_error *err)
{
	const struct tree_item it = *item;
	uint64_t start = index << shift, end = start + ((uint64_t)1 << shift);
	uint64_t off = fmt_key_offset(&it.key);
	struct fmt_ctail40 ct;

	if (it.plugin_id != FMT_ITEM_CTAIL40)
		return DC_FAIL(R4_ECORRUPT, "item plugin %u in the body of a "
			       "compressed file", DC_WHERE, it.plugin_id);
	if (fmt_ctail40_decode(it.body, it.len, &ct))
		return DC_FAIL(R4_ECORRUPT, "malformed ctail40 item (%zu "
			       "bytes)", DC_WHERE, it.len);
	if (ct.shift == FMT_CTAIL40_UNPREPPED)
		return DC_FAIL(R4_ECORRUPT, "unprepped cluster (a placeholder "
			       "the kernel never filled)", DC_WHERE);
	if (ct.shift != shift)
		return DC_FAIL(R4_ECORRUPT, "ctail40 cluster shift %u, the "
			       "file's is %u", DC_WHERE, ct.shift, shift);
	if (off != start + dc->len)
		return DC_FAIL(R4_ECORRUPT, "ctail40 item at offset %llu, "
			       "expected %llu (a gap in the disk cluster)",
			       DC_WHERE, (unsigned long long)off,
			       (unsigned long long)(start + dc->len));
	if (ct.len > end - off)
		return DC_FAIL(R4_ECORRUPT, "ctail40 item of %zu bytes at "
			       "offset %llu crosses the cluster end",
			       DC_WHERE, ct.len, (unsigned long long)off);
	memcpy(buf + dc->len, ct.data, ct.len);
	if (!dc->items)
		dc->blk = it.blk;
	dc->len += ct.len;
	dc->items++;
	return 0;
}

/* doc/compress.md §3.1: the items of one disk cluster. */
int obj_dc_load(struct r4_vol *vol, const struct r4_objref *obj,
		unsigned shift, uint64_t index, uint8_t *buf,
		struct obj_dc *dc, struct r4_error *err)
{
	uint64_t end = (index << shift) + ((uint64_t)1 << shift);
	struct tree_cursor c;
	struct tree_item it;
	int rc;

	memset(dc, 0, sizeof(*dc));
	tree_cursor_init(&c, vol);
	rc = dc_seek(vol, obj, shift, index, &c, err);
	while (!rc) {
		rc = tree_cur(&c, &it, err);
		if (rc || !obj_is_body(obj, &it.key) ||
		    fmt_key_offset(&it.key) >= end)
			break;
		rc = dc_take(vol, obj, shift, index, &it, buf, dc, err);
		if (!rc)
			rc = tree_next(&c, err);
	}
	tree_cursor_fini(&c);
	return rc == R4_ENOTFOUND ? 0 : rc;
}

/* doc/compress.md §3.2 */
int obj_dc_decode(struct r4_vol *vol, const struct r4_objref *obj,
		  struct r4_codec *codec, uint64_t index, const uint8_t *buf,
		  const struct obj_dc *dc, size_t lsize, uint8_t *out,
		  struct r4_error *err)
{
	enum fmt_dc_form form;
	const char *why = NULL;
	size_t slen;
	int rc;

	if (!dc->len) {
		memset(out, 0, lsize);
		return 0;
	}
	rc = fmt_dc_open(buf, dc->len, lsize, &form, &slen, &why);
	if (!rc && form == FMT_DC_RAW) {
		memcpy(out, buf, lsize);
		return 0;
	}
	if (!rc)
		rc = r4_codec_decompress(codec, buf, slen, out, lsize, &why);
	if (rc == -ENOMEM)
		return r4i_fail(err, rc, "out of memory");
	if (rc)
		return r4i_fail(err, rc, "%s: object %llx, cluster %llu "
			       "(%zu bytes on disk for %zu, %s), tree node "
			       "%llu: %s", obj_vol_name(vol),
			       (unsigned long long)obj->oid,
			       (unsigned long long)index, dc->len, lsize,
			       fmt_plugin_name(FMT_PT_COMPRESS,
					       r4_codec_id(codec)),
			       (unsigned long long)dc->blk,
			       why ? why : r4_strerror(rc));
	return 0;
}

struct ccreg_bufs {
	uint8_t *dc, *plain;
	struct r4_codec *codec;
};

static int bufs_get(struct ccreg_bufs *b, const struct obj_ccreg *cc,
		    struct r4_error *err)
{
	int rc = 0;

	b->dc = malloc((size_t)1 << cc->shift);
	b->plain = malloc((size_t)1 << cc->shift);
	b->codec = r4_codec_new(cc->compress, &rc);
	if (!b->dc || !b->plain || !b->codec) {
		free(b->dc);
		free(b->plain);
		r4_codec_free(b->codec);
		return r4i_fail(err, rc ? rc : -ENOMEM, "out of memory");
	}
	return 0;
}

static void bufs_put(struct ccreg_bufs *b)
{
	free(b->dc);
	free(b->plain);
	r4_codec_free(b->codec);
}

int obj_ccreg_read(struct r4_vol *vol, const struct r4_objref *obj,
		const struct obj_sd *sd, uint64_t off, uint8_t *buf,
		size_t len, struct r4_error *err)
{
	struct obj_ccreg cc;
	struct ccreg_bufs b;
	struct obj_dc dc;
	uint64_t idx, last, cstart;
	int rc = obj_ccreg_params(vol, obj, sd, &cc, err);

	if (rc || !len)
		return rc;
	rc = bufs_get(&b, &cc, err);
	if (rc)
		return rc;
	last = (off + len - 1) >> cc.shift;
	for (idx = off >> cc.shift; !rc && idx <= last; idx++) {
		size_t lsize = fmt_cluster_lsize(sd->st.size, idx, cc.shift);
		uint64_t lo, hi;

		cstart = idx << cc.shift;
		lo = off > cstart ? off - cstart : 0;
		hi = off + len - cstart < lsize ? off + len - cstart : lsize;
		rc = obj_dc_load(vol, obj, cc.shift, idx, b.dc, &dc, err);
		if (rc)
			break;
		if (lo == 0 && hi == lsize) {
			rc = obj_dc_decode(vol, obj, b.codec, idx, b.dc, &dc,
					   lsize, buf + (cstart - off), err);
		} else {
			rc = obj_dc_decode(vol, obj, b.codec, idx, b.dc, &dc,
					   lsize, b.plain, err);
			if (!rc)
				memcpy(buf + (cstart + lo - off), b.plain + lo,
				       (size_t)(hi - lo));
		}
	}
	bufs_put(&b);
	return rc;
}

/* Index of the first cluster at or after 'from' holding an item of obj;
 * R4_ENOTFOUND when none. */
static int next_cluster(struct r4_vol *vol, const struct r4_objref *obj,
			unsigned shift, uint64_t from, uint64_t *index,
			struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	int rc;

	fmt_key_body(&k, obj->locality, vol->keypol == FMT_KEY_LARGE ?
		     obj->ordering : 0, obj->oid, from << shift);
	tree_cursor_init(&c, vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && !obj_is_body(obj, &it.key))
		rc = R4_ENOTFOUND;
	if (!rc)
		*index = fmt_key_offset(&it.key) >> shift;
	tree_cursor_fini(&c);
	return rc;
}

int obj_ccreg_verify(struct r4_vol *vol, const struct r4_objref *obj,
		  const struct obj_sd *sd, uint64_t *clusters,
		  struct r4_error *err)
{
	struct obj_ccreg cc;
	struct ccreg_bufs b;
	struct obj_dc dc;
	uint64_t idx = 0, n = 0;
	int rc = obj_ccreg_params(vol, obj, sd, &cc, err);

	if (rc)
		return rc;
	rc = bufs_get(&b, &cc, err);
	if (rc)
		return rc;
	while (!(rc = next_cluster(vol, obj, cc.shift, idx, &idx, err))) {
		size_t lsize = fmt_cluster_lsize(sd->st.size, idx, cc.shift);

		rc = obj_dc_load(vol, obj, cc.shift, idx, b.dc, &dc, err);
		if (rc)
			break;
		if (!dc.items) {
			/* The first item found is not at a cluster start. */
			rc = r4i_fail(err, R4_ECORRUPT, "%s: object %llx, "
				     "cluster %llu: a ctail40 item that does "
				     "not start at the cluster start",
				     obj_vol_name(vol),
				     (unsigned long long)obj->oid,
				     (unsigned long long)idx);
			break;
		}
		if (!lsize) {
			rc = r4i_fail(err, R4_ECORRUPT, "%s: object %llx, "
				     "cluster %llu, tree node %llu: disk "
				     "cluster past the end of the file "
				     "(%llu bytes)", obj_vol_name(vol),
				     (unsigned long long)obj->oid,
				     (unsigned long long)idx,
				     (unsigned long long)dc.blk,
				     (unsigned long long)sd->st.size);
			break;
		}
		rc = obj_dc_decode(vol, obj, b.codec, idx, b.dc, &dc, lsize,
				   b.plain, err);
		if (rc)
			break;
		n++;
		if (idx == UINT64_MAX >> cc.shift)
			break;
		idx++;
	}
	bufs_put(&b);
	if (clusters)
		*clusters = n;
	return rc == R4_ENOTFOUND ? 0 : rc;
}
