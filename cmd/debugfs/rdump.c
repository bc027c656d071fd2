/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: rdump PATH HOSTDIR: copy a tree out of the volume.
 *
 * Everything is created relative to directory descriptors this command
 * made itself (mkdirat + openat with O_NOFOLLOW), with O_EXCL for files,
 * so a symlink in the image is written as a symlink and never followed,
 * names holding '/' or being "." / ".." are refused, and nothing that
 * exists already is overwritten. Kept: mode, owner (when run as root),
 * atime and mtime, symlinks, hard links (a second name of an object
 * becomes link()), fifos, sockets and device nodes (devices only as
 * root). A directory reached twice (a second name of a directory that
 * only a damaged or crafted image has, a loop when it names one above
 * it) is dumped once: the later name is an error naming both paths, and
 * nothing below it is walked again. At the end one syncfs makes all of
 * it durable (dbg_sync_tree). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "../common/common.h"
#include "debugfs.h"
#include "r4/util.h"

#define MAX_DEPTH 400
#define TARGET_MAX 4096

struct rd {
	struct dbg *d;
	int rootfd;
	int as_root;
	struct r4_u64map dirs;	/* oid -> path (char *, relative to
				 * HOSTDIR) of the directories entered */
	struct r4_u64map links;	/* oid -> first path (char *, relative to
				 * HOSTDIR) of objects with nlink > 1 */
	uint64_t done;		/* names dumped (--progress-fd) */
	int rc;
	/* The walk (r4_walk): the descriptor and the stat data of each
	 * directory made on the way down, by depth (0: where the start's
	 * entries go); the bytes of each walk path before its rel (1 for
	 * the root's "/a", 0 for "name/a"). */
	int *fd;
	struct r4_stat *st;
	size_t cap;
	size_t skip;
	struct r4_error err;
};

static int rd_err(struct rd *r, const char *rel, const char *what, int e)
{
	/* names from the image: control bytes escaped (r4cmd_errorf) */
	r4cmd_errorf("rdump: %s: %s%s%s", *rel ? rel : ".", what,
		     e ? ": " : "", e ? strerror(e) : "");
	r->rc = DBG_FAIL;
	return DBG_FAIL;
}

/* Room for the directories of depth 0 .. depth; 0 or -ENOMEM. */
static int rd_reserve(struct rd *r, unsigned depth)
{
	size_t cap = r->cap;
	struct r4_stat *st;

	if (depth < cap)
		return 0;
	if (R4_RESERVE(r->fd, r->cap, (size_t)depth + 1, 64))
		return -ENOMEM;
	st = realloc(r->st, r->cap * sizeof(*st));
	if (!st) {
		r->cap = cap;
		return -ENOMEM;
	}
	r->st = st;
	return 0;
}

static void link_add(struct rd *r, const struct r4_objref *ref,
		     const char *rel)
{
	char *p = strdup(rel), **slot = NULL;

	if (p)
		slot = r4_u64map_get(&r->links, ref->oid, NULL);
	if (slot)
		*slot = p;
	else
		free(p);
}

/* Owner, mode and times of what fd (or dirfd/name when fd < 0) is. */
static void set_attrs(struct rd *r, int fd, int dirfd, const char *name,
		      const struct r4_stat *st, const char *rel)
{
	struct timespec ts[2] = {
		{ .tv_sec = st->atime, .tv_nsec = st->atime_ns % 1000000000 },
		{ .tv_sec = st->mtime, .tv_nsec = st->mtime_ns % 1000000000 }
	};
	int lnk = S_ISLNK(st->mode);

	if (r->as_root && (fd >= 0 ? fchown(fd, st->uid, st->gid) :
			   fchownat(dirfd, name, st->uid, st->gid,
				    AT_SYMLINK_NOFOLLOW)))
		rd_err(r, rel, "cannot set the owner", errno);
	if (!lnk && (fd >= 0 ? fchmod(fd, st->mode & 07777) :
		     fchmodat(dirfd, name, st->mode & 07777, 0)))
		rd_err(r, rel, "cannot set the mode", errno);
	if (fd >= 0 ? futimens(fd, ts) :
	    utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW))
		rd_err(r, rel, "cannot set the times", errno);
}

