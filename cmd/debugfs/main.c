/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4debugfs: browse and inspect a Reiser4 volume; with -w, change it.
 *
 *   r4debugfs [-w [--atomic]] [-R 'cmd args']... [-f cmdfile] [--json]
 *             IMAGE
 *
 * Without -R or -f the commands come from standard input (with the
 * prompt "r4debugfs: " on a terminal).
 *
 *   r4debugfs --partitions [--json] DISK
 *
 * Exit codes: 0 every command succeeded; 1 a command failed; 2 bad
 * command line; 8 the image cannot be opened (or, --partition and
 * --partitions, has no usable partition table). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/common.h"
#include "debugfs.h"
#include "r4/journal.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_OPEN = 8 };

#define MAX_REQUESTS 64
#define LINE_MAX_LEN 4096

static const char *requests[MAX_REQUESTS];
static int nr_requests;
static char *opt_cmdfile;
static int opt_write, opt_json, opt_atomic, opt_no_replay, opt_partitions;

static struct poptOption debugfs_options[] = {
	{ "request", 'R', POPT_ARG_STRING, NULL, 'R',
	  "run one command and exit (repeatable)", "'CMD ARGS'" },
	{ "file", 'f', POPT_ARG_STRING, &opt_cmdfile, 0,
	  "run the commands in a file, one a line ('-': standard input)",
	  "CMDFILE" },
	{ "json", '\0', POPT_ARG_NONE, &opt_json, 0,
	  "print one JSON object a line per command (see the man page); "
	  "a failed command prints an error object", NULL },
	{ "no-replay", '\0', POPT_ARG_NONE, &opt_no_replay, 0,
	  "read-only: do not read through committed transactions of the "
	  "journal; see the blocks as they are on disk", NULL },
	{ "writable", 'w', POPT_ARG_NONE, &opt_write, 0,
	  "open read-write: allow the commands that change the volume "
	  "(each one a transaction)", NULL },
	{ "atomic", '\0', POPT_ARG_NONE, &opt_atomic, 0,
	  "with -w: all the commands of -R and -f as one transaction; any "
	  "failure leaves the volume unchanged", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_progress_options, 0,
	  "Progress (rdump, undel --all):", NULL },
	{ "partitions", '\0', POPT_ARG_NONE, &opt_partitions, 0,
	  "list the partition table of IMAGE (a disk image or device) and "
	  "which partitions hold Reiser4, then exit", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_window_options, 0,
	  "Partitions:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_lock_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

/* Strip the newline; returns 0 for a line to skip (blank, comment). */
static int clean_line(char *line)
{
	size_t n = strlen(line);
	const char *p = line;

	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	return *p && *p != '#';
}

/* Run every line of f; 'echo' prints each command before its output
 * (as debugfs -f does), 'prompt' prints the prompt first. */
static int run_stream(struct dbg *d, FILE *f, int echo, int prompt)
{
	char line[LINE_MAX_LEN];
	int rc = EXIT_OK;

	for (;;) {
		if (prompt) {
			fputs("r4debugfs: ", stdout);
			fflush(stdout);
		}
		if (!fgets(line, sizeof(line), f))
			break;
		if (!clean_line(line))
			continue;
		if (!strcmp(line, "quit") || !strcmp(line, "q"))
			break;
		if (echo)
			printf("r4debugfs: %s\n", line);
		if (dbg_run_line(d, line) != DBG_OK) {
			rc = EXIT_FAILED;
			if (d->atomic)
				break;	/* the run is aborted */
		}
		fflush(stdout);
	}
	if (prompt)
		putchar('\n');
	return rc;
}

static int run_file(struct dbg *d, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	int rc;

	if (!f) {
		r4cmd_errorf("%s: cannot open the command file: %s", path,
			     strerror(errno));
		return EXIT_FAILED;
	}
	rc = run_stream(d, f, !d->json, 0);
	if (f != stdin)
		fclose(f);
	return rc;
}

static int run_all(struct dbg *d)
{
	int rc = EXIT_OK;

	for (int i = 0; i < nr_requests && !(rc && d->atomic); i++)
		if (dbg_run_line(d, requests[i]) != DBG_OK)
			rc = EXIT_FAILED;
	if (!(rc && d->atomic) && opt_cmdfile &&
	    run_file(d, opt_cmdfile) != EXIT_OK)
		rc = EXIT_FAILED;
	if (!nr_requests && !opt_cmdfile)
		rc = run_stream(d, stdin, 0, isatty(STDIN_FILENO));
	if (dbg_edit_finish(d, rc == EXIT_OK) != DBG_OK)
		rc = EXIT_FAILED;
	return rc;
}

static int open_and_run(const char *image)
{
	struct r4_error err = { 0 };
	struct dbg d = { 0 };
	int rc;

	d.image = image;
	d.json = opt_json;
	d.writable = opt_write;
	d.atomic = opt_atomic;
	if (r4_vol_open(image, r4cmd_open((opt_write ? R4_OPEN_RDWR :
			R4_OPEN_RDONLY | R4_OPEN_FORCE |
			(opt_no_replay ? R4_OPEN_NO_REPLAY : 0)) |
			r4cmd_lock_flags()),
			&d.vol, &err)) {
		r4cmd_error(&err, image, err.code);
		/* Another program holds the image: busy, try again
		 * later; not a bad volume. */
		return r4cmd_busy_exit(&err, EXIT_OPEN);
	}
	/* A signal removes the temporary file of dump, undel or
	 * dumpblock (and ends the process as before). */
	r4cmd_cleanup_on_signals();
	r4cmd_lock_note(d.vol);
	r4cmd_env_vol(d.vol);
	/* Say whenever what is shown is not the blocks as on disk. */
	if (r4_vol_overlaid(d.vol))
		fprintf(stderr, "%s: %s: %u committed transaction(s) of the "
			"journal replayed in memory, the image is not written "
			"(--no-replay shows the blocks as on disk)\n",
			r4cmd_prog, image, r4_vol_overlaid(d.vol));
	else if (r4_vol_replayed(d.vol))
		fprintf(stderr, "%s: %s: %u committed transaction(s) of the "
			"journal replayed and written in place\n", r4cmd_prog,
			image, r4_vol_replayed(d.vol));
	r4_vol_super(d.vol, &d.si);
	d.large_keys = d.si.large_keys;
	d.buf = malloc(d.si.blksize);
	if (!d.buf) {
		r4cmd_errorf("%s: out of memory", image);
		r4_vol_close(d.vol, NULL);
		return EXIT_FAILED;
	}
	rc = run_all(&d);
	free(d.buf);
	if (r4_vol_close(d.vol, &err) && opt_write && rc == EXIT_OK) {
		r4cmd_error(&err, image, err.code);
		rc = EXIT_FAILED;
	}
	return rc;
}

static int parse_cmdline(poptContext ctx, const char **image)
{
	int rc;

	while ((rc = poptGetNextOpt(ctx)) > 0) {
		if (rc != 'R')
			continue;
		if (nr_requests == MAX_REQUESTS) {
			r4cmd_errorf("-R: at most %d commands", MAX_REQUESTS);
			return EXIT_USAGE;
		}
		requests[nr_requests++] = poptGetOptArg(ctx);
	}
	if (rc < -1)
		return r4cmd_popt_error(ctx, rc, EXIT_USAGE);
	if (r4cmd_show_version)
		return EXIT_OK;
	*image = poptGetArg(ctx);
	if (!*image || poptPeekArg(ctx)) {
		r4cmd_errorf(*image ? "one image at a time" : "no image given");
		fprintf(stderr, "Usage: %s [-w [--atomic]] [-R 'CMD ARGS'] "
			"[-f CMDFILE] [--json] IMAGE\n", r4cmd_prog);
		return EXIT_USAGE;
	}
	if (opt_no_replay && opt_write) {
		r4cmd_errorf("--no-replay is for read-only opens; -w replays "
			     "the journal");
		return EXIT_USAGE;
	}
	if (opt_partitions && (opt_write || nr_requests || opt_cmdfile)) {
		r4cmd_errorf("--partitions lists the table and runs no command");
		return EXIT_USAGE;
	}
	if (opt_atomic && !opt_write) {
		r4cmd_errorf("--atomic goes with -w");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int main(int argc, const char **argv)
{
	const char *image = NULL;
	poptContext ctx;
	int rc;

	r4cmd_init(argv[0]);
	r4cmd_wait_argv(argc, argv);
	ctx = poptGetContext(r4cmd_prog, argc, argv, debugfs_options, 0);
	poptSetOtherOptionHelp(ctx, "[-w [--atomic]] [-R 'CMD ARGS'] "
			       "[-f CMDFILE] [--json] IMAGE");
	rc = parse_cmdline(ctx, &image);
	if (rc == EXIT_OK)
		rc = r4cmd_lock_parse(EXIT_USAGE);
	if (rc == EXIT_OK)
		rc = r4cmd_progress_parse(EXIT_USAGE);
	if (opt_json)
		r4cmd_json_start(stdout);
	if (rc == EXIT_OK && r4cmd_show_version)
		r4cmd_print_version();
	else if (rc == EXIT_OK && opt_partitions)
		rc = dbg_partitions(image, opt_json);
	else if (rc == EXIT_OK &&
		 !(rc = r4cmd_window_parse(image, EXIT_USAGE, EXIT_OPEN)))
		rc = open_and_run(image);
	for (int i = 0; i < nr_requests; i++)
		free((void *)requests[i]);
	poptFreeContext(ctx);
	return r4cmd_json_exit(rc);
}
