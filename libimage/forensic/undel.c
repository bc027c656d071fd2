/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_undel: what survives of a deleted object, read back. */
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

/* ---- undel --------------------------------------------------------------- */

struct undel_ctx {
	struct r4_vol *vol;
	r4_undel_data_fn data;
	void *ctx;
	uint8_t *buf;
	struct ranges got;
	struct r4_error *err;
};

static int undel_run(void *ctx, const struct fpiece *p, uint64_t off,
		     uint64_t end, uint64_t blk)
{
	struct undel_ctx *u = ctx;
	size_t boff, blen;
	int rc;

	if (p->tail) {
		/* The node is read again and verified as at scan time. */
		rc = fsc_read_copy(u->vol, p->blk, p->raw, u->buf, u->err);
		if (rc)
			return rc;
		if (fmt_node_verify(u->buf, u->vol->blksize, u->vol->keypol,
				    NULL) ||
		    p->boff > u->vol->blksize ||
		    end - off > u->vol->blksize - p->boff)
			return 0;
		boff = p->boff;
		blen = (size_t)(end - off);
		rc = u->data(u->ctx, off, u->buf + boff, blen);
	} else if (!blk) {
		rc = 0;		/* a hole: zeros */
	} else {
		rc = r4_vol_read_block(u->vol, blk, u->buf, u->err);
		if (!rc)
			rc = u->data(u->ctx, off, u->buf, (size_t)(end - off));
	}
	return rc ? rc : fsc_ranges_add(&u->got, off, end);
}

static int undel_cluster(void *ctx, uint64_t off, const uint8_t *buf,
			 size_t len)
{
	struct undel_ctx *u = ctx;
	int rc = u->data(u->ctx, off, buf, len);

	return rc ? rc : fsc_ranges_add(&u->got, off, off + len);
}

/* The surviving bytes of the object of stat data s->sd[i] (described in
 * d) to u's data, then the ranges nothing covers to missing. */
static int undel_one(struct r4_vol *vol, struct fscan *s, size_t i,
		     const struct r4_deleted *d, struct undel_ctx *u,
		     r4_undel_gap_fn missing, struct r4_error *err)
{
	uint64_t oid = s->sd[i].oid, at = 0;
	int rc = 0;

	u->got.n = 0;
	for (size_t k = 0; k < s->npc && !rc; k++)
		if (s->pc[k].oid == oid && s->pc[k].ord == s->sd[i].ord &&
		    !s->pc[k].ctail)
			rc = fsc_piece_runs(vol, &s->pc[k], d->st.size,
					    undel_run, u, err);
	if (!rc)
		rc = fsc_ccreg_recover(vol, s, &s->sd[i], undel_cluster, u,
				       NULL, NULL, err);
	if (rc) {
		if (rc == -ENOMEM || !err->code)
			rc = r4i_fail(err, rc, "%s: object %llu: cannot write "
				     "what survives", vol->dev->path,
				     (unsigned long long)oid);
		return rc;
	}
	fsc_ranges_merge(&u->got);
	for (size_t k = 0; k < u->got.n && !rc; k++) {
		if (u->got.v[k].off > at && missing)
			rc = missing(u->ctx, at, u->got.v[k].off - at);
		at = u->got.v[k].end;
	}
	if (!rc && at < d->st.size && missing)
		rc = missing(u->ctx, at, d->st.size - at);
	return rc;
}

static int undel_go(struct r4_vol *vol, struct fscan *s, uint64_t oid,
		    struct r4_deleted *out, struct undel_ctx *u,
		    r4_undel_gap_fn missing, struct r4_error *err)
{
	struct r4_deleted d;
	int rc;

	s->only_oid = oid;
	rc = fsc_scan_volume(vol, s, err);
	if (rc)
		return rc;
	if (!s->nsd)
		return r4i_fail(err, R4_ENOTFOUND, "%s: no stat data of object "
			       "%llu survives in a free block", vol->dev->path,
			       (unsigned long long)oid);
	fsc_sort_scan(s);
	rc = fsc_is_live(vol, &s->sd[0], err);
	if (rc < 0)
		return rc;
	if (rc)
		return r4i_fail(err, R4_EEXIST, "%s: object %llu is still in "
			       "the tree", vol->dev->path,
			       (unsigned long long)oid);
	rc = fsc_describe(vol, s, 0, &d, err);
	if (rc)
		return rc;
	if (out)
		*out = d;
	return undel_one(vol, s, 0, &d, u, missing, err);
}