/* Whether directory ref was entered already (reported, with the path
 * it was dumped under); else it is recorded as entered by path rel. */
static int dir_seen(struct rd *r, const struct r4_objref *ref,
		    const char *rel)
{
	int added = 0;
	char **slot = r4_u64map_get(&r->dirs, ref->oid, &added);

	if (!slot) {
		rd_err(r, rel, "out of memory", 0);
		return 1;
	}
	if (!added) {
		const char *first = *slot && **slot ? *slot : ".";
		size_t n = strlen(first) + 100;
		char *what = malloc(n);

		if (what)
			snprintf(what, n, "not dumped: a second name of the "
				 "directory dumped as %s (a loop or a damaged "
				 "volume: run r4fsck)", first);
		rd_err(r, rel, what ? what : "not dumped: a second name of a "
		       "directory dumped already", 0);
		free(what);
		return 1;
	}
	*slot = strdup(rel);
	if (!*slot) {
		r4_u64map_del(&r->dirs, ref->oid);
		rd_err(r, rel, "out of memory", 0);
		return 1;
	}
	return 0;
}

/* Make directory name in dirfd for the walk to enter: 1 with its
 * descriptor kept at depth (its attributes are set when the walk leaves
 * it), or 0 (said) when it is not made. */
static int dump_dir(struct rd *r, int dirfd, const char *name,
		    const char *rel, const struct r4_objref *ref,
		    const struct r4_stat *st, unsigned depth)
{
	int fd;

	/* one descriptor a level: the depth is bounded, and said */
	if (depth > MAX_DEPTH) {
		rd_err(r, rel, "directories nested too deep", 0);
		return 0;
	}
	if (dir_seen(r, ref, rel))
		return 0;
	if (rd_reserve(r, depth)) {
		rd_err(r, rel, "out of memory", 0);
		return 0;
	}
	if (mkdirat(dirfd, name, 0700)) {
		rd_err(r, rel, "cannot make the directory", errno);
		return 0;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0) {
		rd_err(r, rel, "cannot open the new directory", errno);
		return 0;
	}
	r->fd[depth] = fd;
	r->st[depth] = *st;
	return 1;
}

/* 1 when the file was made by this run (a later name of the object
 * may become a hard link to it), 0 when not. */
static int dump_file(struct rd *r, int dirfd, const char *name,
		     const char *rel, const struct r4_objref *ref,
		     const struct r4_stat *st)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, 0600);

	if (fd < 0) {
		rd_err(r, rel, errno == EEXIST ? "exists already (rdump never "
		       "overwrites)" : "cannot create", errno == EEXIST ?
		       0 : errno);
		return 0;
	}
	int made = 1;

	if (dbg_copy_out(r->d, rel, ref, fd)) {
		/* No short or empty file left as if it were the content. */
		r->rc = DBG_FAIL;
		close(fd);
		unlinkat(dirfd, name, 0);
		return 0;
	}
	set_attrs(r, fd, -1, NULL, st, rel);
	if (close(fd)) {
		rd_err(r, rel, "cannot write", errno);
		made = 0;
	}
	return made;
}

static int dump_special(struct rd *r, int dirfd, const char *name,
			const char *rel, const struct r4_objref *ref,
			const struct r4_stat *st)
{
	struct r4_error err = { 0 };
	char target[TARGET_MAX];
	int rc;

	if (S_ISLNK(st->mode)) {
		rc = r4_readlink(r->d->vol, ref, target, sizeof(target), NULL,
				 &err);
		if (rc) {
			dbg_fail(&err, rel, rc);
			r->rc = DBG_FAIL;
			return 0;
		}
		rc = symlinkat(target, dirfd, name);
	} else if (S_ISCHR(st->mode) || S_ISBLK(st->mode)) {
		if (!r->as_root) {
			r4cmd_warnf("rdump: %s: device node skipped (needs "
				    "root)", rel);
			return 0;
		}
		rc = mknodat(dirfd, name, st->mode & S_IFMT, makedev(
			     r4_rdev_major(st->rdev), r4_rdev_minor(st->rdev)));
	} else if (S_ISFIFO(st->mode) || S_ISSOCK(st->mode)) {
		rc = mknodat(dirfd, name, (st->mode & S_IFMT) | 0600, 0);
	} else {
		rd_err(r, rel, "unknown file type", 0);
		return 0;
	}
	if (rc) {
		rd_err(r, rel, "cannot create", errno);
		return 0;
	}
	set_attrs(r, -1, dirfd, name, st, rel);
	return 1;
}

