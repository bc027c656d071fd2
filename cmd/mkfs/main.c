/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4mkfs: make a Reiser4 (format40) volume on an image file or a block
 * device. Options follow mkfs.reiser4 where they overlap.
 *
 * Exit codes: 0 made; 1 the volume could not be made (bad target, I/O
 * error, refused); 2 bad command line. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include "../common/common.h"

enum { EXIT_MADE = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

static char *opt_label, *opt_uuid;
static int opt_blksize = 4096, opt_lost_found, opt_force, opt_yes;
static int opt_print_profile, opt_print_plugins, opt_discard, opt_json;

static struct poptOption mkfs_options[] = {
	{ "label", 'L', POPT_ARG_STRING, &opt_label, 0,
	  "volume label (at most 16 bytes)", "LABEL" },
	{ "uuid", 'U', POPT_ARG_STRING, &opt_uuid, 0,
	  "volume UUID (default: random)", "UUID" },
	{ "block-size", 'b', POPT_ARG_INT, &opt_blksize, 0,
	  "block size in bytes (only 4096 is supported)", "N" },
	{ "lost-found", 's', POPT_ARG_NONE, &opt_lost_found, 0,
	  "create the lost+found directory", NULL },
	{ "override", 'o', POPT_ARG_STRING, NULL, 'o',
	  "override the plugin of a type in the profile "
	  "(repeatable, or comma separated)", "TYPE=PLUGIN" },
	{ "print-profile", 'p', POPT_ARG_NONE, &opt_print_profile, 0,
	  "print the plugin profile and exit", NULL },
	{ "print-plugins", 'l', POPT_ARG_NONE, &opt_print_plugins, 0,
	  "print the plugins that -o accepts and exit", NULL },
	{ "force", 'f', POPT_ARG_NONE, &opt_force, 0,
	  "make the volume even if the target holds data", NULL },
	{ "yes", 'y', POPT_ARG_NONE, &opt_yes, 0,
	  "assume yes to every question (r4mkfs never asks)", NULL },
	{ "json", 'j', POPT_ARG_NONE, &opt_json, 0,
	  "print what was made as one JSON object", NULL },
	{ "discard", 'd', POPT_ARG_NONE, &opt_discard, 0,
	  "accepted for compatibility; nothing is discarded", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_wait_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

static int apply_options(struct r4_mkfs_opts *o, poptContext ctx)
{
	struct r4_error err = { 0 };

	if (opt_blksize != 4096) {
		r4cmd_errorf("block size %d is not supported: Reiser4 is "
			     "mounted only with 4096-byte blocks", opt_blksize);
		return EXIT_USAGE;
	}
	o->blksize = (uint32_t)opt_blksize;
	if (opt_label) {
		if (strlen(opt_label) > 16) {
			r4cmd_errorf("label '%s' is %zu bytes long; at most "
				     "16 fit", opt_label, strlen(opt_label));
			return EXIT_USAGE;
		}
		snprintf(o->label, sizeof(o->label), "%s", opt_label);
	}
	if (opt_uuid) {
		if (uuid_parse(opt_uuid, o->uuid)) {
			r4cmd_errorf("'%s' is not a valid UUID", opt_uuid);
			return EXIT_USAGE;
		}
		o->have_uuid = 1;
	}
	o->lost_found = opt_lost_found;
	o->force = opt_force;
	(void)ctx;
	(void)err;
	return EXIT_MADE;
}

static int parse_args(poptContext ctx, struct r4_mkfs_opts *o,
		      const char **path)
{
	const char *dev, *size, *extra;
	int rc;

	dev = poptGetArg(ctx);
	size = poptGetArg(ctx);
	extra = poptGetArg(ctx);
	if (!dev) {
		r4cmd_errorf("no device or image file given");
		fprintf(stderr, "Usage: %s [OPTION...] DEVICE|IMAGE [SIZE]\n",
			r4cmd_prog);
		return EXIT_USAGE;
	}
	if (extra) {
		r4cmd_errorf("unexpected argument '%s' (one device at a "
			     "time)", extra);
		return EXIT_USAGE;
	}
	if (size) {
		if (r4cmd_parse_size(size, &o->size_bytes) || !o->size_bytes) {
			r4cmd_errorf("'%s' is not a size (a number of bytes "
				     "with an optional K, M, G or T suffix)",
				     size);
			return EXIT_USAGE;
		}
		o->create_file = 1;
	}
	*path = dev;
	rc = r4cmd_window_parse(dev, EXIT_USAGE, EXIT_FAILED);
	r4cmd_open_fill(&o->open);
	return rc;
}

static int print_plugins(void)
{
	char buf[8192];

	r4_mkfs_plugins_str(buf, sizeof(buf));
	fputs(buf, stdout);
	return EXIT_MADE;
}

/* --version, --print-profile, --print-plugins. */
static void print_info(const struct r4_mkfs_opts *o)
{
	char buf[4096];

	if (r4cmd_show_version)
		r4cmd_print_version();
	if (opt_print_profile) {
		r4_mkfs_profile_str(o, buf, sizeof(buf));
		fputs(buf, stdout);
	}
	if (opt_print_plugins)
		print_plugins();
}

/* With --json: one object of kind "mkfs"
 * (doc/schema/r4mkfs-mkfs.schema.json). */
static void json_made(const char *path, const struct r4_mkfs_opts *o,
		      const struct r4_mkfs_result *res)
{
	FILE *f = r4cmd_json_out();
	char uuid[37];

	uuid_unparse(res->uuid, uuid);
	r4cmd_json_begin("mkfs", R4CMD_JSON_SCHEMA);
	fputs(",", f);
	r4cmd_json_name("image", path, strlen(path));
	fputs(",", f);
	r4cmd_json_name("label", o->label, strlen(o->label));
	fprintf(f, ",\"uuid\":\"%s\",\"mkfs_id\":%u,\"block_size\":%u,"
		"\"blocks\":", uuid, res->mkfs_id, o->blksize);
	r4cmd_json_u64(res->block_count);
	fputs(",\"free_blocks\":", f);
	r4cmd_json_u64(res->free_blocks);
	fputs(",\"offset\":", f);
	r4cmd_json_u64(o->open.offset);
	r4cmd_json_end();
	r4cmd_json_done();
}

/* Make the volume and say what was made: the exit code. */
static int make(const char *path, const struct r4_mkfs_opts *o)
{
	struct r4_mkfs_result res;
	struct r4_error err = { 0 };

	if (r4_mkfs(path, o, &res, &err)) {
		r4cmd_error(&err, path, err.code);
		return r4cmd_busy_exit(&err, EXIT_FAILED);
	}
	if (opt_json)
		json_made(path, o, &res);
	else if (!r4cmd_quiet)
		printf("%s: made a Reiser4 volume of %llu blocks (%llu free) "
		       "on %s\n", r4cmd_prog,
		       (unsigned long long)res.block_count,
		       (unsigned long long)res.free_blocks, path);
	return EXIT_MADE;
}

int main(int argc, const char **argv)
{
	struct r4_mkfs_opts o;
	struct r4_error err = { 0 };
	const char *path = NULL;
	poptContext ctx;
	int rc;

	r4cmd_init(argv[0]);
	r4cmd_wait_argv(argc, argv);
	r4_mkfs_opts_init(&o);
	ctx = poptGetContext(r4cmd_prog, argc, argv, mkfs_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] DEVICE|IMAGE [SIZE]");
	while ((rc = poptGetNextOpt(ctx)) > 0) {
		if (rc == 'o') {
			char *spec = poptGetOptArg(ctx);
			int bad = r4_mkfs_override(&o, spec, &err);

			free(spec);
			if (bad) {
				r4cmd_error(&err, "-o", err.code);
				poptFreeContext(ctx);
				return EXIT_USAGE;
			}
		}
	}
	if (opt_json && !opt_print_profile && !opt_print_plugins)
		r4cmd_json_start(stdout);
	if (rc < -1) {
		rc = r4cmd_popt_error(ctx, rc, EXIT_USAGE);
		poptFreeContext(ctx);
		return r4cmd_json_exit(rc);
	}
	if (r4cmd_show_version || opt_print_profile || opt_print_plugins) {
		print_info(&o);
		poptFreeContext(ctx);
		return EXIT_MADE;
	}
	rc = apply_options(&o, ctx);
	if (rc == EXIT_MADE)
		rc = r4cmd_lock_parse(EXIT_USAGE);
	if (rc == EXIT_MADE)
		rc = parse_args(ctx, &o, &path);
	o.open.wait = r4cmd_lock_flags();
	r4cmd_env_mkfs(&o);
	if (rc == EXIT_MADE)
		rc = make(path, &o);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
