/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4pack: make a Reiser4 image from an archive or a directory, and
 * write an image back out as a tarball.
 *
 *   r4pack create [OPTION...] SOURCE IMAGE
 *   r4pack extract [OPTION...] IMAGE [TARBALL|-]
 *   r4pack add [OPTION...] IMAGE SOURCE
 *
 * Exit codes: 0 done; 1 failed (bad input, no space, I/O); 2 bad
 * command line. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "pack.h"

int pack_list_to_stderr;

void pack_warn(void *ctx, const char *msg)
{
	(void)ctx;
	if (!r4cmd_quiet)
		r4cmd_warnf("%s", msg);
}

void pack_entry(void *ctx, const char *path)
{
	(void)ctx;
	fprintf(pack_list_to_stderr ? stderr : stdout, "%s\n", path);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s create [OPTION...] SOURCE IMAGE\n"
		"       %s extract [OPTION...] IMAGE [TARBALL|-]\n"
		"       %s add [OPTION...] IMAGE SOURCE\n"
		"SOURCE is an archive (tar, pax, cpio, zip; gzip, xz, zstd,\n"
		"bzip2 or lz4 compressed), '-' for standard input, or a\n"
		"directory. '%s COMMAND --help' lists a command's options.\n",
		r4cmd_prog, r4cmd_prog, r4cmd_prog, r4cmd_prog);
}

int main(int argc, const char **argv)
{
	const char *cmd;

	r4cmd_init(argv[0]);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "-?")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		r4cmd_print_version();
		return EXIT_OK;
	}
	if (!strcmp(cmd, "create"))
		return pack_create(argc - 1, argv + 1);
	if (!strcmp(cmd, "extract"))
		return pack_extract(argc - 1, argv + 1);
	if (!strcmp(cmd, "add"))
		return pack_add(argc - 1, argv + 1);
	r4cmd_errorf("unknown command '%s'", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
