/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reading an archive with libarchive into a build. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libimage/util/err.h"
#include "libimage/tar/tar.h"

/* Bytes read from the archive file at a time. An uncompressed tar file
 * is read in smaller blocks: the data of its files is taken by the build
 * from where it lies (r4_entry.data_file), and libarchive seeks past
 * what it has not read yet, to the byte (its own descriptor reader
 * seeks whole blocks only), so less of it is read twice. */
#define ARC_BLOCK (1 << 20)
#define ARC_BLOCK_AT (1 << 16)

/* The archive file opened here (not standard input): its descriptor,
 * for the build to take data from; -1 none. A plain tar file is read
 * through at_read and at_skip into buf; size: the file's, pos: where the
 * descriptor's offset is. */
struct arc_file {
	int fd;
	void *buf;
	uint64_t size, pos;
};

struct arc_data {
	struct archive *a;
	const struct tar_sink *s;	/* for progress */
	const char *arc;	/* archive name for messages */
	const char *entry;	/* entry name for messages */
	uint64_t size;		/* the entry's size */
	uint64_t next;		/* first offset not yet delivered */
};

/* Progress: bytes of the archive file read, against its size. */
static void arc_progress(const struct tar_sink *s, struct archive *a)
{
	if (s->opts->progress && s->src_size)
		s->opts->progress(s->opts->cb_ctx,
				  (uint64_t)archive_filter_bytes(a, -1),
				  s->src_size);
}

/* libarchive's message for its last error, never NULL: an error without
 * one is an input that ended early. */
static const char *arc_why(struct archive *a)
{
	const char *m = archive_error_string(a);

	return m ? m : "the input ends early (truncated?)";
}

/* r4_data_fn over archive_read_data_block: (offset, bytes) chunks, the
 * gaps of sparse entries left as holes. */
static int arc_data_fn(void *ctx, uint64_t *off, const void **buf,
		       size_t *len, struct r4_error *err)
{
	struct arc_data *d = ctx;

	for (;;) {
		const void *p;
		size_t n;
		la_int64_t o;
		int r = archive_read_data_block(d->a, &p, &n, &o);

		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return r4i_fail(err, -EIO, "%s: '%s': %s", d->arc,
				       d->entry, arc_why(d->a));
		if (d->s)
			arc_progress(d->s, d->a);
		if (!n)
			continue;
		if (o < 0 || (uint64_t)o < d->next || (uint64_t)o >= d->size)
			return r4i_fail(err, R4_ECORRUPT, "%s: '%s': data at "
				       "offset %lld is out of order or past "
				       "the size %llu", d->arc, d->entry,
				       (long long)o,
				       (unsigned long long)d->size);
		if (n > d->size - (uint64_t)o)
			n = (size_t)(d->size - (uint64_t)o);
		d->next = (uint64_t)o + n;
		*off = (uint64_t)o;
		*buf = p;
		*len = n;
		return 1;
	}
}

static int entry_type(struct archive_entry *ae, enum r4_entry_type *t)
{
	if (archive_entry_hardlink(ae)) {
		*t = R4_ENT_HARDLINK;
		return 0;
	}
	switch (archive_entry_filetype(ae)) {
	case AE_IFREG: *t = R4_ENT_REG; return 0;
	case AE_IFDIR: *t = R4_ENT_DIR; return 0;
	case AE_IFLNK: *t = R4_ENT_SYMLINK; return 0;
	case AE_IFCHR: *t = R4_ENT_CHR; return 0;
	case AE_IFBLK: *t = R4_ENT_BLK; return 0;
	case AE_IFIFO: *t = R4_ENT_FIFO; return 0;
	case AE_IFSOCK: *t = R4_ENT_SOCK; return 0;
	default: return -1;
	}
}

uint32_t tar_arc_id(const struct tar_sink *s, const char *what,
		    const char *name, int64_t id)
{
	if (id >= 0 && id <= (int64_t)UINT32_MAX)
		return (uint32_t)id;
	tar_warn(s->opts, "%s: '%s': %s %lld out of range, using 0",
		 s->source, name, what, (long long)id);
	return 0;
}

/* Times: absent atime and ctime take the mtime (so images made from
 * plain ustar archives are reproducible). */
