/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the sink every source feeds (see tar.h and r4/archive.h for
 * the safety rules it applies). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "r4/util.h"
#include "r4/edit.h"
#include "libimage/util/err.h"
#include "libimage/tar/tar.h"

/* Warnings naming an entry with extended attributes; the rest are only
 * counted (tar_sink_finish sums them up). */
#define XATTR_WARN_MAX 5

struct tar_dir_time {
	char *path;		/* "/a/b" */
	struct r4_attr a;	/* the times */
};

/* types map value for a path left out by --exclude. */
#define TAR_EXCLUDED 100
/* types map value for a path looked up in the volume and not there. */
#define TAR_ABSENT 101

void tar_sink_init(struct tar_sink *s, struct r4_pack *b,
		   const struct r4_archive_opts *o, const char *source)
{
	memset(s, 0, sizeof(*s));
	s->build = b;
	s->opts = o;
	s->source = source;
	tar_map_init(&s->types);
	tar_map_init(&s->links);
	tar_map_init(&s->fresh);
	tar_map_init(&s->added);
}

void tar_sink_init_txn(struct tar_sink *s, struct r4_txn *t,
		       struct r4_vol *vol, const struct r4_archive_opts *o,
		       const char *source)
{
	tar_sink_init(s, NULL, o, source);
	s->txn = t;
	s->vol = vol;
}

void tar_sink_free(struct tar_sink *s)
{
	if (s) {
		tar_map_free(&s->types);
		tar_map_free(&s->links);
		tar_map_free(&s->fresh);
		tar_map_free(&s->added);
		for (size_t i = 0; i < s->dirs_len; i++)
			free(s->dirs[i].path);
		free(s->dirs);
		s->dirs = NULL;
		s->dirs_len = s->dirs_cap = 0;
	}
}

/* A directory added by a transaction: remember its times. */
static int dir_time(struct tar_sink *s, const struct r4_entry *e,
		    const char *path)
{
	struct tar_dir_time *d;
	size_t n = strlen(path);

	if (R4_RESERVE(s->dirs, s->dirs_cap, s->dirs_len + 1, 64))
		return -ENOMEM;
	d = &s->dirs[s->dirs_len];
	memset(d, 0, sizeof(*d));
	if (!(d->path = malloc(n + 2)))
		return -ENOMEM;
	d->path[0] = '/';
	memcpy(d->path + 1, path, n + 1);
	d->a.atime = e->atime;
	d->a.mtime = e->mtime;
	d->a.ctime = e->ctime;
	d->a.atime_ns = e->atime_ns;
	d->a.mtime_ns = e->mtime_ns;
	d->a.ctime_ns = e->ctime_ns;
	s->dirs_len++;
	return 0;
}

int tar_sink_finish(struct tar_sink *s, struct r4_error *err)
{
	int rc = 0;

	/* in order: a later entry for the same directory wins */
	for (size_t i = 0; !rc && i < s->dirs_len; i++)
		rc = r4_setattr(s->txn, s->dirs[i].path, &s->dirs[i].a,
				R4_ATTR_ATIME | R4_ATTR_MTIME | R4_ATTR_CTIME,
				err);
	if (rc)
		return rc;
	if (s->xattrs_dropped)
		tar_warn(s->opts, "%s: %llu extended attributes or ACLs on "
			 "%llu entries were not stored (Reiser4 cannot hold "
			 "them; --strict makes this an error)", s->source,
			 (unsigned long long)s->xattrs_dropped,
			 (unsigned long long)s->xattr_entries);
	return 0;
}

/* Extended attributes or ACLs the source had for entry raw: counted and
 * warned about, or with strict an error. */
