/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: a host directory as a build source: the walk (lstat, names in
 * byte order, hard links by device and inode) and the deferred reader
 * of file data (SEEK_DATA / SEEK_HOLE keep holes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "libimage/util/err.h"
#include "libimage/tar/tar.h"
#include "r4/util.h"

/* A file's data is read in chunks of this size: small enough to stay in
 * the CPU's cache until the compressor or the writer has read it back
 * (1 MiB cost lzo1 about 5% more CPU), large enough that the read calls
 * do not count. */
#define DIR_CHUNK (256u << 10)

/* ---- Deferred data ------------------------------------------------------- */

struct dir_data {
	int fd;
	char *path;
	uint64_t size, pos;
	int no_seek_data;
	char *buf;
};

static int dir_data_fail(struct dir_data *d, struct r4_error *err, int e,
			 const char *what)
{
	return r4i_fail(err, -e, "%s: %s: %s", d->path, what, strerror(e));
}

/* Next data run at or after d->pos: [*start, *end). 0 at the end. */
static int dir_next_run(struct dir_data *d, uint64_t *start, uint64_t *end,
			struct r4_error *err)
{
	off_t s, e;

	if (d->pos >= d->size)
		return 0;
	if (d->no_seek_data) {
		*start = d->pos;
		*end = d->size;
		return 1;
	}
	s = lseek(d->fd, (off_t)d->pos, SEEK_DATA);
	if (s < 0 && errno == ENXIO)
		return 0;
	if (s < 0 && errno == EINVAL) {
		d->no_seek_data = 1;
		return dir_next_run(d, start, end, err);
	}
	if (s < 0)
		return dir_data_fail(d, err, errno, "seek");
	e = lseek(d->fd, s, SEEK_HOLE);
	if (e < 0)
		return dir_data_fail(d, err, errno, "seek");
	if ((uint64_t)s >= d->size)
		return 0;
	*start = (uint64_t)s;
	*end = (uint64_t)e < d->size ? (uint64_t)e : d->size;
	return 1;
}

static int dir_data_fn(void *ctx, uint64_t *off, const void **buf,
		       size_t *len, struct r4_error *err)
{
	struct dir_data *d = ctx;
	uint64_t start = 0, end = 0;
	size_t want;
	ssize_t n;
	int rc = dir_next_run(d, &start, &end, err);

	if (rc <= 0)
		return rc;
	want = end - start < DIR_CHUNK ? (size_t)(end - start) : DIR_CHUNK;
	do
		n = pread(d->fd, d->buf, want, (off_t)start);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return dir_data_fail(d, err, errno, "read");
	if (n == 0) {		/* the file shrank: the rest is a hole */
		d->pos = d->size;
		return 0;
	}
	d->pos = start + (uint64_t)n;
	*off = start;
	*buf = d->buf;
	*len = (size_t)n;
	return 1;
}

static void dir_data_close(void *ctx)
{
	struct dir_data *d = ctx;

	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	free(d->buf);
	free(d->path);
	free(d);
}

static int dir_data_open(void *src_ctx, const char *path, r4_data_fn *fn,
			 void **ctx, struct r4_error *err)
{
	struct dir_data *d = calloc(1, sizeof(*d));
	struct stat st;
	size_t n;

	if (!d)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	d->fd = -1;
	n = strlen(src_ctx) + strlen(path) + 2;
	d->path = malloc(n);
	d->buf = malloc(DIR_CHUNK);
	if (!d->path || !d->buf) {
		dir_data_close(d);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	snprintf(d->path, n, "%s/%s", (const char *)src_ctx, path);
	d->fd = open(d->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &st)) {
		int rc = dir_data_fail(d, err, errno, "open");

		dir_data_close(d);
		return rc;
	}
	d->size = (uint64_t)st.st_size;
	/* Blocks for every byte: no hole to look for (tar's test too). */
	if ((uint64_t)st.st_blocks * 512 >= d->size)
		d->no_seek_data = 1;
	*fn = dir_data_fn;
	*ctx = d;
	return 0;
}

void r4_pack_dir_source(struct r4_data_source *src, const char *dir)
{
	src->open = dir_data_open;
	src->close = dir_data_close;
	src->src_ctx = (void *)dir;
	src->parallel = 1;	/* each open has its own descriptor and buffer */
}

/* ---- The walk ------------------------------------------------------------ */

struct dir_walk {
	struct tar_sink sink;
	struct tar_map inodes;	/* (dev, ino) -> first path */
	char path[PATH_MAX];	/* host path */
	size_t root_len;	/* host prefix, without the '/' after it */
	int stream;		/* transactions: read file data now */
	uint64_t done;		/* bytes of regular files added (progress) */
	const struct r4_dir_scan *scan;	/* replayed instead of lstat */
	size_t cur;		/* the scan's next record */
	size_t kids;		/* the entries of the directory walked next */
};

/* ---- The scan ahead of an add -------------------------------------------- */

/* What a scan keeps at most; a bigger tree is summed, not kept. */
#define SCAN_MAX_RECS (1u << 17)
#define SCAN_MAX_NAMES (8u << 20)

struct scan_rec {
	struct stat st;
	size_t name;		/* offset in names */
	size_t kids;		/* a directory: the entries below it */
};

struct r4_dir_scan {
	struct scan_rec *rec;
	size_t n, cap, max;	/* max: the most records kept */
	char *names;
	size_t nlen, ncap;
	int whole;		/* every entry kept: the add may replay it */
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in the directory at w->path, sorted. */
static int read_names(struct dir_walk *w, char ***out, size_t *count,
		      struct r4_error *err)
{
	DIR *dp = opendir(w->path);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!dp)
		return r4i_fail(err, -errno, "%s: %s", w->path, strerror(errno));
	while ((errno = 0, de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (R4_RESERVE(names, cap, n + 1, 16))
			goto nomem;
		if (!(names[n] = strdup(de->d_name)))
			goto nomem;
		n++;
	}
	if (errno) {
		int e = errno;

		closedir(dp);
		free_names(names, n);
		return r4i_fail(err, -e, "%s: %s", w->path, strerror(e));
	}
	closedir(dp);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	*out = names;
	*count = n;
	return 0;
nomem:
	closedir(dp);
	free_names(names, n);
	return r4i_fail(err, -ENOMEM, "%s: out of memory", w->path);
}

/* 1: st is a host file o leaves out (the image being written). */
static int skipped(const struct r4_archive_opts *o, const struct stat *st)
{
	for (size_t i = 0; i < o->skip_len; i++)
		if (o->skip[i].dev == (uint64_t)st->st_dev &&
		    o->skip[i].ino == (uint64_t)st->st_ino)
			return 1;
	return 0;
}

/* Drop what a scan kept: the add then walks the tree on its own. */
static void scan_drop(struct r4_dir_scan *s)
{
	free(s->rec);
	free(s->names);
	s->rec = NULL;
	s->names = NULL;
	s->n = s->cap = s->nlen = s->ncap = 0;
	s->whole = 0;
}

/* Keep st and name as the next record: its index, or SIZE_MAX when the
 * scan keeps nothing (any more). */
static size_t scan_keep(struct r4_dir_scan *s, const struct stat *st,
			const char *name)
{
	size_t nl = strlen(name) + 1;

	if (!s->whole)
		return SIZE_MAX;
	if (s->n >= s->max || s->nlen + nl > SCAN_MAX_NAMES ||
	    R4_RESERVE(s->rec, s->cap, s->n + 1, 256) ||
	    R4_RESERVE(s->names, s->ncap, s->nlen + nl, 4096)) {
		scan_drop(s);
		return SIZE_MAX;
	}
	s->rec[s->n].st = *st;
	s->rec[s->n].name = s->nlen;
	s->rec[s->n].kids = 0;
	memcpy(s->names + s->nlen, name, nl);
	s->nlen += nl;
	return s->n++;
}

/* The whole blocks of data of a regular file with one name (holes stay
 * holes: no more than its allocated bytes). */
static uint64_t scan_blocks(const struct stat *st)
{
	uint64_t n = (uint64_t)st->st_size;

	if (!S_ISREG(st->st_mode) || st->st_nlink > 1)
		return 0;
	if ((uint64_t)st->st_blocks * 512 < n)
		n = (uint64_t)st->st_blocks * 512;
	return n / 4096;
}

/* Scan the object at w->path (len bytes, its last name nm) as walk_one
 * will see it: its record, its data blocks, what a directory holds. */
static void scan_one(struct dir_walk *w, struct r4_dir_scan *s,
		     const struct r4_archive_opts *o, size_t len,
		     const char *nm, unsigned depth, uint64_t *blocks)
{
	char **names = NULL;
	size_t me, n = 0;
	struct r4_error err = { 0 };
	struct stat st;

	if (lstat(w->path, &st)) {
		scan_drop(s);
		return;
	}
	me = scan_keep(s, &st, nm);
	if (skipped(o, &st))
		return;
	*blocks += scan_blocks(&st);
	if (!S_ISDIR(st.st_mode))
		return;
	if (depth + 1 > PATH_MAX / 2 || read_names(w, &names, &n, &err)) {
		scan_drop(s);
		return;
	}
	if (me != SIZE_MAX)
		s->rec[me].kids = n;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(names[i]);

		if (len + 1 + nl >= sizeof(w->path)) {
				scan_drop(s);
			continue;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, names[i], nl + 1);
		scan_one(w, s, o, len + 1 + nl, names[i], depth + 1, blocks);
		w->path[len] = '\0';
	}
	free_names(names, n);
}

void r4_dir_scan_free(struct r4_dir_scan *s)
{
	if (!s)
		return;
	scan_drop(s);
	free(s);
}

static void stat_times(const struct stat *st, struct r4_entry *e)
{
	e->mtime = st->st_mtim.tv_sec;
	e->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	e->atime = st->st_atim.tv_sec;
	e->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	e->ctime = st->st_ctim.tv_sec;
	e->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
}

static int stat_type(const struct stat *st, enum r4_entry_type *t)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: *t = R4_ENT_REG; return 0;
	case S_IFDIR: *t = R4_ENT_DIR; return 0;
	case S_IFLNK: *t = R4_ENT_SYMLINK; return 0;
	case S_IFCHR: *t = R4_ENT_CHR; return 0;
	case S_IFBLK: *t = R4_ENT_BLK; return 0;
	case S_IFIFO: *t = R4_ENT_FIFO; return 0;
	case S_IFSOCK: *t = R4_ENT_SOCK; return 0;
	default: return -1;
	}
}

