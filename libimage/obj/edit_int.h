/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: pieces shared by edit.c, remove.c and rename.c. */
#ifndef R4_LIBIMAGE_OBJ_EDIT_INT_H
#define R4_LIBIMAGE_OBJ_EDIT_INT_H

#include "libimage/obj/write.h"

/* Counters of a transaction, for tests and tools. */
struct edit_stats {
	uint64_t nodes_written, nodes_alloc, nodes_freed, data_blocks;
	uint64_t nodes_dirty;	/* node blocks the commit will write */
	uint64_t dec_hits, dec_misses;	/* nodes found decoded, decoded */
	unsigned height;
};
void edit_stats(const struct r4_txn *x, struct edit_stats *s);

/* An operation: edit_check() first; mark = edit_mark() before it
 * changes anything; return edit_done(x, mark, rc): an error after the
 * tree changed makes the transaction fail at commit. */
uint64_t edit_mark(const struct r4_txn *x);
int edit_done(struct r4_txn *x, uint64_t mark, int rc);
int edit_check(struct r4_txn *x, struct r4_error *err);

/* Forget the directory r4_txn_add_entry reached last (x->pd_path). */
void edit_forget_dir(struct r4_txn *x);

/* An absolute path as the transaction resolves it (its resolver, else
 * r4_lookup). */
int edit_lookup(struct r4_txn *x, const char *path, struct r4_objref *out,
		struct r4_error *err);
/* "/a/b/c": directory "/a/b" opened, name "c" (into path). */
int edit_split(struct r4_txn *x, const char *path, struct obj_dir *d,
	       const char **name, size_t *len, struct r4_error *err);
/* One operation on one path: edit_check, mark, split the path into
 * directory and name, fn, edit_done. Every r4_* call that takes a path
 * goes through here. */
typedef int (*edit_at_fn)(struct r4_txn *x, const struct obj_dir *d,
			  const char *name, size_t len, void *ctx,
			  struct r4_error *err);
int edit_by_path(struct r4_txn *x, const char *path, edit_at_fn fn,
		 void *ctx, struct r4_error *err);
/* 0 with *out, or R4_ENOTFOUND (err untouched). */
int edit_find(struct r4_txn *x, const struct obj_dir *d, const char *name,
	      size_t len, struct r4_objref *out, struct r4_error *err);

void edit_attr_stat(const struct r4_attr *a, uint32_t type,
		    struct fmt_stat *st);
/* Change the fields of mask (enum r4_attr_mask) of a stat data. */
void edit_apply_attr(struct fmt_stat *st, const struct r4_attr *a,
		     unsigned mask);
typedef int (*edit_body_fn)(struct r4_txn *x, void *ctx,
			    const struct r4_objref *ref, struct fmt_stat *st,
			    struct r4_error *err);
int edit_new(struct r4_txn *x, const struct obj_dir *d, const char *name,
	     size_t len, struct fmt_stat *st, edit_body_fn body, void *ctx,
	     struct r4_objref *out, struct r4_error *err);
int edit_mkdir_at(struct r4_txn *x, const struct obj_dir *d, const char *name,
		  size_t len, const struct r4_attr *a, struct r4_error *err);

/* remove.c */
int edit_unlink_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, struct r4_error *err);
int edit_rmdir_at(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, struct r4_error *err);
int edit_rmtree_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, unsigned depth,
		   struct r4_error *err);
/* Remove whatever is at name (a directory only when empty, or with
 * everything below when recursive: the depth, from 1). */
int edit_remove_any(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, unsigned recursive,
		    struct r4_error *err);
int edit_create_at(struct r4_txn *x, const struct obj_dir *d,
		   const char *name, size_t len, const struct r4_attr *a,
		   uint64_t size, r4_data_fn data, void *ctx,
		   struct r4_error *err);
int edit_link_at(struct r4_txn *x, const struct r4_objref *src,
		 const struct obj_dir *d, const char *name, size_t len,
		 struct r4_error *err);

#endif
