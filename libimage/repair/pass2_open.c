/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck pass 2, the open. -n opens read-only and reads
 * through the journal; the other modes open read-write, which replays
 * it. The default mode opens read-write only when there is something to
 * replay (a read-only image or device is checked, not refused). A
 * journal that cannot be replayed makes the check modes and preen check
 * read-only; -y drops its unreadable transaction (super.c) and opens
 * again. */
#include "config.h"
#include <stddef.h>
#include "r4/journal.h"
#include "libimage/repair/fsck.h"
#include "libimage/util/err.h"

static void note_lock(struct fsck *F)
{
	if (F->vol && r4_vol_lock_note(F->vol)[0])
		fsck_note(F, R4_FSCK_NOTE_LOCK, 0, r4_vol_lock_note(F->vol));
}

/* The read-write open failed: when the reason is a journal that cannot
 * be replayed, open read-only (the check reports the transaction). */
static int fallback_readonly(struct fsck *F, const struct r4_error *why)
{
	struct r4_error e = { 0 };

	if (r4_vol_open(F->path, fsck_open(F, R4_OPEN_RDONLY |
			(F->o->force ? R4_OPEN_FORCE : 0)), &F->vol, &e)) {
		F->vol = NULL;
		return 0;
	}
	if (!r4_vol_journal_msg(F->vol)[0]) {
		r4_vol_close(F->vol, NULL);
		F->vol = NULL;
		return 0;
	}
	fsck_note(F, R4_FSCK_NOTE_NO_REPLAY, 0, why->msg);
	return 1;
}

/* The default mode: 1 when F->vol is open read-only with no journal to
 * replay, 0 to open read-write, or an error (the image is in use). */
static int default_readonly(struct fsck *F)
{
	struct r4_error e = { 0 };

	if (F->o->mode != R4_FSCK_DEFAULT)
		return 0;
	if (r4_vol_open(F->path, fsck_open(F, R4_OPEN_RDONLY), &F->vol,
			&e)) {
		F->vol = NULL;
		if (e.code != R4_EBUSY)
			return 0;
		return fsck_fail(F, &e);
	}
	if (!r4_vol_overlaid(F->vol) && !r4_vol_journal_msg(F->vol)[0])
		return 1;
	r4_vol_close(F->vol, NULL);	/* there is a journal to replay */
	F->vol = NULL;
	return 0;
}

static int open_volume(struct fsck *F)
{
	int check = F->o->mode == R4_FSCK_CHECK;
	struct r4_error e = { 0 };
	unsigned flags = check ? R4_OPEN_RDONLY : R4_OPEN_RDWR;
	int rc;

	F->rdonly = check;
	if (!check && (rc = default_readonly(F)) != 0) {
		if (rc < 0)
			return rc;
		F->rdonly = 1;
		note_lock(F);
		return 0;
	}
	rc = r4_vol_open(F->path, fsck_open(F, flags | (F->o->force && check ?
					   R4_OPEN_FORCE : 0)), &F->vol, &e);
	if (rc && !check && e.code != R4_EBUSY && fallback_readonly(F, &e)) {
		F->rdonly = 1;
		return 0;
	}
	if (rc) {
		F->vol = NULL;
		if (!e.code)
			e.code = rc;
		return fsck_fail(F, &e);
	}
	if (check) {
		note_lock(F);
		F->r->overlaid = r4_vol_overlaid(F->vol);
		if (r4_vol_journal_msg(F->vol)[0])
			fsck_note(F, R4_FSCK_NOTE_JOURNAL, 0,
				  r4_vol_journal_msg(F->vol));
		if (F->r->overlaid)
			fsck_note(F, R4_FSCK_NOTE_OVERLAID, F->r->overlaid,
				  NULL);
		return 0;
	}
	F->r->replayed = r4_vol_replayed(F->vol);
	if (F->r->replayed)
		fsck_note(F, R4_FSCK_NOTE_REPLAYED, F->r->replayed, NULL);
	return 0;
}

int fsck_pass2_open(struct fsck *F)
{
	int rc = open_volume(F);

	F->pass->ran = 1;
	if (rc || !F->rdonly || F->o->mode != R4_FSCK_FIX)
		return rc;
	/* -y and a journal that cannot be replayed: drop its unreadable
	 * transaction, then open again. */
	r4_vol_close(F->vol, NULL);
	F->vol = NULL;
	rc = r4_repair_journal_drop(F->path, fsck_pre_problem,
				    fsck_pre_action, F, fsck_open(F, 0), F->err);
	if (rc)
		return rc;
	rc = open_volume(F);
	if (rc)
		return rc;
	if (F->rdonly) {
		r4_vol_close(F->vol, NULL);
		F->vol = NULL;
		return r4i_fail(F->err, R4_ECORRUPT, "%s: the journal still "
				"cannot be replayed", F->path);
	}
	return 0;
}
