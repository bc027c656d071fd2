/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: removing names and objects: unlink, rmdir, remove_tree. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "libimage/obj/edit_int.h"
#include "libimage/vol/volume.h"
#include "libimage/util/err.h"
#include "libimage/txn/txn.h"
#include "format/plugin.h"
#include "r4/util.h"

static size_t ebytes(const struct r4_txn *x, size_t len)
{
	return fmt_cde40_entry_bytes(x->vol->keypol,
		fmt_entry_name_stored(x->vol->keypol, len) ? len : 0);
}

/* One name of obj is gone: the object goes with its last one. */
static int drop_link(struct r4_txn *x, const struct r4_objref *ref,
		     struct obj_sd *sd, struct r4_error *err)
{
	int rc = 0;

	if (sd->st.nlink > 1) {
		sd->st.nlink--;
		sd->st.ctime = x->now;
		sd->st.ctime_ns = 0;
		return obj_sd_write(x, ref, &sd->st, 0, err);
	}
	if (sd->plugin == FMT_OBJ_REG40 || sd->plugin == FMT_OBJ_CCREG40)
		rc = obj_body_kill(x, ref, err);
	if (!rc)
		rc = obj_sd_delete(x, ref, err);
	if (!rc)
		txn_add_files(x->t, -1);
	return rc;
}

static int lookup_sd(struct r4_txn *x, const struct obj_dir *d,
		     const char *name, size_t len, struct r4_objref *ref,
		     struct obj_sd *sd, struct r4_error *err)
{
	int rc = edit_find(x, d, name, len, ref, err);

	if (rc == R4_ENOTFOUND)
		return r4i_fail(err, R4_ENOTFOUND, "no entry \"%.*s\"",
			       (int)len, name);
	return rc ? rc : obj_sd_get_txn(x, ref, sd, err);
}

int edit_unlink_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, struct r4_error *err)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = lookup_sd(x, d, name, len, &ref, &sd, err);

	if (rc)
		return rc;
	if (sd.plugin == FMT_OBJ_DIR40)
		rc = r4i_fail(err, -EISDIR, "\"%.*s\" is a directory",
			     (int)len, name);
	if (!rc)
		rc = obj_entry_del(x, d, name, len, err);
	if (!rc)
		rc = obj_dir_account(x, &d->ref, -1, -(int64_t)ebytes(x, len),
				     0, err);
	if (!rc)
		rc = drop_link(x, &ref, &sd, err);
	obj_sd_put(&sd);
	return rc;
}

static int count_fn(void *ctx, const char *name, size_t len,
		    const struct fmt_key *key, const struct r4_objref *target)
{
	(void)key;
	(void)target;
	if (!(len == 1 && name[0] == '.') &&
	    !(len == 2 && !memcmp(name, "..", 2)))
		++*(uint64_t *)ctx;
	return 0;
}

int edit_rmdir_at(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, struct r4_error *err)
{
	struct r4_objref ref;
	struct obj_sd sd;
	uint64_t n = 0;
	int rc = lookup_sd(x, d, name, len, &ref, &sd, err);

	if (rc)
		return rc;
	if (sd.plugin != FMT_OBJ_DIR40)
		rc = r4i_fail(err, -ENOTDIR, "\"%.*s\" is not a directory",
			     (int)len, name);
	if (!rc)
		rc = obj_dir_iter(x->vol, ref.oid, count_fn, &n, err);
	if (!rc && n)
		rc = r4i_fail(err, -ENOTEMPTY, "directory \"%.*s\" is not "
			     "empty", (int)len, name);
	obj_sd_put(&sd);
	if (!rc)
		rc = obj_entry_del(x, d, name, len, err);
	if (!rc)
		rc = obj_dir_account(x, &d->ref, -1, -(int64_t)ebytes(x, len),
				     -1, err);
	if (!rc)
		rc = obj_dir_kill(x, ref.oid, err);
	if (!rc)
		rc = obj_sd_delete(x, &ref, err);
	if (!rc)
		txn_add_files(x->t, -1);
	return rc;
}

/* remove_tree: the walk (r4_walk) finds what goes, in the order it goes
 * (each directory's entries in key order, a directory after its
 * entries), and checks every directory on the way before anything is
 * removed; then the list is removed. No recursion and no depth limit. */
struct rm_item {
	struct obj_dir d;	/* the directory holding it */
	char *name;
	size_t len;
	int is_dir;
};

struct rmt {
	struct r4_txn *x;
	struct r4_error *err;
	struct obj_dir *dirs;	/* by depth: 0 the tree's top */
	size_t ndirs;
	struct rm_item *v;
	size_t n, cap;
};

static int rm_add(struct rmt *t, const struct obj_dir *d, const char *name,
		  size_t len, int is_dir)
{
	struct rm_item *it;

	if (R4_RESERVE(t->v, t->cap, t->n + 1, 64))
		return r4i_fail(t->err, -ENOMEM, "out of memory");
	it = &t->v[t->n];
	it->name = malloc(len + 1);
	if (!it->name)
		return r4i_fail(t->err, -ENOMEM, "out of memory");
	memcpy(it->name, name, len);
	it->name[len] = '\0';
	it->len = len;
	it->d = *d;
	it->is_dir = is_dir;
	t->n++;
	return 0;
}

