/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reference bytes for unit tests. A test asks mkfs.reiser4 (the
 * test oracle, never a dependency of the tools) to write a small volume
 * into a temporary file and reads blocks of it back. When the oracle is
 * not installed, fixture_mkfs() returns -1 and the test skips. */
#ifndef R4_TESTS_FIXTURE_H
#define R4_TESTS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURE_BLKSIZE 4096

/* Make a volume of 'size' (e.g. "64M") with extra mkfs.reiser4 options
 * (may be ""), into a fresh temporary file whose name is written to
 * path (at least 64 bytes). Returns 0 or -1. */
static inline int fixture_mkfs(const char *opts, const char *size,
			       char *path)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[1024];
	int fd;

	snprintf(path, 64, "%s/r4fixXXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	if (system("command -v mkfs.reiser4 >/dev/null 2>&1") != 0) {
		unlink(path);
		return -1;
	}
	snprintf(cmd, sizeof(cmd),
		 "truncate -s %s '%s' && mkfs.reiser4 -f -y %s '%s' "
		 ">/dev/null 2>&1", size, path, opts, path);
	if (system(cmd) != 0) {
		unlink(path);
		return -1;
	}
	return 0;
}

/* Read block 'blk' of an image into buf (FIXTURE_BLKSIZE bytes). */
static inline int fixture_block(const char *path, uint64_t blk, uint8_t *buf)
{
	FILE *f = fopen(path, "rb");
	int ok;

	if (!f)
		return -1;
	ok = fseeko(f, (off_t)(blk * FIXTURE_BLKSIZE), SEEK_SET) == 0 &&
	     fread(buf, 1, FIXTURE_BLKSIZE, f) == FIXTURE_BLKSIZE;
	fclose(f);
	return ok ? 0 : -1;
}

#endif
