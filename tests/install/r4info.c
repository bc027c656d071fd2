/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4info: a program built against an installed libr4kit (pkg-config
 * r4kit) by tests/install.sh: it opens a volume read-only, prints its
 * label and size, lists the root directory and runs the checker. Only
 * the installed headers are used, as any other program would. */
#include <stdio.h>
#include <string.h>
#include <r4/r4.h>
#include <r4/errors.h>
#include <r4/read.h>
#include <r4/check.h>
#include <r4/journal.h>
#include <r4/edit.h>
#include <r4/pack.h>

static int show(void *ctx, const char *name, size_t len,
		const struct r4_objref *target)
{
	(void)ctx;
	(void)target;
	printf("entry %.*s\n", (int)len, name);
	return 0;
}

int main(int argc, char **argv)
{
	struct r4_error err = { 0, "", 0 };
	struct r4_super_info si;
	struct r4_check_report rep;
	struct r4_objref root;
	struct r4_vol *vol;

	if (argc != 2) {
		fprintf(stderr, "usage: r4info IMAGE\n");
		return 2;
	}
	if (r4_vol_open(argv[1], R4_OPEN(R4_OPEN_RDONLY), &vol, &err)) {
		fprintf(stderr, "r4info: %s\n", err.msg);
		return 1;
	}
	r4_vol_super(vol, &si);
	printf("library %s\n", r4_version());
	printf("label %s\n", si.label);
	printf("blocks %llu\n", (unsigned long long)si.block_count);
	printf("journal: %u overlaid\n", r4_vol_overlaid(vol));
	if (r4_root(vol, &root, &err) ||
	    r4_readdir(vol, &root, show, NULL, &err)) {
		fprintf(stderr, "r4info: %s\n", err.msg);
		r4_vol_close(vol, NULL);
		return 1;
	}
	if (r4_check(vol, NULL, &rep, &err)) {
		fprintf(stderr, "r4info: %s\n", err.msg);
		r4_vol_close(vol, NULL);
		return 1;
	}
	printf("problems %llu, directories %llu\n",
	       (unsigned long long)rep.problems,
	       (unsigned long long)rep.dirs);
	printf("R4_ENOTFOUND: %s\n", r4_strerror(R4_ENOTFOUND));
	return r4_vol_close(vol, &err) ? 1 : 0;
}