/* A second name of a (dev, ino) seen before becomes a hard link. */
static int hard_link(struct dir_walk *w, const struct stat *st,
		     struct r4_entry *e, const char *rel)
{
	uint64_t key[2] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino };
	const struct tar_map_ent *m;

	if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
		return 0;
	m = tar_map_get(&w->inodes, key, sizeof(key));
	if (m) {
		e->type = R4_ENT_HARDLINK;
		e->target = m->str;
		return 0;
	}
	return tar_map_put(&w->inodes, key, sizeof(key), 0, rel);
}

/* Symlink target of w->path into a new string. */
static char *read_target(const struct dir_walk *w, const struct stat *st)
{
	size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : PATH_MAX;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	n = readlink(w->path, buf, cap);
	if (n < 0 || (size_t)n >= cap) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

static int walk(struct dir_walk *w, size_t len, unsigned depth,
		struct r4_error *err);

/* Give e to the sink; a transaction takes a regular file's data now. */
static int walk_add(struct dir_walk *w, struct r4_entry *e,
		    struct r4_error *err)
{
	void *ctx = NULL;
	int rc;

	if (!w->stream || e->type != R4_ENT_REG)
		return tar_sink_add(&w->sink, e, err);
	w->path[w->root_len] = '\0';
	rc = dir_data_open(w->path, e->path, &e->data, &ctx, err);
	w->path[w->root_len] = '/';
	if (rc)
		return rc;
	/* the size at the open, not at the scan: a file that grew or
	 * shrank since is taken as it is now */
	e->size = ((struct dir_data *)ctx)->size;
	e->data_ctx = ctx;
	rc = tar_sink_add(&w->sink, e, err);
	dir_data_close(ctx);
	if (!rc && w->sink.opts->progress) {
		const struct r4_archive_opts *o = w->sink.opts;

		w->done += e->size;
		o->progress(o->cb_ctx, w->done, o->dir_total > w->done ?
			    o->dir_total : w->done);
	}
	return rc;
}

/* Extended attributes (ACLs are some) of w->path: Reiser4 cannot store
 * them; the sink counts them (or refuses them with --strict). A file
 * system without them (ENOTSUP) has none. */
static void dir_xattrs(struct dir_walk *w)
{
	char buf[4096];
	ssize_t n = llistxattr(w->path, buf, sizeof(buf) - 1);
	unsigned count = 0;

	w->sink.pend_xattrs = 0;
	w->sink.pend_caps = 0;
	if (n < 0 && errno == ERANGE) {	/* a list longer than buf */
		w->sink.pend_xattrs = 1;
		snprintf(w->sink.pend_xattr, sizeof(w->sink.pend_xattr),
			 "(a long list)");
		return;
	}
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		count++;
		if (!strcmp(buf + i, "security.capability"))
			w->sink.pend_caps = 1;
	}
	w->sink.pend_xattrs = count;
	snprintf(w->sink.pend_xattr, sizeof(w->sink.pend_xattr), "%.*s",
		 (int)sizeof(w->sink.pend_xattr) - 1, buf);
}

