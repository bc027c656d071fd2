/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4fsck: check and repair a Reiser4 (format40) volume in an image file
 * or on a block device, with fsck(8)'s modes:
 *
 *   -n, --check   check only, writing nothing (a pending transaction is
 *                 read through the journal in memory);
 *   (no mode)     replay the journal, then check;
 *   -p, -a        preen: fix what is safe without a question (space,
 *                 counters, status block, backups, the journal), and only
 *                 when nothing else is wrong;
 *   -y, --fix     fix everything the repair knows how to fix;
 *   --build-fs    as -y (tree damage makes it rebuild the tree);
 *   --build-sb    restore the super blocks from the backup copies, then -y;
 *   -z FILE       save the old contents of every block written to FILE;
 *   --undo FILE   put them back (r4fsck --undo FILE IMAGE).
 *
 * Exit codes (fsck(8)): 0 no problems; 1 problems corrected (or
 * transactions replayed) and none left; 4 problems left uncorrected; 8
 * operational error (cannot open, replay, read or write the volume); 16
 * usage error. What each mode does is r4_fsck()'s passes (libimage/repair);
 * this file reads the options and renders the outcome. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_MALLOPT
#include <malloc.h>
#endif
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/repair.h"
#include "fsck.h"
#include "../common/common.h"

int opt_json, opt_preen, opt_max_reports;
static int opt_check, opt_yes, opt_force;
static int opt_fix, opt_build_fs, opt_build_sb, opt_batch;
static char *opt_undo_save, *opt_undo_restore, *opt_verify;

static struct poptOption fsck_options[] = {
	{ "check", 'c', POPT_ARG_NONE, &opt_check, 0,
	  "check only, writing nothing (the journal is read through, not "
	  "replayed)", NULL },
	{ NULL, 'n', POPT_ARG_NONE, &opt_check, 0,
	  "the same as --check", NULL },
	{ "preen", 'p', POPT_ARG_NONE, &opt_preen, 0,
	  "fix what is safe without a question (space, counters, status "
	  "block, backups, journal); exit 4 if anything else is wrong", NULL },
	{ NULL, 'a', POPT_ARG_NONE, &opt_preen, 0, "the same as -p", NULL },
	{ "yes", 'y', POPT_ARG_NONE, &opt_yes, 0,
	  "fix every problem the repair can fix", NULL },
	{ "fix", '\0', POPT_ARG_NONE, &opt_fix, 0,
	  "the same as -y", NULL },
	{ "build-fs", '\0', POPT_ARG_NONE, &opt_build_fs, 0,
	  "the same as -y (tree damage makes it rebuild the tree)", NULL },
	{ "build-sb", '\0', POPT_ARG_NONE, &opt_build_sb, 0,
	  "restore the master and format40 super blocks from the backup "
	  "copies, then as -y", NULL },
	{ "undo-file", 'z', POPT_ARG_STRING, &opt_undo_save, 0,
	  "save the old contents of every block the repair writes to FILE",
	  "FILE" },
	{ "undo", '\0', POPT_ARG_STRING, &opt_undo_restore, 0,
	  "put back the blocks saved in FILE by -z (r4fsck --undo FILE "
	  "IMAGE)", "FILE" },
	{ "json", 'j', POPT_ARG_NONE, &opt_json, 0,
	  "print one JSON object with the counts, the problems and the "
	  "repairs", NULL },
	{ "force", 'f', POPT_ARG_NONE, &opt_force, 0,
	  "check even a clean volume (r4fsck always does); with -n, also a "
	  "mounted device", NULL },
	{ "batch", '\0', POPT_ARG_INT, &opt_batch, 0,
	  "at most N fixes per repair transaction (default 128)", "N" },
	{ "max-reports", 'm', POPT_ARG_INT, &opt_max_reports, 0,
	  "print at most N problems (they are all counted; 0 = all)", "N" },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_lock_options, 0,
	  "Locking:", NULL },
	{ "verify", '\0', POPT_ARG_STRING, &opt_verify, 0,
	  "read-only: compare every regular file with a manifest "
	  "(r4pack --manifest, sha256sum's format); exit 64 when one "
	  "differs, is missing or is new", "MANIFEST" },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_progress_options, 0,
	  NULL, NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

/* The mode asked for: 0 check (after replay), -1 check only (-n). */
int mode;
/* Why the journal could not be replayed (the open's error). */
char replay_failure[R4_ERRMSG_MAX];

