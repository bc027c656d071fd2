/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_pwrite, writing into an existing regular file under the
 * same object id: the stat data (names, link count, owner, mode) stays,
 * size, bytes, mtime and ctime change.
 *
 * A body of extent items is written in place (pwext.c): the cost is the
 * bytes written. Any other body is read, patched in memory and written
 * again whole, tails or extents as the tail policy says for the new
 * size: a body of tail items (at most four blocks under the kernel's
 * default "4blocks" policy, so the rewrite is bounded; any size under
 * the "tails" policy), an empty one, and one the kernel left mixed.
 * A compressed (ccreg40) body is changed cluster by cluster: only the
 * logical clusters the write touches are read, patched, encoded again
 * with the file's compression plugin and mode and their items replaced
 * (doc/compress.md §4.6). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/edit_int.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/plugin.h"
#include "format/cluster.h"
#include "libimage/obj/ccreg.h"

/* Blocks kept back for the tree nodes and the commit's journal. */
#define PW_MARGIN 64

uint64_t r4_txn_blocks_free(const struct r4_txn *x)
{
	return txn_free_left(x->t);
}

/* The new body as pieces: old bytes before off, buf, old bytes after. */
struct pw_src {
	const uint8_t *old;
	uint64_t oldlen, off;
	const uint8_t *buf;
	size_t len;
	int step;
};

static int pw_data(void *ctx, uint64_t *off, const void **buf, size_t *len,
		   struct r4_error *err)
{
	struct pw_src *s = ctx;
	uint64_t end = s->off + s->len;

	(void)err;
	for (;;) {
		switch (s->step++) {
		case 0:
			if (!s->off || !s->oldlen)
				continue;
			*off = 0;
			*buf = s->old;
			*len = (size_t)(s->oldlen < s->off ? s->oldlen
							   : s->off);
			return 1;
		case 1:
			*off = s->off;
			*buf = s->buf;
			*len = s->len;
			return 1;
		case 2:
			if (s->oldlen <= end)
				continue;
			*off = end;
			*buf = s->old + end;
			*len = (size_t)(s->oldlen - end);
			return 1;
		default:
			return 0;
		}
	}
}

static int pw_space(struct r4_txn *x, const char *path, uint64_t size,
		    struct r4_error *err)
{
	uint64_t bs = x->vol->blksize, need;

	need = (size + bs - 1) / bs;
	need += need / 256 + PW_MARGIN;
	if (txn_free_left(x->t) < need)
		return r4i_fail(err, R4_ENOSPC, "%s: %llu free blocks left, "
			       "the new body needs %llu", path,
			       (unsigned long long)txn_free_left(x->t),
			       (unsigned long long)need);
	return 0;
}

/* Read the old bytes the new body keeps (none when buf covers them). */
static int pw_read_old(struct r4_txn *x, const struct r4_objref *ref,
		       struct pw_src *s, struct r4_error *err)
{
	size_t got = 0;
	uint8_t *old;
	int rc;

	if (!s->oldlen || (!s->off && s->len >= s->oldlen)) {
		s->oldlen = 0;
		return 0;
	}
	if (s->oldlen > SIZE_MAX)
		return r4i_fail(err, -ENOMEM, "file too large to rewrite");
	old = malloc((size_t)s->oldlen);
	if (!old)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = r4_read(x->vol, ref, 0, old, (size_t)s->oldlen, &got, err);
	if (!rc && got != s->oldlen)
		rc = r4i_fail(err, R4_ECORRUPT, "object %llx: %zu of %llu "
			     "bytes readable", (unsigned long long)ref->oid,
			     got, (unsigned long long)s->oldlen);
	if (rc) {
		free(old);
		return rc;
	}
	s->old = old;
	return 0;
}

/* The old path: the whole body again. Holes take no block, so the new
 * body needs the old bytes and the new ones (two blocks more for the
 * blocks they share a part of), at most its size. */
static int pw_rewrite(struct r4_txn *x, const char *path,
		      const struct r4_objref *ref, uint64_t size,
		      struct pw_src *s, uint64_t *bytes, struct r4_error *err)
{
	uint64_t need = s->oldlen + s->len + 2 * (uint64_t)x->vol->blksize;
	int rc = pw_space(x, path, need < size ? need : size, err);

