/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: plugin name tables (doc/format.md §9). The first name of
 * every entry is the label mkfs.reiser4 1.2.2 prints with -l and -p and
 * accepts in -o TYPE=NAME; the others are accepted on lookup only: the
 * short forms without the _hash/_fibre/key_ affixes and the kernel
 * module's labels where they differ ("lattd", "dot-o", "never"...). */
#include "format/plugin.h"

#include <string.h>

#define NAMES_PER_ID 4

struct pnames {
	const char *n[NAMES_PER_ID];	/* n[0]: the mkfs.reiser4 name */
};

struct ptype_desc {
	const char *name;		/* mkfs.reiser4's profile slot name */
	const struct pnames *ids;
	unsigned count;
	uint16_t def;			/* mkfs.reiser4 -p */
};

/* Only the object plugins of the regular-file group may be "create". */
static const struct pnames create_names[] = {
	[FMT_OBJ_REG40] = { { "reg40" } },
	[FMT_OBJ_CCREG40] = { { "ccreg40" } },
};

static const struct pnames key_names[] = {
	[0] = { { "key_short", "short" } },
	[1] = { { "key_large", "large" } },
};

static const struct pnames node_names[] = {
	[FMT_NODE40] = { { "node40" } },
	[FMT_NODE41] = { { "node41" } },
};

static const struct pnames compress_names[] = {
	[FMT_COMPRESS_LZO1] = { { "lzo1" } },
	[FMT_COMPRESS_GZIP1] = { { "gzip1" } },
	[FMT_COMPRESS_ZSTD1] = { { "zstd1" } },
};

static const struct pnames cmode_names[] = {
	[FMT_CMODE_NONE] = { { "none" } },
	[FMT_CMODE_LATTD] = { { "latt", "lattd" } },
	[FMT_CMODE_ULTIM] = { { "ultim" } },
	[FMT_CMODE_FORCE] = { { "force" } },
	[FMT_CMODE_CONV] = { { "conv", "convx" } },
};

static const struct pnames cluster_names[] = {
	[FMT_CLUSTER_64K] = { { "64K" } },
	[FMT_CLUSTER_32K] = { { "32K" } },
	[FMT_CLUSTER_16K] = { { "16K" } },
	[FMT_CLUSTER_8K] = { { "8K" } },
	[FMT_CLUSTER_4K] = { { "4K" } },
};

static const struct pnames hash_names[] = {
	[FMT_HASH_RUPASOV] = { { "rupasov_hash", "rupasov" } },
	[FMT_HASH_R5] = { { "r5_hash", "r5" } },
	[FMT_HASH_TEA] = { { "tea_hash", "tea" } },
	[FMT_HASH_FNV1] = { { "fnv1_hash", "fnv1" } },
	[FMT_HASH_DEG] = { { "deg_hash", "deg" } },
};

static const struct pnames fibre_names[] = {
	[FMT_FIBRE_LEXIC] = { { "lexic_fibre", "lexic", "lexicographic" } },
	[FMT_FIBRE_DOT_O] = { { "dot_o_fibre", "dot_o", "dot-o" } },
	[FMT_FIBRE_EXT_1] = { { "ext_1_fibre", "ext_1", "ext-1" } },
	[FMT_FIBRE_EXT_3] = { { "ext_3_fibre", "ext_3", "ext-3" } },
};

