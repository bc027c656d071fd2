/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the repair layer's internals (libimage/repair). A round is one
 * check (libimage/check, whose map of blocks in use it keeps, and its
 * tables when a fix reads them: repair.c) and the fixes it allows;
 * fixes go through libimage/txn and, for objects, the libimage/obj edit
 * functions, in batches of opts->batch changes per transaction. */
#ifndef R4_LIBIMAGE_REPAIR_REPAIR_H
#define R4_LIBIMAGE_REPAIR_REPAIR_H

#include "r4/repair.h"
#include "libimage/check/check.h"

struct rep {
	struct r4_vol *vol;
	const struct r4_repair_opts *o;
	struct r4_repair_report *r;
	struct r4_error *err;
	struct chk c;			/* the last check, kept */
	struct r4_check_report crep;
	struct r4_check_opts copts;
	uint64_t codes[R4_CHK_CODE_COUNT];	/* this round's problems */
	int forward;			/* hand problems to the caller */
	uint64_t forwarded;
	uint64_t skip;			/* problems not to hand on again */
	int spill_failed;		/* the last check's runs could not
					 * go to $TMPDIR */
	unsigned batch;
	int tables;			/* checks build the tables (repair.c) */
	int no_runs;			/* $TMPDIR took no runs: tables */
};

/* Report one change (counted; handed to the caller). */
void rep_action(struct rep *R, int code, uint64_t blk, uint64_t oid,
		int loss, uint64_t amount, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* One transaction for fixes [a, b) of a caller's list: 0 when it
 * committed. */
typedef int (*rep_batch_fn)(void *ctx, size_t a, size_t b,
			    struct r4_error *err);
/* The problem code and object id of fix i, for a report. */
typedef void (*rep_who_fn)(void *ctx, size_t i, int *code, uint64_t *oid);
/* Run fixes [0, n) in transactions of R->batch fixes; a batch that
 * fails is tried again a fix at a time, and a fix that fails alone is
 * reported ("could not fix", not counted as a change) and left. Stops
 * with an error when the volume failed (a write error). *changed = 1
 * when a transaction committed. */
int rep_batches(struct rep *R, size_t n, rep_batch_fn run, rep_who_fn who,
		void *ctx, int *changed);

/* Space, counters, status block, backups (space.c). *changed = 1 when
 * something was committed. */
int rep_fix_space(struct rep *R, int *changed);
/* Rebuild the storage tree from the items that pass the checks
 * (rebuild.c). */
int rep_rebuild_tree(struct rep *R, int *changed);
/* Blocks claimed twice: copies for the extents that do not keep them
 * (twice.c). */
int rep_fix_shared(struct rep *R, int *changed);
/* Stat data put back under the key an entry names, and object ids two
 * stat data share given apart (keys.c). */
int rep_fix_keys(struct rep *R, int *changed);
/* The stat-data keys the key pass would give a stat data (sorted by
 * el[0..2]; *out malloc'ed, NULL when *n is 0). 0 or -ENOMEM. */
int rep_named_keys(struct rep *R, struct fmt_key **out, size_t *n);
/* The name of entry e, read back from its node (malloc'ed, *len bytes):
 * 0, R4_ECORRUPT or -ENOMEM. */
int rep_entry_name(struct chk *c, const struct chk_ent *e, char **name,
		   size_t *len);
/* Compressed files whose clusters or stat data disagree (ccreg_fix.c); does
 * nothing unless the round found compressed-cluster or body problems. */
int rep_fix_ccreg(struct rep *R, int *changed);
/* Compressed files that read right but that the Reiser4 kernel cannot
 * take (ccreg_layout.c): whether this round found one the mode fixes, and
 * the fixes (preen and -y). */
int rep_ccreg_layout_found(const struct rep *R);
int rep_fix_ccreg_layout(struct rep *R, int *changed);
/* Objects and names (objects.c). */
int rep_fix_objects(struct rep *R, int *changed);
/* 1 when body items without stat data carry the object id of an
 * object that has one (a damaged key: the tree rebuild mends it), 0
 * when none do, -ENOMEM. */
int rep_body_key_damaged(struct rep *R);
/* 1 when two files' tail bodies in one node disagree with their sizes
 * as a moved boundary between them does (a damaged item offset: the
 * tree rebuild moves the bytes back, rebuild.c), 0 when none, -ENOMEM. */
int rep_bounds_shifted(struct rep *R);

#endif
