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
 * usage error. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/repair.h"
#include "fsck.h"
#include "r4/journal.h"
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


/* The journal could not be replayed: when that was the reason the
 * read-write open failed, say so and check read-only (the checker
 * reports the unreplayed transaction). */
static int fallback_readonly(const char *path, struct r4_vol **vol,
			     const struct r4_error *why)
{
	struct r4_error err = { 0 };

	if (r4_vol_open(path, r4cmd_open(R4_OPEN_RDONLY | r4cmd_lock_flags() |
			(opt_force ? R4_OPEN_FORCE : 0)), vol, &err))
		return 0;
	if (!r4_vol_journal_msg(*vol)[0]) {
		r4_vol_close(*vol, NULL);
		*vol = NULL;
		return 0;
	}
	if (mode <= 0 || opt_preen)
		r4cmd_warnf("cannot replay the journal: %s; checking without "
			    "it", why->msg);
	snprintf(replay_failure, sizeof(replay_failure), "%s", why->msg);
	return 1;
}

/* The default mode opens for writing only when it must: a volume whose
 * journal holds nothing to replay is checked read-only (so a read-only
 * image or device is checked, not refused). 1 when *vol is that
 * read-only volume; -1 when the image is in use (said on stderr). */
static int open_default_readonly(const char *path, struct r4_vol **vol)
{
	struct r4_error err = { 0 };

	if (mode != 0)
		return 0;
	if (r4_vol_open(path, r4cmd_open(R4_OPEN_RDONLY | r4cmd_lock_flags()), vol,
			&err)) {
		if (err.code != R4_EBUSY)
			return 0;
		r4cmd_error(&err, path, err.code);
		return -1;
	}
	if (!r4_vol_overlaid(*vol) && !r4_vol_journal_msg(*vol)[0])
		return 1;
	r4_vol_close(*vol, NULL);	/* there is a journal to replay */
	*vol = NULL;
	return 0;
}

/* Without -n the open replays the journal; with it the volume is opened
 * read-only and read through the journal. *rdonly tells which. */
static int open_volume(const char *path, struct r4_vol **vol, int *rdonly)
{
	struct r4_error err = { 0 };
	unsigned flags = (opt_check ? R4_OPEN_RDONLY : R4_OPEN_RDWR) |
			 r4cmd_lock_flags();
	int rc;

	*rdonly = opt_check;
	if (!opt_check && (rc = open_default_readonly(path, vol)) != 0) {
		if (rc < 0)
			return EXIT_OPERATIONAL;	/* in use */
		*rdonly = 1;
		r4cmd_lock_note(*vol);
		return EXIT_CLEAN;
	}
	rc = r4_vol_open(path, r4cmd_open(flags | (opt_force && opt_check ?
					R4_OPEN_FORCE : 0)), vol, &err);
	if (rc && !opt_check && err.code != R4_EBUSY &&
	    fallback_readonly(path, vol, &err)) {
		*rdonly = 1;
		return EXIT_CLEAN;
	}
	if (rc) {
		r4cmd_error(&err, path, rc);
		return EXIT_OPERATIONAL;
	}
	if (opt_check) {
		r4cmd_lock_note(*vol);
		overlaid = r4_vol_overlaid(*vol);
		if (r4_vol_journal_msg(*vol)[0])
			r4cmd_warnf("%s", r4_vol_journal_msg(*vol));
		if (overlaid && !opt_json && !r4cmd_quiet)
			printf("%s: %u committed transaction%s not replayed "
			       "(--check writes nothing): checking through "
			       "the journal\n", path, overlaid,
			       overlaid == 1 ? "" : "s");
		return EXIT_CLEAN;
	}
	replayed = r4_vol_replayed(*vol);
	if (replayed && !opt_json && !r4cmd_quiet)
		printf("%s: replayed %u transaction%s from the journal\n", path,
		       replayed, replayed == 1 ? "" : "s");
	return EXIT_CLEAN;
}