/* The entry name of directory dirfd (rel its path below HOSTDIR), at
 * depth: 1 when it is a directory made (dump_dir), else 0. */
static int dump_entry(struct rd *r, int dirfd, const char *rel,
		      const char *name, const struct r4_objref *ref,
		      unsigned depth)
{
	struct r4_error err = { 0 };
	char **ln;
	struct r4_stat st;
	int rc;

	rc = r4_stat(r->d->vol, ref, &st, &err);
	/* --progress-fd: names dumped of the volume's objects (an estimate
	 * of a subtree's, which the last event closes) */
	if (r4cmd_progress_events())
		r4cmd_progress("rdump", ++r->done, r->d->si.file_count);
	if (rc) {
		dbg_fail(&err, rel, rc);
		r->rc = DBG_FAIL;
		return 0;
	}
	if (S_ISDIR(st.mode))
		return dump_dir(r, dirfd, name, rel, ref, &st, depth);
	if (st.nlink > 1 &&
		   (ln = r4_u64map_find(&r->links, ref->oid))) {
		if (linkat(r->rootfd, *ln, dirfd, name, 0))
			rd_err(r, rel, "cannot make a hard link", errno);
	} else {
		/* Only a file this run made may take the object's other
		 * names as hard links: never one the user had there. */
		int made = S_ISREG(st.mode) ?
			   dump_file(r, dirfd, name, rel, ref, &st) :
			   dump_special(r, dirfd, name, rel, ref, &st);

		if (made && st.nlink > 1)
			link_add(r, ref, rel);
	}
	return 0;
}

/* The walk leaves directory e (made at e->depth): what stopped the walk
 * of its entries is said, its attributes set. */
static int rd_leave(struct rd *r, const struct r4_walk_entry *e,
		    const char *rel)
{
	int fd = r->fd[e->depth];

	if (e->error) {
		r4cmd_errorf("rdump: %s: cannot list the directory: %s",
			     *rel ? rel : ".", r->err.msg[0] ? r->err.msg :
			     r4_strerror(e->error));
		r->rc = DBG_FAIL;
	}
	set_attrs(r, fd, -1, NULL, &r->st[e->depth], rel);
	close(fd);
	return 0;
}

/* r4_walk's callback: each entry below the start, key order. */
static int rd_entry(void *ctx, const struct r4_walk_entry *e)
{
	struct rd *r = ctx;
	const char *rel = e->path + r->skip;
	size_t dlen = (size_t)(e->name - e->path) - 1;
	char *dir;
	int made;

	if (e->leave)
		return rd_leave(r, e, rel);
	if (!e->name_len || memchr(e->name, '/', e->name_len) ||
	    memchr(e->name, 0, e->name_len)) {
		dir = strndup(e->path, dlen);
		rd_err(r, dir && dlen > r->skip ? dir + r->skip : "",
		       "skipped an entry whose name holds '/' or NUL", 0);
		free(dir);
		return R4_WALK_SKIP;
	}
	made = dump_entry(r, r->fd[e->depth - 1], rel, e->name, &e->target,
			  e->depth);
	if (made && !e->is_dir) {
		/* a directory's mode on what the walk does not take for
		 * one (a damaged stat data): made, and left empty */
		set_attrs(r, r->fd[e->depth], -1, NULL, &r->st[e->depth], rel);
		close(r->fd[e->depth]);
	}
	return made && e->is_dir ? 0 : R4_WALK_SKIP;
}

/* The entries below directory ref into fd0, start_path "" (the root:
 * its entries go into HOSTDIR itself) or the name it was made under. */