static int drop_xattrs(struct tar_sink *s, unsigned n, const char *first,
		       const char *raw, struct r4_error *err)
{
	if (s->opts->strict)
		return r4i_fail(err, R4_EUNSUPP, "%s: '%s': extended "
			       "attribute or ACL '%s' cannot be stored in "
			       "Reiser4 (--strict)", s->source, raw, first);
	s->xattrs_dropped += n;
	s->xattr_entries++;
	if (s->opts->stats) {
		s->opts->stats->xattrs_dropped += n;
		s->opts->stats->xattr_entries++;
	}
	/* a program that loses its file capabilities still runs, without
	 * the rights it was given: said every time */
	if (s->pend_caps)
		tar_warn(s->opts, "%s: '%s': its file capabilities "
			 "(security.capability) are not stored: the program "
			 "will run without them (set them again with setcap "
			 "on the mounted volume; --strict refuses such input)", s->source,
			 raw);
	else if (s->xattr_entries <= XATTR_WARN_MAX)
		tar_warn(s->opts, "%s: '%s': %u extended attribute%s or ACL%s "
			 "('%s'%s) not stored: Reiser4 cannot hold them",
			 s->source, raw, n, n == 1 ? "" : "s",
			 n == 1 ? "" : "s", first, n == 1 ? "" : ", ...");
	return 0;
}

static int skip(struct tar_sink *s)
{
	if (s->opts->stats)
		s->opts->stats->skipped++;
	return 0;
}

static int image_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return R4_ENT_DIR;
	case S_IFLNK: return R4_ENT_SYMLINK;
	case S_IFCHR: return R4_ENT_CHR;
	case S_IFBLK: return R4_ENT_BLK;
	case S_IFIFO: return R4_ENT_FIFO;
	case S_IFSOCK: return R4_ENT_SOCK;
	default: return R4_ENT_REG;
	}
}

/* The type of path in the volume (transactions), remembered. */
static int lookup_type(struct tar_sink *s, const char *path, size_t len)
{
	struct r4_error tmp = { 0, "", 0 };
	struct r4_objref ref;
	struct r4_stat st;
	char *p;
	size_t dir = len;
	int t = TAR_ABSENT;

	while (dir && path[dir - 1] != '/')
		dir--;
	if (dir && tar_map_get(&s->fresh, path, dir - 1))
		goto out;	/* below a directory the sink made */
	if (!(p = malloc(len + 2)))
		return -1;
	p[0] = '/';
	memcpy(p + 1, path, len);
	p[len + 1] = '\0';
	if (dir && s->txn) {
		/* below the root: as the add reads (no leaf written) */
		uint32_t mode;

		if (!r4_txn_mode(s->txn, p + 1, &mode, &tmp))
			t = image_type(mode);
	} else if (!r4_lookup(s->vol, p, &ref, &tmp) &&
		   !r4_stat(s->vol, &ref, &st, &tmp)) {
		t = image_type(st.mode);
	}
	free(p);
out:
	tar_map_put(&s->types, path, len, t, NULL);
	return t == TAR_ABSENT ? -1 : t;
}

static int type_at(struct tar_sink *s, const char *path, size_t len)
{
	const struct tar_map_ent *m = tar_map_get(&s->types, path, len);

	if (m)
		return m->val == TAR_ABSENT ? -1 : m->val;
	if (s->build)
		return r4_pack_type(s->build, path, len);
	return s->vol ? lookup_type(s, path, len) : -1;
}

/* The root entry of a transaction: its attributes go to "/". */
static int txn_root(struct tar_sink *s, const struct r4_entry *e,
		    struct r4_error *err)
{
	struct r4_attr a = { 0 };

	a.mode = S_IFDIR | (e->mode & 07777);
	a.uid = e->uid;
	a.gid = e->gid;
	a.atime = e->atime;
	a.mtime = e->mtime;
	a.ctime = e->ctime;
	a.atime_ns = e->atime_ns;
	a.mtime_ns = e->mtime_ns;
	a.ctime_ns = e->ctime_ns;
	return r4_setattr(s->txn, "/", &a, R4_ATTR_MODE | R4_ATTR_UID |
			  R4_ATTR_GID | R4_ATTR_ATIME | R4_ATTR_MTIME |
			  R4_ATTR_CTIME, err);
}

