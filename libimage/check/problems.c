/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the problem table (as e2fsck's problem table): one row per
 * code the checker reports, with its stable name, the context its
 * reports name, a message template, whether preen may fix it, what the
 * repair does and the repair pass that does it. The checker names its
 * codes from it; the repair decides from it alone what a mode may touch
 * and which of its passes a round needs (libimage/repair/repair.c). */
#include "config.h"
#include <stddef.h>
#include "r4/check.h"
#include "libimage/check/say.h"

#define B "block"
#define BIK "block, item, key"
#define BIKO "block, item, key, object"
#define BIKOP "block, item, key, object, path"
#define REBUILD "the storage tree is rebuilt from the items that pass the " \
	"checks (-y; preen never)"

static const struct r4_problem_info table[] = {
	{ R4_CHK_MASTER, "master", B,
	  "master super block (block {block}): {what}", R4_FIX_YES,
	  "restored from the backup copies before the volume is opened "
	  "(-y, --build-sb)",
	  R4_PASS_PREOPEN },
	{ R4_CHK_FORMAT40, "format40", B,
	  "format40 super block (block {block}): {what}", R4_FIX_YES,
	  "magic and fixed fields restored from the backup copies before "
	  "the volume is opened (-y, --build-sb)",
	  R4_PASS_PREOPEN },
	{ R4_CHK_STATUS, "status", B,
	  "status block marks the volume {what}", R4_FIX_PREEN,
	  "status word, extended status and message cleared (magic kept)",
	  R4_PASS_SPACE },
	{ R4_CHK_BACKUP, "backup", B,
	  "backup copy {n} (block {block}) differs: {field}", R4_FIX_PREEN,
	  "every backup copy rewritten from the super blocks and the root's "
	  "plugin set; version bit 31 cleared",
	  R4_PASS_SPACE },
	{ R4_CHK_JOURNAL, "journal", B,
	  "journal (block {block}): {what}", R4_FIX_PREEN,
	  "a pending transaction is replayed when the volume is opened; "
	  "footer counters rewritten by the repair's commit",
	  R4_PASS_SPACE },
	{ R4_CHK_NODE, "node", BIK,
	  "node {block}: header, item header or checksum: {what}",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_NODE_BLOCK, "node-block", BIK,
	  "pointer in block {block} item {item} to a block outside the "
	  "volume", R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_NODE_TWICE, "block-twice", BIK,
	  "block {block} referenced again (a second owner or a cycle)",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_NODE_MKFS_ID, "node-mkfs-id", B,
	  "node {block}: mkfs id differs from the super block's",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_NODE_LEVEL, "node-level", B,
	  "node {block}: level differs from the descent's", R4_FIX_REBUILD,
	  REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_NODE_EMPTY, "node-empty", B, "node {block} has no items",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_DKEY, "delimiting-key", BIK,
	  "block {block} item {item} [{key}] outside the delimiting keys",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_ITEM, "item", BIK,
	  "block {block} item {item} [{key}]: body: {what}", R4_FIX_REBUILD,
	  REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_EXTENT, "extent", BIK,
	  "block {block} item {item} [{key}]: extent unit: {what}",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_BITMAP_CSUM, "bitmap-checksum", B,
	  "bitmap block {block}: checksum wrong", R4_FIX_PREEN,
	  "bitmap block rewritten from the blocks in use",
	  R4_PASS_SPACE },
	{ R4_CHK_BITMAP_TAIL, "bitmap-tail", B,
	  "bitmap block {block}: bits past the end of the volume clear",
	  R4_FIX_PREEN, "bitmap block rewritten from the blocks in use",
	  R4_PASS_SPACE },
	{ R4_CHK_SPACE_LEAK, "space-unreferenced", B,
	  "block(s) {block}..: marked used, but nothing uses them",
	  R4_FIX_PREEN, "marked free",
	  R4_PASS_SPACE },
	{ R4_CHK_SPACE_FREE, "space-marked-free", B,
	  "block(s) {block}..: in use, but marked free", R4_FIX_PREEN,
	  "marked used",
	  R4_PASS_SPACE },
	{ R4_CHK_FREE_COUNT, "free-count", B,
	  "free block count (block {block}) differs from the bitmaps",
	  R4_FIX_PREEN, "set from the rebuilt bitmaps (super block and "
	  "journal footer)",
	  R4_PASS_SPACE },
	{ R4_CHK_SD, "stat-data", BIKO, "{kind} {oid}: stat data: {what}",
	  R4_FIX_REBUILD, REBUILD,
	  R4_PASS_REBUILD },
	{ R4_CHK_OBJECT_DUP, "object-duplicate", BIKO,
	  "{kind} {oid}: a second stat data with this object id",
	  R4_FIX_YES, "a stat data whose damaged key an entry's key ties "
	  "to (see entry) is put back there; of the others, the one the "
	  "names and bodies agree with keeps the object id (named, from the "
	  "directory its locality is, body items under its key; of equals "
	  "the first in key order) and every other gets a fresh one (the "
	  "next object id): its stat data and body items re-keyed, the "
	  "entries naming it pointed at the new key (no name: linked into "
	  "/lost+found). A directory is left",
	  R4_PASS_KEYS },
	{ R4_CHK_OID, "oid", BIKO,
	  "{kind} {oid}: object id or locality not below the next object "
	  "id", R4_FIX_PREEN, "next object id raised past every object id "
	  "in use",
	  R4_PASS_SPACE },
	{ R4_CHK_FILE_COUNT, "file-count", B,
	  "file count (block {block}) differs from the stat data in the "
	  "tree", R4_FIX_PREEN, "set to the number of stat data (super "
	  "block and journal footer)",
	  R4_PASS_SPACE },
	{ R4_CHK_ENTRY, "entry", BIKO,
	  "entry '{name}' of directory {oid} points to a missing object",
	  R4_FIX_YES, "when exactly one stat data no entry names fits the "
	  "missing key (its key differs in one element: only the object "
	  "id, or body items with the missing key exist that its size fits, "
	  "or directory entries with its object id) and no other stat data "
	  "has that object id, the stat data is re-keyed to it (with its "
	  "body items); otherwise the entry is removed (counted as a loss); "
	  "'.' and '..' are pointed at the right directory instead",
	  R4_PASS_KEYS },
	{ R4_CHK_DOT, "dot-entry", BIKO,
	  "directory {oid}: '.' or '..' missing or wrong", R4_FIX_YES,
	  "'.' pointed at the directory, '..' at the directory naming it",
	  R4_PASS_OBJECTS },
	{ R4_CHK_NLINK, "nlink", BIKO,
	  "{kind} {oid}: nlink differs from the entries naming it",
	  R4_FIX_YES, "nlink set to the number of entries naming the "
	  "object (+1 for the root)",
	  R4_PASS_OBJECTS },
	{ R4_CHK_DIR_SIZE, "dir-size", BIKO,
	  "directory {oid}: size differs from its number of entries",
	  R4_FIX_YES, "size set to the number of entries",
	  R4_PASS_OBJECTS },
	{ R4_CHK_FILE_SIZE, "file-size", BIKO,
	  "file {oid}: body and size disagree (body past the size, or size "
	  "past the last item: the kernel cannot read such a file)",
	  R4_FIX_YES, "size set to the end of the body; bytes a larger size "
	  "claimed past it are counted as cut (a loss)",
	  R4_PASS_OBJECTS },
	{ R4_CHK_BODY, "body", BIKO,
	  "body items of object {oid} without stat data or not a regular "
	  "file", R4_FIX_YES, "a body whose key names no stat data while "
	  "one object has its object id (or its locality and ordering) and "
	  "misses exactly those bytes: its key mended by the tree rebuild; "
	  "otherwise a regular file's stat data made for a body whose stat "
	  "data was lost (under a fresh object id when its own is another "
	  "object's; it then goes to /lost+found); body items of a "
	  "directory or symlink are left",
	  R4_PASS_OBJECTS },
	{ R4_CHK_UNREACHABLE, "unreachable", BIKO,
	  "{kind} {oid}: not reachable from the root directory",
	  R4_FIX_YES, "linked into /lost+found as '#<oid in hex>' "
	  "(counted as a loss)",
	  R4_PASS_OBJECTS },
	{ R4_CHK_DIR_LINK, "dir-hard-link", BIKO,
	  "entry '{name}' is a second name of directory {oid}", R4_FIX_YES,
	  "the second name removed (counted as a loss)",
	  R4_PASS_OBJECTS },
	{ R4_CHK_FILE_GAP, "file-gap", BIKO,
	  "file {oid}: no body item holds bytes {from}..{to} (a break)",
	  R4_FIX_REBUILD, "the storage tree is rebuilt and the break filled "
	  "with zeros (tail items; a hole extent in a block-aligned extent "
	  "body), reported as a zeroed range",
	  R4_PASS_REBUILD },
	{ R4_CHK_TRUNCATED, "truncated", B,
	  "image holds {have} blocks, the format40 super block (block "
	  "{block}) counts {count}: {missing} blocks missing", R4_FIX_YES,
	  "an image file is extended with zeros to the full size before the "
	  "volume is opened (-y); what was in the lost tail is then repaired "
	  "as lost (nodes dropped, bodies zeroed); a block device is left "
	  "(exit 8)",
	  R4_PASS_PREOPEN },
	{ R4_CHK_BLOCK_SHARED, "block-shared", BIK,
	  "block {block} item {item} [{key}]: file data in a block another "
	  "owner has (the volume's layout, a node, or an earlier extent)",
	  R4_FIX_YES, "the block stays with its owner by tree position (the "
	  "layout or a formatted node before file data, else the first "
	  "extent in key order); every other extent claiming it gets a "
	  "fresh block holding a copy of its bytes, its unit split and "
	  "repointed (no byte lost). A node two parents point at is tree "
	  "damage (block-twice): it cannot be copied",
	  R4_PASS_SHARED },
	{ R4_CHK_CLUSTER, "compressed-cluster", BIKO,
	  "compressed file {oid}: a cluster cannot be read (layout, "
	  "checksum or decompression): {what}", R4_FIX_YES,
	  "a plugin set or size that the clusters contradict is mended from "
	  "them (no byte lost); a cluster still unreadable loses its ctail40 "
	  "items and reads as zeros, as the kernel reads a cluster without "
	  "items (reported as a zeroed range)",
	  R4_PASS_CC },
	{ R4_CHK_JOURNAL_PENDING, "journal-unreplayed", B,
	  "journal (block {block}): {n} committed transaction(s) not "
	  "replayed: the Reiser4 kernel's own replay loses this "
	  "transaction's root pointer: run `r4fsck -p` before mounting",
	  R4_FIX_PREEN, "replayed when the volume is opened read-write (-p, "
	  "-y, the default mode, and every r4kit writer): the super block, "
	  "the bitmaps and the nodes copied in place from the log, then the "
	  "journal footer",
	  R4_PASS_OPEN },
	{ R4_CHK_CC_HOLE0, "ccreg-leading-hole", BIKOP,
	  "compressed file {path} ({oid}): cluster 0 is a hole while a "
	  "later cluster has items (tree node {block}): the Reiser4 kernel "
	  "panics reading this file", R4_FIX_PREEN,
	  "cluster 0 stored as an all-zero cluster (compressed when its "
	  "plugin and mode would compress it, else raw zeros), the stat "
	  "data's bytes one cluster more: the file reads the same, and the "
	  "kernel reads it",
	  R4_PASS_CC_LAYOUT },
	{ R4_CHK_CC_UNMERGED, "ccreg-unmerged", BIKOP,
	  "compressed file {path} ({oid}), cluster {n}, tree node {block}: "
	  "two ctail40 items of one disk cluster side by side, unmerged "
	  "(the Reiser4 kernel's flush puts keys out of order rewriting "
	  "them)", R4_FIX_PREEN,
	  "the items of the leaf that continue each other inside a disk "
	  "cluster joined into one item, as the kernel keeps them (bytes "
	  "unchanged)",
	  R4_PASS_CC_LAYOUT },
	{ R4_CHK_CC_CONV, "ccreg-conv", BIKOP,
	  "compressed file {path} ({oid}): longer than one cluster in "
	  "compression mode conv (a Reiser4 kernel write into it hits a "
	  "BUG)", R4_FIX_PREEN,
	  "compression mode lattd stored in the file's plugin set, as the "
	  "kernel stores it when conv ends (bytes unchanged)",
	  R4_PASS_CC_LAYOUT },
	{ R4_CHK_CC_CROSS, "ccreg-crossing", BIKOP,
	  "compressed file {path} ({oid}), cluster {n}, tree node {block}: "
	  "a ctail40 item crosses the cluster end (libreiser4 writes them; "
	  "the Reiser4 kernel spins reading them)", R4_FIX_YES,
	  "the item cut at each cluster end it crosses, each piece under "
	  "the key of its first byte (no byte moved): the file reads the "
	  "same, and the kernel reads it",
	  R4_PASS_CC_LAYOUT },
	{ R4_CHK_TAIL_UNMERGED, "tail-unmerged", BIKOP,
	  "file {path} ({oid}), tree node {block}: two tail40 items of the "
	  "file side by side, the second continuing the first, unmerged "
	  "(the Reiser4 kernel reads the file short: its read ends where "
	  "the second item starts)", R4_FIX_PREEN,
	  "the items of the leaf that continue each other joined into one "
	  "item, as the kernel keeps a file's tail (bytes unchanged)",
	  R4_PASS_CC_LAYOUT },
};

#define NROWS (sizeof(table) / sizeof(table[0]))

const struct r4_problem_info *r4_problem_info(int code)
{
	for (size_t i = 0; i < NROWS; i++)
		if (table[i].code == code)
			return &table[i];
	return NULL;
}

const struct r4_problem_info *r4_problem_row(unsigned i)
{
	return i < NROWS ? &table[i] : NULL;
}

/* The messages of the codes: one per form a report takes. */
static const struct chk_msg_row msgs[] = {
#define CHK_M_ENUM(id, code, text) { CHK_M_##id, code, #id, text },
#include "libimage/check/messages.h"
#undef CHK_M_ENUM
};

#define NMSGS (sizeof(msgs) / sizeof(msgs[0]))

const struct chk_msg_row *chk_msg_row(unsigned i)
{
	return i < NMSGS ? &msgs[i] : NULL;
}

const struct chk_msg_row *chk_msg_info(int id)
{
	return id > CHK_M_NONE && id < CHK_M_COUNT ? &msgs[id - 1] : NULL;
}

const char *r4_check_code_name(int code)
{
	const struct r4_problem_info *pi = r4_problem_info(code);

	return pi ? pi->name : "?";
}

static const char *const pass_names[R4_PASS_COUNT] = {
	[R4_PASS_PREOPEN] = "before-open", [R4_PASS_OPEN] = "open",
	[R4_PASS_REBUILD] = "rebuild", [R4_PASS_SPACE] = "space",
	[R4_PASS_SHARED] = "shared", [R4_PASS_CC_LAYOUT] = "cc-layout",
	[R4_PASS_KEYS] = "keys", [R4_PASS_CC] = "cc",
	[R4_PASS_OBJECTS] = "objects",
};

const char *r4_fix_pass_name(int pass)
{
	if (pass <= 0 || pass >= R4_PASS_COUNT || !pass_names[pass])
		return "?";
	return pass_names[pass];
}
