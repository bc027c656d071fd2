/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: repairing a volume (what r4fsck -p, -y and --fix run).
 *
 * r4_repair() checks the volume (r4_check), decides from the problem
 * table (r4_problem_info) what it may fix in the mode asked for, fixes
 * it through the transaction engine in bounded batches, and checks
 * again, until the volume is clean or nothing more can be fixed. A power
 * cut at any point leaves a volume that is consistent as far as the
 * journal goes and that a rerun finishes. Every change is handed to the
 * caller as an action, losses (entries removed, bytes zeroed, objects
 * moved to lost+found) marked as such. The library prints nothing. */
#ifndef R4_REPAIR_H
#define R4_REPAIR_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"
#include "r4/check.h"

/* The problem table (r4_problem_info) is in r4/check.h. */

/* ---- repair ---- */

enum r4_repair_mode {
	R4_REPAIR_PREEN = 1,	/* fix R4_FIX_PREEN problems, and only when
				 * nothing else is wrong */
	R4_REPAIR_FIX = 2	/* fix R4_FIX_PREEN and R4_FIX_YES ones */
};

enum r4_loss {
	R4_LOSS_NONE = 0,
	R4_LOSS_ENTRY,		/* a directory entry removed */
	R4_LOSS_ZEROED,		/* a byte range now reads as zeros */
	R4_LOSS_LOST_FOUND,	/* an object moved to /lost+found */
	R4_LOSS_SPACE,		/* blocks nothing referenced freed */
	R4_LOSS_ITEMS,		/* tree items dropped by a rebuild */
	R4_LOSS_CUT		/* a file's size cut: bytes past the new
				 * end no longer read */
};

/* One change made. Pointers are valid during the callback only. */
struct r4_repair_action {
	int code;		/* the problem it fixes */
	uint64_t block;		/* R4_CHECK_NO_BLOCK when none */
	uint64_t oid;		/* object, 0 when none */
	int loss;		/* enum r4_loss */
	uint64_t amount;	/* blocks freed / bytes zeroed or cut, else 0 */
	const char *what;	/* one line, no trailing newline */
};

typedef void (*r4_repair_action_fn)(void *ctx,
				    const struct r4_repair_action *a);

struct r4_repair_opts {
	int mode;			/* enum r4_repair_mode */
	/* The problems of the first check go to check.problem (with
	 * check.max_reports); progress to check.progress. */
	struct r4_check_opts check;
	r4_repair_action_fn action;	/* may be NULL */
	void *action_ctx;
	/* Changes per transaction (0: 128): the bound on what a power
	 * cut can undo. */
	unsigned batch;
	/* The tree rebuild keeps its items other than file bodies in
	 * sorted runs: bytes of them (and of their bodies) in memory
	 * before the rest goes to a temporary file in $TMPDIR, and bytes
	 * of new nodes (2 at least) it keeps before it writes them ahead
	 * of its commit, when the volume has room to spare (0: 16 MiB;
	 * tests set a few bytes to make small volumes do both). */
	size_t rebuild_run_bytes;
	/* When the volume has no such room, the new nodes past that
	 * budget wait in a temporary file in $TMPDIR instead (the free
	 * blocks stay untouched until the commit). Tests: nonzero puts
	 * them there past this many bytes (2 nodes at least) whether the
	 * volume has room or not. */
	size_t rebuild_spill_bytes;
	/* The check's objects the rebuild may look up (40 bytes a file)
	 * wait in a temporary file in $TMPDIR, in memory when it cannot
	 * take them. Tests: nonzero keeps them in memory. */
	int rebuild_objs_in_memory;
	/* A look-up's first 16 steps' records stay in memory (2.6 MB; no
	 * file for fewer than 2^16 objects). Tests: 1 to 30 keeps that
	 * many steps' instead, the file used from 2^that objects. */
	unsigned rebuild_objs_levels;
};

