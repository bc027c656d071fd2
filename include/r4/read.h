/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reading a volume: objects (stat data, directories, file bodies,
 * symlinks), block maps, and raw tree walks for inspection tools.
 *
 * Conventions are those of r4/r4.h: 0 or a negative code, a filled
 * struct r4_error on failure, nothing printed. Every reader checks what
 * it takes from the disk: a hostile image gives an error naming the
 * block, item or entry, never a crash or a hang.
 *
 * Iterators call a function per element; a non-zero return from it
 * stops the iteration and becomes the iterator's return value (so use
 * a positive value to stop early without an error). */
#ifndef R4_READ_H
#define R4_READ_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"

/* ---- Objects ------------------------------------------------------------ */

/* An object: the ids of its stat-data key. 'ordering' is 0 on short-key
 * volumes. Plain values: copy and compare freely. */
struct r4_objref {
	uint64_t locality;
	uint64_t ordering;
	uint64_t oid;
};

/* Object plugins (the on-disk ids). */
enum r4_obj_plugin {
	R4_OBJ_REG40 = 0, R4_OBJ_DIR40 = 1, R4_OBJ_SYM40 = 2,
	R4_OBJ_SPL40 = 3, R4_OBJ_CCREG40 = 4
};

/* Decoded stat data. Fields of absent extensions are 0 (see sd_mask:
 * bit k = stat-data extension k: 0 light-weight, 1 unix, 2 large times,
 * 3 symlink, 4 plugin set, 5 flags, 6 caps, 7 crypto, 8 heir set). */
struct r4_stat {
	uint64_t oid, locality, ordering;
	uint32_t mode;		/* type and permission bits */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;		/* bytes; directories: entries */
	uint64_t bytes;		/* bytes used (not for devices) */
	uint64_t rdev;		/* devices: major << 20 | minor */
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	unsigned object_plugin;	/* enum r4_obj_plugin */
	uint64_t sd_mask;
	uint32_t flags;		/* flags extension */
	/* For directories: the hash and fibration plugin ids in effect
	 * (own plugin set, else the root's, else r5 / dot_o); for files:
	 * the formatting policy in effect. -1 where not applicable. */
	int hash_id, fibration_id, formatting_id;
	/* Where the stat data is: leaf block and item index. */
	uint64_t sd_block;
	unsigned sd_item;
};

/* Major / minor of r4_stat.rdev. */
static inline uint32_t r4_rdev_major(uint64_t rdev)
{ return (uint32_t)(rdev >> 20); }
static inline uint32_t r4_rdev_minor(uint64_t rdev)
{ return (uint32_t)(rdev & 0xfffff); }

/* The root directory. */
int r4_root(struct r4_vol *vol, struct r4_objref *out, struct r4_error *err);

/* Resolve an absolute path ("/", "/a/b", repeated and trailing slashes
 * allowed, "." and ".." are looked up as the names they are). Symlinks
 * are not followed. R4_ENOTFOUND for a missing name, -ENOTDIR when a
 * non-final component is not a directory. */
int r4_lookup(struct r4_vol *vol, const char *path, struct r4_objref *out,
	      struct r4_error *err);
/* One name (len bytes, no '/') in directory dir. */
int r4_lookup_at(struct r4_vol *vol, const struct r4_objref *dir,
		 const char *name, size_t len, struct r4_objref *out,
		 struct r4_error *err);

/* Stat data of an object. R4_ENOTFOUND if it has none. */
int r4_stat(struct r4_vol *vol, const struct r4_objref *obj,
	    struct r4_stat *st, struct r4_error *err);

/* Directory entries in key order, "." and ".." included. 'name' is not
 * NUL-terminated and lives during the call only. -ENOTDIR if obj is not
 * a directory. */
typedef int (*r4_dirent_fn)(void *ctx, const char *name, size_t len,
			    const struct r4_objref *target);
int r4_readdir(struct r4_vol *vol, const struct r4_objref *dir,
	       r4_dirent_fn fn, void *ctx, struct r4_error *err);