/* An orphan's body through the tree: R4_ENOTFOUND when oid is not an
 * orphan. */
static int undel_orphan(struct r4_vol *vol, uint64_t oid,
			struct r4_deleted *out, r4_undel_data_fn data,
			r4_undel_gap_fn missing, void *ctx,
			struct r4_error *err)
{
	struct orphans o = { 0 };
	struct r4_deleted d;
	struct r4_objref ref;
	uint8_t *buf = NULL;
	uint64_t off = 0;
	size_t got;
	int rc;

	o.only_oid = oid;
	rc = fsc_orphans_find(vol, &o, err);
	if (rc && rc != -ENOMEM) {
		/* a tree we cannot walk: look in free blocks only */
		r4i_error_clear(err);
		rc = R4_ENOTFOUND;
	}
	if (!rc && !o.n)
		rc = R4_ENOTFOUND;
	else if (!rc && r4_u64map_find(&o.named, oid))
		rc = r4i_fail(err, R4_EEXIST, "%s: object %llu is still in "
			      "the tree", vol->dev->path,
			      (unsigned long long)oid);
	if (!rc)
		rc = fsc_orphan_describe(vol, &o, &o.v[0], NULL, &d, err);
	if (!rc && out)
		*out = d;
	ref = (struct r4_objref){ o.v ? o.v[0].loc : 0, o.v ? o.v[0].ord : 0,
				  oid };
	if (!rc && data && S_ISREG(d.st.mode) && !(buf = malloc(1u << 20)))
		rc = r4i_fail(err, -ENOMEM, "%s: out of memory",
			      vol->dev->path);
	while (!rc && buf && off < d.st.size) {
		rc = r4_read(vol, &ref, off, buf, 1u << 20, &got, err);
		if (rc || !got)
			break;
		rc = data(ctx, off, buf, got);
		off += got;
	}
	if (!rc && data && off < d.st.size && missing && S_ISREG(d.st.mode))
		rc = missing(ctx, off, d.st.size - off);
	free(buf);
	fsc_orphans_fini(&o);
	return rc;
}

int r4_undel(struct r4_vol *vol, uint64_t oid, struct r4_deleted *out,
	     r4_undel_data_fn data, r4_undel_gap_fn missing, void *ctx,
	     struct r4_error *err)
{
	struct fscan s = { 0 };
	struct undel_ctx u = { vol, data, ctx, NULL, { 0 }, err };
	int rc;

	if (!oid)
		return r4i_fail(err, R4_EINVAL, "object id 0");
	rc = undel_orphan(vol, oid, out, data, missing, ctx, err);
	if (rc != R4_ENOTFOUND)
		return rc;
	u.buf = malloc(vol->blksize);
	if (!u.buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	rc = undel_go(vol, &s, oid, out, &u, missing, err);
	free(u.buf);
	free(u.got.v);
	fsc_scan_free(&s);
	return rc;
}

/* ---- undel --all --------------------------------------------------------- */

struct all_orphans {
	uint64_t *oid;
	size_t n, cap;
};

static int note_orphan(void *ctx, const struct r4_deleted *d)
{
	struct all_orphans *o = ctx;

	if (!d->orphan)
		return 0;
	if (R4_RESERVE(o->oid, o->cap, o->n + 1, 64))
		return -ENOMEM;
	o->oid[o->n++] = d->st.oid;
	return 0;
}

/* One deleted object of the scan: its stat data's index and what
 * describes it (found once, for the plan and the recovery). */
struct dead {
	size_t i;
	struct r4_deleted d;
};

/* The deleted objects of the scan in s (stat data in free blocks, not
 * in the tree), each described once, into *out. */
static int all_dead(struct r4_vol *vol, struct fscan *s, struct dead **out,
		    size_t *n, struct r4_error *err)
{
	size_t cap = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; !rc && i < s->nsd; i++) {
		if (i && s->sd[i].oid == s->sd[i - 1].oid)
			continue;	/* an older copy */
		rc = fsc_is_live(vol, &s->sd[i], err);
		if (rc) {
			rc = rc < 0 ? rc : 0;	/* > 0: still in the tree */
			continue;
		}
		if (R4_RESERVE(*out, cap, *n + 1, 64))
			return r4i_fail(err, -ENOMEM, "out of memory");
		(*out)[*n].i = i;
		rc = fsc_describe(vol, s, i, &(*out)[*n].d, err);
		*n += !rc;
	}
	return rc;
}

