/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck()'s passes (libimage/repair/pass*.c) and what they
 * share. A pass returns FSCK_GO (the next pass runs), FSCK_DONE (the
 * outcome is in the report) or a negative operational error with the
 * error record filled. */
#ifndef R4_LIBIMAGE_REPAIR_FSCK_H
#define R4_LIBIMAGE_REPAIR_FSCK_H

#include "r4/repair.h"

enum { FSCK_GO = 0, FSCK_DONE = 1 };

struct fsck {
	const char *path;
	const struct r4_fsck_opts *o;
	struct r4_fsck_report *r;
	struct r4_error *err;
	struct r4_vol *vol;		/* opened by pass 2 */
	int rdonly;			/* vol is read-only */
	struct r4_fsck_pass_report *pass;	/* the pass running */
	struct r4_open_opts op;		/* fsck_open's answer */
	struct r4_undo *undo;		/* -z: every read-write open's */
};

/* The caller's open options (its window, lock flags and backends) with
 * flags added and the undo file of this run, for one open. */
static inline const struct r4_open_opts *fsck_open(struct fsck *F,
						   unsigned flags)
{
	F->op = F->o->open;
	F->op.flags |= flags;
	if (F->undo)
		F->op.undo = F->undo;
	return &F->op;
}

struct fsck_pass {
	const char *name;
	int (*run)(struct fsck *F);
};

/* The passes, in order (fsck.c). */
extern const struct fsck_pass fsck_passes[R4_FSCK_PASSES];

int fsck_pass0_super(struct fsck *F);
int fsck_pass1_size(struct fsck *F);
int fsck_pass2_open(struct fsck *F);
int fsck_pass3_check(struct fsck *F);
int fsck_pass4_repair(struct fsck *F);

/* The callbacks the steps before the open hand their problems and
 * fixes to: counted in the running pass, passed on to the caller. */
void fsck_pre_problem(void *ctx, const struct r4_repair_action *a);
void fsck_pre_action(void *ctx, const struct r4_repair_action *a);
/* Tell the caller a note (enum r4_fsck_note). */
void fsck_note(struct fsck *F, int note, uint64_t n, const char *msg);
/* Fail with err (copied into the caller's record): its code. */
int fsck_fail(struct fsck *F, const struct r4_error *e);
/* The mode is one of the check modes (-n, the default). */
int fsck_checking(const struct fsck *F);

#endif
