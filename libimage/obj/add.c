/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_txn_add_entry: one r4pack entry into an existing volume
 * (create or replace; existing directories get their attributes; missing
 * parents are made with mode 0755). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libimage/obj/edit_int.h"
#include "libimage/obj/encode.h"
#include "libimage/vol/volume.h"
#include "libimage/txn/txn.h"
#include "libimage/util/err.h"
#include "format/plugin.h"

#define ADD_MAX_DEPTH 4096
/* node blocks an add keeps in memory before it writes the one it made
 * longest ago (txn_write_behind): 8 MiB of 4 KiB blocks */
#define ADD_WRITE_BEHIND 2048

static size_t add_write_behind = ADD_WRITE_BEHIND;

void obj_add_write_behind(size_t keep)
{
	add_write_behind = keep;
}

/* Walk "a/b/c" making missing directories (owned as the root is) when
 * make is set, else R4_ENOTFOUND for one; d = the last one's parent,
 * name and len the last name. */
static int add_parents_walk(struct r4_txn *x, const char *path,
			    struct obj_dir *d, const char **name,
			    size_t *len, int make, struct r4_error *err)
{
	struct r4_objref root, ref;
	struct r4_attr a;
	struct obj_sd sd;
	const char *p = path, *c, *nc;
	long n = enc_next_name(&p, &c), nn = 0;
	unsigned depth = 0;
	int rc = r4_root(x->vol, &root, err);

	if (!rc)
		rc = obj_sd_get(x->vol, &root, &sd, err);
	if (rc)
		return rc;
	enc_implicit_dir(sd.st.uid, sd.st.gid, x->now, &a);
	obj_sd_put(&sd);
	rc = obj_dir_open(x, &root, d, err);
	for (; !rc && n > 0; n = nn, c = nc) {
		nn = enc_next_name(&p, &nc);
		if (nn <= 0)
			break;
		rc = enc_check_name(path, (size_t)n, err);
		if (!rc && ++depth > ADD_MAX_DEPTH)
			rc = r4i_fail(err, R4_EINVAL, "%s: too deep", path);
		if (!rc)
			rc = edit_find(x, d, c, (size_t)n, &ref, err);
		if (rc == R4_ENOTFOUND && make) {
			rc = edit_mkdir_at(x, d, c, (size_t)n, &a, err);
			if (!rc)
				rc = edit_find(x, d, c, (size_t)n, &ref, err);
		}
		if (!rc)
			rc = obj_dir_open(x, &ref, d, err);
	}
	if (rc)
		return rc;
	if (n < 0 || nn < 0)
		return enc_dotdot(path, err);
	if (!n)
		return r4i_fail(err, R4_EINVAL, "%s: no name", path);
	*name = c;
	*len = (size_t)n;
	return enc_check_name(path, *len, err);
}

/* The parent of path from x->pd_path when path is "PREFIX/name" with
 * the same PREFIX as the last add's, name a plain one. 1 when found. */
static int add_parent_again(struct r4_txn *x, const char *path,
			    struct obj_dir *d, const char **name,
			    size_t *len)
{
	const char *s = strrchr(path, '/');
	size_t n;

	if (!x->pd_path || !s || (size_t)(s + 1 - path) != x->pd_len ||
	    memcmp(path, x->pd_path, x->pd_len))
		return 0;
	n = strlen(s + 1);
	if (!n || (n == 1 && s[1] == '.') ||
	    (n == 2 && !memcmp(s + 1, "..", 2)))
		return 0;
	d->ref = x->pd_ref;
	d->hash = x->pd_hash;
	d->fibre = x->pd_fibre;
	*name = s + 1;
	*len = n;
	return 1;
}

/* Remember the parent add_parents_walk found for path (with a '/'). */
static void add_parent_keep(struct r4_txn *x, const char *path,
			    const struct obj_dir *d)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s + 1 - path) : 0;
	char *p = n ? malloc(n) : NULL;

	free(x->pd_path);
	x->pd_path = NULL;
	x->pd_len = 0;
	if (!p)
		return;
	memcpy(p, path, n);
	x->pd_path = p;
	x->pd_len = n;
	x->pd_ref = d->ref;
	x->pd_hash = d->hash;
	x->pd_fibre = d->fibre;
}

/* Walk "a/b/c" (or take the parent the last add reached) */
static int add_parents(struct r4_txn *x, const char *path, struct obj_dir *d,
		       const char **name, size_t *len, int make,
		       struct r4_error *err)
{
	int rc;

	if (add_parent_again(x, path, d, name, len))
		return enc_check_name(path, *len, err);
	rc = add_parents_walk(x, path, d, name, len, make, err);
	if (!rc)
		add_parent_keep(x, path, d);
	return rc;
}

static int add_dir(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, const struct r4_attr *a,
		   struct r4_error *err)
{
	struct r4_objref ref;
	struct obj_sd sd;
	int rc = edit_find(x, d, name, len, &ref, err);

