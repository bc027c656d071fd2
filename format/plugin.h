/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: plugin ids as stored on disk (doc/format.md §9.3) and the
 * name tables that map them to the names mkfs.reiser4 uses. */
#ifndef R4_FORMAT_PLUGIN_H
#define R4_FORMAT_PLUGIN_H

#include <stdint.h>

enum fmt_item_id {
	FMT_ITEM_STAT40 = 0, FMT_ITEM_SDE40 = 1, FMT_ITEM_CDE40 = 2,
	FMT_ITEM_NODEPTR40 = 3, FMT_ITEM_ACL40 = 4, FMT_ITEM_EXTENT40 = 5,
	FMT_ITEM_TAIL40 = 6, FMT_ITEM_CTAIL40 = 7, FMT_ITEM_BBOX40 = 8
};
enum fmt_node_id { FMT_NODE40 = 0, FMT_NODE41 = 1 };
enum fmt_object_id {
	FMT_OBJ_REG40 = 0, FMT_OBJ_DIR40 = 1, FMT_OBJ_SYM40 = 2,
	FMT_OBJ_SPL40 = 3, FMT_OBJ_CCREG40 = 4
};
enum fmt_hash_id {
	FMT_HASH_RUPASOV = 0, FMT_HASH_R5 = 1, FMT_HASH_TEA = 2,
	FMT_HASH_FNV1 = 3, FMT_HASH_DEG = 4
};
enum fmt_fibre_id {
	FMT_FIBRE_LEXIC = 0, FMT_FIBRE_DOT_O = 1, FMT_FIBRE_EXT_1 = 2,
	FMT_FIBRE_EXT_3 = 3
};
enum fmt_formatting_id {
	FMT_POLICY_EXTENTS = 0, FMT_POLICY_TAILS = 1, FMT_POLICY_SMART = 2
};
enum fmt_compress_id { FMT_COMPRESS_LZO1 = 0, FMT_COMPRESS_GZIP1 = 1,
	FMT_COMPRESS_ZSTD1 = 2 };
enum fmt_cmode_id { FMT_CMODE_NONE = 0, FMT_CMODE_LATTD = 1,
	FMT_CMODE_ULTIM = 2, FMT_CMODE_FORCE = 3, FMT_CMODE_CONV = 4 };
enum fmt_cluster_id { FMT_CLUSTER_64K = 0, FMT_CLUSTER_32K = 1,
	FMT_CLUSTER_16K = 2, FMT_CLUSTER_8K = 3, FMT_CLUSTER_4K = 4 };

/* Stat-data extension bits (section 5.2). */
enum fmt_sdext_id {
	FMT_SDEXT_LW = 0, FMT_SDEXT_UNIX = 1, FMT_SDEXT_LT = 2,
	FMT_SDEXT_SYMLINK = 3, FMT_SDEXT_PSET = 4, FMT_SDEXT_FLAGS = 5,
	FMT_SDEXT_CAPS = 6, FMT_SDEXT_CRYPTO = 7, FMT_SDEXT_HSET = 8
};

/* Plugin-set members (section 7.6). */
enum fmt_pset_member {
	FMT_PSET_FILE = 0, FMT_PSET_DIR = 1, FMT_PSET_PERM = 2,
	FMT_PSET_FORMATTING = 3, FMT_PSET_HASH = 4, FMT_PSET_FIBRATION = 5,
	FMT_PSET_SD = 6, FMT_PSET_DIRITEM = 7, FMT_PSET_CIPHER = 8,
	FMT_PSET_DIGEST = 9, FMT_PSET_COMPRESSION = 10,
	FMT_PSET_CMODE = 11, FMT_PSET_CLUSTER = 12, FMT_PSET_CREATE = 13,
	FMT_PSET_COUNT = 14
};

/* The plugin types an r4mkfs "-o TYPE=PLUGIN" override can name, with
 * the type names mkfs.reiser4 uses ("create", "key", "node", "compress",
 * "compressMode", "cluster", "hash", "fibration", "formatting"). */
enum fmt_ptype {
	FMT_PT_CREATE, FMT_PT_KEY, FMT_PT_NODE, FMT_PT_COMPRESS,
	FMT_PT_CMODE, FMT_PT_CLUSTER, FMT_PT_HASH, FMT_PT_FIBRATION,
	FMT_PT_FORMATTING, FMT_PT_COUNT
};

/* One mkfs profile: a plugin id per type. */
struct fmt_profile {
	uint16_t id[FMT_PT_COUNT];
};

/* mkfs.reiser4 1.2.2's default profile (mkfs.reiser4 -p). */
void fmt_profile_default(struct fmt_profile *p);

/* Name of a type ("hash") and back. NULL / -1 when unknown. */
const char *fmt_ptype_name(enum fmt_ptype t);
int fmt_ptype_lookup(const char *name);

/* Name of plugin 'id' of type t ("r5_hash"), NULL when unknown. */
const char *fmt_plugin_name(enum fmt_ptype t, unsigned id);
/* Id of the plugin named 'name' in type t; accepts mkfs.reiser4's names
 * ("r5_hash", "ext_1_fibre", "node41", "key_short", "reg40", "smart", ...)
 * and the short forms without the _hash/_fibre suffix. -1 when unknown. */
int fmt_plugin_lookup(enum fmt_ptype t, const char *name);

/* Names of ids found on disk, for printing; NULL when unknown. */
const char *fmt_item_name(unsigned id);
const char *fmt_object_name(unsigned id);
const char *fmt_sdext_name(unsigned bit);
const char *fmt_pset_member_name(unsigned member);

#endif
