/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_repair(): rounds of check and fix. The first check's
 * problems go to the caller; the mode and the problem table decide what
 * may be fixed, and the table's pass column which of the fix passes
 * (fix_passes[], in order) a round runs; each fix is followed by a
 * fresh check, and the repair stops when the volume
 * is clean, when a round changes nothing, or after ROUNDS_MAX rounds.
 * Tree damage blocks the space and object fixes (their map of what is
 * in use would be wrong) until -y has rebuilt the tree (rebuild.c, once
 * per run); preen stops before any change when it finds anything it may
 * not fix. A round's check runs over sorted runs in bounded memory,
 * listing what the common object fixes need, and is run again building
 * the whole volume's tables only when a fix the list does not serve
 * needs them (run_check): a clean volume costs what r4fsck -n does.
 * A tree rebuild takes what it reads of the check from the bounded one
 * too when the list is whole and names no key move (rebuild_listed). */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "libimage/repair/repair.h"
#include "libimage/util/err.h"
#include "libimage/util/hugemem.h"

#define ROUNDS_MAX 12
#define BATCH_DEFAULT 128

void rep_action(struct rep *R, int code, uint64_t blk, uint64_t oid,
		int loss, uint64_t amount, const char *fmt, ...)
{
	struct r4_repair_action a;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	R->r->actions++;
	switch (loss) {
	case R4_LOSS_ENTRY:
		R->r->entries_removed++;
		break;
	case R4_LOSS_ZEROED:
		R->r->zeroed_ranges++;
		R->r->zeroed_bytes += amount;
		break;
	case R4_LOSS_LOST_FOUND:
		R->r->lost_found++;
		break;
	case R4_LOSS_ITEMS:
		break;	/* counted by the rebuild */
	case R4_LOSS_CUT:
		R->r->cut_files++;
		R->r->cut_bytes += amount;
		break;
	default:
		break;
	}
	if (!R->o->action)
		return;
	a.code = code;
	a.block = blk;
	a.oid = oid;
	a.loss = loss;
	a.amount = amount;
	a.what = msg;
	R->o->action(R->o->action_ctx, &a);
}

int rep_batches(struct rep *R, size_t n, rep_batch_fn run,
		rep_who_fn who, void *ctx, int *changed)
{
	for (size_t a = 0; a < n; a += R->batch) {
		size_t b = a + R->batch < n ? a + R->batch : n;
		struct r4_error e1 = { 0, "", 0 };

		if (!run(ctx, a, b, &e1)) {
			*changed = 1;
			continue;
		}
		if (R->vol->failed)
			return r4i_fail(R->err, e1.code, "%s", e1.msg);
		for (size_t i = a; i < b; i++) {
			struct r4_error e2 = { 0, "", 0 };
			uint64_t oid = 0;
			int code = 0;

			if (!run(ctx, i, i + 1, &e2)) {
				*changed = 1;
				continue;
			}
			if (R->vol->failed)
				return r4i_fail(R->err, e2.code, "%s", e2.msg);
			who(ctx, i, &code, &oid);
			rep_action(R, code, R4_CHECK_NO_BLOCK, oid, 0, 0,
				   "could not fix: %s", e2.msg);
			R->r->actions--;
		}
	}
	return 0;
}

static void on_problem(void *ctx, const struct r4_check_problem *p)
{
	struct rep *R = ctx;
	unsigned max = R->o->check.max_reports;

	if (p->code > 0 && p->code < R4_CHK_CODE_COUNT)
		R->codes[p->code]++;
	if (R->skip) {		/* said already by a check that failed */
		R->skip--;
		return;
	}
	if (!R->forward || !R->o->check.problem ||
	    (max && R->forwarded >= max))
		return;
	R->forwarded++;
	R->o->check.problem(R->o->check.problem_ctx, p);
}

/* One check into R->c: over sorted runs spilled to $TMPDIR (memory
 * bounded by the run budget and the widest directory), or building the
 * whole volume's tables the fix passes read (about 170 bytes a file). */
