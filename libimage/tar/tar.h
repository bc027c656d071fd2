/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: internals of the archive layer (libimage/tar): a byte-keyed
 * hash map, path cleaning, and the sink every source feeds: it cleans
 * paths, applies exclusion, ownership and time options, keeps the image
 * safe (no writes through symlinks) and calls r4_pack_add (a new
 * volume) or r4_txn_add_entry (a transaction on an existing one). */
#ifndef R4_LIBIMAGE_TAR_H
#define R4_LIBIMAGE_TAR_H

#include <stddef.h>
#include <stdint.h>
#include "r4/archive.h"

/* ---- Map: byte-string keys to (int, string) values ---------------------- */

struct tar_map_ent {
	char *key;		/* owned, key_len bytes + NUL */
	size_t key_len;
	uint64_t hash;
	int val;
	char *str;		/* owned or NULL */
};

struct tar_map {
	struct tar_map_ent *slot;
	size_t cap, used;
};

void tar_map_init(struct tar_map *m);
void tar_map_free(struct tar_map *m);
/* The entry for key, or NULL. */
struct tar_map_ent *tar_map_get(const struct tar_map *m, const void *key,
				size_t len);
/* Insert or replace: val, and a copy of str (may be NULL). -ENOMEM. */
int tar_map_put(struct tar_map *m, const void *key, size_t len, int val,
		const char *str);

/* ---- Paths and options -------------------------------------------------- */

enum {
	TAR_PATH_ABS = 1,	/* had a leading '/' */
	TAR_PATH_DOTDOT = 2	/* has a ".." component (refuse) */
};

/* Clean in into a newly allocated string: no leading '/', no empty or
 * "." components, no trailing '/'; "" is the root. *flags gets
 * TAR_PATH_*. NULL when out of memory. */
char *tar_path_clean(const char *in, int *flags);

/* True when a pattern of o excludes path (see r4/archive.h). */
int tar_excluded(const struct r4_archive_opts *o, const char *path);

/* Apply ownership maps and the time clamp to e. */
void tar_apply_opts(const struct r4_archive_opts *o, struct r4_entry *e);