/* Hand a checked entry to the build or the transaction. */
static int put(struct tar_sink *s, const struct r4_entry *e,
	       struct r4_error *err)
{
	if (!s->txn)
		return r4_pack_add(s->build, e, err);
	if (!*e->path)
		return txn_root(s, e, err);
	return r4_txn_add_entry(s->txn, e, err);
}

/* The parent at the first len bytes of path has type t: 1 when a path
 * may go through it, else 0 (warned). */
static int parent_ok(struct tar_sink *s, const char *path, size_t len,
		     int t, const char *raw)
{
	if (t == R4_ENT_SYMLINK) {
		tar_warn(s->opts, "%s: skipping '%s': '%.*s' is a symbolic "
			 "link in the image", s->source, raw, (int)len, path);
		return 0;
	}
	if (t >= 0 && t != R4_ENT_DIR && t != TAR_EXCLUDED) {
		tar_warn(s->opts, "%s: skipping '%s': '%.*s' is not a "
			 "directory in the image", s->source, raw, (int)len,
			 path);
		return 0;
	}
	return 1;
}

/* Refuse paths under a symlink or a non-directory already in the image. */
static int parents_ok(struct tar_sink *s, const char *path, const char *raw)
{
	for (const char *p = path; (p = strchr(p, '/')); p++) {
		size_t len = (size_t)(p - path);

		if (!parent_ok(s, path, len, type_at(s, path, len), raw))
			return 0;
	}
	return 1;
}

/* ---- OCI whiteouts --------------------------------------------------- */

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

/* path and everything below it are gone from the volume: the types map
 * says so from now on. */
static int forget(struct tar_sink *s, const char *path, size_t len)
{
	for (size_t i = 0; i < s->types.cap; i++) {
		struct tar_map_ent *m = &s->types.slot[i];

		if (m->key && m->key_len > len && m->key[len] == '/' &&
		    !memcmp(m->key, path, len))
			m->val = TAR_ABSENT;
	}
	return tar_map_put(&s->types, path, len, TAR_ABSENT, NULL);
}

/* Remove path (len bytes) from the volume unless this layer put it
 * there. */
static int wh_remove(struct tar_sink *s, const char *path, size_t len,
		     struct r4_error *err)
{
	int t = type_at(s, path, len), rc;
	char *p;

	if (t < 0 || t == TAR_EXCLUDED || tar_map_get(&s->added, path, len))
		return 0;
	if (!(p = malloc(len + 2)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	p[0] = '/';
	memcpy(p + 1, path, len);
	p[len + 1] = '\0';
	rc = t == R4_ENT_DIR ? r4_remove_tree(s->txn, p, err)
			     : r4_unlink(s->txn, p, err);
	free(p);
	if (rc)
		return rc;
	if (s->opts->stats)
		s->opts->stats->removed++;
	return forget(s, path, len) ? r4i_fail(err, -ENOMEM, "out of memory")
				    : 0;
}

struct wh_names {
	char **v;
	size_t n, cap;
	int oom;
};

static int wh_collect(void *ctx, const char *name, size_t len,
		      const struct r4_objref *target)
{
	struct wh_names *w = ctx;

	(void)target;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (R4_RESERVE(w->v, w->cap, w->n + 1, 16)) {
		w->oom = 1;
		return -ENOMEM;
	}
	if (!(w->v[w->n] = strndup(name, len))) {
		w->oom = 1;
		return -ENOMEM;
	}
	w->n++;
	return 0;
}

/* An opaque directory dir (len bytes, "" the root): what the volume
 * held in it before this layer goes. */
static int wh_opaque(struct tar_sink *s, const char *dir, size_t len,
		     struct r4_error *err)
{
	struct wh_names w = { 0 };
	struct r4_objref ref;
	char *p, *child;
	int rc = 0;

	if (type_at(s, dir, len) != R4_ENT_DIR ||
	    (len && tar_map_get(&s->fresh, dir, len)))
		return 0;	/* nothing below it from the layers below */
	if (!(p = malloc(len + 2)))
		return r4i_fail(err, -ENOMEM, "out of memory");
	p[0] = '/';
	memcpy(p + 1, dir, len);
	p[len + 1] = '\0';
	rc = r4_lookup(s->vol, p, &ref, err);
	free(p);
	if (!rc)
		rc = r4_readdir(s->vol, &ref, wh_collect, &w, err);
	if (w.oom)
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < w.n; i++) {
		size_t cl = len + !!len + strlen(w.v[i]);

		if (!(child = malloc(cl + 1))) {
			rc = r4i_fail(err, -ENOMEM, "out of memory");
			break;
		}
		snprintf(child, cl + 1, "%.*s%s%s", (int)len, dir,
			 len ? "/" : "", w.v[i]);
		rc = wh_remove(s, child, cl, err);
		free(child);
	}
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i]);
	free(w.v);
	return rc;
}