static int check_once(struct rep *R, int forward, int tables)
{
	int rc = 0;

	chk_release(&R->c);
	memset(&R->c, 0, sizeof(R->c));
	memset(R->codes, 0, sizeof(R->codes));
	R->copts.problem = on_problem;
	R->copts.problem_ctx = R;
	R->copts.progress = forward ? R->o->check.progress : NULL;
	R->copts.progress_ctx = R->o->check.progress_ctx;
	R->copts.max_reports = 0;
	R->copts.run_bytes = R->o->check.run_bytes;
	R->copts.fix_bytes = R->o->check.fix_bytes;
	R->forward = forward;
	R->c.vol = R->vol;
	R->c.opts = &R->copts;
	R->c.rep = &R->crep;
	R->c.err = R->err;
	/* -y over the bounded check: the object fixes' list too */
	R->c.fixes_want = !tables && R->o->mode == R4_REPAIR_FIX;
	if (tables)
		R->r->table_checks++;
	else if (chk_stream_start(&R->c))
		return r4i_fail(R->err, -ENOMEM, "%s: out of memory for the "
				"check", R->vol->dev->path);
	rc = chk_run(&R->c);
	R->spill_failed = rc && chk_stream_error(&R->c);
	/* The runs are read: what the space pass needs is in the map of
	 * blocks in use and the report. */
	chk_stream_free(&R->c);
	R->crep.reported = R->forwarded;
	return rc;
}

/* Whether the object pass takes the fixes of code k from the bounded
 * check's list (objects.c: plan_listed), not from the tables, when the
 * list is whole: entries that name nothing (when no stat data nobody
 * names could be theirs: the key pass, keys.c, has nothing to move),
 * "." and "..", second names of directories, objects nothing names,
 * link counts and directory sizes, and file sizes (before a tree
 * rebuild only when the list names no two files whose tail bodies'
 * boundary may have moved: rebuild_mends tells that over the tables):
 * what a rebuild leaves; not bodies, nor what the other passes fix. */
static int listed(const struct rep *R, int k)
{
	if ((k == R4_CHK_ENTRY && R->c.fixes_keys) ||
	    (k == R4_CHK_FILE_SIZE && !R->r->rebuilt && R->c.fixes_shift))
		return 0;
	return (k == R4_CHK_ENTRY || k == R4_CHK_DOT ||
		k == R4_CHK_DIR_LINK ||
		k == R4_CHK_UNREACHABLE || k == R4_CHK_NLINK ||
		k == R4_CHK_DIR_SIZE || k == R4_CHK_FILE_SIZE) &&
	       R->c.fixes_want && !R->c.fixes_lost;
}

/* Whether this round's problems need the tables: every fix after the
 * space pass reads them (but those the check's list serves), and so do
 * the mends before a tree rebuild and the rebuild (but one the bounded
 * check serves: rebuild_listed, looked at first); the space pass
 * (bitmaps, counters, status, backups) needs only the map of blocks in
 * use, the count of objects and the largest object id, which both kinds
 * of check leave, and the pass of blocks claimed twice (twice.c) reads
 * nothing of the check: it walks the tree itself. */
static int tables_needed(const struct rep *R)
{
	if (R->crep.journal_dirty)
		return 1;
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++) {
		const struct r4_problem_info *pi = r4_problem_info(k);

		if (R->codes[k] &&
		    (!pi || (pi->pass != R4_PASS_SPACE &&
			     pi->pass != R4_PASS_SHARED)) &&
		    !listed(R, k))
			return 1;
	}
	return 0;
}

/* Tree damage a rebuild can fix: not the super blocks, nor a journal
 * that cannot be read through. */
static int rebuild_helps(const struct rep *R)
{
	return !R->crep.journal_dirty && !R->codes[R4_CHK_MASTER] &&
	       !R->codes[R4_CHK_FORMAT40];
}

