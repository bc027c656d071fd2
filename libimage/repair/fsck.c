/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_fsck(): what r4fsck does, as a table of passes run in
 * order, each in its own file. A pass that reaches the outcome ends the
 * run; an operational error ends it with the error. */
#include "config.h"
#include <string.h>
#include "libimage/repair/fsck.h"
#include "libimage/util/err.h"

const struct fsck_pass fsck_passes[R4_FSCK_PASSES] = {
	{ "super", fsck_pass0_super },	/* super blocks from the backups */
	{ "size", fsck_pass1_size },	/* a truncated image extended */
	{ "open", fsck_pass2_open },	/* the journal replayed or dropped */
	{ "check", fsck_pass3_check },	/* -n and the default mode */
	{ "repair", fsck_pass4_repair },	/* -p and -y */
};

void fsck_pre_problem(void *ctx, const struct r4_repair_action *a)
{
	struct fsck *F = ctx;

	F->pass->ran = 1;
	F->pass->found++;
	if (F->o->pre_problem)
		F->o->pre_problem(F->o->ctx, a);
}

void fsck_pre_action(void *ctx, const struct r4_repair_action *a)
{
	struct fsck *F = ctx;

	F->pass->ran = 1;
	F->pass->fixed++;
	if (F->o->pre_action)
		F->o->pre_action(F->o->ctx, a);
}

void fsck_note(struct fsck *F, int note, uint64_t n, const char *msg)
{
	if (note == R4_FSCK_NOTE_BEGIN)
		F->r->begun = 1;
	if (F->o->note)
		F->o->note(F->o->ctx, note, n, msg);
}

int fsck_fail(struct fsck *F, const struct r4_error *e)
{
	if (F->err && e != F->err)
		*F->err = *e;
	return e->code;
}

int fsck_checking(const struct fsck *F)
{
	return F->o->mode == R4_FSCK_CHECK || F->o->mode == R4_FSCK_DEFAULT;
}

static int valid(const struct r4_fsck_opts *o, struct r4_error *err)
{
	if (o->mode < R4_FSCK_CHECK || o->mode > R4_FSCK_FIX)
		return r4i_fail(err, R4_EINVAL, "r4_fsck: unknown mode %d",
				o->mode);
	if (o->build_sb && o->mode != R4_FSCK_FIX)
		return r4i_fail(err, R4_EINVAL, "r4_fsck: --build-sb "
				"restores the super blocks: it needs the fix "
				"mode");
	if (o->undo_file && (o->mode == R4_FSCK_CHECK ||
			     o->mode == R4_FSCK_DEFAULT))
		return r4i_fail(err, R4_EINVAL, "r4_fsck: an undo file "
				"saves what a repair overwrites: it needs "
				"preen or fix");
	return 0;
}

int r4_fsck(const char *path, const struct r4_fsck_opts *opts,
	    struct r4_fsck_report *report, struct r4_error *err)
{
	struct fsck F = { .path = path, .o = opts, .r = report, .err = err };
	int rc;

	memset(report, 0, sizeof(*report));
	report->err_path = path;
	for (unsigned i = 0; i < R4_FSCK_PASSES; i++)
		report->pass[i].name = fsck_passes[i].name;
	rc = valid(opts, err);
	if (rc)
		return rc;
	if (opts->undo_file) {
		rc = r4_undo_create(opts->undo_file, &F.undo, err);
		if (rc) {
			report->err_path = opts->undo_file;
			return rc;
		}
	}
	for (unsigned i = 0; i < R4_FSCK_PASSES; i++) {
		F.pass = &report->pass[i];
		rc = fsck_passes[i].run(&F);
		if (rc)
			break;
	}
	if (F.vol)		/* a pass that failed with the volume open */
		r4_vol_close(F.vol, NULL);
	r4_undo_close(F.undo);
	return rc < 0 ? rc : 0;
}