/* Only a directory's one name leads into it: one whose ".." names the
 * directory holding it. A second name (the root, one above: a loop, or
 * one elsewhere), which only a damaged volume has, is refused before
 * anything is removed. The directory opened into sub. */
static int rm_check_dir(struct r4_txn *x, uint64_t parent,
			const struct r4_objref *ref, const char *name,
			size_t len, int again, struct obj_dir *sub,
			struct r4_error *err)
{
	struct r4_objref up;
	int rc = obj_dir_open(x, ref, sub, err);

	if (!rc)
		rc = edit_find(x, sub, "..", 2, &up, err);
	if (!rc && (again || ref->oid == FMT_ROOT_OID || up.oid != parent))
		return r4i_fail(err, R4_ELOOP, "\"%.*s\" is a second name of "
				"directory %llx (its \"..\" names %llx): run "
				"r4fsck", (int)len, name,
				(unsigned long long)ref->oid,
				(unsigned long long)up.oid);
	if (rc == R4_ENOTFOUND)
		return r4i_fail(err, R4_ECORRUPT, "directory \"%.*s\" has no "
				"\"..\": run r4fsck", (int)len, name);
	return rc;
}

static int rm_entry(void *ctx, const struct r4_walk_entry *e)
{
	struct rmt *t = ctx;
	const struct obj_dir *parent = &t->dirs[e->depth - 1];
	int rc;

	if (e->leave)
		return e->error ? e->error :
		       rm_add(t, parent, e->name, e->name_len, 1);
	if (!e->is_dir)
		return rm_add(t, parent, e->name, e->name_len, 0);
	/* growing dirs moves it: parent is taken again after */
	if (R4_RESERVE(t->dirs, t->ndirs, (size_t)e->depth + 1, 16))
		return r4i_fail(t->err, -ENOMEM, "out of memory");
	parent = &t->dirs[e->depth - 1];
	rc = rm_check_dir(t->x, parent->ref.oid, &e->target, e->name,
			  e->name_len, e->again, &t->dirs[e->depth], t->err);
	return rc;
}

int edit_rmtree_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, unsigned depth,
		   struct r4_error *err)
{
	struct rmt t = { .x = x, .err = err };
	struct r4_objref ref;
	int rc;

	rc = edit_find(x, d, name, len, &ref, err);
	if (rc == R4_ENOTFOUND)
		return r4i_fail(err, rc, "no entry \"%.*s\"", (int)len, name);
	if (!rc && R4_RESERVE(t.dirs, t.ndirs, 1, 16))
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = rm_check_dir(x, d->ref.oid, &ref, name, len, 0,
				  &t.dirs[0], err);
	if (!rc)
		rc = r4_walk(x->vol, &ref, "", 0, rm_entry, &t, err);
	for (size_t i = 0; !rc && i < t.n; i++)
		rc = t.v[i].is_dir ?
		     edit_rmdir_at(x, &t.v[i].d, t.v[i].name, t.v[i].len, err) :
		     edit_unlink_at(x, &t.v[i].d, t.v[i].name, t.v[i].len, err);
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i].name);
	free(t.v);
	free(t.dirs);
	return rc ? rc : edit_rmdir_at(x, d, name, len, err);
}

int edit_remove_any(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, unsigned recursive,
		    struct r4_error *err)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = lookup_sd(x, d, name, len, &ref, &sd, err), isdir;

	if (rc)
		return rc;
	isdir = sd.plugin == FMT_OBJ_DIR40;
	obj_sd_put(&sd);
	if (!isdir)
		return edit_unlink_at(x, d, name, len, err);
	return recursive ? edit_rmtree_at(x, d, name, len, recursive, err) :
			   edit_rmdir_at(x, d, name, len, err);
}

static int unlink_at(struct r4_txn *x, const struct obj_dir *d,
		     const char *name, size_t len, void *ctx,
		     struct r4_error *err)
{
	return edit_unlink_at(x, d, name, len, err);
}

static int rmdir_at(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, void *ctx,
		    struct r4_error *err)
{
	return edit_rmdir_at(x, d, name, len, err);
}

static int rmtree_at(struct r4_txn *x, const struct obj_dir *d,
		     const char *name, size_t len, void *ctx,
		     struct r4_error *err)
{
	return edit_rmtree_at(x, d, name, len, 0, err);
}

int r4_unlink(struct r4_txn *x, const char *path, struct r4_error *err)
{
	return edit_by_path(x, path, unlink_at, NULL, err);
}

int r4_rmdir(struct r4_txn *x, const char *path, struct r4_error *err)
{
	return edit_by_path(x, path, rmdir_at, NULL, err);
}

int r4_remove_tree(struct r4_txn *x, const char *path, struct r4_error *err)
{
	return edit_by_path(x, path, rmtree_at, NULL, err);
}
