/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: sources and sinks of r4pack: archives (anything libarchive
 * reads: tar, pax, GNU tar, cpio, zip, compressed with gzip, xz, zstd,
 * bzip2 or lz4), host directories, and pax tarballs written back out of
 * a volume.
 *
 * Conventions are those of r4/r4.h: 0 or a negative code, a filled
 * struct r4_error on failure, nothing printed. Warnings (an entry made
 * safe or skipped) go to the warn callback, one line each.
 *
 * Entry safety, applied to archive and directory sources alike:
 *   - paths lose leading "/" (warned once per archive, as tar does),
 *     "./" and empty or "." components; "" is the root directory;
 *   - an entry with a ".." component is skipped with a warning, and so
 *     is a hard link whose target has one;
 *   - an entry whose parent is (so far) a symlink or a non-directory in
 *     the image is skipped with a warning, so nothing is written through
 *     a symlink; so is a non-directory replacing a directory;
 *   - a later entry for the same path replaces the earlier one;
 *   - a hard link to a path that is not (yet) in the image is an error
 *     naming the entry (R4_ENOTFOUND); a link to an excluded path is
 *     skipped with a warning. */
#ifndef R4_ARCHIVE_H
#define R4_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/pack.h"
#include "r4/read.h"

/* One id mapping: id 'from' becomes 'to'. */
struct r4_id_pair {
	uint32_t from, to;
};

struct r4_archive_stats {
	uint64_t entries;	/* entries added (or written, for extract) */
	uint64_t skipped;	/* entries skipped with a warning */
	uint64_t bytes;		/* file data bytes (extract: written) */
	/* Extended attributes and ACLs of the source that Reiser4 cannot
	 * store (an entry's ACL counts one), and the entries that had
	 * them; create and add only. */
	uint64_t xattrs_dropped;
	uint64_t xattr_entries;
	/* OCI whiteouts applied (oci_whiteouts): names removed from the
	 * layers below, and the whiteout entries seen (never stored) */
	uint64_t whiteouts, removed;
};

struct r4_archive_opts {
	/* Ownership: all_root makes every uid and gid 0; otherwise the
	 * maps apply (ids not listed are kept). */
	int all_root;
	struct r4_id_pair *uid_map, *gid_map;
	size_t uid_map_len, gid_map_len;
	/* Time stamps (mtime, atime, ctime) above mtime_clamp become
	 * mtime_clamp (nanoseconds 0) when clamp_mtime is set. */
	int clamp_mtime;
	int64_t mtime_clamp;
	/* fnmatch(3) patterns (no flags) matched against the cleaned path
	 * and every run of its components ("a/b/c": "a", "a/b", "b", "b/c",
	 * ...): an excluded directory takes its contents with it. */
	char **exclude;
	size_t exclude_len;
	/* Host files a directory source leaves out, by st_dev and st_ino:
	 * the image being written or changed and its temporary file, so
	 * that a source never holds its own output. */
	struct r4_host_file { uint64_t dev, ino; } skip[4];
	size_t skip_len;
	/* Archive sources: the format. NULL or "auto" detects the formats
	 * r4pack names (tar in its ustar, pax, GNU and v7 forms, cpio, zip,
	 * 7zip, iso9660, xar, ar, cab, lha, rar), and mtree only when the
	 * archive's name ends in ".mtree"; one of those names (or "mtree")
	 * reads that format only. An archive with no entries (an empty or
	 * all-zero file) is an error: R4_ECORRUPT, "not an archive". */
	const char *format;
	/* 1: an extended attribute or ACL in the source (Reiser4 cannot
	 * store them) is an error (R4_EUNSUPP) instead of a warning. */
	int strict;
	/* 1: the source is an OCI image layer: an entry ".wh.NAME" removes
	 * NAME (and everything below it) from what the volume held before
	 * this source, ".wh..wh..opq" in a directory removes everything it
	 * held before (what this source puts there stays); neither is
	 * stored. In a new build (nothing below the first layer) they are
	 * only counted. */
	int oci_whiteouts;
	/* An uncompressed tar file named (not standard input) is read by
	 * r4kit's own header reader after its first entry, up to the first
	 * header it does not take as libarchive would; from there on by
	 * libarchive, which passes over the entries taken (it read the file
	 * from its start): the same entries. For tests: R4_TAR_LIBARCHIVE:
	 * every header by libarchive; R4_TAR_OWN: a warning names each entry
	 * libarchive reads after the own reader left the rest to it. */
	enum { R4_TAR_BOTH, R4_TAR_LIBARCHIVE, R4_TAR_OWN } tar_reader;
	/* Callbacks (each may be NULL): a warning line; an entry added to
	 * the image or written to the tarball (path as stored); progress of
	 * an archive source: bytes of the archive (as stored, compressed)
	 * read so far and its size (0 when unknown: a pipe); of a directory
	 * added to a volume (r4_add_from_dir): bytes of its regular files
	 * added so far and dir_total. */
	void (*warn)(void *ctx, const char *msg);
	void (*entry)(void *ctx, const char *path);
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *cb_ctx;
	/* r4_add_from_dir: the caller's count of the directory's regular
	 * file bytes, the total its progress shows (0: unknown; done then
	 * stands for it). */
	uint64_t dir_total;
	/* r4_add_from_dir: a scan of the same directory (r4_dir_scan):
	 * the add walks the names and uses the stats it kept instead of
	 * reading the tree again (NULL: it reads the tree). */
	const struct r4_dir_scan *scan;
	/* r4_dir_scan: the most entries it keeps (0: 131,072); a tree with
	 * more is summed, not kept, and the add walks it again. */
	size_t scan_max;
	/* Counters, filled when not NULL. */
	struct r4_archive_stats *stats;
};