/* Whether this round goes straight to the tree rebuild (rounds: -y,
 * no rebuild yet, damage that blocks the other passes and that the
 * rebuild mends; blocked() then holds and the mends that read the
 * tables are not looked for) and the bounded check gave what the
 * rebuild reads of a check: its objects in the tables' order
 * (chk.ranked: rebuild_objs.c) and no stat data nobody names that
 * fits a key an entry names (chk.fixes_keys 0, its list whole: the
 * key plan, keys.c rep_named_keys, finds no move then). */
static int rebuild_listed(const struct rep *R)
{
	if (!R->c.has_ranked || R->o->mode != R4_REPAIR_FIX ||
	    R->r->rebuilt || !R->c.fixes_want || R->c.fixes_lost ||
	    R->c.fixes_keys || !rebuild_helps(R))
		return 0;
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++) {
		const struct r4_problem_info *pi = r4_problem_info(k);

		if (R->codes[k] && (!pi || pi->fix_class == R4_FIX_NONE ||
				    pi->fix_class == R4_FIX_REBUILD))
			return 1;
	}
	return 0;
}

/* What blocks this round, by the first code found that does: */
enum block_kind {
	BLOCK_NONE,
	BLOCK_JOURNAL,	/* a journal left to replay */
	BLOCK_TREE,	/* damage only the tree rebuild mends, or none does */
	BLOCK_PREEN	/* a code preen may not fix */
};

static enum block_kind first_block(const struct rep *R)
{
	int preen = R->o->mode == R4_REPAIR_PREEN;

	if (R->crep.journal_dirty)
		return BLOCK_JOURNAL;
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++) {
		const struct r4_problem_info *pi = r4_problem_info(k);

		if (!R->codes[k])
			continue;
		if (!pi || pi->fix_class == R4_FIX_NONE ||
		    pi->fix_class == R4_FIX_REBUILD ||
		    k == R4_CHK_MASTER || k == R4_CHK_FORMAT40)
			return BLOCK_TREE;
		if (preen && pi->fix_class != R4_FIX_PREEN)
			return BLOCK_PREEN;
	}
	return BLOCK_NONE;
}

/* Whether this round ends blocked, no rebuild after it (rounds: what
 * blocked() finds, without its marks: preen, or -y after its rebuild
 * or with damage a rebuild cannot mend): nothing reads the tables. */
static int stops_blocked(const struct rep *R)
{
	switch (first_block(R)) {
	case BLOCK_NONE:
		return 0;
	case BLOCK_TREE:
		return R->o->mode != R4_REPAIR_FIX || R->r->rebuilt ||
		       !rebuild_helps(R);
	default:
		return 1;
	}
}

/* A round's check: the bounded one first, so that a clean volume, or
 * one whose problems are space ones or those the check's list serves
 * (listed), is repaired in the memory of r4fsck -n, and so is a round
 * that stops blocked (stops_blocked) or rebuilds the tree from that
 * check (rebuild_listed); when a fix needs
 * the tables, the same check again building them, silently (it finds
 * the same problems). From then on every check builds them at once,
 * until a tree rebuild frees them (rounds): the memory is spent
 * already, and a bounded check before each would add its time to every
 * round. check.tables: tables from the first check, and always. */
static int run_check(struct rep *R, int first)
{
	int rc;

	R->r->rounds++;
	rc = check_once(R, first, R->tables);
	if (rc && R->spill_failed) {
		/* $TMPDIR cannot take the runs (a read-only root at boot, a
		 * full disk): the tables instead, in memory, as before the
		 * bounded check; what was said already is not said again
		 * (both kinds of check say the same in the same order). */
		R->tables = 1;
		R->no_runs = 1;
		R->skip = first ? R->forwarded : 0;
		r4i_error_clear(R->err);
		return check_once(R, first, 1);
	}
	/* a rebuild from the bounded check: its objects kept for it */
	if (!rc && R->crep.problems && rebuild_listed(R))
		return 0;
	chk_ranked_free(&R->c);
	if (rc || R->tables || !R->crep.problems || !tables_needed(R) ||
	    stops_blocked(R))
		return rc;
	R->tables = 1;
	/* the bounded check's runs are freed: their pages go back before
	 * the tables (mapped anew, large) are built */
	r4i_heap_trim();
	return check_once(R, 0, 1);
}

