/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: writing a volume out as a pax tarball, through the read API. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libimage/util/err.h"
#include "libimage/util/tmpfiles.h"
#include "libimage/tar/tar.h"
#include "r4/util.h"

#define XW_CHUNK (256u << 10)
#define XW_RECORDS 100	/* tar records per write */
#define XW_ZEROS (256u << 20)

struct xw {
	struct r4_vol *vol;
	struct archive *a;
	const struct r4_archive_opts *o;
	struct r4_u64map links;	/* oid -> first path (char *; nlink > 1) */
	struct r4_u64map dirs;	/* oid -> path (char *) of the directories
				 * entered */
	struct r4_outfile out;	/* the output file (have_out), else
				 * standard output */
	int have_out;
	char *path;		/* "./a/b" */
	size_t cap;
	uint8_t *buf;
	uint64_t *runs;		/* the data runs of the file (r4_file_runs) */
	size_t nruns;
	void *zeros;		/* XW_ZEROS read-only zero bytes, or NULL */
	struct r4_error *err;	/* the walk's */
};

static int arc_fail(struct xw *w, struct r4_error *err)
{
	int e = archive_errno(w->a);

	return r4i_fail(err, e > 0 ? -e : -EIO, "%s: %s", w->path,
		       archive_error_string(w->a));
}

/* ---- Sparse maps ---------------------------------------------------------- */

/* The data runs of a file (r4_file_runs) become the entry's sparse map
 * (GNU sparse 1.0 in pax); nothing for a dense file. */
static int xw_sparse(struct xw *w, const struct r4_objref *ref,
		     struct archive_entry *ae, uint64_t size,
		     struct r4_error *err)
{
	int rc;

	free(w->runs);
	w->runs = NULL;
	w->nruns = 0;
	if (!size)
		return 0;
	rc = r4_file_runs(w->vol, ref, size, &w->runs, &w->nruns, err);
	if (rc && err) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err->msg);
		return r4i_fail_over(err, rc, "%s: %s", w->path, why);
	}
	if (rc)
		return rc;
	if (w->nruns == 1 && w->runs[0] == 0 && w->runs[1] == size)
		return 0;	/* dense */
	for (size_t i = 0; i < w->nruns; i++)
		archive_entry_sparse_add_entry(ae, (la_int64_t)w->runs[2 * i],
					       (la_int64_t)w->runs[2 * i + 1]);
	if (!w->nruns)
		archive_entry_sparse_add_entry(ae, (la_int64_t)size, 0);
	return 0;
}

/* Copy bytes off..end of the file into the archive. */
static int xw_copy(struct xw *w, const struct r4_objref *ref, uint64_t off,
		   uint64_t end, struct r4_error *err)
{
	while (off < end) {
		size_t want = end - off < XW_CHUNK ? (size_t)(end - off)
						   : XW_CHUNK, got = 0;
		int rc = r4_read(w->vol, ref, off, w->buf, want, &got, err);

		if (rc && err) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "%s", err->msg);
			return r4i_fail_over(err, rc, "%s: %s", w->path, why);
		}
		if (rc)
			return rc;
		if (got != want)
			return r4i_fail(err, R4_ECORRUPT, "%s: short read at "
				       "%llu (%zu of %zu bytes)", w->path,
				       (unsigned long long)off, got, want);
		if (archive_write_data(w->a, w->buf, got) != (la_ssize_t)got)
			return arc_fail(w, err);
		off += got;
	}
	return 0;
}

/* A hole of len bytes between two runs: libarchive's sparse writer
 * counts those bytes off its map without storing them; they come from
 * a read-only zero mapping, so a hole costs one call per XW_ZEROS bytes
 * and no memory. */
