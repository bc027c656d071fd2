/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4fsck: check a Reiser4 (format40) volume in an image file or on a
 * block device. Plain "r4fsck IMAGE" first replays the journal (opening
 * the volume read-write), then checks; --check writes nothing and checks
 * the committed state through the journal. Repair is not implemented
 * yet.
 *
 * Exit codes (fsck(8)): 0 no problems; 1 transactions replayed, nothing
 * else found; 4 problems found and left uncorrected; 8 operational error
 * (cannot open, replay or read the volume); 16 usage error. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "r4/r4.h"
#include "r4/check.h"
#include "r4/journal.h"
#include "../common/common.h"

enum {
	EXIT_CLEAN = 0, EXIT_CORRECTED = 1, EXIT_UNCORRECTED = 4, EXIT_OPERATIONAL = 8,
	EXIT_USAGE = 16
};

static int opt_check, opt_json, opt_yes, opt_force, opt_max_reports;

static struct poptOption fsck_options[] = {
	{ "check", 'c', POPT_ARG_NONE, &opt_check, 0,
	  "check only, writing nothing (without it the journal is "
	  "replayed first; repair is not implemented yet)", NULL },
	{ "json", 'j', POPT_ARG_NONE, &opt_json, 0,
	  "print one JSON object with the counts and the problems", NULL },
	{ "yes", 'y', POPT_ARG_NONE, &opt_yes, 0,
	  "assume yes to every question (a check asks none)", NULL },
	{ "force", 'f', POPT_ARG_NONE, &opt_force, 0,
	  "check even a device that is mounted", NULL },
	{ "max-reports", 'm', POPT_ARG_INT, &opt_max_reports, 0,
	  "print at most N problems (they are all counted; 0 = all)", "N" },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_lock_options, 0,
	  "Locking:", NULL },
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, r4cmd_common_options, 0,
	  "Common options:", NULL },
	POPT_AUTOHELP
	POPT_TABLEEND
};

static int json_first = 1;

static void print_text(const struct r4_check_problem *p)
{
	if (p->block != R4_CHECK_NO_BLOCK) {
		printf("block %llu", (unsigned long long)p->block);
		if (p->item >= 0)
			printf(", item %d", p->item);
		if (p->key[0])
			printf(" [%s]", p->key);
		fputs(": ", stdout);
	}
	printf("%s\n", p->msg);
}

static void print_json(const struct r4_check_problem *p)
{
	const char *code = r4_check_code_name(p->code);

	fputs(json_first ? "\n    {" : ",\n    {", stdout);
	json_first = 0;
	fputs("\"code\": ", stdout);
	r4cmd_json_str(code, strlen(code));
	if (p->block != R4_CHECK_NO_BLOCK)
		printf(", \"block\": %llu", (unsigned long long)p->block);
	else
		fputs(", \"block\": null", stdout);
	printf(", \"item\": %d, \"key\": ", p->item);
	r4cmd_json_str(p->key, strlen(p->key));
	fputs(", \"message\": ", stdout);
	r4cmd_json_str(p->msg, strlen(p->msg));
	putchar('}');
}

static void on_problem(void *ctx, const struct r4_check_problem *p)
{
	(void)ctx;
	if (r4cmd_progress_enabled())
		fputs("\r\033[K", stderr);
	if (opt_json)
		print_json(p);
	else if (!r4cmd_quiet)
		print_text(p);
}

static void on_progress(void *ctx, const char *phase, uint64_t done,
			uint64_t total)
{
	char label[32];

	(void)ctx;
	snprintf(label, sizeof(label), "checking %-7s", phase);
	r4cmd_progress(label, done, total);
}

#define JSON_FIELDS(X) \
	X(problems) X(reported) X(nodes) X(leaves) X(twigs) X(items) \
	X(extent_blocks) X(objects) X(dirs) X(files) X(symlinks) \
	X(specials) X(entries) X(used_blocks) X(free_blocks)

static unsigned replayed, overlaid;

static void print_json_end(const char *path, const struct r4_check_report *r)
{
	fputs(json_first ? "],\n" : "\n  ],\n", stdout);
	fputs("  \"image\": ", stdout);
	r4cmd_json_str(path, strlen(path));
#define X(f) printf(",\n  \"%s\": %llu", #f, (unsigned long long)r->f);
	JSON_FIELDS(X)
#undef X
	printf(",\n  \"replayed\": %u,\n  \"overlaid\": %u", replayed,
	       overlaid);
	printf(",\n  \"journal_dirty\": %s,\n  \"clean\": %s\n}\n",
	       r->journal_dirty ? "true" : "false",
	       r->problems ? "false" : "true");
}

