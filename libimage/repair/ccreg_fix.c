/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair's pass over compressed (ccreg40) files
 * (doc/compress.md §7). A body of ctail40 items tells most of what its
 * stat data must say: the cluster shift is in every item's first byte
 * (§3.1), the compression plugin is the one whose decoder reads the
 * packed clusters back (§3.2, §3.3) and the size ends where the last
 * cluster's bytes end (§2.2). So, per file whose body is all ctail40
 * items and that the check found wrong, one of these, the first that
 * applies (the next round checks again):
 *   - an item whose shift byte is another valid shift than the file's:
 *     the byte set back;
 *   - no stat data: a ccreg40 one made (mode 0644; the unreachable pass
 *     then links it into /lost+found);
 *   - a stat data whose plugin is not ccreg40, or whose plugin set
 *     makes the clusters unreadable while another reads them: its
 *     plugin set mended;
 *   - a size that contradicts the last cluster: set from it;
 *   - clusters still unreadable: their items removed, so that they read
 *     as zeros as the kernel reads a cluster without items (§3.4),
 *     reported as zeroed ranges.
 * Every change goes through a transaction, R->batch per transaction; a
 * batch that fails is retried one change per transaction. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/repair/repair.h"
#include "libimage/obj/ccreg.h"
#include "libimage/obj/write.h"
#include "libimage/tree/tree.h"
#include "libimage/txn/txn.h"
#include "libimage/util/compress.h"
#include "libimage/util/err.h"
#include "r4/util.h"
#include "format/checksum.h"
#include "format/cluster.h"
#include "format/item.h"
#include "format/plugin.h"

#define MODE_FMT 0170000u
#define MODE_REG 0100000u

enum cc_kind { CCREG_SHIFT, CCREG_MKSD, CCREG_PSET, CCREG_SIZE, CCREG_ZERO };

struct ccreg_op {
	int kind, code;
	struct r4_objref ref;
	unsigned shift, compress;	/* what the clusters say */
	uint64_t val, old;		/* size; item offset (CCREG_SHIFT);
					 * cluster index (CCREG_ZERO) */
	uint64_t bytes;			/* stat data bytes (CCREG_MKSD,
					 * CCREG_SIZE) */
	uint64_t blk;			/* leaf (CCREG_ZERO) */
	uint32_t lsize;			/* bytes zeroed (CCREG_ZERO) */
	unsigned was;			/* old shift byte / old plugin */
};

struct ccreg_fix {
	struct rep *R;
	struct ccreg_op *v;
	size_t n, cap;
	int root_member[3];	/* compress, cmode, cluster: the root's, -1 */
	uint8_t *dc, *plain;	/* one cluster each */
	struct r4_codec *codec[FMT_COMPRESS_ZSTD1 + 1];
};

/* One item of the body, as surveyed. */
struct ccreg_item {
	uint64_t off;
	uint8_t shift;
	size_t units;
};

static struct ccreg_op *op_add(struct ccreg_fix *f, int kind, int code,
			   const struct r4_objref *ref)
{
	struct ccreg_op *p;

	if (R4_RESERVE(f->v, f->cap, f->n + 1, 32))
		return NULL;
	p = &f->v[f->n++];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->code = code;
	p->ref = *ref;
	return p;
}

static struct r4_codec *codec(struct ccreg_fix *f, unsigned id)
{
	int rc = 0;

	if (id > FMT_COMPRESS_ZSTD1)
		return NULL;
	if (!f->codec[id])
		f->codec[id] = r4_codec_new(id, &rc);
	return f->codec[id];
}

static void body_key(const struct r4_vol *vol, const struct r4_objref *ref,
		     uint64_t off, struct fmt_key *k)
{
	fmt_key_body(k, ref->locality, vol->keypol == FMT_KEY_LARGE ?
		     ref->ordering : 0, ref->oid, off);
}

/* The items of ref's body in key order into *out (malloc'ed). 1 when
 * the body is all ctail40 items, 0 when not (left alone), or an error. */
