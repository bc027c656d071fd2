/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: the temporary files a process is writing (a new image, a
 * tarball), so that a command's signal handler can remove them. The
 * table is fixed and written with a flag last, so that a handler may
 * read it at any moment. */
#include "config.h"
#include <signal.h>
#include <stdio.h>
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