/* The object at w->path (len bytes), relative name rel. */
static int walk_one(struct dir_walk *w, size_t len, unsigned depth,
		    struct r4_error *err)
{
	const char *rel = len > w->root_len ? w->path + w->root_len + 1 : "";
	struct r4_entry e = { 0 };
	struct stat st;
	char *target = NULL;
	int rc;

	if (w->scan) {		/* what the scan saw, in the same order */
		st = w->scan->rec[w->cur].st;
		w->kids = w->scan->rec[w->cur++].kids;
	} else if (lstat(w->path, &st))
		return r4i_fail(err, -errno, "%s: %s", w->path, strerror(errno));
	if (skipped(w->sink.opts, &st)) {
		tar_warn(w->sink.opts, "%s: skipping: it is the image being "
			 "written", w->path);
		return 0;
	}
	if (stat_type(&st, &e.type)) {
		tar_warn(w->sink.opts, "%s: skipping: unknown file type",
			 w->path);
		return 0;
	}
	e.path = rel;
	e.mode = (uint32_t)st.st_mode & 07777;
	e.uid = (uint32_t)st.st_uid;
	e.gid = (uint32_t)st.st_gid;
	stat_times(&st, &e);
	if (e.type == R4_ENT_REG)
		e.size = (uint64_t)st.st_size;
	if (e.type == R4_ENT_CHR || e.type == R4_ENT_BLK) {
		e.rdev_major = major(st.st_rdev);
		e.rdev_minor = minor(st.st_rdev);
	}
	if (e.type == R4_ENT_SYMLINK && !(e.target = target =
					  read_target(w, &st)))
		return r4i_fail(err, -errno ? -errno : -EIO, "%s: readlink: %s",
			       w->path, strerror(errno ? errno : EIO));
	if (hard_link(w, &st, &e, rel))
		return r4i_fail(err, -ENOMEM, "%s: out of memory", w->path);
	dir_xattrs(w);
	rc = walk_add(w, &e, err);
	free(target);
	if (!rc && e.type == R4_ENT_DIR)
		rc = walk(w, len, depth + 1, err);
	return rc;
}