static int survey(struct r4_vol *vol, const struct r4_objref *ref,
		  struct ccreg_item **out, size_t *nout, struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	struct ccreg_item *v = NULL;
	size_t n = 0, cap = 0;
	int rc, all = 1;

	body_key(vol, ref, 0, &k);
	tree_cursor_init(&c, vol);
	rc = tree_seek_ge(&c, &k, err);
	while (!rc) {
		rc = tree_cur(&c, &it, err);
		if (rc || !obj_is_body(ref, &it.key))
			break;
		if (it.plugin_id != FMT_ITEM_CTAIL40 || it.len < 2) {
			all = 0;
			break;
		}
		if (R4_RESERVE(v, cap, n + 1, 16)) {
			rc = r4i_fail(err, -ENOMEM, "out of memory");
			break;
		}
		v[n].off = fmt_key_offset(&it.key);
		v[n].shift = it.body[0];
		v[n].units = it.len - FMT_CTAIL40_HDR_SIZE;
		n++;
		rc = tree_next(&c, err);
	}
	tree_cursor_fini(&c);
	if (rc == R4_ENOTFOUND)
		rc = 0;
	if (rc || !all || !n) {
		free(v);
		return rc ? rc : 0;
	}
	*out = v;
	*nout = n;
	return 1;
}

/* The shift most items carry (12..16); of a tie, pref (the stat data's)
 * when it is among them. 0 when no item carries a valid one. */
static unsigned best_shift(const struct ccreg_item *v, size_t n, unsigned pref)
{
	size_t cnt[FMT_CTAIL40_MAX_SHIFT + 1] = { 0 };
	unsigned best = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].shift >= FMT_CTAIL40_MIN_SHIFT &&
		    v[i].shift <= FMT_CTAIL40_MAX_SHIFT)
			cnt[v[i].shift]++;
	for (unsigned s = FMT_CTAIL40_MIN_SHIFT; s <= FMT_CTAIL40_MAX_SHIFT;
	     s++)
		if (cnt[s] > (best ? cnt[best] : 0))
			best = s;
	if (best && pref >= FMT_CTAIL40_MIN_SHIFT &&
	    pref <= FMT_CTAIL40_MAX_SHIFT && cnt[pref] == cnt[best])
		best = pref;
	return best;
}

/* Whether a loaded disk cluster is a packed one: its last four bytes
 * are the Adler-32 of the others (doc/compress.md §3.2). */
static int looks_packed(const uint8_t *dc, size_t len)
{
	const uint8_t *t;

	if (len <= FMT_DC_SUM_SIZE)
		return 0;
	t = dc + len - FMT_DC_SUM_SIZE;
	return fmt_adler32(dc, len - FMT_DC_SUM_SIZE) ==
	       ((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
		(uint32_t)t[3] << 24);
}

/* Clusters (indices, ascending, distinct) the items fall in. */
static uint64_t *clusters_of(const struct ccreg_item *v, size_t n,
			     unsigned shift, size_t *ncl)
{
	uint64_t *cl = malloc(n * sizeof(*cl));
	size_t k = 0;

	if (!cl)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t idx = v[i].off >> shift;

		if (!k || cl[k - 1] != idx)
			cl[k++] = idx;
	}
	*ncl = k;
	return cl;
}

/* Packed clusters that compression plugin id decodes back (each to at
 * most a cluster). */
static size_t score(struct ccreg_fix *f, const struct r4_objref *ref,
		    unsigned shift, const uint64_t *cl, size_t ncl,
		    unsigned id, size_t *packed)
{
	struct r4_vol *vol = f->R->vol;
	struct r4_codec *cd = codec(f, id);
	size_t good = 0, len;

	*packed = 0;
	for (size_t i = 0; i < ncl; i++) {
		struct r4_error e = { 0, "", 0 };
		struct obj_dc dc;

		if (obj_dc_load(vol, ref, shift, cl[i], f->dc, &dc, &e) ||
		    !looks_packed(f->dc, dc.len))
			continue;
		(*packed)++;
		if (cd && !r4_codec_decompress_len(cd, f->dc, dc.len -
						   FMT_DC_SUM_SIZE, f->plain,
						   (size_t)1 << shift, &len) &&
		    len > dc.len)
			good++;
	}
	return good;
}

/* The compression plugin that reads the packed clusters back: the
 * first of pref (the stat data's, -1 none), the root's (or the
 * default) and the others that decodes the most. */
