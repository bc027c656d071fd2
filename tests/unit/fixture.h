/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: reference bytes for unit tests. A test asks mkfs.reiser4 (the
 * test oracle, never a dependency of the tools) to write a small volume
 * into a temporary file and reads blocks of it back. Only an oracle that
 * is not installed lets the test skip: fixture_mkfs() returns -1 then.
 * An oracle that fails (exits non-zero, dies by a signal) or a fixture
 * that cannot be read ends the test as a failure (tap_bail). */
#ifndef R4_TESTS_FIXTURE_H
#define R4_TESTS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "tap.h"

#define FIXTURE_BLKSIZE 4096

/* 1 when prog is on PATH. */
static inline int fixture_have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* Make a volume of 'size' (e.g. "64M") with extra mkfs.reiser4 options
 * (may be ""), into a fresh temporary file whose name is written to
 * path (at least 64 bytes). 0, or -1 when mkfs.reiser4 is not installed;
 * any other failure ends the test as failed. */
static inline int fixture_mkfs(const char *opts, const char *size,
			       char *path)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[1024];
	int fd, rc;

	if (!fixture_have("mkfs.reiser4"))
		return -1;
	snprintf(path, 64, "%s/r4fixXXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	tap_require(fd >= 0, "fixture: mkstemp %s failed", path);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "truncate -s %s '%s' && mkfs.reiser4 -f -y %s '%s' "
		 ">/dev/null 2>&1", size, path, opts, path);
	rc = system(cmd);
	if (rc != 0) {
		unlink(path);
		tap_bail("fixture: the oracle failed (%s: %s %d)", cmd,
			 rc == -1 ? "system() failed" :
			 WIFSIGNALED(rc) ? "signal" : "exit status",
			 rc == -1 ? -1 : WIFSIGNALED(rc) ? WTERMSIG(rc) :
			 WEXITSTATUS(rc));
	}
	return 0;
}

/* Read block 'blk' of an image into buf (FIXTURE_BLKSIZE bytes); a
 * fixture that cannot be read ends the test as failed. Returns 0. */
static inline int fixture_block(const char *path, uint64_t blk, uint8_t *buf)
{
	FILE *f = fopen(path, "rb");
	int good;

	tap_require(f, "fixture: cannot open %s", path);
	good = fseeko(f, (off_t)(blk * FIXTURE_BLKSIZE), SEEK_SET) == 0 &&
	     fread(buf, 1, FIXTURE_BLKSIZE, f) == FIXTURE_BLKSIZE;
	fclose(f);
	tap_require(good, "fixture: cannot read block %llu of %s",
		    (unsigned long long)blk, path);
	return 0;
}

#endif