/* The directory at w->path as the scan saw it: its w->kids entries,
 * their names and stats from the scan. */
static int walk_scanned(struct dir_walk *w, size_t len, unsigned depth,
			struct r4_error *err)
{
	size_t n = w->kids;
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i++) {
		const char *nm;
		size_t nl;

		if (w->cur >= w->scan->n)
			return r4i_fail(err, -EIO, "%s: the scan of the "
					"directory ended early", w->path);
		nm = w->scan->names + w->scan->rec[w->cur].name;
		nl = strlen(nm);
		w->path[len] = '/';
		memcpy(w->path + len + 1, nm, nl + 1);
		rc = walk_one(w, len + 1 + nl, depth, err);
		w->path[len] = '\0';
	}
	return rc;
}

static int walk(struct dir_walk *w, size_t len, unsigned depth,
		struct r4_error *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc;

	if (depth > PATH_MAX / 2)
		return r4i_fail(err, -ELOOP, "%s: too deep", w->path);
	if (w->scan)
		return walk_scanned(w, len, depth, err);
	rc = read_names(w, &names, &n, err);
	for (size_t i = 0; !rc && i < n; i++) {
		size_t nl = strlen(names[i]);

		if (len + 1 + nl >= sizeof(w->path)) {
			rc = r4i_fail(err, -ENAMETOOLONG, "%s/%s: path too "
				     "long", w->path, names[i]);
			break;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, names[i], nl + 1);
		rc = walk_one(w, len + 1 + nl, depth, err);
		w->path[len] = '\0';
	}
	free_names(names, n);
	return rc;
}

