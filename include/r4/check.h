/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: checking a volume read-only (what r4fsck --check runs).
 *
 * r4_check() reads the super blocks, walks the whole storage tree,
 * compares the bitmaps with the blocks in use and checks the objects
 * (stat data, directory entries, link counts, sizes). It never writes.
 * Each problem found is handed to the caller's callback, in the order
 * found, and counted; the check goes on after a problem. The library
 * prints nothing: the command renders problems and progress. */
#ifndef R4_CHECK_H
#define R4_CHECK_H

#include <stdint.h>
#include "r4/r4.h"

/* What kind of problem; one row each in the problem table
 * (r4_problem_info, libimage/check/problems.c). */
enum r4_check_code {
	R4_CHK_MASTER = 1,	/* master super block */
	R4_CHK_FORMAT40,	/* format40 super block fields */
	R4_CHK_STATUS,		/* status block says the volume is damaged */
	R4_CHK_BACKUP,		/* a backup copy differs from the supers */
	R4_CHK_JOURNAL,		/* journal header/footer, unreplayed tx */
	R4_CHK_NODE,		/* node header / item headers / checksum */
	R4_CHK_NODE_BLOCK,	/* node pointer outside the volume */
	R4_CHK_NODE_TWICE,	/* block referenced twice (or a cycle) */
	R4_CHK_NODE_MKFS_ID,	/* node mkfs_id differs from the sb's */
	R4_CHK_NODE_LEVEL,	/* level differs from the descent's */
	R4_CHK_NODE_EMPTY,	/* node without items */
	R4_CHK_DKEY,		/* key outside the delimiting keys */
	R4_CHK_ITEM,		/* item body structure */
	R4_CHK_EXTENT,		/* extent unit: range, overlap, unallocated */
	R4_CHK_BITMAP_CSUM,	/* bitmap block checksum */
	R4_CHK_BITMAP_TAIL,	/* bits past the end of the volume clear */
	R4_CHK_SPACE_LEAK,	/* marked used, referenced by nothing */
	R4_CHK_SPACE_FREE,	/* in use, but marked free */
	R4_CHK_FREE_COUNT,	/* free block counter */
	R4_CHK_SD,		/* stat data contents */
	R4_CHK_OBJECT_DUP,	/* two stat data with one object id */
	R4_CHK_OID,		/* oid or locality not below next oid */
	R4_CHK_FILE_COUNT,	/* file counter */
	R4_CHK_ENTRY,		/* entry names a missing object */
	R4_CHK_DOT,		/* "." / ".." wrong or missing */
	R4_CHK_NLINK,		/* link count */
	R4_CHK_DIR_SIZE,	/* directory size != number of entries */
	R4_CHK_FILE_SIZE,	/* body beyond the file size */
	R4_CHK_BODY,		/* body items of a missing / bodiless object */
	R4_CHK_UNREACHABLE,	/* object no name leads to from the root */
	R4_CHK_DIR_LINK,	/* directory with more than one name */
	R4_CHK_FILE_GAP,	/* a regular file's body has a break */
	R4_CHK_TRUNCATED,	/* image shorter than the block count (found
				 * before the open, by r4fsck) */
	R4_CHK_BLOCK_SHARED,	/* file data in a block another owner has */
	R4_CHK_CLUSTER,		/* a compressed file's cluster unreadable */
	R4_CHK_JOURNAL_PENDING,	/* a committed transaction not yet copied
				 * in place (read through by --check): the
				 * kernel's own replay loses it */
	R4_CHK_CC_HOLE0,	/* ccreg40: cluster 0 a hole, a later one not
				 * (the kernel panics reading it) */
	R4_CHK_CC_UNMERGED,	/* ccreg40: two items of one disk cluster
				 * side by side in a leaf */
	R4_CHK_CC_CONV,		/* ccreg40 past its first cluster in conv */
	R4_CHK_CC_CROSS,	/* ccreg40: an item crosses its cluster end */
	R4_CHK_TAIL_UNMERGED,	/* two tail40 items of one file side by
				 * side in a leaf, continuing each other
				 * (the kernel reads the file short) */
	R4_CHK_CODE_COUNT
};

/* Short stable name of a code ("block-twice"), "?" when unknown. */
const char *r4_check_code_name(int code);

/* ---- the problem table ---- */

enum r4_fix_class {
	R4_FIX_NONE = 0,	/* reported, not repaired (tree rebuild) */
	R4_FIX_PREEN,		/* safe without a question: -p fixes it */
	R4_FIX_YES,		/* -y / --fix fixes it */
	R4_FIX_REBUILD		/* tree damage: -y rebuilds the tree */
};