static int run_check(const char *path, struct r4_vol *vol)
{
	struct r4_check_opts o = { 0 };
	struct r4_check_report rep;
	struct r4_error err = { 0 };
	int rc;

	o.problem = on_problem;
	o.progress = on_progress;
	o.max_reports = (unsigned)opt_max_reports;
	r4cmd_env_check(&o);
	if (opt_json)
		json_begin();
	rc = r4_check(vol, &o, &rep, &err);
	if (rc) {
		r4cmd_error(&err, path, rc);
		json_fail_open();
		r4_vol_close(vol, NULL);
		return EXIT_OPERATIONAL;
	}
	r4_vol_close(vol, NULL);
	if (opt_json)
		print_json_end(path, &rep);
	else if (!r4cmd_quiet || rep.problems)
		print_summary(path, &rep);
	if (rep.problems && !opt_json)
		printf("%s: to repair it: r4fsck -y (-p makes only the fixes "
		       "that are safe without asking)\n", path);
	if (rep.problems)
		return EXIT_UNCORRECTED;
	return replayed ? EXIT_CORRECTED : EXIT_CLEAN;
}


static int run_repair(const char *path, struct r4_vol *vol)
{
	struct r4_repair_opts o = { 0 };
	struct r4_repair_report rep;
	struct r4_error err = { 0 };
	int rc;

	o.mode = opt_preen ? R4_REPAIR_PREEN : R4_REPAIR_FIX;
	o.check.problem = on_problem;
	o.check.progress = on_progress;
	o.check.max_reports = (unsigned)opt_max_reports;
	o.action = on_action;
	if (opt_batch > 0)
		o.batch = (unsigned)opt_batch;
	r4cmd_env_vol(vol);
	if (opt_json)
		json_begin();
	rc = r4_repair(vol, &o, &rep, &err);
	if (rc) {
		r4cmd_error(&err, path, rc);
		json_fail_open();
		r4_vol_close(vol, NULL);
		return EXIT_OPERATIONAL;
	}
	rc = r4_vol_close(vol, &err);
	if (rc) {
		r4cmd_error(&err, path, rc);
		json_fail_open();
		return EXIT_OPERATIONAL;
	}
	if (opt_json)
		print_repair_json_end(path, &rep);
	else if (!r4cmd_quiet || rep.left.problems)
		print_repair_summary(path, &rep);
	if (rep.left.problems)
		return EXIT_UNCORRECTED;
	return rep.found.problems || replayed || npre_done ? EXIT_CORRECTED
							   : EXIT_CLEAN;
}

/* Check and default modes: a master or format40 super block that fails
 * its checks while a backup copy is intact is a problem to report (exit
 * 4, r4fsck -y restores it), not an open failure. -1 when the super
 * blocks are good (or nothing can be said: the open reports it). */
static int damaged_supers(const char *path)
{
	struct r4_error err = { 0 };
	int damaged = 0;

	if (r4_repair_super_probe(path, 0, on_pre_problem, NULL, &damaged,
				  r4cmd_open(r4cmd_lock_flags()), &err)) {
		if (err.code != R4_EBUSY)
			return -1;	/* the open says what is wrong */
		r4cmd_error(&err, path, err.code);
		return EXIT_OPERATIONAL;
	}
	if (!damaged)
		return -1;
	print_pre_only(path);
	return EXIT_UNCORRECTED;
}

/* An image shorter than its block count: -y extends an image file
 * (exit 8 on a device); preen and the check modes report it as damage
 * (4, as fsck(8) says of a volume left uncorrected). -1 when the size
 * is right or -y extended it. */
