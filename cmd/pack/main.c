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
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pack.h"

int pack_list_to_stderr;

void pack_json_summary(const char *kind, const char *image,
		       const char *source, const struct pack_field *f, size_t n)
{
	r4cmd_json_begin(kind, R4CMD_JSON_SCHEMA);
	fputc(',', r4cmd_json_out());
	r4cmd_json_name("image", image, strlen(image));
	fputc(',', r4cmd_json_out());
	r4cmd_json_name("source", source, strlen(source));
	for (size_t i = 0; i < n; i++) {
		r4cmd_json_key(f[i].k);
		r4cmd_json_u64(f[i].v);
	}
	r4cmd_json_end();
}

void pack_warn(void *ctx, const char *msg)
{
	(void)ctx;
	if (!r4cmd_quiet)
		r4cmd_warnf("%s", msg);
}

/* Names as ls prints them: control bytes and backslash as \xHH. */
void pack_entry(void *ctx, const char *path)
{
	FILE *f = pack_list_to_stderr ? stderr : stdout;

	(void)ctx;
	r4cmd_progress_end();
	r4cmd_put_escaped(f, path, strlen(path), 1);
	fputc('\n', f);
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

/* Names are bytes, whatever the locale: libarchive converts the UTF-8
 * names of zip and pax archives to the locale's character set, which
 * fails for anything but ASCII in the C/POSIX locale (cron, CI,
 * containers), so the character type is UTF-8 when the environment's is
 * not (C.UTF-8, which glibc always has). Messages are not translated. */
static void names_as_bytes(void)
{
	const char *cs;

	if (!setlocale(LC_CTYPE, ""))
		setlocale(LC_CTYPE, "C");
	cs = nl_langinfo(CODESET);
	if (cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8")))
		return;
	if (!setlocale(LC_CTYPE, "C.UTF-8") &&
	    !setlocale(LC_CTYPE, "C.utf8"))
		setlocale(LC_CTYPE, "en_US.UTF-8");
}

int main(int argc, const char **argv)
{
	const char *cmd;

	r4cmd_init(argv[0]);
	r4cmd_wait_argv(argc, argv);
	names_as_bytes();
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
	/* popt's usage line names argv[0]: "Usage: r4pack create ..." */
	if (!strcmp(cmd, "create")) {
		argv[1] = (char *)"r4pack create";
		return pack_create(argc - 1, argv + 1);
	}
	if (!strcmp(cmd, "extract")) {
		argv[1] = (char *)"r4pack extract";
		return pack_extract(argc - 1, argv + 1);
	}
	if (!strcmp(cmd, "add")) {
		argv[1] = (char *)"r4pack add";
		return pack_add(argc - 1, argv + 1);
	}
	r4cmd_errorf("unknown command '%s'", cmd);
	usage(stderr);
	return EXIT_USAGE;
}

/* An empty file beside target for a layered build, removed on a
 * signal. */
int pack_layers_tmp(const char *target, char **tmp)
{
	int fd;

	if (asprintf(tmp, "%s.layers.XXXXXX", target) < 0) {
		r4cmd_errorf("out of memory");
		return EXIT_FAILED;
	}
	if ((fd = mkstemp(*tmp)) < 0) {
		r4cmd_errorf("%s: %s", *tmp, strerror(errno));
		free(*tmp);
		return EXIT_FAILED;
	}
	close(fd);
	r4_tmpfile_add(*tmp);
	r4cmd_cleanup_on_signals();
	return EXIT_OK;
}