/* Read up to len bytes of a regular file at off into buf; *got = bytes
 * read (short only at the end of the file, whose size is the stat
 * data's). Holes and unallocated extents read as zeros. -EISDIR for a
 * directory, R4_EINVAL for other non-regular objects, R4_EUNSUPP for
 * cryptcompress (ccreg40) files. R4_ECORRUPT, as the kernel's read
 * error, when a byte of the range below the size lies in no item of an
 * ordinary (reg40) file (its size runs past its body). */
int r4_read(struct r4_vol *vol, const struct r4_objref *obj, uint64_t off,
	    void *buf, size_t len, size_t *got, struct r4_error *err);

/* The SHA-256 of a regular file's bytes, as r4_read gives them (holes as
 * zeros, compressed files decompressed), into out; errors as r4_read's. */
int r4_sha256_file(struct r4_vol *vol, const struct r4_objref *obj,
		   uint8_t out[32], struct r4_error *err);

/* Symlink target into buf (NUL-terminated, cut to len - 1 bytes);
 * *tlen (may be NULL) = full target length. R4_EINVAL if not a symlink. */
int r4_readlink(struct r4_vol *vol, const struct r4_objref *obj, char *buf,
		size_t len, size_t *tlen, struct r4_error *err);

/* ---- Block maps ----------------------------------------------------------- */

enum r4_blk_kind {
	R4_BLK_DATA = 0,	/* allocated extent: blocks blk..blk+count-1 */
	R4_BLK_HOLE = 1,	/* hole extent unit (blk = 0) */
	R4_BLK_UNALLOCATED = 2,	/* unallocated extent unit (blk = 0) */
	R4_BLK_TAIL = 3,	/* tail item: bytes in tree node blk, count 1 */
	R4_BLK_NODE = 4,	/* a tree node (r4_block_owner only) */
	R4_BLK_SD = 5		/* the leaf holding the stat data */
};

/* One piece of a file body, in file order. 'len' is the bytes of file
 * the piece covers (extents: count * blksize; tails: item length). The
 * gaps between pieces are holes that have no item at all. */
struct r4_blkmap {
	uint64_t file_off;
	uint64_t len;
	uint64_t blk;
	uint64_t count;
	int kind;		/* enum r4_blk_kind */
};
typedef int (*r4_block_fn)(void *ctx, const struct r4_blkmap *m);
/* Body items of a regular file (reg40) in key order. */
int r4_file_blocks(struct r4_vol *vol, const struct r4_objref *obj,
		   r4_block_fn fn, void *ctx, struct r4_error *err);

/* The byte ranges of regular file obj (reg40 or ccreg40) below size
 * that hold data (allocated extents, tails, compressed clusters), in
 * file order, adjacent ones merged: (*runs)[2i] is an offset,
 * (*runs)[2i + 1] a length; the rest of the file reads as zeros, so a
 * copy can skip it (sparse output in time and memory proportional to the
 * items). *runs is malloc'ed (NULL when *n is 0). R4_ECORRUPT, as
 * r4_read, when a reg40 file's size runs past its items. */
int r4_file_runs(struct r4_vol *vol, const struct r4_objref *obj,
		 uint64_t size, uint64_t **runs, size_t *n,
		 struct r4_error *err);

/* Who uses block blk: a tree node (*kind = R4_BLK_NODE, owner = the
 * object of the node's first item), or a data block of an extent
 * (R4_BLK_DATA, owner = the file). R4_ENOTFOUND when nothing in the
 * tree points at it. Walks the whole tree. */
int r4_block_owner(struct r4_vol *vol, uint64_t blk, struct r4_objref *owner,
		   int *kind, struct r4_error *err);

/* ---- The namespace walk ---------------------------------------------- */

