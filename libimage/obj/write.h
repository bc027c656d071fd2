/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: changing objects inside a transaction (write.c, body.c), the
 * parts r4_* of include/r4/edit.h (edit.c) are made of. */
#ifndef R4_LIBIMAGE_OBJ_WRITE_H
#define R4_LIBIMAGE_OBJ_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include "r4/edit.h"
#include "libimage/obj/obj.h"
#include "libimage/tree/modify.h"

struct obj_ccreg_enc;
struct obj_dsd;

/* New regular files (ccreg_write.c): what the kernel would store in a
 * directory (doc/compress.md §5.1). */
struct obj_new_plan {
	int ccreg;		/* ccreg40, else reg40 */
	unsigned v[3];		/* compress, compressMode, cluster ids */
	unsigned own;		/* bit i: v[i] differs from the root's */
	unsigned shift, compress, cmode;
};

struct r4_txn {
	struct r4_vol *vol;
	struct txn *t;
	struct tree_mod mod;
	uint64_t root0;		/* to restore on abort */
	uint16_t height0;
	uint32_t now;		/* SOURCE_DATE_EPOCH or the clock */
	int formatting;		/* the root's formatting policy */
	uint64_t data_hint;	/* where file data went last */
	uint64_t data_blocks;	/* data blocks written */
	int failed;
	r4_resolve_fn resolve;	/* r4_txn_set_resolver; NULL: r4_lookup */
	void *resolve_ctx;
	/* new regular files (ccreg_write.c): members of R4_PT_* given for
	 * this transaction (bit R4_PT_x: prof[x]) over the volume's */
	unsigned prof_set;
	uint16_t prof[R4_PT_COUNT];
	struct obj_ccreg_enc *ccreg;	/* the cluster encoder, made when needed */
	/* r4_txn_add_entry: the directory its last path reached, by the
	 * path's bytes up to its last '/' (pd_path, pd_len); forgotten
	 * whenever anything is removed or a path operation runs
	 * (edit_forget_dir) */
	char *pd_path;
	size_t pd_len;
	struct r4_objref pd_ref;
	int pd_hash, pd_fibre;
	/* obj_new_plan's last answer, for the files of directory plan_dir:
	 * valid while that directory's heir and plugin sets and the root's
	 * plugin set are the ones it was made from (obj_sd_write compares,
	 * r4_txn_set_create forgets) */
	int plan_ok;
	uint64_t plan_dir;
	struct fmt_pset plan_dh, plan_dp, plan_rp;
	struct obj_new_plan plan;
	/* write.c's directory items: the decoded entries, a copy of the
	 * item and the encoded new items, reused from one entry change to
	 * the next (freed by obj_txn_scratch_free) */
	struct fmt_cde40_entry *cde_e;
	size_t cde_ecap;
	uint8_t *cde_in, *cde_out[2], *find_in;	/* find_in: edit_find */
	size_t cde_incap, cde_outcap[2], find_incap;
	/* body.c's piece of a file's tails, zero outside what it holds
	 * (one per transaction, not one per file) */
	uint8_t *tail_buf;
	size_t tail_bufcap;
	/* obj_dir_account's last directories (dirsd.c): the stat data it
	 * put for each, so that the next account of one patches the item
	 * (tree_mod_patch) instead of reading and putting it again; an
	 * item that no longer holds those bytes is read again (freed by
	 * obj_txn_scratch_free) */
	struct obj_dsd *dsd;
};

/* The blocks of nodes r4_txn_add_entry keeps in memory before it
 * writes them (txn_write_behind; 0: at commit only). For the crash
 * harness (tests/helpers/fault_env.c), which makes it small. */
void obj_add_write_behind(size_t keep);

/* obj_sd_get through the transaction's own leaves (tree_mod_peek): a
 * deferred leaf is read, not written; anything but the stat data item
 * itself is left to obj_sd_get. */
int obj_sd_get_txn(struct r4_txn *x, const struct r4_objref *ref,
		   struct obj_sd *sd, struct r4_error *err);

/* Free what write.c keeps between entry changes. */
void obj_txn_scratch_free(struct r4_txn *x);
/* Free obj_dir_account's directories (dirsd.c). */
void obj_dsd_free(struct r4_txn *x);

/* A directory with the plugins its entries' keys use. */
struct obj_dir {
	struct r4_objref ref;
	int hash, fibre;
};

int obj_dir_open(struct r4_txn *x, const struct r4_objref *ref,
		 struct obj_dir *d, struct r4_error *err);

/* obj_dir_find from the item tree_mod_peek gives (deferred leaves are
 * read, not written): 0 found, R4_ENOTFOUND, 1 when that item cannot
 * tell (ask obj_dir_find), < 0 an error. */
int obj_find_in_txn(struct r4_txn *x, const struct obj_dir *d,
		    const char *name, size_t len, struct r4_objref *out,
		    struct r4_error *err);

/* Stat data: read (obj_sd_get) / write back or insert. */
int obj_sd_write(struct r4_txn *x, const struct r4_objref *ref,
		 const struct fmt_stat *st, int insert, struct r4_error *err);
int obj_sd_delete(struct r4_txn *x, const struct r4_objref *ref,
		  struct r4_error *err);
/* Add to a directory's size, bytes and nlink; its mtime and ctime
 * become x->now. The stat data item changes at once (any reader sees
 * it); a directory accounted lately is not read again while its item
 * still holds what this put there. */