/* What the passes of r4_fsck tell as they go. */
static void on_note(void *ctx, int note, uint64_t n, const char *msg)
{
	const char *path = ctx;

	switch (note) {
	case R4_FSCK_NOTE_LOCK:
	case R4_FSCK_NOTE_JOURNAL:
		r4cmd_warnf("%s", msg);
		break;
	case R4_FSCK_NOTE_NO_REPLAY:
		if (mode <= 0 || opt_preen)
			r4cmd_warnf("cannot replay the journal: %s; checking "
				    "without it", msg);
		snprintf(replay_failure, sizeof(replay_failure), "%s", msg);
		break;
	case R4_FSCK_NOTE_OVERLAID:
		overlaid = (unsigned)n;
		if (!opt_json && !r4cmd_quiet)
			printf("%s: %u committed transaction%s not replayed "
			       "(--check writes nothing): checking through "
			       "the journal\n", path, overlaid,
			       overlaid == 1 ? "" : "s");
		break;
	case R4_FSCK_NOTE_REPLAYED:
		replayed = (unsigned)n;
		if (!opt_json && !r4cmd_quiet)
			printf("%s: replayed %u transaction%s from the "
			       "journal\n", path, replayed,
			       replayed == 1 ? "" : "s");
		break;
	case R4_FSCK_NOTE_BEGIN:
		if (opt_json)
			json_begin();
		break;
	default:
		break;
	}
}

static int checked(const char *path, const struct r4_check_report *rep)
{
	if (opt_json)
		print_json_end(path, rep);
	else if (!r4cmd_quiet || rep->problems)
		print_summary(path, rep);
	if (rep->problems && !opt_json)
		printf("%s: to repair it: r4fsck -y (-p makes only the fixes "
		       "that are safe without asking)\n", path);
	if (rep->problems)
		return EXIT_UNCORRECTED;
	return replayed ? EXIT_CORRECTED : EXIT_CLEAN;
}

static int repaired(const char *path, const struct r4_repair_report *rep)
{
	if (opt_json)
		print_repair_json_end(path, rep);
	else if (!r4cmd_quiet || rep->left.problems)
		print_repair_summary(path, rep);
	if (rep->left.problems)
		return EXIT_UNCORRECTED;
	return rep->found.problems || replayed || npre_done ? EXIT_CORRECTED
							    : EXIT_CLEAN;
}

/* An image shorter than its block count, left as it is (check modes
 * and preen; -y extends an image file). */
static int truncated(const char *path)
{
	print_pre_only(path);
	if (opt_json)
		return EXIT_UNCORRECTED;
	if (mode <= 0)
		printf("%s: to repair it: r4fsck -y (extends the image file "
		       "to its block count)\n", path);
	else
		printf("%s: UNEXPECTED INCONSISTENCY: problems preen may not "
		       "fix (truncated); nothing was changed: run r4fsck "
		       "-y\n", path);
	return EXIT_UNCORRECTED;
}

static void fill_opts(struct r4_fsck_opts *o, const char *path)
{
	int fix = opt_yes || opt_fix || opt_build_fs || opt_build_sb;

	o->mode = opt_check ? R4_FSCK_CHECK : opt_preen ? R4_FSCK_PREEN :
		  fix ? R4_FSCK_FIX : R4_FSCK_DEFAULT;
	o->build_sb = opt_build_sb;
	o->force = opt_force;
	o->open = *r4cmd_open(r4cmd_lock_flags());
	o->undo_file = opt_undo_save;
	o->repair.check.problem = on_problem;
	o->repair.check.progress = on_progress;
	o->repair.check.max_reports = (unsigned)opt_max_reports;
	r4cmd_env_repair(&o->repair);
	o->repair.action = on_action;
	if (opt_batch > 0)
		o->repair.batch = (unsigned)opt_batch;
	o->pre_problem = on_pre_problem;
	o->pre_action = on_pre_action;
	o->note = on_note;
	o->ctx = (void *)path;
	o->set_clock = r4cmd_source_date(&o->clock);
}

static int run(const char *path)
{
	static struct r4_fsck_report rep;
	struct r4_fsck_opts o = { 0 };
	struct r4_error err = { 0 };
	int rc;

	fill_opts(&o, path);
	rc = r4_fsck(path, &o, &rep, &err);
	/* for tests and bench/: which checks the repair ran */
	if (getenv("R4_FSCK_STATS") && *getenv("R4_FSCK_STATS"))
		fprintf(stderr, "r4fsck: stats: %llu rounds, %llu table "
			"checks\n", (unsigned long long)rep.repair.rounds,
			(unsigned long long)rep.repair.table_checks);
	if (rc) {
		r4cmd_error(&err, rep.err_path ? rep.err_path : path, rc);
		if (rep.begun)
			json_fail_open();
		/* No room for the tree rebuild on a full volume: the
		 * problems are left, not the run failed; say what earlier
		 * fixes changed all the same. Any other ENOSPC fails. */
		if (rc != R4_ENOSPC || !rep.repair.no_room)
			return EXIT_OPERATIONAL;
		if (npre_done || replayed)
			r4cmd_errorf("%s: kept: %u fixes before the open, %u "
				     "transactions replayed", path, npre_done,
				     replayed);
		return EXIT_UNCORRECTED;
	}
	switch (rep.outcome) {
	case R4_FSCK_SUPERS_DAMAGED:
		print_pre_only(path);
		return EXIT_UNCORRECTED;
	case R4_FSCK_TRUNCATED:
		return truncated(path);
	case R4_FSCK_CHECKED:
		return checked(path, &rep.check);
	default:
		return repaired(path, &rep.repair);
	}
}