/* An OCI whiteout entry at path (cleaned): applied (or, in a build,
 * only counted) and never stored. 1 when path was one, 0 when it is an
 * ordinary entry, < 0 on error (err names the path it could not
 * remove). */
static int whiteout(struct tar_sink *s, const char *path, const char *raw,
		    struct r4_error *err)
{
	const char *base = strrchr(path, '/');
	size_t dlen;
	int rc;

	base = base ? base + 1 : path;
	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)))
		return 0;
	dlen = base > path ? (size_t)(base - path - 1) : 0;
	if (s->opts->stats)
		s->opts->stats->whiteouts++;
	if (!s->txn)
		return 1;	/* a new build: no layer below */
	if (!parents_ok(s, path, raw))
		return 1;
	if (!strcmp(base, WH_OPAQUE)) {
		rc = wh_opaque(s, path, dlen, err);
	} else {
		size_t nlen = strlen(base) - strlen(WH_PREFIX);
		char *target;

		if (!nlen)
			return 1;
		if (!(target = malloc(dlen + 1 + nlen + 1)))
			return r4i_fail(err, -ENOMEM, "out of memory");
		snprintf(target, dlen + nlen + 2, "%.*s%s%s", (int)dlen, path,
			 dlen ? "/" : "", base + strlen(WH_PREFIX));
		rc = wh_remove(s, target, strlen(target), err);
		free(target);
	}
	return rc < 0 ? rc : 1;
}

/* Check a hard link's target; the link takes its type. 1 ok, 0 skip. */
static int link_target(struct tar_sink *s, struct r4_entry *e,
		       const char *raw, char **clean, int *type,
		       struct r4_error *err)
{
	int fl, t;

	if (!e->target)
		return r4i_fail(err, R4_ECORRUPT, "%s: hard link '%s' has no "
			       "target", s->source, raw);
	if (!(*clean = tar_path_clean(e->target, &fl)))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", s->source);
	if (fl & TAR_PATH_DOTDOT) {
		tar_warn(s->opts, "%s: skipping hard link '%s': its target "
			 "'%s' contains '..'", s->source, raw, e->target);
		return 0;
	}
	t = type_at(s, *clean, strlen(*clean));
	if (t < 0)
		return r4i_fail(err, R4_ENOTFOUND, "%s: hard link '%s': target "
			       "'%s' is not in the archive before it",
			       s->source, raw, e->target);
	if (t == TAR_EXCLUDED || t == R4_ENT_DIR) {
		tar_warn(s->opts, "%s: skipping hard link '%s': target '%s' "
			 "is %s", s->source, raw, e->target,
			 t == R4_ENT_DIR ? "a directory" : "excluded");
		return 0;
	}
	*type = t;
	return 1;
}