static unsigned best_compress(struct ccreg_fix *f, const struct r4_objref *ref,
			      unsigned shift, const uint64_t *cl, size_t ncl,
			      int pref)
{
	int order[5], n = 0, best = -1;
	size_t bestn = 0, packed;

	if (pref >= 0 && pref <= FMT_COMPRESS_ZSTD1)
		order[n++] = pref;
	order[n++] = f->root_member[0] >= 0 &&
		     f->root_member[0] <= FMT_COMPRESS_ZSTD1 ?
		     f->root_member[0] : FMT_COMPRESS_LZO1;
	for (int id = FMT_COMPRESS_LZO1; id <= FMT_COMPRESS_ZSTD1; id++)
		order[n++] = id;
	for (int i = 0; i < n; i++) {
		size_t g = score(f, ref, shift, cl, ncl, (unsigned)order[i],
				 &packed);

		if (best < 0 || g > bestn) {
			best = order[i];
			bestn = g;
		}
		if (g == packed)
			break;	/* every packed cluster reads */
	}
	return (unsigned)best;
}

/* The logical size of the last cluster (index last) as its bytes tell
 * it, for a file whose size gives it lsize_now: -1 when they cannot
 * tell (a packed cluster that does not read, or the cluster cannot be
 * gathered). */
static int64_t last_lsize(struct ccreg_fix *f, const struct r4_objref *ref,
			  unsigned shift, unsigned compress, uint64_t last,
			  uint64_t lsize_now)
{
	struct r4_error e = { 0, "", 0 };
	struct r4_codec *cd = codec(f, compress);
	struct obj_dc dc;
	size_t len;

	if (obj_dc_load(f->R->vol, ref, shift, last, f->dc, &dc, &e) ||
	    !dc.items)
		return -1;
	if (looks_packed(f->dc, dc.len) && cd &&
	    !r4_codec_decompress_len(cd, f->dc, dc.len - FMT_DC_SUM_SIZE,
				     f->plain, (size_t)1 << shift, &len) &&
	    len > dc.len)
		return (int64_t)len;
	/* Raw (§3.2): what the size says, or more than it says (a packed
	 * cluster is never longer than its logical size), or too short to
	 * have been packed (§4.1). Else a packed cluster that lost its
	 * checksum or stream: the bytes cannot tell. */
	if (dc.len >= lsize_now || dc.len <= FMT_DC_SUM_SIZE ||
	    dc.len < fmt_compress_min_size(compress))
		return (int64_t)dc.len;
	return -1;
}

static int cluster_reads(struct ccreg_fix *f, const struct r4_objref *ref,
			 unsigned shift, unsigned compress, uint64_t idx,
			 uint64_t size, uint64_t *blk)
{
	struct r4_error e = { 0, "", 0 };
	struct r4_codec *cd = codec(f, compress);
	struct obj_dc dc;
	size_t lsize = fmt_cluster_lsize(size, idx, shift);

	*blk = R4_CHECK_NO_BLOCK;
	if (obj_dc_load(f->R->vol, ref, shift, idx, f->dc, &dc, &e))
		return 0;
	if (dc.items)
		*blk = dc.blk;
	return dc.items && lsize && cd &&
	       !obj_dc_decode(f->R->vol, ref, cd, idx, f->dc, &dc, lsize,
			      f->plain, &e);
}

/* The cluster plugin id of a shift, the root's member or default. */
static unsigned root_or_default(const struct ccreg_fix *f, int i, unsigned dflt)
{
	return f->root_member[i] >= 0 ? (unsigned)f->root_member[i] : dflt;
}

/* A valid shift byte that is not the file's: set back (one op each).
 * 1 when any is, 0 when none, -ENOMEM. */
static int plan_shifts(struct ccreg_fix *f, const struct r4_objref *ref,
		       const struct ccreg_item *v, size_t n, unsigned shift)
{
	size_t before = f->n;

	for (size_t i = 0; i < n; i++) {
		struct ccreg_op *p;

		if (v[i].shift == shift ||
		    (v[i].shift == FMT_CTAIL40_UNPREPPED && v[i].units == 1))
			continue;
		p = op_add(f, CCREG_SHIFT, R4_CHK_CLUSTER, ref);
		if (!p)
			return -ENOMEM;
		p->val = v[i].off;
		p->shift = shift;
		p->was = v[i].shift;
	}
	return f->n > before;
}

/* A plugin set that the clusters contradict mended, or (sd NULL) a
 * stat data made, with the size the last cluster gives. */