static void arc_times(struct archive_entry *ae, struct r4_entry *e)
{
	e->mtime = archive_entry_mtime(ae);
	e->mtime_ns = (uint32_t)archive_entry_mtime_nsec(ae);
	e->atime = e->ctime = e->mtime;
	e->atime_ns = e->ctime_ns = e->mtime_ns;
	if (archive_entry_atime_is_set(ae)) {
		e->atime = archive_entry_atime(ae);
		e->atime_ns = (uint32_t)archive_entry_atime_nsec(ae);
	}
	if (archive_entry_ctime_is_set(ae)) {
		e->ctime = archive_entry_ctime(ae);
		e->ctime_ns = (uint32_t)archive_entry_ctime_nsec(ae);
	}
	if (e->mtime_ns > 999999999)
		e->mtime_ns = 0;
	if (e->atime_ns > 999999999)
		e->atime_ns = 0;
	if (e->ctime_ns > 999999999)
		e->ctime_ns = 0;
}

/* Extended attributes and ACLs of the entry: Reiser4 cannot store them;
 * the sink counts them (or refuses them with --strict). */
static void arc_xattrs(struct tar_sink *s, struct archive_entry *ae)
{
	int nx = archive_entry_xattr_reset(ae);
	/* the mode's own entries (user::, group::, other::) are no ACL */
	int acl = archive_entry_acl_types(ae) != 0;
	const char *first = NULL;

	s->pend_caps = 0;
	for (int i = 0; i < nx; i++) {
		const char *name;
		const void *v;
		size_t len;

		if (archive_entry_xattr_next(ae, &name, &v, &len) !=
		    ARCHIVE_OK)
			break;
		if (!first)
			first = name;
		if (name && !strcmp(name, "security.capability"))
			s->pend_caps = 1;
	}
	s->pend_xattrs = (unsigned)(nx > 0 ? nx : 0) + (unsigned)acl;
	snprintf(s->pend_xattr, sizeof(s->pend_xattr), "%s",
		 first ? first : "ACL");
}

/* The entry's data lies as it is in the archive file, contiguous, from
 * where its header ends: a tar archive without compression (or any
 * filter), an entry that is not sparse. */
static int arc_data_at(const struct arc_file *f, struct archive *a,
		       struct archive_entry *ae)
{
	return f->fd >= 0 && archive_filter_count(a) == 1 &&
	       archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE &&
	       (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) ==
	       ARCHIVE_FORMAT_TAR && !archive_entry_sparse_count(ae);
}

/* One header: map it to an entry and add it. */
static int arc_entry(struct tar_sink *s, const struct arc_file *f,
		     struct archive *a, struct archive_entry *ae,
		     const char *name, struct r4_error *err)
{
	struct r4_entry e = { 0 };
	struct arc_data d = { 0 };
	la_int64_t size = archive_entry_size(ae);

	if (entry_type(ae, &e.type)) {
		tar_warn(s->opts, "%s: skipping '%s': unknown file type 0%o",
			 s->source, name, (unsigned)archive_entry_filetype(ae));
		if (s->opts->stats)
			s->opts->stats->skipped++;
		return 0;
	}
	arc_xattrs(s, ae);
	e.path = name;
	e.mode = (uint32_t)archive_entry_perm(ae) & 07777;
	e.uid = tar_arc_id(s, "uid", name, archive_entry_uid(ae));
	e.gid = tar_arc_id(s, "gid", name, archive_entry_gid(ae));
	arc_times(ae, &e);
	if (e.type == R4_ENT_SYMLINK) {
		e.target = archive_entry_symlink(ae);
		if (!e.target)
			return r4i_fail(err, R4_ECORRUPT, "%s: symbolic link "
				       "'%s' has no target", s->source, name);
	} else if (e.type == R4_ENT_HARDLINK) {
		e.target = archive_entry_hardlink(ae);
	} else if (e.type == R4_ENT_CHR || e.type == R4_ENT_BLK) {
		e.rdev_major = (uint32_t)archive_entry_rdevmajor(ae);
		e.rdev_minor = (uint32_t)archive_entry_rdevminor(ae);
	}
	/* cpio keeps the data of a hard-linked file with its last name. */
	if (e.type == R4_ENT_REG || (e.type == R4_ENT_HARDLINK && size > 0)) {
		e.size = size > 0 ? (uint64_t)size : 0;
		d.a = a;
		d.s = s;
		d.arc = s->source;
		d.entry = name;
		d.size = e.size;
		e.data = arc_data_fn;
		e.data_ctx = &d;
		/* what libarchive consumed so far: the end of the header
		 * (pax and long-name headers included) */
		if (e.type == R4_ENT_REG && e.size && arc_data_at(f, a, ae)) {
			e.data_file = s->source;
			e.data_fd = f->fd;
			e.data_off = (uint64_t)archive_filter_bytes(a, 0);
		}
	}
	return tar_sink_add(s, &e, err);
}