/* Record path's type and make its missing parents directories. A build
 * knows the types of the paths it holds (r4_pack_type): there the map
 * only keeps what the build does not, the excluded paths, and those
 * are updated here (a path becomes a directory, or is added after all). */
static int record(struct tar_sink *s, const char *path, int type)
{
	const struct tar_map_ent *m;

	/* a build whose map is empty has nothing here to update */
	if (s->build && !s->types.used)
		return 0;
	for (const char *p = path; (p = strchr(p, '/')); p++) {
		size_t len = (size_t)(p - path);
		int t;

		if (s->build && !tar_map_get(&s->types, path, len))
			continue;
		t = type_at(s, path, len);
		/* a parent the volume did not have: the add made it */
		if (t < 0 && s->txn && (m = tar_map_get(&s->types, path, len)) &&
		    m->val == TAR_ABSENT &&
		    tar_map_put(&s->fresh, path, len, 1, NULL))
			return -ENOMEM;
		if (t != R4_ENT_DIR &&
		    tar_map_put(&s->types, path, len, R4_ENT_DIR, NULL))
			return -ENOMEM;
	}
	if (s->build && !tar_map_get(&s->types, path, strlen(path)))
		return 0;
	m = tar_map_get(&s->types, path, strlen(path));
	if (s->txn && type == R4_ENT_DIR && *path && m &&
	    m->val == TAR_ABSENT &&
	    tar_map_put(&s->fresh, path, strlen(path), 1, NULL))
		return -ENOMEM;
	return tar_map_put(&s->types, path, strlen(path), type, NULL);
}

/* The type of an entry's own path before it is added: as type_at, but
 * a name a big build spilled to $TMPDIR is not looked for there (it is
 * never a directory, and whether the path is one is all the caller
 * asks): a search of the spill's runs for every entry is what the
 * build's probe saves. */
static int entry_type(struct tar_sink *s, const char *path)
{
	size_t len = strlen(path), bad;
	const struct tar_map_ent *m = tar_map_get(&s->types, path, len);
	int bt;

	if (m)
		return m->val == TAR_ABSENT ? -1 : m->val;
	if (s->build)
		return r4_pack_probe(s->build, path, &bad, &bt);
	return s->vol ? lookup_type(s, path, len) : -1;
}

/* Cleaned path: refuse what is unsafe. 1 go on, 0 skip. */
static int check_entry(struct tar_sink *s, struct r4_entry *e,
		       const char *raw, const char *path, int fl)
{
	int old;

	if (fl & TAR_PATH_DOTDOT) {
		tar_warn(s->opts, "%s: skipping '%s': path contains '..'",
			 s->source, raw);
		return 0;
	}
	if ((fl & TAR_PATH_ABS) && !s->warned_abs) {
		s->warned_abs = 1;
		tar_warn(s->opts, "%s: removing leading '/' from member names",
			 s->source);
	}
	if (!*path && e->type != R4_ENT_DIR) {
		tar_warn(s->opts, "%s: skipping '%s': the root must be a "
			 "directory", s->source, raw);
		return 0;
	}
	if (s->build && !s->types.used) {
		/* the build alone knows every type: one walk asks it all */
		size_t bad;
		int bt;

		old = r4_pack_probe(s->build, path, &bad, &bt);
		if (bad && !parent_ok(s, path, bad, bt, raw))
			return 0;
	} else {
		if (!parents_ok(s, path, raw))
			return 0;
		old = entry_type(s, path);
	}
	if (old == R4_ENT_DIR && e->type != R4_ENT_DIR) {
		tar_warn(s->opts, "%s: skipping '%s': cannot replace a "
			 "directory with a non-directory", s->source, raw);
		return 0;
	}
	return 1;
}

/* A hard link e (target already cleaned) carrying the file's data:
 * add the target again with the data, then the earlier links to it. */