static int plan_pset(struct ccreg_fix *f, const struct r4_objref *ref,
		     const struct obj_sd *sd, const uint64_t *cl, size_t ncl,
		     unsigned shift, unsigned compress)
{
	uint64_t last = cl[ncl - 1];
	int64_t ls = last_lsize(f, ref, shift, compress, last,
				sd ? (uint64_t)1 << shift : 0);
	struct ccreg_op *p = op_add(f, sd ? CCREG_PSET : CCREG_MKSD, sd &&
				sd->plugin == FMT_OBJ_CCREG40 ?
				R4_CHK_CLUSTER : R4_CHK_BODY, ref);

	if (!p)
		return -ENOMEM;
	p->shift = shift;
	p->compress = compress;
	p->was = sd ? sd->plugin : 0;
	/* The bytes cannot tell: a whole cluster (the next round finds it
	 * unreadable and zeroes it). */
	p->val = (last << shift) + (ls > 0 ? (uint64_t)ls :
				    (uint64_t)1 << shift);
	p->bytes = (uint64_t)ncl << shift;
	return 0;
}

/* A size the last cluster contradicts set; else every cluster that
 * cannot be read zeroed. */
static int plan_size_or_zero(struct ccreg_fix *f, const struct r4_objref *ref,
			     const struct obj_sd *sd, const uint64_t *cl,
			     size_t ncl, unsigned shift, unsigned compress)
{
	uint64_t last = cl[ncl - 1], size = sd->st.size, blk;
	uint64_t now = fmt_cluster_lsize(size, last, shift);
	int64_t ls = last_lsize(f, ref, shift, compress, last, now);
	struct ccreg_op *p;

	if (ls > 0 && (uint64_t)ls != now) {
		p = op_add(f, CCREG_SIZE, R4_CHK_CLUSTER, ref);
		if (!p)
			return -ENOMEM;
		p->val = (last << shift) + (uint64_t)ls;
		p->old = size;
		p->bytes = (uint64_t)ncl << shift;
		return 0;
	}
	for (size_t i = 0; i < ncl; i++) {
		if (cluster_reads(f, ref, shift, compress, cl[i], size, &blk))
			continue;
		p = op_add(f, CCREG_ZERO, R4_CHK_CLUSTER, ref);
		if (!p)
			return -ENOMEM;
		p->shift = shift;
		p->val = cl[i];
		p->blk = blk;
		p->lsize = fmt_cluster_lsize(size, cl[i], shift);
	}
	return 0;
}

/* Plan the mends of one file (sd NULL: it has none). */
static int plan_file(struct ccreg_fix *f, const struct r4_objref *ref,
		     const struct obj_sd *sd)
{
	struct rep *R = f->R;
	struct r4_error e = { 0, "", 0 };
	struct ccreg_item *v = NULL;
	uint64_t *cl = NULL;
	size_t n = 0, ncl = 0;
	struct obj_ccreg cc;
	int have_ccreg = 0, rc;
	unsigned shift, compress;

	if (sd && sd->plugin == FMT_OBJ_CCREG40 &&
	    !obj_ccreg_params(R->vol, ref, sd, &cc, &e))
		have_ccreg = 1;
	rc = survey(R->vol, ref, &v, &n, &e);
	if (rc <= 0)	/* not all ctail40, or unreadable: left */
		return rc == -ENOMEM ? r4i_fail(R->err, rc, "out of memory "
						"for the repair") : 0;
	rc = 0;
	shift = best_shift(v, n, have_ccreg ? cc.shift : 0);
	if (!shift && !have_ccreg)
		goto out;	/* nothing tells the cluster size */
	if (!shift)
		shift = cc.shift;
	rc = plan_shifts(f, ref, v, n, shift);
	if (rc)
		goto out;	/* shift bytes set back first */
	cl = clusters_of(v, n, shift, &ncl);
	if (!cl) {
		rc = -ENOMEM;
		goto out;
	}
	compress = best_compress(f, ref, shift, cl, ncl,
				 have_ccreg ? (int)cc.compress : -1);
	if (!sd || !have_ccreg || cc.shift != shift || cc.compress != compress)
		rc = plan_pset(f, ref, sd, cl, ncl, shift, compress);
	else
		rc = plan_size_or_zero(f, ref, sd, cl, ncl, shift, compress);
out:
	free(v);
	free(cl);
	if (rc < 0)
		return r4i_fail(R->err, -ENOMEM, "out of memory for the repair");
	return 0;
}

