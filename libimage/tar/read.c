/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reading an archive with libarchive into a build. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "libimage/util/err.h"
#include "libimage/tar/tar.h"

/* Bytes read from the archive file at a time. */
#define ARC_BLOCK (1 << 20)

struct arc_data {
	struct archive *a;
	const char *arc;	/* archive name for messages */
	const char *entry;	/* entry name for messages */
	uint64_t size;		/* the entry's size */
	uint64_t next;		/* first offset not yet delivered */
};

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
				       d->entry, archive_error_string(d->a));
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

static uint32_t arc_id(const struct tar_sink *s, const char *what,
		       const char *name, la_int64_t id)
{
	if (id >= 0 && id <= (la_int64_t)UINT32_MAX)
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

/* One header: map it to an entry and add it. */
static int arc_entry(struct tar_sink *s, struct archive *a,
		     struct archive_entry *ae, const char *name,
		     struct r4_error *err)
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
	e.path = name;
	e.mode = (uint32_t)archive_entry_perm(ae) & 07777;
	e.uid = arc_id(s, "uid", name, archive_entry_uid(ae));
	e.gid = arc_id(s, "gid", name, archive_entry_gid(ae));
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
		d.arc = s->source;
		d.entry = name;
		d.size = e.size;
		e.data = arc_data_fn;
		e.data_ctx = &d;
	}
	return tar_sink_add(s, &e, err);
}

static struct archive *arc_open(const char *path, struct r4_error *err)
{
	struct archive *a = archive_read_new();
	int r;

	if (!a) {
		r4i_fail(err, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	archive_read_support_format_all(a);
	archive_read_support_filter_all(a);
	if (!strcmp(path, "-"))
		r = archive_read_open_fd(a, 0, ARC_BLOCK);
	else
		r = archive_read_open_filename(a, path, ARC_BLOCK);
	if (r != ARCHIVE_OK) {
		int e = archive_errno(a);

		r4i_fail(err, e > 0 ? -e : -EIO, "%s: %s",
			strcmp(path, "-") ? path : "standard input",
			archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	return a;
}

static int arc_loop(struct tar_sink *s, struct archive *a,
		    struct r4_error *err)
{
	struct archive_entry *ae;
	char last[256] = "";
	int r, rc;

	while ((r = archive_read_next_header(a, &ae)) != ARCHIVE_EOF) {
		const char *name;

		if (r < ARCHIVE_WARN)
			return r4i_fail(err, -EIO, "%s: %s%s%s%s", s->source,
				       archive_error_string(a),
				       *last ? " (after entry '" : "",
				       last, *last ? "')" : "");
		if (r == ARCHIVE_WARN && archive_error_string(a))
			tar_warn(s->opts, "%s: %s", s->source,
				 archive_error_string(a));
		name = archive_entry_pathname(ae);
		if (!name)
			name = archive_entry_pathname_utf8(ae);
		if (!name)
			return r4i_fail(err, R4_ECORRUPT, "%s: an entry after "
				       "'%s' has no name", s->source, last);
		snprintf(last, sizeof(last), "%s", name);
		rc = arc_entry(s, a, ae, name, err);
		if (rc)
			return rc;
	}
	return 0;
}

int r4_pack_from_archive(struct r4_build *b, const char *path,
			 const struct r4_archive_opts *o, struct r4_error *err)
{
	struct tar_sink s;
	struct archive *a;
	int rc, rc2;

	if (!(a = arc_open(path, err)))
		return err && err->code ? err->code : -EIO;
	tar_sink_init(&s, b, o, strcmp(path, "-") ? path : "standard input");
	/* the image is written behind while the archive is read */
	rc = r4_build_stream_begin(b, err);
	if (!rc)
		rc = arc_loop(&s, a, err);
	rc2 = r4_build_stream_end(b, rc ? NULL : err);
	if (!rc)
		rc = rc2;
	tar_sink_free(&s);
	archive_read_free(a);
	return rc;
}

/* r4pack add: the archive's entries into a transaction on vol. */
int r4_add_from_archive(struct r4_txn *t, struct r4_vol *vol,
			const char *path, const struct r4_archive_opts *o,
			struct r4_error *err)
{
	struct tar_sink s;
	struct archive *a;
	int rc;

	if (!(a = arc_open(path, err)))
		return err && err->code ? err->code : -EIO;
	tar_sink_init_txn(&s, t, vol, o, strcmp(path, "-") ? path :
			  "standard input");
	rc = arc_loop(&s, a, err);
	tar_sink_free(&s);
	archive_read_free(a);
	return rc;
}