/* The formats r4pack reads; mtree (any text file passes as one) only
 * when named. */
struct arc_format {
	const char *name;
	int (*support)(struct archive *);
	int detect;		/* tried when the format is "auto" */
};

static const struct arc_format arc_formats[] = {
	{ "tar", archive_read_support_format_tar, 1 },
	{ "cpio", archive_read_support_format_cpio, 1 },
	{ "zip", archive_read_support_format_zip, 1 },
	{ "7zip", archive_read_support_format_7zip, 1 },
	{ "iso9660", archive_read_support_format_iso9660, 1 },
	{ "xar", archive_read_support_format_xar, 1 },
	{ "ar", archive_read_support_format_ar, 1 },
	{ "cab", archive_read_support_format_cab, 1 },
	{ "lha", archive_read_support_format_lha, 1 },
	{ "rar", archive_read_support_format_rar, 1 },
	{ "mtree", archive_read_support_format_mtree, 0 },
};

#define ARC_NFORMATS (sizeof(arc_formats) / sizeof(arc_formats[0]))

int r4_archive_set_format(struct r4_archive_opts *o, const char *name,
			  struct r4_error *err)
{
	if (!strcmp(name, "auto")) {
		o->format = NULL;
		return 0;
	}
	for (size_t i = 0; i < ARC_NFORMATS; i++)
		if (!strcmp(name, arc_formats[i].name)) {
			o->format = arc_formats[i].name;
			return 0;
		}
	return r4i_fail(err, R4_EINVAL, "'%s' is not an archive format (auto, "
		       "tar, cpio, zip, 7zip, iso9660, xar, ar, cab, lha, rar "
		       "or mtree)", name);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n > t && !strcmp(s + n - t, tail);
}

/* Register the formats o asks for ("auto": the detected ones, mtree
 * when the name says so). */
static int arc_support(struct archive *a, const char *path,
		       const struct r4_archive_opts *o, struct r4_error *err)
{
	const char *want = o->format;

	if (!want && ends_with(path, ".mtree"))
		want = "mtree";
	for (size_t i = 0; i < ARC_NFORMATS; i++) {
		const struct arc_format *f = &arc_formats[i];

		if (want ? strcmp(want, f->name) : !f->detect)
			continue;
		if (f->support(a) != ARCHIVE_OK && want)
			return r4i_fail(err, R4_EUNSUPP, "%s: format '%s': %s",
				       path, want, arc_why(a));
	}
	return 0;
}

static void arc_close(struct arc_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->buf);
	f->buf = NULL;
}

/* A plain tar file (ustar magic at 257: "ustar" then NUL or blanks). */
static int tar_magic(int fd)
{
	char m[8];

	return pread(fd, m, sizeof(m), 257) == (ssize_t)sizeof(m) &&
	       !memcmp(m, "ustar", 5);
}

/* libarchive's reader of a plain tar file: ARC_BLOCK_AT bytes a read. */
static la_ssize_t at_read(struct archive *a, void *ctx, const void **buf)
{
	struct arc_file *f = ctx;

	for (;;) {
		ssize_t n = read(f->fd, f->buf, ARC_BLOCK_AT);

		if (n >= 0) {
			*buf = f->buf;
			f->pos += (uint64_t)n;
			return n;
		}
		if (errno != EINTR) {
			archive_set_error(a, errno, "read failed: %s",
					  strerror(errno));
			return -1;
		}
	}
}

/* Skip request bytes, not past the end of the file (libarchive then
 * finds the input short, as when it reads). */