/* A walk of dir; the caller sets up w->sink. */
static struct dir_walk *walk_new(const char *dir, struct r4_error *err)
{
	struct dir_walk *w = calloc(1, sizeof(*w));
	size_t len = strlen(dir);

	if (!w) {
		r4i_fail(err, -ENOMEM, "%s: out of memory", dir);
		return NULL;
	}
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len >= sizeof(w->path)) {
		free(w);
		r4i_fail(err, -ENAMETOOLONG, "%s: path too long", dir);
		return NULL;
	}
	memcpy(w->path, dir, len);
	w->path[len] = '\0';
	w->root_len = len;
	tar_map_init(&w->inodes);
	return w;
}

static int walk_run(struct dir_walk *w, struct r4_error *err)
{
	size_t len = w->root_len;
	int rc = walk_one(w, len, 0, err);

	if (!rc)
		rc = tar_sink_finish(&w->sink, err);
	tar_map_free(&w->inodes);
	tar_sink_free(&w->sink);
	free(w);
	return rc;
}

int r4_add_from_dir(struct r4_txn *t, struct r4_vol *vol, const char *dir,
		    const struct r4_archive_opts *o, struct r4_error *err)
{
	struct dir_walk *w = walk_new(dir, err);

	if (!w)
		return err && err->code ? err->code : -ENOMEM;
	tar_sink_init_txn(&w->sink, t, vol, o, dir);
	w->stream = 1;
	if (o->scan && o->scan->whole && o->scan->n)
		w->scan = o->scan;
	return walk_run(w, err);
}

int r4_dir_scan(const char *dir, const struct r4_archive_opts *o,
		uint64_t *blocks, struct r4_dir_scan **out,
		struct r4_error *err)
{
	struct dir_walk *w = walk_new(dir, err);
	struct r4_dir_scan *s = calloc(1, sizeof(*s));
	int rc = 0;

	*blocks = 0;
	*out = NULL;
	if (!w || !s) {
		rc = w ? r4i_fail(err, -ENOMEM, "%s: out of memory", dir) :
			 err && err->code ? err->code : -ENOMEM;
		free(s);
		free(w);
		return rc;
	}
	s->whole = 1;
	s->max = o->scan_max ? o->scan_max : SCAN_MAX_RECS;
	scan_one(w, s, o, w->root_len, "", 0, blocks);
	free(w);
	if (s->whole)
		*out = s;
	else
		r4_dir_scan_free(s);
	return 0;
}

int r4_pack_from_dir(struct r4_pack *b, const char *dir,
		     const struct r4_archive_opts *o, struct r4_error *err)
{
	struct dir_walk *w = walk_new(dir, err);

	if (!w)
		return err && err->code ? err->code : -ENOMEM;
	tar_sink_init(&w->sink, b, o, dir);
	return walk_run(w, err);
}
