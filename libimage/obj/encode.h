/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the entry encoder: the one set of rules that turns an entry
 * (type, mode, owner, times, size, device, symlink target, file data)
 * into what its stat data, directory entry and body hold. The one-pass
 * builder (libimage/pack) and the editor (libimage/obj: r4pack add,
 * r4debugfs -w) both call it, so one bad entry gets one message from
 * either, and one good entry the same bytes. */
#ifndef R4_LIBIMAGE_OBJ_ENCODE_H
#define R4_LIBIMAGE_OBJ_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include "r4/pack.h"
#include "r4/edit.h"
#include "format/item.h"
#include "format/key.h"

#define ENC_NAME_MAX 255	/* bytes of one name */

/* ---- attributes --------------------------------------------------------- */

/* Attributes as a stat data keeps them. */
struct enc_attr {
	uint32_t mode;		/* type bits (S_IF*) and permissions */
	uint32_t uid, gid;
	uint32_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
};

/* The type bits (S_IF*) of an entry type; 0 for R4_ENT_HARDLINK. */
uint32_t enc_type_bits(enum r4_entry_type t);
/* An entry's attributes as r4_attr (mode with its type bits). */
void enc_entry_attr(const struct r4_entry *e, struct r4_attr *a);
/* A time as stored: seconds clamped to 0 .. 2^32 - 1 (the unix
 * extension's u32); the nanoseconds kept only when the seconds needed
 * no clamping and ns < 10^9, else 0. */
uint32_t enc_time(int64_t t, uint32_t ns, uint32_t *ns_out);
/* a as stored; type (S_IF*) replaces a->mode's type bits unless 0. */
void enc_attr(const struct r4_attr *a, uint32_t type, struct enc_attr *out);
/* A directory made because a path goes through it: mode 0755, the
 * owner given (the root directory's), every time now. */
void enc_implicit_dir(uint32_t uid, uint32_t gid, uint32_t now,
		      struct r4_attr *out);

/* ---- stat data ---------------------------------------------------------- */

/* A new object's stat data: the light-weight and unix extensions, large
 * times when a nanosecond field is not 0; nlink 1, size and bytes 0. */
void enc_stat(const struct enc_attr *a, struct fmt_stat *st);
/* Add the symlink extension (target, not copied) and its size. */
void enc_stat_symlink(struct fmt_stat *st, const char *target, size_t len);
/* The device number as the unix extension's rdev field holds it. */
uint64_t enc_rdev(uint32_t major, uint32_t minor);
/* A new directory: "." and "..", nlink 2. */
void enc_stat_dir(struct fmt_stat *st, enum fmt_key_policy pol);

/* ---- checks ------------------------------------------------------------- */

/* The longest symlink target whose stat data (light-weight, unix, large
 * times, target and NUL) fits one item of max_item bytes. */
size_t enc_symlink_max(size_t max_item);
int enc_check_symlink(const char *path, const char *target,
		      size_t max_item, struct r4_error *err);
int enc_check_rdev(const char *path, uint32_t major, uint32_t minor,
		   struct r4_error *err);
/* What every entry must pass before it is placed: a path, a symlink's
 * or hard link's target, device numbers, a known type. max_item: the
 * largest item a node holds. */
int enc_check_entry(const struct r4_entry *e, size_t max_item,
		    struct r4_error *err);
/* The next name of a path: skips '/' runs and "." names; returns its
 * length (0 at the end), -1 for "..". */
long enc_next_name(const char **p, const char **name);
/* A name of n bytes in path: R4_EINVAL when longer than ENC_NAME_MAX. */
int enc_check_name(const char *path, size_t n, struct r4_error *err);
int enc_dotdot(const char *path, struct r4_error *err);

/* ---- directory entries -------------------------------------------------- */

/* Bytes a cde40 entry of a name of len bytes takes. */
size_t enc_entry_bytes(enum fmt_key_policy pol, size_t len);
/* A cde40 entry: key k (of the name), the target's stat data key. */
void enc_cde_entry(struct fmt_cde40_entry *e, enum fmt_key_policy pol,
		   const struct fmt_key *k, const struct fmt_key *target,
		   const char *name, size_t len);

/* ---- file bodies -------------------------------------------------------- */

/* The formatting policy (FMT_POLICY_*): whether a file of size bytes is
 * kept in tail items. Smart is the kernel's "4blocks" rule: tails up to
 * four blocks. */
int enc_tails(unsigned policy, uint32_t blksize, uint64_t size);

/* Extent units of a file, file block 0 on; a unit that continues the
 * last one (a hole after a hole, a block right after the last) widens
 * it. */
struct enc_units {
	struct fmt_extent40_unit *u;
	size_t n, cap;
};
int enc_unit_add(struct enc_units *s, uint64_t start, uint64_t width);
/* Bytes of the allocated units (holes are not counted). */
uint64_t enc_units_bytes(const struct enc_units *s, uint32_t blksize);

/* The next data chunk from fn (1, 0 at the end, or an error naming
 * path). */
int enc_chunk_next(r4_data_fn fn, void *ctx, const char *path,
		   uint64_t *off, const void **buf, size_t *len,
		   struct r4_error *err);
/* A chunk of len bytes at off, the data so far ending at pos, in a file
 * of size bytes: in order and inside the size. */
int enc_chunk_check(const char *path, uint64_t size, uint64_t pos,
		    uint64_t off, size_t len, struct r4_error *err);
/* The data of an empty file: no chunk, or an empty one. */
int enc_data_empty(r4_data_fn fn, void *ctx, const char *path,
		   struct r4_error *err);

#endif
