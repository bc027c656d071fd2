/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck pass 0, the super blocks, before anything opens the
 * volume. In the check modes a master or format40 super block that
 * fails its checks while a backup copy is intact is the outcome (the
 * volume is not opened: the caller reports it, r4fsck -y restores it);
 * -y and --build-sb restore them from the backups (super.c). */
#include "config.h"
#include "libimage/repair/fsck.h"

/* The check modes: R4_EBUSY fails; any other failure is left to the
 * open, which says what is wrong. */
static int probe(struct fsck *F)
{
	struct r4_error e = { 0 };
	int damaged = 0;

	if (r4_repair_super_probe(F->path, 0, fsck_pre_problem, F, &damaged,
				  fsck_open(F, 0), &e)) {
		if (e.code != R4_EBUSY)
			return FSCK_GO;
		return fsck_fail(F, &e);
	}
	if (!damaged)
		return FSCK_GO;
	F->r->outcome = R4_FSCK_SUPERS_DAMAGED;
	return FSCK_DONE;
}

int fsck_pass0_super(struct fsck *F)
{
	int rc, fixed = 0;

	if (fsck_checking(F))
		return probe(F);
	if (!F->o->build_sb && F->o->mode != R4_FSCK_FIX)
		return FSCK_GO;
	rc = r4_repair_super_probe(F->path, F->o->build_sb, fsck_pre_problem,
				   F, &fixed, fsck_open(F, 0), F->err);
	if (!rc && fixed)
		rc = r4_repair_super(F->path, F->o->build_sb, fsck_pre_action,
				     F, &fixed, fsck_open(F, 0), F->err);
	return rc < 0 ? rc : FSCK_GO;
}
