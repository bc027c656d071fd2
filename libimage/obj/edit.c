/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: transactions and the object operations of r4/edit.h: create,
 * mkdir, symlink, mknod, link, unlink, rmdir, remove_tree. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "libimage/obj/write.h"
#include "libimage/obj/edit_int.h"
#include "libimage/obj/ccreg_encode.h"
#include "libimage/obj/encode.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/plugin.h"

/* ---- transactions ----------------------------------------------------- */

static uint32_t edit_now(const struct r4_vol *vol)
{
	if (vol->clock >= 0)
		return (uint32_t)vol->clock;
	return (uint32_t)time(NULL);
}

static int root_formatting(struct r4_vol *vol, struct r4_error *err)
{
	struct r4_error tmp = { 0, "", 0 };
	struct r4_objref root;
	struct obj_sd sd;
	int f = OBJ_DEFAULT_FORMATTING;

	(void)err;
	r4_root(vol, &root, &tmp);
	if (!obj_sd_get(vol, &root, &sd, &tmp)) {
		int p = obj_pset_find(&sd.st.pset, FMT_PSET_FORMATTING);

		if (p >= 0)
			f = p;
		obj_sd_put(&sd);
	}
	return f;
}

int r4_txn_begin(struct r4_vol *vol, struct r4_txn **out,
		 struct r4_error *err)
{
	struct r4_txn *x;
	int rc;

	*out = NULL;
	if (!vol->dev || vol->dev->readonly || !(vol->flags & R4_OPEN_RDWR))
		return r4i_fail(err, -EROFS, "%s: opened read-only",
			       obj_vol_name(vol));
	x = calloc(1, sizeof(*x));
	if (!x)
		return r4i_fail(err, -ENOMEM, "out of memory");
	x->vol = vol;
	x->root0 = vol->sb.root_block;
	x->height0 = vol->sb.tree_height;
	x->now = edit_now(vol);
	x->formatting = root_formatting(vol, err);
	x->data_hint = vol->sb.root_block;
	rc = txn_begin(vol, &x->t, err);
	if (!rc)
		rc = tree_mod_init(&x->mod, vol, x->t, err);
	if (rc) {
		r4_txn_abort(x);
		return rc;
	}
	*out = x;
	return 0;
}

int r4_txn_commit(struct r4_txn *x, struct r4_error *err)
{
	int rc;

	if (x->failed) {
		r4_txn_abort(x);
		return r4i_fail(err, R4_EINVAL, "an operation of the "
			       "transaction failed half way: it was aborted");
	}
	rc = tree_mod_flush(&x->mod, err);
	if (rc) {
		r4_txn_abort(x);
		return rc;
	}
	rc = txn_commit(x->t, err);
	x->t = NULL;
	if (rc) {
		x->vol->sb.root_block = x->root0;
		x->vol->sb.tree_height = x->height0;
	}
	tree_mod_fini(&x->mod);
	obj_ccreg_enc_free(x->ccreg);
	edit_forget_dir(x);
	obj_txn_scratch_free(x);
	free(x);
	return rc;
}

void r4_txn_abort(struct r4_txn *x)
{
	if (!x)
		return;
	txn_abort(x->t);
	x->vol->sb.root_block = x->root0;
	x->vol->sb.tree_height = x->height0;
	tree_mod_fini(&x->mod);
	obj_ccreg_enc_free(x->ccreg);
	edit_forget_dir(x);
	obj_txn_scratch_free(x);
	free(x);
}

uint64_t r4_txn_written(const struct r4_txn *x)
{
	return x ? txn_written_in_place(x->t) : 0;
}

int r4_txn_compresses(struct r4_txn *x, struct r4_error *err)
{
	const struct r4_objref root = { FMT_ROOT_LOCALITY, 0, FMT_ROOT_OID };
	struct obj_new_plan p;
	int rc = obj_new_plan(x, &root, &p, err);

	return rc ? rc : p.ccreg;
}

int r4_txn_set_create(struct r4_txn *x, const uint16_t *plugin,
		      unsigned set, struct r4_error *err)
{
	const unsigned ok = 1u << R4_PT_CREATE | 1u << R4_PT_COMPRESS |
			    1u << R4_PT_CMODE | 1u << R4_PT_CLUSTER;

	if (set & ~ok)
		return r4i_fail(err, R4_EINVAL, "only create, compress, "
			       "compressMode and cluster apply to new files "
			       "of an existing volume");
	if ((set & 1u << R4_PT_CREATE) &&
	    plugin[R4_PT_CREATE] != FMT_OBJ_REG40 &&
	    plugin[R4_PT_CREATE] != FMT_OBJ_CCREG40)
		return r4i_fail(err, R4_EINVAL, "create: not a regular file "
			       "plugin");
	x->prof_set = set;
	x->plan_ok = 0;		/* the plans change with the profile */
	for (unsigned i = 0; i < R4_PT_COUNT; i++)
		x->prof[i] = set & (1u << i) ? plugin[i] : 0;
	return 0;
}

