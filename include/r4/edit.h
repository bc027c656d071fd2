/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: changing an existing volume. Every change happens inside a
 * transaction: begin, any number of operations, commit. The volume is
 * either entirely as before or entirely as after, whatever happens
 * (crash, kill, power cut) in between; many files can change in one
 * transaction. Paths are absolute ("/a/b"). */
#ifndef R4_EDIT_H
#define R4_EDIT_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/pack.h"

struct r4_txn;
struct r4_objref;

/* Needs a volume opened with R4_OPEN_RDWR (which replays the journal). */
int r4_txn_begin(struct r4_vol *vol, struct r4_txn **out,
		 struct r4_error *err);
int r4_txn_commit(struct r4_txn *t, struct r4_error *err);
/* Forget every change of the transaction. Accepts NULL. */
void r4_txn_abort(struct r4_txn *t);
/* Free blocks the transaction has written so far (file data and nodes
 * go to their final places before the commit): an abort leaves the
 * volume's contents as they were, but these blocks of its free space
 * hold new bytes. Call it before r4_txn_abort. */
uint64_t r4_txn_written(const struct r4_txn *t);
/* 1 when a new regular file in the root directory would be stored
 * compressed (ccreg40), 0 when not, an error code otherwise: the
 * transaction's r4_txn_set_create over the root's plugin set
 * (doc/compress.md §5.1). */
int r4_txn_compresses(struct r4_txn *t, struct r4_error *err);

/* New regular files (r4_create, r4_txn_add_entry) are stored as the
 * kernel would store them on this volume: the create plugin and the
 * compression parameters from the parent directory's heir and plugin
 * sets, then the root's, then the kernel's defaults (reg40; lzo1, conv,
 * 64K) (doc/compress.md §5.1). This overrides members for the rest of
 * the transaction: bit R4_PT_x of set means plugin[R4_PT_x] (an id as
 * in struct r4_mkfs_opts) wins; only create, compress, compressMode and
 * cluster may be set. */
int r4_txn_set_create(struct r4_txn *t, const uint16_t *plugin,
		      unsigned set, struct r4_error *err);

/* Attributes of a new object, or the ones r4_setattr changes. */
struct r4_attr {
	uint32_t mode;		/* type bits and permissions */
	uint32_t uid, gid;
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint32_t rdev_major, rdev_minor;
};

enum r4_attr_mask {
	R4_ATTR_MODE = 1, R4_ATTR_UID = 2, R4_ATTR_GID = 4,
	R4_ATTR_ATIME = 8, R4_ATTR_MTIME = 16, R4_ATTR_CTIME = 32
};

int r4_mkdir(struct r4_txn *t, const char *path, const struct r4_attr *a,
	     struct r4_error *err);
/* A regular file with its data (data may be NULL: empty); an existing
 * file at path is replaced (its old data freed), as tar would. */
int r4_create(struct r4_txn *t, const char *path, const struct r4_attr *a,
	      uint64_t size, r4_data_fn data, void *ctx,
	      struct r4_error *err);
int r4_symlink(struct r4_txn *t, const char *path, const char *target,
	       const struct r4_attr *a, struct r4_error *err);
/* Character or block device, fifo or socket, by a->mode's type bits. */
int r4_mknod(struct r4_txn *t, const char *path, const struct r4_attr *a,
	     struct r4_error *err);
int r4_link(struct r4_txn *t, const char *existing, const char *path,
	    struct r4_error *err);
/* Remove a name of a non-directory; the object goes with its last name. */
int r4_unlink(struct r4_txn *t, const char *path, struct r4_error *err);
/* Remove an empty directory. */
int r4_rmdir(struct r4_txn *t, const char *path, struct r4_error *err);
/* Remove a directory and everything below it (rm -r). */
int r4_remove_tree(struct r4_txn *t, const char *path,
		   struct r4_error *err);
/* Rename; an existing non-directory (or empty directory) at 'to' is
 * replaced, as rename(2). */
int r4_rename(struct r4_txn *t, const char *from, const char *to,
	      struct r4_error *err);
int r4_setattr(struct r4_txn *t, const char *path, const struct r4_attr *a,
	       unsigned mask, struct r4_error *err);
/* Change a regular file's size: shorter frees blocks, longer adds a
 * hole. */
int r4_truncate(struct r4_txn *t, const char *path, uint64_t size,
		struct r4_error *err);

/* Write len bytes of buf at byte off of the existing regular (reg40)
 * file at path, keeping its object id, names, owner, mode and times
 * but mtime and ctime (the transaction's time); the size grows to
 * off + len when that is more, a gap past the old end is a hole. A
 * body of extents is written in place: a touched block the committed
 * volume uses moves to a new block (copy-on-write; one this transaction
 * wrote is written again), blocks past the end extend the last extent,
 * so a write costs the bytes written. Any other body (tail items: at
 * most four blocks under the default policy) is rewritten whole, tails
 * or extents as the volume's tail policy says for the new size.
 * Compressed (ccreg40) files: R4_EUNSUPP. R4_ENOSPC, before any change,
 * when the transaction has too few free blocks left for it. */
int r4_pwrite(struct r4_txn *t, const char *path, uint64_t off,
	      const void *buf, size_t len, struct r4_error *err);
/* How the transaction's path operations (every r4_* above that takes
 * a path) find an object: fn answers as r4_lookup would (the same codes,
 * err filled), from whatever the caller keeps of earlier answers; NULL
 * (the default) walks from the root with r4_lookup. The caller keeps
 * its answers right: a name this transaction changes must be forgotten
 * before the change, and all of them when the transaction is aborted. */
typedef int (*r4_resolve_fn)(void *ctx, const char *path,
			     struct r4_objref *out, struct r4_error *err);
void r4_txn_set_resolver(struct r4_txn *t, r4_resolve_fn fn, void *ctx);
/* Free blocks the transaction may still allocate (what it frees is
 * free only after the commit). */
uint64_t r4_txn_blocks_free(const struct r4_txn *t);
/* 1 when an operation failed half way: the transaction can only be
 * aborted (r4_txn_commit refuses it). */
int r4_txn_failed(const struct r4_txn *t);

/* Add or replace the entries of a build source in an existing volume,
 * as one transaction (r4pack add): the same r4_entry stream that
 * r4_pack_add takes. */
int r4_txn_add_entry(struct r4_txn *t, const struct r4_entry *e,
		     struct r4_error *err);
/* The mode of the object at path ("a/b/c", relative to the root, as an
 * r4_entry's path) as the transaction sees it, read through its own
 * leaves as r4_txn_add_entry reads them: no deferred leaf is written
 * for the look. R4_ENOTFOUND or another error when there is none. */
int r4_txn_mode(struct r4_txn *t, const char *path, uint32_t *mode,
		struct r4_error *err);

#endif
