/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: new regular files inside a transaction stored as the kernel
 * stores them: the file plugin and the cluster parameters from the
 * parent directory and the root (doc/compress.md §5, §5.1), a ccreg40
 * body cut into ctail40 items by the shared cluster encoder
 * (libimage/obj/ccreg_encode.c), conv's fallback to an ordinary body. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/write.h"
#include "libimage/obj/ccreg_encode.h"
#include "libimage/obj/ccreg.h"
#include "libimage/obj/encode.h"
#include "libimage/util/err.h"
#include "libimage/tree/tree.h"
#include "format/cluster.h"
#include "format/plugin.h"

/* The plan members: R4_PT_* and the plugin-set member it is. */
static const struct {
	unsigned pt, memb, dflt;
} plan_memb[] = {
	{ R4_PT_COMPRESS, FMT_PSET_COMPRESSION, FMT_COMPRESS_LZO1 },
	{ R4_PT_CMODE, FMT_PSET_CMODE, FMT_CMODE_CONV },
	{ R4_PT_CLUSTER, FMT_PSET_CLUSTER, FMT_CLUSTER_64K },
};
#define PLAN_N (sizeof(plan_memb) / sizeof(plan_memb[0]))

/* The member m of a directory as the kernel sees it for a new child:
 * its heir set, its plugin set, then the root's (filled in when the
 * directory was loaded), -1 if none names it. */
static int dir_member(const struct obj_sd *dsd, const struct obj_sd *rsd,
		      unsigned m)
{
	int v = obj_pset_find(&dsd->st.hset, m);

	if (v < 0)
		v = obj_pset_find(&dsd->st.pset, m);
	if (v < 0 && rsd)
		v = obj_pset_find(&rsd->st.pset, m);
	return v;
}

static int pset_same(const struct fmt_pset *a, const struct fmt_pset *b)
{
	if (a->count != b->count || a->count > FMT_PSET_MAX_SLOTS)
		return 0;
	for (unsigned i = 0; i < a->count; i++)
		if (a->member[i] != b->member[i] || a->id[i] != b->id[i])
			return 0;
	return 1;
}

void obj_new_plan_sd(struct r4_txn *x, uint64_t oid,
		     const struct fmt_stat *st)
{
	if (!x->plan_ok)
		return;
	if (oid == x->plan_dir && (!st || !pset_same(&st->hset, &x->plan_dh) ||
				   !pset_same(&st->pset, &x->plan_dp)))
		x->plan_ok = 0;
	if (oid == FMT_ROOT_OID && (!st || !pset_same(&st->pset,
						      &x->plan_rp)))
		x->plan_ok = 0;
}

static int plan_make(struct r4_txn *x, const struct r4_objref *dir,
		     struct obj_new_plan *p, struct r4_error *err);

/* The plan of the last new file's directory again (a batch of files
 * into one directory reads its stat data and the root's once). */
int obj_new_plan(struct r4_txn *x, const struct r4_objref *dir,
		 struct obj_new_plan *p, struct r4_error *err)
{
	int rc;

	if (x->plan_ok && x->plan_dir == dir->oid) {
		*p = x->plan;
		return 0;
	}
	x->plan_ok = 0;
	rc = plan_make(x, dir, p, err);
	if (!rc) {
		x->plan = *p;
		x->plan_dir = dir->oid;
		x->plan_ok = 1;
	}
	return rc;
}

/* The members of plan_memb[] for a new file in the directory of stat
 * data dsd (rsd: the root's, NULL when dsd is the root's): each from the
 * profile, else the directory, else the root, else the default; 'own'
 * marks those that differ from the root's. */
static void plan_members(const struct r4_txn *x, const struct obj_sd *dsd,
			 const struct obj_sd *rsd, struct obj_new_plan *p)
{
	const struct obj_sd *r0 = rsd ? rsd : dsd;

	for (size_t i = 0; i < PLAN_N; i++) {
		int rv = obj_pset_find(&r0->st.pset, plan_memb[i].memb);
		int v = dir_member(dsd, rsd, plan_memb[i].memb);
		unsigned val;

		if (x->prof_set & (1u << plan_memb[i].pt))
			v = x->prof[plan_memb[i].pt];
		val = v >= 0 ? (unsigned)v : plan_memb[i].dflt;
		p->v[i] = val;
		/* stored when it differs from the root's */
		if (val != (rv >= 0 ? (unsigned)rv : plan_memb[i].dflt))
			p->own |= 1u << i;
	}
}

