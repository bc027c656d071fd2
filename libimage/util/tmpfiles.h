/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: making a temporary file and registering it (r4_tmpfile_add)
 * as one step as far as signals go: between r4_tmpfile_block and
 * r4_tmpfile_unblock, SIGINT, SIGTERM and SIGHUP wait, so a handler
 * never misses a file that exists. Not nested. */
#ifndef R4_LIBIMAGE_UTIL_TMPFILES_H
#define R4_LIBIMAGE_UTIL_TMPFILES_H

#include <stddef.h>
#include <stdint.h>
#include "r4/r4.h"

void r4_tmpfile_block(void);
void r4_tmpfile_unblock(void);

/* Scratch files for sorted runs (the builder's names, the checker's
 * records): a new file in $TMPDIR (else /tmp) whose name starts with
 * prefix, unlinked at once; its descriptor in *fd. 0 or -errno. */
int r4i_scratch_open(const char *prefix, int *fd);
/* The folder r4i_scratch_open makes its files in (for messages). */
const char *r4i_scratch_dir(void);
/* All len bytes written / read at off: 0, -errno, or -EIO when the
 * transfer stops short (a full disk, the end of the file). */
int r4i_pwrite_all(int fd, const void *p, size_t len, uint64_t off);
int r4i_pread_all(int fd, void *p, size_t len, uint64_t off);

#endif