static int truncated(const char *path)
{
	struct r4_error err = { 0 };
	uint64_t missing = 0;
	int rc;

	if (r4_repair_size(path, 0, on_pre_problem, NULL, &missing,
			   r4cmd_open(r4cmd_lock_flags()), &err)) {
		if (err.code != R4_EBUSY)
			return -1;
		r4cmd_error(&err, path, err.code);
		return EXIT_OPERATIONAL;
	}
	if (!missing)
		return -1;
	if (mode <= 0) {
		print_pre_only(path);
		if (!opt_json)
			printf("%s: to repair it: r4fsck -y (extends the "
			       "image file to its block count)\n", path);
		return EXIT_UNCORRECTED;
	}
	if (opt_preen) {
		print_pre_only(path);
		if (!opt_json)
			printf("%s: UNEXPECTED INCONSISTENCY: problems preen "
			       "may not fix (truncated); nothing was changed: "
			       "run r4fsck -y\n", path);
		return EXIT_UNCORRECTED;
	}
	rc = r4_repair_size(path, 1, on_pre_action, NULL, &missing,
			    r4cmd_open(r4cmd_lock_flags()), &err);
	if (rc) {
		r4cmd_error(&err, path, rc);
		return EXIT_OPERATIONAL;
	}
	return -1;
}

static int run(const char *path)
{
	struct r4_vol *vol;
	int rc, rdonly;

	if (mode <= 0 && (rc = damaged_supers(path)) >= 0)
		return rc;

	if (opt_undo_save) {
		struct r4_error err = { 0 };

		rc = r4_undo_start(opt_undo_save, &err);
		if (rc) {
			r4cmd_error(&err, opt_undo_save, rc);
			return EXIT_OPERATIONAL;
		}
	}
	if (opt_build_sb || (mode > 0 && !opt_preen)) {
		struct r4_error err = { 0 };
		int fixed = 0;

		rc = r4_repair_super_probe(path, opt_build_sb, on_pre_problem,
					   NULL, &fixed, r4cmd_open(r4cmd_lock_flags()),
					   &err);
		if (!rc && fixed)
			rc = r4_repair_super(path, opt_build_sb, on_pre_action,
					     NULL, &fixed, r4cmd_open(r4cmd_lock_flags()),
					     &err);
		if (rc) {
			r4cmd_error(&err, path, rc);
			return EXIT_OPERATIONAL;
		}
	}
	if ((rc = truncated(path)) >= 0)
		return rc;
	rc = open_volume(path, &vol, &rdonly);
	if (rc)
		return rc;
	if (rdonly && mode > 0 && !opt_preen) {
		/* The journal cannot be replayed: drop its unreadable
		 * transaction, then open again. */
		struct r4_error err = { 0 };

		r4_vol_close(vol, NULL);
		rc = r4_repair_journal_drop(path, on_pre_problem,
					    on_pre_action, NULL,
					    r4cmd_open(r4cmd_lock_flags()), &err);
		if (rc) {
			r4cmd_error(&err, path, rc);
			return EXIT_OPERATIONAL;
		}
		rc = open_volume(path, &vol, &rdonly);
		if (rc)
			return rc;
		if (rdonly) {
			r4_vol_close(vol, NULL);
			r4cmd_errorf("%s: the journal still cannot be "
				     "replayed", path);
			return EXIT_OPERATIONAL;
		}
	}
	if (mode <= 0 || rdonly)
		return run_check(path, vol);
	return run_repair(path, vol);
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
	int rc;

	r4cmd_init(argv[0]);
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
	if (rc == EXIT_CLEAN && opt_verify) {
		rc = opt_check || opt_preen || opt_yes || opt_fix ||
		     opt_build_fs || opt_build_sb || opt_undo_save ||
		     opt_undo_restore ? fsck_usage("--verify") :
		     fsck_verify(path, opt_verify, opt_json);
		poptFreeContext(ctx);
		return r4cmd_json_exit(rc);
	}
	if (rc == EXIT_CLEAN && opt_undo_restore) {
		if (opt_check || opt_preen || opt_yes || opt_fix ||
		    opt_build_fs || opt_build_sb || opt_undo_save) {
			r4cmd_errorf("--undo takes no other mode");
			rc = EXIT_USAGE;
		} else {
			rc = run_undo(path);
		}
		poptFreeContext(ctx);
		return r4cmd_json_exit(rc);
	}
	if (rc == EXIT_CLEAN)
		rc = get_mode();
	if (rc == EXIT_CLEAN)
		rc = run(path);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
