/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: making a temporary file and registering it (r4_tmpfile_add)
 * as one step as far as signals go: between r4_tmpfile_block and
 * r4_tmpfile_unblock, SIGINT, SIGTERM and SIGHUP wait, so a handler
 * never misses a file that exists. Not nested. */
#ifndef R4_LIBIMAGE_UTIL_TMPFILES_H
#define R4_LIBIMAGE_UTIL_TMPFILES_H

#include "r4/r4.h"

void r4_tmpfile_block(void);
void r4_tmpfile_unblock(void);

#endif