	if (!rc)
		rc = pw_read_old(x, ref, s, err);
	if (!rc)
		rc = obj_body_kill(x, ref, err);
	if (!rc)
		rc = obj_body_write(x, ref, size, pw_data, s, path, bytes,
				    err);
	free((void *)s->old);
	return rc;
}

/* ---- compressed files ------------------------------------------------ */

struct ccw {
	struct r4_txn *x;
	const struct r4_objref *ref;
	const struct obj_sd *sd;	/* the old stat data */
	struct obj_ccreg cc;
	uint64_t old, size;		/* old and new file size */
	uint64_t off;
	const uint8_t *buf;
	size_t len;
	uint64_t used;			/* disk clusters */
	uint8_t *cl;			/* one logical cluster */
};

/* Logical cluster idx again: its old bytes, the write's over them, zeros
 * past the old end; its items replaced. When only_stored, a cluster
 * without items (a hole) stays one. */
static int ccw_cluster(struct ccw *w, uint64_t idx, int only_stored,
		       struct r4_error *err)
{
	unsigned sh = w->cc.shift;
	uint64_t at = idx << sh, ncl = 0;
	size_t lsize = fmt_cluster_lsize(w->size, idx, sh);
	int had = 0, stored = 0, rc = 0;

	memset(w->cl, 0, lsize);
	/* the old bytes, unless the write covers the whole cluster */
	if (at < w->old && (w->off > at || w->off + w->len < at + lsize))
		rc = obj_ccreg_read(w->x->vol, w->ref, w->sd, at, w->cl,
				    w->old - at < lsize ? (size_t)(w->old - at)
							: lsize, err);
	if (w->off < at + lsize && w->off + w->len > at) {
		uint64_t s = w->off > at ? w->off : at;
		uint64_t e = w->off + w->len < at + lsize ? w->off + w->len :
							    at + lsize;

		memcpy(w->cl + (s - at), w->buf + (s - w->off),
		       (size_t)(e - s));
	}
	if (!rc)
		rc = obj_ccreg_cut(w->x, w->ref, sh, at, at + ((uint64_t)1 << sh),
				   idx, &ncl, &had, err);
	if (rc || (only_stored && !had))
		return rc;
	rc = obj_ccreg_put(w->x, w->ref, &w->cc, idx, w->cl, lsize, lsize,
			   &stored, err);
	/* a bytes field the volume got wrong (below what it holds) counts
	 * from 0, never wraps */
	w->used = (w->used > (uint64_t)had ? w->used - (uint64_t)had : 0) +
		  (uint64_t)stored;
	return rc;
}

/* doc/compress.md §3.4.1: 1 when cluster 0 has no items. */
static int ccw_c0_hole(struct ccw *w, int *hole, struct r4_error *err)
{
	struct obj_dc dc;
	int rc;

	*hole = 1;
	if (!w->old)
		return 0;
	rc = obj_dc_load(w->x->vol, w->ref, w->cc.shift, 0, w->cl, &dc, err);
	*hole = !rc && !dc.len;
	return rc;
}

/* The clusters to encode again, in order: cluster 0 when it is a hole
 * before the written ones (§3.4.1), the old last cluster when the write
 * grows it from past its end (§4.5), those the write covers. */
static int ccw_run(struct ccw *w, struct r4_error *err)
{
	unsigned sh = w->cc.shift;
	uint64_t first = w->off >> sh, last = (w->off + w->len - 1) >> sh;
	uint64_t tail = w->old >> sh;
	int hole = 0, rc = 0;

	if (first > 0)
		rc = ccw_c0_hole(w, &hole, err);
	if (!rc && hole)
		rc = ccw_cluster(w, 0, 0, err);
	if (!rc && w->size > w->old && (w->old & (((uint64_t)1 << sh) - 1)) &&
	    tail < first && (tail || !hole))
		rc = ccw_cluster(w, tail, 1, err);
	for (uint64_t i = first ? first : (hole ? 1 : 0); !rc && i <= last;
	     i++)
		rc = ccw_cluster(w, i, 0, err);
	return rc;
}

