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
 * Compressed (ccreg40) files are refused. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/edit_int.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/plugin.h"

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

static int pw_body(struct r4_txn *x, const char *path,
		   const struct r4_objref *ref, struct obj_sd *sd,
		   struct pw_src *s, struct r4_error *err)
{
	uint64_t size = s->off + s->len, bs = x->vol->blksize, bytes = 0;
	uint64_t touched = (s->off + s->len + bs - 1) / bs - s->off / bs;
	int rc;

	if (size < sd->st.size)
		size = sd->st.size;
	rc = pw_space(x, path, touched * bs, err);
	if (!rc)
		rc = obj_pwrite_extents(x, ref, sd->st.size, s->off, s->buf,
					s->len, &bytes, err);
	if (rc == 1) {
		rc = pw_rewrite(x, path, ref, size, s, &bytes, err);
	} else if (!rc) {
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
		rc = r4_lookup(x->vol, path, &ref, err);
	if (!rc)
		rc = obj_sd_get(x->vol, &ref, &sd, err);
	if (rc)
		return rc;
	if (sd.plugin == FMT_OBJ_CCREG40)
		rc = r4i_fail(err, R4_EUNSUPP, "%s: writing into a compressed "
			     "(ccreg40) file is not supported yet", path);
	else if (sd.plugin != FMT_OBJ_REG40)
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
