/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: new regular files inside a transaction stored as the kernel
 * stores them: the file plugin and the cluster parameters from the
 * parent directory and the root (doc/compress.md §5, §5.1), a ccreg40
 * body cut into ctail40 items by the shared cluster encoder
 * (libimage/obj/ccenc.c), conv's fallback to an ordinary body. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/write.h"
#include "libimage/obj/ccenc.h"
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

int obj_new_plan(struct r4_txn *x, const struct r4_objref *dir,
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
	/* doc/compress.md §5.1: the create plugin */
	v = dir_member(&dsd, have_root ? &rsd : NULL, FMT_PSET_CREATE);
	if (x->prof_set & (1u << R4_PT_CREATE))
		v = x->prof[R4_PT_CREATE];
	p->cc = v == FMT_OBJ_CCREG40;
	if (v >= 0 && v != FMT_OBJ_CCREG40 && v != FMT_OBJ_REG40)
		rc = r4i_fail(err, R4_EUNSUPP, "%s: the create plugin %d of "
			     "directory %llx is not a regular file plugin",
			     obj_vol_name(x->vol), v,
			     (unsigned long long)dir->oid);
	for (size_t i = 0; !rc && i < PLAN_N; i++) {
		const struct obj_sd *r0 = have_root ? &rsd : &dsd;
		int rv = obj_pset_find(&r0->st.pset, plan_memb[i].memb);
		unsigned val;

		v = dir_member(&dsd, have_root ? &rsd : NULL,
			       plan_memb[i].memb);
		if (x->prof_set & (1u << plan_memb[i].pt))
			v = x->prof[plan_memb[i].pt];
		val = v >= 0 ? (unsigned)v : plan_memb[i].dflt;
		p->v[i] = val;
		/* stored when it differs from the root's */
		if (val != (rv >= 0 ? (unsigned)rv : plan_memb[i].dflt))
			p->own |= 1u << i;
	}
	if (have_root)
		obj_sd_put(&rsd);
	obj_sd_put(&dsd);
	if (rc || !p->cc)
		return rc;
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

struct ccsink {
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
	struct ccsink *s = sctx;
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
	if (obj_ccenc_is(x->cc, p->shift, p->compress, p->cmode))
		return 0;
	obj_ccenc_free(x->cc);
	x->cc = NULL;
	return obj_ccenc_new(p->shift, p->compress, p->cmode, &x->cc, err);
}

int obj_cc_body_write(struct r4_txn *x, const struct r4_objref *ref,
		      const struct obj_new_plan *p, uint64_t size,
		      r4_data_fn fn, void *ctx, const char *path,
		      uint64_t *bytes, int *converted, struct r4_error *err)
{
	struct ccsink s = { x, ref, p->shift, NULL, 0, 0 };
	struct obj_ccrd r;
	int keep = 1, rc;

	*bytes = 0;
	*converted = 0;
	if (!size)
		return enc_data_empty(fn, ctx, path, err);
	rc = txn_encoder(x, p, err);
	if (rc)
		return rc;
	obj_ccrd_init(&r, fn, ctx, path, size);
	rc = obj_ccenc_conv_first(x->cc, &r, &keep, err);
	if (rc)
		return rc;
	if (!keep) {
		struct obj_ccrefeed f;

		/* doc/compress.md §4.4: an ordinary file for good */
		obj_ccrefeed_init(&f, x->cc, &r);
		*converted = 1;
		return obj_body_write(x, ref, size, obj_ccrefeed_fn, &f, path,
				      bytes, err);
	}
	s.max = tree_max_item(&x->mod);
	s.item = malloc(s.max);
	if (!s.item)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = obj_ccenc_file(x->cc, &r, obj_ccenc_c0_done(x->cc, size),
			    sink_items, &s, err);
	if (!rc)
		rc = obj_ccrd_finish(&r, err);
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

	if (!rc && p.cc)
		rc = obj_cc_body_write(x, ref, &p, size, fn, ctx, path,
				       &bytes, &conv, err);
	else if (!rc)
		rc = obj_body_write(x, ref, size, fn, ctx, path, &bytes, err);
	st->size = size;
	st->rdev_or_bytes = bytes;
	if (!rc && p.cc && !conv)
		obj_new_plan_pset(&p, st);
	return rc;
}