static void rd_walk(struct rd *r, const struct r4_objref *ref,
		    const char *start_path, int fd0)
{
	int rc;

	if (rd_reserve(r, 0)) {
		rd_err(r, start_path, "out of memory", 0);
		return;
	}
	r->fd[0] = fd0;
	r->skip = *start_path ? 0 : 1;
	memset(&r->err, 0, sizeof(r->err));
	rc = r4_walk(r->d->vol, ref, start_path, 0, rd_entry, r, &r->err);
	if (rc) {
		r4cmd_errorf("rdump: %s: cannot list the directory: %s",
			     *start_path ? start_path : ".",
			     r->err.msg[0] ? r->err.msg : r4_strerror(rc));
		r->rc = DBG_FAIL;
	}
}

static const char *base_name(const char *path)
{
	static char buf[256];
	size_t n = strlen(path);
	const char *b;

	while (n > 1 && path[n - 1] == '/')
		n--;
	b = path + n;
	while (b > path && b[-1] != '/')
		b--;
	if ((size_t)(path + n - b) >= sizeof(buf))
		return NULL;
	memcpy(buf, b, (size_t)(path + n - b));
	buf[path + n - b] = '\0';
	return buf;
}

/* A map of oid to a path it owns: the paths freed, then the map. */
static void free_paths(struct r4_u64map *m)
{
	for (size_t i = r4_u64map_next(m, 0); i < m->cap;
	     i = r4_u64map_next(m, i + 1))
		free(*(char **)r4_u64map_val(m, i));
	r4_u64map_fini(m);
}

int dbg_rdump(struct dbg *d, int argc, const char **argv)
{
	struct rd r = { .d = d, .as_root = geteuid() == 0, .rc = DBG_OK };
	struct r4_error err = { 0 };
	struct r4_objref ref, root;
	struct r4_stat st;
	const char *name;
	int manifest = 0;

	r4_u64map_init(&r.dirs, sizeof(char *));
	r4_u64map_init(&r.links, sizeof(char *));

	if (argc == 4 && !strcmp(argv[1], "--manifest")) {
		/* After the dump, the sha256 of every file dumped. */
		manifest = 1;
		argv++;
		argc--;
	}
	if (argc != 3)
		return dbg_usage(argv[0]);
	if (dbg_resolve(d, argv[1], &ref))
		return DBG_FAIL;
	r.rootfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.rootfd < 0) {
		r4cmd_errorf("rdump: %s: %s", argv[2], strerror(errno));
		return DBG_FAIL;
	}
	name = base_name(argv[1]);
	r4cmd_progress_kind("rdump", "files");
	if (r4_root(d->vol, &root, &err) || r4_stat(d->vol, &ref, &st, &err)) {
		r.rc = dbg_fail(&err, argv[1], err.code ? err.code :
				R4_ECORRUPT);
	} else if (root.oid == ref.oid && root.locality == ref.locality) {
		/* The root has no name: its entries go into HOSTDIR, which
		 * takes the root's owner, mode and times. */
		dir_seen(&r, &ref, "");
		rd_walk(&r, &ref, "", r.rootfd);
		set_attrs(&r, r.rootfd, -1, NULL, &st, "");
	} else if (!name || !*name || !strcmp(name, ".") ||
		   !strcmp(name, "..")) {
		rd_err(&r, argv[1], "cannot take a name from the path", 0);
	} else if (dump_entry(&r, r.rootfd, name, name, &ref, 0)) {
		rd_walk(&r, &ref, name, r.fd[0]);
		set_attrs(&r, r.fd[0], -1, NULL, &r.st[0], name);
		close(r.fd[0]);
	}
	r.rc = dbg_sync_tree("rdump", r.rootfd, argv[2]) ? DBG_FAIL : r.rc;
	close(r.rootfd);
	free(r.fd);
	free(r.st);
	if (r4cmd_progress_events()) {
		r4cmd_progress_end();
		r4cmd_progress_finish();
	}
	free_paths(&r.links);
	free_paths(&r.dirs);
	if (manifest && dbg_manifest(d, argv[1]) != DBG_OK)
		r.rc = DBG_FAIL;
	return r.rc;
}