	if (rc == R4_ENOTFOUND)
		return edit_mkdir_at(x, d, name, len, a, err);
	if (!rc)
		rc = obj_sd_get(x->vol, &ref, &sd, err);
	if (rc)
		return rc;
	if (sd.plugin == FMT_OBJ_DIR40) {
		edit_apply_attr(&sd.st, a, R4_ATTR_MODE | R4_ATTR_UID |
				R4_ATTR_GID | R4_ATTR_ATIME | R4_ATTR_MTIME |
				R4_ATTR_CTIME);
		rc = obj_sd_write(x, &ref, &sd.st, 0, err);
		obj_sd_put(&sd);
		return rc;
	}
	obj_sd_put(&sd);
	rc = edit_unlink_at(x, d, name, len, err);
	return rc ? rc : edit_mkdir_at(x, d, name, len, a, err);
}

/* Clear the way for a non-directory: an empty directory goes, a
 * populated one is an error. */
static int add_clear(struct r4_txn *x, const struct obj_dir *d,
		     const char *name, size_t len, struct r4_error *err)
{
	struct r4_objref ref;
	int rc = edit_find(x, d, name, len, &ref, err);

	if (rc == R4_ENOTFOUND)
		return 0;
	return rc ? rc : edit_remove_any(x, d, name, len, 0, err);
}

static int add_link(struct r4_txn *x, const struct r4_entry *e,
		    const struct obj_dir *d, const char *name, size_t len,
		    struct r4_error *err)
{
	struct r4_objref src, cur;
	size_t n = e->target ? strlen(e->target) : 0;
	char *p = malloc(n + 2);
	int rc;

	if (!p)
		return r4i_fail(err, -ENOMEM, "out of memory");
	p[0] = '/';
	memcpy(p + 1, e->target ? e->target : "", n + 1);
	rc = r4_lookup(x->vol, p, &src, err);
	free(p);
	if (rc)
		return r4i_fail_over(err, rc, "%s: hard link target \"%s\" not "
				    "found", e->path, e->target ? e->target :
				    "");
	rc = edit_find(x, d, name, len, &cur, err);
	if (!rc && cur.oid == src.oid)
		return 0;
	if (!rc)
		rc = edit_remove_any(x, d, name, len, 0, err);
	else if (rc == R4_ENOTFOUND)
		rc = 0;
	return rc ? rc : edit_link_at(x, &src, d, name, len, err);
}

static int add_special(struct r4_txn *x, const struct r4_entry *e,
		       const struct obj_dir *d, const char *name, size_t len,
		       const struct r4_attr *a, struct r4_error *err)
{
	struct fmt_stat st;
	uint32_t type = a->mode & S_IFMT;
	int rc = add_clear(x, d, name, len, err);

	if (rc)
		return rc;
	/* enc_check_entry passed: the target and device numbers fit */
	edit_attr_stat(a, type, &st);
	if (type == S_IFLNK)
		enc_stat_symlink(&st, e->target, strlen(e->target));
	else if (type == S_IFCHR || type == S_IFBLK)
		st.rdev_or_bytes = enc_rdev(a->rdev_major, a->rdev_minor);
	return edit_new(x, d, name, len, &st, NULL, NULL, NULL, err);
}

int r4_txn_add_entry(struct r4_txn *x, const struct r4_entry *e,
		     struct r4_error *err)
{
	uint64_t mark = edit_mark(x);
	struct r4_attr a;
	struct obj_dir d;
	const char *name = NULL;
	size_t len = 0;
	int rc = edit_check(x, err);

	/* a batch of adds writes each leaf it fills once, not at every
	 * insert (r4_txn_commit writes what is deferred) */
	if (!rc)
		rc = tree_mod_lazy(&x->mod, err);
	/* and writes the nodes it is done with before the commit (the
	 * relocate set may go at any time before it), so their buffers
	 * are reused instead of fresh memory for every node */
	if (!rc)
		rc = txn_write_behind(x->t, add_write_behind, err);
	if (!rc)
		rc = enc_check_entry(e, tree_max_item(&x->mod), err);
	if (!rc && !*e->path)
		rc = r4i_fail(err, R4_EINVAL, "an entry without a path");
	if (!rc)
		rc = add_parents(x, e->path, &d, &name, &len, 1, err);
	if (rc)
		return edit_done(x, mark, rc);
	enc_entry_attr(e, &a);
	switch (e->type) {
	case R4_ENT_DIR:
		rc = add_dir(x, &d, name, len, &a, err);
		break;
	case R4_ENT_REG:
		rc = edit_create_at(x, &d, name, len, &a, e->size, e->data,
				    e->data_ctx, err);
		break;
	case R4_ENT_HARDLINK:
		rc = add_link(x, e, &d, name, len, err);
		break;
	default:
		rc = add_special(x, e, &d, name, len, &a, err);
		break;
	}
	/* a name it replaced made the walk's directory forgotten; only a
	 * name in d went, so d is still where e->path's parent is */
	if (!rc && !x->pd_path)
		add_parent_keep(x, e->path, &d);
	return edit_done(x, mark, rc);
}

int r4_txn_mode(struct r4_txn *x, const char *path, uint32_t *mode,
		struct r4_error *err)
{
	struct r4_objref ref;
	struct obj_sd sd;
	struct obj_dir d;
	const char *name = NULL;
	size_t len = 0;
	int rc = edit_check(x, err);

	if (!rc)
		rc = add_parents(x, path, &d, &name, &len, 0, err);
	if (!rc)
		rc = edit_find(x, &d, name, len, &ref, err);
	if (!rc)
		rc = obj_sd_get_txn(x, &ref, &sd, err);
	if (rc)
		return rc;
	*mode = sd.st.mode;
	obj_sd_put(&sd);
	return 0;
}
