/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: an open volume: the device, the block cache, the decoded super
 * blocks and the space map. */
#ifndef R4_LIBIMAGE_VOLUME_H
#define R4_LIBIMAGE_VOLUME_H

#include "r4/r4.h"
#include "io/dev.h"
#include "io/cache.h"
#include "space.h"
#include "format/super.h"
#include "format/journal.h"
#include "format/key.h"

struct r4_vol {
	struct io_dev *dev;
	struct io_cache cache;
	struct space space;
	uint32_t blksize;
	unsigned flags;
	struct fmt_master master;
	struct fmt_format40 sb;
	struct fmt_status status;
	int status_present;
	struct fmt_journal_header jh;
	struct fmt_journal_footer jf;
	enum fmt_key_policy keypol;
	int sb_dirty;
};

/* Read a whole block into buf through the cache-less path (super blocks,
 * journal). Names the block and what it is on failure. */
int vol_read_block(struct r4_vol *vol, uint64_t blk, uint8_t *buf,
		   const char *what, struct r4_error *err);

#endif