static int get_path(poptContext ctx, const char **path)
{
	const char *extra;

	*path = poptGetArg(ctx);
	extra = poptGetArg(ctx);
	if (!*path) {
		r4cmd_errorf("no device or image file given");
		fprintf(stderr, "Usage: %s [OPTION...] DEVICE|IMAGE\n",
			r4cmd_prog);
		return EXIT_USAGE;
	}
	if (extra) {
		r4cmd_errorf("unexpected argument '%s' (one volume at a "
			     "time)", extra);
		return EXIT_USAGE;
	}
	if (opt_max_reports < 0) {
		r4cmd_errorf("--max-reports must not be negative");
		return EXIT_USAGE;
	}
	return r4cmd_window_parse(*path, EXIT_USAGE, EXIT_OPERATIONAL);
}

/* One mode at most: -n, -p, -y/--fix/--build-fs/--build-sb. */
static int get_mode(void)
{
	int fix = opt_yes || opt_fix || opt_build_fs || opt_build_sb;

	if ((opt_check != 0) + (opt_preen != 0) + (fix != 0) > 1) {
		r4cmd_errorf("choose one mode: -n (check), -p (preen) or -y "
			     "(fix)");
		return EXIT_USAGE;
	}
	if (opt_undo_save && (opt_check || !(opt_preen || fix))) {
		r4cmd_errorf("-z saves what a repair overwrites: use it with "
			     "-p or -y");
		return EXIT_USAGE;
	}
	mode = opt_check ? -1 : opt_preen || fix ? 1 : 0;
	return EXIT_CLEAN;
}

static int run_undo(const char *image)
{
	struct r4_error err = { 0 };
	struct r4_undo_info info;
	int rc = r4_undo_apply(opt_undo_restore, image, &info,
			       r4cmd_open(r4cmd_lock_flags()), &err);

	if (rc) {
		r4cmd_error(&err, image, rc);
		return EXIT_OPERATIONAL;
	}
	if (!info.one_step)
		fprintf(stderr, "%s: %s: so not as one step through the "
			"journal: put back block by block (a cut in between "
			"leaves a mix that a rerun of --undo finishes)\n",
			r4cmd_prog, info.why[0] ? info.why : image);
	if (opt_json)
		print_undo_json(image, opt_undo_restore, info.units,
				info.one_step);
	else if (!r4cmd_quiet)
		printf("%s: %llu block%s put back from %s%s\n", image,
		       (unsigned long long)info.units,
		       info.units == 1 ? "" : "s", opt_undo_restore,
		       info.one_step ? " as one step through the journal" :
				       "");
	return EXIT_CLEAN;
}

static int fsck_usage(const char *opt)
{
	r4cmd_errorf("%s takes no other mode", opt);
	return EXIT_USAGE;
}

int main(int argc, const char **argv)
{
	const char *path = NULL;
	poptContext ctx;
	int rc, other;

	r4cmd_init(argv[0]);
#if defined(HAVE_MALLOPT) && defined(M_MMAP_THRESHOLD)
	/* Allocations of 1 MiB and more mapped on their own, always: the C
	 * library's threshold otherwise grows to the largest block freed,
	 * so that the tables of a repair's check after the tree rebuild
	 * (one large array each) land in a heap the rebuild left in
	 * pieces, and their growth copies there (10^6 files, a leaf
	 * zeroed: 176 MiB peak instead of 216). */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
	r4cmd_wait_argv(argc, argv);
	ctx = poptGetContext(r4cmd_prog, argc, argv, fsck_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] DEVICE|IMAGE");
	while ((rc = poptGetNextOpt(ctx)) > 0)
		;
	if (rc < -1) {
		if (opt_json)
			r4cmd_json_start(stdout);
		rc = r4cmd_popt_error(ctx, rc, EXIT_USAGE);
		poptFreeContext(ctx);
		return r4cmd_json_exit(rc);
	}
	if (r4cmd_show_version) {
		r4cmd_print_version();
		poptFreeContext(ctx);
		return EXIT_CLEAN;
	}
	if (opt_json)
		r4cmd_json_start(stdout);
	rc = get_path(ctx, &path);
	if (rc == EXIT_CLEAN)
		rc = r4cmd_lock_parse(EXIT_USAGE);
	if (!rc)
		rc = r4cmd_progress_parse(EXIT_USAGE);
	other = opt_check || opt_preen || opt_yes || opt_fix ||
		opt_build_fs || opt_build_sb || opt_undo_save;
	if (rc == EXIT_CLEAN && opt_verify)
		rc = other || opt_undo_restore ? fsck_usage("--verify") :
		     fsck_verify(path, opt_verify, opt_json);
	else if (rc == EXIT_CLEAN && opt_undo_restore)
		rc = other ? fsck_usage("--undo") : run_undo(path);
	else if (rc == EXIT_CLEAN && (rc = get_mode()) == EXIT_CLEAN)
		rc = run(path);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