/* ---- making the changes ---- */

static int do_shift(struct r4_txn *x, const struct ccreg_op *p,
		    struct r4_error *err)
{
	struct tree_cursor c;
	struct tree_item it;
	struct fmt_key k;
	uint8_t *buf = NULL;
	size_t len = 0;
	unsigned level = 0;
	int rc;

	body_key(x->vol, &p->ref, p->val, &k);
	tree_cursor_init(&c, x->vol);
	rc = tree_seek_ge(&c, &k, err);
	if (!rc)
		rc = tree_cur(&c, &it, err);
	if (!rc && (!obj_is_body(&p->ref, &it.key) ||
		    fmt_key_offset(&it.key) != p->val ||
		    it.plugin_id != FMT_ITEM_CTAIL40 || !it.len))
		rc = r4i_fail(err, R4_ENOTFOUND, "object %llx: no ctail40 "
			     "item at offset %llu",
			     (unsigned long long)p->ref.oid,
			     (unsigned long long)p->val);
	if (!rc) {
		len = it.len;
		level = it.level;
		k = it.key;
		buf = malloc(len);
		if (!buf)
			rc = r4i_fail(err, -ENOMEM, "out of memory");
		else
			memcpy(buf, it.body, len);
	}
	tree_cursor_fini(&c);
	if (!rc) {
		buf[0] = (uint8_t)p->shift;
		rc = tree_replace(&x->mod, level, &k, FMT_ITEM_CTAIL40, buf,
				  len, err);
	}
	free(buf);
	return rc;
}

/* The plugin set: ccreg40, and the cluster and compression members
 * when they differ from the root's (doc/compress.md §5.1); the other
 * members kept, a compression mode no plugin has dropped. */
static void set_pset(const struct ccreg_fix *f, const struct ccreg_op *p,
		     struct fmt_stat *st, int keep)
{
	struct fmt_pset old = st->pset, *ps = &st->pset;
	unsigned cid = (unsigned)fmt_cluster_id_of_shift(p->shift);

	ps->count = 0;
	for (unsigned m = 0; m < FMT_PSET_COUNT; m++) {
		int v = keep ? obj_pset_find(&old, m) : -1;

		if (m == FMT_PSET_FILE)
			v = FMT_OBJ_CCREG40;
		else if (m == FMT_PSET_COMPRESSION)
			v = p->compress != root_or_default(f, 0,
				FMT_COMPRESS_LZO1) ? (int)p->compress : -1;
		else if (m == FMT_PSET_CLUSTER)
			v = cid != root_or_default(f, 2, FMT_CLUSTER_64K) ?
			    (int)cid : -1;
		else if (m == FMT_PSET_CMODE && v > FMT_CMODE_CONV)
			v = -1;
		if (v < 0 || ps->count >= FMT_PSET_MAX_SLOTS)
			continue;
		ps->member[ps->count] = (uint16_t)m;
		ps->id[ps->count++] = (uint16_t)v;
	}
	st->mask |= 1u << FMT_SDEXT_PSET;
}

static int do_sd(struct ccreg_fix *f, struct r4_txn *x,
		 const struct ccreg_op *p, struct r4_error *err)
{
	struct obj_sd sd;
	struct fmt_stat st;
	int rc;

	if (p->kind == CCREG_MKSD) {
		memset(&st, 0, sizeof(st));
		st.mask = (1u << FMT_SDEXT_LW) | (1u << FMT_SDEXT_UNIX);
		st.mode = S_IFREG | 0644;
		st.size = p->val;
		st.rdev_or_bytes = p->bytes;
		st.atime = st.mtime = st.ctime = x->now;
		set_pset(f, p, &st, 0);
		rc = obj_sd_write(x, &p->ref, &st, 1, err);
		if (!rc)
			txn_add_files(x->t, 1);
		return rc;
	}
	rc = obj_sd_get(x->vol, &p->ref, &sd, err);
	if (rc)
		return rc;
	if (p->kind == CCREG_PSET) {
		set_pset(f, p, &sd.st, 1);
	} else if (p->kind == CCREG_SIZE) {
		sd.st.size = p->val;
		sd.st.rdev_or_bytes = p->bytes;
	} else {
		uint64_t cs = (uint64_t)1 << p->shift;

		sd.st.rdev_or_bytes = sd.st.rdev_or_bytes > cs ?
				      sd.st.rdev_or_bytes - cs : 0;
	}
	rc = obj_sd_write(x, &p->ref, &sd.st, 0, err);
	obj_sd_put(&sd);
	return rc;
}