/* A new compressed file's cluster, compression and mode from the plan's
 * members; an error when one is unknown. */
static int plan_ccreg(const struct r4_txn *x, const struct r4_objref *dir,
		      struct obj_new_plan *p, struct r4_error *err)
{
	p->shift = fmt_cluster_shift_of(p->v[2]);
	p->compress = p->v[0];
	p->cmode = p->v[1];
	if (!p->shift || p->compress > FMT_COMPRESS_ZSTD1 ||
	    p->cmode > FMT_CMODE_CONV)
		return r4i_fail(err, R4_EUNSUPP, "%s: directory %llx: unknown "
			       "cluster (%u), compression (%u) or compression"
			       " mode (%u) plugin for a new compressed file",
			       obj_vol_name(x->vol),
			       (unsigned long long)dir->oid, p->v[2],
			       p->v[0], p->v[1]);
	return 0;
}

static int plan_make(struct r4_txn *x, const struct r4_objref *dir,
		     struct obj_new_plan *p, struct r4_error *err)
{
	struct r4_objref root = { FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID };
	struct obj_sd dsd, rsd;
	int rc, v, have_root = 0;

	memset(p, 0, sizeof(*p));
	rc = obj_sd_get(x->vol, dir, &dsd, err);
	if (rc)
		return rc;
	if (dir->oid != FMT_ROOT_OID) {
		rc = obj_sd_get(x->vol, &root, &rsd, err);
		if (rc) {
			obj_sd_put(&dsd);
			return rc;
		}
		have_root = 1;
	}
	x->plan_dh = dsd.st.hset;
	x->plan_dp = dsd.st.pset;
	x->plan_rp = have_root ? rsd.st.pset : dsd.st.pset;
	/* doc/compress.md §5.1: the create plugin */
	v = dir_member(&dsd, have_root ? &rsd : NULL, FMT_PSET_CREATE);
	if (x->prof_set & (1u << R4_PT_CREATE))
		v = x->prof[R4_PT_CREATE];
	p->ccreg = v == FMT_OBJ_CCREG40;
	if (v >= 0 && v != FMT_OBJ_CCREG40 && v != FMT_OBJ_REG40)
		rc = r4i_fail(err, R4_EUNSUPP, "%s: the create plugin %d of "
			     "directory %llx is not a regular file plugin",
			     obj_vol_name(x->vol), v,
			     (unsigned long long)dir->oid);
	if (!rc)
		plan_members(x, &dsd, have_root ? &rsd : NULL, p);
	if (have_root)
		obj_sd_put(&rsd);
	obj_sd_put(&dsd);
	if (rc || !p->ccreg)
		return rc;
	return plan_ccreg(x, dir, p, err);
}

void obj_new_plan_pset(const struct obj_new_plan *p, struct fmt_stat *st)
{
	struct fmt_pset *ps = &st->pset;

	st->mask |= 1u << FMT_SDEXT_PSET;
	ps->count = 0;
	ps->member[ps->count] = FMT_PSET_FILE;
	ps->id[ps->count++] = FMT_OBJ_CCREG40;
	for (size_t i = 0; i < PLAN_N; i++)	/* ascending members */
		if (p->own & (1u << i)) {
			ps->member[ps->count] = (uint16_t)plan_memb[i].memb;
			ps->id[ps->count++] = (uint16_t)p->v[i];
		}
}

/* ---- the body -------------------------------------------------------- */

struct ccreg_sink {
	struct r4_txn *x;
	const struct r4_objref *ref;
	unsigned shift;
	uint8_t *item;		/* shift byte + data */
	size_t max;		/* largest item */
	uint64_t used;		/* disk clusters written */
};

/* doc/compress.md §3.1: a disk cluster as ctail40 items, the first at
 * the cluster start, each as long as a leaf takes. */
static int sink_items(void *sctx, uint64_t idx, const uint8_t *dc,
		      size_t len, struct r4_error *err)
{
	struct ccreg_sink *s = sctx;
	uint64_t base = idx << s->shift;
	size_t done = 0;
	int rc = 0;

	if (!len)
		return 0;	/* a hole: no items */
	s->used++;
	while (!rc && done < len) {
		size_t n = len - done;
		struct fmt_key k;

		if (n > s->max - FMT_CTAIL40_HDR_SIZE)
			n = s->max - FMT_CTAIL40_HDR_SIZE;
		s->item[0] = (uint8_t)s->shift;
		memcpy(s->item + FMT_CTAIL40_HDR_SIZE, dc + done, n);
		fmt_key_body(&k, s->ref->locality, s->ref->ordering,
			     s->ref->oid, base + done);
		rc = tree_insert(&s->x->mod, 1, &k, FMT_ITEM_CTAIL40, s->item,
				 n + FMT_CTAIL40_HDR_SIZE, err);
		done += n;
	}
	return rc;
}