static int xw_hole(struct xw *w, uint64_t len, struct r4_error *err)
{
	if (len > XW_CHUNK && !w->zeros) {
		void *z = mmap(NULL, XW_ZEROS, PROT_READ, MAP_PRIVATE |
			       MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (z != MAP_FAILED)
			w->zeros = z;
	}
	if (!w->zeros)
		memset(w->buf, 0, XW_CHUNK);
	while (len) {
		size_t cap = w->zeros ? XW_ZEROS : XW_CHUNK;
		size_t k = len < cap ? (size_t)len : cap;
		la_ssize_t n = archive_write_data(w->a, w->zeros ? w->zeros :
						  w->buf, k);

		if (n == 0)
			break;	/* nothing more in libarchive's map */
		if (n < 0)
			return arc_fail(w, err);
		len -= (uint64_t)n;
	}
	return 0;
}

static int xw_data(struct xw *w, const struct r4_objref *ref, uint64_t size,
		   struct r4_error *err)
{
	uint64_t pos = 0;
	int rc = 0;

	if (w->nruns == 1 && w->runs[0] == 0 && w->runs[1] == size) {
		rc = xw_copy(w, ref, 0, size, err);	/* dense */
		pos = size;
	}
	for (size_t i = 0; !rc && pos < size && i < w->nruns; i++) {
		uint64_t a = w->runs[2 * i], n = w->runs[2 * i + 1];

		rc = xw_hole(w, a - pos, err);
		if (!rc)
			rc = xw_copy(w, ref, a, a + n, err);
		pos = a + n;
	}
	if (!rc && pos < size)	/* the trailing hole, counted too */
		rc = xw_hole(w, size - pos, err);
	if (!rc && w->o->stats)
		w->o->stats->bytes += size;
	return rc;
}

/* ---- Entries ---------------------------------------------------------------- */

static void xw_meta(struct xw *w, const struct r4_stat *st,
		    struct archive_entry *ae)
{
	struct r4_entry e = {
		.uid = st->uid, .gid = st->gid,
		.mtime = st->mtime, .mtime_ns = st->mtime_ns,
		.atime = st->atime, .atime_ns = st->atime_ns,
		.ctime = st->ctime, .ctime_ns = st->ctime_ns,
	};

	tar_apply_opts(w->o, &e);
	archive_entry_copy_pathname(ae, w->path);
	archive_entry_set_perm(ae, st->mode & 07777);
	archive_entry_set_uid(ae, e.uid);
	archive_entry_set_gid(ae, e.gid);
	archive_entry_set_mtime(ae, e.mtime, e.mtime_ns);
	archive_entry_set_atime(ae, e.atime, e.atime_ns);
	archive_entry_set_ctime(ae, e.ctime, e.ctime_ns);
}

/* Type-specific fields; 1 to skip the object. */
static int xw_type(struct xw *w, const struct r4_objref *ref,
		   const struct r4_stat *st, struct archive_entry *ae,
		   struct r4_error *err)
{
	switch (st->mode & S_IFMT) {
	case S_IFREG:
		archive_entry_set_filetype(ae, AE_IFREG);
		archive_entry_set_size(ae, (la_int64_t)st->size);
		return xw_sparse(w, ref, ae, st->size, err);
	case S_IFDIR:
		archive_entry_set_filetype(ae, AE_IFDIR);
		return 0;
	case S_IFLNK: {
		size_t tlen = 0;
		char *t = malloc(st->size + 2);
		int rc;

		if (!t)
			return r4i_fail(err, -ENOMEM, "%s: out of memory",
				       w->path);
		rc = r4_readlink(w->vol, ref, t, st->size + 2, &tlen, err);
		if (!rc && tlen > st->size + 1)
			rc = r4i_fail(err, R4_ECORRUPT, "%s: symlink target "
				     "longer than its size", w->path);
		if (!rc) {
			archive_entry_set_filetype(ae, AE_IFLNK);
			archive_entry_copy_symlink(ae, t);
		}
		free(t);
		return rc;
	}
	case S_IFCHR:
	case S_IFBLK:
		archive_entry_set_filetype(ae, S_ISCHR(st->mode) ? AE_IFCHR
								: AE_IFBLK);
		archive_entry_set_rdevmajor(ae, r4_rdev_major(st->rdev));
		archive_entry_set_rdevminor(ae, r4_rdev_minor(st->rdev));
		return 0;
	case S_IFIFO:
		archive_entry_set_filetype(ae, AE_IFIFO);
		return 0;
	default:
		tar_warn(w->o, "%s: skipping: %s cannot be stored in a "
			 "tarball", w->path, S_ISSOCK(st->mode) ? "a socket"
							      : "unknown type");
		if (w->o->stats)
			w->o->stats->skipped++;
		return 1;
	}
}

/* A second name of an object with nlink > 1: a hard link entry. */
static int xw_link(struct xw *w, const struct r4_stat *st,
		   struct archive_entry *ae, int *is_link)
{
	char **m;
	int added;

	*is_link = 0;
	if (S_ISDIR(st->mode) || st->nlink < 2)
		return 0;
	m = r4_u64map_get(&w->links, st->oid, &added);
	if (!m)
		return -ENOMEM;
	if (added)
		return (*m = strdup(w->path)) ? 0 : -ENOMEM;
	archive_entry_set_filetype(ae, AE_IFREG);
	archive_entry_copy_hardlink(ae, *m);
	archive_entry_set_size(ae, 0);
	*is_link = 1;
	return 0;
}

static int xw_object(struct xw *w, const struct r4_objref *ref,
		     struct r4_stat *st, struct r4_error *err)
{
	struct archive_entry *ae = archive_entry_new();
	int rc, is_link;

	if (!ae)
		return r4i_fail(err, -ENOMEM, "%s: out of memory", w->path);
	xw_meta(w, st, ae);
	if (xw_link(w, st, ae, &is_link)) {
		archive_entry_free(ae);
		return r4i_fail(err, -ENOMEM, "%s: out of memory", w->path);
	}
	rc = is_link ? 0 : xw_type(w, ref, st, ae, err);
	if (rc) {
		archive_entry_free(ae);
		return rc < 0 ? rc : 0;
	}
	if (archive_write_header(w->a, ae) < ARCHIVE_WARN)
		rc = arc_fail(w, err);
	else if (!is_link && S_ISREG(st->mode))
		rc = xw_data(w, ref, st->size, err);
	archive_entry_free(ae);
	if (!rc && w->o->stats)
		w->o->stats->entries++;
	if (!rc && w->o->entry)
		w->o->entry(w->o->cb_ctx, w->path);
	return rc;
}

/* ---- The walk ------------------------------------------------------------ */

/* r4_walk_by_name meets every entry below the root, each directory's
 * sorted by name, depth first, with no recursion and no depth limit. A
 * directory reached twice (a second name, which only a damaged or
 * crafted image has: a loop when it names a directory above it) is
 * skipped with a warning naming both paths (w->dirs keeps the path each
 * directory was entered by). */

/* Why the entry e cannot become a member: a name no host can create,
 * or one a member before it already has (a second './x' after a
 * symlink './x' would let './x/f' be written through the link; the
 * walk meets a directory's entries sorted by name and says so). NULL
 * when it can. */
static const char *xw_bad_name(const struct r4_walk_entry *e)
{
	if (!e->name_len)
		return "is empty";
	if (memchr(e->name, '/', e->name_len))
		return "holds a '/'";
	if (memchr(e->name, 0, e->name_len))
		return "holds a NUL byte";
	if (e->name_len > 255)
		return "is longer than 255 bytes";
	if (e->same_name)
		return "is in the directory twice";
	return NULL;
}

/* Remember directory oid as entered by the path w->path. */
static int xw_dir_add(struct xw *w, uint64_t oid)
{
	int added = 0;
	char **slot = r4_u64map_get(&w->dirs, oid, &added);

	if (!slot)
		return -ENOMEM;
	if (added && !(*slot = strdup(w->path))) {
		r4_u64map_del(&w->dirs, oid);
		return -ENOMEM;
	}
	return 0;
}

/* r4_readdir's callback that takes nothing. */
static int xw_none(void *ctx, const char *name, size_t len,
		   const struct r4_objref *target)
{
	(void)ctx, (void)name, (void)len, (void)target;
	return 0;
}

/* The member for a directory entry e whose stat data is st (its path
 * in w->path): 0 to enter it, R4_WALK_SKIP (a second name), or an
 * error. */
static int xw_dir(struct xw *w, const struct r4_walk_entry *e,
		  struct r4_stat *st)
{
	char **first = r4_u64map_find(&w->dirs, e->target.oid);
	size_t nl = e->path_len;
	int rc;

	if (first) {
		tar_warn(w->o, "%s/: skipping: a second name of the directory "
			 "%s/ (a loop or a damaged volume: run r4fsck)",
			 w->path, *first);
		if (w->o->stats)
			w->o->stats->skipped++;
		return R4_WALK_SKIP;
	}
	w->path[nl] = '/';
	w->path[nl + 1] = '\0';
	rc = xw_object(w, &e->target, st, w->err);
	w->path[nl] = '\0';
	if (!rc && xw_dir_add(w, e->target.oid))
		rc = r4i_fail(w->err, -ENOMEM, "out of memory");
	/* Its mode says directory, its plugin not: r4_readdir says why it
	 * cannot be listed (the walk enters only directories). */
	if (!rc && !e->is_dir)
		rc = r4_readdir(w->vol, &e->target, xw_none, NULL, w->err);
	return rc;
}

/* r4_walk_by_name's callback: the member for entry e. */
static int xw_entry(void *ctx, const struct r4_walk_entry *e)
{
	struct xw *w = ctx;
	struct r4_stat st;
	const char *why;
	int rc;

	if (e->leave)
		return e->error;	/* a directory that failed stops it */
	why = xw_bad_name(e);
	if (why) {
		tar_warn(w->o, "%.*s/%.*s: skipping: the name %s (run "
			 "r4fsck)", (int)(e->path_len - e->name_len - 1),
			 e->path, (int)(e->name_len > 255 ? 255 : e->name_len),
			 e->name, why);
		if (w->o->stats)
			w->o->stats->skipped++;
		return R4_WALK_SKIP;
	}
	if (R4_RESERVE(w->path, w->cap, e->path_len + 2, 4096))
		return r4i_fail(w->err, -ENOMEM, "out of memory");
	memcpy(w->path, e->path, e->path_len);
	w->path[e->path_len] = '\0';
	/* the walk read its stat data; when it could not, r4_stat says
	 * why */
	st = e->st ? *e->st : (struct r4_stat){ 0 };
	rc = e->st ? 0 : r4_stat(w->vol, &e->target, &st, w->err);
	if (rc)
		return rc;
	if (S_ISDIR(st.mode))
		return xw_dir(w, e, &st);
	rc = xw_object(w, &e->target, &st, w->err);
	return rc ? rc : R4_WALK_SKIP;
}

static int xw_root(struct xw *w, struct r4_error *err)
{
	struct r4_objref root;
	struct r4_stat st;
	int rc = r4_root(w->vol, &root, err);

	if (!rc)
		rc = r4_stat(w->vol, &root, &st, err);
	if (rc)
		return rc;
	strcpy(w->path, "./");
	rc = xw_object(w, &root, &st, err);
	w->path[1] = '\0';
	if (!rc && xw_dir_add(w, root.oid))
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	w->err = err;
	return rc ? rc : r4_walk_by_name(w->vol, &root, ".", 0, xw_entry, w,
					 err);
}

/* ---- Output ------------------------------------------------------------- */

/* Where the tarball goes (r4_outfile_open): standard output for "-";
 * a device or FIFO is written straight into (renaming over it would
 * replace the node); a regular or missing file is written as a
 * temporary file renamed over it at the end, through a symbolic link to
 * where the link points (as tar -f follows it). The image itself and a
 * link to nothing are refused. */
static int xw_open(struct xw *w, const char *out, struct r4_error *err)
{
	int fd = 1;

	if (!(w->a = archive_write_new()))
		return r4i_fail(err, -ENOMEM, "out of memory");
	archive_write_set_format_pax_restricted(w->a);
	archive_write_add_filter_none(w->a);
	/* Records of 10240 bytes as tar writes them, the last one padded in
	 * full, file or pipe alike; written 100 records at a time (one
	 * system call a megabyte instead of one per record). */
	archive_write_set_bytes_per_block(w->a, XW_RECORDS * 10240);
	archive_write_set_bytes_in_last_block(w->a, 10240);
	if (strcmp(out, "-")) {
		int rc = r4_outfile_open(&w->out, out, r4_vol_path(w->vol),
					 R4_OUT_SPECIAL, 0666, "extracted",
					 err);

		if (rc)
			return rc;
		w->have_out = 1;
		fd = w->out.fd;
	}
	if (archive_write_open_fd(w->a, fd) != ARCHIVE_OK)
		return r4i_fail(err, -EIO, "%s: %s", out,
			       archive_error_string(w->a));
	return 0;
}

static int xw_close(struct xw *w, const char *out, int rc,
		    struct r4_error *err)
{
	if (w->a && !rc && archive_write_close(w->a) != ARCHIVE_OK)
		rc = r4i_fail(err, -EIO, "%s: %s", out,
			     archive_error_string(w->a));
	if (w->a)
		archive_write_free(w->a);
	if (w->have_out) {
		if (rc)
			r4_outfile_abort(&w->out);
		else
			rc = r4_outfile_commit(&w->out, out, err);
		w->have_out = 0;
	}
	return rc;
}

int r4_extract_to_archive(struct r4_vol *vol, const char *out,
			  const struct r4_archive_opts *o, struct r4_error *err)
{
	struct xw w = { .vol = vol, .o = o };
	int rc;
	/* Names are bytes; libarchive converts them from the locale's
	 * character set to UTF-8 for the pax header and marks the ones it
	 * cannot convert hdrcharset=BINARY. In the C locale that is every
	 * name with a byte above 127: write under a UTF-8 character set
	 * (this thread only), so only names that are not valid UTF-8 are
	 * marked, whatever the caller's locale. */
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t old = utf8 ? uselocale(utf8) : (locale_t)0;

	r4_u64map_init(&w.links, sizeof(char *));
	r4_u64map_init(&w.dirs, sizeof(char *));
	w.cap = 4096;
	w.path = malloc(w.cap);
	w.buf = malloc(XW_CHUNK);
	if (!w.path || !w.buf)
		rc = r4i_fail(err, -ENOMEM, "out of memory");
	else
		rc = xw_open(&w, out, err);
	if (!rc)
		rc = xw_root(&w, err);
	rc = xw_close(&w, out, rc, err);
	for (size_t i = r4_u64map_next(&w.links, 0); i < w.links.cap;
	     i = r4_u64map_next(&w.links, i + 1))
		free(*(char **)r4_u64map_val(&w.links, i));
	r4_u64map_fini(&w.links);
	for (size_t i = r4_u64map_next(&w.dirs, 0); i < w.dirs.cap;
	     i = r4_u64map_next(&w.dirs, i + 1))
		free(*(char **)r4_u64map_val(&w.dirs, i));
	r4_u64map_fini(&w.dirs);
	free(w.path);
	free(w.buf);
	free(w.runs);
	if (w.zeros)
		munmap(w.zeros, XW_ZEROS);
	if (utf8) {
		uselocale(old);
		freelocale(utf8);
	}
	return rc;
}