void edit_stats(const struct r4_txn *x, struct edit_stats *s)
{
	s->nodes_written = x->mod.st.nodes_written;
	s->nodes_alloc = x->mod.st.nodes_alloc;
	s->nodes_freed = x->mod.st.nodes_freed;
	s->data_blocks = x->data_blocks;
	s->nodes_dirty = x->t ? txn_scope_blocks(x->t, x->mod.scope) : 0;
	s->dec_hits = x->mod.st.dec_hits;
	s->dec_misses = x->mod.st.dec_misses;
	s->height = x->mod.height;
}

/* Run op's changes: an error after the tree changed is sticky. */
uint64_t edit_mark(const struct r4_txn *x)
{
	return x->mod.st.nodes_written + x->mod.st.nodes_freed +
	       x->data_blocks;
}

int edit_done(struct r4_txn *x, uint64_t mark, int rc)
{
	if (rc && edit_mark(x) != mark)
		x->failed = 1;
	return rc;
}

int edit_check(struct r4_txn *x, struct r4_error *err)
{
	if (x->failed)
		return r4i_fail(err, R4_EINVAL, "an earlier operation of this "
			       "transaction failed half way; abort it");
	return 0;
}

/* ---- paths ------------------------------------------------------------ */

void edit_forget_dir(struct r4_txn *x)
{
	free(x->pd_path);
	x->pd_path = NULL;
	x->pd_len = 0;
}

/* The caller's resolver for the path operations (NULL: r4_lookup). */
void r4_txn_set_resolver(struct r4_txn *x, r4_resolve_fn fn, void *ctx)
{
	x->resolve = fn;
	x->resolve_ctx = ctx;
}

/* path as the transaction resolves it. */
int edit_lookup(struct r4_txn *x, const char *path, struct r4_objref *out,
		struct r4_error *err)
{
	if (x->resolve)
		return x->resolve(x->resolve_ctx, path, out, err);
	return r4_lookup(x->vol, path, out, err);
}

int edit_split(struct r4_txn *x, const char *path, struct obj_dir *d,
	       const char **name, size_t *len, struct r4_error *err)
{
	size_t n = path ? strlen(path) : 0, s;
	struct r4_objref pref;
	char *pp;
	int rc;

	edit_forget_dir(x);
	if (!n || path[0] != '/')
		return r4i_fail(err, R4_EINVAL, "path \"%s\" is not absolute",
			       path ? path : "(null)");
	while (n > 1 && path[n - 1] == '/')
		n--;
	for (s = n; s > 0 && path[s - 1] != '/'; s--)
		;
	*name = path + s;
	*len = n - s;
	if (!*len || *len > 255 || (*len == 1 && path[s] == '.') ||
	    (*len == 2 && !memcmp(path + s, "..", 2)))
		return r4i_fail(err, R4_EINVAL, "%s: bad last name", path);
	pp = strndup(path, s ? s : 1);
	if (!pp)
		return r4i_fail(err, -ENOMEM, "out of memory");
	rc = edit_lookup(x, pp, &pref, err);
	free(pp);
	if (!rc)
		rc = obj_dir_open(x, &pref, d, err);
	return rc;
}

int edit_by_path(struct r4_txn *x, const char *path, edit_at_fn fn,
		 void *ctx, struct r4_error *err)
{
	uint64_t mark = edit_mark(x);
	struct obj_dir d;
	const char *name;
	size_t len;
	int rc = edit_check(x, err);

	if (!rc)
		rc = edit_split(x, path, &d, &name, &len, err);
	if (!rc)
		rc = fn(x, &d, name, len, ctx, err);
	return edit_done(x, mark, rc);
}

/* 0 with *out when the name exists, R4_ENOTFOUND when not. */
int edit_find(struct r4_txn *x, const struct obj_dir *d, const char *name,
	      size_t len, struct r4_objref *out, struct r4_error *err)
{
	struct r4_error tmp = { 0, "", 0 };
	int rc = obj_find_in_txn(x, d, name, len, out, &tmp);

	if (rc == 1)
		rc = obj_dir_find(x->vol, d->ref.oid, name, len, d->hash,
				  d->fibre, out, &tmp);

	if (rc && rc != R4_ENOTFOUND)
		return r4i_fail(err, rc, "%s", tmp.msg);
	return rc;
}