static int txn_encoder(struct r4_txn *x, const struct obj_new_plan *p,
		       struct r4_error *err)
{
	if (obj_ccreg_enc_is(x->ccreg, p->shift, p->compress, p->cmode))
		return 0;
	obj_ccreg_enc_free(x->ccreg);
	x->ccreg = NULL;
	return obj_ccreg_enc_new(p->shift, p->compress, p->cmode, &x->ccreg, err);
}

int obj_ccreg_body_write(struct r4_txn *x, const struct r4_objref *ref,
		      const struct obj_new_plan *p, uint64_t size,
		      r4_data_fn fn, void *ctx, const char *path,
		      uint64_t *bytes, int *converted, struct r4_error *err)
{
	struct ccreg_sink s = { x, ref, p->shift, NULL, 0, 0 };
	struct obj_ccreg_rd r;
	int keep = 1, rc;

	*bytes = 0;
	*converted = 0;
	if (!size)
		return enc_data_empty(fn, ctx, path, err);
	rc = txn_encoder(x, p, err);
	if (rc)
		return rc;
	obj_ccreg_rd_init(&r, fn, ctx, path, size);
	rc = obj_ccreg_enc_conv_first(x->ccreg, &r, &keep, err);
	if (rc)
		return rc;
	if (!keep) {
		struct obj_ccreg_refeed f;

		/* doc/compress.md §4.4: an ordinary file for good */
		obj_ccreg_refeed_init(&f, x->ccreg, &r);
		*converted = 1;
		return obj_body_write(x, ref, size, obj_ccreg_refeed_fn, &f, path,
				      bytes, err);
	}
	s.max = tree_max_item(&x->mod);
	s.item = malloc(s.max);
	if (!s.item)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = obj_ccreg_enc_file(x->ccreg, &r, 0, obj_ccreg_enc_c0_done(x->ccreg, size),
			    sink_items, &s, err);
	if (!rc)
		rc = obj_ccreg_rd_finish(&r, err);
	free(s.item);
	*bytes = s.used << p->shift;	/* doc/compress.md §2.3 */
	return rc;
}

int obj_new_file_body(struct r4_txn *x, const struct r4_objref *dir,
		      const struct r4_objref *ref, uint64_t size,
		      r4_data_fn fn, void *ctx, const char *path,
		      struct fmt_stat *st, struct r4_error *err)
{
	struct obj_new_plan p;
	uint64_t bytes = 0;
	int conv = 0, rc = obj_new_plan(x, dir, &p, err);

	if (!rc && p.ccreg)
		rc = obj_ccreg_body_write(x, ref, &p, size, fn, ctx, path,
				       &bytes, &conv, err);
	else if (!rc)
		rc = obj_body_write(x, ref, size, fn, ctx, path, &bytes, err);
	st->size = size;
	st->rdev_or_bytes = bytes;
	if (!rc && p.ccreg && !conv) {
		obj_plan_lattd(&p, size);
		obj_new_plan_pset(&p, st);
	}
	return rc;
}

void obj_plan_lattd(struct obj_new_plan *p, uint64_t size)
{
	/* v[1], own bit 1: compressMode (plan_memb) */
	if (p->cmode != FMT_CMODE_CONV || size <= (1ull << p->shift))
		return;
	p->cmode = p->v[1] = FMT_CMODE_LATTD;
	p->own |= 1u << 1;
}

/* ---- truncate --------------------------------------------------------- */

