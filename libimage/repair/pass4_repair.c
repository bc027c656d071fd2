/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck pass 4, the repair (-p, -y): r4_repair's rounds of
 * check and fix (repair.c) over the volume opened read-write, then the
 * close, which commits what is left. */
#include "config.h"
#include <stddef.h>
#include "libimage/repair/fsck.h"

int fsck_pass4_repair(struct fsck *F)
{
	struct r4_repair_opts ro = F->o->repair;
	int rc;

	F->pass->ran = 1;
	ro.mode = F->o->mode == R4_FSCK_PREEN ? R4_REPAIR_PREEN
					      : R4_REPAIR_FIX;
	if (F->o->set_clock)
		r4_vol_set_clock(F->vol, F->o->clock);
	fsck_note(F, R4_FSCK_NOTE_BEGIN, 0, NULL);
	rc = r4_repair(F->vol, &ro, &F->r->repair, F->err);
	if (rc)
		return rc;	/* r4_fsck closes the volume */
	rc = r4_vol_close(F->vol, F->err);
	F->vol = NULL;
	if (rc)
		return rc;
	F->pass->found = F->r->repair.found.problems;
	F->pass->fixed = F->r->repair.actions;
	F->r->outcome = R4_FSCK_REPAIRED;
	return FSCK_DONE;
}
