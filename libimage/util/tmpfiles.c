/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the temporary files a process is writing (a new image, a
 * tarball), so that a command's signal handler can remove them. The
 * table is fixed and written with a flag last, so that a handler may
 * read it at any moment. */
#include "config.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libimage/util/tmpfiles.h"

#define TMP_SLOTS 8
#define TMP_PATH_MAX 4096

static char tmp_path[TMP_SLOTS][TMP_PATH_MAX];
static volatile sig_atomic_t tmp_live[TMP_SLOTS];

static sigset_t saved_mask;

void r4_tmpfile_block(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, &saved_mask);
}

void r4_tmpfile_unblock(void)
{
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

int r4_tmpfile_add(const char *path)
{
	for (int i = 0; i < TMP_SLOTS; i++) {
		if (tmp_live[i])
			continue;
		if (snprintf(tmp_path[i], TMP_PATH_MAX, "%s", path) >=
		    TMP_PATH_MAX)
			return -1;
		tmp_live[i] = 1;
		return 0;
	}
	return -1;
}

void r4_tmpfile_forget(const char *path)
{
	for (int i = 0; i < TMP_SLOTS; i++)
		if (tmp_live[i] && !strcmp(tmp_path[i], path))
			tmp_live[i] = 0;
}

void r4_tmpfile_remove_all(void)
{
	for (int i = 0; i < TMP_SLOTS; i++)
		if (tmp_live[i]) {
			unlink(tmp_path[i]);
			tmp_live[i] = 0;
		}
}

const char *r4i_scratch_dir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && *dir ? dir : "/tmp";
}

int r4i_scratch_open(const char *prefix, int *fd)
{
	const char *dir = r4i_scratch_dir();
	char path[TMP_PATH_MAX];
	int f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s.XXXXXX", dir,
			     prefix) >= sizeof(path))
		return -ENAMETOOLONG;
	f = mkstemp(path);
	if (f < 0)
		return -errno;
	unlink(path);
	*fd = f;
	return 0;
}

int r4i_pwrite_all(int fd, const void *p, size_t len, uint64_t off)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t w = pwrite(fd, b, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		b += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int r4i_pread_all(int fd, void *p, size_t len, uint64_t off)
{
	uint8_t *b = p;

	while (len) {
		ssize_t r = pread(fd, b, len, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		b += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}