/* One entry met by r4_walk. The strings live during the call only. */
struct r4_walk_entry {
	const char *path;	/* from the start: "/a/b" (start's path first) */
	size_t path_len;
	const char *name;	/* the last component, inside path */
	size_t name_len;
	uint64_t dir;		/* object id of the directory holding it */
	struct r4_objref target;
	unsigned depth;		/* 1: an entry of the start directory */
	int is_dir;		/* its stat data is a directory's */
	/* A directory already entered by another name (a second name of a
	 * directory, or a loop in a damaged volume): not entered again. */
	int again;
	/* 1: called once more for a directory the walk entered, after its
	 * entries (to set its times, or remove it); 0: the entry met. */
	int leave;
	/* With leave: 0, or the error that stopped the walk of this
	 * directory's entries (a damaged item; err holds its message).
	 * fn returning 0 passes over it (err is cleared) and the walk goes
	 * on with the next entry of the parent; anything else stops it. */
	int error;
	/* r4_walk_by_name only, else 0 / NULL: the entry met before it in
	 * its directory has the same name (a damaged or crafted volume);
	 * its stat data as r4_stat gives it (NULL when it cannot be read:
	 * r4_stat then says why; NULL with leave too). */
	int same_name;
	const struct r4_stat *st;
};
/* What fn returns: 0 goes on (into a directory too), R4_WALK_SKIP goes
 * on without entering this directory, anything else stops the walk and
 * is returned by r4_walk. */
#define R4_WALK_SKIP 1
typedef int (*r4_walk_fn)(void *ctx, const struct r4_walk_entry *e);
/* Every entry below directory start ("." and ".." left out), depth
 * first, each directory's entries in key order, fn called for an entry
 * before its directory's own entries (and, for a directory entered,
 * once more after them, with leave set); start_path (may be "" for the
 * root) begins each path. Each directory is entered once (the set of
 * directories entered is kept: a loop ends). The walk keeps no
 * recursion on the stack and no limit of its own on the depth or the
 * length of a path; max_depth (0: none) is the deepest entry it may
 * meet (depth 1: the start's own): a directory at that depth that
 * would have to be entered stops it with R4_ERANGE naming it, never
 * silently. A directory whose items cannot be found again between two
 * of its entries (items out of key order) stops it with R4_ECORRUPT. */
int r4_walk(struct r4_vol *vol, const struct r4_objref *start,
	    const char *start_path, unsigned max_depth, r4_walk_fn fn,
	    void *ctx, struct r4_error *err);
/* r4_walk with each directory's entries in name order (the bytes of
 * the names, a shorter name first when one begins the other) instead of
 * key order: a directory's entries are read whole when it is entered
 * (a damaged item then stops it before fn meets any of them, as
 * r4_readdir fails), then met one by one; the rest as r4_walk. */
int r4_walk_by_name(struct r4_vol *vol, const struct r4_objref *start,
		    const char *start_path, unsigned max_depth, r4_walk_fn fn,
		    void *ctx, struct r4_error *err);

/* Every path ("/a/b") by which object oid is reachable from the root,
 * found by a walk of the whole directory tree (r4_walk: directories
 * reached twice are entered once, at any depth). 'path' lives during
 * the call only. */
typedef int (*r4_path_fn)(void *ctx, const char *path);
int r4_oid_paths(struct r4_vol *vol, uint64_t oid, r4_path_fn fn, void *ctx,
		 struct r4_error *err);

/* ---- Raw tree ---------------------------------------------------------- */

/* Every node of the tree, parents before children, children left to
 * right; 'node' is the whole verified block (blksize bytes), valid
 * during the call only. The walk stops with an error naming the block
 * on a bad node, a wrong level or a block reached twice. */
typedef int (*r4_node_fn)(void *ctx, uint64_t blk, unsigned level,
			  const uint8_t *node);
int r4_tree_walk(struct r4_vol *vol, r4_node_fn fn, void *ctx,
		 struct r4_error *err);

/* An item found in the tree. key[] is the key in the large layout
 * (el[1] = 0 on short-key volumes). */
struct r4_item_loc {
	uint64_t blk;		/* node holding the item */
	unsigned level;		/* 1 leaf, 2 twig */
	unsigned pos;		/* item index in the node */
	unsigned plugin_id;	/* item plugin id */
	uint64_t key[4];
	uint32_t body_off;	/* body offset and length in the node */
	uint32_t body_len;
};

/* Every item of an object (stat data, directory entries or body items)
 * in key order: the items whose key has the object's (locality or
 * dir oid, ordering, oid) as far as they go. */
typedef int (*r4_item_fn)(void *ctx, const struct r4_item_loc *it);
int r4_obj_items(struct r4_vol *vol, const struct r4_objref *obj,
		 r4_item_fn fn, void *ctx, struct r4_error *err);

#endif