/* What this round found: 1 some code the mode may not fix (or that the
 * repair cannot fix after the open), 0 all fixable. */
static int blocked(struct rep *R)
{
	switch (first_block(R)) {
	case BLOCK_NONE:
		return 0;
	case BLOCK_PREEN:
		R->r->preen_refused = 1;
		return 1;
	default:
		R->r->tree_damaged = 1;
		return 1;
	}
}

/* The repair's passes after the tree, in the order of enum r4_fix_pass.
 * A round runs the first one it needs (one of the codes the problem
 * table gives it was found, or it always runs) and the next only when
 * that one changed nothing and does not end the round. Space and
 * counters come first (an object fix allocates blocks: the bitmaps must
 * be right for that), then blocks claimed twice (twice.c, it allocates
 * too), then the compressed-file layouts the kernel cannot take
 * (ccreg_layout.c; preen too: an item across a cluster end is cut before
 * the cluster pass would find its clusters unreadable), stat data keys
 * before names (keys.c: a stat data put back under the key its entry
 * gives keeps the entry, and out of /lost+found), compressed files
 * whose clusters or stat data disagree (ccreg_fix.c), then names and links
 * (objects.c). */
static const struct fix_pass {
	int pass;		/* enum r4_fix_pass */
	int fix_only;		/* -y only, never preen */
	int ends_round;		/* the round ends after it, changed or not */
	int always;		/* runs without a code of its own */
	int (*run)(struct rep *R, int *changed);
} fix_passes[] = {
	{ R4_PASS_SPACE, 0, 1, 0, rep_fix_space },
	{ R4_PASS_SHARED, 1, 1, 0, rep_fix_shared },
	{ R4_PASS_CC_LAYOUT, 0, 0, 0, rep_fix_ccreg_layout },
	{ R4_PASS_KEYS, 1, 0, 0, rep_fix_keys },
	{ R4_PASS_CC, 1, 0, 1, rep_fix_ccreg },
	{ R4_PASS_OBJECTS, 1, 0, 1, rep_fix_objects },
};

/* This round found a code whose row names the pass. */
static int pass_found(const struct rep *R, int pass)
{
	for (int k = 1; k < R4_CHK_CODE_COUNT; k++) {
		const struct r4_problem_info *pi = r4_problem_info(k);

		if (R->codes[k] && pi && pi->pass == pass)
			return 1;
	}
	return 0;
}

static int fix_round(struct rep *R, int *changed)
{
	int fix = R->o->mode == R4_REPAIR_FIX;

	for (size_t i = 0; i < sizeof(fix_passes) / sizeof(fix_passes[0]);
	     i++) {
		const struct fix_pass *p = &fix_passes[i];
		int rc;

		if ((p->fix_only && !fix) ||
		    (!p->always && !pass_found(R, p->pass)))
			continue;
		rc = p->run(R, changed);
		if (rc || *changed || p->ends_round)
			return rc;
	}
	return 0;
}

/* Whether damage the tree rebuild mends best is there: 1 yes, 0 no,
 * < 0 no memory to tell. */