static la_int64_t at_skip(struct archive *a, void *ctx, la_int64_t request)
{
	struct arc_file *f = ctx;

	(void)a;
	if (request <= 0 || f->pos >= f->size)
		return 0;
	if ((uint64_t)request > f->size - f->pos)
		request = (la_int64_t)(f->size - f->pos);
	if (lseek(f->fd, (off_t)(f->pos + (uint64_t)request), SEEK_SET) < 0)
		return 0;
	f->pos += (uint64_t)request;
	return request;
}

/* The archive file opened here: a plain tar file read through at_read
 * and at_skip, anything else by libarchive's descriptor reader. */
static int at_open(struct archive *a, struct arc_file *f, uint64_t size)
{
	if (!tar_magic(f->fd) || !(f->buf = malloc(ARC_BLOCK_AT)))
		return archive_read_open_fd(a, f->fd, ARC_BLOCK);
	f->size = size;
	f->pos = 0;
	return archive_read_open2(a, f, NULL, at_read, at_skip, NULL);
}

/* Open path with the formats of o; *size: the file's size (0 unknown);
 * f->fd: the descriptor of a regular file opened here (-1: none; the
 * caller closes it after freeing the archive), opened when at: entries'
 * data may be taken from where it lies (r4_entry.data_file). */
static struct archive *arc_open(const char *path,
				const struct r4_archive_opts *o,
				uint64_t *size, struct arc_file *f, int at,
				struct r4_error *err)
{
	const char *name = strcmp(path, "-") ? path : "standard input";
	struct archive *a;
	struct stat st;
	int r;

	*size = 0;
	f->fd = -1;
	f->buf = NULL;
	if (!(strcmp(path, "-") ? stat(path, &st) : fstat(0, &st)) &&
	    S_ISREG(st.st_mode)) {
		if (!st.st_size) {
			r4i_fail(err, R4_ECORRUPT, "%s: not an archive (an "
				 "empty file)", name);
			return NULL;
		}
		*size = (uint64_t)st.st_size;
	}
	if (!(a = archive_read_new())) {
		r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	if (arc_support(a, name, o, err)) {
		archive_read_free(a);
		return NULL;
	}
	archive_read_support_filter_all(a);
	if (at && *size && strcmp(path, "-"))
		f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!strcmp(path, "-"))
		r = archive_read_open_fd(a, 0, ARC_BLOCK);
	else if (f->fd >= 0)
		r = at_open(a, f, *size);
	else
		r = archive_read_open_filename(a, path, ARC_BLOCK);
	/* libarchive's "file format" errno (its ARCHIVE_ERRNO_FILE_FORMAT,
	 * private) is EILSEQ on Linux: no format we read recognised it */
	if (r != ARCHIVE_OK && archive_errno(a) == EILSEQ) {
		r4i_fail(err, R4_ECORRUPT, "%s: not an archive r4pack reads "
			 "(%s)", name, arc_why(a));
		archive_read_free(a);
		arc_close(f);
		return NULL;
	}
	if (r != ARCHIVE_OK) {
		int e = archive_errno(a);

		r4i_fail(err, e > 0 ? -e : -EIO, "%s: %s", name,
			arc_why(a));
		archive_read_free(a);
		arc_close(f);
		return NULL;
	}
	return a;
}

/* A header libarchive could not read, after entry last. */
static int bad_header(const struct tar_sink *s, struct archive *a,
		      long long at, const char *last, struct r4_error *err)
{
	if (at < 0)
		return r4i_fail(err, R4_ECORRUPT, "%s: damaged header after "
			       "entry '%s': %s", s->source, last, arc_why(a));
	return r4i_fail(err, R4_ECORRUPT, "%s: damaged header at byte %lld: "
		       "%s (after entry '%s')", s->source, at, arc_why(a),
		       last);
}

/* r from archive_read_next_header (not EOF) for the header at byte at:
 * the error the loop stops with, or 0 (ARCHIVE_OK, ARCHIVE_WARN). */
static int arc_bad(const struct tar_sink *s, struct archive *a, int r,
		   long long at, uint64_t count, const char *last,
		   struct r4_error *err)
{
	if (r >= ARCHIVE_OK || r == ARCHIVE_WARN)
		return 0;
	/* ARCHIVE_RETRY: a header that is not one (bad checksum) */
	if (!count)
		return r4i_fail(err, R4_ECORRUPT, "%s: not an archive r4pack "
			       "reads (%s)", s->source, arc_why(a));
	return bad_header(s, a, at, last, err);
}