/* The pass of the repair that fixes a code. The repair's rounds run the
 * passes from R4_PASS_SPACE on in this order (libimage/repair/repair.c);
 * the first two are r4_fsck's steps before and at the open, the rebuild
 * comes first when there is tree damage. */
enum r4_fix_pass {
	R4_PASS_PREOPEN = 1,	/* super blocks, the image's size */
	R4_PASS_OPEN,		/* the journal, replayed by the open */
	R4_PASS_REBUILD,	/* the storage tree rebuilt */
	R4_PASS_SPACE,		/* bitmaps, counters, status, backups */
	R4_PASS_SHARED,		/* blocks claimed twice copied */
	R4_PASS_CC_LAYOUT,	/* compressed and tail layouts for the kernel */
	R4_PASS_KEYS,		/* stat data keys */
	R4_PASS_CC,		/* compressed files' clusters */
	R4_PASS_OBJECTS,	/* names, links, sizes, lost+found */
	R4_PASS_COUNT
};

struct r4_problem_info {
	int code;		/* enum r4_check_code */
	const char *name;	/* r4_check_code_name(code) */
	const char *context;	/* what a report names: "block", "block,
				 * item, key, object", ... */
	const char *summary;	/* what the code means, in the words of
				 * its context ({block}, {item}, {key},
				 * {oid}, {path}); each form its reports
				 * take has its own message template,
				 * rendered by the checker
				 * (libimage/check/messages.h) */
	int fix_class;		/* enum r4_fix_class */
	const char *fix;	/* what the repair does; NULL for none */
	int pass;		/* enum r4_fix_pass */
};

/* The row of a code, NULL when unknown. */
const struct r4_problem_info *r4_problem_info(int code);
/* Row i of the table in its order, NULL past the last (for tests and
 * documentation: every row, duplicates included). */
const struct r4_problem_info *r4_problem_row(unsigned i);
/* Short name of a pass ("space"), "?" when unknown. */
const char *r4_fix_pass_name(int pass);

#define R4_CHECK_NO_BLOCK UINT64_MAX

/* One problem. Pointers are valid during the callback only. */
struct r4_check_problem {
	int code;		/* enum r4_check_code */
	uint64_t block;		/* R4_CHECK_NO_BLOCK when none */
	int item;		/* item index in the node, -1 when none */
	const char *key;	/* "locality:type:ordering:objectid:offset"
				 * in hex, "" when none */
	const char *msg;	/* one line, no trailing newline */
};

typedef void (*r4_check_problem_fn)(void *ctx,
				    const struct r4_check_problem *p);
/* phase: "super", "tree", "space", "objects"; total may be an estimate
 * (done can pass it); done == total ends a phase. */
typedef void (*r4_check_progress_fn)(void *ctx, const char *phase,
				     uint64_t done, uint64_t total);

struct r4_check_opts {
	r4_check_problem_fn problem;	/* may be NULL */
	void *problem_ctx;
	r4_check_progress_fn progress;	/* may be NULL */
	void *progress_ctx;
	/* Stop calling problem() after this many (0: no limit); later
	 * problems are still counted. */
	unsigned max_reports;
	/* Tuning, for tests (r4fsck fills them from R4_CHECK_TABLES and
	 * R4_CHECK_RUN_BYTES): 1 keeps every record in memory tables (a
	 * repair builds them only when a fix needs them) instead of sorted
	 * runs in $TMPDIR; the bytes of records a run gathers before it is
	 * written (0: 16 MiB). fix_bytes (R4_CHECK_FIX_BYTES): the bytes
	 * of the object fixes' list a repair's bounded check gathers, past
	 * which the round uses the tables (0: 16 MiB). */
	int tables;
	size_t run_bytes;
	size_t fix_bytes;
};

struct r4_check_report {
	uint64_t problems;	/* every problem found */
	uint64_t reported;	/* handed to the callback */
	uint64_t nodes;		/* formatted nodes visited */
	uint64_t leaves, twigs;
	uint64_t items;
	uint64_t extent_blocks;	/* blocks of allocated extent units */
	uint64_t objects;	/* stat data items */
	uint64_t dirs, files, symlinks, specials;
	uint64_t entries;	/* directory entries, "." and ".." included */
	uint64_t used_blocks;	/* blocks in use by the walk */
	uint64_t free_blocks;	/* zero bits in the bitmaps */
	int journal_dirty;	/* an unreplayed transaction is present */
};

/* Check the volume (opened read-only is enough). Returns 0 when the check
 * ran to the end (problems, if any, are in report->problems), or a
 * negative code for an operational failure (I/O error, out of memory)
 * with err filled. *report is zeroed first. opts may be NULL. */
int r4_check(struct r4_vol *vol, const struct r4_check_opts *opts,
	     struct r4_check_report *report, struct r4_error *err);

#endif
