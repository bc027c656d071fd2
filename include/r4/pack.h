/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: building a volume from a stream of entries (r4pack create).
 *
 * A build collects entries (any order; a later entry for the same path
 * replaces the earlier one, as tar does; missing parent directories are
 * made with mode 0755), then r4_pack_finish() lays out the whole tree
 * in key order in one pass (the dancing tree's flush: leaves packed full,
 * extents at the twig level, each file's data contiguous, nodes next to
 * the data they describe where the source allows) and writes the image.
 * An image file is built under a temporary name in the same directory
 * (".NAME.r4pack.XXXXXX", created O_EXCL) and renamed into place only
 * when complete and synced, so a failed build leaves nothing at the
 * target path and never touches an existing file there. A block device
 * is written in place (not atomic: a failure leaves it half written).
 * Streamed data and tail files' data wait in memory up to
 * spool_memory, then in ".NAME.r4spool.XXXXXX" (unlinked at once; in
 * $TMPDIR for a block device).
 *
 * What is stored (doc/format.md §7):
 *  - regular files are reg40 (no object gets a pset slot, so the mode
 *    decides, even though mkfs's default root pset says create=ccreg40),
 *    unless compress_files is set and the profile says create=ccreg40:
 *    then they are compressed files stored as the kernel would
 *    (doc/compress.md: the profile's compress, compressMode and cluster;
 *    conv may leave a file reg40). Body as the kernel decides it for the formatting
 *    policy (profile "formatting"): smart = the kernel's "4blocks" rule,
 *    tail items when size <= 4 * 4096 = 16384 bytes, else extents;
 *    tails = always tail items; extents = never. Holes in extent files
 *    are hole units (start 0), also a trailing one up to the size.
 *  - stat data: light-weight + unix extensions; + large times (ns) only
 *    when some nanosecond field is nonzero; symlinks add the symlink
 *    extension (targets up to ~3970 bytes: one leaf item); the root
 *    keeps mkfs's plugin set. Times are unsigned 32-bit seconds: before
 *    1970 is stored as 0 and after 2106-02-07 as 4294967295, their ns
 *    dropped. rdev = major << 20 | minor (major < 4096, minor < 2^20).
 *  - names up to 255 bytes; "." components are skipped, ".." refused.
 *
 * Defaults (r4_pack_opts_init): mkfs's profile, auto_size 1,
 * free_bytes 0, free_percent 0 (the smallest volume that holds it all). */
#ifndef R4_PACK_H
#define R4_PACK_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"

struct r4_pack;

/* Data of a regular file, delivered in increasing offset order as
 * (offset, bytes) chunks; the gaps between chunks (and up to the size)
 * are holes. Returns 1 with a chunk, 0 at the end, < 0 on error (with
 * err filled: name the entry). A chunk before the end of the previous
 * one or past the entry's size fails the build ("PATH: data is longer
 * than its size"); data that ends early leaves a hole (the reader is the
 * one to report a short archive member). */
typedef int (*r4_data_fn)(void *ctx, uint64_t *off, const void **buf,
			  size_t *len, struct r4_error *err);

/* For data read at finish time (directory sources): open the entry's
 * data, giving back a reader and its context; close it afterwards.
 * 'path' is the name the object is placed under: for hard links the
 * first of its names in the tree's order, which may be another name than
 * the one the data came with (the same host file for a directory). */
struct r4_data_source {
	int (*open)(void *src_ctx, const char *path, r4_data_fn *fn,
		    void **ctx, struct r4_error *err);
	void (*close)(void *ctx);
	void *src_ctx;
	/* 1: open, the reader and close may run on several threads at
	 * once, each thread on its own entry (compressed files are then
	 * read and compressed ahead, in parallel); 0: one thread only. */
	int parallel;
};

enum r4_entry_type {
	R4_ENT_REG, R4_ENT_DIR, R4_ENT_SYMLINK, R4_ENT_HARDLINK,
	R4_ENT_CHR, R4_ENT_BLK, R4_ENT_FIFO, R4_ENT_SOCK
};

struct r4_entry {
	const char *path;	/* relative, '/'-separated, already made safe */
	enum r4_entry_type type;
	uint32_t mode;		/* permission bits incl. suid/sgid/sticky */
	uint32_t uid, gid;
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint64_t size;		/* regular files */
	const char *target;	/* symlink target, or hard link's path */
	uint32_t rdev_major, rdev_minor;
	/* Regular files: stream the data now (data != NULL), or read it at
	 * finish time through the build's r4_data_source (data == NULL). */
	r4_data_fn data;
	void *data_ctx;
	/* data_file not NULL: besides (data, data_ctx), the size bytes
	 * lie as they are, contiguous, at byte data_off of the regular file
	 * data_file (its name in messages; an uncompressed tar archive)
	 * open as data_fd. The build may then take them from there and
	 * never call data (the caller skips them): extents are copied file
	 * to file in the kernel, tails read at finish. The build keeps a
	 * duplicate of the first such descriptor until it is freed; entries
	 * naming another descriptor or file name, and compressed files
	 * (compress_files), are read through data. A caller must not reuse
	 * the descriptor number for another file during one build: the
	 * build knows its source by number and name, not by inode. */
	const char *data_file;
	int data_fd;
	uint64_t data_off;
};

struct r4_pack_opts {
	/* label, uuid, plugins, mkfs_time. With have_uuid, reproducible
	 * and mkfs_time the image is reproducible: the same entries in the
	 * same order give the same bytes. */
	struct r4_mkfs_opts mkfs;
	/* 1: the smallest size that holds everything plus the free space
	 * asked (a multiple of 64 KiB); 0: mkfs.size_bytes (rounded down to
	 * 64 KiB; "the volume is full" when it does not fit). A block device
	 * uses its size (or size_bytes if smaller) either way. */
	int auto_size;
	uint64_t free_bytes;		/* auto: free space to leave */
	unsigned free_percent;		/* auto: and at least this % free */
	const struct r4_data_source *source;	/* for deferred data */
	/* Progress: called now and then with bytes of data written. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* 1: store regular files as the profile's "create" plugin says
	 * (ccreg40: compressed); 0 (default): always reg40. */
	int compress_files;
	/* Threads that compress (0: one per online CPU, up to 8; 1: the
	 * calling thread only). The image's bytes never depend on it. */
	unsigned threads;
	/* Tuning, for tests (r4pack fills them from R4_PACK_SPILL_AFTER and
	 * R4_PACK_RUN_BYTES); the image's bytes never depend on them: the
	 * names kept in memory before the next ones spill to sorted runs in
	 * $TMPDIR (-1: 262,144), and the bytes of records a run gathers
	 * before it is written (-1: 16 MiB). */
	int64_t spill_after;
	int64_t spill_run_bytes;
	/* Streamed data (standard input, a compressed archive, sparse
	 * members) waits in a spool until the tree reaches its file: its
	 * first spool_memory bytes in memory (-1: the smaller of 1 GiB and
	 * an eighth of the RAM or of the control group's memory limit, 0
	 * where transparent huge pages are off; 0: none), the rest in a
	 * file beside the image (in $TMPDIR for a block device). */
	int64_t spool_memory;
	/* Progress of the spool's copy into place (bytes): called now and
	 * then, with progress_ctx, once the tree is built; done reaches
	 * total. NULL: not reported. */
	void (*copy_progress)(void *ctx, uint64_t done, uint64_t total);
	/* Also for tests (R4_PACK_UPPER_MEM): the nodes above the leaves
	 * kept in memory before the next ones wait in $TMPDIR until they
	 * are placed (-1: 1,024); the bytes never depend on it. */
	int64_t upper_mem;
};

/* files = objects that are not directories; dirs includes the root;
 * bytes = sum of regular file sizes; nodes = leaves + twigs + upper. */
struct r4_pack_result {
	uint64_t block_count, free_blocks, files, dirs, bytes;
	uint64_t nodes, leaves, twigs, data_blocks;
	/* bytes of file data taken where they lie in the source file
	 * (r4_entry.data_file) rather than through the data reader */
	uint64_t direct_bytes;
};

void r4_pack_opts_init(struct r4_pack_opts *o);
int r4_pack_begin(const char *image, const struct r4_pack_opts *o,
		   struct r4_pack **out, struct r4_error *err);
/* Add one entry. A path through a non-directory, a hard link to a path
 * not added yet (or to a directory), replacing a non-empty directory by
 * something else: error naming the entry, nothing changed, the build can
 * go on. A failure while taking streamed data (e->data) is sticky: every
 * later call fails. */
int r4_pack_add(struct r4_pack *b, const struct r4_entry *e,
		 struct r4_error *err);
/* The type (R4_ENT_*, never R4_ENT_HARDLINK: a link has its target's)
 * of the name at the first len bytes of path ("" is the root) in the
 * build so far, or -1 when there is none. Lets a caller ask the build
 * instead of keeping its own table of every path. */
int r4_pack_type(struct r4_pack *b, const char *path, size_t len);
/* The checks before adding path (a whole path, "" the root), in one
 * walk: returns the type of path as r4_pack_type does, except that a
 * name a big build keeps in $TMPDIR (never a directory) may read -1:
 * it is not looked for there (the add resolves it); *bad is 0 when
 * every parent of path is a directory or not there, else the length of
 * the first parent that is there and is not a directory (*bad_type:
 * its type). What the walk found serves the next r4_pack_add when it
 * adds the same path. */
int r4_pack_probe(struct r4_pack *b, const char *path, size_t *bad,
		   int *bad_type);
/* Streaming sources (an archive read once): from r4_pack_stream_begin
 * to r4_pack_stream_end the streamed data is written to the image on a
 * second thread while the caller reads on. End waits for every write
 * and returns the first failure, which is sticky (every later call
 * fails); each begin needs its end before finish or abort. */
int r4_pack_stream_begin(struct r4_pack *b, struct r4_error *err);
int r4_pack_stream_end(struct r4_pack *b, struct r4_error *err);
/* Lay out and write everything, then rename into place. Frees b in
 * every case (do not call r4_pack_abort afterwards); res may be NULL. */
int r4_pack_finish(struct r4_pack *b, struct r4_pack_result *res,
		    struct r4_error *err);
/* The temporary image file being written (renamed over the image by
 * finish), or NULL when the image is written in place (a device). */
const char *r4_pack_temp(const struct r4_pack *b);
/* Discard a build: removes its temporary file. Accepts NULL. */
void r4_pack_abort(struct r4_pack *b);

/* Bytes of target in o's window (a partition, or all of a device or
 * file): the size a volume built for it takes. Reads nothing, takes no
 * lock. */
int r4_pack_target_size(const char *target, const struct r4_open_opts *o,
			uint64_t *bytes, struct r4_error *err);
/* Write the finished image file image onto target in o's window (a
 * block device or a partition), holding target's lock: its first 64 KiB
 * whole, then its data runs (the holes of a sparse image are skipped:
 * Reiser4 reads no block it has not written). The image must fit. A
 * failure part way leaves the window half written: build first, place
 * last. 0 or the error. */
int r4_pack_place(const char *image, const char *target,
		  const struct r4_open_opts *o, struct r4_error *err);

#endif