struct r4_repair_report {
	struct r4_check_report found;	/* the first check */
	struct r4_check_report left;	/* the last check */
	uint64_t found_by_code[R4_CHK_CODE_COUNT];
	uint64_t left_by_code[R4_CHK_CODE_COUNT];
	uint64_t actions;		/* changes made */
	uint64_t transactions;		/* committed */
	uint64_t rounds;		/* checks run */
	/* Checks that built the whole volume's tables for the fixes: 0
	 * when the checks found nothing or only what the space pass fixes.
	 * The first one repeats its round's bounded check (not counted in
	 * rounds); the later rounds' checks build them at once. */
	uint64_t table_checks;
	uint64_t entries_removed, zeroed_ranges, zeroed_bytes;
	/* Files whose size a repair cut, and the bytes cut off (what the
	 * old size claimed past the new end). */
	uint64_t cut_files, cut_bytes;
	uint64_t lost_found, blocks_freed, blocks_claimed;
	uint64_t nodes_dropped, items_dropped;	/* by a tree rebuild */
	/* Body bytes of the items a rebuild dropped (as far as their
	 * headers tell), and body bytes it put at another key (into their
	 * file at another offset, or into a new object for /lost+found). */
	uint64_t bytes_dropped, bytes_moved;
	/* Blocks claimed twice: copies made for the owners that did not
	 * keep them (nothing lost). */
	uint64_t blocks_copied;
	/* Writes of a tree rebuild's new nodes to its temporary file
	 * (rebuild_spill_bytes: a volume short of room), a node written
	 * there again counted again. */
	uint64_t nodes_spilled;
	int rebuilt;				/* the tree was rebuilt */
	/* Why problems were left: preen found one it may not fix (nothing
	 * was changed then); the tree is damaged in ways the repair does
	 * not fix (after a rebuild, or with nothing changed when the damage
	 * is one a rebuild cannot help). */
	int preen_refused;
	int tree_damaged;
	/* The tree rebuild found no room on the volume for a new tree nor
	 * a way to mend the old one in place: the run failed with
	 * R4_ENOSPC, the tree as it was (fixes before it stay). */
	int no_room;
};

/* Repair a volume opened read-write (the journal is replayed by the
 * open). 0 when the repair ran to the end (report->left.problems says
 * what is still wrong), or a negative operational error with err
 * filled (the volume is then as the last committed batch left it). */
int r4_repair(struct r4_vol *vol, const struct r4_repair_opts *opts,
	      struct r4_repair_report *report, struct r4_error *err);

/* ---- before the open: the super blocks ---- */

/* Each function below opens the image itself, as r4_vol_open() does,
 * with open's wait, window and (read-only steps) R4_OPEN_NOLOCK (NULL:
 * no wait, the whole file); its other flags are not used. A busy image
 * is R4_EBUSY. */

/* Restore a master super block that fails its checks from a backup
 * copy, and the fixed fields (magic, block count, mkfs id, policy,
 * flags, version) of a format40 super block that fails its checks; with
 * rebuild (--build-sb) also when they merely differ from the backup.
 * These two blocks are written in place (a volume without them cannot
 * be opened, so no transaction can carry them), the format40 one first.
 * *fixed = 0 nothing, 1 the master, 2 the format40 block (3 both); each
 * block restored is handed to fn (may be NULL) as an action (code
 * R4_CHK_MASTER or R4_CHK_FORMAT40, its block, what was done).
 * R4_ENOTFOUND when no backup copy is usable. */
int r4_repair_super(const char *path, int rebuild, r4_repair_action_fn fn,
		    void *ctx, int *fixed, const struct r4_open_opts *open,
		    struct r4_error *err);
/* The same test, writing nothing: *damaged as *fixed above, and fn is
 * told, for each block that would be restored, the problem (the damaged
 * or differing block and the intact backup copy). */
int r4_repair_super_probe(const char *path, int rebuild,
			  r4_repair_action_fn fn, void *ctx, int *damaged,
			  const struct r4_open_opts *open, struct r4_error *err);

/* An image shorter than the block count of its format40 super block (a
 * truncated copy): *missing = the blocks past its end, 0 when it is
 * whole (or its super blocks do not say: the open then tells). Without
 * extend nothing is written and fn is told the problem; with extend an
 * image file is extended with zeros to the full size (what the lost
 * tail held is then found lost by the repair) and fn is told what was
 * done (code R4_CHK_TRUNCATED). A block device is never resized:
 * R4_ERANGE. */
int r4_repair_size(const char *path, int extend, r4_repair_action_fn fn,
		   void *ctx, uint64_t *missing,
		   const struct r4_open_opts *open, struct r4_error *err);

/* A journal whose newest committed transaction cannot be replayed (the
 * open fails): the journal header is pointed back at the last flushed
 * transaction, dropping the unreadable one (what it changed never reached
 * its home blocks). Written in place, as the replay itself does. The
 * problem (the header's transaction) is handed to problem, the fix to
 * fn (either may be NULL), both with code R4_CHK_JOURNAL. */
int r4_repair_journal_drop(const char *path, r4_repair_action_fn problem,
			   r4_repair_action_fn fn, void *ctx,
			   const struct r4_open_opts *open,
			   struct r4_error *err);

/* ---- the whole of r4fsck: r4_fsck() ---- */

/* r4_fsck() runs the passes of r4fsck in order (libimage/repair/fsck.c
 * holds their table, one file each): super blocks restored from their
 * backups, a truncated image extended, the open (journal replayed, read
 * through, or an unreplayable transaction dropped), then the check or
 * the repair. Each pass says whether it found or fixed something in
 * report->pass[]; the caller renders the callbacks and the outcome. */

enum r4_fsck_mode {
	R4_FSCK_CHECK = 1,	/* -n: read-only, read through the journal */
	R4_FSCK_DEFAULT,	/* replay the journal (if any), then check */
	R4_FSCK_PREEN,		/* -p: r4_repair with R4_REPAIR_PREEN */
	R4_FSCK_FIX		/* -y: r4_repair with R4_REPAIR_FIX */
};