static int link_data(struct tar_sink *s, struct r4_entry *e, int type,
		     struct r4_error *err)
{
	struct r4_entry t = *e;
	int rc;

	if (type != R4_ENT_REG)
		return r4i_fail(err, R4_ECORRUPT, "%s: hard link '%s' has "
			       "data but its target is not a regular file",
			       s->source, e->path);
	t.path = e->target;
	t.type = R4_ENT_REG;
	t.target = NULL;
	rc = put(s, &t, err);
	t.type = R4_ENT_HARDLINK;
	t.target = e->target;
	t.data = NULL;
	t.size = 0;
	for (size_t i = 0; !rc && i < s->links.cap; i++) {
		const struct tar_map_ent *m = &s->links.slot[i];

		if (!m->key || !m->str || strcmp(m->str, e->target))
			continue;
		t.path = m->key;
		rc = put(s, &t, err);
	}
	e->data = NULL;
	e->data_ctx = NULL;
	e->size = 0;
	return rc;
}

static int sink_add(struct tar_sink *s, struct r4_entry *e, const char *raw,
		    char *path, int fl, struct r4_error *err)
{
	const char *raw_target = e->target;
	char *target = NULL;
	int type = (int)e->type, rc;

	if (s->opts->oci_whiteouts && !(fl & TAR_PATH_DOTDOT) &&
	    (rc = whiteout(s, path, raw, err)))
		return rc < 0 ? rc : 0;
	if (*path && tar_excluded(s->opts, path))
		return tar_map_put(&s->types, path, strlen(path), TAR_EXCLUDED,
				   NULL) ? r4i_fail(err, -ENOMEM, "out of memory")
					 : 0;
	if (!check_entry(s, e, raw, path, fl))
		return skip(s);
	if (s->pend_xattrs &&
	    (rc = drop_xattrs(s, s->pend_xattrs, s->pend_xattr, raw, err)))
		return rc;
	if (e->type == R4_ENT_HARDLINK) {
		rc = link_target(s, e, raw, &target, &type, err);
		if (rc <= 0) {
			free(target);
			return rc < 0 ? rc : skip(s);
		}
		e->target = target;
	}
	tar_apply_opts(s->opts, e);
	e->path = path;
	rc = 0;
	if (e->type == R4_ENT_HARDLINK && e->data)
		rc = link_data(s, e, type, err);
	if (!rc)
		rc = put(s, e, err);
	if (!rc && s->txn && e->type == R4_ENT_DIR && dir_time(s, e, path))
		rc = -ENOMEM;
	if (!rc && (e->type == R4_ENT_HARDLINK ||
		    tar_map_get(&s->links, path, strlen(path))) &&
	    tar_map_put(&s->links, path, strlen(path), 0,
			e->type == R4_ENT_HARDLINK ? e->target : NULL))
		rc = -ENOMEM;
	e->path = raw;
	e->target = raw_target;
	free(target);
	if (rc)
		return r4i_fail(err, rc, "%s: '%s': cannot add it", s->source,
			       raw);
	if (record(s, path, type) ||
	    (s->txn && s->opts->oci_whiteouts &&
	     tar_map_put(&s->added, path, strlen(path), 1, NULL)))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", s->source);
	if (s->opts->stats) {
		s->opts->stats->entries++;
		if (e->type == R4_ENT_REG)
			s->opts->stats->bytes += e->size;
	}
	if (s->opts->entry)
		s->opts->entry(s->opts->cb_ctx, *path ? path : ".");
	return 0;
}

int tar_sink_add(struct tar_sink *s, struct r4_entry *e, struct r4_error *err)
{
	const char *raw = e->path;
	char *path;
	int fl, rc;

	if (!(path = tar_path_clean(raw, &fl)))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", s->source);
	rc = sink_add(s, e, raw, path, fl, err);
	s->pend_xattrs = 0;
	s->pend_caps = 0;
	free(path);
	return rc;
}
