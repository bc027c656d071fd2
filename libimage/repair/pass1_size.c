/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck pass 1, the image's size: an image shorter than the
 * block count of its format40 super block. -y extends an image file
 * with zeros (what the lost tail held is then repaired as lost; a block
 * device is an error); the check modes and preen end with it as the
 * outcome, writing nothing. */
#include "config.h"
#include "libimage/repair/fsck.h"

int fsck_pass1_size(struct fsck *F)
{
	struct r4_error e = { 0 };
	uint64_t missing = 0;
	int rc;

	if (r4_repair_size(F->path, 0, fsck_pre_problem, F, &missing,
			   fsck_open(F, 0), &e)) {
		if (e.code != R4_EBUSY)
			return FSCK_GO;	/* the open says what is wrong */
		return fsck_fail(F, &e);
	}
	if (!missing)
		return FSCK_GO;
	if (F->o->mode != R4_FSCK_FIX) {
		F->r->missing = missing;
		F->r->outcome = R4_FSCK_TRUNCATED;
		return FSCK_DONE;
	}
	rc = r4_repair_size(F->path, 1, fsck_pre_action, F, &missing,
			    fsck_open(F, 0), F->err);
	return rc < 0 ? rc : FSCK_GO;
}
