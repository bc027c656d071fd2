/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4pack add: add or replace the entries of an archive or a directory
 * in an existing image, as one transaction (all or nothing). */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include "r4/edit.h"
#include "r4/resize.h"
#include "pack.h"

enum { OPT_ADD_EXCLUDE = 200, OPT_ADD_O, OPT_ADD_COMPRESS, OPT_ADD_GROW };

static int opt_json;
/* --grow[=MAX]: grow a regular image file when the add does not fit
 * (grow_max 0: without bound but the format's) */
static int opt_grow;
static uint64_t grow_max;
/* -o / --compress: plugins of new files (bit R4_PT_x: add_plug[x]) */
static uint16_t add_plug[R4_PT_COUNT];
static unsigned add_set;

static struct poptOption add_options[] = {
	{ "override", 'o', POPT_ARG_STRING, NULL, OPT_ADD_O,
	  "store new files with this plugin (create, compress, "
	  "compressMode, cluster; repeatable)", "TYPE=PLUGIN" },
	{ "compress", '\0', POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, NULL,
	  OPT_ADD_COMPRESS, "store new files compressed (ccreg40), as -o "
	  "create=ccreg40,compress=ALGO (default " COMPRESS_DEFAULT ")",
	  "lzo1|gzip1|zstd1" },
	{ "grow", '\0', POPT_ARG_STRING | POPT_ARGFLAG_OPTIONAL, NULL,
	  OPT_ADD_GROW, "when the add does not fit, grow the image file "
	  "first by what it needs (up to MAX bytes; K, M, G, T suffixes), "
	  "then add", "MAX" },
	{ "exclude", '\0', POPT_ARG_STRING, NULL, OPT_ADD_EXCLUDE,
	  "leave out entries matching PATTERN (repeatable)", "PATTERN" },
	{ "json", '\0', POPT_ARG_NONE, &opt_json, 0,
	  "print the summary as JSON", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pack_input_options, 0,
	  "Source:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pack_owner_options, 0,
	  "Ownership and times:", NULL },
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

struct add_job {
	const char *image;
	struct pack_srcs ps;
	int nospc_quiet;	/* --grow: an ENOSPC is retried, not said */
	struct r4_archive_opts ao;
	struct r4_archive_stats stats;
	struct r4_super_info before, after;
	struct r4_dir_scan *scan;	/* the first SOURCE's, by the precheck */
};

/* One -o spec: which members it names (r4_mkfs_override checks the
 * names; a member it sets is one the spec names). */
static int add_override(const char *opt, const char *spec)
{
	const unsigned ok = 1u << R4_PT_CREATE | 1u << R4_PT_COMPRESS |
			    1u << R4_PT_CMODE | 1u << R4_PT_CLUSTER;
	struct r4_error err = { 0 };
	struct r4_mkfs_opts o;

	r4_mkfs_opts_init(&o);
	for (int t = 0; t < R4_PT_COUNT; t++)
		o.plugin[t] = 0xffff;
	if (r4_mkfs_override(&o, spec, &err)) {
		r4cmd_error(&err, opt, err.code);
		return -1;
	}
	for (int t = 0; t < R4_PT_COUNT; t++) {
		if (o.plugin[t] == 0xffff)
			continue;
		if (!(ok & 1u << t)) {
			r4cmd_errorf("%s %s: only create, compress, "
				     "compressMode and cluster apply to the "
				     "files of an existing volume", opt, spec);
			return -1;
		}
		add_plug[t] = o.plugin[t];
		add_set |= 1u << t;
	}
	return 0;
}

static int parse_loop(poptContext ctx, struct r4_archive_opts *ao)
{
	struct r4_error err = { 0 };
	int rc;

	while ((rc = poptGetNextOpt(ctx)) > 0) {
		char *arg = poptGetOptArg(ctx);	/* ours to free */
		int own = pack_owner_opt(rc, arg, ao), bad = own < 0;

		if (!own && rc == OPT_ADD_O && add_override("-o", arg))
			bad = 1;
		if (!own && rc == OPT_ADD_COMPRESS) {
			char o[64];

			snprintf(o, sizeof(o), "create=ccreg40,compress=%s",
				 arg && *arg ? arg : COMPRESS_DEFAULT);
			if (add_override("--compress", o))
				bad = 1;
		}
		if (!own && rc == OPT_ADD_GROW) {
			opt_grow = 1;
			if (arg && *arg && (r4cmd_parse_size(arg, &grow_max) ||
					    !grow_max)) {
				r4cmd_errorf("--grow=%s: not a size (bytes, "
					     "K, M, G or T suffixes)", arg);
				bad = 1;
			}
		}
		if (!own && rc == OPT_ADD_EXCLUDE &&
		    r4_archive_add_exclude(ao, arg, &err)) {
			r4cmd_error(&err, "--exclude", err.code);
			bad = 1;
		}
		free(arg);
		if (bad)
			return EXIT_USAGE;
	}
	if (rc < -1)
		return r4cmd_popt_error(ctx, rc, EXIT_USAGE);
	return EXIT_OK;
}

static int args(poptContext ctx, struct add_job *j)
{
	int rc = pack_sources(ctx, "add", "IS", &j->ps);

	j->image = j->ps.image;
	if (!rc)
		rc = r4cmd_window_parse(j->image, EXIT_USAGE, EXIT_FAILED);
	return rc;
}

/* Standard input among the SOURCEs: it cannot be read twice. */
static int from_stdin(const struct add_job *j)
{
	for (size_t i = 0; i < j->ps.n; i++)
		if (!strcmp(j->ps.src[i], "-"))
			return 1;
	return 0;
}

/* What the source holds, roughly, in bytes: the regular files of a
 * directory (their blocks, and some for each entry), or an archive's
 * length; 0 when unknown (standard input). */
static uint64_t src_bytes;

static int sum_entry(const char *path, const struct stat *st, int flag,
		     struct FTW *f)
{
	(void)path;
	(void)f;
	if (flag == FTW_F && S_ISREG(st->st_mode))
		src_bytes += ((uint64_t)st->st_size + 4095) / 4096 * 4096;
	src_bytes += 256;	/* its stat data, entry, nodes */
	return 0;
}

static int sum_data(const char *path, const struct stat *st, int flag,
		    struct FTW *f)
{
	(void)path;
	(void)f;
	if (flag == FTW_F && S_ISREG(st->st_mode))
		src_bytes += (uint64_t)st->st_size;
	return 0;
}

/* The bytes of a directory's regular files: the total its progress
 * shows. */
static uint64_t dir_data_bytes(const char *dir)
{
	src_bytes = 0;
	nftw(dir, sum_data, 32, FTW_PHYS);
	return src_bytes;
}

static uint64_t source_bytes(const struct add_job *j)
{
	struct stat st;

	src_bytes = 0;
	for (size_t i = 0; i < j->ps.n; i++) {
		const char *s = j->ps.src[i];

		if (j->ps.is_dir[i])
			nftw(s, sum_entry, 32, FTW_PHYS);
		else if (strcmp(s, "-") && !stat(s, &st) &&
			 S_ISREG(st.st_mode))
			src_bytes += (uint64_t)st.st_size;
	}
	return src_bytes;
}

/* The blocks the add needs beyond the free ones, at least: the
 * source's estimate less what is free, and some for the journal. */
static uint64_t more_blocks(const struct add_job *j, uint64_t est)
{
	uint32_t bs = j->before.blksize ? j->before.blksize : 4096;
	uint64_t need = est / bs + est / bs / 32 + 256;

	return need > j->before.free_blocks ? need - j->before.free_blocks :
					       256;
}

/* After "no free block left": how much more the add needs, and the two
 * ways to get it. */
static void nospc_hint(void *ctx)
{
	const struct add_job *j = ctx;
	uint64_t est = source_bytes(j);
	uint32_t bs = j->before.blksize ? j->before.blksize : 4096;

	if (!est) {
		r4cmd_errorf("%s: the add needs more than the %llu free blocks "
			     "(%.1f MiB): run it again with --grow, or grow "
			     "the image with r4resize first", j->image,
			     (unsigned long long)j->before.free_blocks,
			     (double)j->before.free_blocks * bs / 1048576.0);
		return;
	}
	r4cmd_errorf("%s: the add needs about %llu blocks (%.1f MiB) more "
		     "than the %llu free: run it again with --grow, or grow "
		     "the image with r4resize first (r4resize %s %lluM)",
		     j->image, (unsigned long long)more_blocks(j, est),
		     (double)more_blocks(j, est) * bs / 1048576.0,
		     (unsigned long long)j->before.free_blocks, j->image,
		     (unsigned long long)(((j->before.block_count +
					    more_blocks(j, est)) * bs +
					   1048575) / 1048576));
}

/* Layer i of n (src) into transaction t, its progress events named. */
static int add_layer(struct r4_txn *t, struct r4_vol *vol, const char *src,
		     int is_dir, size_t i, size_t n, struct r4_archive_opts *ao,
		     struct r4_error *err)
{
	char phase[32];
	int rc;