void r4_archive_opts_init(struct r4_archive_opts *o);
/* Frees the maps and patterns added below. Accepts NULL. */
void r4_archive_opts_free(struct r4_archive_opts *o);
/* Add "FROM:TO[,FROM:TO...]" (decimal ids) to the uid map (gid == 0) or
 * the gid map. R4_EINVAL with a message on a bad spec. */
int r4_archive_add_idmap(struct r4_archive_opts *o, int gid,
			 const char *spec, struct r4_error *err);
int r4_archive_add_exclude(struct r4_archive_opts *o, const char *pattern,
			   struct r4_error *err);
/* Set o->format from a name ("auto", "tar", ..., "mtree"; see format):
 * R4_EINVAL with a message for a name r4pack does not read. */
int r4_archive_set_format(struct r4_archive_opts *o, const char *name,
			  struct r4_error *err);
/* Leave the host file at path out of directory sources (see skip): 0,
 * also when path does not exist (yet); R4_ERANGE when the table is
 * full. */
int r4_archive_skip_file(struct r4_archive_opts *o, const char *path,
			 struct r4_error *err);

/* Add every entry of an archive ("-" = standard input) to the build.
 * File data is streamed into the build as it is read, holes of sparse
 * entries kept. A corrupt or truncated archive is an error naming the
 * archive and the entry; the caller then aborts the build. */
int r4_pack_from_archive(struct r4_pack *b, const char *path,
			 const struct r4_archive_opts *o, struct r4_error *err);

/* The entries of an archive and the bytes of its regular files, read
 * through once without their data (a compressed archive is
 * decompressed): to size a volume before the archive is added. Not
 * standard input (R4_EINVAL). */
int r4_archive_measure(const char *path, const struct r4_archive_opts *o,
		       uint64_t *bytes, uint64_t *entries,
		       struct r4_error *err);

/* The data source for a directory build: regular files are read at
 * finish time from under dir (which must outlive the build), holes
 * found with SEEK_DATA / SEEK_HOLE. Put it in r4_pack_opts.source
 * before r4_pack_begin. */
void r4_pack_dir_source(struct r4_data_source *src, const char *dir);

/* Add a host directory (not following symlinks; hard links found by
 * device and inode; names in byte order) to the build; its own mode,
 * owner and times become the root's. Regular files are added with
 * deferred data (see r4_pack_dir_source). Paths longer than PATH_MAX
 * are an error. */
int r4_pack_from_dir(struct r4_pack *b, const char *dir,
		     const struct r4_archive_opts *o, struct r4_error *err);

/* The same two sources into a transaction on an existing volume (r4pack
 * add): every entry goes through r4_txn_add_entry (create or replace;
 * existing directories get the entry's attributes), with the safety
 * rules above applied to what the volume already holds as well (a
 * parent that is a symlink or a file in the volume: skipped with a
 * warning; so is a non-directory replacing a directory). The source's
 * root entry ("./" or the directory itself) sets the root's mode, owner
 * and times. Regular files of a directory are read at once. vol is the
 * volume the transaction was begun on. On failure the caller aborts the
 * transaction. */
struct r4_txn;
struct r4_dir_scan;
/* Walk dir as r4_add_from_dir does (lstat, names in byte order) before
 * an add: *blocks is the whole blocks of data of its regular files with
 * one name (no more than their allocated bytes; o->skip left out;
 * entries that cannot be read counted as none), *out what the walk saw
 * for r4_archive_opts.scan, or NULL when it could not keep all of it
 * (an entry or directory it could not read; more than o->scan_max
 * entries, 131,072 by default, or 8 MiB of names). Fails only for
 * memory. Free with r4_dir_scan_free (NULL accepted). */
int r4_dir_scan(const char *dir, const struct r4_archive_opts *o,
		uint64_t *blocks, struct r4_dir_scan **out,
		struct r4_error *err);
void r4_dir_scan_free(struct r4_dir_scan *s);
int r4_add_from_archive(struct r4_txn *t, struct r4_vol *vol,
			const char *path, const struct r4_archive_opts *o,
			struct r4_error *err);
int r4_add_from_dir(struct r4_txn *t, struct r4_vol *vol, const char *dir,
		    const struct r4_archive_opts *o, struct r4_error *err);

/* Write the whole volume as a pax tarball (libarchive's restricted pax:
 * ustar headers, pax extensions where needed) to out ("-" = standard
 * output; a file is written under a temporary name and renamed into
 * place, so a failure leaves an existing file untouched). Entries in
 * byte order of their names, depth first, the root first as "./", then
 * "./a", "./a/b"...; exact mode, uid, gid and times (ns); hard links
 * (objects with nlink > 1) as links to the first path; devices and
 * fifos; sockets are skipped with a warning (tar cannot hold them);
 * files with holes are written as GNU sparse (pax 1.0) entries.
 * Ownership maps and the clamp of o apply; exclude does not. */
int r4_extract_to_archive(struct r4_vol *vol, const char *out,
			  const struct r4_archive_opts *o,
			  struct r4_error *err);

#endif
