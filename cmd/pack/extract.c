/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4pack extract: write an image out as a pax tarball. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pack.h"

static int opt_json;

static struct poptOption extract_options[] = {
	{ "json", '\0', POPT_ARG_NONE, &opt_json, 0,
	  "print a summary as JSON on standard error", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pack_owner_options, 0,
	  "Ownership and times:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_progress_options, 0,
	  NULL, NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_lock_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

static int parse(poptContext ctx, struct r4_archive_opts *ao)
{
	int rc;

	while ((rc = poptGetNextOpt(ctx)) > 0) {
		char *arg = poptGetOptArg(ctx);	/* ours to free */
		int bad = pack_owner_opt(rc, arg, ao) < 0;

		free(arg);
		if (bad)
			return EXIT_USAGE;
	}
	if (rc < -1)
		return r4cmd_popt_error(ctx, rc, EXIT_USAGE);
	return EXIT_OK;
}

static int args(poptContext ctx, const char **image, const char **out)
{
	*image = poptGetArg(ctx);
	*out = poptGetArg(ctx);
	if (!*out)
		*out = "-";
	if (!*image || poptPeekArg(ctx)) {
		r4cmd_errorf("extract takes an IMAGE and an optional TARBALL");
		fprintf(stderr, "Usage: %s extract [OPTION...] IMAGE "
			"[TARBALL|-]\n", r4cmd_prog);
		return EXIT_USAGE;
	}
	if (!strcmp(*out, "-") && isatty(STDOUT_FILENO)) {
		r4cmd_errorf("refusing to write a tarball to a terminal; give "
			     "a file name or redirect standard output");
		return EXIT_USAGE;
	}
	return r4cmd_window_parse(*image, EXIT_USAGE, EXIT_FAILED);
}

static void summary(const char *image, const struct r4_archive_stats *st)
{
	if (opt_json) {
		FILE *f = r4cmd_json_out();

		r4cmd_json_begin("extract", R4CMD_JSON_SCHEMA);
		fputc(',', f);
		r4cmd_json_name("image", image, strlen(image));
		r4cmd_json_key("entries");
		r4cmd_json_u64(st->entries);
		r4cmd_json_key("skipped");
		r4cmd_json_u64(st->skipped);
		r4cmd_json_key("bytes");
		r4cmd_json_u64(st->bytes);
		r4cmd_json_end();
	} else if (r4cmd_verbose) {
		fprintf(stderr, "%s: wrote %" PRIu64 " entries, %" PRIu64
			" bytes of data from %s\n", r4cmd_prog, st->entries,
			st->bytes, image);
	}
}

/* --progress-fd: the entries written against the volume's object
 * count. Hard links add entries, so the count may be passed before the
 * end: the events stop short of it, and the last one (at the end)
 * says done == total. */
static uint64_t entries_done, entries_total;

static void extract_entry(void *ctx, const char *path)
{
	if (r4cmd_verbose)
		pack_entry(ctx, path);
	if (r4cmd_progress_events() && ++entries_done < entries_total)
		r4cmd_progress("r4pack", entries_done, entries_total);
}

static int run(const char *image, const char *out,
	       struct r4_archive_opts *ao)
{
	struct r4_error err = { 0 };
	struct r4_vol *vol = NULL;
	int rc = EXIT_OK;

	if (r4_vol_open(image, r4cmd_open(R4_OPEN_RDONLY | r4cmd_lock_flags()), &vol,
			&err)) {
		r4cmd_error(&err, image, err.code);
		return r4cmd_busy_exit(&err, EXIT_FAILED);
	}
	r4cmd_lock_note(vol);
	r4cmd_cleanup_on_signals();
	if (r4cmd_progress_events()) {
		struct r4_super_info si;

		r4_vol_super(vol, &si);
		entries_total = si.file_count;
		r4cmd_progress_kind("entries", "files");
	}
	if (r4_extract_to_archive(vol, out, ao, &err)) {
		r4cmd_error(&err, out, err.code);
		rc = EXIT_FAILED;
	}
	r4cmd_progress_end();
	if (!rc && r4cmd_progress_events())
		r4cmd_progress_finish();
	r4_vol_close(vol, NULL);
	return rc;
}

int pack_extract(int argc, const char **argv)
{
	struct r4_archive_opts ao;
	struct r4_archive_stats stats = { 0 };
	const char *image = NULL, *out = NULL;
	poptContext ctx;
	int rc;

	r4_archive_opts_init(&ao);
	ao.warn = pack_warn;
	ao.stats = &stats;
	ctx = poptGetContext("r4pack extract", argc, argv, extract_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] IMAGE [TARBALL|-]");
	rc = parse(ctx, &ao);
	if (opt_json)	/* stdout may be the tarball */
		r4cmd_json_start(stderr);
	if (!rc && r4cmd_show_version) {
		r4cmd_print_version();
		goto out;
	}
	if (!rc)
		rc = pack_owner_finish(&ao, 0);
	if (!rc)
		rc = r4cmd_progress_parse(EXIT_USAGE);
	if (!rc)
		rc = args(ctx, &image, &out);
	if (!rc) {
		pack_list_to_stderr = !strcmp(out, "-");
		ao.entry = r4cmd_verbose || r4cmd_progress_events() ?
			   extract_entry : NULL;
		rc = run(image, out, &ao);
	}
	if (!rc)
		summary(image, &stats);
out:
	r4_archive_opts_free(&ao);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