static const struct pnames formatting_names[] = {
	[FMT_POLICY_EXTENTS] = { { "extents", "never" } },
	[FMT_POLICY_TAILS] = { { "tails", "always" } },
	[FMT_POLICY_SMART] = { { "smart", "4blocks" } },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define PTYPE(nm, tbl, d) { nm, tbl, NELEM(tbl), d }

static const struct ptype_desc ptypes[FMT_PT_COUNT] = {
	[FMT_PT_CREATE] = PTYPE("create", create_names, FMT_OBJ_CCREG40),
	[FMT_PT_KEY] = PTYPE("key", key_names, 1),
	[FMT_PT_NODE] = PTYPE("node", node_names, FMT_NODE40),
	[FMT_PT_COMPRESS] = PTYPE("compress", compress_names,
				  FMT_COMPRESS_LZO1),
	[FMT_PT_CMODE] = PTYPE("compressMode", cmode_names, FMT_CMODE_CONV),
	[FMT_PT_CLUSTER] = PTYPE("cluster", cluster_names, FMT_CLUSTER_64K),
	[FMT_PT_HASH] = PTYPE("hash", hash_names, FMT_HASH_R5),
	[FMT_PT_FIBRATION] = PTYPE("fibration", fibre_names,
				   FMT_FIBRE_EXT_1),
	[FMT_PT_FORMATTING] = PTYPE("formatting", formatting_names,
				    FMT_POLICY_SMART),
};

_Static_assert(NELEM(ptypes) == FMT_PT_COUNT, "one descriptor per type");

void fmt_profile_default(struct fmt_profile *p)
{
	for (unsigned t = 0; t < FMT_PT_COUNT; t++)
		p->id[t] = ptypes[t].def;
}

const char *fmt_ptype_name(enum fmt_ptype t)
{
	return (unsigned)t < FMT_PT_COUNT ? ptypes[t].name : NULL;
}

int fmt_ptype_lookup(const char *name)
{
	for (unsigned t = 0; name && t < FMT_PT_COUNT; t++)
		if (strcmp(ptypes[t].name, name) == 0)
			return (int)t;
	return -1;
}

const char *fmt_plugin_name(enum fmt_ptype t, unsigned id)
{
	if ((unsigned)t >= FMT_PT_COUNT || id >= ptypes[t].count)
		return NULL;
	return ptypes[t].ids[id].n[0];
}

int fmt_plugin_lookup(enum fmt_ptype t, const char *name)
{
	const struct ptype_desc *d;

	if ((unsigned)t >= FMT_PT_COUNT || !name)
		return -1;
	d = &ptypes[t];
	for (unsigned id = 0; id < d->count; id++)
		for (unsigned k = 0; k < NAMES_PER_ID && d->ids[id].n[k]; k++)
			if (strcmp(d->ids[id].n[k], name) == 0)
				return (int)id;
	return -1;
}

/* Names of ids met on disk; reiser4progs labels where it has them. */
static const char *const item_names[] = {
	[FMT_ITEM_STAT40] = "stat40",
	[FMT_ITEM_SDE40] = "sde40",
	[FMT_ITEM_CDE40] = "cde40",
	[FMT_ITEM_NODEPTR40] = "nodeptr40",
	[FMT_ITEM_ACL40] = "acl40",
	[FMT_ITEM_EXTENT40] = "extent40",
	[FMT_ITEM_TAIL40] = "plain40",
	[FMT_ITEM_CTAIL40] = "ctail40",
	[FMT_ITEM_BBOX40] = "bbox40",
};

static const char *const object_names[] = {
	[FMT_OBJ_REG40] = "reg40",
	[FMT_OBJ_DIR40] = "dir40",
	[FMT_OBJ_SYM40] = "sym40",
	[FMT_OBJ_SPL40] = "spl40",
	[FMT_OBJ_CCREG40] = "ccreg40",
};

/* reiser4progs has no capabilities extension; "sdext_caps" is ours. */
static const char *const sdext_names[] = {
	[FMT_SDEXT_LW] = "sdext_lw",
	[FMT_SDEXT_UNIX] = "sdext_unix",
	[FMT_SDEXT_LT] = "sdext_lt",
	[FMT_SDEXT_SYMLINK] = "sdext_symlink",
	[FMT_SDEXT_PSET] = "sdext_plugin_set",
	[FMT_SDEXT_FLAGS] = "sdext_flags",
	[FMT_SDEXT_CAPS] = "sdext_caps",
	[FMT_SDEXT_CRYPTO] = "sdext_crypto",
	[FMT_SDEXT_HSET] = "sdext_heir_set",
};

/* As fsck.reiser4 / debugfs.reiser4 print pset members. */
static const char *const pset_names[FMT_PSET_COUNT] = {
	[FMT_PSET_FILE] = "object",
	[FMT_PSET_DIR] = "directory",
	[FMT_PSET_PERM] = "permission",
	[FMT_PSET_FORMATTING] = "formatting",
	[FMT_PSET_HASH] = "hash",
	[FMT_PSET_FIBRATION] = "fibration",
	[FMT_PSET_SD] = "statdata",
	[FMT_PSET_DIRITEM] = "diritem",
	[FMT_PSET_CIPHER] = "crypto",
	[FMT_PSET_DIGEST] = "digest",
	[FMT_PSET_COMPRESSION] = "compress",
	[FMT_PSET_CMODE] = "compressMode",
	[FMT_PSET_CLUSTER] = "cluster",
	[FMT_PSET_CREATE] = "create",
};

#define TABLE_NAME(tbl, i) ((i) < NELEM(tbl) ? (tbl)[i] : NULL)

const char *fmt_item_name(unsigned id)
{
	return TABLE_NAME(item_names, id);
}

const char *fmt_object_name(unsigned id)
{
	return TABLE_NAME(object_names, id);
}

const char *fmt_sdext_name(unsigned bit)
{
	return TABLE_NAME(sdext_names, bit);
}

const char *fmt_pset_member_name(unsigned member)
{
	return TABLE_NAME(pset_names, member);
}
