/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: rename, setattr, truncate and r4pack add's entries. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/obj/edit_int.h"
#include "libimage/obj/ccreg.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/plugin.h"

#define MAX_CLIMB 4096

static size_t ebytes(const struct r4_txn *x, size_t len)
{
	return fmt_cde40_entry_bytes(x->vol->keypol,
		fmt_entry_name_stored(x->vol->keypol, len) ? len : 0);
}

static int same(const struct r4_objref *a, const struct r4_objref *b)
{
	return a->oid == b->oid && a->locality == b->locality &&
	       a->ordering == b->ordering;
}

/* R4_EINVAL when dir is obj or below it. */
static int not_below(struct r4_txn *x, const struct r4_objref *obj,
		     const struct obj_dir *dir, struct r4_error *err)
{
	struct r4_objref cur = dir->ref, up;
	int rc;

	for (unsigned i = 0; i < MAX_CLIMB; i++) {
		if (cur.oid == obj->oid)
			return r4i_fail(err, R4_EINVAL, "cannot move a directory "
				       "below itself");
		if (cur.oid == FMT_ROOT_OID)
			return 0;
		rc = obj_dir_find(x->vol, cur.oid, "..", 2, dir->hash,
				  dir->fibre, &up, err);
		if (rc)
			return rc;
		cur = up;
	}
	return r4i_fail(err, R4_ELOOP, "directory chain longer than %d",
		       MAX_CLIMB);
}