static void print_summary(const char *path, const struct r4_check_report *r)
{
	if (r->problems)
		printf("%s: %llu problem%s found, left uncorrected", path,
		       (unsigned long long)r->problems,
		       r->problems == 1 ? "" : "s");
	else
		printf("%s: no problems found", path);
	printf(" (%llu nodes, %llu objects: %llu directories, %llu files, "
	       "%llu symlinks, %llu special; %llu blocks used, %llu free)\n",
	       (unsigned long long)r->nodes, (unsigned long long)r->objects,
	       (unsigned long long)r->dirs, (unsigned long long)r->files,
	       (unsigned long long)r->symlinks,
	       (unsigned long long)r->specials,
	       (unsigned long long)r->used_blocks,
	       (unsigned long long)r->free_blocks);
	if (r->reported < r->problems)
		printf("%s: %llu problems were not printed (--max-reports)\n",
		       path, (unsigned long long)(r->problems - r->reported));
}

/* The journal could not be replayed: when that was the reason the
 * read-write open failed, say so and check read-only (the checker
 * reports the unreplayed transaction). */
static int fallback_readonly(const char *path, struct r4_vol **vol,
			     const struct r4_error *why)
{
	struct r4_error err = { 0 };

	if (r4_vol_open(path, R4_OPEN_RDONLY | r4cmd_lock_flags() |
			(opt_force ? R4_OPEN_FORCE : 0), vol, &err))
		return 0;
	if (!r4_vol_journal_msg(*vol)[0]) {
		r4_vol_close(*vol, NULL);
		*vol = NULL;
		return 0;
	}
	r4cmd_warnf("cannot replay the journal: %s; checking without it",
		    why->msg);
	return 1;
}

/* Without --check the open replays the journal; with it the volume is
 * opened read-only and read through the journal. */
static int open_volume(const char *path, struct r4_vol **vol)
{
	struct r4_error err = { 0 };
	unsigned flags = (opt_check ? R4_OPEN_RDONLY : R4_OPEN_RDWR) |
			 r4cmd_lock_flags();
	int rc;

	rc = r4_vol_open(path, flags | (opt_force ? R4_OPEN_FORCE : 0), vol,
			 &err);
	if (rc && !opt_check && fallback_readonly(path, vol, &err))
		return EXIT_CLEAN;
	if (rc) {
		r4cmd_error(&err, path, rc);
		return EXIT_OPERATIONAL;
	}
	if (opt_check) {
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

static int run_check(const char *path)
{
	struct r4_check_opts o = { 0 };
	struct r4_check_report rep;
	struct r4_error err = { 0 };
	struct r4_vol *vol;
	int rc;

	rc = open_volume(path, &vol);
	if (rc)
		return rc;
	o.problem = on_problem;
	o.progress = on_progress;
	o.max_reports = (unsigned)opt_max_reports;
	if (opt_json)
		fputs("{\n  \"problem_list\": [", stdout);
	rc = r4_check(vol, &o, &rep, &err);
	if (rc) {
		if (opt_json)
			fputs("]\n}\n", stdout);
		r4cmd_error(&err, path, rc);
		r4_vol_close(vol, NULL);
		return EXIT_OPERATIONAL;
	}
	r4_vol_close(vol, NULL);
	if (opt_json)
		print_json_end(path, &rep);
	else
		print_summary(path, &rep);
	if (rep.problems)
		return EXIT_UNCORRECTED;
	return replayed ? EXIT_CORRECTED : EXIT_CLEAN;
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
	return EXIT_CLEAN;
}

int main(int argc, const char **argv)
{
	const char *path = NULL;
	poptContext ctx;
	int rc;

	r4cmd_init(argv[0]);
	ctx = poptGetContext(r4cmd_prog, argc, argv, fsck_options, 0);
	poptSetOtherOptionHelp(ctx, "[OPTION...] DEVICE|IMAGE");
	while ((rc = poptGetNextOpt(ctx)) > 0)
		;
	if (rc < -1) {
		rc = r4cmd_popt_error(ctx, rc, EXIT_USAGE);
		poptFreeContext(ctx);
		return rc;
	}
	if (r4cmd_show_version) {
		r4cmd_print_version();
		poptFreeContext(ctx);
		return EXIT_CLEAN;
	}
	rc = get_path(ctx, &path);
	if (rc == EXIT_CLEAN)
		rc = run_check(path);
	poptFreeContext(ctx);
	return rc;
}