	/* a directory's total is its files' bytes, counted first (only
	 * when progress is shown) */
	ao->progress = pack_progress;
	ao->dir_total = is_dir && r4cmd_progress_wanted() ?
			dir_data_bytes(src) : 0;
	snprintf(phase, sizeof(phase), "layer %zu", i + 1);
	r4cmd_progress_kind(n > 1 ? phase : is_dir ? "data" : "archive",
			    "bytes");
	rc = is_dir ? r4_add_from_dir(t, vol, src, ao, err)
		    : r4_add_from_archive(t, vol, src, ao, err);
	r4cmd_progress_end();
	if (!rc)
		r4cmd_progress_finish();
	return rc;
}

/* A layer failed with rc (err): the transaction is dropped. What it
 * wrote went to free blocks only; say so when there were any. */
static int layers_failed(struct r4_txn *t, const char *image,
			 const char *src, int rc, struct r4_error *err,
			 const struct pack_layer_opts *lo)
{
	uint64_t written = r4_txn_written(t);

	r4_txn_abort(t);
	if (rc == R4_ENOSPC && lo && lo->nospc_quiet)
		return PACK_EXIT_NOSPC;
	r4cmd_error(err, src, rc);
	if (rc == R4_ENOSPC && lo && lo->nospc_hint)
		lo->nospc_hint(lo->ctx);
	if (!written)
		r4cmd_errorf("%s: nothing was changed", image);
	else
		r4cmd_errorf("%s: the volume's contents are unchanged (its "
			     "files and free space are as before; %llu of "
			     "its free blocks hold bytes of the dropped add)",
			     image, (unsigned long long)written);
	return EXIT_FAILED;
}

int pack_layers(struct r4_vol *vol, const char *image, const char *const *src,
		const int *is_dir, size_t n, struct r4_archive_opts *ao,
		const struct pack_layer_opts *lo)
{
	struct r4_error err = { 0 };
	struct r4_txn *t = NULL;
	int rc = 0;

	/* A directory source never adds the image to itself. */
	for (size_t i = 0; i < n; i++)
		if (is_dir[i] && r4_archive_skip_file(ao, image, &err)) {
			r4cmd_error(&err, image, err.code);
			return EXIT_FAILED;
		}
	if (r4_txn_begin(vol, &t, &err)) {
		r4cmd_error(&err, image, err.code);
		return EXIT_FAILED;
	}
	if (lo && lo->plug_set &&
	    r4_txn_set_create(t, lo->plug, lo->plug_set, &err)) {
		r4_txn_abort(t);
		r4cmd_error(&err, image, err.code);
		return EXIT_FAILED;
	}
	if (lo && lo->precheck)
		rc = lo->precheck(lo->ctx, t, &err);
	/* each SOURCE a layer over the ones before, in one transaction */
	for (size_t i = 0; i < n; i++) {
		if (!rc)
			rc = add_layer(t, vol, src[i], is_dir[i], i, n, ao,
				       &err);
		ao->scan = NULL;	/* a scan is the first layer's only */
		if (!rc)
			continue;
		return layers_failed(t, image, src[i], rc, &err, lo);
	}
	if (r4_txn_commit(t, &err)) {
		r4cmd_error(&err, image, err.code);
		if (r4_vol_commit_pending(vol))
			r4cmd_errorf("%s: the change is committed in the "
				     "journal but not all written in place: "
				     "the next writable open (r4fsck, r4pack "
				     "add) completes it", image);
		else
			r4cmd_errorf("%s: nothing was changed", image);
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/* An add that plainly cannot fit fails before it writes a block: the
 * first SOURCE, a directory stored uncompressed, holds more whole
 * blocks of file data than the volume has free (the blocks of files it
 * replaces are freed only by the commit). Exclusions, archives and
 * compressed volumes are left to the add itself. */
static int add_precheck(void *ctx, struct r4_txn *t, struct r4_error *err)
{
	struct add_job *j = ctx;
	uint64_t need, data_blocks;
	int cc;

	if (!j->ps.n || !j->ps.is_dir[0] || j->ao.exclude_len)
		return 0;
	cc = r4_txn_compresses(t, err);
	if (cc)
		return cc < 0 ? cc : 0;
	/* one walk: the first layer's add replays what this one saw */
	if (r4_dir_scan(j->ps.src[0], &j->ao, &data_blocks, &j->scan, err))
		return err->code;
	j->ao.scan = j->scan;
	/* a margin for the host's own block accounting */
	need = data_blocks - data_blocks / 64;
	if (need <= j->before.free_blocks)
		return 0;
	return r4cmd_fail(err, R4_ENOSPC, "%s: no free block left for it: its "
			"files hold at least %llu blocks of data, and %llu "
			"are free", j->ps.src[0], (unsigned long long)need,
			(unsigned long long)j->before.free_blocks);
}

static int add_txn(struct add_job *j, struct r4_vol *vol)
{
	const struct pack_layer_opts lo = {
		add_plug, add_set, j->nospc_quiet, nospc_hint, j, add_precheck
	};

	int rc = pack_layers(vol, j->image, j->ps.src, j->ps.is_dir, j->ps.n,
			     &j->ao, &lo);

	j->ao.scan = NULL;
	r4_dir_scan_free(j->scan);
	j->scan = NULL;
	return rc;
}

/* --grow: the add did not fit. Grow the image by the estimate of what
 * it needs (doubled each round), up to --grow's MAX, and add again. */
static int grow_and_retry(struct add_job *j, struct r4_vol *vol, int round)
{
	struct r4_error err = { 0 };
	struct r4_resize_result res;
	struct r4_super_info si;
	uint64_t more, n, max;
	int rc;

	r4_vol_super(vol, &si);
	max = grow_max ? grow_max / si.blksize : r4_resize_max_blocks(si.blksize);
	more = more_blocks(j, source_bytes(j)) << (round < 8 ? round : 8);
	n = si.block_count + more;
	/* whole MiB, and not a size reiser4progs cannot open (within 18
	 * blocks below a multiple of a bitmap's reach: doc/format.md
	 * §10.20) */
	n = (n + 255) / 256 * 256;
	if (n % ((uint64_t)(si.blksize - 4) * 8) == 0 ||
	    n % ((uint64_t)(si.blksize - 4) * 8) > (si.blksize - 4) * 8 - 32)
		n += 256;
	if (n > max)
		n = max;
	if (round >= 8 || n <= si.block_count || from_stdin(j)) {
		j->nospc_quiet = 0;
		if (from_stdin(j))
			r4cmd_errorf("%s: the add does not fit and standard "
				     "input cannot be read again: grow the "
				     "image with r4resize first", j->image);
		else
			r4cmd_errorf("%s: the add does not fit even in %llu "
				     "blocks (--grow=%llu bytes at most)",
				     j->image, (unsigned long long)si.block_count,
				     (unsigned long long)(max * si.blksize));
		r4cmd_errorf("%s: the volume's contents are unchanged%s",
			     j->image, round ? " (it was grown)" : "");
		return EXIT_FAILED;
	}
	rc = r4_resize(vol, n, NULL, &res, &err);
	if (rc) {
		r4cmd_error(&err, j->image, rc);
		r4cmd_errorf("%s: nothing was added", j->image);
		return EXIT_FAILED;
	}
	if (!r4cmd_quiet && !opt_json)
		fprintf(stderr, "%s: %s: grown from %llu to %llu blocks for "
			"the add\n", r4cmd_prog, j->image,
			(unsigned long long)res.old_blocks,
			(unsigned long long)res.new_blocks);
	r4_vol_super(vol, &j->before);
	j->stats = (struct r4_archive_stats){ 0 };
	return add_txn(j, vol);
}

static int run(struct add_job *j)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol = NULL;
	int rc;

	if (r4_vol_open(j->image, r4cmd_open(R4_OPEN_RDWR | r4cmd_lock_flags()), &vol,
			&err)) {
		r4cmd_error(&err, j->image, err.code);
		return r4cmd_busy_exit(&err, EXIT_FAILED);
	}
	r4cmd_env_vol(vol);
	r4_vol_super(vol, &j->before);
	j->nospc_quiet = opt_grow;
	rc = add_txn(j, vol);
	for (int round = 0; rc == PACK_EXIT_NOSPC; round++)
		rc = grow_and_retry(j, vol, round);
	r4_vol_super(vol, &j->after);
	if (r4_vol_close(vol, &err) && !rc) {
		r4cmd_error(&err, j->image, err.code);
		rc = EXIT_FAILED;
	}
	return rc;
}

static void summary(const struct add_job *j)
{
	if (opt_json) {
		/* objects_*: the super block's object count (r4fsck's
		 * "objects"), not regular files. */
		const struct pack_field f[] = {
			{ "entries", j->stats.entries },
			{ "skipped", j->stats.skipped },
			{ "bytes", j->stats.bytes },
			{ "objects_before", j->before.file_count },
			{ "objects_after", j->after.file_count },
			{ "block_count", j->after.block_count },
			{ "free_blocks_before", j->before.free_blocks },
			{ "free_blocks", j->after.free_blocks },
			{ "xattrs_dropped", j->stats.xattrs_dropped },
			{ "layers", j->ps.n },
			{ "whiteouts", j->stats.whiteouts },
			{ "removed", j->stats.removed },
		};

		pack_json_summary("add", j->image, j->ps.src[0], f,
				  sizeof(f) / sizeof(f[0]));
	} else if (!r4cmd_quiet) {
		printf("%s: added %" PRIu64 " entries (%" PRIu64 " skipped), %"
		       PRIu64 " bytes to %s: %" PRIu64 " blocks free (was %"
		       PRIu64 ")\n", r4cmd_prog, j->stats.entries,
		       j->stats.skipped, j->stats.bytes, j->image,
		       j->after.free_blocks, j->before.free_blocks);
		if (j->stats.whiteouts)
			printf("%s: %" PRIu64 " whiteouts removed %" PRIu64
			       " names of the layers below\n", r4cmd_prog,
			       j->stats.whiteouts, j->stats.removed);
	}
}

int pack_add(int argc, const char **argv)
{
	struct add_job j = { 0 };
	poptContext ctx;
	int rc;

	r4_archive_opts_init(&j.ao);
	j.ao.warn = pack_warn;
	j.ao.stats = &j.stats;
	/* a bare --compress takes no word after it (as on create) */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--compress"))
			argv[i] = "--compress=" COMPRESS_DEFAULT;
		if (!strcmp(argv[i], "--grow"))
			argv[i] = "--grow=";
	}
	ctx = poptGetContext("r4pack add", argc, argv, add_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] IMAGE SOURCE...");
	rc = parse_loop(ctx, &j.ao);
	if (opt_json)
		r4cmd_json_start(stdout);
	if (!rc && r4cmd_show_version) {
		r4cmd_print_version();
		goto out;
	}
	if (!rc)
		rc = r4cmd_lock_parse(EXIT_USAGE);
	if (!rc)
		rc = r4cmd_progress_parse(EXIT_USAGE);
	if (!rc)
		rc = pack_owner_finish(&j.ao, 1);
	if (!rc)
		rc = args(ctx, &j);
	if (!rc) {
		pack_list_to_stderr = opt_json;
		j.ao.entry = r4cmd_verbose ? pack_entry : NULL;
		rc = run(&j);
	}
	if (!rc)
		rc = pack_manifest(j.image);
	if (!rc)
		summary(&j);
out:
	r4_archive_opts_free(&j.ao);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