static int rebuild_mends(struct rep *R)
{
	int mend = 0;

	if (!blocked(R) && R->o->mode == R4_REPAIR_FIX &&
	    !R->r->rebuilt && R->codes[R4_CHK_BODY])
		/* A body whose key lost its object: the rebuild mends the
		 * key (before a stat data made for the body would give the
		 * object id a second one). */
		mend = rep_body_key_damaged(R);
	if (!mend && !blocked(R) && R->o->mode == R4_REPAIR_FIX &&
	    !R->r->rebuilt && R->codes[R4_CHK_FILE_SIZE] &&
	    !R->c.fixes_want)
		/* Two files' bytes across a boundary an item offset moved:
		 * the rebuild moves them back (setting the sizes would cut
		 * one, pad one). Over the bounded check (no tables) the
		 * list named no two sizes that could be such a pair
		 * (chk.fixes_shift: else listed said no, and the tables
		 * were built). */
		mend = rep_bounds_shifted(R);
	return mend;
}

/* The list cannot serve a fix of this round (objects.c: listed_op):
 * the same check again, building the tables. */
static int tables_instead(struct rep *R)
{
	R->tables = 1;
	r4i_heap_trim();
	return check_once(R, 0, 1);
}

static int rounds(struct rep *R)
{
	int rc = 0;

	for (unsigned n = 0; n < ROUNDS_MAX; n++) {
		int changed = 0, mend;

		if (!R->crep.problems)
			break;
		mend = rebuild_mends(R);
		if (mend < 0)
			return r4i_fail(R->err, mend, "out of memory for the "
					"repair");
		if (mend || blocked(R)) {
			if (!mend && (!R->r->tree_damaged || R->r->rebuilt ||
				      R->o->mode != R4_REPAIR_FIX ||
				      !rebuild_helps(R)))
				break;
			R->r->rebuilt = 1;
			R->r->tree_damaged = 0;
			/* the rebuild frees the check's object and entry
			 * tables (rb_objs): after it, nothing but a new
			 * check may run */
			rc = rep_rebuild_tree(R, &changed);
			if (rc || !changed)
				break;
			/* The new tree's nodes, clean and unpinned since
			 * its commit (all of them when the volume had no
			 * room to write them ahead), leave the block cache
			 * with the slabs that held them, and what the
			 * rebuild freed goes back to the system: the check
			 * that follows reads every node again anyway, and
			 * its tables are mapped anew, not carved from that
			 * heap. */
			io_cache_trim(&R->vol->cache);
			r4i_heap_trim();
			/* The tables went with the rebuild: the checks after
			 * it are bounded again, their list serving what a
			 * rebuild leaves (entries, names, counts). */
			if (!R->no_runs)
				R->tables = R->o->check.tables;
			rc = run_check(R, 0);
			if (rc)
				break;
			continue;
		}
		rc = fix_round(R, &changed);
		if (rc == -EAGAIN && !R->tables && !(rc = tables_instead(R)))
			continue;	/* the same round over the tables */
		if (rc || !changed)
			break;
		rc = run_check(R, 0);
		if (rc)
			break;
	}
	return rc;
}

int r4_repair(struct r4_vol *vol, const struct r4_repair_opts *opts,
	      struct r4_repair_report *report, struct r4_error *err)
{
	struct rep R;
	int rc;

	memset(report, 0, sizeof(*report));
	memset(&R, 0, sizeof(R));
	R.vol = vol;
	R.o = opts;
	R.r = report;
	R.err = err;
	R.batch = opts->batch ? opts->batch : BATCH_DEFAULT;
	R.tables = opts->check.tables;
	if (opts->mode != R4_REPAIR_PREEN && opts->mode != R4_REPAIR_FIX)
		return r4i_fail(err, R4_EINVAL, "repair: unknown mode %d",
			       opts->mode);
	/* The bitmaps are rebuilt from what is in use: a damaged one is
	 * loaded, not refused (libimage/alloc/space.h). */
	vol->space.keep_bad = 1;
	rc = run_check(&R, 1);
	report->found = R.crep;
	memcpy(report->found_by_code, R.codes, sizeof(R.codes));
	if (!rc)
		rc = rounds(&R);
	report->left = R.crep;
	memcpy(report->left_by_code, R.codes, sizeof(R.codes));
	chk_release(&R.c);
	return rc;
}