/* The target name exists: remove it as rename(2) would. */
static int rename_clear(struct r4_txn *x, const struct r4_objref *src,
			int srcdir, const struct obj_dir *td,
			const char *tname, size_t tlen, struct r4_error *err)
{
	struct r4_objref dst;
	struct obj_sd sd;
	int rc = edit_find(x, td, tname, tlen, &dst, err), dstdir;

	if (rc == R4_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (same(&dst, src))
		return 1;
	rc = obj_sd_get(x->vol, &dst, &sd, err);
	if (rc)
		return rc;
	dstdir = sd.plugin == FMT_OBJ_DIR40;
	obj_sd_put(&sd);
	if (srcdir && !dstdir)
		return r4i_fail(err, -ENOTDIR, "rename: \"%.*s\" is not a "
			       "directory", (int)tlen, tname);
	if (!srcdir && dstdir)
		return r4i_fail(err, -EISDIR, "rename: \"%.*s\" is a "
			       "directory", (int)tlen, tname);
	return dstdir ? edit_rmdir_at(x, td, tname, tlen, err) :
			edit_unlink_at(x, td, tname, tlen, err);
}

static int rename_move(struct r4_txn *x, const struct r4_objref *src,
		       int isdir, const struct obj_dir *fd, const char *fname,
		       size_t flen, const struct obj_dir *td,
		       const char *tname, size_t tlen, struct r4_error *err)
{
	int moved = fd->ref.oid != td->ref.oid;
	int rc = obj_entry_del(x, fd, fname, flen, err);

	if (!rc)
		rc = obj_entry_add(x, td, tname, tlen, src, err);
	if (!rc && !moved)
		rc = obj_dir_account(x, &td->ref, 0, (int64_t)ebytes(x, tlen) -
				     (int64_t)ebytes(x, flen), 0, err);
	if (!rc && moved)
		rc = obj_dir_account(x, &fd->ref, -1,
				     -(int64_t)ebytes(x, flen), -isdir, err);
	if (!rc && moved)
		rc = obj_dir_account(x, &td->ref, 1, (int64_t)ebytes(x, tlen),
				     isdir, err);
	if (!rc) {	/* the kernel stamps the renamed object's ctime */
		struct obj_sd osd;

		rc = obj_sd_get(x->vol, src, &osd, err);
		if (!rc) {
			osd.st.ctime = x->now;
			osd.st.ctime_ns = 0;
			rc = obj_sd_write(x, src, &osd.st, 0, err);
			obj_sd_put(&osd);
		}
	}
	if (!rc && moved && isdir) {
		struct obj_dir sd = { *src, td->hash, td->fibre };

		rc = obj_dir_open(x, src, &sd, err);
		if (!rc)
			rc = obj_entry_set(x, &sd, "..", 2, &td->ref, err);
	}
	return rc;
}

int r4_rename(struct r4_txn *x, const char *from, const char *to,
	      struct r4_error *err)
{
	uint64_t mark = edit_mark(x);
	struct obj_dir fd, td;
	const char *fname, *tname;
	size_t flen, tlen;
	struct r4_objref src;
	struct obj_sd sd;
	int rc = edit_check(x, err), isdir = 0;

	if (!rc)
		rc = edit_split(x, from, &fd, &fname, &flen, err);
	if (!rc)
		rc = edit_split(x, to, &td, &tname, &tlen, err);
	if (!rc && (rc = edit_find(x, &fd, fname, flen, &src, err)) ==
	    R4_ENOTFOUND)
		rc = r4i_fail(err, rc, "%s: no such entry", from);
	if (!rc && !(rc = obj_sd_get(x->vol, &src, &sd, err))) {
		isdir = sd.plugin == FMT_OBJ_DIR40;
		obj_sd_put(&sd);
	}
	if (!rc && isdir && fd.ref.oid != td.ref.oid)
		rc = not_below(x, &src, &td, err);
	if (!rc)
		rc = rename_clear(x, &src, isdir, &td, tname, tlen, err);
	if (rc == 1)
		return edit_done(x, mark, 0);	/* the same object */
	if (!rc)
		rc = rename_move(x, &src, isdir, &fd, fname, flen, &td, tname,
				 tlen, err);
	return edit_done(x, mark, rc);
}

void edit_apply_attr(struct fmt_stat *st, const struct r4_attr *a,
		       unsigned mask)
{
	struct fmt_stat n;

	edit_attr_stat(a, 0, &n);
	if (mask & R4_ATTR_MODE)
		st->mode = (uint16_t)((st->mode & S_IFMT) | (a->mode & 07777));
	if (mask & R4_ATTR_UID)
		st->uid = a->uid;
	if (mask & R4_ATTR_GID)
		st->gid = a->gid;
	if (mask & R4_ATTR_ATIME) {
		st->atime = n.atime;
		st->atime_ns = n.atime_ns;
	}
	if (mask & R4_ATTR_MTIME) {
		st->mtime = n.mtime;
		st->mtime_ns = n.mtime_ns;
	}
	if (mask & R4_ATTR_CTIME) {
		st->ctime = n.ctime;
		st->ctime_ns = n.ctime_ns;
	}
	st->mask |= 1u << FMT_SDEXT_UNIX;
	if (st->atime_ns || st->mtime_ns || st->ctime_ns)
		st->mask |= 1u << FMT_SDEXT_LT;
}

static int setattr_ref(struct r4_txn *x, const struct r4_objref *ref,
		       const struct r4_attr *a, unsigned mask,
		       struct r4_error *err)
{
	struct obj_sd sd;
	int rc = obj_sd_get(x->vol, ref, &sd, err);

	if (rc)
		return rc;
	edit_apply_attr(&sd.st, a, mask);
	rc = obj_sd_write(x, ref, &sd.st, 0, err);
	obj_sd_put(&sd);
	return rc;
}

int r4_setattr(struct r4_txn *x, const char *path, const struct r4_attr *a,
	       unsigned mask, struct r4_error *err)
{
	uint64_t mark = edit_mark(x);
	struct r4_objref ref;
	int rc = edit_check(x, err);

	if (!rc)
		rc = edit_lookup(x, path, &ref, err);
	if (!rc)
		rc = setattr_ref(x, &ref, a, mask, err);
	return edit_done(x, mark, rc);
}

/* doc/compress.md §4.4: a size change ends conv for the file, which
 * then has lattd stored (the kernel's setattr does the same). */
static int ccreg_stop_conv(struct r4_txn *x, const struct r4_objref *ref,
			struct obj_sd *sd, struct r4_error *err)
{
	struct obj_ccreg cc;
	int rc = obj_ccreg_params(x->vol, ref, sd, &cc, err);

	if (rc || cc.cmode != FMT_CMODE_CONV)
		return rc;
	if (obj_pset_set(&sd->st.pset, FMT_PSET_CMODE, FMT_CMODE_LATTD))
		return r4i_fail(err, R4_ECORRUPT, "%s: object %llx: its plugin "
			       "set is full", obj_vol_name(x->vol),
			       (unsigned long long)ref->oid);
	sd->st.mask |= 1u << FMT_SDEXT_PSET;
	return 0;
}

int r4_truncate(struct r4_txn *x, const char *path, uint64_t size,
		struct r4_error *err)
{
	uint64_t mark = edit_mark(x), bytes = 0;
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = edit_check(x, err);

	if (!rc)
		rc = edit_lookup(x, path, &ref, err);
	if (!rc)
		rc = obj_sd_get(x->vol, &ref, &sd, err);
	if (rc)
		return rc;
	if (sd.plugin != FMT_OBJ_REG40 && sd.plugin != FMT_OBJ_CCREG40)
		rc = r4i_fail(err, R4_EINVAL, "%s: not a regular (reg40) file",
			     path);
	if (!rc && size != sd.st.size && sd.plugin == FMT_OBJ_CCREG40)
		rc = obj_ccreg_truncate(x, &ref, &sd, size, &bytes, err);
	else if (!rc && size != sd.st.size)
		rc = obj_body_truncate(x, &ref, sd.st.size, size, &bytes, err);
	if (!rc && size != sd.st.size && sd.plugin == FMT_OBJ_CCREG40)
		rc = ccreg_stop_conv(x, &ref, &sd, err);
	if (!rc && size != sd.st.size) {
		sd.st.size = size;
		sd.st.rdev_or_bytes = bytes;
		sd.st.mtime = sd.st.ctime = x->now;
		sd.st.mtime_ns = sd.st.ctime_ns = 0;
		rc = obj_sd_write(x, &ref, &sd.st, 0, err);
	}
	obj_sd_put(&sd);
	return edit_done(x, mark, rc);
}