/* What a pass tells the caller as it goes (note callback). */
enum r4_fsck_note {
	R4_FSCK_NOTE_LOCK = 1,	/* msg: r4_vol_lock_note() of the open */
	R4_FSCK_NOTE_NO_REPLAY,	/* msg: why the journal cannot be replayed;
				 * the volume is opened read-only instead */
	R4_FSCK_NOTE_JOURNAL,	/* msg: r4_vol_journal_msg() (-n) */
	R4_FSCK_NOTE_OVERLAID,	/* n committed transactions read through */
	R4_FSCK_NOTE_REPLAYED,	/* n transactions replayed by the open */
	R4_FSCK_NOTE_BEGIN	/* the check or the repair starts: its
				 * problems and actions follow */
};
typedef void (*r4_fsck_note_fn)(void *ctx, int note, uint64_t n,
				const char *msg);

struct r4_fsck_opts {
	int mode;			/* enum r4_fsck_mode */
	int build_sb;			/* --build-sb (with R4_FSCK_FIX) */
	int force;			/* R4_OPEN_FORCE for the read-only opens */
	/* flags: R4_OPEN_WAIT.. / R4_OPEN_NOLOCK (each pass adds its
	 * own); the window (a partition) of every open */
	struct r4_open_opts open;
	const char *undo_file;		/* -z FILE, NULL for none */
	/* The check's and the repair's options: check.problem,
	 * check.progress, check.max_reports (and check.tables,
	 * check.run_bytes for a check), action, batch. Its mode is set
	 * from mode. */
	struct r4_repair_opts repair;
	/* Problems found and fixes made before the volume is open (super
	 * blocks, the image's size, the journal header); may be NULL. */
	r4_repair_action_fn pre_problem, pre_action;
	r4_fsck_note_fn note;		/* may be NULL */
	void *ctx;			/* for pre_problem, pre_action, note */
	/* The clock of the repair's writes (r4_vol_set_clock) when set. */
	int set_clock;
	int64_t clock;
};

enum r4_fsck_outcome {
	R4_FSCK_CHECKED = 1,	/* report->check holds the check */
	R4_FSCK_REPAIRED,	/* report->repair holds the repair */
	R4_FSCK_SUPERS_DAMAGED,	/* check modes: a super block fails its
				 * checks, a backup is intact; not opened */
	R4_FSCK_TRUNCATED	/* check modes and preen: the image is short
				 * by report->missing blocks; not opened */
};

struct r4_fsck_pass_report {
	const char *name;	/* "super", "size", "open", "check", ... */
	int ran;		/* the pass had something to do */
	uint64_t found;		/* problems it found */
	uint64_t fixed;		/* changes it made */
};

#define R4_FSCK_PASSES 5

struct r4_fsck_report {
	int outcome;			/* enum r4_fsck_outcome */
	unsigned replayed;		/* transactions replayed by the open */
	unsigned overlaid;		/* read through (-n) */
	uint64_t missing;		/* R4_FSCK_TRUNCATED: blocks missing */
	/* The check or the repair began (R4_FSCK_NOTE_BEGIN was sent):
	 * an error after it ends what the caller started rendering. */
	int begun;
	/* The file an error is about: the image or the undo file. */
	const char *err_path;
	struct r4_check_report check;
	struct r4_repair_report repair;
	struct r4_fsck_pass_report pass[R4_FSCK_PASSES];
};

/* Check or repair the volume at path as r4fsck does, pass by pass. 0
 * when the passes ran to an outcome (report->outcome), or a negative
 * operational error with err filled (report->err_path names the file).
 * With undo_file, every read-write open of this call is undo-logged
 * into that one file (else into opts->open.undo, when set). */
int r4_fsck(const char *path, const struct r4_fsck_opts *opts,
	    struct r4_fsck_report *report, struct r4_error *err);

/* ---- undo (r4fsck -z / --undo) ---- */

/* r4_undo_create and r4_undo_close: include/r4/r4.h, beside the open
 * that takes the handle. */
/* What r4_undo_apply did. */
struct r4_undo_info {
	uint64_t units;		/* blocks put back */
	int one_step;		/* 1: as one crash-safe step through the
				 * journal; 0: unit by unit, because of why */
	char why[R4_ERRMSG_MAX];
};
/* Put back what an undo file saved, after checking that it belongs to
 * this volume as the repair left it (libimage/io/undo.h). As one step
 * through the journal when it can: a cut leaves the volume as it was or
 * restored (once the journal is replayed); a rerun finishes it byte for
 * byte. Else unit by unit (a cut leaves a mix that a rerun finishes). */
int r4_undo_apply(const char *undo_path, const char *image,
		  struct r4_undo_info *info, const struct r4_open_opts *open,
		  struct r4_error *err);

#endif