int obj_ccreg_pwrite(struct r4_txn *x, const char *path,
		     const struct r4_objref *ref, struct obj_sd *sd,
		     uint64_t off, const void *buf, size_t len,
		     struct r4_error *err)
{
	struct ccw w = { x, ref, sd, { 0, 0, 0 }, sd->st.size, 0, off, buf,
			 len, 0, NULL };
	uint64_t n;
	int rc = obj_ccreg_params(x->vol, ref, sd, &w.cc, err);

	w.size = off + len > w.old ? off + len : w.old;
	/* the written clusters, cluster 0 and the old last one */
	n = ((len + ((uint64_t)1 << w.cc.shift) - 1) >> w.cc.shift) + 3;
	if (!rc)
		rc = pw_space(x, path, n << w.cc.shift, err);
	if (rc)
		return rc;
	w.used = sd->st.rdev_or_bytes >> w.cc.shift;
	w.cl = malloc((size_t)1 << w.cc.shift);
	if (!w.cl)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = ccw_run(&w, err);
	free(w.cl);
	/* §4.4: a file conv keeps past its first cluster stores lattd */
	if (!rc && w.cc.cmode == FMT_CMODE_CONV &&
	    w.size > ((uint64_t)1 << w.cc.shift)) {
		if (obj_pset_set(&sd->st.pset, FMT_PSET_CMODE, FMT_CMODE_LATTD))
			return r4i_fail(err, R4_ECORRUPT, "%s: its plugin set "
				       "is full", path);
		sd->st.mask |= 1u << FMT_SDEXT_PSET;
	}
	sd->st.size = w.size;
	sd->st.rdev_or_bytes = w.used << w.cc.shift;
	return rc;
}

static int pw_body(struct r4_txn *x, const char *path,
		   const struct r4_objref *ref, struct obj_sd *sd,
		   struct pw_src *s, struct r4_error *err)
{
	uint64_t size = s->off + s->len, bs = x->vol->blksize, bytes = 0;
	uint64_t touched = (s->off + s->len + bs - 1) / bs - s->off / bs;
	int rc;

	if (size < sd->st.size)
		size = sd->st.size;
	if (sd->plugin == FMT_OBJ_CCREG40) {
		rc = obj_ccreg_pwrite(x, path, ref, sd, s->off, s->buf, s->len,
				      err);
		size = sd->st.size;
		bytes = sd->st.rdev_or_bytes;
	} else {
		rc = pw_space(x, path, touched * bs, err);
		if (!rc)
			rc = obj_pwrite_extents(x, ref, sd->st.size, s->off,
						s->buf, s->len, &bytes, err);
		if (rc == 1)
			rc = pw_rewrite(x, path, ref, size, s, &bytes, err);
		else if (!rc)
			bytes += sd->st.rdev_or_bytes;
	}
	if (rc)
		return rc;
	sd->st.size = size;
	sd->st.rdev_or_bytes = bytes;
	sd->st.mtime = sd->st.ctime = x->now;
	sd->st.mtime_ns = sd->st.ctime_ns = 0;
	return obj_sd_write(x, ref, &sd->st, 0, err);
}

int r4_pwrite(struct r4_txn *x, const char *path, uint64_t off,
	      const void *buf, size_t len, struct r4_error *err)
{
	uint64_t mark = edit_mark(x);
	struct pw_src s = { NULL, 0, off, buf, len, 0 };
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = edit_check(x, err);

	if (!rc && (off > INT64_MAX || len > INT64_MAX - off))
		rc = r4i_fail(err, R4_EINVAL, "%s: offset past the largest "
			     "file", path);
	if (!rc)
		rc = edit_lookup(x, path, &ref, err);
	if (!rc)
		rc = obj_sd_get(x->vol, &ref, &sd, err);
	if (rc)
		return rc;
	if (sd.plugin != FMT_OBJ_REG40 && sd.plugin != FMT_OBJ_CCREG40)
		rc = r4i_fail(err, R4_EINVAL, "%s: not a regular (reg40) file",
			     path);
	s.oldlen = sd.st.size;
	if (!rc && len)
		rc = pw_body(x, path, &ref, &sd, &s, err);
	obj_sd_put(&sd);
	return edit_done(x, mark, rc);
}

int r4_txn_failed(const struct r4_txn *x)
{
	return x->failed;
}