int obj_ccreg_cut(struct r4_txn *x, const struct r4_objref *ref,
	       unsigned shift, uint64_t from, uint64_t to, uint64_t hidx,
	       uint64_t *ncl, int *had, struct r4_error *err)
{
	uint64_t last = UINT64_MAX;
	int rc = 0;

	*ncl = 0;
	*had = 0;
	for (;;) {
		struct tree_cursor c;
		struct tree_item it;
		struct fmt_key k;
		unsigned level = 0;
		uint64_t off = 0;
		int found = 0;

		fmt_key_body(&k, ref->locality, ref->ordering, ref->oid, from);
		tree_cursor_init(&c, x->vol);
		rc = tree_seek_ge(&c, &k, err);
		if (!rc)
			rc = tree_cur(&c, &it, err);
		if (!rc && obj_is_body(ref, &it.key) &&
		    fmt_key_offset(&it.key) < to) {
			if (it.plugin_id != FMT_ITEM_CTAIL40)
				rc = r4i_fail(err, R4_ECORRUPT, "%s: tree node "
					     "%llu, item %u: item plugin %u in "
					     "the body of a compressed file",
					     obj_vol_name(x->vol),
					     (unsigned long long)it.blk,
					     it.pos, it.plugin_id);
			found = 1;
			k = it.key;
			level = it.level;
			off = fmt_key_offset(&it.key);
		}
		tree_cursor_fini(&c);
		if (rc == R4_ENOTFOUND)
			rc = 0;
		if (rc || !found)
			return rc;
		if (off >> shift != last) {
			last = off >> shift;
			(*ncl)++;
			if (last == hidx)
				*had = 1;
		}
		rc = tree_delete(&x->mod, level, &k, err);
		if (rc)
			return rc;
	}
}

struct memchunk {
	const uint8_t *buf;
	uint64_t off;
	size_t len;
	int done;
};

static int memchunk_fn(void *ctx, uint64_t *off, const void **buf,
		       size_t *len, struct r4_error *err)
{
	struct memchunk *m = ctx;

	(void)err;
	if (m->done || !m->len)
		return 0;
	m->done = 1;
	*off = m->off;
	*buf = m->buf;
	*len = m->len;
	return 1;
}

/* doc/compress.md §4.5: clusters past the new end go; the cluster the
 * shorter of the two sizes ends in is encoded again for its new logical
 * size (a stored form depends on it, §3.2); clusters added by growing
 * are holes, without items. */
int obj_ccreg_truncate(struct r4_txn *x, const struct r4_objref *ref,
		    const struct obj_sd *sd, uint64_t size, uint64_t *bytes,
		    struct r4_error *err)
{
	struct obj_ccreg cc;
	uint64_t old = sd->st.size, keep = old < size ? old : size;
	uint64_t idx, from, ncut = 0, used = sd->st.rdev_or_bytes;
	uint8_t *buf = NULL;
	size_t part;
	int had = 0, rc = obj_ccreg_params(x->vol, ref, sd, &cc, err);

	if (rc)
		return rc;
	idx = keep >> cc.shift;
	part = (size_t)(keep & (((uint64_t)1 << cc.shift) - 1));
	from = part ? idx << cc.shift : keep;
	if (part) {
		buf = malloc(part);
		if (!buf)
			return r4i_fail(err, -ENOMEM, "out of memory");
		rc = obj_ccreg_read(x->vol, ref, sd, idx << cc.shift, buf, part,
				 err);
	}
	if (!rc)
		rc = obj_ccreg_cut(x, ref, cc.shift, from, UINT64_MAX,
				part ? idx : UINT64_MAX, &ncut, &had, err);
	used >>= cc.shift;
	used = used > ncut ? used - ncut : 0;
	if (!rc && had) {
		int stored = 0;

		rc = obj_ccreg_put(x, ref, &cc, idx, buf, part,
				   fmt_cluster_lsize(size, idx, cc.shift),
				   &stored, err);
		used += (uint64_t)stored;
	}
	free(buf);
	*bytes = used << cc.shift;
	return rc;
}

int obj_ccreg_put(struct r4_txn *x, const struct r4_objref *ref,
		  const struct obj_ccreg *cc, uint64_t idx, const uint8_t *buf,
		  size_t blen, size_t lsize, int *stored, struct r4_error *err)
{
	struct ccreg_sink s = { x, ref, cc->shift, NULL, 0, 0 };
	struct memchunk m = { buf, idx << cc->shift, blen, 0 };
	struct obj_new_plan p;
	struct obj_ccreg_rd r;
	int rc;

	memset(&p, 0, sizeof(p));
	p.ccreg = 1;
	p.shift = cc->shift;
	p.compress = cc->compress;
	p.cmode = cc->cmode;
	*stored = 0;
	rc = txn_encoder(x, &p, err);
	s.max = tree_max_item(&x->mod);
	s.item = malloc(s.max);
	if (!rc && !s.item)
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	obj_ccreg_rd_init(&r, memchunk_fn, &m, "cluster",
			  (idx << cc->shift) + lsize);
	if (!rc)
		rc = obj_ccreg_enc_file(x->ccreg, &r, idx, 0, sink_items, &s,
					err);
	free(s.item);
	*stored = s.used != 0;
	return rc;
}
