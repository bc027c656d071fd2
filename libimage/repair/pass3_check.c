/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck pass 3, the check (-n, the default mode, and any mode
 * whose journal could not be replayed): r4_check over the volume the
 * open left read-only or replayed; it writes nothing. */
#include "config.h"
#include <stddef.h>
#include "libimage/repair/fsck.h"

int fsck_pass3_check(struct fsck *F)
{
	int rc;

	if (!fsck_checking(F) && !F->rdonly)
		return FSCK_GO;
	F->pass->ran = 1;
	fsck_note(F, R4_FSCK_NOTE_BEGIN, 0, NULL);
	rc = r4_check(F->vol, &F->o->repair.check, &F->r->check, F->err);
	r4_vol_close(F->vol, NULL);
	F->vol = NULL;
	if (rc)
		return rc;
	F->pass->found = F->r->check.problems;
	F->r->outcome = R4_FSCK_CHECKED;
	return FSCK_DONE;
}