/* Send a warning line (printf-style) to o->warn. */
void tar_warn(const struct r4_archive_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- The sink ------------------------------------------------------------ */

struct tar_dir_time;

struct tar_sink {
	struct r4_pack *build;	/* either a build ... */
	struct r4_txn *txn;	/* ... or a transaction on vol */
	struct r4_vol *vol;
	const struct r4_archive_opts *opts;
	const char *source;	/* archive or directory name, for messages */
	struct tar_map types;	/* path in the image -> R4_ENT_* (final) */
	struct tar_map links;	/* hard link path -> its target's path */
	/* Transactions: directories this sink made where the volume had
	 * nothing: every path below one is in types (what the sink put
	 * there), so a path below one not in types is not looked up. */
	struct tar_map fresh;
	/* OCI whiteouts in a transaction: every path this sink put (a
	 * whiteout never removes what its own layer holds) */
	struct tar_map added;
	int warned_abs;
	/* Set by the source for the next entry: extended attributes and
	 * ACLs it had (Reiser4 cannot store them) and the first one's
	 * name; tar_sink_add counts or refuses them (opts->strict). */
	unsigned pend_xattrs;
	int pend_caps;		/* security.capability among them */
	char pend_xattr[64];
	uint64_t xattrs_dropped, xattr_entries;
	uint64_t src_size;	/* archive file's size, 0 unknown (progress) */
	/* Transactions: directories added, whose times are set again at
	 * the end (adding their contents changed them), as tar does. */
	struct tar_dir_time *dirs;
	size_t dirs_len, dirs_cap;
};

void tar_sink_init(struct tar_sink *s, struct r4_pack *b,
		   const struct r4_archive_opts *o, const char *source);
/* The same sink over a transaction: paths not seen in the source yet
 * are looked up in the volume (so an existing symlink or file is not
 * written through), and the root entry ("") sets the root's attributes. */
void tar_sink_init_txn(struct tar_sink *s, struct r4_txn *t,
		       struct r4_vol *vol, const struct r4_archive_opts *o,
		       const char *source);
void tar_sink_free(struct tar_sink *s);
/* After the last entry: a transaction's directories get their times
 * back; the dropped extended attributes are summed up in a warning. */
int tar_sink_finish(struct tar_sink *s, struct r4_error *err);
/* Add entry e whose path (and, for hard links, target) are raw names
 * from the source: cleaned, checked, mapped, then added. Returns 0 when
 * added or skipped with a warning, < 0 on error (err filled). A hard
 * link with data (cpio keeps a file's data with its last name) gives
 * the data to its target: the target is added again with it, and so
 * are the links made to it so far. */
int tar_sink_add(struct tar_sink *s, struct r4_entry *e,
		 struct r4_error *err);

/* ---- zip member names (zipname.c) ------------------------------------- */

struct tar_zipnames {
	uint8_t *cd;		/* the central directory, NULL: none read */
	size_t len, at;		/* its bytes; the next record */
};

const char *tar_zip_name(struct tar_zipnames *z, const char *name, char *buf,
			 size_t cap);
int tar_zip_names_load(int zip, const char *path, struct tar_zipnames *z,
		       char **zbuf);

/* ---- an uncompressed tar file's headers read without libarchive -------- */

#define TAR_LAST_LEN 256	/* the last entry's name kept for messages */

/* The reader of tarhdr.c over the archive file fd (size bytes), feeding
 * s; last and count are the archive loop's (read.c). pax: libarchive's
 * format state is pax (its hard links may have data); linked: an empty
 * link is "" to libarchive, not none (a link was read before). */
struct tar_own {
	struct tar_sink *s;
	int fd;
	uint64_t size;
	int pax;
	int linked;		/* libarchive's link text was ever set */
	uint64_t hand;		/* the header left to libarchive */
	char *last;
	uint64_t *count;
	uint8_t *win;		/* the window of the file read last */
	size_t wcap, wlen;
	uint64_t woff;
	char *pbuf, *lbuf, *kbuf;	/* 'x', 'L' and 'K' bodies */
	size_t plen;
};

/* The entries from the header sequence at pos to the end, then
 * tar_sink_finish: 0 or the error; or 1 at a header this reader leaves
 * to libarchive (o->hand its offset; the rest of the archive is
 * libarchive's). */
int tar_own_run(struct tar_own *o, uint64_t pos, struct r4_error *err);
void tar_own_free(struct tar_own *o);
/* For the fuzz target (fuzz/fuzz_tar.c): the entries the own reader
 * takes from the start of the tar file fd (size bytes), each to fn
 * (which stops the scan by returning nonzero), until the end (*end 1)
 * or a header it leaves to libarchive (*end 0, *hand its offset) or
 * fn's stop; the number of entries. */
struct tar_own_ent {
	const char *path, *target;
	int type;		/* R4_ENT_* */
	uint64_t size, data_off, next;
	uint32_t mode, mtime_ns;
	int64_t uid, gid, mtime;
	int64_t atime, ctime;	/* when aset, cset */
	uint32_t atime_ns, ctime_ns;
	int aset, cset;
	uint64_t rmaj, rmin;
	unsigned nx;		/* extended attributes */
};
int tar_own_scan(int fd, uint64_t size, int (*fn)(void *ctx,
		 const struct tar_own_ent *e), void *ctx, int *end,
		 uint64_t *hand);
/* read.c: libarchive, which read the archive from its start, passes
 * over the entries the own reader took, to the header at hand (byte
 * offset hand): reading on from there is then what it does without the
 * own reader (its state between headers its own). r and *ae: the header
 * it read last; its result for the one at hand (or the first it cannot
 * pass) is returned, with no warning said for those before. */
struct archive;
struct archive_entry;
int tar_arc_skip_to(struct archive *a, struct archive_entry **ae, int r,
		    uint64_t hand);
/* read.c: a uid or gid as an entry takes it (out of range: 0, with a
 * warning). */
uint32_t tar_arc_id(const struct tar_sink *s, const char *what,
		    const char *name, int64_t id);

#endif