static size_t ebytes(const struct r4_txn *x, size_t len)
{
	return enc_entry_bytes(x->vol->keypol, len);
}

/* ---- new objects -------------------------------------------------------- */

void edit_attr_stat(const struct r4_attr *a, uint32_t type,
		    struct fmt_stat *st)
{
	struct enc_attr ea;

	enc_attr(a, type, &ea);
	enc_stat(&ea, st);
}

/* A new object named name in d: its id, key, stat data (st, completed
 * here) and entry; body(ctx) writes its body items first. */
static int new_obj(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, struct fmt_stat *st,
		   edit_body_fn body, void *ctx, int absent,
		   struct r4_objref *out, struct r4_error *err)
{
	struct r4_objref ref;
	struct fmt_key k;
	int isdir = S_ISDIR(st->mode), rc;

	rc = absent ? R4_ENOTFOUND : edit_find(x, d, name, len, &ref, err);
	if (!rc)
		return r4i_fail(err, R4_EEXIST, "\"%.*s\" exists", (int)len,
			       name);
	if (rc != R4_ENOTFOUND)
		return rc;
	rc = fmt_key_entry(&k, x->vol->keypol, d->ref.oid, name, len,
			   (unsigned)d->hash, (unsigned)d->fibre);
	if (rc)
		return r4i_fail(err, rc, "cannot make the key of \"%.*s\"",
			       (int)len, name);
	ref.locality = d->ref.oid;
	ref.ordering = x->vol->keypol == FMT_KEY_LARGE ? k.el[1] : 0;
	ref.oid = txn_next_oid(x->t);
	rc = body ? body(x, ctx, &ref, st, err) : 0;
	if (!rc)
		rc = obj_sd_write(x, &ref, st, 1, err);
	if (!rc)
		rc = obj_entry_add(x, d, name, len, &ref, err);
	if (!rc)
		rc = obj_dir_account(x, &d->ref, 1, (int64_t)ebytes(x, len),
				     isdir, err);
	if (!rc)
		txn_add_files(x->t, 1);
	if (!rc && out)
		*out = ref;
	return rc;
}

int edit_new(struct r4_txn *x, const struct obj_dir *d, const char *name,
	     size_t len, struct fmt_stat *st, edit_body_fn body, void *ctx,
	     struct r4_objref *out, struct r4_error *err)
{
	return new_obj(x, d, name, len, st, body, ctx, 0, out, err);
}

static int dir_body(struct r4_txn *x, void *ctx, const struct r4_objref *ref,
		    struct fmt_stat *st, struct r4_error *err)
{
	const struct obj_dir *parent = ctx;
	struct obj_dir nd = { *ref, parent->hash, parent->fibre };

	enc_stat_dir(st, x->vol->keypol);
	return obj_dir_body(x, &nd, &parent->ref, err);
}

int edit_mkdir_at(struct r4_txn *x, const struct obj_dir *d, const char *name,
		  size_t len, const struct r4_attr *a, struct r4_error *err)
{
	struct fmt_stat st;

	edit_attr_stat(a, S_IFDIR, &st);
	return edit_new(x, d, name, len, &st, dir_body, (void *)d, NULL, err);
}

static int mkdir_at(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, void *ctx,
		    struct r4_error *err)
{
	return edit_mkdir_at(x, d, name, len, ctx, err);
}

int r4_mkdir(struct r4_txn *x, const char *path, const struct r4_attr *a,
	     struct r4_error *err)
{
	return edit_by_path(x, path, mkdir_at, (void *)a, err);
}

struct filebody {
	const struct obj_dir *dir;
	uint64_t size;
	r4_data_fn fn;
	void *ctx;
	const char *name;
};

static int file_body(struct r4_txn *x, void *ctx, const struct r4_objref *ref,
		     struct fmt_stat *st, struct r4_error *err)
{
	struct filebody *f = ctx;

	return obj_new_file_body(x, &f->dir->ref, ref, f->size, f->fn, f->ctx,
				 f->name, st, err);
}

int edit_create_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, const struct r4_attr *a,
		   uint64_t size, r4_data_fn data, void *ctx,
		   struct r4_error *err)
{
	struct filebody f = { d, size, data, ctx, name };
	struct fmt_stat st;
	struct r4_objref old;
	int rc = edit_find(x, d, name, len, &old, err);

