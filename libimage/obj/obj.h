/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: objects as the read path sees them: stat data, the plugins in
 * effect for an object, and keys of its items. */
#ifndef R4_LIBIMAGE_OBJ_OBJ_H
#define R4_LIBIMAGE_OBJ_OBJ_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/read.h"
#include "format/item.h"
#include "format/key.h"

struct tree_item;

struct r4_vol;

/* Kernel defaults for members nobody stores (doc/format.md §7.6). */
#define OBJ_DEFAULT_HASH 1		/* r5 */
#define OBJ_DEFAULT_FIBRE 1		/* dot_o */
#define OBJ_DEFAULT_FORMATTING 2	/* smart */
/* How many ".." steps the plugin-set inheritance climbs at most. */
#define OBJ_MAX_DEPTH 4096

/* A stat data, decoded. 'st' points into 'raw' (symlink target). */
struct obj_sd {
	struct fmt_stat st;
	uint8_t *raw;		/* copy of the item body */
	size_t len;
	uint64_t blk;		/* leaf and item index */
	unsigned pos;
	unsigned plugin;	/* object plugin in effect */
};

/* Find and decode the stat data of obj. R4_ENOTFOUND when there is no
 * item with its SD key. Release with obj_sd_put (accepts NULL data). */
int obj_sd_get(struct r4_vol *vol, const struct r4_objref *obj,
	       struct obj_sd *sd, struct r4_error *err);
/* Decode stat-data item it (found by the caller, key checked). */
int obj_sd_from_item(struct r4_vol *vol, const struct tree_item *it,
		     struct obj_sd *sd, struct r4_error *err);
void obj_sd_put(struct obj_sd *sd);

/* Plugin id of member m in a pset, or -1. */
int obj_pset_find(const struct fmt_pset *ps, unsigned m);
/* Set member m to id (members kept in ascending order); -1 when the
 * set is full. */
int obj_pset_set(struct fmt_pset *ps, unsigned m, unsigned id);

/* Hash, fibration and formatting in effect for an object: its own pset,
 * then the heir/plugin sets of its ancestors (through ".."), then the
 * root's, then the kernel defaults. */
struct obj_plugins {
	int hash, fibre, formatting;
};
int obj_plugins_get(struct r4_vol *vol, const struct r4_objref *obj,
		    const struct obj_sd *sd, struct obj_plugins *out,
		    struct r4_error *err);

/* Keys and references. */
void obj_sd_key(struct r4_vol *vol, const struct r4_objref *obj,
		struct fmt_key *k);
void obj_ref_from_key(const struct fmt_key *k, struct r4_objref *out);
/* True when k is an item key of obj's body (any offset). */
int obj_is_body(const struct r4_objref *obj, const struct fmt_key *k);

/* Fill a public stat from a decoded SD. */
void obj_stat_fill(const struct r4_objref *obj, const struct obj_sd *sd,
		   const struct obj_plugins *pl, struct r4_stat *out);

/* The volume's name for messages. */
const char *obj_vol_name(const struct r4_vol *vol);

/* Directory entries of dir in key order (dir.c); name lives during the
 * call only. 'key' is the entry key. */
typedef int (*obj_entry_fn)(void *ctx, const char *name, size_t len,
			    const struct fmt_key *key,
			    const struct r4_objref *target);
int obj_dir_iter(struct r4_vol *vol, uint64_t dir_oid, obj_entry_fn fn,
		 void *ctx, struct r4_error *err);
/* Entry u of cde40 item it (an item of a directory): its name (NUL
 * added; name holds OBJ_NAME_MAX + 1 bytes), key and target. */
#define OBJ_NAME_MAX 255
int obj_dir_item_entry(struct r4_vol *vol, const struct tree_item *it,
		       int u, char *name, size_t *len, struct fmt_key *key,
		       struct r4_objref *target, struct r4_error *err);
/* The number of entries of cde40 item it, checked; < 0 an error. */
int obj_dir_item_count(struct r4_vol *vol, const struct tree_item *it,
		       struct r4_error *err);
/* Look a name up in directory dir (oid) with given hash and fibration. */
int obj_dir_find(struct r4_vol *vol, uint64_t dir_oid, const char *name,
		 size_t len, int hash, int fibre, struct r4_objref *out,
		 struct r4_error *err);
/* obj_dir_find's look at the one cde40 item it (of the directory, with
 * the largest key <= k, k the name's entry key): 0 with *out when it
 * holds the name; R4_ENOTFOUND when it holds an entry past k (no later
 * item can hold the name); 1 when every entry is below k (the next
 * item may hold it); < 0 an error. verified: the caller checked the
 * item (obj_dir_item_count), it is not verified again. */
int obj_dir_item_find(struct r4_vol *vol, const struct tree_item *it,
		      const struct fmt_key *k, const char *name, size_t len,
		      int verified, struct r4_objref *out,
		      struct r4_error *err);

#endif
