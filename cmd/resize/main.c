/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4resize: grow or shrink a Reiser4 volume offline, crash-safe, with
 * resize2fs's habits (include/r4/resize.h).
 *
 * Exit codes: 0 resized (or already that size; -P and -n: reported);
 * 1 failed or refused (nothing changed, or for a shrink as after the
 * last committed batch of moves: run again); 2 bad command line;
 * 75 the image is busy. */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/resize.h"
#include "../common/common.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

static int opt_min, opt_print_min, opt_dry, opt_progress, opt_json;
static char *opt_batch;

static struct poptOption resize_options[] = {
	{ "minimum", 'M', POPT_ARG_NONE, &opt_min, 0,
	  "shrink the volume to its minimum size", NULL },
	{ "print-minimum", 'P', POPT_ARG_NONE, &opt_print_min, 0,
	  "print the minimum size (in blocks) and change nothing", NULL },
	{ "dry-run", 'n', POPT_ARG_NONE, &opt_dry, 0,
	  "say what would be done; change nothing", NULL },
	{ "progress", 'p', POPT_ARG_NONE, &opt_progress, 0,
	  "show progress on a terminal", NULL },
	{ "batch", 'b', POPT_ARG_STRING, &opt_batch, 0,
	  "shrink: blocks moved per transaction (default 512)", "N" },
	{ "json", 'j', POPT_ARG_NONE, &opt_json, 0,
	  "print the result as one JSON object", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_progress_options, 0,
	  "Progress:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_wait_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

static int progress_seen;

static void on_progress(void *ctx, const char *stage, uint64_t done,
			uint64_t total)
{
	(void)ctx;
	progress_seen = 1;
	/* --progress-fd: phase "moving" or "bitmaps", in blocks */
	r4cmd_progress_kind(stage, "blocks");
	r4cmd_progress(!strcmp(stage, "moving") ? "moving blocks" :
		       "writing bitmaps", done < total ? done : total, total);
}

/* First problem of the check (as r4repacker): a damaged volume is not
 * resized. */
/* The volume is checked as r4fsck -n checks it before anything is
 * measured, planned or moved, whatever the mode (cmd/common: r4cmd_sound). */
static int sound(struct r4_vol *vol, const char *path, struct r4_error *err)
{
	return r4cmd_sound(vol, path, "resized", err);
}

/* SIZE: blocks when only digits, else bytes with a K/M/G/T/P suffix,
 * rounded down to whole blocks (said on stderr). */
static int parse_target(const char *s, uint32_t bs, uint64_t *blocks)
{
	uint64_t bytes;
	size_t i = 0;

	while (s[i] && isdigit((unsigned char)s[i]))
		i++;
	if (i && !s[i]) {
		char *end;

		*blocks = strtoull(s, &end, 10);
		return *end ? -1 : 0;
	}
	if (r4cmd_parse_size(s, &bytes))
		return -1;
	*blocks = bytes / bs;
	if (bytes % bs && !r4cmd_quiet && !opt_json)
		fprintf(stderr, "%s: %s is not a multiple of the block size "
			"(%u bytes): rounded down to %llu blocks\n",
			r4cmd_prog, s, bs, (unsigned long long)*blocks);
	return 0;
}

static const char *verb(const struct r4_resize_result *r)
{
	if (r->new_blocks == r->old_blocks)
		return "unchanged";
	if (r->new_blocks > r->old_blocks)
		return opt_dry ? "would grow" : "grown";
	return opt_dry ? "would shrink" : "shrunk";
}

static void print_json(const char *path, const struct r4_resize_result *r)
{
	r4cmd_json_begin("resize", R4CMD_JSON_SCHEMA);
	putchar(',');
	r4cmd_json_name("image", path, strlen(path));
	printf(",\"dry_run\":%s,\"outcome\":\"%s\","
	       "\"block_size\":%u,\"old_blocks\":",
	       opt_dry || opt_print_min ? "true" : "false",
	       opt_print_min ? "minimum" :
	       r->new_blocks == r->old_blocks ? "unchanged" :
	       r->new_blocks > r->old_blocks ? "grow" : "shrink", r->blksize);
	r4cmd_json_u64(r->old_blocks);
	printf(",\"new_blocks\":");
	r4cmd_json_u64(r->new_blocks);
	printf(",\"min_blocks\":");
	r4cmd_json_u64(r->min_blocks);
	printf(",\"max_blocks\":");
	r4cmd_json_u64(r->max_blocks);
	printf(",\"device_blocks\":");
	r4cmd_json_u64(r->device_blocks);
	printf(",\"free_before\":");
	r4cmd_json_u64(r->free_before);
	printf(",\"free_after\":");
	r4cmd_json_u64(r->free_after);
	printf(",\"bitmaps\":[%llu,%llu],\"backups\":[%llu,%llu],"
	       "\"blocks_to_move\":%llu,\"blocks_moved\":%llu,"
	       "\"transactions_moving\":%llu",
	       (unsigned long long)r->bitmaps_before,
	       (unsigned long long)r->bitmaps_after,
	       (unsigned long long)r->backups_before,
	       (unsigned long long)r->backups_after,
	       (unsigned long long)r->to_move,
	       (unsigned long long)r->moved,
	       (unsigned long long)r->batches);
}

static void print_text(const char *path, const struct r4_resize_result *r)
{
	double mib = (double)r->blksize / (1024.0 * 1024.0);

	if (r4cmd_quiet)
		return;
	if (opt_print_min) {
		printf("%s: minimum size: %llu blocks (%.1f MiB); now %llu "
		       "blocks\n", path, (unsigned long long)r->min_blocks,
		       (double)r->min_blocks * mib,
		       (unsigned long long)r->old_blocks);
		return;
	}
	if (r->new_blocks == r->old_blocks) {
		printf("%s: already %llu blocks (%.1f MiB): nothing to do\n",
		       path, (unsigned long long)r->old_blocks,
		       (double)r->old_blocks * mib);
		return;
	}
	printf("%s: %s from %llu to %llu blocks (%.1f MiB to %.1f MiB)",
	       path, verb(r), (unsigned long long)r->old_blocks,
	       (unsigned long long)r->new_blocks,
	       (double)r->old_blocks * mib, (double)r->new_blocks * mib);
	if (opt_dry) {
		printf("; bitmap blocks %llu -> %llu, backup copies %llu -> "
		       "%llu", (unsigned long long)r->bitmaps_before,
		       (unsigned long long)r->bitmaps_after,
		       (unsigned long long)r->backups_before,
		       (unsigned long long)r->backups_after);
		if (r->to_move)
			printf(", %llu used blocks to move below the new end",
			       (unsigned long long)r->to_move);
		printf("\n");
		return;
	}
	printf("; %llu blocks free", (unsigned long long)r->free_after);
	if (r->moved)
		printf("; moved %llu blocks in %llu transactions",
		       (unsigned long long)r->moved,
		       (unsigned long long)r->batches);
	printf("\n");
}

/* The number of blocks to resize to beyond a SIZE given (*n): the
 * minimum (--min); the size now (--print-min: a dry run that reports the
 * minimum); with neither nor a SIZE, the device's length (an image file
 * keeps its length; a device is filled). */
static int pick_target(struct r4_vol *vol, const char *size,
		       const struct r4_super_info *si,
		       const struct r4_resize_opts *o, uint64_t *n,
		       struct r4_error *err)
{
	int rc = 0;

	if (opt_min || opt_print_min) {
		rc = r4_resize_min(vol, n, err);
		if (opt_print_min && !rc)
			*n = si->block_count;
	}
	if (!rc && !size && !opt_min && !opt_print_min) {
		/* keep an image file's length; fill a device */
		struct r4_resize_result probe;
		struct r4_resize_opts po = *o;

		po.dry_run = 1;
		rc = r4_resize(vol, si->block_count, &po, &probe, err);
		*n = probe.device_blocks;
	}
	return rc;
}

/* The progress events' end: nothing to move and no bitmap to write
 * still gives one event, "moving" 0 of 0 blocks, so a reader sees the
 * end. */
static void progress_done(int rc)
{
	r4cmd_progress_end();
	if (!rc && !progress_seen)
		r4cmd_progress_kind("moving", "blocks");
	if (!rc)
		r4cmd_progress_finish();
}

static void report(const char *path, const struct r4_resize_result *res)
{
	if (opt_json) {
		print_json(path, res);
		r4cmd_json_end();
	} else {
		print_text(path, res);
	}
}

static int run(const char *path, const char *size, uint64_t batch)
{
	struct r4_error err = { 0 };
	struct r4_resize_result res;
	struct r4_resize_opts o;
	struct r4_super_info si;
	struct r4_vol *vol = NULL;
	uint64_t n = 0;
	int rc, ex = EXIT_FAILED, ro = opt_dry || opt_print_min;

	memset(&res, 0, sizeof(res));
	r4_resize_opts_init(&o);
	o.dry_run = ro;
	if (batch)
		o.batch = batch;
	if ((opt_progress && r4cmd_progress_enabled() && !opt_json) ||
	    r4cmd_progress_events())
		o.progress = on_progress;
	rc = r4_vol_open(path, r4cmd_open((ro ? R4_OPEN_RDONLY : R4_OPEN_RDWR) |
			 r4cmd_lock_flags()), &vol, &err);
	if (rc) {
		r4cmd_error(&err, path, rc);
		return r4cmd_busy_exit(&err, EXIT_FAILED);
	}
	r4cmd_env_vol(vol);
	rc = sound(vol, path, &err);
	r4_vol_super(vol, &si);
	if (!rc && size && parse_target(size, si.blksize, &n)) {
		r4_vol_close(vol, NULL);
		r4cmd_errorf("'%s' is not a size (blocks, or bytes with a "
			     "K, M, G, T or P suffix)", size);
		return EXIT_USAGE;
	}
	if (!rc)
		rc = pick_target(vol, size, &si, &o, &n, &err);
	if (!rc)
		rc = r4_resize(vol, n, &o, &res, &err);
	if (o.progress)
		progress_done(rc);
	if (rc) {
		r4cmd_error(&err, path, rc);
	} else {
		ex = EXIT_OK;
		report(path, &res);
	}
	if (r4_vol_close(vol, rc ? NULL : &err) && !rc) {
		r4cmd_error(&err, path, -1);
		ex = EXIT_FAILED;
	}
	return ex;
}

/* The arguments: EXIT_OK, or EXIT_USAGE said. */
static int args(const char *path, const char *size, const char *extra,
		uint64_t *batch)
{
	char *end;

	if (!path) {
		r4cmd_errorf("no device or image file given");
		fprintf(stderr, "Usage: %s [OPTION...] IMAGE|DEVICE [SIZE]\n",
			r4cmd_prog);
		return EXIT_USAGE;
	}
	if (extra) {
		r4cmd_errorf("unexpected argument '%s'", extra);
		return EXIT_USAGE;
	}
	if (size && (opt_min || opt_print_min)) {
		r4cmd_errorf("a SIZE and %s exclude each other",
			     opt_min ? "-M" : "-P");
		return EXIT_USAGE;
	}
	if (!opt_batch)
		return EXIT_OK;
	*batch = strtoull(opt_batch, &end, 10);
	if (!*opt_batch || *end || !*batch) {
		r4cmd_errorf("--batch wants a whole number of blocks (at "
			     "least 1)");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int main(int argc, const char **argv)
{
	const char *path, *size, *extra;
	uint64_t batch = 0;
	poptContext ctx;
	int rc;

	r4cmd_init(argv[0]);
	r4cmd_wait_argv(argc, argv);
	ctx = poptGetContext(r4cmd_prog, argc, argv, resize_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] IMAGE|DEVICE [SIZE]");
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
	path = poptGetArg(ctx);
	size = poptGetArg(ctx);
	extra = poptGetArg(ctx);
	rc = args(path, size, extra, &batch);
	if (!rc && r4cmd_lock_parse(-1))
		rc = EXIT_USAGE;
	if (!rc && r4cmd_progress_parse(-1))
		rc = EXIT_USAGE;
	if (!rc)
		rc = r4cmd_window_parse(path, EXIT_USAGE, EXIT_FAILED);
	if (!rc)
		rc = run(path, size, batch);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
