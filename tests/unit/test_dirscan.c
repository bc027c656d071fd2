/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: r4_dir_scan (libimage/tar/dir.c), the walk ahead of r4pack add:
 * a tree of more entries than it may keep (r4_archive_opts.scan_max) is
 * summed, not kept (NULL: the add walks the tree again instead of
 * replaying part of it), with the same data blocks as a scan that kept
 * all; a cap of exactly the entry count keeps them all; the default
 * keeps a small tree. The tree is written here. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "r4/archive.h"

/* The tree: the root, /a, /b, 3 files of 3, 2 and 1 blocks in /a, 4
 * small files in /b: 10 entries, 6 whole blocks of data. */
#define ENTRIES 10
#define BLOCKS 6

static char dir[256], src[300];

/* One scan with cap max: kept (1) or not (0), the blocks in *blocks. */
static int scan(size_t max, uint64_t *blocks)
{
	struct r4_archive_opts o;
	struct r4_error err = { 0 };
	struct r4_dir_scan *s = NULL;
	int rc, kept;

	r4_archive_opts_init(&o);
	o.scan_max = max;
	rc = r4_dir_scan(src, &o, blocks, &s, &err);
	tap_require(rc == 0, "r4_dir_scan: %s", err.msg);
	kept = s != NULL;
	r4_dir_scan_free(s);
	r4_archive_opts_free(&o);
	return kept;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[1024];
	uint64_t blocks = 0;

	plan(8);
	snprintf(dir, sizeof(dir), "%s/r4scanXXXXXX", tmp && *tmp ? tmp :
		 "/tmp");
	tap_require(mkdtemp(dir), "mkdtemp %s failed", dir);
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir -p src/a src/b && "
		 "head -c 12288 /dev/zero >src/a/f3 && "
		 "head -c 8192 /dev/zero >src/a/f2 && "
		 "head -c 4096 /dev/zero >src/a/f1 && "
		 "for i in 1 2 3 4; do echo $i >src/b/s$i; done", dir);
	tap_require(system(cmd) == 0, "the test tree");

	ok(scan(0, &blocks), "the default cap keeps a tree of %d entries",
	   ENTRIES);
	is_u64(blocks, BLOCKS, "its data blocks");
	ok(scan(ENTRIES, &blocks), "a cap of exactly %d keeps them all",
	   ENTRIES);
	is_u64(blocks, BLOCKS, "its data blocks");
	ok(!scan(ENTRIES - 1, &blocks), "a cap of %d keeps nothing (the add "
	   "walks the tree again)", ENTRIES - 1);
	is_u64(blocks, BLOCKS, "and still counts every data block");
	ok(!scan(1, &blocks), "a cap of 1 keeps nothing");
	is_u64(blocks, BLOCKS, "and still counts every data block");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	tap_require(system(cmd) == 0, "cleanup");
	return tap_done();
}