/* The items of cluster p->val go; the stat data's bytes with them. */
static int do_zero(struct ccreg_fix *f, struct r4_txn *x,
		   const struct ccreg_op *p, struct r4_error *err)
{
	uint64_t start = p->val << p->shift, ncl;
	int had, rc = obj_ccreg_cut(x, &p->ref, p->shift, start,
				 start + ((uint64_t)1 << p->shift), UINT64_MAX,
				 &ncl, &had, err);

	return rc ? rc : do_sd(f, x, p, err);
}

static int do_op(struct ccreg_fix *f, struct r4_txn *x,
		 const struct ccreg_op *p, struct r4_error *err)
{
	switch (p->kind) {
	case CCREG_SHIFT:
		return do_shift(x, p, err);
	case CCREG_ZERO:
		return do_zero(f, x, p, err);
	default:
		return do_sd(f, x, p, err);
	}
}

static const char *cname(unsigned id)
{
	const char *s = fmt_plugin_name(FMT_PT_COMPRESS, id);

	return s ? s : "?";
}

static void report_op(struct rep *R, const struct ccreg_op *p)
{
	unsigned long long oid = (unsigned long long)p->ref.oid;
	uint64_t from = p->val << p->shift;

	switch (p->kind) {
	case CCREG_SHIFT:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->ref.oid, 0, 0,
			   "compressed file %llx: the ctail40 item at offset "
			   "%llu has cluster shift %u, the file's other items "
			   "%u: set to %u", oid, (unsigned long long)p->val,
			   p->was, p->shift, p->shift);
		break;
	case CCREG_MKSD:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->ref.oid, 0, 0,
			   "object %llx: its stat data was lost; made anew "
			   "for its compressed body (ccreg40, %u-byte "
			   "clusters, %s, size %llu, mode 0644)", oid,
			   1u << p->shift, cname(p->compress),
			   (unsigned long long)p->val);
		break;
	case CCREG_PSET:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->ref.oid, 0, 0,
			   "compressed file %llx: plugin set mended from its "
			   "clusters: ccreg40 (was %s), %u-byte clusters, %s",
			   oid, fmt_object_name(p->was) ?
			   fmt_object_name(p->was) : "unknown",
			   1u << p->shift, cname(p->compress));
		break;
	case CCREG_SIZE:
		rep_action(R, p->code, R4_CHECK_NO_BLOCK, p->ref.oid, 0, 0,
			   "compressed file %llx: size set to %llu (was %llu),"
			   " where its last cluster's bytes end (no byte "
			   "lost)", oid, (unsigned long long)p->val,
			   (unsigned long long)p->old);
		break;
	default:
		if (!p->lsize) {
			rep_action(R, p->code, p->blk, p->ref.oid, 0, 0,
				   "compressed file %llx, cluster %llu "
				   "(tree node %llu), past the end of the "
				   "file and unreadable: its ctail40 items "
				   "removed", oid,
				   (unsigned long long)p->val,
				   (unsigned long long)p->blk);
			break;
		}
		rep_action(R, p->code, p->blk, p->ref.oid, R4_LOSS_ZEROED,
			   p->lsize, "compressed file %llx, cluster %llu "
			   "(tree node %llu) unreadable: its ctail40 items "
			   "removed, bytes %llu..%llu now read as zeros", oid,
			   (unsigned long long)p->val,
			   (unsigned long long)p->blk,
			   (unsigned long long)from,
			   (unsigned long long)(from + p->lsize - 1));
		break;
	}
}

static int run_batch(struct ccreg_fix *f, size_t a, size_t b,
		     struct r4_error *err)
{
	struct rep *R = f->R;
	struct r4_txn *x;
	int rc = r4_txn_begin(R->vol, &x, err);