static int arc_name(const struct tar_sink *s, struct archive *a,
		    struct archive_entry *ae, long long at, const char **name,
		    struct r4_error *err)
{
	*name = archive_entry_pathname(ae);
	if (!*name)
		*name = archive_entry_pathname_utf8(ae);
	if (!*name)
		return r4i_fail(err, R4_ECORRUPT, "%s: the header at byte "
			       "%lld has a name that cannot be read (%s)",
			       s->source, at, arc_why(a));
	return 0;
}

/* The entry libarchive read (r: ARCHIVE_OK or ARCHIVE_WARN) into the
 * sink, named name; last and count kept for messages. */
static int arc_take(struct tar_sink *s, const struct arc_file *f,
		    struct archive *a, int r, struct archive_entry *ae,
		    const char *name, char *last, uint64_t *count,
		    struct r4_error *err)
{
	int rc;

	if (r == ARCHIVE_WARN && archive_error_string(a))
		tar_warn(s->opts, "%s: %s", s->source,
			 archive_error_string(a));
	snprintf(last, TAR_LAST_LEN, "%s", name);
	(*count)++;
	rc = arc_entry(s, f, a, ae, name, err);
	arc_progress(s, a);
	return rc;
}

/* The rest of a plain tar file (not standard input, no filter) can be
 * read by tarhdr.c, from the header at pos on. */
static int arc_own_ok(const struct tar_sink *s, const struct arc_file *f,
		      struct archive *a)
{
	return f->fd >= 0 && f->buf &&
	       s->opts->tar_reader != R4_TAR_LIBARCHIVE &&
	       archive_filter_count(a) == 1 &&
	       archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE &&
	       (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) ==
	       ARCHIVE_FORMAT_TAR;
}

/* libarchive keeps one link text buffer for all headers: once a link
 * was read, an empty one reads as "" instead of none (seen from here:
 * an entry with a link). */
static int arc_linked(struct archive_entry *ae)
{
	return archive_entry_symlink(ae) || archive_entry_hardlink(ae);
}

/* The own reader from the header at pos on: 0 or the error when it
 * read to the end, or 1 with *hand the offset of the header it leaves
 * to libarchive. */
static int arc_own(struct tar_sink *s, const struct arc_file *f,
		   uint64_t pos, char *last, uint64_t *count, int pax,
		   int linked, uint64_t *hand, struct r4_error *err)
{
	struct tar_own o = { .s = s, .fd = f->fd, .size = f->size,
			     .pax = pax, .linked = linked, .last = last,
			     .count = count };
	int rc = tar_own_run(&o, pos, err);

	*hand = o.hand;
	tar_own_free(&o);
	return rc;
}

int tar_arc_skip_to(struct archive *a, struct archive_entry **ae, int r,
		    uint64_t hand)
{
	while ((r == ARCHIVE_OK || r == ARCHIVE_WARN) &&
	       archive_read_header_position(a) < (la_int64_t)hand)
		r = archive_read_next_header(a, ae);
	return r;
}

static int arc_loop(struct tar_sink *s, const struct arc_file *f,
		    struct archive *a, const char *path, struct r4_error *err)
{
	struct archive_entry *ae;
	char last[TAR_LAST_LEN] = "";
	uint64_t count = 0;
	struct tar_zipnames z = { NULL, 0, 0 };
	int zip = -1, pax = 0, linked = 0, own = 1;
	char *zbuf = NULL;
	uint64_t hand;
	int r, rc;