/* Each deleted object through f: plan for every one first, then begin,
 * its bytes and end. */
static int all_scanned(struct r4_vol *vol, struct fscan *s,
		       const struct r4_undel_all_fns *f, struct undel_ctx *u,
		       struct r4_error *err)
{
	struct dead *v;
	size_t n;
	int rc = all_dead(vol, s, &v, &n, err);

	for (size_t k = 0; !rc && f->plan && k < n; k++)
		rc = f->plan(f->ctx, &v[k].d);
	for (size_t k = 0; !rc && k < n; k++) {
		rc = f->begin(f->ctx, &v[k].d);
		if (rc > 0) {
			rc = 0;		/* not this one */
			continue;
		}
		if (!rc && S_ISREG(v[k].d.st.mode))
			rc = undel_one(vol, s, v[k].i, &v[k].d, u, f->missing,
				       err);
		rc = f->end(f->ctx, &v[k].d, rc);
	}
	free(v);
	return rc < 0 ? rc : 0;
}

int r4_undel_all(struct r4_vol *vol, const struct r4_undel_all_fns *f,
		 struct r4_error *err)
{
	struct fscan s = { 0 };
	struct undel_ctx u = { vol, f->data, f->ctx, NULL, { 0 }, err };
	struct all_orphans o = { 0 };
	struct r4_deleted d;
	int rc;

	u.buf = malloc(vol->blksize);
	if (!u.buf)
		return r4i_fail(err, -ENOMEM, "%s: out of memory",
			       vol->dev->path);
	rc = fsc_scan_volume(vol, &s, err);
	if (!rc) {
		fsc_sort_scan(&s);
		rc = fsc_orphans_report(vol, &s, note_orphan, &o, err);
	}
	if (!rc)
		rc = all_scanned(vol, &s, f, &u, err);
	/* orphans: their bodies are read through the tree */
	for (size_t k = 0; !rc && k < o.n; k++) {
		rc = undel_orphan(vol, o.oid[k], &d, NULL, NULL, NULL, err);
		if (rc && rc != -ENOMEM) {
			r4i_error_clear(err);
			rc = 0;
			continue;
		}
		if (!rc && f->plan)
			rc = f->plan(f->ctx, &d);
	}
	for (size_t k = 0; !rc && k < o.n; k++) {
		struct r4_deleted od;

		rc = undel_orphan(vol, o.oid[k], &od, NULL, NULL, NULL, err);
		if (rc) {
			r4i_error_clear(err);
			rc = 0;
			continue;
		}
		rc = f->begin(f->ctx, &od);
		if (rc > 0) {
			rc = 0;
			continue;
		}
		if (!rc && S_ISREG(od.st.mode))
			rc = undel_orphan(vol, o.oid[k], NULL, f->data,
					  f->missing, f->ctx, err);
		rc = f->end(f->ctx, &od, rc);
	}
	free(o.oid);
	free(u.buf);
	free(u.got.v);
	fsc_scan_free(&s);
	return rc < 0 ? rc : 0;
}