	if (!rc)
		rc = edit_remove_any(x, d, name, len, 0, err);
	else if (rc == R4_ENOTFOUND)
		rc = 0;
	if (rc)
		return rc;
	edit_attr_stat(a, S_IFREG, &st);
	/* the name is free now: no second lookup */
	return new_obj(x, d, name, len, &st, file_body, &f, 1, NULL, err);
}

struct create_args {
	const struct r4_attr *a;
	uint64_t size;
	r4_data_fn data;
	void *ctx;
};

static int create_at(struct r4_txn *x, const struct obj_dir *d,
		     const char *name, size_t len, void *ctx,
		     struct r4_error *err)
{
	struct create_args *c = ctx;

	return edit_create_at(x, d, name, len, c->a, c->size, c->data,
			      c->ctx, err);
}

int r4_create(struct r4_txn *x, const char *path, const struct r4_attr *a,
	      uint64_t size, r4_data_fn data, void *ctx,
	      struct r4_error *err)
{
	struct create_args c = { a, size, data, ctx };

	return edit_by_path(x, path, create_at, &c, err);
}

/* A special object (symlink, device, fifo, socket) whose stat data the
 * caller has filled: no body. */
static int special_at(struct r4_txn *x, const struct obj_dir *d,
		      const char *name, size_t len, void *ctx,
		      struct r4_error *err)
{
	return edit_new(x, d, name, len, ctx, NULL, NULL, NULL, err);
}

int r4_symlink(struct r4_txn *x, const char *path, const char *target,
	       const struct r4_attr *a, struct r4_error *err)
{
	struct fmt_stat st;
	int rc = enc_check_symlink(path, target, tree_max_item(&x->mod),
				   err);

	if (rc)
		return rc;
	edit_attr_stat(a, S_IFLNK, &st);
	st.mode = (uint16_t)(S_IFLNK | 0777);
	enc_stat_symlink(&st, target, strlen(target));
	return edit_by_path(x, path, special_at, &st, err);
}

int r4_mknod(struct r4_txn *x, const char *path, const struct r4_attr *a,
	     struct r4_error *err)
{
	uint32_t type = a->mode & S_IFMT;
	struct fmt_stat st;
	int rc;

	if (type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
	    type != S_IFSOCK)
		return r4i_fail(err, R4_EINVAL, "%s: mode %o is not a device, "
			       "fifo or socket", path, a->mode);
	if ((type == S_IFCHR || type == S_IFBLK) &&
	    (rc = enc_check_rdev(path, a->rdev_major, a->rdev_minor, err)))
		return rc;
	edit_attr_stat(a, type, &st);
	if (type == S_IFCHR || type == S_IFBLK)
		st.rdev_or_bytes = enc_rdev(a->rdev_major, a->rdev_minor);
	return edit_by_path(x, path, special_at, &st, err);
}

int edit_link_at(struct r4_txn *x, const struct r4_objref *src,
		 const struct obj_dir *d, const char *name, size_t len,
		 struct r4_error *err)
{
	struct r4_objref old;
	struct obj_sd sd;
	int rc = obj_sd_get(x->vol, src, &sd, err);

	if (rc)
		return rc;
	if (sd.plugin == FMT_OBJ_DIR40)
		rc = r4i_fail(err, -EPERM, "hard link to a directory");
	if (!rc && !(rc = edit_find(x, d, name, len, &old, err)))
		rc = r4i_fail(err, R4_EEXIST, "\"%.*s\" exists", (int)len,
			     name);
	else if (rc == R4_ENOTFOUND)
		rc = 0;
	if (!rc)
		rc = obj_entry_add(x, d, name, len, src, err);
	if (!rc)
		rc = obj_dir_account(x, &d->ref, 1, (int64_t)ebytes(x, len), 0,
				     err);
	if (!rc) {
		sd.st.nlink++;
		sd.st.ctime = x->now;
		sd.st.ctime_ns = 0;
		rc = obj_sd_write(x, src, &sd.st, 0, err);
	}
	obj_sd_put(&sd);
	return rc;
}

static int link_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, void *ctx,
		   struct r4_error *err)
{
	return edit_link_at(x, ctx, d, name, len, err);
}

int r4_link(struct r4_txn *x, const char *existing, const char *path,
	    struct r4_error *err)
{
	struct r4_objref src;
	int rc = edit_check(x, err);

	if (!rc)
		rc = edit_lookup(x, existing, &src, err);
	return rc ? rc : edit_by_path(x, path, link_at, &src, err);
}