	for (r = archive_read_next_header(a, &ae); r != ARCHIVE_EOF;
	     r = archive_read_next_header(a, &ae)) {
		long long at = (long long)archive_read_header_position(a);
		const char *name;

		if ((rc = arc_bad(s, a, r, at, count, last, err)))
			goto out;
		if (own && count && arc_own_ok(s, f, a)) {
			rc = arc_own(s, f, (uint64_t)at, last, &count, pax,
				     linked, &hand, err);
			if (rc != 1)
				goto out;
			own = 0;	/* libarchive's alone from hand on */
			if ((r = tar_arc_skip_to(a, &ae, r, hand)) == ARCHIVE_EOF)
				break;
			at = (long long)archive_read_header_position(a);
			if ((rc = arc_bad(s, a, r, at, count, last, err)))
				goto out;
		}
		if ((rc = arc_name(s, a, ae, at, &name, err)))
			goto out;
		if (!own && s->opts->tar_reader == R4_TAR_OWN)
			tar_warn(s->opts, "%s: '%s' (byte %lld) read by "
				 "libarchive", s->source, name, at);
		if (zip < 0)
			zip = tar_zip_names_load((archive_format(a) &
						 ARCHIVE_FORMAT_BASE_MASK) ==
						ARCHIVE_FORMAT_ZIP, path, &z, &zbuf);
		if (z.cd)
			name = tar_zip_name(&z, name, zbuf, PATH_MAX + 2);
		rc = arc_take(s, f, a, r, ae, name, last, &count, err);
		pax = archive_format(a) == ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE;
		linked |= arc_linked(ae);
		if (rc)
			goto out;
	}
	if (!count)
		rc = r4i_fail(err, R4_ECORRUPT, "%s: not an archive (no "
			     "entries: an empty or all-zero file?)", s->source);
	else
		rc = tar_sink_finish(s, err);
out:
	free(z.cd);
	free(zbuf);
	return rc;
}

int r4_pack_from_archive(struct r4_pack *b, const char *path,
			 const struct r4_archive_opts *o, struct r4_error *err)
{
	struct tar_sink s;
	struct archive *a;
	struct arc_file f;
	uint64_t size;
	int rc, rc2;

	if (!(a = arc_open(path, o, &size, &f, 1, err)))
		return err && err->code ? err->code : -EIO;
	tar_sink_init(&s, b, o, strcmp(path, "-") ? path : "standard input");
	s.src_size = size;
	/* the image is written behind while the archive is read */
	rc = r4_pack_stream_begin(b, err);
	if (!rc)
		rc = arc_loop(&s, &f, a, path, err);
	rc2 = r4_pack_stream_end(b, rc ? NULL : err);
	if (!rc)
		rc = rc2;
	tar_sink_free(&s);
	archive_read_free(a);
	arc_close(&f);
	return rc;
}

int r4_archive_measure(const char *path, const struct r4_archive_opts *o,
		       uint64_t *bytes, uint64_t *entries,
		       struct r4_error *err)
{
	struct archive_entry *ae;
	struct archive *a;
	struct arc_file f;
	uint64_t size;
	int r, rc = 0;

	*bytes = *entries = 0;
	if (!strcmp(path, "-"))
		return r4i_fail(err, R4_EINVAL, "standard input cannot be "
			       "measured before it is read");
	if (!(a = arc_open(path, o, &size, &f, 0, err)))
		return err && err->code ? err->code : -EIO;
	while ((r = archive_read_next_header(a, &ae)) != ARCHIVE_EOF) {
		if (r < ARCHIVE_WARN) {
			rc = r4i_fail(err, R4_ECORRUPT, "%s: %s", path,
				      arc_why(a));
			break;
		}
		(*entries)++;
		if (archive_entry_filetype(ae) == AE_IFREG &&
		    archive_entry_size(ae) > 0)
			*bytes += (uint64_t)archive_entry_size(ae);
		if (archive_read_data_skip(a) < ARCHIVE_WARN) {
			rc = r4i_fail(err, R4_ECORRUPT, "%s: %s", path,
				      arc_why(a));
			break;
		}
	}
	archive_read_free(a);
	arc_close(&f);
	return rc;
}

/* r4pack add: the archive's entries into a transaction on vol. */
int r4_add_from_archive(struct r4_txn *t, struct r4_vol *vol,
			const char *path, const struct r4_archive_opts *o,
			struct r4_error *err)
{
	struct tar_sink s;
	struct archive *a;
	struct arc_file f, none = { .fd = -1 };
	uint64_t size;
	int rc;

	if (!(a = arc_open(path, o, &size, &f, 0, err)))
		return err && err->code ? err->code : -EIO;
	tar_sink_init_txn(&s, t, vol, o, strcmp(path, "-") ? path :
			  "standard input");
	s.src_size = size;
	rc = arc_loop(&s, &none, a, path, err);
	tar_sink_free(&s);
	archive_read_free(a);
	arc_close(&f);
	return rc;
}
