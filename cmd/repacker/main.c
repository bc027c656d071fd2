/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4repacker: lay a Reiser4 volume out again the way r4pack create
 * would, offline, in crash-safe batches (one transaction each), within
 * an optional time budget; or (-n) report what it would do and the
 * volume's fragmentation as measurefs.reiser4 computes it.
 *
 * Exit codes: 0 packed (or nothing to do); 1 failed (the volume is as
 * after the last committed batch); 2 bad command line; 3 time limit
 * reached with work left (run again to continue). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/r4.h"
#include "r4/repack.h"
#include "r4/check.h"
#include "../common/common.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_TIME = 3 };

static int opt_dry, opt_json;
static char *opt_batch, *opt_time, *opt_gain, *opt_file;

static struct poptOption repack_options[] = {
	{ "dry-run", 'n', POPT_ARG_NONE, &opt_dry, 0,
	  "report what a run would do and the fragmentation; change "
	  "nothing", NULL },
	{ "batch", 'b', POPT_ARG_STRING, &opt_batch, 0,
	  "blocks moved per transaction (default 512)", "N" },
	{ "time-limit", 't', POPT_ARG_STRING, &opt_time, 0,
	  "stop at the first batch boundary after SECONDS (exit 3 when "
	  "work is left)", "SECONDS" },
	{ "min-gain", 'g', POPT_ARG_STRING, &opt_gain, 0,
	  "do nothing when less than this fraction of the tree's blocks "
	  "is out of place (default 0)", "FRACTION" },
	{ "file-frag", 'F', POPT_ARG_STRING, &opt_file, 0,
	  "also report the fragmentation of this file or directory",
	  "PATH" },
	{ "json", 'j', POPT_ARG_NONE, &opt_json, 0,
	  "print the report and the summary as one JSON object", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_lock_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_progress_options, 0,
	  NULL, NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

static const char *outcome_name(enum r4_repack_outcome o)
{
	switch (o) {
	case R4_REPACK_DONE: return "packed";
	case R4_REPACK_NOTHING: return "nothing_to_do";
	case R4_REPACK_NOT_WORTH: return "below_min_gain";
	default: return "time_limit";
	}
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	r4cmd_progress("repacking", done < total ? done : total, total);
}

struct report {
	const char *path;
	struct r4_frag before, after;
	int have_after;
	struct r4_frag_obj worst[R4_REPACK_WORST], file;
	size_t nworst;
	struct r4_repack_result res;
};

static void json_frag(const char *name, const struct r4_frag *f)
{
	printf(",\"%s\":{\"tree\":%.6f,\"tree_bad\":%llu,"
	       "\"tree_blocks\":%llu,\"data\":%.6f,\"objects\":%llu}",
	       name, f->tree, (unsigned long long)f->tree_bad,
	       (unsigned long long)f->tree_total, f->data,
	       (unsigned long long)f->objects);
}

static void json_obj(const struct r4_frag_obj *o)
{
	printf("{\"oid\":");
	r4cmd_json_u64(o->oid);
	putchar(',');
	r4cmd_json_name("path", o->path, strlen(o->path));
	printf(",\"fragmentation\":%.6f,\"bad\":%llu,\"blocks\":%llu}",
	       o->ratio, (unsigned long long)o->bad,
	       (unsigned long long)o->total);
}

static void print_json(const struct report *r)
{
	const struct r4_repack_plan *p = &r->res.plan;

	r4cmd_json_begin("repack", R4CMD_JSON_SCHEMA);
	putchar(',');
	r4cmd_json_name("image", r->path, strlen(r->path));
	printf(",\"dry_run\":%s,\"outcome\":\"%s\"",
	       opt_dry ? "true" : "false",
	       opt_dry ? "planned" : outcome_name(r->res.outcome));
	printf(",\"plan\":{\"tree_blocks\":%llu,\"elements\":%llu,"
	       "\"blocks_to_move\":%llu,\"elements_to_move\":%llu,"
	       "\"free_blocks\":%llu,\"free_needed\":%llu,"
	       "\"gain\":%.6f,\"batch_asked\":%llu,\"batch\":%llu,"
	       "\"batch_cut\":%s,\"enough_space\":%s}",
	       (unsigned long long)p->tree_blocks,
	       (unsigned long long)p->elements,
	       (unsigned long long)p->misplaced_blocks,
	       (unsigned long long)p->misplaced_elements,
	       (unsigned long long)p->free_blocks,
	       (unsigned long long)p->free_needed, p->gain,
	       (unsigned long long)p->batch_asked,
	       (unsigned long long)p->batch,
	       p->batch < p->batch_asked ? "true" : "false",
	       p->too_little ? "false" : "true");
	json_frag("before", &r->before);
	if (r->have_after)
		json_frag("after", &r->after);
	fputs(",\"worst\":[", stdout);
	for (size_t i = 0; i < r->nworst; i++) {
		if (i)
			putchar(',');
		json_obj(&r->worst[i]);
	}
	putchar(']');
	if (opt_file) {
		fputs(",\"file\":", stdout);
		json_obj(&r->file);
	}
	printf(",\"blocks_moved\":%llu,\"blocks_evicted\":%llu,"
	       "\"transactions\":%llu,\"seconds\":%.3f",
	       (unsigned long long)r->res.moved,
	       (unsigned long long)r->res.evicted,
	       (unsigned long long)r->res.batches, r->res.seconds);
}

static void print_frag(const char *what, const struct r4_frag *f)
{
	printf("%s: tree fragmentation (-T) %.6f (%llu of %llu), data "
	       "fragmentation (-D) %.6f over %llu objects\n", what, f->tree,
	       (unsigned long long)f->tree_bad,
	       (unsigned long long)f->tree_total, f->data,
	       (unsigned long long)f->objects);
}

/* What the free space does to the batch size: cut, or too little. */
static void print_batch(const struct report *r)
{
	const struct r4_repack_plan *p = &r->res.plan;

	if (p->too_little)
		printf("%s: too little free space: %llu free blocks, a batch "
		       "of %llu blocks and its log need up to %llu (%llu "
		       "more; r4resize can grow the volume)%s\n", r->path,
		       (unsigned long long)p->free_blocks,
		       (unsigned long long)p->batch,
		       (unsigned long long)p->free_needed,
		       (unsigned long long)(p->free_needed - p->free_blocks),
		       opt_dry ? ": a run would be refused" : "");
	else if (p->batch < p->batch_asked)
		printf("%s: batch of %llu blocks cut to %llu: %llu free "
		       "blocks hold no larger batch and its log\n", r->path,
		       (unsigned long long)p->batch_asked,
		       (unsigned long long)p->batch,
		       (unsigned long long)p->free_blocks);
}

static void print_text(const struct report *r)
{
	const struct r4_repack_plan *p = &r->res.plan;

	if (r4cmd_quiet)
		return;
	if (opt_dry || r4cmd_verbose) {
		printf("%s: %llu tree blocks (%llu nodes and extents), %llu "
		       "blocks to move (%llu nodes and extents); %llu free, a "
		       "batch needs %llu\n", r->path,
		       (unsigned long long)p->tree_blocks,
		       (unsigned long long)p->elements,
		       (unsigned long long)p->misplaced_blocks,
		       (unsigned long long)p->misplaced_elements,
		       (unsigned long long)p->free_blocks,
		       (unsigned long long)p->free_needed);
		print_frag(r->path, &r->before);
		for (size_t i = 0; i < r->nworst; i++)
			printf("  %.6f (%llu of %llu) oid %llu %s\n",
			       r->worst[i].ratio,
			       (unsigned long long)r->worst[i].bad,
			       (unsigned long long)r->worst[i].total,
			       (unsigned long long)r->worst[i].oid,
			       r->worst[i].path);
	}
	if (p->misplaced_blocks && r->res.outcome != R4_REPACK_NOTHING &&
	    r->res.outcome != R4_REPACK_NOT_WORTH)
		print_batch(r);
	if (opt_file)
		printf("Fragmentation for %s is %.6f\n", r->file.path,
		       r->file.ratio);
	if (opt_dry)
		return;
	switch (r->res.outcome) {
	case R4_REPACK_NOTHING:
		printf("%s: nothing to do (packed already)\n", r->path);
		return;
	case R4_REPACK_NOT_WORTH:
		printf("%s: nothing to do (%.6f of the blocks out of place, "
		       "below --min-gain)\n", r->path, p->gain);
		return;
	default:
		break;
	}
	printf("%s: %s: moved %llu blocks (%llu out of the way) in %llu "
	       "transactions, %.2f s\n", r->path,
	       r->res.outcome == R4_REPACK_DONE ? "packed" :
	       "time limit reached, run again to continue",
	       (unsigned long long)r->res.moved,
	       (unsigned long long)r->res.evicted,
	       (unsigned long long)r->res.batches, r->res.seconds);
	if (r->have_after)
		printf("%s: fragmentation -T %.6f -> %.6f, -D %.6f -> %.6f\n",
		       r->path, r->before.tree, r->after.tree, r->before.data,
		       r->after.data);
}

static int measure(struct r4_vol *vol, struct report *r, int after,
		   struct r4_error *err)
{
	if (after)
		return r4_frag_measure(vol, &r->after, NULL, 0, NULL, err);
	if (opt_file && r4_frag_file(vol, opt_file, &r->file, err))
		return -1;
	return r4_frag_measure(vol, &r->before, r->worst, R4_REPACK_WORST,
			       &r->nworst, err);
}

/* The volume is checked as r4fsck -n checks it before anything is
 * measured, planned or moved, whatever the mode (cmd/common: r4cmd_sound). */
static int sound(struct r4_vol *vol, const char *path, struct r4_error *err)
{
	return r4cmd_sound(vol, path, "repacked", err);
}

static int run(const char *path, const struct r4_repack_opts *o)
{
	struct r4_error err = { 0 };
	struct report *r = calloc(1, sizeof(*r));
	struct r4_vol *vol = NULL;
	int rc, ex = EXIT_FAILED, report = opt_json || !r4cmd_quiet;

	if (!r) {
		r4cmd_errorf("out of memory");
		return EXIT_FAILED;
	}
	r->path = path;
	rc = r4_vol_open(path, r4cmd_open((opt_dry ? R4_OPEN_RDONLY : R4_OPEN_RDWR) |
			 r4cmd_lock_flags()), &vol, &err);
	if (rc) {
		ex = r4cmd_busy_exit(&err, EXIT_FAILED);
	} else {
		r4cmd_lock_note(vol);
		r4cmd_env_vol(vol);
		rc = sound(vol, path, &err);
	}
	/* -q prints no report: no fragmentation figures to measure (their
	 * table of objects is what grows with the files, not the repack) */
	if (!rc && report)
		rc = measure(vol, r, 0, &err);
	if (!rc)
		rc = r4_repack(vol, o, &r->res, &err);
	if (!rc && report && !opt_dry &&
	    (r->res.outcome == R4_REPACK_DONE ||
	     r->res.outcome == R4_REPACK_TIME_LIMIT)) {
		rc = measure(vol, r, 1, &err);
		r->have_after = !rc;
	}
	if (r4cmd_progress_enabled() && !opt_dry)
		fputs("\r\033[K", stderr);
	if (rc) {
		r4cmd_error(&err, path, rc);
	} else {
		ex = r->res.outcome == R4_REPACK_TIME_LIMIT ? EXIT_TIME : EXIT_OK;
		if (opt_json) {
			print_json(r);
			r4cmd_json_end();
		} else {
			print_text(r);
		}
	}
	if (r4_vol_close(vol, rc ? NULL : &err) && !rc) {
		r4cmd_error(&err, path, -1);
		ex = EXIT_FAILED;
	}
	free(r);
	return ex;
}

static int number(const char *opt, const char *s, double lo, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (!*s || *end || !(*out >= lo) || *out > 1e15) {
		r4cmd_errorf("%s: '%s' is not a number >= %g", opt, s, lo);
		return -1;
	}
	return 0;
}

static int options(poptContext ctx, struct r4_repack_opts *o,
		   const char **path)
{
	const char *extra;
	double v;

	*path = poptGetArg(ctx);
	extra = poptGetArg(ctx);
	if (!*path) {
		r4cmd_errorf("no device or image file given");
		fprintf(stderr, "Usage: %s [OPTION...] IMAGE|DEVICE\n",
			r4cmd_prog);
		return -1;
	}
	if (extra) {
		r4cmd_errorf("unexpected argument '%s' (one volume at a "
			     "time)", extra);
		return -1;
	}
	if (opt_batch) {
		if (number("--batch", opt_batch, 1, &v) || v != (uint64_t)v) {
			r4cmd_errorf("--batch wants a whole number of blocks");
			return -1;
		}
		o->batch = (uint64_t)v;
	}
	if (opt_time && number("--time-limit", opt_time, 0, &o->time_limit))
		return -1;
	if (opt_gain && (number("--min-gain", opt_gain, 0, &o->min_gain) ||
			 o->min_gain > 1)) {
		r4cmd_errorf("--min-gain wants a fraction from 0 to 1");
		return -1;
	}
	if (r4cmd_lock_parse(-1) || r4cmd_progress_parse(-1))
		return -1;
	o->dry_run = opt_dry;
	r4cmd_progress_kind("repack", "blocks");
	if (r4cmd_progress_wanted())
		o->progress = on_progress;
	return 0;
}

int main(int argc, const char **argv)
{
	struct r4_repack_opts o;
	const char *path = NULL;
	poptContext ctx;
	int rc;

	r4cmd_init(argv[0]);
	r4cmd_wait_argv(argc, argv);
	r4_repack_opts_init(&o);
	ctx = poptGetContext(r4cmd_prog, argc, argv, repack_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] IMAGE|DEVICE");
	while ((rc = poptGetNextOpt(ctx)) > 0)
		;
	if (opt_json)
		r4cmd_json_start(stdout);
	if (rc < -1) {
		rc = r4cmd_popt_error(ctx, rc, EXIT_USAGE);
		poptFreeContext(ctx);
		return r4cmd_json_exit(rc);
	}
	if (r4cmd_show_version) {
		r4cmd_print_version();
		poptFreeContext(ctx);
		return EXIT_OK;
	}
	rc = options(ctx, &o, &path) ? EXIT_USAGE :
	     r4cmd_window_parse(path, EXIT_USAGE, EXIT_FAILED);
	if (!rc)
		rc = run(path, &o);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