	for (size_t i = a; i < b && !rc; i++)
		rc = do_op(f, x, &f->v[i], err);
	if (rc) {
		if (x)
			r4_txn_abort(x);
		return rc;
	}
	rc = r4_txn_commit(x, err);
	if (rc)
		return rc;
	R->r->transactions++;
	for (size_t i = a; i < b; i++)
		report_op(R, &f->v[i]);
	return 0;
}

static int batch_of(void *ctx, size_t a, size_t b, struct r4_error *err)
{
	return run_batch(ctx, a, b, err);
}

static void who_of(void *ctx, size_t i, int *code, uint64_t *oid)
{
	const struct ccreg_fix *f = ctx;

	*code = f->v[i].code;
	*oid = f->v[i].ref.oid;
}

static int run_ops(struct ccreg_fix *f, int *changed)
{
	return rep_batches(f->R, f->n, batch_of, who_of, f, changed);
}

/* The files to look at: bodies of ctail40 items only, without stat
 * data (under an object id no other object has, without band bits),
 * or of a regular file whose plugin is not ccreg40 or whose clusters
 * do not all read. */
static int plan(struct ccreg_fix *f)
{
	struct rep *R = f->R;
	struct chk *c = &R->c;
	struct chk_oid *byoid = chk_oid_index(c);
	int rc = 0;

	if (!byoid)
		return r4i_fail(R->err, -ENOMEM, "out of memory for the "
				"repair");
	for (size_t i = 0; i < c->nbodies && !rc; i++) {
		const struct chk_body *b = &c->bodies[i];
		struct fmt_key k = { { b->el0, b->el1, b->el2, 0 } };
		uint32_t o = chk_obj_find(c, b->el0, b->el1, b->el2);
		struct r4_error e = { 0, "", 0 };
		struct r4_objref ref;
		struct obj_sd sd;

		if (b->kinds != CHK_BODY_CTAIL)
			continue;
		obj_ref_from_key(&k, &ref);
		if (o == CHK_NONE) {
			if (!(b->el2 & ~CHK_OID_MASK) &&
			    chk_oid_find(c, byoid, b->el2 & CHK_OID_MASK) ==
			    CHK_NONE)
				rc = plan_file(f, &ref, NULL);
			continue;
		}
		if (!(c->objs[o].flags & CHK_OBJ_LW) ||
		    (c->objs[o].mode & MODE_FMT) != MODE_REG ||
		    obj_sd_get(R->vol, &ref, &sd, &e))
			continue;
		if (sd.plugin != FMT_OBJ_CCREG40 ||
		    obj_ccreg_verify(R->vol, &ref, &sd, NULL, &e))
			rc = e.code == -ENOMEM ?
			     r4i_fail(R->err, e.code, "out of memory") :
			     plan_file(f, &ref, &sd);
		obj_sd_put(&sd);
	}
	free(byoid);
	return rc;
}

int rep_fix_ccreg(struct rep *R, int *changed)
{
	static const unsigned memb[3] = {
		FMT_PSET_COMPRESSION, FMT_PSET_CMODE, FMT_PSET_CLUSTER
	};
	struct r4_objref root = { FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID };
	struct ccreg_fix f = { .R = R };
	struct r4_error e = { 0, "", 0 };
	struct obj_sd rsd;
	int rc;

	*changed = 0;
	if (!R->codes[R4_CHK_CLUSTER] && !R->codes[R4_CHK_BODY])
		return 0;
	for (int i = 0; i < 3; i++)
		f.root_member[i] = -1;
	if (!obj_sd_get(R->vol, &root, &rsd, &e)) {
		for (int i = 0; i < 3; i++)
			f.root_member[i] = obj_pset_find(&rsd.st.pset,
							 memb[i]);
		obj_sd_put(&rsd);
	}
	f.dc = malloc(FMT_CLUSTER_MAX);
	f.plain = malloc(FMT_CLUSTER_MAX);
	if (!f.dc || !f.plain)
		rc = r4i_fail(R->err, -ENOMEM, "out of memory for the repair");
	else
		rc = plan(&f);
	if (!rc)
		rc = run_ops(&f, changed);
	for (unsigned i = 0; i <= FMT_COMPRESS_ZSTD1; i++)
		r4_codec_free(f.codec[i]);
	free(f.dc);
	free(f.plain);
	free(f.v);
	return rc;
}