int obj_dir_account(struct r4_txn *x, const struct r4_objref *dir,
		    int64_t dsize, int64_t dbytes, int64_t dnlink,
		    struct r4_error *err);

/* Entries (cde40). */
int obj_entry_add(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, const struct r4_objref *target,
		  struct r4_error *err);
int obj_entry_del(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, struct r4_error *err);
/* Point an existing entry at another object (".." on rename). */
int obj_entry_set(struct r4_txn *x, const struct obj_dir *d,
		  const char *name, size_t len, const struct r4_objref *target,
		  struct r4_error *err);
/* The "." and ".." item of a new directory. */
int obj_dir_body(struct r4_txn *x, const struct obj_dir *d,
		 const struct r4_objref *parent, struct r4_error *err);
/* Delete every entry item of a directory. */
int obj_dir_kill(struct r4_txn *x, uint64_t dir_oid, struct r4_error *err);

/* Bodies of regular files (body.c). */
int obj_body_tails(const struct r4_txn *x, uint64_t size);
/* Write a new file's body from fn (NULL: none); *bytes = unix bytes. */
int obj_body_write(struct r4_txn *x, const struct r4_objref *ref,
		   uint64_t size, r4_data_fn fn, void *ctx, const char *path,
		   uint64_t *bytes, struct r4_error *err);
/* Delete every body item, freeing extent blocks. */
int obj_body_kill(struct r4_txn *x, const struct r4_objref *ref,
		  struct r4_error *err);
/* Change the size; *bytes = new unix bytes. */
int obj_body_truncate(struct r4_txn *x, const struct r4_objref *ref,
		      uint64_t old, uint64_t size, uint64_t *bytes,
		      struct r4_error *err);

/* Write len bytes of buf at byte off into reg40 file ref of oldsize
 * bytes whose body is extent items, in place (pwext.c): touched blocks
 * the committed volume uses move to new ones, blocks past the end
 * extend the last item, a gap is a hole; *dbytes = the unix bytes
 * gained. 1, nothing done, when the body is not extents (the caller
 * rewrites it). */
int obj_pwrite_extents(struct r4_txn *x, const struct r4_objref *ref,
		       uint64_t oldsize, uint64_t off, const void *buf,
		       size_t len, uint64_t *dbytes, struct r4_error *err);

/* New regular files (ccreg_write.c): struct obj_new_plan is above. */
int obj_new_plan(struct r4_txn *x, const struct r4_objref *dir,
		 struct obj_new_plan *p, struct r4_error *err);
/* Stat data st is written for object oid: forget a plan made from the
 * sets it changes. */
void obj_new_plan_sd(struct r4_txn *x, uint64_t oid,
		     const struct fmt_stat *st);
/* The file's own plugin set: ccreg40 and the members that differ. */
/* doc/compress.md §4.4: a compressed file conv keeps past its first
 * cluster stores lattd, as the kernel's disable_conversion() does. */
void obj_plan_lattd(struct obj_new_plan *p, uint64_t size);
void obj_new_plan_pset(const struct obj_new_plan *p, struct fmt_stat *st);
/* A ccreg40 body from fn; *converted when conv made it an ordinary
 * body; *bytes = unix bytes. */
int obj_ccreg_body_write(struct r4_txn *x, const struct r4_objref *ref,
		      const struct obj_new_plan *p, uint64_t size,
		      r4_data_fn fn, void *ctx, const char *path,
		      uint64_t *bytes, int *converted, struct r4_error *err);
/* A new regular file's body as planned for directory dir; fills st's
 * size, bytes and plugin set. */
int obj_new_file_body(struct r4_txn *x, const struct r4_objref *dir,
		      const struct r4_objref *ref, uint64_t size,
		      r4_data_fn fn, void *ctx, const char *path,
		      struct fmt_stat *st, struct r4_error *err);
/* Change a ccreg40 file's size (sd: its stat data); *bytes = new unix
 * bytes. */
int obj_ccreg_truncate(struct r4_txn *x, const struct r4_objref *ref,
		    const struct obj_sd *sd, uint64_t size, uint64_t *bytes,
		    struct r4_error *err);
struct obj_ccreg;
/* Encode logical cluster idx of a ccreg40 file (parameters cc) again:
 * lsize bytes, the first blen from buf (NULL when 0), zeros after; its
 * items go into the tree (the old ones must be gone). *stored = 1 when
 * it took a disk cluster. */
int obj_ccreg_put(struct r4_txn *x, const struct r4_objref *ref,
		  const struct obj_ccreg *cc, uint64_t idx, const uint8_t *buf,
		  size_t blen, size_t lsize, int *stored, struct r4_error *err);
/* r4_pwrite into ccreg40 file ref (sd: its stat data, size, bytes and
 * plugin set updated, not written): only the logical clusters the
 * write touches are encoded again. */
int obj_ccreg_pwrite(struct r4_txn *x, const char *path,
		     const struct r4_objref *ref, struct obj_sd *sd,
		     uint64_t off, const void *buf, size_t len,
		     struct r4_error *err);
/* Delete the body items of compressed file ref at offsets [from, to)
 * (ctail40 only: another item is R4_ECORRUPT); *ncl = the disk
 * clusters (of 1 << shift bytes) they belonged to, *had = one of them
 * was cluster hidx. */
int obj_ccreg_cut(struct r4_txn *x, const struct r4_objref *ref,
	       unsigned shift, uint64_t from, uint64_t to, uint64_t hidx,
	       uint64_t *ncl, int *had, struct r4_error *err);

#endif
